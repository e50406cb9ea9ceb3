/*
 * test_combo.c: combos and the commands that probe them. The combos file (every mistake at
 * its file:line), differences between combos and their subsets, a probe's environment;
 * 'run/check --check NAME' and '--combo NAME' as the probes use them.
 * LKS_BIN is the built program, LKS_SRC the source tree (tests/combo/ holds the fixtures);
 * both are set by tests/CMakeLists.txt. Every test works in its own mkdtemp folder.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "harness/probe/combo.h"
#include "harness/probe/probe.h"
#include "harness/probe/search.h"
#include "kernels/err.h"
#include "run_bin.h"

#define FIXTURES LKS_SRC "/tests/combo"

static char tmpdir[256];

static void mkdir_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lks-test-combo-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

/* Writes text to tmpdir/name; the path into path. */
static void put_file(const char *name, const char *text, char *path, size_t n)
{
	FILE *f;

	snprintf(path, n, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f, "cannot write '%s'", path);
	fputs(text, f);
	fclose(f);
}

/* Runs LKS_BIN with the arguments fmt makes (tests/run_bin.h): the exit code, and stdout
   and stderr together in out. */
static int lockstep(char *out, size_t n, const char *fmt, ...)
{
	char args[3072];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return lks_run_bin(NULL, args, out, n);
}

/* The one integer an SQL query over tmpdir/db gives. */
static long long sql_int(const char *db, const char *sql)
{
	char path[512];
	sqlite3 *h;
	sqlite3_stmt *st;
	long long v;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, db);
	cr_assert_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
	cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
	             sqlite3_errmsg(h));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

/* The text an SQL query over tmpdir/db gives ("(null)" for NULL). */
static void sql_text(const char *db, const char *sql, char *buf, size_t n)
{
	char path[512];
	sqlite3 *h;
	sqlite3_stmt *st;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, db);
	cr_assert_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
	cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
	             sqlite3_errmsg(h));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	snprintf(buf, n, "%s", sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0)
	                                                : "(null)");
	sqlite3_finalize(st);
	sqlite3_close(h);
}

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
		{ "; nothing\n", "c.ini: no combos", "" },
	};
	char path[512];
	lks_combos cs;

	mkdir_tmp();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put_file("c.ini", bad[i].text, path, sizeof(path));
		cr_assert_eq(lks_combos_load(path, &cs), -1, "case %zu loaded", i);
		cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), bad[i].where)
		          && strstr(lks_errmsg(), bad[i].what), "case %zu: %s", i, lks_errmsg());
		cr_assert_eq(cs.n, 0);
	}
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
	cr_assert_eq(lks_combo_apply(&cs.combos[0], ch, n, 0x5, "a+2", &mix), 0, "%s",
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
	cr_assert_eq(lks_combo_apply(&cs.combos[0], ch, n, (1u << n) - 1, "b'", &mix), 0);
	cr_assert_eq(lks_combo_environ(&mix, base, &env), 0, "%s", lks_errmsg());
	cr_assert_str_eq(env_get(env, "DROPPED"), "parent");
	cr_assert_str_eq(env_get(env, "ADDED"), "y");
	lks_strv_free(env);
	lks_combo_release(&mix);
	free(ch);
	lks_combos_release(&cs);
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

/* ---- run and check: --check and --combo, as a probe calls them ---- */

Test(combo, check_option_keeps_one_check_and_its_runs)
{
	char out[8192];

	mkdir_tmp();
	cr_assert_eq(lockstep(out, sizeof(out), "check %s/tiny.ini --db %s/t.db --quiet --check finite "
	                      "--combo cuda-12.4", FIXTURES, tmpdir), 0, "%s", out);
	/* 'finite' reads run 'base' only: 'fp8' is not trained, 'tracks' not evaluated */
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs"), 1, "%s", out);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs WHERE run_name = 'base' "
	                             "AND combo = 'cuda-12.4' AND status = 'complete'"), 1);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM checks"), 1);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM checks WHERE check_name = 'finite'"), 1);

	/* without --check: both runs, both checks, no combo */
	cr_assert_eq(lockstep(out, sizeof(out), "run %s/tiny.ini --db %s/t.db --quiet", FIXTURES,
	                      tmpdir), 0, "%s", out);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs WHERE combo IS NULL"), 2);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM checks"), 3);

	/* a check no case has would be a silent pass: bad usage, and nothing is run */
	cr_assert_eq(lockstep(out, sizeof(out), "run %s/tiny.ini --db %s/t.db --check nosuch",
	                      FIXTURES, tmpdir), 2);
	cr_assert_not_null(strstr(out, "no case has a check named nosuch"), "%s", out);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs"), 3);
	rm_tmp();
}

/* ---- end to end: eight combos that turn bad at the sixth (tests/combo/eight.ini) ---- */

/* How many lines of text, from the one with 'from' up to the one with 'to' (NULL: the end),
   contain needle. */
static int lines_with(const char *text, const char *from, const char *to, const char *needle)
{
	const char *p = strstr(text, from), *end = p && to ? strstr(p, to) : NULL;
	int n = 0;

	if (!end)
		end = text + strlen(text);
	for (; p && p < end; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : end) {
		size_t len = strcspn(p, "\n");
		const char *hit = strstr(p, needle);

		n += hit && hit < p + len;
	}
	return n;
}

Test(combo, bisect_finds_the_planted_fault, .timeout = 120)
{
	char out[16384], s[256];
	long long probes;

	mkdir_tmp();
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s/eight.ini %s/tiny.ini --check finite "
	                      "--db %s/b.db", FIXTURES, FIXTURES, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "first bad combo: c6 ("), "%s", out);
	cr_assert_not_null(strstr(out, "last good combo: c5\n"), "%s", out);
	/* the first combo, then c4, c6, c5: the bound of the issue is 4 */
	probes = sql_int("b.db", "SELECT count(*) FROM probes");
	cr_assert_leq(probes, 4, "%lld probes:\n%s", probes, out);
	snprintf(s, sizeof(s), "\n%lld probes\n", probes);
	cr_assert_not_null(strstr(out, s), "%s", out);
	sql_text("b.db", "SELECT combo FROM probes ORDER BY probe_id LIMIT 1", s, sizeof(s));
	cr_assert_str_eq(s, "c1", "the first combo is probed first");
	cr_assert_eq(sql_int("b.db", "SELECT count(*) FROM probes WHERE outcome = 'bad' AND "
	                             "combo IN ('c6', 'c7', 'c8')") +
	             sql_int("b.db", "SELECT count(*) FROM probes WHERE outcome = 'good' AND "
	                             "combo IN ('c1', 'c2', 'c3', 'c4', 'c5')"), probes);
	/* c5 -> c6 differ in one key, and the stored fingerprints say the same */
	cr_assert_eq(lines_with(out, "combo keys that differ:", "runs:", "env."), 1, "%s", out);
	cr_assert_eq(lines_with(out, "combo keys that differ:", "runs:", "set."), 0, "%s", out);
	cr_assert_eq(lines_with(out, "combo keys that differ:", "runs:", "env.LOCKSTEP_INJECT"), 1,
	             "%s", out);
	cr_assert_not_null(strstr(out, "fingerprint keys that differ:\n  env.LOCKSTEP_INJECT"),
	                   "%s", out);
	/* the probes' runs carry their combo; c6's failed where the fault was planted */
	cr_assert_eq(sql_int("b.db", "SELECT count(*) FROM checks c JOIN runs r ON r.run_id = c.run_a "
	                             "WHERE r.combo = 'c6' AND c.verdict = 'fail' AND c.step = 2 "
	                             "AND c.tensor = 'blocks.0.mlp.up.weight.grad'"), 1);
	sql_text("b.db", "SELECT result FROM probe_sessions", s, sizeof(s));
	cr_assert_not_null(strstr(s, "first bad: c6, after c5"), "%s", s);
	rm_tmp();
}

Test(combo, reduce_isolates_the_one_key_that_matters, .timeout = 120)
{
	char out[16384], s[256];
	const char *min;

	mkdir_tmp();
	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good c1 --bad c8 --combos %s/eight.ini "
	                      "%s/tiny.ini --check finite --db %s/r.db", FIXTURES, FIXTURES, tmpdir),
	             0, "%s", out);
	cr_assert_not_null(strstr(out, "combos 'c1' and 'c8' differ in 5 keys:"), "%s", out);
	min = strstr(out, "\nminimal difference (1 of 5 keys, ");
	cr_assert_not_null(min, "%s", out);
	/* after that line: the one key, and none of the four harmless ones */
	cr_assert_not_null(strstr(min, "env.LOCKSTEP_INJECT    c1: (absent)"), "%s", out);
	cr_assert_eq(lines_with(min, "minimal", NULL, "  env.")
	             + lines_with(min, "minimal", NULL, "  set."), 1, "%s", out);
	sql_text("r.db", "SELECT result FROM probe_sessions", s, sizeof(s));
	snprintf(out, sizeof(out), "minimal: env.LOCKSTEP_INJECT (1 of 5 keys, %lld probes)",
	         sql_int("r.db", "SELECT count(*) FROM probes"));
	cr_assert_str_eq(s, out);
	/* a subset's probe is stored under the name of what was applied */
	cr_assert_eq(sql_int("r.db", "SELECT count(*) FROM probes WHERE "
	                             "combo = 'c1+{env.LOCKSTEP_INJECT}' AND outcome = 'bad'"), 1);
	rm_tmp();
}

Test(combo, matrix_table_of_verdicts, .timeout = 120)
{
	char out[16384];

	mkdir_tmp();
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s/eight.ini %s/tiny.ini --check finite "
	                      "--db %s/m.db", FIXTURES, FIXTURES, tmpdir), 1, "%s", out);
	cr_assert_not_null(strstr(out, "\ncombo  tiny\n"), "%s", out);
	cr_assert_not_null(strstr(out, "\nc5     good\n"), "%s", out);
	cr_assert_not_null(strstr(out, "\nc6     bad\n"), "%s", out);
	cr_assert_not_null(strstr(out, "8 probes: 5 good, 3 bad"), "%s", out);
	cr_assert_eq(sql_int("m.db", "SELECT count(*) FROM probes WHERE outcome = 'good'"), 5);
	cr_assert_eq(sql_int("m.db", "SELECT count(*) FROM probes p JOIN runs r ON "
	                             "r.suite_id = p.suite_id AND r.combo = p.combo"), 8);
	rm_tmp();
}

Test(combo, bad_usage_exits_2)
{
	static const struct { const char *args, *says; } bad[] = {
		{ "matrix tiny.ini", "which combos? (--combos FILE)" },
		{ "bisect --combos c.ini", "which cases?" },
		{ "reduce --combos c.ini --good a tiny.ini", "--bad is required" },
		{ "matrix --combos c.ini --timeout 0 tiny.ini", "--timeout wants seconds > 0, not '0'" },
		{ "bisect --combos c.ini --on-crash maybe tiny.ini", "--on-crash wants skip or bad" },
		{ "matrix --combos c.ini --frobnicate tiny.ini", "bad option '--frobnicate'" },
		{ "reduce --combos c.ini tiny.ini --good", "--good needs a value" },
	};
	static const char *const cmds[] = { "matrix", "bisect", "reduce" };
	char out[8192];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(lockstep(out, sizeof(out), "%s", bad[i].args), 2, "%s:\n%s", bad[i].args,
		             out);
		cr_assert_not_null(strstr(out, bad[i].says), "%s:\n%s", bad[i].args, out);
	}
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(lockstep(out, sizeof(out), "%s --help", cmds[i]), 0);
		cr_assert_not_null(strstr(out, "usage: lockstep "), "%s", out);
		cr_assert_not_null(strstr(out, "--on-crash skip|bad"), "%s", out);
		cr_assert_not_null(strstr(out, "exit codes:"), "%s", out);
	}
	cr_assert_eq(lockstep(out, sizeof(out), "--help"), 0);
	cr_assert(strstr(out, "  matrix ") && strstr(out, "  bisect ") && strstr(out, "  reduce "),
	          "%s", out);
}

Test(combo, bad_input_stops_before_any_probe, .timeout = 120)
{
	char out[8192], combos[512], path[600];

	mkdir_tmp();
	/* the combos file names its line; the database is not even created */
	put_file("typo.ini", "[combo a]\nenv.X = 1\n[combo b]\nenvX = 2\n", combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s %s/tiny.ini --db %s/x.db", combos,
	                      FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "typo.ini:4: unknown key 'envX'"), "%s", out);
	snprintf(path, sizeof(path), "%s/x.db", tmpdir);
	cr_assert_neq(access(path, F_OK), 0, "the database was created");
	/* an override the case refuses names its own line, before any probe */
	put_file("over.ini", "[combo a]\n[combo b]\nenv.X = 1\nset.model.hidn = 3\n", combos,
	         sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s %s/tiny.ini --db %s/x.db", combos,
	                      FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "over.ini:4: combo 'b': "), "%s", out);
	cr_assert_not_null(strstr(out, "hidn"), "%s", out);
	put_file("over.ini", "[combo a]\n[combo b]\nset.model.hidden = 16\n"
	         "set.run.fp8.recipe = fp9\n", combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s %s/tiny.ini --db %s/x.db", combos,
	                      FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "over.ini:4: combo 'b': unknown recipe 'fp9'"), "%s", out);
	/* overrides each good alone, but not together: the combo's line */
	put_file("over.ini", "[combo a]\n[combo b]\nset.optim.warmup = 3\nset.case.steps = 2\n",
	         combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s %s/tiny.ini --db %s/x.db", combos,
	                      FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "over.ini:2: combo 'b': "), "%s", out);
	cr_assert_not_null(strstr(out, "warmup 3 is longer than the case's 2 steps"), "%s", out);
	cr_assert_eq(sql_int("x.db", "SELECT count(*) FROM probes"), 0);
	/* a run no case has: every probe would train nothing and pass */
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s/eight.ini %s/tiny.ini --run nosuch "
	                      "--db %s/x.db", FIXTURES, FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no case has a run named 'nosuch'"), "%s", out);
	cr_assert_eq(sql_int("x.db", "SELECT count(*) FROM probes"), 0);
	/* a list that is bad from the start cannot be bisected: one probe says so */
	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good c6 --bad c8 --combos %s/eight.ini "
	                      "%s/tiny.ini --check finite --db %s/x.db", FIXTURES, FIXTURES, tmpdir),
	             2, "%s", out);
	cr_assert_not_null(strstr(out, "combo 'c6' is bad: reduce needs --good to pass"), "%s", out);
	cr_assert_eq(sql_int("x.db", "SELECT count(*) FROM probes"), 1);
	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good c1 --bad c1 --combos %s/eight.ini "
	                      "%s/tiny.ini --db %s/x.db", FIXTURES, FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "do not differ"), "%s", out);
	rm_tmp();
}

/* ---- a probe that hangs ---- */

Test(combo, hanging_probe_is_killed_at_its_timeout_and_recorded, .timeout = 120)
{
	char out[16384], combos[512], s[64];
	long long runs, steps, stats;
	double seconds;

	mkdir_tmp();
	/* what the database holds before: one earlier run of the case */
	cr_assert_eq(lockstep(out, sizeof(out), "run %s/tiny.ini --db %s/h.db --quiet", FIXTURES,
	                      tmpdir), 0, "%s", out);
	runs = sql_int("h.db", "SELECT count(*) FROM runs WHERE status = 'complete'");
	steps = sql_int("h.db", "SELECT count(*) FROM steps");
	stats = sql_int("h.db", "SELECT count(*) FROM stats");
	cr_assert_gt(stats, 0);

	snprintf(out, sizeof(out), "[combo ok]\n[combo hangs]\nenv.LD_PRELOAD = %s\n", LKS_HANG_LIB);
	put_file("hang.ini", out, combos, sizeof(combos));
	/* 1 s timeout: the hanging probe ignores SIGTERM, so SIGKILL ends it 2 s later */
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s %s/tiny.ini --check finite "
	                      "--timeout 1 --db %s/h.db", combos, FIXTURES, tmpdir), 3, "%s", out);
	cr_assert_not_null(strstr(out, "\nhangs  timeout"), "%s", out);
	cr_assert_not_null(strstr(out, "killed at the 1 s timeout"), "%s", out);

	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM probes WHERE combo = 'hangs' AND "
	                             "outcome = 'timeout' AND exit_code IS NULL AND signal = 9 "
	                             "AND suite_id IS NULL"), 1);
	sql_text("h.db", "SELECT seconds FROM probes WHERE combo = 'hangs'", s, sizeof(s));
	seconds = atof(s);
	/* the timeout, then the grace; a second more for a loaded machine */
	cr_assert(seconds >= 1 + LKS_PROBE_GRACE && seconds < 1 + LKS_PROBE_GRACE + 1, "%.2f s",
	          seconds);
	/* the database is whole, what was there is there, and the good probe stored its run */
	sql_text("h.db", "PRAGMA integrity_check", s, sizeof(s));
	cr_assert_str_eq(s, "ok");
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM runs WHERE status = 'complete' AND "
	                             "combo IS NULL"), runs);
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM steps s JOIN runs r USING (run_id) "
	                             "WHERE r.combo IS NULL"), steps);
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM stats s JOIN runs r USING (run_id) "
	                             "WHERE r.combo IS NULL"), stats);
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM runs WHERE combo = 'ok' AND "
	                             "status = 'complete'"), 1);
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM runs WHERE combo = 'hangs'"), 0);
	rm_tmp();
}

Test(combo, on_crash_decides_what_a_crash_is, .timeout = 120)
{
	char out[16384], text[1024], combos[512];

	mkdir_tmp();
	/* good, then a combo whose probe dies of SIGSEGV, then a bad one */
	snprintf(text, sizeof(text), "[combo good]\n[combo crashes]\nenv.LD_PRELOAD = %s\n"
	         "env.LKS_TEST_PRELOAD = segv\n[combo bad]\n"
	         "env.LOCKSTEP_INJECT = nan step=2 rank=0 tensor=blocks.0.mlp.up.weight.grad\n",
	         LKS_HANG_LIB);
	put_file("crash.ini", text, combos, sizeof(combos));
	/* a crash says nothing about numerics: the first bad is 'crashes' or 'bad', no more */
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s %s/tiny.ini --check finite "
	                      "--db %s/c.db", combos, FIXTURES, tmpdir), 3, "%s", out);
	cr_assert_not_null(strstr(out, "crashes                  crash"), "%s", out);
	cr_assert_not_null(strstr(out, "(signal 11: "), "%s", out);
	cr_assert_not_null(strstr(out, "it is one of:\n  crashes  (could not test)\n  bad\n"),
	                   "%s", out);
	cr_assert_eq(sql_int("c.db", "SELECT count(*) FROM probes WHERE combo = 'crashes' AND "
	                             "outcome = 'crash' AND signal = 11"), 1);
	/* with --on-crash bad the crash is the first bad */
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s %s/tiny.ini --check finite "
	                      "--on-crash bad --db %s/c.db", combos, FIXTURES, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "first bad combo: crashes ("), "%s", out);
	cr_assert_not_null(strstr(out, "the probe of 'crashes' stored no run"), "%s", out);
	rm_tmp();
}

/* ---- ci/bisect-step: git bisect run's exit codes, over a stand-in project ---- */

static const char stand_in_cmake[] =
	"cmake_minimum_required(VERSION 3.22)\n"
	"project(stand_in C)\n"
	"add_executable(lockstep lockstep.c)\n";

/* A lockstep whose 'check' prints its arguments and exits with $RC, or dies of SIGSEGV. */
static const char stand_in_main[] =
	"#include <signal.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
	"int main(int argc, char **argv)\n{\n"
	"	if (argc < 2 || strcmp(argv[1], \"check\"))\n		return 2;\n"
	"	for (int i = 1; i < argc; i++)\n		printf(\"%s%s\", argv[i], i + 1 < argc ? \" \" : \"\\n\");\n"
	"	if (!strcmp(getenv(\"RC\"), \"segv\"))\n		raise(SIGSEGV);\n"
	"	return atoi(getenv(\"RC\"));\n}\n";

/* Runs ci/bisect-step in tmpdir/repo with env; its exit code, and its output in out. */
static int bisect_step(const char *env, char *out, size_t n)
{
	char cmd[2048], path[512];
	FILE *f;
	int status;
	size_t len;

	snprintf(cmd, sizeof(cmd), "cd '%s/repo' && env %s LKS_BISECT_BUILD=b bash '%s/ci/bisect-step' "
	         "cases/x.ini --check finite > '%s/out.txt' 2>&1", tmpdir, env, LKS_SRC, tmpdir);
	status = system(cmd);
	cr_assert(WIFEXITED(status), "%s", cmd);
	snprintf(path, sizeof(path), "%s/out.txt", tmpdir);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	len = fread(out, 1, n - 1, f);
	out[len] = 0;
	fclose(f);
	return WEXITSTATUS(status);
}

Test(combo, bisect_step_exit_codes_for_git_bisect_run, .timeout = 300)
{
	static const struct { const char *env; int want; const char *says; } cases[] = {
		{ "RC=0", 0, "good" },
		{ "RC=1", 1, "bad" },
		{ "RC=125", 125, "cannot test" },
		{ "RC=2", 125, "lockstep exited 2" },    /* an old commit: no 'check' command */
		{ "RC=segv", 125, "lockstep exited 139" },
		{ "RC=segv LKS_ON_CRASH=bad", 1, "crashed (signal 11): bad" },
	};
	char out[8192], path[512], cmd[1024];

	mkdir_tmp();
	snprintf(cmd, sizeof(cmd), "mkdir '%s/repo' && cd '%s/repo' && git init -q", tmpdir, tmpdir);
	cr_assert_eq(system(cmd), 0);
	put_file("repo/CMakeLists.txt", stand_in_cmake, path, sizeof(path));
	put_file("repo/lockstep.c", stand_in_main, path, sizeof(path));
	snprintf(cmd, sizeof(cmd), "cd '%s/repo' && git add . && git -c user.name=t -c user.email=t@t "
	         "commit -qm stand-in", tmpdir);
	cr_assert_eq(system(cmd), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(bisect_step(cases[i].env, out, sizeof(out)), cases[i].want, "%s:\n%s",
		             cases[i].env, out);
		cr_assert_not_null(strstr(out, cases[i].says), "%s:\n%s", cases[i].env, out);
		/* the cases and options reach 'lockstep check', after a database of the step's own
		   (a crashed stand-in never flushes what it printed) */
		cr_assert(strstr(out, "check --db b/bisect-step.db --quiet cases/x.ini --check finite\n")
		          || strstr(cases[i].env, "segv"), "%s:\n%s", cases[i].env, out);
	}
	/* a commit that does not build is skipped */
	put_file("repo/lockstep.c", "this is not C\n", path, sizeof(path));
	cr_assert_eq(bisect_step("RC=0", out, sizeof(out)), 125, "%s", out);
	cr_assert_not_null(strstr(out, "the build failed"), "%s", out);
	rm_tmp();
}
