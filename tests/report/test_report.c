/*
 * test_report.c: 'lockstep report' end to end, run as a user would. A tiny case (2 ranks,
 * 3 steps, bf16, fp8_rowwise with and without checkpointing, a close check with rtol 0
 * that fails on purpose, a bitwise check that checkpointing is neutral) and a plain one
 * (one bf16 run) are run into a database in a temporary folder (report_fixture.h); the
 * report of it must hold every plot as inline SVG, each under its anchor and heading, and
 * no other (none of FP8 and no heatmap for the plain case), the failing check's row with
 * its divergence, and the same table in report.md. A divergence planted in the stored
 * trace (as a faulty device would make one) must be named by the heatmap of that pair and
 * circled at its step and tensor, also when a large case is drawn downsampled. The page is
 * rendered in headless Chromium: the screenshot must be well above the size of a blank
 * page's screenshot of the same size, and the console must show no message (the detector
 * is shown to catch one on a page that logs an error). Without gnuplot the tables are
 * still written. Names that would be markup come out as text in report.md and index.html.
 * A run's GPU health findings (fake NVML) stand beside the checks and in the summary, with
 * its readings and its cuBLASLt algorithms; NVML's absence is said with its reason.
 * Bad usage and bad input exit 2 without creating or changing a database. Tests that need
 * gnuplot or Chromium skip with the reason when it is not installed (Debian: gnuplot-nox,
 * chromium). How the report's folder is swapped in: test_report_swap.c; the store's reads
 * for the report: test_report_query.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_fixture.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* Every plot of the report of both cases: its anchor and its heading as the page has them. */
static const struct {
	const char *id, *title;
} plots[] = {
	{ "tiny=loss", "loss per step (mean over ranks)" },
	{ "tiny=reldiff", "relative loss difference against &#39;bf16&#39; (an exact agreement is "
	                  "drawn at 1e-12)" },
	{ "tiny=gradnorm", "grad norm per step" },
	{ "tiny=fp8scale=fp8", "FP8 amax and scale of run &#39;fp8&#39; (rank 0)" },
	{ "tiny=fp8scale=fp8_ac", "FP8 amax and scale of run &#39;fp8_ac&#39; (rank 0)" },
	{ "tiny=heatmap=fp8=bf16", "tensor error heatmap: &#39;fp8&#39; vs &#39;bf16&#39;" },
	{ "tiny=heatmap=fp8_ac=fp8", "tensor error heatmap: &#39;fp8_ac&#39; vs &#39;fp8&#39;" },
	{ "plain=loss", "loss per step (mean over ranks)" },
	{ "plain=gradnorm", "grad norm per step" },
};

/* How often needle occurs in s. */
static int count(const char *s, const char *needle)
{
	int n = 0;

	for (; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

/* The section of the page about one case (malloc'd). */
static char *section(const char *html, const char *case_name)
{
	char open[128], *out;
	const char *a, *b;

	snprintf(open, sizeof(open), "<section id=\"case-%s\">", case_name);
	cr_assert_not_null(a = strstr(html, open), "no section for case '%s'", case_name);
	cr_assert_not_null(b = strstr(a, "</section>"));
	cr_assert_not_null(out = strndup(a, (size_t)(b - a)));
	return out;
}

/* Writes the report of dir/t.db into dir/r; its page (malloc'd). */
static char *report_page(const char *dir)
{
	char path[300];

	cr_assert_eq(sh("'%s' report --db '%s/t.db' -o '%s/r' >/dev/null", LKS_BIN, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	return slurp(path);
}

Test(report, tables_and_plots)
{
	char dir[64], path[300], *html, *md, *plain;

	if (!have("gnuplot"))
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox)");
	setup(dir, sizeof(dir));
	html = report_page(dir);
	/* each plot: its anchor, its heading, then the inline SVG that gnuplot drew; and no
	   other SVG (an empty plot for a case without FP8 runs would be one) */
	for (size_t i = 0; i < sizeof(plots) / sizeof(plots[0]); i++) {
		char want[400];

		snprintf(want, sizeof(want), "<div class=\"plot\" id=\"plot-%s\">\n<h3>%s</h3>\n<svg",
		         plots[i].id, plots[i].title);
		cr_expect_not_null(strstr(html, want), "no plot '%s' as '%s'", plots[i].id, want);
	}
	cr_expect_eq(count(html, "<svg"), (int)(sizeof(plots) / sizeof(plots[0])));
	cr_expect_eq(count(html, "<div class=\"plot\""), (int)(sizeof(plots) / sizeof(plots[0])));
	/* FP8 history: the recompute reuses the forward's scales (DESIGN.md), so its lines
	   are drawn once, and the caption says so; no plot for the BF16 run or the plain case */
	cr_expect_not_null(strstr(html, "blocks.0.mlp.up.fwd.x-recompute as blocks.0.mlp.up.fwd.x"));
	cr_expect_null(strstr(html, "plot-tiny=fp8scale=bf16"));
	plain = section(html, "plain");
	cr_expect_null(strstr(plain, "fp8scale"), "an FP8 plot for a case without FP8 runs");
	cr_expect_null(strstr(plain, "FP8"));
	cr_expect_null(strstr(plain, "heatmap"), "a heatmap for a case with one run");
	free(plain);
	cr_expect_null(strstr(html, "<?xml"), "an XML prolog inside the page");
	cr_expect_null(strstr(html, "<script"), "the page must need no script");
	/* the failing check: verdict and divergence at step 0 on the loss */
	cr_expect_not_null(strstr(html, "<tr class=\"bad\"><td>tracks</td><td>close</td>"
	                                "<td>fp8 vs bf16</td><td class=\"fail\">fail</td>"
	                                "<td class=\"num\">0</td>"));
	cr_expect_not_null(strstr(html, "<td>loss</td>"));
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md = slurp(path);
	cr_expect_not_null(strstr(md, "| check | kind | runs | verdict | step |"));
	cr_expect_not_null(strstr(md, "| tracks | close | fp8 vs bf16 | fail | 0 |"));
	cr_expect_not_null(strstr(md, "![grad norm per step](tiny=gradnorm.svg)"));
	/* names are escaped as Markdown (a '_' could start emphasis), file names are not */
	cr_expect_not_null(strstr(md, "![tensor error heatmap: 'fp8\\_ac' vs 'fp8']"
	                              "(tiny=heatmap=fp8_ac=fp8.svg)\n\nStep (x) against tensor"));
	snprintf(path, sizeof(path), "%s/r/tiny=reldiff.svg", dir);
	cr_expect_gt(file_size(path), 1000);
	free(html);
	free(md);
	teardown(dir);
}

static sqlite3 *open_db(const char *dir)
{
	char path[300];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	return db;
}

/* Changes the L2 norm and hash of one tensor of run case_name/run at (step, rank), as a
   faulty device would: a divergence from a run it agrees with bit for bit. */
static void plant(const char *dir, const char *case_name, const char *run, const char *tensor,
                  const char *phase, int step, int rank)
{
	sqlite3 *db = open_db(dir);
	char *q, *err = NULL;

	q = sqlite3_mprintf("UPDATE stats SET l2 = l2 * 1.5, hash = hash + 1 WHERE run_id = "
	                    "(SELECT run_id FROM runs WHERE case_name = %Q AND run_name = %Q) AND "
	                    "step = %d AND rank = %d AND seq = (SELECT t.seq FROM tensors t JOIN runs r "
	                    "USING (run_id) WHERE r.case_name = %Q AND r.run_name = %Q AND t.name = %Q "
	                    "AND t.phase = %Q)", case_name, run, step, rank, case_name, run, tensor,
	                    phase);
	cr_assert_eq(sqlite3_exec(db, q, NULL, NULL, &err), SQLITE_OK, "%s: %s", q, err);
	cr_assert_eq(sqlite3_changes(db), 1, "no row planted: %s", q);
	sqlite3_free(q);
	sqlite3_close(db);
}

/* The name and phase of the tensor at seq of run case_name/run. */
static void tensor_at(const char *dir, const char *case_name, const char *run, int seq,
                      char *name, size_t size, char *phase, size_t psize)
{
	sqlite3 *db = open_db(dir);
	sqlite3_stmt *st;

	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT t.name, t.phase FROM tensors t JOIN runs r "
	                                "USING (run_id) WHERE r.case_name = ?1 AND r.run_name = ?2 "
	                                "AND t.seq = ?3", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, case_name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, run, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, seq);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "no tensor %d in '%s/%s'", seq, case_name, run);
	snprintf(name, size, "%s", (const char *)sqlite3_column_text(st, 0));
	snprintf(phase, psize, "%s", (const char *)sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* The page's plot of anchor id: its div, heading, SVG and caption (malloc'd). */
static char *plot_of(const char *html, const char *id)
{
	char open[200], *out;
	const char *a, *b;

	snprintf(open, sizeof(open), "<div class=\"plot\" id=\"plot-%s\">", id);
	cr_assert_not_null(a = strstr(html, open), "no plot '%s'", id);
	cr_assert_not_null(b = strstr(a, "</div>"), "plot '%s' does not end", id);
	cr_assert_not_null(out = strndup(a, (size_t)(b - a)));
	return out;
}

/* Where gnuplot put the point symbol (the circle of the divergence): its centre. */
static void marker_at(const char *svg, double *x, double *y)
{
	for (const char *p = svg; (p = strstr(p, "<use xlink:href='#gpPt")); p++)
		if (sscanf(p, "<use xlink:href='#gpPt%*d' transform='translate(%lf,%lf)", x, y) == 2)
			return;
	cr_assert_fail("no point symbol in the heatmap");
}

/* The text at the left of x (a y tic label) whose position is nearest to height y. */
static void label_near(const char *svg, double x, double y, char *out, size_t size)
{
	double best = INFINITY;

	out[0] = 0;
	for (const char *p = svg; (p = strstr(p, "<g transform=\"translate(")); p++) {
		double lx, ly;
		const char *t = strstr(p, "<text>"), *e;

		if (sscanf(p, "<g transform=\"translate(%lf,%lf)", &lx, &ly) != 2 || !t
		    || !(e = strstr(t, "</text>")) || lx >= x || fabs(ly - y) >= best)
			continue;
		best = fabs(ly - y);
		snprintf(out, size, "%.*s", (int)(e - t - 6), t + 6);
	}
}

/* The circle of a heatmap: that it is in the column of step col of ncols (the image spans
   the columns), and the name of the row it is on. */
static void circled(const char *plot, int col, int ncols, char *name, size_t size)
{
	double mx, my, ix, iy, iw, ih;
	const char *img;

	cr_assert_not_null(img = strstr(plot, "<image "));
	cr_assert_eq(sscanf(img, "<image style='image-rendering:pixelated' x='%lf' y='%lf' "
	                    "width='%lf' height='%lf'", &ix, &iy, &iw, &ih), 4);
	marker_at(plot, &mx, &my);
	cr_expect_lt(fabs(mx - (ix + iw * (col + 0.5) / ncols)), iw / ncols / 2, "circle at x %g: "
	             "not in column %d of %d (image from %g, %g wide)", mx, col, ncols, ix, iw);
	label_near(plot, ix, my, name, size);
}

Test(report, heatmap_marks_divergence)
{
	char dir[64], name[128], *html, *plot;

	if (!have("gnuplot"))
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox)");
	setup(dir, sizeof(dir));
	/* checkpointing is neutral: fp8_ac and fp8 agree, and the heatmap says so */
	html = report_page(dir);
	plot = plot_of(html, "tiny=heatmap=fp8_ac=fp8");
	cr_expect_not_null(strstr(plot, "No divergence"));
	cr_expect_not_null(strstr(plot, "<text>no divergence: equal in every traced value</text>"));
	cr_expect_null(strstr(plot, "first divergence"));
	free(plot);
	/* FP8 and BF16 agree until the output of the first quantized GEMM, at the first step */
	plot = plot_of(html, "tiny=heatmap=fp8=bf16");
	cr_expect_not_null(strstr(plot, "<text>first divergence: step 0, blocks.0.mlp.up.out, rank 0 "
	                                "(l2) (circled)</text>"));
	free(plot);
	free(html);

	/* a divergence planted at step 1, rank 1, in a weight gradient: named and circled there */
	plant(dir, "tiny", "fp8_ac", "blocks.0.mlp.down.weight.grad", "backward", 1, 1);
	html = report_page(dir);
	plot = plot_of(html, "tiny=heatmap=fp8_ac=fp8");
	cr_expect_not_null(strstr(plot, "step 1, tensor blocks.0.mlp.down.weight.grad, rank 1, field "
	                                "l2."), "the caption names another divergence");
	cr_expect_not_null(strstr(plot, "<text>first divergence: step 1, blocks.0.mlp.down.weight.grad, "
	                                "rank 1 (l2) (circled)</text>"));
	/* the circle: in the column of step 1 of 3 and on the row of the planted tensor */
	circled(plot, 1, 3, name, sizeof(name));
	cr_expect_str_eq(name, "blocks.0.mlp.down.weight.grad", "the circle is on the row of '%s'", name);
	free(plot);
	free(html);
	teardown(dir);
}

/* A case too large to draw cell by cell (more tensors and steps than the heatmap has rows
   and columns): bins of tensors and steps, said in the caption, the planted divergence
   circled in its bin, and a plot that stays small. Two runs of one recipe agree bit for
   bit, and the bitwise check says so. */
Test(report, heatmap_downsamples, .timeout = 120)
{
	static const char deep_text[] =
		"[case]\nsteps = 401\nseed = 7\nworld_size = 1\n"
		"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 4\nseq = 4\nbatch = 2\n"
		"[run fp8]\nrecipe = fp8_rowwise\n[run again]\nrecipe = fp8_rowwise\n"
		"[check deterministic]\nkind = bitwise\na = again\nb = fp8\n";
	char dir[64], name[128], phase[16], want[300], row[160], *html, *plot;
	const char *p;
	int ybin = 0, xbin = 0, seq;

	if (!have("gnuplot"))
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox)");
	snprintf(dir, sizeof(dir), "/tmp/lks-test-report-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	write_text(dir, "deep.ini", deep_text);
	cr_assert_eq(sh("'%s' run '%s/deep.ini' --db '%s/t.db' --quiet --threads 1 >/dev/null",
	                LKS_BIN, dir, dir), 0);
	html = report_page(dir);
	plot = plot_of(html, "deep=heatmap=again=fp8");
	cr_assert_not_null(p = strstr(plot, "Downsampled to stay legible: "));
	cr_assert_eq(sscanf(p, "Downsampled to stay legible: %d tensors share a row, %d steps a column",
	                    &ybin, &xbin), 2);
	cr_expect_gt(ybin, 1);
	cr_expect_gt(xbin, 1);
	free(plot);
	free(html);

	/* the first tensor of a bin in the middle, at a step in the last third */
	seq = 20 * ybin;
	tensor_at(dir, "deep", "again", seq, name, sizeof(name), phase, sizeof(phase));
	plant(dir, "deep", "again", name, phase, 301, 0);
	html = report_page(dir);
	plot = plot_of(html, "deep=heatmap=again=fp8");
	snprintf(want, sizeof(want), "step 301, tensor %s, rank 0, field l2.", name);
	cr_expect_not_null(strstr(plot, want), "the caption does not say '%s'", want);
	circled(plot, 301 / xbin, (401 + xbin - 1) / xbin, row, sizeof(row));
	snprintf(want, sizeof(want), "%s +%d", name, ybin - 1);
	cr_expect_str_eq(row, want, "the circle is on the row of '%s'", row);
	/* inline in the page: a few tens of KB, not a rectangle per cell (about 1 MB) */
	cr_expect_lt(strlen(plot), 150000, "the heatmap is %zu bytes", strlen(plot));
	/* the FP8 plot of a long run is binned too, and says so */
	free(plot);
	plot = plot_of(html, "deep=fp8scale=fp8");
	cr_expect_not_null(strstr(plot, "Downsampled to keep the plot small: a point is "));
	cr_expect_lt(strlen(plot), 250000, "the FP8 plot is %zu bytes", strlen(plot));
	free(plot);
	free(html);
	teardown(dir);
}

/* Names that would be markup: stored directly in the database (the case parser need not
   accept them), they must reach report.md as text a Markdown viewer shows as such, and
   index.html as escaped HTML. */
Test(report, names_are_text_in_markdown_and_html)
{
	static const char evil_case[] = "<img src=x onerror=alert(1)>\n# injected";
	char dir[64], path[300], *html, *md, *q, *err = NULL;
	sqlite3 *db;

	setup(dir, sizeof(dir));
	db = open_db(dir);
	q = sqlite3_mprintf("UPDATE runs SET case_name = %Q WHERE case_name = 'tiny'; "
	                    "UPDATE checks SET case_name = %Q WHERE case_name = 'tiny'; "
	                    "UPDATE runs SET run_name = '[x](javascript:alert(1))' "
	                    "WHERE run_name = 'fp8'; "
	                    "UPDATE checks SET check_name = '*bold* `code` _em_ ~~s~~ a|b &amp; 1. x' "
	                    "WHERE check_name = 'tracks'", evil_case, evil_case);
	cr_assert_eq(sqlite3_exec(db, q, NULL, NULL, &err), SQLITE_OK, "%s", err);
	sqlite3_free(q);
	sqlite3_close(db);
	cr_assert_eq(sh("'%s' report --db '%s/t.db' -o '%s/r' >/dev/null", LKS_BIN, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md = slurp(path);
	/* the report's own Markdown has no HTML: a '<' can only come from a name */
	cr_expect_null(strchr(md, '<'), "raw '<' in report.md: %s", strchr(md, '<'));
	cr_expect_null(strstr(md, "\n# injected"), "a newline in a name started a heading");
	cr_expect_not_null(strstr(md, "## case &lt;img src=x onerror=alert(1)&gt; \\# injected\n"));
	cr_expect_not_null(strstr(md, "| \\[x\\](javascript:alert(1)) |"), "the run name");
	cr_expect_null(strstr(md, "[x](javascript"), "a link made of a run name");
	cr_expect_not_null(strstr(md, "| \\*bold\\* \\`code\\` \\_em\\_ \\~\\~s\\~\\~ a\\|b &amp;amp; 1. x |"),
	                   "the check name");
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html = slurp(path);
	cr_expect_null(strstr(html, "<img "), "an <img> element made of a case name");
	cr_expect_not_null(strstr(html, "&lt;img src=x onerror=alert(1)&gt;"));
	free(md);
	free(html);
	teardown(dir);
}


/* Renders file:// url into png; returns the console lines Chromium logged (malloc'd). */
static char *render(const char *dir, const char *page, const char *png)
{
	char log[300];

	snprintf(log, sizeof(log), "%s/chromium.log", dir);
	/* --disable-dev-shm-usage: containers often give /dev/shm 64 MiB, too little for it;
	   7000 pixels: the whole page of the test, its last plot included (about 6400) */
	cr_assert_eq(sh("timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
	                "--screenshot='%s' --window-size=1200,7000 --enable-logging=stderr --v=0 "
	                "'file://%s' >'%s' 2>&1", png, page, log), 0, "chromium failed on '%s'", page);
	cr_assert_gt(file_size(png), 0, "no screenshot of '%s'", page);
	/* console messages: "[pid:tid:time:INFO:CONSOLE:line] "text", source: ..." */
	sh("grep ':CONSOLE' '%s' > '%s.console' || true", log, log);
	snprintf(log, sizeof(log), "%s/chromium.log.console", dir);
	return slurp(log);
}

Test(report, renders_in_chromium, .timeout = 300)
{
	char dir[64], page[300], png[300], blank_png[300], *console;
	long size, blank;
	FILE *f;

	if (!have("gnuplot"))
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox)");
	if (!have("chromium"))
		cr_skip_test("chromium is not installed (Debian: chromium)");
	setup(dir, sizeof(dir));
	cr_assert_eq(sh("'%s' report --db '%s/t.db' -o '%s/r' >/dev/null", LKS_BIN, dir, dir), 0);

	/* the detector sees a console error where there is one */
	snprintf(page, sizeof(page), "%s/error.html", dir);
	cr_assert_not_null(f = fopen(page, "w"));
	fputs("<!DOCTYPE html><html><body><p>x</p>"
	      "<script>console.error('planted')</script></body></html>\n", f);
	fclose(f);
	snprintf(png, sizeof(png), "%s/error.png", dir);
	console = render(dir, page, png);
	cr_assert_not_null(strstr(console, "planted"), "the console detector missed an error");
	free(console);

	/* a blank page of the same size: what 'nothing rendered' weighs as a PNG */
	snprintf(page, sizeof(page), "%s/blank.html", dir);
	cr_assert_not_null(f = fopen(page, "w"));
	fputs("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>blank</title></head>"
	      "<body></body></html>\n", f);
	fclose(f);
	snprintf(blank_png, sizeof(blank_png), "%s/blank.png", dir);
	free(render(dir, page, blank_png));
	blank = file_size(blank_png);

	snprintf(page, sizeof(page), "%s/r/index.html", dir);
	snprintf(png, sizeof(png), "%s/report.png", dir);
	console = render(dir, page, png);
	size = file_size(png);
	/* tables and nine plots make a PNG many times a blank one (about 610 KB against
	   39 KB measured); a page that shows only a line of text stays near 1.01x */
	cr_expect_gt(size, 4 * blank, "screenshot %ld bytes, blank page %ld: nothing drawn?",
	             size, blank);
	cr_expect_eq(strlen(console), 0, "console messages: %s", console);
	free(console);
	teardown(dir);
}

Test(report, tables_without_gnuplot)
{
	char dir[64], path[300], *html, *md, *tsv;

	setup(dir, sizeof(dir));
	cr_assert_eq(sh("'%s' run '%s/tiny.ini' '%s/plain.ini' --db '%s/t.db' --quiet --threads 1 "
	                ">/dev/null", LKS_BIN, dir, dir, dir), 1, "a second suite: a trend");
	/* no gnuplot on this PATH: the tables, a note, the trend's numbers, and exit 0 */
	cr_assert_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/r' >/dev/null",
	                LKS_BIN, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html = slurp(path);
	cr_expect_null(strstr(html, "<svg"));
	cr_expect_not_null(strstr(html, "plots need gnuplot"));
	cr_expect_not_null(strstr(html, "<td>tracks</td><td>close</td>"));
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md = slurp(path);
	cr_expect_not_null(strstr(md, "| tracks | close | fp8 vs bf16 | fail | 0 |"));
	cr_expect_not_null(strstr(md, "their numbers are in nightly\\_trend.tsv"), "%s", md);
	snprintf(path, sizeof(path), "%s/r/nightly_trend.tsv", dir);
	cr_assert_eq(sh("test -f '%s'", path), 0, "no nightly_trend.tsv without gnuplot");
	tsv = slurp(path);
	cr_expect_not_null(strstr(tsv, "\n1\t0\tplain/bf16\t"), "%s", tsv);
	cr_expect_not_null(strstr(tsv, "\n2\t0\tplain/bf16\t"), "%s", tsv);
	free(tsv);
	free(html);
	free(md);
	teardown(dir);
}

Test(report, bad_input)
{
	char dir[64], path[300], *err;
	FILE *f;

	setup(dir, sizeof(dir));
	cr_expect_eq(sh("'%s' report --help >/dev/null", LKS_BIN), 0);
	cr_expect_eq(sh("'%s' report --db '%s/t.db' 2>/dev/null", LKS_BIN, dir), 2, "no -o");
	cr_expect_eq(sh("'%s' report --db '%s/none.db' -o '%s/r' 2>/dev/null", LKS_BIN, dir, dir),
	             2, "a missing database");
	snprintf(path, sizeof(path), "%s/none.db", dir);
	cr_expect_eq(file_size(path), -1, "a report must not create a database");
	cr_expect_eq(sh("'%s' report --db '%s/t.db' --suite 99 -o '%s/r' 2>/dev/null", LKS_BIN,
	                dir, dir), 2, "an unknown suite");
	cr_expect_eq(sh("'%s' report --db '%s/t.db' --suite x -o '%s/r' 2>/dev/null", LKS_BIN,
	                dir, dir), 2, "a bad suite id");
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	cr_expect_eq(sh("'%s' report --db '%s' -o '%s/r' 2>/dev/null", LKS_BIN, path, dir), 2,
	             "not a lockstep database");
	snprintf(path, sizeof(path), "%s/empty.db", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fclose(f);
	cr_expect_eq(sh("'%s' report --db '%s' -o '%s/r' 2>/dev/null", LKS_BIN, path, dir), 2,
	             "an empty file");
	cr_expect_eq(file_size(path), 0, "the empty file was made a database");
	cr_expect_eq(sh("ls '%s' | grep -q empty.db-", dir), 1, "files appeared beside it");
	cr_expect_eq(sh("'%s' report --db '%s/t.db' --suite 1 -o '%s/r' >/dev/null", LKS_BIN,
	                dir, dir), 0, "suite 1 by its id");
	/* a template that is not a regular file is refused at once, by its name (a FIFO: the
	   report waited for a writer for ever); a template is the installation's (exit 3) */
	snprintf(path, sizeof(path), "%s/tpl", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/tpl/report.html", dir);
	cr_assert_eq(mkfifo(path, 0644), 0);
	cr_expect_eq(sh("timeout 30 '%s' report --db '%s/t.db' -o '%s/r' --templates '%s/tpl' "
	                "2>'%s/err'", LKS_BIN, dir, dir, dir, dir), 3, "a FIFO for a template");
	snprintf(path, sizeof(path), "%s/err", dir);
	err = slurp(path);
	cr_expect(strstr(err, "tpl/report.html'") && strstr(err, "a FIFO"), "%s", err);
	free(err);
	/* a gnuplot script missing: exit 3 naming it, no scratch path, no report (it exited 0,
	   each heatmap gnuplot's error naming a deleted scratch file) */
	if (have("gnuplot")) {
		cr_assert_eq(sh("cp -r '%s/reports' '%s/tpl2' && rm '%s/tpl2/heatmap.gp'", LKS_SRC, dir,
		                dir), 0);
		cr_expect_eq(sh("'%s' report --db '%s/t.db' -o '%s/r2' --templates '%s/tpl2' "
		                "2>'%s/err'", LKS_BIN, dir, dir, dir, dir), 3, "a template missing");
		err = slurp(path);
		cr_expect(strstr(err, "cannot read the report template '")
		          && strstr(err, "tpl2/heatmap.gp': No such file"), "%s", err);
		cr_expect_null(strstr(err, "scratch"), "%s", err);
		snprintf(path, sizeof(path), "%s/r2", dir);
		cr_expect_eq(file_size(path), -1, "a report written without its plots");
		free(err);
	}
	teardown(dir);
}

/* ---- GPU health and cuBLASLt algorithms ---- */

/* A one-run case run under env (NVML's library and the fake's settings) into dir/g.db;
   plans, when given, stored with its run as the cuda backend's runner would. */
static void run_gpu_case(char *dir, size_t size, const char *env, const lks_gemm_algo *plans,
                         int nplans)
{
	char path[300];
	lks_store *s;

	snprintf(dir, size, "/tmp/lks-test-report-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	write_text(dir, "plain.ini", plain_text);
	cr_assert_eq(sh("%s '%s' run '%s/plain.ini' --db '%s/g.db' --quiet --threads 1 >/dev/null",
	                env, LKS_BIN, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/g.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_gemm_plans(s, 1, plans, nplans), 0, "%s", lks_errmsg());
	lks_store_close(s);
}

/* A cpu run during which the node's GPU 1 saw uncorrected ECC errors and XID 79 (the
   fake NVML's FAKE_NVML_RISE): none of it is the run's, no finding is counted or said and
   no reading shown, the run is said to have used no GPU (a run's GPUs, their findings and
   readings: test_nvml_cli.c, nvml_cli/report_names_gpus_*); and the algorithms stored with
   the run, a fallback with its reason. In HTML, Markdown, and rendered by Chromium without
   a console message where it is installed. */
Test(report, gpu_algorithms_and_a_cpu_run_blamed_for_no_gpu, .timeout = 300)
{
	const lks_gemm_algo plans[] = {
		{ .role = LKS_GEMM_FWD, .M = 8, .N = 32, .K = 16, .a = LKS_E4M3, .b = LKS_E4M3,
		  .out = LKS_BF16, .scaling_a = LKS_SCALE_AXIS, .scaling_b = LKS_SCALE_AXIS,
		  .fast_accum = 1, .algo = 66, .tile = 22, .stages = 8, .splitk = 1, .gemms = 6 },
		{ .role = LKS_GEMM_WGRAD, .M = 32, .N = 16, .K = 8, .a = LKS_E5M2, .b = LKS_E4M3,
		  .out = LKS_F32, .scaling_a = LKS_SCALE_AXIS, .scaling_b = LKS_SCALE_AXIS,
		  .fallback = 1, .gemms = 2, .reason = "k * 1 bytes is not a multiple of 16" },
	};
	char dir[64], path[300], *html, *md, *console;

	run_gpu_case(dir, sizeof(dir), "LKS_NVML_LIB='" FAKE_NVML "' FAKE_NVML_DEVICES=2 "
	             "FAKE_NVML_RISE=1", plans, 2);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	cr_assert_eq(sh("PATH=/nonexistent '%s' report --db '%s/g.db' -o '%s/r' >'%s'", LKS_BIN,
	                dir, dir, path), 0);
	html = slurp(path);
	cr_expect_null(strstr(html, "GPU health"), "%s", html);
	free(html);
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md = slurp(path);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html = slurp(path);
	/* the summary: no check failed, no finding */
	cr_expect_not_null(strstr(md, "| plain | 1 | 0 | 0 | pass | 0 |"), "%s", md);
	cr_expect_null(strstr(md, "| gpu health |"), "%s", md);
	cr_expect_null(strstr(md, "temperature (C)"), "%s", md);
	cr_expect_not_null(strstr(md, "_run bf16 used no GPU: no GPU health is read for it_"),
	                   "%s", md);
	cr_expect_null(strstr(md, "NVML absent"), "%s", md);
	/* the algorithms, a fallback marked and its algorithm's fields empty */
	cr_expect_not_null(strstr(md, "### cuBLASLt algorithms"), "%s", md);
	cr_expect_not_null(strstr(md, "| bf16 | fwd | 8 32 16 | e4m3 e4m3 bf16 | axis axis "
	                              "| yes | 66 | 22 | 8 | 1 | 0 | 6 |  |"), "%s", md);
	cr_expect_not_null(strstr(md, "| bf16 | wgrad | 32 16 8 | e5m2 e4m3 f32 | axis axis "
	                              "| no |  |  |  |  |  | 2 | k \\* 1 bytes is not a multiple "
	                              "of 16 |"), "%s", md);
	cr_expect_not_null(strstr(html, "<tr class=\"bad\"><td>bf16</td><td>wgrad</td>"), "%s",
	                   html);
	free(md);
	free(html);
	if (have("chromium")) {
		char png[300];

		snprintf(path, sizeof(path), "%s/r/index.html", dir);
		snprintf(png, sizeof(png), "%s/gpu.png", dir);
		console = render(dir, path, png);
		cr_expect_eq(strlen(console), 0, "console messages: %s", console);
		free(console);
	}
	teardown(dir);
}

/* A cpu run without NVML: it used no GPU, which is what is said (NVML's absence is no
   concern of it); no finding, no readings, no algorithms table where the run has none. */
Test(report, gpu_health_of_a_cpu_run_says_it_used_none)
{
	char dir[64], path[300], *md, *html;

	run_gpu_case(dir, sizeof(dir), "LKS_NVML_LIB=/nonexistent/libnvidia-ml.so.1", NULL, 0);
	cr_assert_eq(sh("PATH=/nonexistent '%s' report --db '%s/g.db' -o '%s/r' >/dev/null",
	                LKS_BIN, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md = slurp(path);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html = slurp(path);
	cr_expect_not_null(strstr(md, "| plain | 1 | 0 | 0 | pass | 0 |"), "%s", md);
	cr_expect_not_null(strstr(md, "_run bf16 used no GPU: no GPU health is read for it_"),
	                   "%s", md);
	cr_expect_not_null(strstr(html, "<p class=\"note\">run bf16 used no GPU: no GPU health is "
	                                "read for it</p>"), "%s", html);
	cr_expect_null(strstr(md, "NVML absent"), "%s", md);
	cr_expect_null(strstr(md, "temperature (C)"), "%s", md);
	cr_expect_null(strstr(md, "cuBLASLt algorithms"), "%s", md);
	free(md);
	free(html);
	teardown(dir);
}

/* A case of two imported runs of 10000 steps (a long run's log): each plot is drawn from
   at most 3 points of each of 2000 runs of steps per series, not 10000, says so, and still
   shows a one-step spike (the loss axis reaches it) and the gap of a NaN. */
Test(report, a_long_run_is_drawn_from_its_lowest_and_highest_values)
{
	char dir[64], path[300], *html, *svg;
	FILE *f;

	if (!have("gnuplot"))
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox)");
	snprintf(dir, sizeof(dir), "/tmp/lks-test-report-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	for (int run = 0; run < 2; run++) {
		snprintf(path, sizeof(path), "%s/%c.jsonl", dir, "ab"[run]);
		cr_assert_not_null(f = fopen(path, "w"));
		for (int step = 1; step <= 10000; step++) {
			double loss = 2.0 + (step % 10) * 0.01 + (run && step == 8000 ? 0.5 : 0);

			if (step == 6543)
				fprintf(f, "{\"step\": %d, \"loss\": 57.5, \"grad_norm\": 1.0}\n", step);
			else if (step == 7000)
				fprintf(f, "{\"step\": %d, \"loss\": \"nan\", \"grad_norm\": 1.0}\n", step);
			else
				fprintf(f, "{\"step\": %d, \"loss\": %.2f, \"grad_norm\": 1.0}\n", step, loss);
		}
		fclose(f);
	}
	write_text(dir, "long.ini", "[case]\n[run a]\nimport = jsonl:a.jsonl\n[run b]\n"
	                            "import = jsonl:b.jsonl\n[check same]\nkind = bitwise\na = a\n"
	                            "b = b\nexpect = fail\nstep = 8000\n");
	cr_assert_eq(sh("'%s' run '%s/long.ini' --db '%s/l.db' --quiet >/dev/null", LKS_BIN, dir,
	                dir), 0);
	cr_assert_eq(sh("'%s' report --db '%s/l.db' -o '%s/r' >/dev/null", LKS_BIN, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html = slurp(path);
	cr_assert_not_null(strstr(html, "loss per step (mean over ranks), drawn as the lowest and "
	                          "highest value of each of 2000 runs of steps"));
	/* an imported run has no recipe: no FP8 run that "recorded no FP8 scale" */
	cr_assert_null(strstr(html, "FP8 run"), "an import taken for an FP8 run");
	/* its steps are its log's, 1 to 10000: the runs table said 10001 steps, first loss
	   blank (it read step 0) */
	cr_assert_not_null(strstr(html, "up to 10000</td><td>complete</td><td class=\"num\">2.01<"),
	                   "the runs table of an import");
	snprintf(path, sizeof(path), "%s/r/long=loss.svg", dir);
	svg = slurp(path);
	/* a point marker per point drawn: 2 series, 3 at most per run of steps */
	cr_assert_leq(count(svg, "<use xlink:href='#gpPt"), 2 * 3 * 2000, "%d points",
	              count(svg, "<use xlink:href='#gpPt"));
	cr_assert_geq(count(svg, "<use xlink:href='#gpPt"), 2 * 2000);
	cr_assert_not_null(strstr(svg, "> 50</text>"), "the spike of 57.5 is not on the axis");
	free(svg);
	free(html);
	teardown(dir);
}
