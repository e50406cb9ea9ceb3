/*
 * test_prune.c: 'lockstep prune' (harness/store/prune.h) as a user meets it: ten suites
 * stored by 'lockstep run', then 'prune --keep 3' with one old suite pinned: the file is
 * smaller; the stat rows and kept states of the unpinned old suites are gone and nothing
 * else is (every
 * other table's rows, and every row of the kept and pinned suites, counted before and
 * after); every suite still reports, diffs and reads its verdicts back. A reader holding a
 * snapshot is neither blocked nor disturbed meanwhile. --keep-days prunes by age but never
 * the latest suite, nor the latest whole one when the latest was killed, nor one still
 * being written, and 'golden update' refuses a pruned run. Bad usage exits 2. LKS_BIN is the
 * path of the built program (tests/store/CMakeLists.txt).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nightly_fixture.h"
#include "run_bin.h"
#include "tiny_model.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* Two runs and a check, two steps: each 'lockstep run' takes milliseconds and stores a
   suite of some hundred stat rows. */
static const char case_text[] =
	"[case]\n"
	"description = tiny case for lockstep prune\n"
	"steps = 2\n"
	"seed = 3\n"
	"world_size = 1\n"
	LKS_TINY_MODEL
	"[run bf16]\n"
	"recipe = bf16\n"
	"[run rowwise]\n"
	"recipe = fp8_rowwise\n"
	"[check tracks]\n"
	"kind = close\n"
	"a = rowwise\n"
	"b = bf16\n"
	"metric = loss\n"
	"rtol = 0.5\n";

#define SUITES 10

struct fixture {
	char dir[64], db[128], ini[128];
};

static void setup(struct fixture *f, int suites)
{
	char args[512], out[4096];
	FILE *cf;

	snprintf(f->dir, sizeof(f->dir), "/tmp/lks_test_prune_XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/t.db", f->dir);
	snprintf(f->ini, sizeof(f->ini), "%s/tiny.ini", f->dir);
	cr_assert_not_null(cf = fopen(f->ini, "w"));
	fputs(case_text, cf);
	fclose(cf);
	/* each run keeps its state after every step: a prune drops them with the stat rows */
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet --keep-state 1", f->ini, f->db);
	for (int i = 0; i < suites; i++)
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
}

static void teardown(struct fixture *f)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	cr_assert_eq(system(cmd), 0);
}

static int64_t sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
	             sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* The rows of table (stats, states) of one suite. */
static int64_t suite_rows(sqlite3 *db, const char *table, int suite)
{
	char sql[160];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE run_id IN (SELECT run_id "
	         "FROM runs WHERE suite_id = %d)", table, suite);
	return sql_int(db, sql);
}

/* Every row of every table but stats, in one number per table: what prune must keep. */
static const char *const kept_tables[] = { "suites", "runs", "tensors", "steps", "events",
                                           "checks", "health", "gemm_algos" };
#define NKEPT (sizeof(kept_tables) / sizeof(kept_tables[0]))

static void count_kept(sqlite3 *db, int64_t *n)
{
	char sql[128];

	for (size_t i = 0; i < NKEPT; i++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", kept_tables[i]);
		n[i] = sql_int(db, sql);
	}
}

/* SQL on the file, as another program would change it. */
static void db_exec(const char *path, const char *sql)
{
	sqlite3 *db;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s: %s", sql,
	             sqlite3_errmsg(db));
	sqlite3_close(db);
}

static long long size_in(const char *out, const char *word)
{
	const char *p = strstr(out, word);

	cr_assert_not_null(p, "no '%s' in: %s", word, out);
	while (p > out && p[-1] == ' ')
		p--;
	while (p > out && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return atoll(p);
}

static int see_check(void *arg, const lks_check_rec *rec)
{
	cr_assert_str_eq(rec->check_name, "tracks");
	cr_assert_str_eq(rec->verdict, "pass");
	(*(int *)arg)++;
	return 0;
}

Test(prune, keeps_the_latest_suites_whole_and_only_stat_rows_of_old_ones_go)
{
	struct fixture f;
	int64_t kept_before[NKEPT], kept_after[NKEPT], stats_before[SUITES + 1];
	int64_t states_before[SUITES + 1];
	char args[512], out[4096];
	long long before, after;
	sqlite3 *db;
	lks_store *s;

	setup(&f, SUITES);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	count_kept(db, kept_before);
	for (int i = 1; i <= SUITES; i++) {
		cr_assert_gt(stats_before[i] = suite_rows(db, "stats", i), 0, "suite %d", i);
		/* two runs of two steps, a rank each */
		cr_assert_eq(states_before[i] = suite_rows(db, "states", i), 4, "suite %d", i);
	}
	sqlite3_close(db);

	/* a batch far below a suite's rows: many transactions */
	snprintf(args, sizeof(args), "prune --db '%s' --keep 3 --pin 2 --batch 50", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_log_info("%s", out);
	cr_assert_not_null(strstr(out, "suite 2 pinned"), "%s", out);
	cr_assert_not_null(strstr(out, "pruned 6 suites"), "%s", out);
	before = size_in(out, "bytes before");
	after = size_in(out, "after");
	cr_assert_lt(after, before, "%s", out);
	/* no other connection: the log went with prune's own */
	cr_assert_null(strstr(out, "write-ahead log"), "%s", out);
	/* again: nothing left to prune is no suite pruned (it counted the six again) */
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "pruned 0 suites: 0 stat rows removed"), "%s", out);

	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	count_kept(db, kept_after);
	for (size_t i = 0; i < NKEPT; i++)
		cr_assert_eq(kept_after[i], kept_before[i], "table %s", kept_tables[i]);
	for (int i = 1; i <= SUITES; i++) {
		int keep = i == 2 || i > SUITES - 3;
		char sql[128];

		cr_assert_eq(suite_rows(db, "stats", i), keep ? stats_before[i] : 0, "suite %d", i);
		cr_assert_eq(suite_rows(db, "states", i), keep ? states_before[i] : 0, "suite %d", i);
		snprintf(sql, sizeof(sql), "SELECT (pruned IS NOT NULL) * 2 + coalesce(pinned, 0) "
		         "FROM suites WHERE suite_id = %d", i);
		cr_assert_eq(sql_int(db, sql), i == 2 ? 1 : keep ? 0 : 2, "suite %d", i);
	}
	sqlite3_close(db);

	/* every command on every suite: report, diff against tonight's run, verdicts */
	cr_assert_eq(lks_store_open_readonly(f.db, &s), 0, "%s", lks_errmsg());
	for (int i = 1; i <= SUITES; i++) {
		int n = 0;

		cr_assert_eq(lks_store_get_checks(s, i, see_check, &n), 0, "%s", lks_errmsg());
		cr_assert_eq(n, 1, "suite %d", i);
		snprintf(args, sizeof(args), "report --db '%s' --suite %d -o '%s/r%d'", f.db, i,
		         f.dir, i);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "suite %d: %s", i, out);
		/* run 2i-1 is suite i's bf16 run; 2 * SUITES - 1 tonight's */
		snprintf(args, sizeof(args), "diff --db '%s' %d %d", f.db, 2 * i - 1, 2 * SUITES - 1);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "suite %d: %s", i, out);
		cr_assert_eq(!!strstr(out, "bit for bit in loss and grad norm\n"),
		             i != 2 && i <= SUITES - 3, "suite %d: %s", i, out);
	}
	/* a pruned run still diverges where its loss does: its rowwise against tonight's bf16 */
	snprintf(args, sizeof(args), "diff --db '%s' 2 %d", f.db, 2 * SUITES - 1);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "first divergence: step 0"), "%s", out);
	cr_assert_not_null(strstr(out, "loss"), "%s", out);
	lks_store_close(s);
	teardown(&f);
}

Test(prune, a_reader_holding_a_snapshot_is_not_blocked_nor_disturbed)
{
	struct fixture f;
	char args[512], out[4096];
	int64_t all;
	sqlite3 *db;

	setup(&f, 3);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	all = sql_int(db, "SELECT count(*) FROM stats");
	snprintf(args, sizeof(args), "prune --db '%s' --keep 1", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "pruned 2 suites"), "%s", out);
	/* the log that this connection keeps is said, not passed off as the file's size */
	cr_assert_gt(size_in(out, "of them the write-ahead log, which another open connection "
	                          "keeps: it goes when the last one closes)"), 0, "%s", out);
	/* the snapshot still whole; a new one sees the last suite's rows alone */
	cr_assert_eq(sql_int(db, "SELECT count(*) FROM stats"), all);
	cr_assert_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sql_int(db, "SELECT count(*) FROM stats"), suite_rows(db, "stats", 3));
	cr_assert_lt(suite_rows(db, "stats", 3), all);
	sqlite3_close(db);
	teardown(&f);
}

Test(prune, keep_days_prunes_older_suites_but_never_the_latest)
{
	struct fixture f;
	char args[1024], out[4096];
	sqlite3 *db;

	/* suite 1: a case of its own (old.ini); 2 to 4: tiny.ini */
	setup(&f, 0);
	snprintf(args, sizeof(args), "cp '%s' '%s/old.ini'", f.ini, f.dir);
	cr_assert_eq(system(args), 0);
	snprintf(args, sizeof(args), "run '%s/old.ini' --db '%s' --quiet", f.dir, f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", f.ini, f.db);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	/* suites 1, 2 and 4 three days old, 3 of a moment ago */
	cr_assert_eq(sqlite3_exec(db, "UPDATE suites SET started = strftime('%Y-%m-%dT%H:%M:%fZ', "
	                              "'now', '-3 days') WHERE suite_id IN (1, 2, 4)", NULL, NULL,
	                          NULL), SQLITE_OK);
	sqlite3_close(db);
	snprintf(args, sizeof(args), "prune --db '%s' --keep-days 2", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "pruned 2 suites:"), "%s", out);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_eq(suite_rows(db, "stats", 1), 0);
	cr_assert_eq(suite_rows(db, "stats", 2), 0);
	cr_assert_gt(suite_rows(db, "stats", 3), 0);
	cr_assert_gt(suite_rows(db, "stats", 4), 0, "the latest suite pruned");
	sqlite3_close(db);
	/* a golden is not written from a pruned run (old's latest): exit 2, naming it */
	snprintf(args, sizeof(args), "golden update '%s/old.ini' --db '%s' --golden '%s/g'", f.dir,
	         f.db, f.dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "is not whole: its suite was pruned"), "%s", out);
	teardown(&f);
}

/* A night killed (a run of it incomplete) is the latest suite but not what the next night
   compares with: the latest whole suite is. Both are kept whole (the whole one lost its
   stat rows, and the next night compared on loss and grad norm alone); an older one goes. */
Test(prune, the_latest_whole_suite_is_kept_when_the_latest_was_killed)
{
	struct fixture f;
	char args[1024], out[4096];
	sqlite3 *db;

	setup(&f, 3);
	db_exec(f.db, "UPDATE runs SET status = 'incomplete' WHERE suite_id = 3 AND run_name = "
	              "'rowwise'");
	snprintf(args, sizeof(args), "prune --db '%s' --keep 1", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_eq(suite_rows(db, "stats", 1), 0, "%s", out);
	cr_assert_gt(suite_rows(db, "stats", 2), 0, "the latest whole suite pruned: %s", out);
	cr_assert_gt(suite_rows(db, "stats", 3), 0, "the latest suite pruned: %s", out);
	sqlite3_close(db);
	teardown(&f);
}

/* A suite whose writer has not ended (a 'lockstep run' still training, or checking, with
   a later suite stored meanwhile) keeps its stat rows: its own checks read them. It stays
   so while it shows life (it began, a run began or ended, a verdict) within a day; a
   writer killed leaves it prunable a day after its last sign. */
static void age_suite(const char *path, const char *what)
{
	char sql[512];

	snprintf(sql, sizeof(sql), "UPDATE %s = strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', 'now', "
	         "'-2 days') WHERE suite_id = 1", what);
	db_exec(path, sql);
}

Test(prune, a_suite_still_being_written_is_kept_until_a_day_without_life)
{
	struct fixture f;
	char args[1024], out[4096];
	sqlite3 *db;

	setup(&f, 3);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	/* every run said it ended, whatever its verdict */
	cr_assert_eq(sql_int(db, "SELECT count(*) FROM suites WHERE finished IS NULL"), 0);
	sqlite3_close(db);
	/* suite 1's writer still at it */
	db_exec(f.db, "UPDATE suites SET finished = NULL WHERE suite_id = 1");
	snprintf(args, sizeof(args), "prune --db '%s' --keep 1", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "pruned 1 suite:"), "%s", out);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_gt(suite_rows(db, "stats", 1), 0, "a suite being written pruned: %s", out);
	cr_assert_eq(suite_rows(db, "stats", 2), 0, "%s", out);
	sqlite3_close(db);
	/* begun two days ago, but its runs began and ended a moment ago: alive */
	age_suite(f.db, "suites SET started");
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_gt(suite_rows(db, "stats", 1), 0, "a suite being written pruned: %s", out);
	sqlite3_close(db);
	/* nothing of it for two days: its writer was killed */
	age_suite(f.db, "runs SET finished = NULL, started");
	age_suite(f.db, "checks SET time");
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_eq(suite_rows(db, "stats", 1), 0, "a killed suite kept: %s", out);
	sqlite3_close(db);
	teardown(&f);
}

Test(prune, bad_usage_and_unknown_suite_exit_2)
{
	struct fixture f;
	char args[1024], out[4096], missing[600];

	setup(&f, 1);
	snprintf(args, sizeof(args), "prune --db '%s'", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "--keep"), "%s", out);
	snprintf(args, sizeof(args), "prune --db '%s' --keep-days x", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	snprintf(args, sizeof(args), "prune --db '%s' --pin 99 --keep 1", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no suite 99"), "%s", out);
	snprintf(args, sizeof(args), "prune --db '%s' --keep 0", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	/* --keep-days 1: the suite of a moment ago is kept */
	snprintf(args, sizeof(args), "prune --db '%s' --keep-days 1", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "pruned 0 suites"), "%s", out);
	/* a database that is not there (a misspelt --db): refused, and not made */
	snprintf(missing, sizeof(missing), "%s.missing", f.db);
	snprintf(args, sizeof(args), "prune --db '%s' --keep 1", missing);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no database"), "%s", out);
	cr_assert_neq(access(missing, F_OK), 0, "prune made '%s'", missing);
	/* an empty file is no history either: it was made a new, empty one */
	cr_assert_eq(close(open(missing, O_CREAT | O_WRONLY, 0644)), 0);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "is empty: no lockstep database"), "%s", out);
	snprintf(args, sizeof(args), "test -s '%s'", missing);
	cr_assert_neq(lks_run_sh(args, out, sizeof(out)), 0, "prune wrote into the empty file");
	teardown(&f);
}

/* ---- night over night after prune ---- */

/* The verdicts of suite, one per run of n */
static struct seen night_verdicts_n(const char *dbpath, int64_t suite, int n)
{
	struct seen s = night_verdicts(dbpath, suite);

	cr_assert_eq(s.n, n, "suite %lld: a verdict per run", (long long)suite);
	return s;
}

/* One more nightly: 'lockstep run' of the case with extra options, under env. */
static void nightly(const struct fixture *f, const char *env, const char *extra, char *out,
                    size_t n)
{
	char args[512];

	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet %s", f->ini, f->db, extra);
	cr_assert_eq(lks_run_bin(env, args, out, n), 0, "%s", out);
}

/* Nights 1 to 3 plain, 4 to 10 with checkpointing set (other settings, the same bits),
   then prune --keep 3: night 11 (set) compares with night 10, whole; night 12 (plain)
   with night 3, whose stat rows are gone: on what is left, the step rows, bit for bit,
   and it says so. A fault planted in night 12's rowwise run still changes it there. */
Test(prune, night_over_night_still_compares_with_the_previous_suite)
{
	static const char set[] = "--set 'run.*.checkpoint=blocks'";
	struct fixture f;
	struct seen s;
	char args[512], out[8192];

	setup(&f, 3);
	for (int i = 4; i <= SUITES; i++)
		nightly(&f, NULL, set, out, sizeof(out));
	snprintf(args, sizeof(args), "prune --db '%s' --keep 3", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "pruned 7 suites"), "%s", out);

	nightly(&f, NULL, set, out, sizeof(out));
	cr_assert_not_null(strstr(out, "2 unchanged, 0 changed"), "%s", out);
	s = night_verdicts_n(f.db, SUITES + 1, 2);
	for (int i = 0; i < s.n; i++) {
		cr_assert_str_eq(s.verdict[i], "unchanged", "%s: %s", s.run[i], s.message[i]);
		cr_assert_eq(s.prev_suite[i], SUITES, "%s", s.run[i]);
		cr_assert_null(strstr(s.message[i], "pruned"), "%s: %s", s.run[i], s.message[i]);
	}

	/* the latest earlier suite with night 12's settings is night 3, pruned */
	nightly(&f, "LOCKSTEP_INJECT='bitflip step=0 rank=0 tensor=embed.out "
	        "element=3 bit=30 run=rowwise'", "", out, sizeof(out));
	cr_assert_not_null(strstr(out, "1 unchanged, 1 changed (0 with the same fingerprint), 0 "
	                          "new, 2 gone"), "%s", out);
	cr_assert_not_null(strstr(out, "stat rows of run 5 were pruned"), "%s", out);
	/* night 11's runs (checkpointing set) are gone tonight */
	s = night_verdicts_n(f.db, SUITES + 2, 4);
	for (int i = 0; i < s.n; i++) {
		int rowwise = !strcmp(s.run[i], "rowwise");

		if (!strcmp(s.verdict[i], "gone")) {
			cr_assert_eq(s.prev_suite[i], SUITES + 1, "%s", s.run[i]);
			continue;
		}

		cr_assert_eq(s.prev_suite[i], 3, "%s", s.run[i]);
		cr_assert_str_eq(s.verdict[i], rowwise ? "changed" : "unchanged", "%s: %s", s.run[i],
		                 s.message[i]);
		cr_assert_not_null(strstr(s.message[i], "pruned"), "%s: %s", s.run[i], s.message[i]);
		if (rowwise) {
			cr_assert_eq(s.step[i], 0, "%s", s.message[i]);
			cr_assert_str_eq(s.field[i], "loss", "%s", s.message[i]);
		}
	}
	teardown(&f);
}

/* ---- a prune stopped part way, and the log ---- */

/* The tiny case trained longer, on two ranks: thousands of stat rows a run, so that a
   prune of one row a transaction takes a second on a run, and a kill lands inside it. */
static void long_case(const struct fixture *f, char *path, size_t n)
{
	char cmd[512];

	snprintf(path, n, "%s/long.ini", f->dir);
	snprintf(cmd, sizeof(cmd), "sed 's/^steps = 2$/steps = 50/; s/^world_size = 1$/"
	         "world_size = 2/' '%s' >'%s'", f->ini, path);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* The runs of suite that hold some of their stat rows, not all (steps x ranks x tensors:
   the CPU backend traces every tensor of every rank at every step). */
static int64_t part_pruned(sqlite3 *db, int suite)
{
	char sql[512];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM runs r WHERE suite_id = %d AND (SELECT "
	         "count(*) FROM stats s WHERE s.run_id = r.run_id) BETWEEN 1 AND r.steps * "
	         "r.world_size * (SELECT count(*) FROM tensors t WHERE t.run_id = r.run_id) - 1",
	         suite);
	return sql_int(db, sql);
}

/* 'lockstep prune --keep 1 --batch 1' of the database, killed (kill -9) as soon as suite 1
   has lost a row: part way through its first run. */
static void prune_killed(const struct fixture *f)
{
	const char *argv[] = { LKS_BIN, "prune", "--db", f->db, "--keep", "1", "--batch", "1",
	                       NULL };
	int64_t before, now;
	sqlite3 *db;
	pid_t pid;
	int status;

	cr_assert_eq(sqlite3_open(f->db, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	before = suite_rows(db, "stats", 1);
	cr_assert_gt(pid = fork(), -1);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execv(LKS_BIN, (char *const *)argv);
		_exit(127);
	}
	do
		now = suite_rows(db, "stats", 1);
	while (now == before && waitpid(pid, &status, WNOHANG) == 0);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "the prune ended before its kill (exit %d)",
	          WEXITSTATUS(status));
	cr_assert_eq(part_pruned(db, 1), 1, "the kill did not land inside a run (%lld of %lld "
	             "stat rows left)", (long long)suite_rows(db, "stats", 1), (long long)before);
	sqlite3_close(db);
}

/* A prune killed part way through a run of suite 1 (nights 1 plain, 2 with checkpointing
   set: other settings, the same bits). Suite 1 is marked pruned all the same: the batch
   that removes a suite's first rows marks it. Before, the mark came after the suite's last
   batch, and the run left part pruned and unmarked made 'golden update' write a golden of
   the rows left (exit 0) and night over night a false ALARM ("no stats row in before"). */
Test(prune, a_prune_killed_part_way_leaves_its_suite_marked)
{
	struct fixture f;
	char ini[256], args[1024], out[8192], golden[300];
	sqlite3 *db;

	setup(&f, 0);
	long_case(&f, ini, sizeof(ini));
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", ini, f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet --set 'run.*.checkpoint=blocks'",
	         ini, f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	prune_killed(&f);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_eq(sql_int(db, "SELECT pruned IS NOT NULL FROM suites WHERE suite_id = 1"), 1,
	             "a run part pruned in a suite not marked");
	sqlite3_close(db);

	/* the latest runs as declared are night 1's (night 2's were made with --set) */
	snprintf(golden, sizeof(golden), "%s/g", f.dir);
	snprintf(args, sizeof(args), "golden update '%s' --db '%s' --golden '%s'", ini, f.db,
	         golden);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "is not whole: its suite was pruned"), "%s", out);
	cr_assert_neq(access(golden, F_OK), 0, "a golden written: %s", out);

	/* night 3, plain: compared with night 1 on its step rows, unchanged */
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", ini, f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_null(strstr(out, "ALARM"), "%s", out);
	cr_assert_not_null(strstr(out, "2 unchanged, 0 changed"), "%s", out);
	cr_assert_not_null(strstr(out, "were pruned"), "%s", out);

	/* the next prune finishes it */
	snprintf(args, sizeof(args), "prune --db '%s' --keep 1", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_eq(suite_rows(db, "stats", 1), 0);
	sqlite3_close(db);
	teardown(&f);
}

/* Prune beside another connection to the file (here one between two reads, which keeps
   the log from being removed when prune closes; a writer between its steps does the
   same). The write-ahead log never held more than the file held before: between
   checkpoints it holds at most LKS_PRUNE_BATCH rows' pages, then the VACUUM's copy of the
   smaller file. The log is not cut back when it starts over, so its size is the most it
   held. Before, without a checkpoint between batches, it grew by every batch: 17 MB beside
   a 4 MB file with these 12 suites and --batch 500 (after: 1.4 MB). */
Test(prune, the_write_ahead_log_stays_smaller_than_the_file)
{
	struct fixture f;
	char ini[256], args[1024], out[4096], wal[160];
	struct stat before, log;
	sqlite3 *db;

	setup(&f, 0);
	long_case(&f, ini, sizeof(ini));
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", ini, f.db);
	for (int i = 0; i < 12; i++)
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(stat(f.db, &before), 0);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_gt(sql_int(db, "SELECT count(*) FROM runs"), 0);
	snprintf(args, sizeof(args), "prune --db '%s' --keep 1 --batch 500", f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(wal, sizeof(wal), "%s-wal", f.db);
	cr_assert_eq(stat(wal, &log), 0, "no '%s'", wal);
	cr_log_info("log %lld bytes, file before %lld", (long long)log.st_size,
	            (long long)before.st_size);
	cr_assert_leq(log.st_size, before.st_size, "the log grew to %lld bytes, the file was "
	              "%lld", (long long)log.st_size, (long long)before.st_size);
	sqlite3_close(db);
	teardown(&f);
}
