/*
 * test_report_trend.c: the trend plots of the report's "since last night" section
 * (harness/report/trend_plots.c), end to end: four suites of a tiny case stored by
 * 'lockstep run', the third with a fault planted in one run through LOCKSTEP_INJECT (a
 * fingerprint key). The numbers behind the plots (nightly_trend.tsv) are checked against
 * the step rows read with SQL: the final loss, the largest relative loss difference
 * against the same run of the suite before (0 where nothing changed; none against a run of
 * other settings), the suites whose fingerprint or settings changed; and the three plots are in the page with those suites starred on
 * the x axis. Skips without gnuplot.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_fixture.h"
#include "run_bin.h"

static const char trend_case[] =
	"[case]\nsteps = 6\nseed = 3\nworld_size = 1\n"
	"[model]\nvocab = 64\nhidden = 32\nffn = 64\nlayers = 1\nseq = 8\nbatch = 2\n"
	"[run bf16]\nrecipe = bf16\n"
	"[run rowwise]\nrecipe = fp8_rowwise\n";

/* One that reaches the loss (a flip in the up projection's output can die in the ReLU). */
#define TREND_FAULT "LOCKSTEP_INJECT='bitflip step=2 rank=0 tensor=blocks.0.mlp.down.out " \
                    "element=5 bit=28 run=rowwise'"

struct trend_row {
	long long suite;
	int fp;
	char run[64];
	double loss, rel, time;
};

static int read_tsv(const char *path, struct trend_row *rows, int cap)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0;

	cr_assert_not_null(f, "no '%s'", path);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_assert(strncmp(line, "suite\tfingerprint_changed\trun\t", 30) == 0, "%s", line);
	while (n < cap && fgets(line, sizeof(line), f)) {
		struct trend_row *r = &rows[n++];

		cr_assert_eq(sscanf(line, "%lld\t%d\t%63s\t%lf\t%lf\t%lf", &r->suite, &r->fp, r->run,
		                    &r->loss, &r->rel, &r->time), 6, "%s", line);
	}
	fclose(f);
	return n;
}

static double sql_real(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	double v;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* The run of that name in that suite. */
static long long run_of(sqlite3 *db, long long suite, const char *run)
{
	char sql[200];

	snprintf(sql, sizeof(sql), "SELECT run_id FROM runs WHERE suite_id = %lld AND run_name "
	         "= '%s'", suite, run);
	return (long long)sql_real(db, sql);
}

Test(report_trend, numbers_and_plots_over_recent_suites)
{
	char dir[] = "/tmp/lks_test_trend_XXXXXX", db_path[128], args[512], out[4096], path[256];
	struct trend_row rows[16];
	char *page, *svg;
	sqlite3 *db;
	FILE *f;
	int n;

	if (system("command -v gnuplot >/dev/null 2>&1") != 0)
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox)");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db_path, sizeof(db_path), "%s/t.db", dir);
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(trend_case, f);
	fclose(f);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db_path);
	for (int i = 1; i <= 4; i++)
		cr_assert_eq(lks_run_bin(i == 3 ? TREND_FAULT : NULL, args, out, sizeof(out)), 0,
		             "suite %d: %s", i, out);
	snprintf(args, sizeof(args), "report --db '%s' -o '%s/rep'", db_path, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);

	snprintf(path, sizeof(path), "%s/rep/nightly_trend.tsv", dir);
	cr_assert_eq(n = read_tsv(path, rows, 16), 8);
	cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	for (int i = 0; i < n; i++) {
		const struct trend_row *r = &rows[i];
		const char *name = strchr(r->run, '/') + 1;
		long long id = run_of(db, r->suite, name);
		char sql[300];

		cr_assert_eq(r->suite, i / 2 + 1);
		/* the fault's environment variable is a fingerprint key: set in 3, gone in 4 */
		cr_assert_eq(r->fp, r->suite == 3 || r->suite == 4, "suite %lld", r->suite);
		snprintf(sql, sizeof(sql), "SELECT loss FROM steps WHERE run_id = %lld AND step = 5",
		         id);
		cr_assert_eq(r->loss, sql_real(db, sql), "%s in suite %lld", r->run, r->suite);
		if (r->suite == 1) {
			cr_assert(isnan(r->rel), "no suite before the first");
			continue;
		}
		/* the same double operations as the report's: equal bit for bit */
		snprintf(sql, sizeof(sql), "SELECT max(abs(a.loss - b.loss) / abs(b.loss)) FROM steps a "
		         "JOIN steps b USING (step, rank) WHERE a.run_id = %lld AND b.run_id = %lld", id,
		         run_of(db, r->suite - 1, name));
		cr_assert_eq(r->rel, sql_real(db, sql), "%s in suite %lld", r->run, r->suite);
		/* only the faulty run and the one after it differ from the suite before */
		if (strcmp(name, "rowwise") == 0 && (r->suite == 3 || r->suite == 4))
			cr_assert_gt(r->rel, 1e-9, "%s in suite %lld", r->run, r->suite);
		else
			cr_assert_eq(r->rel, 0.0, "%s in suite %lld", r->run, r->suite);
		cr_assert_gt(r->time, 0.0);
	}
	sqlite3_close(db);

	/* two suites plotted: the first of them still compared with the suite before it */
	snprintf(args, sizeof(args), "report --db '%s' --trend 2 -o '%s/rep2'", db_path, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/rep2/nightly_trend.tsv", dir);
	cr_assert_eq(read_tsv(path, rows + 8, 8), 4);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(rows[8 + i].suite, 3 + i / 2);
		cr_assert_str_eq(rows[8 + i].run, rows[4 + i].run);
		cr_assert_eq(rows[8 + i].rel, rows[4 + i].rel, "%s", rows[8 + i].run);
		cr_assert_eq(rows[8 + i].fp, 1);
	}

	/* one suite asked for where there are more: said so, not taken for a first night */
	snprintf(args, sizeof(args), "report --db '%s' --trend 1 -o '%s/rep1'", db_path, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/rep1/report.md", dir);
	page = slurp(path);
	cr_assert_not_null(strstr(page, "one suite plotted (--trend 1): no trend to plot"), "%s", page);
	cr_assert_null(strstr(page, "one suite only"), "%s", page);
	free(page);
	/* --trend N is the plots' too, as its help says (it named the table alone) */
	cr_assert_eq(lks_run_bin(NULL, "report --help", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "suites in the trend tables and plots"), "%s", out);

	/* a suite of other settings (--steps 4) is another training, not a change: no loss
	   difference against the suite before (it plotted one), and its suite is marked */
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet --steps 4", path, db_path);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "report --db '%s' --trend 2 -o '%s/rep3'", db_path, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/rep3/nightly_trend.tsv", dir);
	cr_assert_eq(read_tsv(path, rows, 16), 4);
	for (int i = 2; i < 4; i++) {
		cr_assert_eq(rows[i].suite, 5);
		cr_assert(isnan(rows[i].rel), "%s: %g against a training of other settings",
		          rows[i].run, rows[i].rel);
		cr_assert_eq(rows[i].fp, 1, "%s", rows[i].run);
	}

	/* an imported run whose log stops early tonight: its steps are what the log held, no
	   setting (as night over night takes them), so a change against the night before (it
	   was taken for another training, and no difference drawn) */
	snprintf(path, sizeof(path), "%s/imp.ini", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("[case]\n[run log]\nimport = jsonl:log.jsonl\n", f);
	fclose(f);
	for (int night = 0; night < 2; night++) {
		snprintf(path, sizeof(path), "%s/log.jsonl", dir);
		cr_assert_not_null(f = fopen(path, "w"));
		fputs("{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2, \"loss\": 2.25}\n", f);
		if (!night)
			fputs("{\"step\": 3, \"loss\": 2.0}\n", f);
		fclose(f);
		snprintf(args, sizeof(args), "run '%s/imp.ini' --db '%s/imp.db' --quiet", dir, dir);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	}
	snprintf(args, sizeof(args), "report --db '%s/imp.db' -o '%s/rep4'", dir, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/rep4/nightly_trend.tsv", dir);
	cr_assert_eq(read_tsv(path, rows, 16), 2);
	cr_assert_eq(rows[1].suite, 2);
	cr_assert_eq(rows[1].rel, 0.0, "the steps both logged agree: %g", rows[1].rel);

	snprintf(path, sizeof(path), "%s/rep/index.html", dir);
	page = slurp(path);
	cr_assert_not_null(strstr(page, "since last night"));
	cr_assert_not_null(strstr(page, "id=\"plot-nightly_trend_loss\""));
	cr_assert_not_null(strstr(page, "id=\"plot-nightly_trend_reldiff\""));
	cr_assert_not_null(strstr(page, "id=\"plot-nightly_trend_time\""));
	/* in the opening section, before the summary, where reports/README.md says they are
	   (it said at the end) */
	cr_assert(strstr(page, "<h2>since last night</h2>") < strstr(page, "<h3>trends over recent "
	                                                                  "suites</h3>"));
	cr_assert(strstr(page, "id=\"plot-nightly_trend_time\"") < strstr(page, "<h2>summary</h2>"));
	free(page);
	page = slurp(LKS_SRC "/reports/README.md");
	cr_assert_not_null(strstr(page, "## Sections, in order"));
	cr_assert_not_null(strstr(page, "trend plots over the latest suites"));
	cr_assert(strstr(page, "trend plots over the latest suites") < strstr(page, "**Summary**"),
	          "reports/README.md places the trend plots after the summary");
	free(page);
	snprintf(path, sizeof(path), "%s/rep/nightly_trend_reldiff.svg", dir);
	svg = slurp(path);
	cr_assert_not_null(strstr(svg, ">3*<"), "suite 3 not starred");
	cr_assert_not_null(strstr(svg, ">4*<"), "suite 4 not starred");
	cr_assert_null(strstr(svg, ">2*<"), "suite 2 starred");
	free(svg);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* Names that differ in '+' against '_' (both allowed in a name, harness/base/name.h) are
   other cases and runs: each its own plots, anchors and trend rows. They shared them
   when '+' became '_' in file names and keys. */
static const char plus_case[] =
	"[case]\nsteps = 2\nseed = 1\nworld_size = 1\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 1\n"
	"[run f+a]\nrecipe = fp8_rowwise\n"
	"[run f_a]\nrecipe = fp8_tensorwise\n";

Test(report_trend, names_apart_in_files_anchors_and_keys)
{
	char dir[] = "/tmp/lks_test_names_XXXXXX", args[512], out[4096], path[256];
	static const char *const cases[] = { "x+y", "x_y" }, *const runs[] = { "f+a", "f_a" };
	struct trend_row rows[8];
	char *page, *md;

	if (system("command -v gnuplot >/dev/null 2>&1") != 0)
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox)");
	cr_assert_not_null(mkdtemp(dir));
	write_text(dir, "x+y.ini", plus_case);
	write_text(dir, "x_y.ini", plus_case);
	snprintf(args, sizeof(args), "run '%s/x+y.ini' '%s/x_y.ini' --db '%s/t.db' --quiet", dir,
	         dir, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "report --db '%s/t.db' -o '%s/rep'", dir, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/rep/index.html", dir);
	page = slurp(path);
	snprintf(path, sizeof(path), "%s/rep/report.md", dir);
	md = slurp(path);
	for (int c = 0; c < 2; c++) {
		char id[128];

		snprintf(id, sizeof(id), "id=\"plot-%s=loss\"", cases[c]);
		cr_assert_not_null(strstr(page, id), "%s", id);
		cr_assert_eq(strstr(strstr(page, id) + 1, id), NULL, "%s twice", id);
		for (int k = 0; k < 2; k++) {
			snprintf(id, sizeof(id), "](%s=fp8scale=%s.svg)", cases[c], runs[k]);
			cr_assert_not_null(strstr(md, id), "%s", id);
			snprintf(path, sizeof(path), "%s/rep/%s=fp8scale=%s.svg", dir, cases[c], runs[k]);
			cr_assert_gt(file_size(path), 1000, "%s", path);
		}
	}
	/* every run its own trend row, under its own case/run */
	snprintf(path, sizeof(path), "%s/rep/nightly_trend.tsv", dir);
	cr_assert_eq(read_tsv(path, rows, 8), 4);
	for (int i = 0; i < 4; i++) {
		char key[64];

		snprintf(key, sizeof(key), "%s/%s", cases[i / 2], runs[i % 2]);
		cr_assert_str_eq(rows[i].run, key);
	}
	free(page);
	free(md);
	teardown(dir);
}
