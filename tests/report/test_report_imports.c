/*
 * test_report_imports.c: the report of imported runs (jsonl logs, tensor traces), end to
 * end: 'lockstep run' of a case that imports them, then 'lockstep report'. Its numbers read
 * as the database holds them (a tiny loss is no 0.000000, a NaN reads NaN in every table, a
 * performance metric with no finite value has no mean and says how many were not finite).
 * Imported cases train nothing, so each test takes a moment.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_fixture.h"

/* A temporary folder holding the files named in files (name, text, ..., NULL). */
static void imports_dir(char *dir, size_t size, const char *const *files)
{
	snprintf(dir, size, "/tmp/lks-test-report-imports-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	for (; files[0]; files += 2)
		write_text(dir, files[0], files[1]);
}

/* 'lockstep run' of dir/c.ini (and more: other case files, "" none) into dir/t.db: its
   exit status. */
static int run_cases(const char *dir, const char *more)
{
	return sh("cd '%s' && '%s' run c.ini %s --db t.db --quiet >/dev/null 2>&1", dir, LKS_BIN,
	          more);
}

static int run_case(const char *dir)
{
	return run_cases(dir, "");
}

/* The report of dir/t.db into dir/r (env: before the command, "" none; extra: options):
   its exit status; its report.md into *md (malloc'd) when it exits 0. */
static int report_md(const char *dir, const char *env, const char *extra, char **md)
{
	char path[300];
	int rc = sh("%s '%s' report --db '%s/t.db' %s -o '%s/r' >'%s/out.txt' 2>'%s/err.txt'", env,
	            LKS_BIN, dir, extra, dir, dir, dir);

	*md = NULL;
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	if (rc == 0)
		*md = slurp(path);
	return rc;
}

/* p.jsonl: a loss of 17 digits, then a tiny one; a numerics metric gone NaN; a performance
   metric never finite and one finite once. */
static const char *const numbers_files[] = {
	"p.jsonl",
	"{\"step\":1,\"loss\":1.2345678901234567,\"tps\":NaN,\"tflops\":3.5,\"grad_norm\":1.5}\n"
	"{\"step\":2,\"loss\":1.2345e-07,\"tps\":NaN,\"tflops\":NaN,\"grad_norm\":NaN}\n",
	"c.ini",
	"[case]\ndescription = numbers\n[run r]\nimport = jsonl:p.jsonl\n"
	"[check f]\nkind = finite\na = r\n",
	NULL,
};

Test(report_imports, numbers_read_as_stored, .timeout = 60)
{
	char dir[64], *md;

	imports_dir(dir, sizeof(dir), numbers_files);
	cr_assert_eq(run_case(dir), 1, "the finite check fails on the NaN grad norm");
	cr_assert_eq(report_md(dir, "PATH=/nonexistent", "", &md), 0);
	/* the loss: the runs table and the trend table, as the numerics table has it */
	cr_expect_not_null(strstr(md, "| 1.234568 | 1.2345e-07 |\n"), "%s", md);
	cr_expect_not_null(strstr(md, "| r | loss | 2 | 0 |  | 1.2345e-07 |"), "%s", md);
	/* a NaN reads NaN in the numerics table and in the check's message */
	cr_expect_not_null(strstr(md, "| r | grad\\_norm | 2 | 1 | 2 | NaN |"), "%s", md);
	cr_expect_not_null(strstr(md, "metric 'grad\\_norm', rank 0: value NaN |"), "%s", md);
	/* performance: how many values were not finite; no mean of none */
	cr_expect_not_null(strstr(md, "| run | metric | unit | values | non-finite | mean | least "
	                              "| largest |"), "%s", md);
	cr_expect_not_null(strstr(md, "| r | tps | tokens/s | 2 | 2 | none | none | none |"),
	                   "%s", md);
	cr_expect_not_null(strstr(md, "| r | tflops | TFLOP/s | 2 | 1 | 3.5 | 3.5 | 3.5 |"),
	                   "%s", md);
	cr_expect_null(strstr(md, "nan"), "%s", md);
	cr_expect_null(strstr(md, "inf |"), "%s", md);
	free(md);
	teardown(dir);
}

/* A tensor trace with no loss (steps 0-2), first in its case, and a log's loss (steps
   1-3) twice. */
static const char *const trace_first_files[] = {
	"t.jsonl",
	"{\"step\":0,\"rank\":0,\"tensor\":\"embed.output\",\"l2\":1.0,\"amax\":0.5,\"nonfinite\":0}\n"
	"{\"step\":1,\"rank\":0,\"tensor\":\"embed.output\",\"l2\":1.5,\"amax\":0.5,\"nonfinite\":0}\n"
	"{\"step\":2,\"rank\":0,\"tensor\":\"embed.output\",\"l2\":2.0,\"amax\":0.5,\"nonfinite\":0}\n",
	"m.jsonl",
	"{\"step\":1,\"loss\":4.25}\n{\"step\":2,\"loss\":4.125}\n{\"step\":3,\"loss\":4.0}\n",
	"c.ini",
	"[case]\ndescription = a trace first\n[run ta]\nimport = tensor-jsonl:t.jsonl\n"
	"[run m]\nimport = jsonl:m.jsonl\n[run m2]\nimport = jsonl:m.jsonl\n"
	"[check same]\nkind = bitwise\na = m2\nb = m\n",
	"d.ini",
	"[case]\ndescription = traces alone\n[run ta]\nimport = tensor-jsonl:t.jsonl\n"
	"[run tb]\nimport = tensor-jsonl:t.jsonl\n",
	NULL,
};

/* An import's steps are its log's: the runs table and the trend table both say "up to" its
   last step (the trend said 4 for steps 1-3, and 0 for a tensor trace), and neither shows
   a loss the tensor trace never stored. */
Test(report_imports, steps_agree_between_tables, .timeout = 60)
{
	char dir[64], *md, *trend;

	imports_dir(dir, sizeof(dir), trace_first_files);
	cr_assert_eq(run_case(dir), 0);
	cr_assert_eq(report_md(dir, "PATH=/nonexistent", "", &md), 0);
	cr_assert_not_null(trend = strstr(md, "### trend over recent suites"), "%s", md);
	cr_expect_not_null(strstr(md, "| ta | import |  | 1 | up to 2 | complete |  |  |\n"),
	                   "%s", md);
	cr_expect_not_null(strstr(md, "| m | import |  | 1 | up to 3 | complete | 4.25 | 4 |\n"),
	                   "%s", md);
	cr_expect_not_null(strstr(trend, "| ta | 1 | complete | up to 2 |  |  |\n"), "%s", trend);
	cr_expect_not_null(strstr(trend, "| m | 1 | complete | up to 3 | 4 |  |\n"), "%s", trend);
	free(md);
	teardown(dir);
}

/* The relative loss difference is drawn against a run that stored a loss, not the case's
   first run where that is a tensor trace (every difference was NaN: the page showed
   gnuplot's warning, naming its template by its absolute path); a case where no run stored
   a loss or a grad norm, and a trend plot of no value (imports' step times), says so in
   place of the plot. A template gnuplot fails on is named without the folder it is in. */
Test(report_imports, the_loss_reference_stored_a_loss, .timeout = 60)
{
	char dir[64], path[300], *md, *html;

	if (!have("gnuplot"))
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox)");
	imports_dir(dir, sizeof(dir), trace_first_files);
	cr_assert_eq(run_cases(dir, "d.ini"), 0);
	cr_assert_eq(run_cases(dir, "d.ini"), 0, "a second suite: trend plots");
	cr_assert_eq(report_md(dir, "", "", &md), 0);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html = slurp(path);
	cr_expect_not_null(strstr(md, "**relative loss difference against 'm' "), "%s", md);
	cr_expect_not_null(strstr(md, "](c=reldiff.svg)"), "%s", md);
	cr_expect_null(strstr(md, "against 'ta'"), "%s", md);
	cr_expect_not_null(strstr(md, "_no grad norm to plot: no run of this case stored one_"),
	                   "%s", md);
	/* case d: tensor traces alone */
	cr_expect_not_null(strstr(md, "_no loss to plot: no run of this case stored one_"), "%s",
	                   md);
	/* the trend: the loss is drawn, the logs timed no step */
	cr_expect_not_null(strstr(md, "](nightly_trend_loss.svg)"), "%s", md);
	cr_expect_not_null(strstr(md, "_no step time to plot over recent suites: no run stored "
	                              "one_"), "%s", md);
	cr_expect_null(strstr(md, "gnuplot:"), "%s", md);
	cr_expect_null(strstr(html, "warning"), "%s", html);
	cr_expect_null(strstr(html, LKS_SRC "/reports"), "%s", html);
	free(md);
	free(html);

	/* a template that gnuplot fails on: its name, not its folder's path */
	cr_assert_eq(sh("cp -r '%s/reports' '%s/tpl' && printf 'load common_gp\\nplot nosuch(x)\\n' "
	                "> '%s/tpl/loss.gp'", LKS_SRC, dir, dir), 0);
	snprintf(path, sizeof(path), "--templates '%s/tpl'", dir);
	cr_assert_eq(report_md(dir, "", path, &md), 0);
	cr_expect_not_null(strstr(md, "_gnuplot: \"loss.gp\" line 2: undefined function: nosuch_"),
	                   "%s", md);
	cr_expect_null(strstr(md, "/tpl/"), "%s", md);
	free(md);
	teardown(dir);
}

/* A metric name no format lists is stored with each byte that is not an ASCII letter or
   digit made '_', as 'lockstep import --help' says, by its example too (it said "stored as
   written"); the report shows the name stored. */
Test(report_imports, a_metric_name_reads_as_import_help_says, .timeout = 60)
{
	static const char *const files[] = {
		"n.jsonl",
		"{\"step\":1,\"loss\":2.5,\"mtp_1 loss\":2.75,\"x&y <i>z</i> time\":0.5}\n",
		"c.ini",
		"[case]\ndescription = names\n[run r]\nimport = jsonl:n.jsonl\n",
		NULL,
	};
	char dir[64], path[300], *md, *help;

	imports_dir(dir, sizeof(dir), files);
	cr_assert_eq(sh("'%s' import --help > '%s/help.txt'", LKS_BIN, dir), 0);
	snprintf(path, sizeof(path), "%s/help.txt", dir);
	help = slurp(path);
	cr_expect_null(strstr(help, "stored as written"), "%s", help);
	cr_expect_not_null(strstr(help, "A name not listed is stored with each byte that is not "
	                                "an\nASCII letter or digit made '_' ('mtp_1 loss' as "
	                                "mtp_1_loss; 63 bytes at most)"), "%s", help);
	free(help);
	cr_assert_eq(run_case(dir), 0);
	cr_assert_eq(report_md(dir, "PATH=/nonexistent", "", &md), 0);
	cr_expect_not_null(strstr(md, "| r | mtp\\_1\\_loss | 1 | 0 |  | 2.75 |"), "%s", md);
	cr_expect_not_null(strstr(md, "| r | x\\_y\\_\\_i\\_z\\_\\_i\\_\\_time |"), "%s", md);
	free(md);
	teardown(dir);
}
