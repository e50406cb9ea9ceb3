/*
 * test_combo.c: combos and the searches that probe them. The combos file (every mistake at
 * its file:line), differences between combos and their subsets, a probe's environment, a
 * probe's outcome from its exit status, signal and clock, and bisect and ddmin over a
 * predicate. (The commands that probe combos, end to end: test_combo_cli.c.)
 * Every test works in its own mkdtemp folder (combo_fixture.h).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "combo_fixture.h"
#include "harness/probe/combo.h"
#include "harness/probe/probe.h"
#include "harness/probe/search.h"
#include "kernels/err.h"

/* ---- the combos file ---- */

Test(combo, file_reads_items_in_order)
{
	static const char text[] =
		"\xEF\xBB\xBF; a combos file\n"
		"[combo base]\n"
		"description = the fleet as it was ; not compared\n"
		"env.OMP_NUM_THREADS = 4\n"
		"\n"
		"[ combo  cuda-12.4+nccl_2.21 ]   ; names take '.', '+', '-'\n"
		"  env.NCCL_ALGO = Ring ; comment\n"
		"unset.CUBLAS_WORKSPACE_CONFIG =\n"
		"library_path = /opt/a:/opt/b\n"
		"set.run.fp8.recipe = fp8_tensorwise\n"
		"env.LOCKSTEP_INJECT = \"nan step=2 ; kept\"\n"
		"env.EMPTY =\n";
	char path[512], s[128];
	lks_combos cs;
	const lks_combo *c;

	mkdir_tmp();
	put_file("c.ini", text, path, sizeof(path));
	cr_assert_eq(lks_combos_load(path, &cs), 0, "%s", lks_errmsg());
	cr_assert_eq(cs.n, 2);
	cr_assert_str_eq(cs.combos[0].name, "base");
	cr_assert_eq(cs.combos[0].nitems, 1, "description is not an item");
	c = lks_combos_find(&cs, "cuda-12.4+nccl_2.21");
	cr_assert_not_null(c);
	cr_assert_eq(c->line, 6);
	cr_assert_eq(c->nitems, 6);
	cr_assert(c->items[0].kind == LKS_COMBO_ENV && c->items[0].line == 7);
	cr_assert_str_eq(c->items[0].target, "env.NCCL_ALGO");
	cr_assert_str_eq(c->items[0].value, "Ring");
	cr_assert_eq(c->items[1].kind, LKS_COMBO_UNSET);
	cr_assert_str_eq(c->items[1].target, "env.CUBLAS_WORKSPACE_CONFIG");
	lks_combo_item_str(&c->items[1], s, sizeof(s));
	cr_assert_str_eq(s, "unset.CUBLAS_WORKSPACE_CONFIG");
	cr_assert_eq(c->items[2].kind, LKS_COMBO_LIBRARY_PATH);
	cr_assert_str_eq(c->items[2].value, "/opt/a:/opt/b");
	cr_assert_eq(c->items[3].kind, LKS_COMBO_SET);
	lks_combo_item_str(&c->items[3], s, sizeof(s));
	cr_assert_str_eq(s, "set.run.fp8.recipe = fp8_tensorwise");
	cr_assert_str_eq(c->items[4].value, "nan step=2 ; kept");
	cr_assert_str_eq(c->items[5].value, "");
	cr_assert_null(lks_combos_find(&cs, "nosuch"));
	lks_combos_release(&cs);
	rm_tmp();
}

Test(combo, file_mistakes_name_file_and_line)
{
	static const struct { const char *text, *where, *what; } bad[] = {
		{ "env.X = 1\n", ":1:", "before any [combo NAME]" },
		{ "[combo a]\n[run x]\n", ":2:", "unknown section [run x]" },
		{ "[combo a]\nenv.X = 1\n[combo a]\n", ":3:", "duplicate combo 'a' (first at line 1)" },
		{ "[combo a b]\n", ":1:", "bad combo name 'a b'" },
		{ "[combo ..]\n", ":1:", "bad combo name '..': want 1 to 63 letters, digits, '_', '-', "
		  "'.' or '+', starting with a letter, a digit or '_'" },
		{ "[combo a/b]\n", ":1:", "bad combo name 'a/b'" },
		{ "[combo -x]\n", ":1:", "bad combo name '-x'" },
		{ "[combo a]\nenv.X\x1b[2J = 1\n", ":2:", "bad environment variable name 'X\\x1b[2J'" },
		{ "[combo]\n", ":1:", "[combo] needs a name" },
		{ "[combo a\n", ":1:", "without ']'" },
		{ "[combo a]\nenv.X = 1\nunset.X =\n", ":3:", "'env.X' again in combo 'a' (first at line 2)" },
		{ "[combo a]\nunset.X = 1\n", ":2:", "takes no value" },
		{ "[combo a]\nenv.1X = 1\n", ":2:", "bad environment variable name '1X'" },
		{ "[combo a]\nset.hidden = 1\n", ":2:", "want set.SECTION.KEY" },
		{ "[combo a]\nlibpath = /x\n", ":2:", "unknown key 'libpath'" },
		{ "[combo a]\njust words\n", ":2:", "cannot parse the line" },
		{ "[combo a]\nenv.X = \"open\n", ":2:", "closing" },
		{ "[combo a]\ndescription = x\n\ndescription = y\n", ":4:",
		  "'description' again in combo 'a' (first at line 2)" },
		{ "; nothing\n", "c.ini: no combos", "" },
	};
	char path[512];
	lks_combos cs;
	FILE *f;

	mkdir_tmp();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put_file("c.ini", bad[i].text, path, sizeof(path));
		cr_assert_eq(lks_combos_load(path, &cs), -1, "case %zu loaded", i);
		cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), bad[i].where)
		          && strstr(lks_errmsg(), bad[i].what), "case %zu: %s", i, lks_errmsg());
		cr_assert_eq(cs.n, 0);
	}
	/* a NUL byte, at its line too (fputs would stop at it) */
	put_file("c.ini", "", path, sizeof(path));
	cr_assert_not_null(f = fopen(path, "w"));
	fwrite("[combo a]\nenv.X = 1\nenv.Y\0 = 2\n", 1, 30, f);
	fclose(f);
	cr_assert_eq(lks_combos_load(path, &cs), -1);
	cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), ":3: a NUL byte"), "%s",
	          lks_errmsg());
	cr_assert_eq(lks_combos_load("/nonexistent-lks/c.ini", &cs), -1);
	cr_assert_not_null(strstr(lks_errmsg(), "cannot open '/nonexistent-lks/c.ini'"));
	rm_tmp();
}

/* A combos file is a regular file of at most 1 MiB, and a value at most 32 KiB: a value
   execve would refuse (over 128 KiB) fails at its line, before any probe, not at the
   probe's start after others have run. */
Test(combo, file_and_value_limits, .timeout = 30)
{
	char path[512], fifo[512], *text;
	size_t big = (size_t)1 << 20, head = strlen("[combo a]\nenv.X = ");
	lks_combos cs;

	mkdir_tmp();
	snprintf(fifo, sizeof(fifo), "%s/pipe.ini", tmpdir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(lks_combos_load(fifo, &cs), -1, "a FIFO loaded");
	cr_assert_not_null(strstr(lks_errmsg(), "is not a regular file (a FIFO): want a combos file"),
	                   "%s", lks_errmsg());

	cr_assert_not_null(text = malloc(big + 2));
	/* a 1 MB value: the file is within its limit, the value is not */
	strcpy(text, "[combo a]\nenv.X = ");
	memset(text + head, 'a', 1000000);
	text[head + 1000000] = 0;
	put_file("c.ini", text, path, sizeof(path));
	cr_assert_eq(lks_combos_load(path, &cs), -1, "a 1 MB value loaded");
	cr_assert_not_null(strstr(lks_errmsg(), "c.ini:2: the value of 'env.X' is 1000000 bytes, "
	                          "over the limit of 32768"), "%s", lks_errmsg());
	/* 32 KiB is fine */
	text[head + 32768] = '\n';
	text[head + 32769] = 0;
	put_file("c.ini", text, path, sizeof(path));
	cr_assert_eq(lks_combos_load(path, &cs), 0, "%s", lks_errmsg());
	cr_assert_eq(strlen(cs.combos[0].items[0].value), 32768);
	lks_combos_release(&cs);
	/* the file: 1 MiB and a byte more */
	memset(text, '#', big + 1);
	memcpy(text, "[combo a]\n", 10);
	text[big + 1] = 0;
	put_file("c.ini", text, path, sizeof(path));
	cr_assert_eq(lks_combos_load(path, &cs), -1, "a file of 1 MiB + 1 loaded");
	cr_assert_not_null(strstr(lks_errmsg(), "is 1048577 bytes, over the limit of 1048576 bytes "
	                          "for a combos file"), "%s", lks_errmsg());
	free(text);
	rm_tmp();
}

/* ---- differences, subsets, environments ---- */

static const char two_combos[] =
	"[combo a]\n"
	"env.SAME = 1\n"
	"env.CHANGED = old\n"
	"env.DROPPED = x\n"
	"set.model.hidden = 16\n"
	"[combo b]\n"
	"set.model.hidden = 16\n"
	"unset.CHANGED =\n"
	"env.SAME = 1\n"
	"library_path = /opt/new\n"
	"env.ADDED = y\n";

Test(combo, diff_names_each_target_once)
{
	char path[512];
	lks_combos cs;
	lks_combo_change *ch;
	int n;

	mkdir_tmp();
	put_file("c.ini", two_combos, path, sizeof(path));
	cr_assert_eq(lks_combos_load(path, &cs), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_combo_diff(&cs.combos[0], &cs.combos[1], &ch, &n), 0, "%s", lks_errmsg());
	/* a's order, then b's new targets; SAME and the override are equal, so not there */
	cr_assert_eq(n, 4);
	cr_assert_str_eq(ch[0].target, "env.CHANGED");
	cr_assert(ch[0].a && ch[0].b && ch[0].b->kind == LKS_COMBO_UNSET);
	cr_assert_str_eq(ch[1].target, "env.DROPPED");
	cr_assert(ch[1].a && !ch[1].b);
	cr_assert_str_eq(ch[2].target, "library_path");
	cr_assert(!ch[2].a && ch[2].b);
	cr_assert_str_eq(ch[3].target, "env.ADDED");
	free(ch);
	cr_assert_eq(lks_combo_diff(&cs.combos[0], &cs.combos[0], &ch, &n), 0);
	cr_assert_eq(n, 0);
	free(ch);
	lks_combos_release(&cs);
	rm_tmp();
}

/* The value of VAR in env, or NULL. */
static const char *env_get(char **env, const char *var)
{
	size_t len = strlen(var);

	for (; *env; env++)
		if (!strncmp(*env, var, len) && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

Test(combo, apply_subset_and_environment)
{
	char path[512], **env;
	char *base[] = { "PATH=/usr/bin", "CHANGED=from-parent", "DROPPED=parent",
	                 "LD_LIBRARY_PATH=/usr/lib/x", NULL };
	lks_combos cs;
	lks_combo_change *ch;
	lks_combo mix;
	int n;

	mkdir_tmp();
	put_file("c.ini", two_combos, path, sizeof(path));
	cr_assert_eq(lks_combos_load(path, &cs), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_combo_diff(&cs.combos[0], &cs.combos[1], &ch, &n), 0, "%s", lks_errmsg());

	/* a with changes 0 (CHANGED unset) and 2 (library_path) */
	cr_assert_eq(lks_combo_apply(&cs.combos[0], &cs.combos[1], ch, n, 0x5, "a+2", &mix), 0, "%s",
	             lks_errmsg());
	cr_assert_str_eq(mix.name, "a+2");
	cr_assert_eq(mix.nitems, 5);
	cr_assert_eq(lks_combo_environ(&mix, base, &env), 0, "%s", lks_errmsg());
	cr_assert_null(env_get(env, "CHANGED"), "b unsets it, over the parent's value");
	cr_assert_str_eq(env_get(env, "DROPPED"), "x", "not in the subset: a's value");
	cr_assert_str_eq(env_get(env, "SAME"), "1");
	cr_assert_str_eq(env_get(env, "PATH"), "/usr/bin", "the parent's environment stays");
	cr_assert_null(env_get(env, "ADDED"));
	cr_assert_str_eq(env_get(env, "LD_LIBRARY_PATH"), "/opt/new:/usr/lib/x");
	lks_strv_free(env);
	lks_combo_release(&mix);

	/* every change: b's environment, less what b does not say (DROPPED: the parent's) */
	cr_assert_eq(lks_combo_apply(&cs.combos[0], &cs.combos[1], ch, n, (1u << n) - 1, "b'", &mix), 0);
	cr_assert_eq(lks_combo_environ(&mix, base, &env), 0, "%s", lks_errmsg());
	cr_assert_str_eq(env_get(env, "DROPPED"), "parent");
	cr_assert_str_eq(env_get(env, "ADDED"), "y");
	lks_strv_free(env);
	lks_combo_release(&mix);
	free(ch);
	lks_combos_release(&cs);
	rm_tmp();
}

/* The set. items of c as "k=v k=v", in their order. */
static void set_items(const lks_combo *c, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = 0;
	for (int i = 0; i < c->nitems && len < n; i++)
		if (c->items[i].kind == LKS_COMBO_SET)
			len += (size_t)snprintf(buf + len, n - len, "%s%s=%s", len ? " " : "",
			                        c->items[i].target + 4, c->items[i].value);
}

/* Overrides apply in order, the later winning: a subset applied to a keeps a's order of set.
   keys, every change gives b's, and a set. key both have in another order is a change (the
   issue: B rebuilt as A's keys, then B's new ones, ran run.a as fp32 where B runs bf16). */
Test(combo, apply_keeps_the_order_of_set_keys)
{
	static const struct { const char *text; int n; } rows[] = {
		/* b adds a specific key before the wildcard that overrides it */
		{ "[combo a]\nset.run.*.recipe = bf16\n"
		  "[combo b]\nset.run.a.recipe = fp32\nset.run.*.recipe = bf16\n", 1 },
		/* the same two keys in the other order: one of them is moved */
		{ "[combo a]\nset.run.*.recipe = bf16\nset.run.a.recipe = fp32\n"
		  "[combo b]\nset.run.a.recipe = fp32\nset.run.*.recipe = bf16\n", 1 },
		/* kept in place, changed, dropped, added and moved, among env items */
		{ "[combo a]\nset.case.steps = 2\nenv.X = 1\nset.model.hidden = 16\n"
		  "set.run.*.recipe = bf16\nset.run.b.recipe = fp32\nset.case.seed = 3\n"
		  "[combo b]\nset.run.b.recipe = fp32\nset.case.steps = 2\nset.run.a.recipe = fp8\n"
		  "env.X = 2\nset.run.*.recipe = bf16\nset.case.seed = 4\n", 5 },
	};
	char path[512], want[512], got[512];
	lks_combos cs;
	lks_combo_change *ch;
	lks_combo mix;
	int n;

	mkdir_tmp();
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		put_file("c.ini", rows[r].text, path, sizeof(path));
		cr_assert_eq(lks_combos_load(path, &cs), 0, "%s", lks_errmsg());
		cr_assert_eq(lks_combo_diff(&cs.combos[0], &cs.combos[1], &ch, &n), 0);
		cr_assert_eq(n, rows[r].n, "row %zu: %d changes", r, n);
		for (uint64_t mask = 0; mask < 1ull << n; mask += (1ull << n) - 1) {
			const lks_combo *end = mask ? &cs.combos[1] : &cs.combos[0];

			cr_assert_eq(lks_combo_apply(&cs.combos[0], &cs.combos[1], ch, n, mask, "m", &mix),
			             0);
			set_items(end, want, sizeof(want));
			set_items(&mix, got, sizeof(got));
			cr_assert_str_eq(got, want, "row %zu, mask %#llx", r, (unsigned long long)mask);
			lks_combo_release(&mix);
			if (!n)
				break;
		}
		free(ch);
		lks_combos_release(&cs);
	}
	rm_tmp();
}

/* ---- one probe: outcomes from exit codes, signals and the clock ---- */

/* A probe of 'sh -c script' in the environment env. */
static lks_probe_result sh_probe(const char *script, double timeout, char *const *env)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	lks_probe_result res;

	cr_assert_eq(lks_probe_exec("/bin/sh", argv, env, timeout, NULL, &res), 0, "%s",
	             lks_errmsg());
	return res;
}

Test(combo, probe_outcomes_from_exit_status)
{
	char *env[] = { "FOO=from the combo", NULL };
	lks_probe_result r;

	r = sh_probe("echo \"$FOO\"; echo to stderr >&2; exit 0", 10, env);
	cr_assert(r.outcome == LKS_OUTCOME_GOOD && r.exit_code == 0 && r.signal == 0);
	cr_assert_str_eq(r.output, "from the combo\nto stderr\n");
	cr_assert(strlen(r.started) >= 20 && r.started[10] == 'T', "%s", r.started);
	r = sh_probe("exit 1", 10, env);
	cr_assert(r.outcome == LKS_OUTCOME_BAD && r.exit_code == 1);
	r = sh_probe("exit 125", 10, env);
	cr_assert_eq(r.outcome, LKS_OUTCOME_SKIP);
	r = sh_probe("exit 7", 10, env);
	cr_assert(r.outcome == LKS_OUTCOME_CRASH && r.exit_code == 7);
	r = sh_probe("kill -SEGV $$", 10, env);
	cr_assert(r.outcome == LKS_OUTCOME_CRASH && r.exit_code == -1 && r.signal == SIGSEGV,
	          "exit %d signal %d", r.exit_code, r.signal);
	/* only the end of a long output is kept, up to its last byte */
	r = sh_probe("i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); done", 10, env);
	cr_assert_eq(strlen(r.output), LKS_PROBE_TAIL - 1);
	cr_assert_not_null(strstr(r.output, "line 1999\n"));
	cr_assert_null(strstr(r.output, "line 10\n"));
}

Test(combo, probe_killed_at_its_timeout, .timeout = 60)
{
	lks_probe_result r;

	/* SIGTERM ends it at the timeout; the clock says it did not wait for sleep */
	r = sh_probe("sleep 30", 0.5, NULL);
	cr_assert(r.outcome == LKS_OUTCOME_TIMEOUT && r.signal == SIGTERM, "outcome %s signal %d",
	          lks_outcome_name(r.outcome), r.signal);
	cr_assert(r.seconds >= 0.5 && r.seconds < 0.5 + LKS_PROBE_GRACE, "%.2f s", r.seconds);
	/* one that ignores SIGTERM gets SIGKILL after the grace */
	r = sh_probe("trap '' TERM; echo started; while :; do sleep 1; done", 0.5, NULL);
	cr_assert(r.outcome == LKS_OUTCOME_TIMEOUT && r.signal == SIGKILL, "signal %d", r.signal);
	cr_assert(r.seconds >= 0.5 + LKS_PROBE_GRACE && r.seconds < 0.5 + LKS_PROBE_GRACE + 2,
	          "%.2f s", r.seconds);
	cr_assert_str_eq(r.output, "started\n");
}

/* ---- the searches, with a predicate for probes ---- */

/* Combos 0..n-1, bad from 'first_bad' on; 'skip' (a bit per index) cannot be tested. */
struct line_of_combos {
	int n, first_bad;
	uint64_t skip, asked;     /* asked: each index once */
	int twice;
};

static int probe_index(void *arg, int i, lks_mark *mark)
{
	struct line_of_combos *l = arg;

	l->twice |= (l->asked >> i) & 1;
	l->asked |= 1ull << i;
	*mark = (l->skip >> i & 1) ? LKS_MARK_SKIP : i >= l->first_bad ? LKS_MARK_BAD : LKS_MARK_GOOD;
	return 0;
}

static int ceil_log2(int x)
{
	int k = 0;

	while ((1 << k) < x)
		k++;
	return k;
}

Test(combo, bisect_finds_the_first_bad_in_few_probes)
{
	lks_search_result r;

	/* the acceptance case: 8 combos, bad from the 6th (index 5), in at most 4 probes */
	struct line_of_combos l = { .n = 8, .first_bad = 5 };
	cr_assert_eq(lks_search_bisect(l.n, probe_index, &l, &r), 0);
	cr_assert_eq(r.status, LKS_SEARCH_FOUND);
	cr_assert(r.first_bad == 5 && r.last_good == 4);
	cr_assert_leq(r.nprobes, 4, "%d probes", r.nprobes);
	cr_assert(l.asked & 1, "the first combo is probed");

	/* every length and turning point: right, no probe twice, and 1 + ceil(log2(n - 1))
	   probes at most (the first, then a binary search over n - 1 candidates), plus one
	   when the answer is the last combo, which is probed only then */
	for (int n = 2; n <= 20; n++)
		for (int t = 1; t < n; t++) {
			l = (struct line_of_combos){ .n = n, .first_bad = t };
			cr_assert_eq(lks_search_bisect(n, probe_index, &l, &r), 0);
			cr_assert(r.status == LKS_SEARCH_FOUND && r.first_bad == t && r.last_good == t - 1,
			          "n %d, bad from %d: status %d, first bad %d", n, t, r.status, r.first_bad);
			cr_assert_not(l.twice, "n %d t %d: a combo probed twice", n, t);
			cr_assert_leq(r.nprobes, 1 + ceil_log2(n - 1) + (t == n - 1), "n %d t %d: %d probes",
			              n, t, r.nprobes);
		}
}

Test(combo, bisect_refuses_a_line_that_does_not_turn_and_steps_around_skips)
{
	lks_search_result r;
	struct line_of_combos l = { .n = 8, .first_bad = 0 };

	/* bad from the start: one probe says so */
	cr_assert_eq(lks_search_bisect(l.n, probe_index, &l, &r), 0);
	cr_assert(r.status == LKS_SEARCH_START_NOT_GOOD && r.start == LKS_MARK_BAD && r.nprobes == 1);
	/* never bad: the last combo is probed, and found good */
	l = (struct line_of_combos){ .n = 8, .first_bad = 8 };
	cr_assert_eq(lks_search_bisect(l.n, probe_index, &l, &r), 0);
	cr_assert(r.status == LKS_SEARCH_END_NOT_BAD && r.end == LKS_MARK_GOOD, "status %d", r.status);
	cr_assert(l.asked >> 7 & 1);
	/* the middle cannot be tested: a neighbour is, and the answer is still exact */
	l = (struct line_of_combos){ .n = 8, .first_bad = 5, .skip = 1u << 3 };
	cr_assert_eq(lks_search_bisect(l.n, probe_index, &l, &r), 0);
	cr_assert(r.status == LKS_SEARCH_FOUND && r.first_bad == 5, "status %d first bad %d",
	          r.status, r.first_bad);
	/* the one before the first bad cannot be tested: the answer is a range, as git says */
	l = (struct line_of_combos){ .n = 8, .first_bad = 5, .skip = 1u << 4 };
	cr_assert_eq(lks_search_bisect(l.n, probe_index, &l, &r), 0);
	cr_assert(r.status == LKS_SEARCH_SKIPPED && r.last_good == 3 && r.first_bad == 5,
	          "status %d: %d..%d", r.status, r.last_good, r.first_bad);
}

/* Differences 0..n-1; a subset is bad when it holds all of 'cause'. */
struct set_of_changes {
	uint64_t cause, skip;     /* skip: subsets that cannot be tested */
	int probes;
};

static int probe_subset(void *arg, uint64_t subset, lks_mark *mark)
{
	struct set_of_changes *c = arg;

	c->probes++;
	*mark = subset == c->skip && subset ? LKS_MARK_SKIP
	      : (subset & c->cause) == c->cause ? LKS_MARK_BAD : LKS_MARK_GOOD;
	return 0;
}

Test(combo, ddmin_isolates_the_cause)
{
	struct set_of_changes c = { .cause = 1u << 4 };
	lks_search_result r;

	/* five differences, the fifth the cause: good A and bad B, then two halves at each of
	   5 -> {2,3,4} -> {3,4} -> {4}: 2 + 3 x 2 probes */
	cr_assert_eq(lks_search_ddmin(5, probe_subset, &c, &r), 0);
	cr_assert_eq(r.status, LKS_SEARCH_FOUND);
	cr_assert_eq(r.minimal, 1u << 4);
	cr_assert_eq(r.nprobes, 8, "%d probes", r.nprobes);
	cr_assert_eq(c.probes, r.nprobes, "a subset probed twice");

	/* a cause of any shape among 6: the only 1-minimal bad subset is the cause itself */
	for (uint64_t cause = 1; cause < 64; cause++) {
		c = (struct set_of_changes){ .cause = cause };
		cr_assert_eq(lks_search_ddmin(6, probe_subset, &c, &r), 0);
		cr_assert(r.status == LKS_SEARCH_FOUND && r.minimal == cause,
		          "cause %#llx: found %#llx", (unsigned long long)cause,
		          (unsigned long long)r.minimal);
		cr_assert_eq(c.probes, r.nprobes);
	}

	/* a subset that cannot be tested counts as not bad: the cause is still found */
	c = (struct set_of_changes){ .cause = 1u << 4, .skip = 0x7 };
	cr_assert_eq(lks_search_ddmin(5, probe_subset, &c, &r), 0);
	cr_assert(r.status == LKS_SEARCH_FOUND && r.minimal == 1u << 4);
}

Test(combo, ddmin_needs_a_good_start_and_a_bad_end)
{
	struct set_of_changes c = { .cause = 0 };  /* everything bad, the empty set too */
	lks_search_result r;

	cr_assert_eq(lks_search_ddmin(3, probe_subset, &c, &r), 0);
	cr_assert(r.status == LKS_SEARCH_START_NOT_GOOD && r.nprobes == 1);
	c = (struct set_of_changes){ .cause = 1u << 5 };  /* a cause outside the 3: never bad */
	cr_assert_eq(lks_search_ddmin(3, probe_subset, &c, &r), 0);
	cr_assert(r.status == LKS_SEARCH_END_NOT_BAD && r.end == LKS_MARK_GOOD && r.nprobes == 2);
}
