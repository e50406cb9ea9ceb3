/*
 * test_combo.c: combos and the commands that probe them. The combos file (every mistake at
 * its file:line), differences between combos and their subsets, a probe's environment;
 * 'run/check --check NAME' and '--combo NAME' as the probes use them.
 * LKS_BIN is the built program, LKS_SRC the source tree (tests/combo/ holds the fixtures);
 * both are set by tests/CMakeLists.txt. Every test works in its own mkdtemp folder.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "harness/combo.h"
#include "kernels/err.h"

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

/* Runs 'cd tmpdir && LKS_BIN args' through the shell; the exit code, and stdout and stderr
   together in out. */
static int lockstep(const char *args, char *out, size_t n)
{
	char cmd[4096];
	size_t len = 0;
	FILE *p;
	int status;

	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s 2>&1", tmpdir, LKS_BIN, args);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	out[0] = 0;
	while (len + 1 < n && fgets(out + len, (int)(n - len), p))
		len = strlen(out);
	while (fgetc(p) != EOF)
		;
	status = pclose(p);
	cr_assert(WIFEXITED(status), "'%s' did not exit normally", cmd);
	return WEXITSTATUS(status);
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

/* ---- run and check: --check and --combo, as a probe calls them ---- */

Test(combo, check_option_keeps_one_check_and_its_runs)
{
	char out[8192];

	mkdir_tmp();
	cr_assert_eq(lockstep("check " FIXTURES "/tiny.ini --db t.db --quiet --check finite "
	                      "--combo cuda-12.4", out, sizeof(out)), 0, "%s", out);
	/* 'finite' reads run 'base' only: 'fp8' is not trained, 'tracks' not evaluated */
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs"), 1, "%s", out);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs WHERE run_name = 'base' "
	                             "AND combo = 'cuda-12.4' AND status = 'complete'"), 1);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM checks"), 1);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM checks WHERE check_name = 'finite'"), 1);

	/* without --check: both runs, both checks, no combo */
	cr_assert_eq(lockstep("run " FIXTURES "/tiny.ini --db t.db --quiet", out, sizeof(out)), 0,
	             "%s", out);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs WHERE combo IS NULL"), 2);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM checks"), 3);

	/* a check no case has would be a silent pass: bad usage, and nothing is run */
	cr_assert_eq(lockstep("run " FIXTURES "/tiny.ini --db t.db --check nosuch", out,
	                      sizeof(out)), 2);
	cr_assert_not_null(strstr(out, "no case has a check named nosuch"), "%s", out);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs"), 3);
	rm_tmp();
}
