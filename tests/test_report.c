/*
 * test_report.c: 'lockstep report' end to end, run as a user would. A tiny case (2 ranks,
 * 3 steps, bf16, fp8_rowwise with and without checkpointing, a close check with rtol 0
 * that fails on purpose, a bitwise check that checkpointing is neutral) and a plain one
 * (one bf16 run) are run into a database in a temporary folder; the report of it must hold
 * every plot as inline SVG, each under its anchor and heading, and no other (none of FP8
 * and no heatmap for the plain case), the failing check's row with its divergence, and the
 * same table in report.md. A divergence planted in the stored trace (as a faulty device
 * would make one) must be named by the heatmap of that pair and circled at its step and
 * tensor, also when a large case is drawn downsampled. The page is rendered in headless
 * Chromium: the screenshot must be well above the size of a blank page's screenshot of the
 * same size, and the console must show no message (the detector is shown to catch one on a
 * page that logs an error). Without gnuplot the tables are still written. Names that
 * would be markup come out as text in report.md and index.html. The report is swapped in
 * whole: killed with SIGKILL at 20 random moments, it leaves the previous report whole
 * every time and the next report removes what the killed ones left; a folder holding more
 * than a report is not replaced; where renameat2 cannot exchange (a preloaded library
 * makes it fail) the swap takes two renames, and a report left aside between them is put
 * back by the next report. Tests that need gnuplot or Chromium skip with the reason
 * when it is not installed (Debian: gnuplot-nox, chromium). The store's reads for the
 * report (report_query.h) return on real databases what the stored rows say: a suite's
 * command line and start, and the trend of a case over the latest suites that ran it, its
 * means recomputed here from the step rows; where they fail, they say so as every read of
 * the store does.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/report/report.h"
#include "harness/store/report_query.h"
#include "kernels/err.h"
#include "run_bin.h"

static const char case_text[] =
	"[case]\nsteps = 3\nseed = 7\nworld_size = 2\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
	"[run bf16]\nrecipe = bf16\n"
	"[run fp8]\nrecipe = fp8_rowwise\n"
	"[run fp8_ac]\nrecipe = fp8_rowwise\ncheckpoint = blocks\n"
	"[check tracks]\nkind = close\na = fp8\nb = bf16\nmetric = loss\n"
	"rtol = 0              ; fails on purpose: FP8 never equals BF16 exactly\n"
	"[check ac_neutral]\nkind = bitwise\na = fp8_ac\nb = fp8\n";

/* A second case of the same suite: one BF16 run, so no FP8 plot and no pair to compare. */
static const char plain_text[] =
	"[case]\nsteps = 2\nseed = 7\nworld_size = 1\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
	"[run bf16]\nrecipe = bf16\n";

/* Every plot of the report of both cases: its anchor and its heading as the page has them. */
static const struct {
	const char *id, *title;
} plots[] = {
	{ "tiny_loss", "loss per step (mean over ranks)" },
	{ "tiny_reldiff", "relative loss difference against &#39;bf16&#39; (an exact agreement is "
	                  "drawn at 1e-12)" },
	{ "tiny_gradnorm", "grad norm per step" },
	{ "tiny_fp8scale_fp8", "FP8 amax and scale of run &#39;fp8&#39; (rank 0)" },
	{ "tiny_fp8scale_fp8_ac", "FP8 amax and scale of run &#39;fp8_ac&#39; (rank 0)" },
	{ "tiny_heatmap_fp8-vs-bf16", "tensor error heatmap: &#39;fp8&#39; vs &#39;bf16&#39;" },
	{ "tiny_heatmap_fp8_ac-vs-fp8", "tensor error heatmap: &#39;fp8_ac&#39; vs &#39;fp8&#39;" },
	{ "plain_loss", "loss per step (mean over ranks)" },
	{ "plain_gradnorm", "grad norm per step" },
};

/* The exit status of a shell command line. */
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert_not_null(f, "cannot open '%s'", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	cr_assert_not_null(buf = calloc((size_t)n + 1, 1));
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int have(const char *prog)
{
	return sh("command -v %s >/dev/null 2>&1", prog) == 0;
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* A temporary folder with both cases run into t.db, one suite (exit 1: the rtol 0 check
   fails). */
static void setup(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/lks-test-report-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	write_text(dir, "tiny.ini", case_text);
	write_text(dir, "plain.ini", plain_text);
	cr_assert_eq(sh("'%s' run '%s/tiny.ini' '%s/plain.ini' --db '%s/t.db' --quiet --threads 1 "
	                ">/dev/null", LKS_BIN, dir, dir, dir), 1, "the run must store a failing check");
}

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

static void teardown(const char *dir)
{
	sh("rm -rf '%s'", dir);
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
	cr_expect_null(strstr(html, "plot-tiny_fp8scale_bf16"));
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
	cr_expect_not_null(strstr(md, "![grad norm per step](tiny_gradnorm.svg)"));
	/* names are escaped as Markdown (a '_' could start emphasis), file names are not */
	cr_expect_not_null(strstr(md, "![tensor error heatmap: 'fp8\\_ac' vs 'fp8']"
	                              "(tiny_heatmap_fp8_ac-vs-fp8.svg)\n\nStep (x) against tensor"));
	snprintf(path, sizeof(path), "%s/r/tiny_reldiff.svg", dir);
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
	plot = plot_of(html, "tiny_heatmap_fp8_ac-vs-fp8");
	cr_expect_not_null(strstr(plot, "No divergence"));
	cr_expect_not_null(strstr(plot, "<text>no divergence: equal in every traced value</text>"));
	cr_expect_null(strstr(plot, "first divergence"));
	free(plot);
	/* FP8 and BF16 agree until the output of the first quantized GEMM, at the first step */
	plot = plot_of(html, "tiny_heatmap_fp8-vs-bf16");
	cr_expect_not_null(strstr(plot, "<text>first divergence: step 0, blocks.0.mlp.up.out, rank 0 "
	                                "(l2) (circled)</text>"));
	free(plot);
	free(html);

	/* a divergence planted at step 1, rank 1, in a weight gradient: named and circled there */
	plant(dir, "tiny", "fp8_ac", "blocks.0.mlp.down.weight.grad", "backward", 1, 1);
	html = report_page(dir);
	plot = plot_of(html, "tiny_heatmap_fp8_ac-vs-fp8");
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
	plot = plot_of(html, "deep_heatmap_again-vs-fp8");
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
	plot = plot_of(html, "deep_heatmap_again-vs-fp8");
	snprintf(want, sizeof(want), "step 301, tensor %s, rank 0, field l2.", name);
	cr_expect_not_null(strstr(plot, want), "the caption does not say '%s'", want);
	circled(plot, 301 / xbin, (401 + xbin - 1) / xbin, row, sizeof(row));
	snprintf(want, sizeof(want), "%s +%d", name, ybin - 1);
	cr_expect_str_eq(row, want, "the circle is on the row of '%s'", row);
	/* inline in the page: a few tens of KB, not a rectangle per cell (about 1 MB) */
	cr_expect_lt(strlen(plot), 150000, "the heatmap is %zu bytes", strlen(plot));
	/* the FP8 plot of a long run is binned too, and says so */
	free(plot);
	plot = plot_of(html, "deep_fp8scale_fp8");
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

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Starts 'lockstep report' of dir/t.db into dir/r, with TMPDIR dir/tmp; its pid. */
static pid_t start_report(const char *dir)
{
	char db[300], out[300], tmp[300];
	pid_t pid;

	snprintf(db, sizeof(db), "%s/t.db", dir);
	snprintf(out, sizeof(out), "%s/r", dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		setenv("TMPDIR", tmp, 1);
		execl(LKS_BIN, LKS_BIN, "report", "--db", db, "-o", out, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* How many entries of dir begin with prefix; the name of the last one into last. */
static int entries_with(const char *dir, const char *prefix, char *last, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d, "cannot list '%s'", dir);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)) && strcmp(e->d_name, ".")
		    && strcmp(e->d_name, "..")) {
			n++;
			if (last)
				snprintf(last, size, "%s", e->d_name);
		}
	closedir(d);
	return n;
}

/* dir/r is the report whose page and Markdown are html0 and md0, whole: both files as they
   were, and every plot report.md shows there. */
static void expect_previous_report(const char *dir, const char *html0, const char *md0, int kill)
{
	char path[300], svg[200];
	char *html, *md;
	size_t n;

	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html = slurp(path);
	n = strlen(html);
	cr_expect(!strcmp(html, html0), "kill %d: index.html is not the previous page (%zu bytes, "
	          "ends '%s')", kill, n, html + (n > 20 ? n - 20 : 0));
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md = slurp(path);
	cr_expect(!strcmp(md, md0), "kill %d: report.md is not the previous one", kill);
	for (const char *p = md; (p = strstr(p, "](")); p++)
		if (sscanf(p, "](%199[^)])", svg) == 1) {
			snprintf(path, sizeof(path), "%s/r/%s", dir, svg);
			cr_expect_gt(file_size(path), 0, "kill %d: report.md shows '%s', which is missing",
			             kill, svg);
		}
	free(html);
	free(md);
}

/* 'lockstep report' killed (SIGKILL) at 20 random moments while it replaces a report: the
   previous report stays whole every time, and the next report removes what the killed
   ones left (beside the report, and nothing in TMPDIR). About 20 report runs: 10-30 s with
   gnuplot (each run draws nine plots), under a second without. */
Test(report, kill9_leaves_the_previous_report_whole, .timeout = 300)
{
	char dir[64], path[300], left[256], before[256] = "", *html0, *md0;
	double t0, full;
	int st, mid = 0, finished = 0;
	pid_t pid;

	setup(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/tmp", dir);
	cr_assert_eq(mkdir(path, 0777), 0);
	/* the previous report, and how long writing one takes */
	t0 = now();
	pid = start_report(dir);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	full = now() - t0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the first report failed");
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html0 = slurp(path);
	cr_assert(strlen(html0) > 7 && !strcmp(html0 + strlen(html0) - 8, "</html>\n"));
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md0 = slurp(path);

	srand(11);
	for (int i = 0; i < 20; i++) {
		pid = start_report(dir);
		/* anywhere from the start to the time a whole report took */
		usleep((useconds_t)(full * 1e6 * rand() / RAND_MAX));
		kill(pid, SIGKILL);
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		finished += WIFEXITED(st);
		/* a folder it was writing, not one an earlier kill left */
		if (entries_with(dir, ".r.new-", left, sizeof(left)) && strcmp(left, before))
			mid++;
		snprintf(before, sizeof(before), "%s", left);
		expect_previous_report(dir, html0, md0, i);
	}
	cr_log_info("20 kills of 'lockstep report' (%.2f s each): %d while it wrote its folder, "
	            "%d after it had finished", full, mid, finished);
	/* the moments were spread over the writing: some kills must have landed in it */
	cr_expect_gt(mid, 0, "no kill landed while a report was being written");

	pid = start_report(dir);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the report after the kills failed");
	expect_previous_report(dir, html0, md0, 20);
	cr_expect_eq(entries_with(dir, ".r.", NULL, 0), 0, "the killed reports' folders are still there");
	snprintf(path, sizeof(path), "%s/tmp", dir);
	cr_expect_eq(entries_with(path, "", NULL, 0), 0, "the killed reports left files in TMPDIR");
	free(html0);
	free(md0);
	teardown(dir);
}

/* A report replaces its folder whole, so only a folder that holds nothing but a report (or
   nothing) is replaced; a symlink to one leads there and stays a symlink. */
Test(report, replaces_only_a_report_folder)
{
	char dir[64], path[300];
	struct stat st;

	setup(dir, sizeof(dir));
	cr_assert_eq(sh("mkdir '%s/own' && echo keep > '%s/own/notes.txt'", dir, dir), 0);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/own' 2>/dev/null",
	                LKS_BIN, dir, dir), 2, "a folder holding a file no report writes");
	snprintf(path, sizeof(path), "%s/own/notes.txt", dir);
	cr_expect_eq(file_size(path), 5, "the folder's file was touched");
	snprintf(path, sizeof(path), "%s/own/index.html", dir);
	cr_expect_eq(file_size(path), -1);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/tiny.ini' 2>/dev/null",
	                LKS_BIN, dir, dir), 2, "a file");
	cr_expect_eq(sh("ls -a '%s' | grep -q '^\\.own\\.\\|^\\.tiny'", dir), 1, "a folder left behind");

	cr_assert_eq(sh("mkdir '%s/real' && ln -s real '%s/link'", dir, dir), 0);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/link' >/dev/null",
	                LKS_BIN, dir, dir), 0, "an empty folder through a symlink");
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/link' >/dev/null",
	                LKS_BIN, dir, dir), 0, "a report folder through a symlink");
	snprintf(path, sizeof(path), "%s/link", dir);
	cr_expect(lstat(path, &st) == 0 && S_ISLNK(st.st_mode), "the symlink was replaced");
	snprintf(path, sizeof(path), "%s/real/index.html", dir);
	cr_expect_gt(file_size(path), 0, "no report where the symlink leads");
	teardown(dir);
}

/* On read-only media (here: a folder and file made read-only, and for root a run as
   nobody) the report is written from the database, and nothing in its folder changes or
   appears. */
Test(report, reads_a_read_only_database)
{
	char dir[64], out[] = "/tmp/lks-test-report-out-XXXXXX", args[512], text[4096];
	char *before, *after;
	const char *who;

	setup(dir, sizeof(dir));
	cr_assert_not_null(mkdtemp(out));
	cr_assert_eq(chmod(out, 0777), 0);
	before = lks_dir_state(dir);
	who = lks_read_only(dir);
	snprintf(args, sizeof(args), "report --db '%s/t.db' -o '%s/r'", dir, out);
	cr_expect_eq(lks_run_bin(who, args, text, sizeof(text)), 0, "%s", text);
	cr_expect_not_null(strstr(text, "suite 1: 2 cases, 2 checks, 1 failed"), "%s", text);
	sh("chmod -R u+w '%s'", dir);
	after = lks_dir_state(dir);
	cr_expect_str_eq(after, before, "the database's folder changed");
	free(before);
	free(after);
	teardown(out);
	teardown(dir);
}

/* Where the file system cannot exchange two names (renameat2 made to fail by a preloaded
   library), the old report is renamed aside and the new one into place. A writer that died
   between those two renames left the old report aside and none in place: the next report
   puts it back first, so that it is there even when that report fails. */
Test(report, swaps_without_rename_exchange)
{
	char dir[64], path[300], args[512], out[4096], *html0, *html;

	setup(dir, sizeof(dir));
	cr_assert_eq(sh("'%s' report --db '%s/t.db' -o '%s/r' >/dev/null", LKS_BIN, dir, dir), 0);
	/* tables only this time: a page that differs from the one it replaces */
	snprintf(args, sizeof(args), "report --db '%s/t.db' -o '%s/r'", dir, dir);
	snprintf(path, sizeof(path), "PATH=/nonexistent LD_PRELOAD='%s'", LKS_NOEXCHANGE_LIB);
	cr_assert_eq(lks_run_bin(path, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "noexchange: renameat2 refused"), "the other way was not "
	                   "taken: %s", out);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html0 = slurp(path);
	cr_expect_not_null(strstr(html0, "plots need gnuplot"), "the report was not replaced");
	cr_expect_eq(sh("ls -a '%s' | grep -q '^\\.r\\.'", dir), 1, "a folder left beside it");
	cr_expect_eq(sh("ls '%s/r' | grep -q svg", dir), 1, "the old report's plots are still in it");

	/* killed between the renames; then a report that fails (no templates) */
	cr_assert_eq(sh("mv '%s/r' '%s/.r.old-0123abcd'", dir, dir), 0);
	cr_expect_eq(sh("'%s' report --db '%s/t.db' -o '%s/r' --templates '%s/none' 2>/dev/null",
	                LKS_BIN, dir, dir, dir), 3);
	html = slurp(path);
	cr_expect_str_eq(html, html0, "the report aside was not put back");
	cr_expect_eq(sh("ls -a '%s' | grep -q '^\\.r\\.'", dir), 1, "a folder left beside it");
	free(html0);
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
	char dir[64], path[300], *html, *md;

	setup(dir, sizeof(dir));
	/* no gnuplot on this PATH: the tables, a note, and exit 0 */
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
	free(html);
	free(md);
	teardown(dir);
}

Test(report, bad_input)
{
	char dir[64], path[300];
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
	teardown(dir);
}

/* ---- the store's reads for the report (harness/store/report_query.h) ---- */

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
	cr_expect_eq(lks_report_suite(s, "2", &id), LKS_REPORT_NO_SUITE);
	cr_expect_str_eq(lks_errmsg(), "no suite 2");
	lks_store_close(s);

	snprintf(path, sizeof(path), "%s/empty.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_expect_eq(lks_report_suite(s, "latest", &id), LKS_REPORT_NO_SUITE, "a database with "
	             "no suite");
	cr_expect_str_eq(lks_errmsg(), "no suite");
	lks_store_close(s);
	teardown(dir);
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
