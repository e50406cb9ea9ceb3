/*
 * test_report_query.c: the store's reads for the report (harness/store/report_query.h)
 * return on real databases what the stored rows say: a suite's command line and start,
 * and the trend of a case over the latest suites that ran it, its means recomputed here
 * from the step rows; where they fail, they say so as every read of the store does. The
 * databases are those of the report's cases, run by the program (report_fixture.h).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/report/report.h"
#include "harness/store/report_query.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"
#include "report_fixture.h"

struct suite_seen {
	int calls;
	int64_t id;
	char command[512], started[64];
	int stop;                 /* what the callback returns */
};

static int suite_seen(void *arg, const lks_suite_rec *rec)
{
	struct suite_seen *x = arg;

	x->calls++;
	x->id = rec->suite_id;
	snprintf(x->command, sizeof(x->command), "%s", rec->command);
	snprintf(x->started, sizeof(x->started), "%s", rec->started);
	return x->stop;
}

Test(report, store_reads_a_suite)
{
	struct suite_seen x = { 0 };
	char dir[64], path[300];
	time_t t0 = time(NULL), t1, at;
	struct tm tm = { 0 };
	int64_t id = 0;
	lks_store *s;
	int ms;

	setup(dir, sizeof(dir));
	t1 = time(NULL);
	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_suite(s, 1, suite_seen, &x), 0, "%s", lks_errmsg());
	cr_assert_eq(x.calls, 1);
	cr_expect_eq(x.id, 1);
	cr_expect_eq(strncmp(x.command, "lockstep run ", 13), 0, "command '%s'", x.command);
	cr_expect(strstr(x.command, "/tiny.ini") && strstr(x.command, "/plain.ini"),
	          "command '%s'", x.command);
	/* ISO 8601 UTC with milliseconds, within the seconds the run took */
	cr_assert_eq(sscanf(x.started, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon,
	                    &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms), 7,
	             "started '%s'", x.started);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	at = timegm(&tm);
	cr_expect(at >= t0 && at <= t1, "started %s, not between %lld and %lld", x.started,
	          (long long)t0, (long long)t1);

	x.calls = 0;
	cr_expect_eq(lks_store_get_suite(s, 2, suite_seen, &x), 0, "no suite 2 is not an error");
	cr_expect_eq(x.calls, 0, "a suite that does not exist was read");
	x.stop = 3;
	cr_expect_eq(lks_store_get_suite(s, 1, suite_seen, &x), 3, "the callback's value");

	/* lks_report_suite reads the suites through the store */
	cr_expect_eq(lks_report_suite(s, "latest", &id), 0, "%s", lks_errmsg());
	cr_expect_eq(id, 1);
	id = 0;
	cr_expect_eq(lks_report_suite(s, "1", &id), 0, "%s", lks_errmsg());
	cr_expect_eq(id, 1);
	cr_expect_eq(lks_report_suite(s, "2", &id), LKS_E_BAD_INPUT);
	cr_expect_str_eq(lks_errmsg(), "no suite 2");
	lks_store_close(s);

	snprintf(path, sizeof(path), "%s/empty.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	id = 7;
	cr_expect_eq(lks_report_suite(s, "latest", &id), 0, "%s", lks_errmsg());
	cr_expect_eq(id, 0, "a database with no suite: 0, the page of its latest screen");
	lks_store_close(s);
	teardown(dir);
}

/* The screens a database keeps come back whole: by id, the latest of all, the latest
   started before a time; a page of a database without suite or screen is refused, and
   the folder is not made. */
Test(report, store_keeps_screens_and_a_page_needs_one)
{
	static const char *const started[] = { "2026-11-28T01:00:00.000Z",
	                                       "2026-11-28T03:00:00.000Z",
	                                       "2026-11-28T02:00:00.000Z" };
	lks_report_opts o = { .templates = LKS_SRC "/reports" };
	lks_report_info info;
	char dir[64], path[300], out[320], doc[64];
	lks_screen_rec rec;
	int64_t id;
	lks_store *s;

	snprintf(dir, sizeof(dir), "/tmp/lks_screens_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.db", dir);
	snprintf(out, sizeof(out), "%s/report", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_expect_eq(lks_report_write(s, 0, out, &o, &info), LKS_E_BAD_INPUT);
	cr_expect_str_eq(lks_errmsg(), "the database holds no suite and no screen");
	cr_expect_neq(access(out, F_OK), 0, "a refused report left '%s'", out);
	cr_expect_eq(lks_store_get_screen(s, 0, NULL, &rec), LKS_E_MISSING);
	for (int i = 0; i < 3; i++) {
		lks_screen_rec put = { .started = (char *)started[i], .host = "node7",
		                       .mode = i ? "full" : "quick", .result = "pass",
		                       .document = doc };

		snprintf(doc, sizeof(doc), "{\"n\": %d}", i);
		cr_assert_eq(lks_store_put_screen(s, &put, &id), 0, "%s", lks_errmsg());
		cr_expect_eq(id, i + 1);
	}
	/* the latest by start, not by id */
	cr_assert_eq(lks_store_get_screen(s, 0, NULL, &rec), 0, "%s", lks_errmsg());
	cr_expect_eq(rec.screen_id, 2);
	cr_expect_str_eq(rec.document, "{\"n\": 1}");
	cr_expect_str_eq(rec.mode, "full");
	cr_expect_str_eq(rec.host, "node7");
	lks_screen_rec_free(&rec);
	cr_assert_eq(lks_store_get_screen(s, 0, "2026-11-28T02:30:00.000Z", &rec), 0);
	cr_expect_eq(rec.screen_id, 3);
	lks_screen_rec_free(&rec);
	cr_expect_eq(lks_store_get_screen(s, 0, started[0], &rec), LKS_E_MISSING,
	             "started at 'before' is not before it");
	cr_assert_eq(lks_store_get_screen(s, 1, NULL, &rec), 0);
	cr_expect_str_eq(rec.started, started[0]);
	cr_expect_str_eq(rec.mode, "quick");
	lks_screen_rec_free(&rec);
	cr_expect_eq(lks_store_get_screen(s, 4, NULL, &rec), LKS_E_MISSING);
	/* the page of the latest screen: its document is no screen's, and the page says so */
	cr_assert_eq(lks_report_write(s, 0, out, &o, &info), 0, "%s", lks_errmsg());
	cr_expect_eq(info.screen_id, 2);
	cr_expect_eq(info.screen_not_passed, -1);
	lks_store_close(s);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	cr_assert_eq(system(path), 0);
}

/* A read of the store that fails: -1, and its message (kept in buf). */
static const char *failed_read(int rc, char *buf, size_t size)
{
	cr_assert_eq(rc, -1, "the read did not fail");
	snprintf(buf, size, "%s", lks_errmsg());
	return buf;
}

/* The report's reads fail as every read of the store does, with the same message: the
   database, SQLite's error and the place in the store's files (its one row loop). */
Test(report, store_query_errors_as_the_store_reads)
{
	char dir[] = "/tmp/lks-test-report-XXXXXX", path[300], want[512], got[512];
	struct suite_seen x = { 0 };
	lks_step_row rows[4];
	lks_store *s;
	int64_t id;
	int n;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/e.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	/* a new store's tables are empty: dropped without a foreign key refusing */
	cr_assert_eq(sqlite3_exec(lks_store_db(s), "DROP TABLE suites; DROP TABLE steps", NULL, NULL,
	                          NULL), SQLITE_OK, "%s", sqlite3_errmsg(lks_store_db(s)));

	failed_read(lks_store_last_suite(s, &id), want, sizeof(want));
	cr_expect(strstr(want, path) && strstr(want, "no such table: suites"), "%s", want);
	cr_expect_str_eq(failed_read(lks_store_get_suite(s, 1, suite_seen, &x), got, sizeof(got)),
	                 want);
	cr_expect_eq(x.calls, 0);

	failed_read(lks_store_get_steps(s, 1, -1, rows, 4, &n), want, sizeof(want));
	cr_expect(strstr(want, path) && strstr(want, "no such table: steps"), "%s", want);
	cr_expect_str_eq(failed_read(lks_store_get_trend(s, "tiny", 1, 5, NULL, NULL), got,
	                             sizeof(got)), want);
	lks_store_close(s);
	teardown(dir);
}

/* The rows of a trend as read. */
struct trend_seen {
	int n, stop_at;           /* stop_at: the row (from 1) whose callback returns 5; 0: none */
	struct {
		int64_t run_id, suite;
		char name[32], status[16];
		int nsteps;
		double loss, time;
	} row[16];
};

static int trend_seen(void *arg, const lks_trend_rec *t)
{
	struct trend_seen *x = arg;

	cr_assert_lt(x->n, 16);
	x->row[x->n].run_id = t->run_id;
	x->row[x->n].suite = t->suite_id;
	snprintf(x->row[x->n].name, sizeof(x->row[0].name), "%s", t->run_name);
	snprintf(x->row[x->n].status, sizeof(x->row[0].status), "%s", t->status);
	x->row[x->n].nsteps = t->nsteps;
	x->row[x->n].loss = t->final_loss;
	x->row[x->n].time = t->step_time;
	return ++x->n == x->stop_at ? 5 : 0;
}

static void trend(lks_store *s, const char *case_name, int64_t suite, int nsuites,
                  struct trend_seen *x)
{
	memset(x, 0, sizeof(*x));
	cr_assert_eq(lks_store_get_trend(s, case_name, suite, nsuites, trend_seen, x), 0, "%s",
	             lks_errmsg());
}

/* The rows' run names and suites, "name@suite ...", to compare with what is expected. */
static const char *trend_rows(const struct trend_seen *x)
{
	static char buf[512];
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < x->n && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s@%lld", i ? " " : "",
		                      x->row[i].name, (long long)x->row[i].suite);
	return buf;
}

/* The run's steps, its last step's loss as a mean over ranks and its mean step time,
   from its step rows. */
static void step_means(lks_store *s, int64_t run_id, int *nsteps, double *loss, double *time)
{
	lks_step_row rows[64];
	int n = 0, last = 0;
	double sum = 0;

	cr_assert_eq(lks_store_get_steps(s, run_id, -1, rows, 64, &n), 0, "%s", lks_errmsg());
	cr_assert(n > 0 && n <= 64, "%d step rows", n);
	*nsteps = rows[n - 1].step + 1;
	*loss = *time = 0;
	for (int i = 0; i < n; i++) {
		*time += rows[i].step_time / n;
		if (rows[i].step == rows[n - 1].step) {
			sum += rows[i].loss;
			last++;
		}
	}
	*loss = sum / last;
}

/* Close enough to a mean computed here: SQLite's avg sums in its own order (with a
   compensation term), which can differ from this sum by a few roundings of a double. */
static int near(double a, double b)
{
	return fabs(a - b) <= 1e-14 * fabs(b);
}

Test(report, store_reads_the_trend)
{
	static const char *const runs[] = { "bf16", "fp8", "fp8_ac" };
	char dir[64], path[300];
	struct trend_seen x;
	lks_store *s;
	int64_t suite, run;

	setup(dir, sizeof(dir));                                    /* suite 1: tiny, plain */
	cr_assert_eq(sh("'%s' run '%s/tiny.ini' --db '%s/t.db' --quiet --threads 1 >/dev/null",
	                LKS_BIN, dir, dir), 1);                     /* suite 2: tiny */
	cr_assert_eq(sh("'%s' run '%s/plain.ini' --db '%s/t.db' --quiet --threads 1 >/dev/null",
	                LKS_BIN, dir, dir), 0);                     /* suite 3: plain */
	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	{
		/* suite 4: a run of tiny with no step, and one whose last step has no finite loss */
		lks_run_info info = { .case_name = "tiny", .run_name = "empty", .recipe = "bf16",
		                      .backend = "cpu", .world_size = 2, .steps = 3 };
		lks_step_row rows[2] = { { .step = 0, .rank = 0, .loss = NAN, .step_time = 0.5 },
		                         { .step = 0, .rank = 1, .loss = NAN, .step_time = 0.25 } };

		cr_assert_eq(lks_store_begin_suite(s, "test", &suite), 0, "%s", lks_errmsg());
		cr_assert_eq(suite, 4);
		info.suite_id = suite;
		cr_assert_eq(lks_store_begin_run(s, &info, &run), 0, "%s", lks_errmsg());
		info.run_name = "nan";
		cr_assert_eq(lks_store_begin_run(s, &info, &run), 0, "%s", lks_errmsg());
		cr_assert_eq(lks_store_step(s, run, rows, 2, NULL, 0), 0, "%s", lks_errmsg());
		cr_assert_eq(lks_store_end_run(s, run, "failed"), 0, "%s", lks_errmsg());
	}
	lks_store_close(s);
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());

	/* the latest five suites up to 3 that ran tiny: 1 and 2, by run name then suite */
	trend(s, "tiny", 3, 5, &x);
	cr_expect_str_eq(trend_rows(&x), "bf16@1 bf16@2 fp8@1 fp8@2 fp8_ac@1 fp8_ac@2");
	for (int i = 0; i < x.n; i++) {
		int nsteps;
		double loss, time;

		step_means(s, x.row[i].run_id, &nsteps, &loss, &time);
		cr_expect_str_eq(x.row[i].name, runs[i / 2]);
		cr_expect_str_eq(x.row[i].status, "complete");
		cr_expect_eq(x.row[i].nsteps, 3);
		cr_expect_eq(nsteps, 3);
		cr_expect(near(x.row[i].loss, loss), "%s@%lld: final loss %.17g, from the steps %.17g",
		          x.row[i].name, (long long)x.row[i].suite, x.row[i].loss, loss);
		cr_expect(near(x.row[i].time, time), "%s@%lld: step time %.17g, from the steps %.17g",
		          x.row[i].name, (long long)x.row[i].suite, x.row[i].time, time);
	}
	/* the latest one up to 3 that ran tiny is 2: suite 3 ran plain only */
	trend(s, "tiny", 3, 1, &x);
	cr_expect_str_eq(trend_rows(&x), "bf16@2 fp8@2 fp8_ac@2");
	/* nothing after the suite asked for */
	trend(s, "tiny", 1, 5, &x);
	cr_expect_str_eq(trend_rows(&x), "bf16@1 fp8@1 fp8_ac@1");
	trend(s, "plain", 4, 5, &x);
	cr_expect_str_eq(trend_rows(&x), "bf16@1 bf16@3");
	trend(s, "none", 4, 5, &x);
	cr_expect_eq(x.n, 0);

	/* no step: no steps, no loss, no time; no finite loss at the last step: NaN */
	trend(s, "tiny", 4, 1, &x);
	cr_assert_str_eq(trend_rows(&x), "empty@4 nan@4");
	cr_expect_str_eq(x.row[0].status, "incomplete");
	cr_expect_eq(x.row[0].nsteps, 0);
	cr_expect(isnan(x.row[0].loss) && isnan(x.row[0].time));
	cr_expect_str_eq(x.row[1].status, "failed");
	cr_expect_eq(x.row[1].nsteps, 1);
	cr_expect(isnan(x.row[1].loss));
	cr_expect_eq(x.row[1].time, 0.375, "the mean of 0.5 and 0.25, exact in binary");

	/* a callback's value stops the walk and is returned */
	memset(&x, 0, sizeof(x));
	x.stop_at = 2;
	cr_expect_eq(lks_store_get_trend(s, "tiny", 3, 5, trend_seen, &x), 5);
	cr_expect_eq(x.n, 2);
	lks_store_close(s);
	teardown(dir);
}
