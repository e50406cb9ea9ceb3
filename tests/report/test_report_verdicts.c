/*
 * test_report_verdicts.c: what the report's summary and tables say of a suite that is not
 * whole. A run killed (incomplete) or failed, or a case whose checks were never stored
 * (the suite stopped before them), makes the case "incomplete", never "pass"; a case that
 * declares no check is still a pass. A planted fault whose check was skipped (--run) is
 * counted apart, not as missed. A NaN loss reads NaN in the runs and trend tables. The
 * heatmap of a pruned suite says its stats were pruned, and a tensor row neither run
 * stored is no divergence. The states are made in the stored suite with SQL, as a kill
 * at that moment would leave it. The cases and their folder: report_fixture.h.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_fixture.h"

/* SQL on dir/t.db. */
static void sql(const char *dir, const char *stmt)
{
	char path[300], *err = NULL;
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, stmt, NULL, NULL, &err), SQLITE_OK, "%s: %s", stmt, err);
	sqlite3_close(db);
}

/* The report of dir/t.db (extra: more options) into dir/r; what it printed, its
   report.md and index.html (each malloc'd). */
static void report(const char *dir, const char *extra, char **out, char **md, char **html)
{
	char path[300];

	cr_assert_eq(sh("'%s' report --db '%s/t.db' %s -o '%s/r' > '%s/out.txt'", LKS_BIN, dir,
	                extra, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	*out = slurp(path);
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	*md = slurp(path);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	*html = slurp(path);
}

static void report_free(char *out, char *md, char *html)
{
	free(out);
	free(md);
	free(html);
}

Test(report_verdicts, a_killed_or_failed_suite_is_incomplete, .timeout = 120)
{
	char dir[64], *out, *md, *html;

	setup(dir, sizeof(dir));
	/* killed in run fp8 of case tiny: the run incomplete, the case's checks never stored */
	sql(dir, "UPDATE runs SET status = 'incomplete' WHERE case_name = 'tiny' "
	         "AND run_name = 'fp8'; DELETE FROM checks WHERE case_name = 'tiny'");
	report(dir, "", &out, &md, &html);
	cr_expect_not_null(strstr(md, "| tiny | 3 | 0 | 0 | incomplete | 0 |"), "%s", md);
	cr_expect_not_null(strstr(md, "case tiny incomplete: run 'fp8' incomplete; 2 checks "
	                              "declared, no verdict stored."), "%s", md);
	cr_expect_not_null(strstr(html, "<td class=\"incomplete\">incomplete</td>"));
	/* plain declares no check: its run complete, it passes */
	cr_expect_not_null(strstr(md, "| plain | 1 | 0 | 0 | pass | 0 |"), "%s", md);
	cr_expect_not_null(strstr(out, "incomplete: 1 case with a run not complete"), "%s", out);
	report_free(out, md, html);

	/* a run that failed */
	sql(dir, "UPDATE runs SET status = 'failed' WHERE run_name = 'fp8'");
	report(dir, "", &out, &md, &html);
	cr_expect_not_null(strstr(md, "case tiny incomplete: run 'fp8' failed;"), "%s", md);
	report_free(out, md, html);

	/* every run complete, killed before the checks */
	sql(dir, "UPDATE runs SET status = 'complete'");
	report(dir, "", &out, &md, &html);
	cr_expect_not_null(strstr(md, "| tiny | 3 | 0 | 0 | incomplete | 0 |"), "%s", md);
	cr_expect_not_null(strstr(md, "case tiny incomplete: 2 checks declared, no verdict "
	                              "stored."), "%s", md);
	report_free(out, md, html);
	teardown(dir);
}

Test(report_verdicts, a_skipped_planted_fault_is_not_missed, .timeout = 120)
{
	char dir[64], *out, *md, *html;

	setup(dir, sizeof(dir));
	cr_assert_eq(sh("'%s' run '%s/cases/faults/bitflip.ini' --run clean --db '%s/t.db' --quiet "
	                ">/dev/null", LKS_BIN, LKS_SRC, dir), 0);
	report(dir, "", &out, &md, &html);
	cr_expect_not_null(strstr(out, "planted faults: 0 of 0 caught exactly where planted; 1 not "
	                               "checked (skipped or unsupported), not counted"), "%s", out);
	cr_expect_not_null(strstr(md, "| bitflip | caught | bitwise | step 3, rank 1, "
	                              "blocks.0.mlp.up.out | not checked | skipped |"), "%s", md);
	/* neither red nor marked bad */
	cr_expect_not_null(strstr(html, "<td class=\"skipped\">skipped</td>"));
	cr_expect_null(strstr(md, "not found"), "%s", md);
	report_free(out, md, html);
	teardown(dir);
}

Test(report_verdicts, a_nan_loss_reads_nan, .timeout = 120)
{
	char dir[64], *out, *md, *html;
	const char *runs;

	setup(dir, sizeof(dir));
	/* a NaN is stored as NULL (SQLite has no NaN): the last step of plain's run went NaN */
	sql(dir, "UPDATE steps SET loss = NULL WHERE step = 1 AND run_id = (SELECT run_id FROM "
	         "runs WHERE case_name = 'plain')");
	report(dir, "", &out, &md, &html);
	cr_assert_not_null(runs = strstr(md, "## case plain"), "%s", md);
	/* the runs table: first loss a number, final loss NaN; the trend table too */
	cr_expect_not_null(strstr(runs, " | 2 | complete | "), "%s", runs);
	cr_expect_not_null(strstr(runs, " | NaN |\n"), "%s", runs);
	cr_expect_not_null(strstr(runs, "| bf16 | 1 | complete | 2 | NaN |"), "%s", runs);
	report_free(out, md, html);
	teardown(dir);
}

/* A finite check finds one value: its row shows no b (it showed 0, or nan for a real
   field), as if a second run had one. The verdict is made here as a NaN found leaves it. */
Test(report_verdicts, a_finite_check_shows_no_b, .timeout = 120)
{
	char dir[64], *out, *md, *html, *row;

	setup(dir, sizeof(dir));
	sql(dir, "INSERT INTO checks (suite_id, case_name, check_name, kind, run_a, verdict, "
	         "step, rank, tensor, field, value_a, value_b, message) SELECT suite_id, "
	         "case_name, 'fin', 'finite', run_id, 'fail', 1, 0, 'x.grad', 'nonfinite', 1, 0, "
	         "'a NaN' FROM runs WHERE case_name = 'plain' LIMIT 1");
	report(dir, "", &out, &md, &html);
	cr_assert_not_null(row = strstr(md, "| fin | finite |"), "%s", md);
	cr_expect_not_null(strstr(row, "| x.grad | nonfinite | 1 |  |"), "%.200s", row);
	report_free(out, md, html);
	teardown(dir);
}

/* The heatmap's caption of the pair a vs b in report.md (malloc'd), NULL when none. */
static char *heatmap_text(const char *md, const char *pair)
{
	const char *p = strstr(md, pair), *e;

	if (!p)
		return NULL;
	e = strstr(p, "\n\n**");
	return strndup(p, e ? (size_t)(e - p) : strlen(p));
}

Test(report_verdicts, a_pruned_suite_has_no_heatmap_divergence, .timeout = 300)
{
	char dir[64], *out, *md, *html, *h;

	if (!have("gnuplot"))
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox): no heatmap is drawn");
	setup(dir, sizeof(dir));
	/* a row neither run stored (a prune under way, or a trace that holds none there) is
	   passed by the bitwise check: no divergence, drawn 'no row' */
	sql(dir, "DELETE FROM stats WHERE step = 0 AND run_id IN (SELECT run_id FROM runs WHERE "
	         "run_name IN ('fp8', 'fp8_ac'))");
	report(dir, "", &out, &md, &html);
	cr_assert_not_null(h = heatmap_text(md, "'fp8\\_ac' vs 'fp8'"), "%s", md);
	cr_expect_not_null(strstr(h, "No divergence"), "%s", h);
	cr_expect_null(strstr(h, "field row"), "%s", h);
	free(h);
	report_free(out, md, html);

	/* a second suite, so that prune takes the first one's stats */
	cr_assert_eq(sh("'%s' run '%s/tiny.ini' --db '%s/t.db' --quiet --threads 1 >/dev/null 2>&1",
	                LKS_BIN, dir, dir), 1);
	cr_assert_eq(sh("'%s' prune --db '%s/t.db' --keep 1 >/dev/null", LKS_BIN, dir), 0);
	report(dir, "--suite 1", &out, &md, &html);
	cr_expect_null(strstr(md, "First divergence"), "%s", md);
	cr_expect_not_null(strstr(md, "tensor error heatmap: 'fp8\\_ac' vs 'fp8': not drawn: the "
	                              "per-tensor stats of run 'fp8\\_ac' were pruned"), "%s", md);
	cr_expect_not_null(strstr(md, "FP8 amax and scale of run 'fp8' (rank 0): not drawn"),
	                   "%s", md);
	report_free(out, md, html);
	teardown(dir);
}
