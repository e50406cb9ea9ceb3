/*
 * test_combo.c: combos and the commands that probe them. 'run/check --check NAME' and
 * '--combo NAME' as the probes use them.
 * LKS_BIN is the built program, LKS_SRC the source tree (tests/combo/ holds the fixtures);
 * both are set by tests/CMakeLists.txt. Every test works in its own mkdtemp folder.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#define FIXTURES LKS_SRC "/tests/combo"

static char tmpdir[256];

static void mkdir_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lks-test-combo-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char p[512];

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(tmpdir);
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
