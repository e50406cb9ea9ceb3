/*
 * report.c: 'lockstep report' writes index.html and report.md of one suite (report.h): the
 * summary, the planted faults, and per case its runs, checks, GPU health, cuBLASLt
 * algorithms, plots, fingerprint keys and trend; the folder written beside the one asked
 * for and swapped in whole.
 *
 * Everything is read back from the store: the runs of the suite as stored runs (run.h) and
 * the check verdicts (suite.c), per-tensor stats for the FP8 and heatmap plots (stepped
 * through as the checks step through them: fp8_scales.c, heatmap.c), and for the trend the
 * runs of earlier suites (harness/store/report_query.h). Plots are made by gnuplot
 * (plot.c); the page is written in HTML and Markdown at once (page.c).
 *
 * The whole report is written into a new folder beside the one asked for, with the scratch
 * folder inside it, and swapped in when complete (harness/base/atomic_file.h): the report path
 * holds the previous report or the new one at every instant, and a killed writer's folder
 * is removed by the next report of that path. Only a folder that holds a report and
 * nothing else is replaced.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/base/atomic_file.h"
#include "harness/report/report_impl.h"
#include "harness/store/fingerprint.h"
#include "harness/store/report_query.h"
#include "harness/verify/walk.h"
#include "kernels/err.h"

/* ---- one case ---- */

/* A loss in a table: 7 significant digits, so that a loss near 0 (an imported 1.2e-07)
   does not read 0.000000. */
#define LKS_LOSS_FMT "%.7g"

static void lks_case_runs(struct lks_report *r, const char *case_name)
{
	static const char *const heads[] = { "run", "recipe", "options", "ranks", "steps",
	                                     "status", "first loss", "final loss" };
	static const char *const cls[] = { NULL, NULL, NULL, "num", "num", NULL, "num", "num" };

	lks_table_head(r, heads, 8);
	for (int i = 0; i < r->nruns; i++) {
		const lks_stored_run *run = &r->runs[i];
		char ws[16], ns[32], l0[32], l1[32];
		const char *cells[8];

		int first = 0;

		if (strcmp(run->case_name, case_name) != 0)
			continue;
		/* an import's steps are its log's: from 1 (or where it resumed), as diff says */
		while (first < run->nsteps - 1 && !lks_walk_step_stored(run, first))
			first++;
		snprintf(ws, sizeof(ws), "%d", run->W);
		lks_steps_text(ns, sizeof(ns), run->nsteps, lks_stored_run_steps_last(run), run->steps);
		cells[0] = run->run_name;
		cells[1] = run->recipe;
		cells[2] = run->options;
		cells[3] = ws;
		cells[4] = ns;
		cells[5] = run->status;
		cells[6] = lks_fmt_stored(l0, sizeof(l0), LKS_LOSS_FMT, lks_run_loss(run, first),
		                          run->nsteps && lks_walk_step_stored(run, first));
		cells[7] = lks_fmt_stored(l1, sizeof(l1), LKS_LOSS_FMT, lks_run_loss(run, run->nsteps - 1),
		                          run->nsteps && lks_walk_step_stored(run, run->nsteps - 1));
		lks_row(r, NULL, cells, cls, 8);
	}
	lks_table_end(r);
}

static void lks_value(char *buf, size_t size, const lks_check_rec *c, int b)
{
	buf[0] = 0;
	if (b && !strcmp(c->kind, "finite"))  /* one value found: no b (it showed nan or 0) */
		return;
	if (c->type == LKS_VALUE_REAL) {  /* a NaN spelled as the runs table spells it */
		const char *t = lks_fmt_stored(buf, size, "%.9g", b ? c->value_b : c->value_a, 1);

		if (t != buf)
			snprintf(buf, size, "%s", t);
	} else if (c->type == LKS_VALUE_INT && c->field && !strcmp(c->field, "hash"))
		snprintf(buf, size, "%016llx", (unsigned long long)(b ? c->ivalue_b : c->ivalue_a));
	else if (c->type == LKS_VALUE_INT)
		snprintf(buf, size, "%lld", (long long)(b ? c->ivalue_b : c->ivalue_a));
}

static void lks_case_checks(struct lks_report *r, const char *case_name)
{
	static const char *const heads[] = { "check", "kind", "runs", "verdict", "step", "rank",
	                                     "tensor", "field", "a", "b", "abs err", "rel err",
	                                     "ulp", "message" };
	static const char *const cls[] = { NULL, NULL, NULL, NULL, "num", "num", "mono", NULL,
	                                   "num", "num", "num", "num", "num", NULL };
	int any = 0;

	for (int i = 0; i < r->nchecks; i++) {
		const lks_check_rec *c = &r->checks[i].rec;
		const struct lks_rcheck *k = &r->checks[i];
		char runs[160], step[16], rank[16], va[48], vb[48], ae[32], re[32], ulp[24];
		/* a run not run (skipped) has no id: its name as the check stored it */
		const char *na = c->run_a ? lks_run_name(r, c->run_a) : k->name_a;
		const char *nb = c->run_b ? lks_run_name(r, c->run_b) : k->name_b;
		const char *cells[14], *vcls[14];
		int bad = !strcmp(c->verdict, "fail") || !strcmp(c->verdict, "unexpected_pass");

		if (strcmp(c->case_name, case_name) != 0)
			continue;
		if (!any++)
			lks_table_head(r, heads, 14);
		snprintf(runs, sizeof(runs), "%s%s%s", na, *nb ? " vs " : "", nb);
		snprintf(step, sizeof(step), c->step >= 0 ? "%d" : "", c->step);
		snprintf(rank, sizeof(rank), c->rank >= 0 ? "%d" : "", c->rank);
		lks_value(va, sizeof(va), c, 0);
		lks_value(vb, sizeof(vb), c, 1);
		snprintf(ulp, sizeof(ulp), c->ulp >= 0 ? "%lld" : "", (long long)c->ulp);
		cells[0] = c->check_name;
		cells[1] = c->kind;
		cells[2] = runs;
		cells[3] = c->verdict;
		cells[4] = step;
		cells[5] = rank;
		cells[6] = c->tensor ? c->tensor : "";
		cells[7] = c->field ? c->field : "";
		cells[8] = va;
		cells[9] = vb;
		cells[10] = lks_fmt(ae, sizeof(ae), "%.3g", c->abs_err);
		cells[11] = lks_fmt(re, sizeof(re), "%.3g", c->rel_err);
		cells[12] = ulp;
		cells[13] = !strcmp(c->verdict, "pass") ? "" : c->message ? c->message : "";
		memcpy(vcls, cls, sizeof(vcls));
		vcls[3] = c->verdict;  /* the verdict's colour */
		lks_row(r, bad ? "bad" : NULL, cells, vcls, 14);
	}
	if (any)
		lks_table_end(r);
	else
		lks_para(r, 1, "no check verdicts stored for this case");
}

/* ---- fingerprints: flat JSON objects of string values ---- */

/* The keys of run x's fingerprint that run y has not, or has with another value (only
   absent ones when absent_only: the others were listed from y's side), as two rows each:
   the first run's value, then the other's. */
static void lks_fp_rows(struct lks_report *r, const lks_stored_run *first,
                        const lks_stored_run *run, const lks_stored_run *x,
                        const lks_stored_run *y, int absent_only, int *any)
{
	static const char *const heads[] = { "key", "run", "value" };
	const char *p = x->fingerprint;
	char key[128], val[512], other[512];

	while (p && lks_fingerprint_json_next(&p, key, sizeof(key), val, sizeof(val))) {
		int has = lks_fingerprint_json_get(y->fingerprint, key, other, sizeof(other));
		const char *cells[3];

		if (has && (absent_only || !strcmp(val, other)))
			continue;
		if (!(*any)++)
			lks_table_head(r, heads, 3);
		cells[0] = key;
		cells[1] = first->run_name;
		cells[2] = x == first ? val : has ? other : "(absent)";
		lks_row(r, NULL, cells, NULL, 3);
		cells[1] = run->run_name;
		cells[2] = x == run ? val : has ? other : "(absent)";
		lks_row(r, "bad", cells, NULL, 3);
	}
}

static void lks_case_fingerprints(struct lks_report *r, const char *case_name)
{
	const lks_stored_run *first = NULL;
	int any = 0;

	/* every other run against the first: the keys either has that the other has not, or
	   with another value */
	for (int i = 0; i < r->nruns; i++) {
		const lks_stored_run *run = &r->runs[i];

		if (strcmp(run->case_name, case_name) || !*run->fingerprint)  /* "": none stored */
			continue;
		if (!first) {
			first = run;
			continue;
		}
		lks_fp_rows(r, first, run, run, first, 0, &any);
		lks_fp_rows(r, first, run, first, run, 1, &any);
	}
	if (any)
		lks_table_end(r);
	else
		lks_para(r, 1, first ? "every run of this case has the same fingerprint"
		                     : "no fingerprint stored");
}

/* ---- trend: final loss and mean step time of each run name over recent suites ---- */

/* The trend table as it is read: its rows are written as they come. */
struct lks_trend {
	struct lks_report *r;
	int any;
};

static int lks_trend_row(void *arg, const lks_trend_rec *t)
{
	static const char *const heads[] = { "run", "suite", "status", "steps", "final loss",
	                                     "mean step time (ms)" };
	static const char *const cls[] = { NULL, "num", NULL, "num", "num", "num" };
	struct lks_trend *x = arg;
	char suite[24], steps[32], loss[32], ms[32];
	const char *cells[6];

	if (!x->any++)
		lks_table_head(x->r, heads, 6);
	snprintf(suite, sizeof(suite), "%lld", (long long)t->suite_id);
	lks_steps_text(steps, sizeof(steps), t->nsteps, t->steps_last, t->steps);
	cells[0] = t->run_name;
	cells[1] = suite;
	cells[2] = t->status;
	cells[3] = steps;
	cells[4] = lks_fmt_stored(loss, sizeof(loss), LKS_LOSS_FMT, t->final_loss, t->final_stored);
	cells[5] = lks_fmt(ms, sizeof(ms), "%.2f", 1e3 * t->step_time);
	lks_row(x->r, NULL, cells, cls, 6);
	return 0;
}

static int lks_case_trend(struct lks_report *r, const char *case_name)
{
	struct lks_trend x = { .r = r };

	if (lks_store_get_trend(r->s, case_name, r->suite,
	                        r->o->trend_suites > 0 ? r->o->trend_suites : 5, lks_trend_row, &x))
		return -1;
	if (x.any)
		lks_table_end(r);
	return 0;
}

static int lks_case_section(struct lks_report *r, const char *case_name, int have_gnuplot)
{
	char title[200];

	snprintf(title, sizeof(title), "case %s", case_name);
	fprintf(r->html, "<section id=\"case-");
	lks_html(r->html, case_name);
	fprintf(r->html, "\">\n");
	lks_heading(r, 2, title);
	lks_heading(r, 3, "runs");
	lks_case_runs(r, case_name);
	lks_heading(r, 3, "checks");
	lks_case_checks(r, case_name);
	lks_case_imported(r, case_name);
	lks_heading(r, 3, "GPU health");
	if (lks_case_gpu_health(r, case_name) || lks_case_gemm_algos(r, case_name))
		return -1;
	if (have_gnuplot) {
		if (lks_case_plots(r, case_name))
			return -1;
	} else {
		lks_para(r, 1, "plots need gnuplot, which was not found (Debian: apt-get install "
		               "gnuplot-nox); the tables are complete without it");
	}
	if (have_gnuplot && (lks_case_fp8_plots(r, case_name) || lks_case_heatmaps(r, case_name)))
		return -1;
	lks_heading(r, 3, "fingerprint keys that differ between runs");
	lks_case_fingerprints(r, case_name);
	lks_heading(r, 3, "trend over recent suites");
	if (lks_case_trend(r, case_name))
		return -1;
	fputs("</section>\n", r->html);
	return 0;
}

/* The suite's command line and start, as the page's first line says them. */
struct lks_suite_line {
	char cmd[1024], started[64];
	int stopped;
};

static int lks_suite_line_fill(void *arg, const lks_suite_rec *rec)
{
	struct lks_suite_line *l = arg;

	snprintf(l->cmd, sizeof(l->cmd), "%s", rec->command);
	snprintf(l->started, sizeof(l->started), "%s", rec->started);
	l->stopped = rec->stopped;
	return 0;
}

static int lks_suite_header(struct lks_report *r, char *title, size_t size)
{
	struct lks_suite_line l = { "", "", 0 };
	char line[1200];

	if (lks_store_get_suite(r->s, r->suite, lks_suite_line_fill, &l))
		return -1;
	snprintf(title, size, LKS_REPORT_TITLE ": suite %lld", (long long)r->suite);
	if (lks_page_title(r, title))
		return -1;
	snprintf(line, sizeof(line), "command: %s — started %s", l.cmd, l.started);
	lks_para(r, 0, line);
	r->info->stopped = l.stopped;
	return 0;
}

/* A row per case: its runs, checks, failed checks, its verdict, and GPU health findings
   during its runs (gpu.c), which a reader sees beside the verdict (they do not change it).
   The verdict is "incomplete" where a run is not complete or no declared check has a
   verdict (suite.c): a killed night never reads as a pass; why, below the table. */
static int lks_overview(struct lks_report *r, const char **cases, int ncases)
{
	static const char *const heads[] = { "case", "runs", "checks", "failed", "verdict",
	                                     "gpu findings" };
	static const char *const cls[] = { NULL, "num", "num", "num", NULL, "num" };
	struct lks_text why = { 0 };
	const char *text;

	if (lks_text_open(&why))
		return -1;
	lks_heading(r, 2, "summary");
	lks_table_head(r, heads, 6);
	for (int c = 0; c < ncases; c++) {
		int nr = 0, nk = 0, nf = 0, ng = 0, inc;
		char a[16], b[16], f[16], g[16], reason[400];
		const char *cells[6], *vcls[6];

		for (int i = 0; i < r->nruns; i++) {
			int n;

			if (strcmp(r->runs[i].case_name, cases[c]))
				continue;
			nr++;
			if (lks_gpu_findings(r, &r->runs[i], &n)) {
				lks_text_free(&why);
				return -1;
			}
			ng += n;
		}
		for (int i = 0; i < r->nchecks; i++) {
			const char *v = r->checks[i].rec.verdict;

			if (strcmp(r->checks[i].rec.case_name, cases[c]))
				continue;
			nk++;
			nf += !strcmp(v, "fail") || !strcmp(v, "unexpected_pass");
		}
		inc = lks_case_incomplete(r, cases[c], nk, reason, sizeof(reason));
		if (inc)
			fprintf(why.f, "%scase %s incomplete: %s.", r->info->nincomplete ? " " : "",
			        cases[c], reason);
		r->info->nchecks += nk;
		r->info->nfailed += nf;
		r->info->nincomplete += inc;
		r->info->ngpu_findings += ng;
		snprintf(a, sizeof(a), "%d", nr);
		snprintf(b, sizeof(b), "%d", nk);
		snprintf(f, sizeof(f), "%d", nf);
		snprintf(g, sizeof(g), "%d", ng);
		cells[0] = cases[c];
		cells[1] = a;
		cells[2] = b;
		cells[3] = f;
		cells[4] = nf ? "fail" : inc ? "incomplete" : "pass";
		cells[5] = g;
		memcpy(vcls, cls, sizeof(vcls));
		vcls[4] = cells[4];
		lks_row(r, nf || inc || ng ? "bad" : NULL, cells, vcls, 6);
	}
	lks_table_end(r);
	if (r->info->stopped)  /* what it never reached is in no row: the suite is incomplete */
		fprintf(why.f, "%sThe command stopped before the suite's end (exit %d, see its "
		        "output): the cases after it were not run.", ftell(why.f) ? " " : "",
		        r->info->stopped);
	if (!(text = lks_text_done(&why))) {
		lks_text_free(&why);
		return lks_err("out of memory");
	}
	if (*text)
		lks_para(r, 0, text);
	lks_text_free(&why);
	return 0;
}

/* A check that was not evaluated: its runs not run (--run), or its kind not supported. */
static int lks_not_checked(const char *verdict)
{
	return !strcmp(verdict, "skipped") || !strcmp(verdict, "unsupported");
}

/* Where check k's fault was planted, in words ("every step" where it strikes each), and
   whether the check found it there: at the step, rank and tensor the spec names. */
static int lks_planted_where(const struct lks_rcheck *k, char *buf, size_t size)
{
	const lks_check_rec *c = &k->rec;

	if (!k->plant_known) {  /* no spec stored: where the check expects it */
		snprintf(buf, size, "%s", k->planted[0] ? k->planted : "anywhere");
		return 0;
	}
	char step[24] = "every step", rank[24] = "every rank";

	if (k->plant_step >= 0)
		snprintf(step, sizeof(step), "step %d", k->plant_step);
	if (k->plant_rank >= 0)
		snprintf(rank, sizeof(rank), "rank %d", k->plant_rank);
	snprintf(buf, size, "%s, %s%s%s", step, rank, k->plant_tensor[0] ? ", " : "",
	         k->plant_tensor);
	return (k->plant_step < 0 || k->plant_step == c->step)
	       && (k->plant_rank < 0 || k->plant_rank == c->rank)
	       && (!k->plant_tensor[0] || (c->tensor && !strcmp(k->plant_tensor, c->tensor)));
}

/* Whether detection still works on this runner: every check that proves a planted fault
   (expect = fail), where its run planted it (the inject spec) and where the check found
   it. Caught: found where the check expects (a fault that shows first elsewhere, as a
   stale gather at the group's first rank, is expected there), or where it was planted
   while the check expected another place: a wrong expectation, not a missed fault. Found
   elsewhere, or not found, is a failed check like any other; this table puts them side by
   side so that a reader sees the suite's power next to its verdicts. One that was not
   checked (skipped, unsupported) says nothing of that power: counted apart, not missed. */
static void lks_planted(struct lks_report *r)
{
	static const char *const heads[] = { "case", "check", "kind", "planted at", "found at",
	                                     "verdict" };
	static const char *const cls[] = { NULL, NULL, NULL, "mono", "mono", NULL };
	char line[200];
	int n = 0, caught = 0, unchecked = 0;

	lks_suite_planted(r);
	for (int i = 0; i < r->nchecks; i++) {
		const char *v = r->checks[i].rec.verdict;
		char where[300];

		if (!r->checks[i].expect_fail)
			continue;
		if (lks_not_checked(v))
			unchecked++;
		else
			n++;
		caught += !strcmp(v, "expected_fail")
		          || (!strcmp(v, "fail") && lks_planted_where(&r->checks[i], where, sizeof(where)));
	}
	if (!n && !unchecked)
		return;
	r->info->nplanted = n;
	r->info->ncaught = caught;
	r->info->nplanted_unchecked = unchecked;
	lks_heading(r, 2, "planted faults: detection on this runner");
	snprintf(line, sizeof(line), "%d of %d planted faults caught exactly where planted", caught, n);
	if (unchecked)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "; %d not checked "
		         "(skipped or unsupported), not counted", unchecked);
	lks_para(r, 0, line);
	lks_table_head(r, heads, 6);
	for (int i = 0; i < r->nchecks; i++) {
		const struct lks_rcheck *k = &r->checks[i];
		const char *v = k->rec.verdict, *cells[6], *vcls[6];
		int unchecked = lks_not_checked(v);
		char found[200], where[300], wrong[300];
		int there = lks_planted_where(k, where, sizeof(where));
		int ok = !strcmp(v, "expected_fail") || (!strcmp(v, "fail") && there);

		if (!k->expect_fail)
			continue;
		lks_place(found, sizeof(found), k->rec.step, k->rec.rank, k->rec.tensor);
		snprintf(wrong, sizeof(wrong), "caught where planted; the check expected %s",
		         k->planted[0] ? k->planted : "anywhere");
		cells[0] = k->rec.case_name;
		cells[1] = k->rec.check_name;
		cells[2] = k->rec.kind;
		cells[3] = where;
		cells[4] = found[0] ? found : unchecked ? "not checked" : "not found";
		cells[5] = !strcmp(v, "expected_fail") ? "caught" : ok ? wrong
		         : !strcmp(v, "unexpected_pass") ? "missed" : !strcmp(v, "fail") ? "found elsewhere"
		         : v;
		memcpy(vcls, cls, sizeof(vcls));
		vcls[5] = ok ? "pass" : unchecked ? v : "fail";
		lks_row(r, ok || unchecked ? NULL : "bad", cells, vcls, 6);
	}
	lks_table_end(r);
}

/* A suite found: counted. */
static int lks_suite_found(void *arg, const lks_suite_rec *rec)
{
	(void)rec;
	++*(int *)arg;
	return 0;
}

int lks_report_suite(lks_store *s, const char *which, int64_t *suite_id)
{
	int64_t want = 0;
	int found = 0;

	if (strcmp(which, "latest") != 0) {
		char *end;
		long long v = strtoll(which, &end, 10);

		if (end == which || *end || v <= 0) {
			lks_err("suite '%s' is neither 'latest' nor a suite id", which);
			return LKS_E_BAD_INPUT;
		}
		want = v;
	}
	if (!want) {
		if (lks_store_last_suite(s, &want))
			return -1;
		*suite_id = want;  /* 0: none, a page of the latest screen */
		return 0;
	}
	if (lks_store_get_suite(s, want, lks_suite_found, &found))
		return -1;
	if (!found)
		return lks_err("no suite %lld", (long long)want), LKS_E_BAD_INPUT;
	*suite_id = want;
	return 0;
}

/* A database with screens and no suite: its latest screen alone. */
static int lks_screen_page(struct lks_report *r)
{
	static const char title[] = LKS_REPORT_TITLE ": node screen";

	if (lks_page_title(r, title) || lks_screen_section(r, NULL))
		return -1;
	if (!r->info->screen_id)
		return lks_err("the database holds no suite and no screen"), LKS_E_BAD_INPUT;
	return lks_template(r, title, 1);
}

static int lks_report_body(struct lks_report *r, int have_gnuplot)
{
	struct lks_suite_line next = { "", "", 0 };
	const char **cases = NULL;
	char title[1200];
	int ncases = 0, rc = -1;

	if (!r->suite)
		return lks_screen_page(r);
	if (lks_suite_load(r))
		return -1;
	if (lks_case_names(r, &cases, &ncases) || lks_suite_header(r, title, sizeof(title)))
		goto out;
	r->info->ncases = ncases;
	if (!have_gnuplot)
		lks_para(r, 1, "plots need gnuplot, which was not found: this report has the tables only");
	if (lks_since_section(r, have_gnuplot) || lks_overview(r, cases, ncases))
		goto out;
	lks_planted(r);
	/* the night's screen: the latest kept before the next suite started (suite ids only
	   grow, and suites are never deleted) */
	if (lks_store_get_suite(r->s, r->suite + 1, lks_suite_line_fill, &next)
	    || lks_screen_section(r, next.started[0] ? next.started : NULL))
		goto out;
	for (int c = 0; c < ncases; c++)
		if (lks_case_section(r, cases[c], have_gnuplot))
			goto out;
	rc = lks_template(r, title, 1);
out:
	free(cases);
	return rc;
}

/* A message naming a file of the folder being written names it where it was to go: the
   hidden temporary folder is gone with the error. */
static void lks_report_err_at(const char *tmp, const char *dir)
{
	char *m = strdup(lks_errmsg()), *p = m ? strstr(m, tmp) : NULL;

	if (p)
		lks_err("%.*s%s%s", (int)(p - m), m, dir, p + strlen(tmp));
	free(m);
}

int lks_report_write(lks_store *s, int64_t suite_id, const char *dir,
                     const lks_report_opts *o, lks_report_info *info)
{
	struct lks_report r = { .s = s, .suite = suite_id, .o = o, .info = info };
	char target[PATH_MAX], path[LKS_REPORT_PATH];
	lks_atomic a;
	int have, rc;

	memset(info, 0, sizeof(*info));
	if ((rc = lks_report_target(dir, target, sizeof(target))) != 0
	    || (rc = lks_atomic_dir_open(&a, target)) != 0)
		return rc;
	rc = -1;
	r.dir = a.tmp;
	snprintf(r.tmp, sizeof(r.tmp), "%s/.scratch", a.tmp);
	if (mkdir(r.tmp, 0777) != 0) {
		lks_err("cannot make the folder '%s': %s", r.tmp, strerror(errno));
		goto out;
	}
	/* 'gnuplot --version' exits 0 where gnuplot is; 127: it could not be started */
	have = lks_gnuplot(&r, "--version") == 0;
	info->have_gnuplot = have;
	if (lks_templates_check(&r, have))  /* without gnuplot no script is read */
		goto out;
	snprintf(path, sizeof(path), "%s/index.html", r.dir);
	if (!(r.html = fopen(path, "w"))) {
		lks_err("cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/report.md", r.dir);
	if (!(r.md = fopen(path, "w"))) {
		lks_err("cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	rc = lks_report_body(&r, have);
out:
	if (r.html && fclose(r.html) != 0 && rc == 0)
		rc = lks_err("cannot write '%s/index.html': %s", dir, strerror(errno));
	if (r.md && fclose(r.md) != 0 && rc == 0)
		rc = lks_err("cannot write '%s/report.md': %s", dir, strerror(errno));
	if (rc)
		lks_report_err_at(a.tmp, dir);
	lks_atomic_remove(r.tmp);
	lks_suite_release(&r);
	if (rc == 0)
		return lks_atomic_dir_commit(&a);
	lks_atomic_dir_abort(&a);
	return rc;
}
