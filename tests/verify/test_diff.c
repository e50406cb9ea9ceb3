/*
 * test_diff.c: 'lockstep diff RUN_A RUN_B' as a user meets it: identical runs exit 0 and
 * say so; a BF16 and an FP8 run of one tiny case exit 1 with the first divergence at step
 * 0 naming a tensor and one table row per step; CASE/RUN means the latest stored run of
 * that name; fingerprint keys that differ are named; an unknown run, a missing database
 * and bad usage exit 2. The database is opened read-only: diff reads one in a read-only
 * folder, and leaves a file that is not a lockstep database (empty, text, another
 * program's) as it was, exit 2. A NaN loss prints NaN, a step a run lacks '-'. An
 * import's steps (its last step stored) print as the import says them, not as a count.
 * LKS_BIN is the path of the built program (tests/verify/CMakeLists.txt).
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "run_bin.h"
#include "tiny_model.h"
#include "harness/engine/case.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* Two ranks so that ranks are compared pairwise; three steps so the table has rows to
   count. Small enough that the three runs take milliseconds. */
static const char case_text[] =
	"[case]\n"
	"description = tiny case for lockstep diff\n"
	"steps = 3\n"
	"seed = 7\n"
	"world_size = 2\n"
	LKS_TINY_MODEL
	"[run bf16]\n"
	"recipe = bf16\n"
	"[run bf16_again]\n"
	"recipe = bf16\n"
	"[run rowwise]\n"
	"recipe = fp8_rowwise\n";

struct fixture {
	char dir[64], db[128], ini[128];
};

static void setup_dir(struct fixture *f)
{
	FILE *cf;

	snprintf(f->dir, sizeof(f->dir), "/tmp/lks_test_diff_XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/t.db", f->dir);
	snprintf(f->ini, sizeof(f->ini), "%s/tiny.ini", f->dir);
	cr_assert_not_null(cf = fopen(f->ini, "w"));
	fputs(case_text, cf);
	fclose(cf);
}

static void cleanup(struct fixture *f)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	cr_assert_eq(system(cmd), 0);
}

/* The tiny case's three runs stored as runs 1, 2, 3 (bf16, bf16_again, rowwise). */
static void setup_runs(struct fixture *f)
{
	char args[512], out[8192];

	setup_dir(f);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", f->ini, f->db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
}

static int diff(const struct fixture *f, const char *runs, char *out, size_t n)
{
	char args[512];

	snprintf(args, sizeof(args), "diff %s --db '%s'", runs, f->db);
	return lks_run_bin(NULL, args, out, n);
}

/* Rows of the per-step table: lines "<spaces><step>  <loss>". */
static int table_rows(const char *out, int *last_step)
{
	int rows = 0;

	*last_step = -1;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		int step;
		double loss;

		if (sscanf(l, "%5d  %lf", &step, &loss) == 2 && l[0] == ' ') {
			rows++;
			*last_step = step;
		}
	}
	return rows;
}

Test(diff, identical_runs_exit_0)
{
	struct fixture f;
	char out[16384];
	int last;

	setup_runs(&f);
	cr_assert_eq(diff(&f, "1 2", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "identical"), "%s", out);
	cr_assert_not_null(strstr(out, "a: run 1  tiny/bf16  recipe bf16"), "%s", out);
	cr_assert_not_null(strstr(out, "b: run 2  tiny/bf16_again  recipe bf16"), "%s", out);
	cr_assert_not_null(strstr(out, "world size 2  3 steps  backend cpu"), "%s", out);
	cr_assert_null(strstr(out, "first divergence"), "%s", out);
	cr_assert_eq(table_rows(out, &last), 3, "%s", out);
	cleanup(&f);
}

Test(diff, bf16_and_fp8_differ_at_step_0)
{
	struct fixture f;
	char out[16384], args[64];
	int last;

	setup_runs(&f);
	cr_assert_eq(diff(&f, "1 3", out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "first divergence: step 0, tensor '"), "%s", out);
	cr_assert_null(strstr(out, "identical"), "%s", out);
	cr_assert_eq(table_rows(out, &last), 3, "%s", out);
	cr_assert_eq(last, 2, "%s", out);
	/* FP8 moves gradients: some tensor's L2 differs, and so do hashes */
	cr_assert_not_null(strstr(out, "(backward)"), "%s", out);
	/* --max-rows cuts the table and says so */
	snprintf(args, sizeof(args), "1 3 --max-rows 1");
	cr_assert_eq(diff(&f, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_eq(table_rows(out, &last), 1, "%s", out);
	cr_assert_not_null(strstr(out, "2 more steps"), "%s", out);
	cleanup(&f);
}

Test(diff, case_slash_run_is_the_latest)
{
	struct fixture f;
	char out[16384], args[512];

	setup_runs(&f);
	/* a second suite: runs 4, 5, 6 */
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", f.ini, f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(diff(&f, "tiny/bf16 tiny/rowwise", out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "a: run 4  tiny/bf16 "), "%s", out);
	cr_assert_not_null(strstr(out, "b: run 6  tiny/rowwise "), "%s", out);
	/* the same run, last time and this time: a rerun on the CPU is bit for bit */
	cr_assert_eq(diff(&f, "1 tiny/bf16", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "b: run 4  tiny/bf16 "), "%s", out);
	cleanup(&f);
}

Test(diff, fingerprint_keys_that_differ)
{
	struct fixture f;
	lks_case c;
	lks_store *s;
	char out[16384];
	static const char *const fps[2] = {
		"{\"lockstep.version\": \"0.1.0\", \"hostname\": \"node-a\", \"gpu.0\": \"H100\"}",
		"{\"lockstep.version\": \"0.1.0\", \"hostname\": \"node-b\", \"NCCL_ALGO\": \"Ring\"}",
	};

	setup_dir(&f);
	cr_assert_eq(lks_case_load(f.ini, NULL, 0, &c), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_open(f.db, &s), 0, "%s", lks_errmsg());
	for (int i = 0; i < 2; i++) {
		lks_runner_opts o = { .threads = 1, .fingerprint = fps[i] };
		lks_run_result res;

		cr_assert_eq(lks_run(&c, &c.runs[0], s, &o, &res), 0, "%s", lks_errmsg());
	}
	lks_store_close(s);
	lks_case_release(&c);
	cr_assert_eq(diff(&f, "1 2", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "fingerprint keys that differ"), "%s", out);
	cr_assert_not_null(strstr(out, "node-a"), "%s", out);
	cr_assert_not_null(strstr(out, "node-b"), "%s", out);
	cr_assert_not_null(strstr(out, "H100"), "%s", out);
	cr_assert_not_null(strstr(out, "NCCL_ALGO"), "%s", out);
	cr_assert_null(strstr(out, "lockstep.version"), "a key that is the same: %s", out);
	cleanup(&f);
}

/* The case file edited between two runs is said, with its first differing line, as night
   over night names case.text (diff said "the same in every key"). A description edited
   changes no number: the runs stay identical. */
Test(diff, an_edited_case_file_is_named_with_its_line)
{
	struct fixture f;
	char args[512], out[16384];

	setup_runs(&f);
	snprintf(args, sizeof(args), "sed -i 's/tiny case for lockstep diff/edited/' '%s'", f.ini);
	cr_assert_eq(system(args), 0);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet --run bf16", f.ini, f.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(diff(&f, "1 2", out, sizeof(out)), 0, "%s", out);
	cr_assert_null(strstr(out, "case texts differ"), "%s", out);
	cr_assert_eq(diff(&f, "1 4", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "case texts differ (the case file edited between the runs, "
	                               "or two cases), first at line 2:\n"
	                               "  a: description = tiny case for lockstep diff\n"
	                               "  b: description = edited\n"), "%s", out);
	cleanup(&f);
}

Test(diff, unknown_run_and_bad_usage_exit_2)
{
	struct fixture f;
	char out[16384], args[512];

	setup_runs(&f);
	cr_assert_eq(diff(&f, "1 99", out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no run 99"), "%s", out);
	cr_assert_eq(diff(&f, "tiny/nosuch 1", out, sizeof(out)), 2, "%s", out);
	/* the case is stored: its runs are named, not a command that would not help */
	cr_assert_not_null(strstr(out, "no stored run 'tiny/nosuch' in"), "%s", out);
	cr_assert_not_null(strstr(out, "case 'tiny' has runs bf16, bf16_again, rowwise"), "%s", out);
	cr_assert_eq(diff(&f, "other/bf16 1", out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "lockstep run cases/other.ini"), "%s", out);
	cr_assert_eq(diff(&f, "tiny 1", out, sizeof(out)), 2, "%s", out);
	cr_assert_eq(diff(&f, "1", out, sizeof(out)), 2, "%s", out);
	cr_assert_eq(diff(&f, "1 2 3", out, sizeof(out)), 2, "%s", out);
	cr_assert_eq(diff(&f, "1 2 --max-rows x", out, sizeof(out)), 2, "%s", out);
	snprintf(args, sizeof(args), "diff 1 2 --db '%s/nosuch.db'", f.dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no database"), "%s", out);
	/* a file that is not a lockstep database */
	snprintf(args, sizeof(args), "diff 1 2 --db '%s'", f.ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_eq(lks_run_bin(NULL, "diff --help", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "example:"), "%s", out);
	cr_assert_not_null(strstr(out, "lockstep diff"), "%s", out);
	cleanup(&f);
}

/* On read-only media (here: a folder and file made read-only, and for root a run as
   nobody) diff reads the database, and nothing in the folder changes or appears. */
Test(diff, reads_a_read_only_database)
{
	struct fixture f;
	char out[16384], args[512], *before, *after;
	const char *who;

	setup_runs(&f);
	before = lks_dir_state(f.dir);
	who = lks_read_only(f.dir);
	snprintf(args, sizeof(args), "diff 1 3 --db '%s'", f.db);
	cr_expect_eq(lks_run_bin(who, args, out, sizeof(out)), 1, "%s", out);
	cr_expect_not_null(strstr(out, "first divergence: step 0"), "%s", out);
	snprintf(args, sizeof(args), "chmod -R u+w '%s'", f.dir);
	cr_assert_eq(system(args), 0);
	after = lks_dir_state(f.dir);
	cr_expect_str_eq(after, before, "the folder changed");
	free(before);
	free(after);
	cleanup(&f);
}

/* Files that are not a lockstep database (empty, text, another program's database): exit 2
   naming the file, and each left byte for byte as it was, with nothing beside it (an
   empty file once became a database). */
Test(diff, refuses_a_file_that_is_not_a_database_untouched)
{
	static const char *const files[][2] = {
		{ "empty.db", "" },
		{ "notes.db", "step,loss\n0,10.5\n" },
	};
	struct fixture f;
	char out[16384], args[512], path[256], *before, *after;
	sqlite3 *db;
	FILE *w;

	setup_dir(&f);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", f.dir, files[i][0]);
		cr_assert_not_null(w = fopen(path, "w"));
		fputs(files[i][1], w);
		fclose(w);
	}
	snprintf(path, sizeof(path), "%s/other.db", f.dir);
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", NULL, NULL,
	                          NULL), SQLITE_OK);
	sqlite3_close(db);
	before = lks_dir_state(f.dir);
	for (size_t i = 0; i < 3; i++) {
		const char *name = i < 2 ? files[i][0] : "other.db";

		snprintf(path, sizeof(path), "%s/%s", f.dir, name);
		snprintf(args, sizeof(args), "diff 1 2 --db '%s'", path);
		cr_expect_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s: %s", name, out);
		cr_expect_not_null(strstr(out, "not a lockstep database"), "%s: %s", name, out);
	}
	after = lks_dir_state(f.dir);
	cr_expect_str_eq(after, before, "a file changed or a new one appeared");
	free(before);
	free(after);
	cleanup(&f);
}

/* A NaN loss is a value (stored as NULL: SQLite has no NaN), a missing step is none: the
   per-step table tells them apart. */
Test(diff, a_nan_loss_is_nan_and_a_missing_step_a_dash)
{
	struct fixture f;
	char out[16384];
	sqlite3 *db;

	setup_runs(&f);
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "UPDATE steps SET loss = NULL WHERE run_id = 2 AND step = 2;"
	                          "DELETE FROM steps WHERE run_id = 1 AND step = 1", NULL, NULL,
	                          NULL), SQLITE_OK);
	sqlite3_close(db);
	cr_assert_eq(diff(&f, "1 2", out, sizeof(out)), 1, "%s", out);
	cr_expect_not_null(strstr(out, "\n    1  -            "), "%s", out);
	cr_expect_not_null(strstr(out, " NaN          NaN        "), "%s", out);
	cleanup(&f);
}

/* runs.steps of an import is its last step: steps 0 to 2 are "steps up to 2", not "2 steps";
   a trained run's is a count ("3 steps", identical_runs_exit_0). */
Test(diff, an_imports_steps_are_its_last_step)
{
	struct fixture f;
	char out[16384], args[512], path[256];
	FILE *w;

	setup_dir(&f);
	snprintf(path, sizeof(path), "%s/log.jsonl", f.dir);
	cr_assert_not_null(w = fopen(path, "w"));
	fputs("{\"step\": 0, \"loss\": 3.5}\n{\"step\": 1, \"loss\": 3.25}\n"
	      "{\"step\": 2, \"loss\": 3.0}\n", w);
	fclose(w);
	for (int i = 0; i < 2; i++) {
		snprintf(args, sizeof(args), "import --format jsonl '%s' --case log --run %s --db '%s'",
		         path, i ? "b" : "a", f.db);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	}
	cr_assert_eq(diff(&f, "1 2", out, sizeof(out)), 0, "%s", out);
	cr_expect_not_null(strstr(out, "world size 1  steps up to 2  backend import:jsonl"), "%s",
	                   out);
	cr_expect_null(strstr(out, "2 steps"), "%s", out);
	cleanup(&f);
}

/* An import or a trace that did not end well (a killed rank, a follow stopped by an error)
   keeps runs.steps 0: the header says the last step the run holds, not "steps up to 0". */
Test(diff, an_incomplete_runs_steps_are_the_last_it_holds)
{
	struct fixture f;
	char out[16384], args[512], path[256];
	sqlite3 *db;
	FILE *w;

	setup_dir(&f);
	snprintf(path, sizeof(path), "%s/log.jsonl", f.dir);
	cr_assert_not_null(w = fopen(path, "w"));
	for (int s = 0; s <= 40; s++)
		fprintf(w, "{\"step\": %d, \"loss\": %g}\n", s, 4.0 - s / 64.0);
	fclose(w);
	for (int i = 0; i < 2; i++) {
		snprintf(args, sizeof(args), "import --format jsonl '%s' --case log --run %s --db '%s'",
		         path, i ? "b" : "a", f.db);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	}
	cr_assert_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "UPDATE runs SET steps = 0, status = 'incomplete', "
	                          "finished = NULL WHERE run_id = 2", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	diff(&f, "1 2", out, sizeof(out));
	cr_expect_not_null(strstr(out, "b: run 2  log/b  recipe "), "%s", out);
	cr_expect_not_null(strstr(strstr(out, "b: run 2"), "world size 1  steps up to 40  backend "
	                          "import:jsonl  incomplete"), "%s", out);
	cr_expect_null(strstr(out, "steps up to 0"), "%s", out);
	cleanup(&f);
}
