/*
 * trend_plots.c: the trend plots of the "since last night" section: over the latest suites
 * up to the report's, per run (case/run), its final loss, the largest relative difference
 * of its loss against the same run of the suite before (over the steps both stored, and
 * only where both were made with the same settings: options, steps, world size, backend,
 * seed, combo, as night over night pairs runs), and its mean step time; a suite where some
 * run's fingerprint or settings differ from the suite before is marked on the x axis (its
 * label starred, a dashed line). Read from the runs and their
 * step rows, so a pruned suite (lockstep prune) plots as a whole one.
 */
#include <errno.h>
#include <math.h>

#include "harness/report/report_impl.h"
#include "harness/verify/nightly.h"
#include "kernels/err.h"

/* One run of the window. */
struct lks_tp_run {
	int64_t id, suite;
	char key[300];            /* case/run, a word for gnuplot (lks_safe_name) */
	char *fingerprint;
	char *settings;           /* what makes it the same training as another's */
	double *loss;             /* (nsteps) mean over the ranks; NaN: none */
	int nsteps;
	double step_time;         /* mean over every step row; NaN: none */
};

struct lks_tp {
	int64_t upto;
	struct lks_tp_run *runs;
	int n, cap;
	int64_t *suites;          /* the window's suites, ascending */
	int nsuites;
	int first;                /* the first suite plotted: 1 when suites[0] is there only to
	                             be compared with */
};

/* "options|steps|world size|backend|seed|combo", the options as night over night takes
   them (lks_nightly_settings: a planted fault is a change, not another training);
   malloc'd, NULL: out of memory */
static char *lks_tp_settings(const lks_run_info *i)
{
	char *o = lks_nightly_settings(i->options ? i->options : "");
	const char *b = i->backend ? i->backend : "", *c = i->combo ? i->combo : "";
	size_t n = o ? strlen(o) + strlen(b) + strlen(c) + 64 : 0;
	char *s = o ? malloc(n) : NULL;
	/* an import's steps and ranks are what its log held, not settings (nightly.c,
	   lks_same_settings): a log that stops early tonight is a change */
	int imported = !strncmp(b, "import:", 7);

	if (s)
		snprintf(s, n, "%s|%d|%d|%s|%llu|%s", o, imported ? 0 : i->steps,
		         imported ? 0 : i->world_size, b, (unsigned long long)i->seed, c);
	free(o);
	return s;
}

static int lks_tp_add(void *arg, const lks_run_rec *rec)
{
	struct lks_tp *t = arg;
	struct lks_tp_run *x;
	char c[128], n[128];

	if (rec->info.suite_id <= 0 || rec->info.suite_id > t->upto)
		return 0;
	if (t->n == t->cap) {
		void *p = realloc(t->runs, sizeof(*t->runs) * (size_t)(t->cap = t->cap * 2 + 32));

		if (!p)
			return lks_err("out of memory");
		t->runs = p;
	}
	x = &t->runs[t->n++];
	memset(x, 0, sizeof(*x));
	x->id = rec->run_id;
	x->suite = rec->info.suite_id;
	lks_safe_name(c, sizeof(c), rec->info.case_name);
	lks_safe_name(n, sizeof(n), rec->info.run_name);
	snprintf(x->key, sizeof(x->key), "%s/%s", c, n);
	x->fingerprint = strdup(rec->info.fingerprint ? rec->info.fingerprint : "");
	x->settings = lks_tp_settings(&rec->info);
	return x->fingerprint && x->settings ? 0 : lks_err("out of memory");
}

/* The run's loss per step (mean over ranks) and mean step time, from its step rows. */
static int lks_tp_steps(lks_store *s, struct lks_tp_run *x)
{
	lks_step_row *rows = NULL;
	int n = 0, *count = NULL, rc = -1, ntime = 0;
	double time = 0;

	x->step_time = NAN;
	if (lks_store_get_all_steps(s, x->id, &rows, &n))
		return -1;
	if (!n)
		return 0;
	x->nsteps = rows[n - 1].step + 1;  /* rows by (step, rank) */
	if (!(x->loss = calloc((size_t)x->nsteps, sizeof(double)))
	    || !(count = calloc((size_t)x->nsteps, sizeof(int)))) {
		lks_err("out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		x->loss[rows[i].step] += rows[i].loss;
		count[rows[i].step]++;
		if (!isnan(rows[i].step_time)) {
			time += rows[i].step_time;
			ntime++;
		}
	}
	for (int i = 0; i < x->nsteps; i++)
		x->loss[i] = count[i] ? x->loss[i] / count[i] : NAN;
	x->step_time = ntime ? time / ntime : NAN;
	rc = 0;
out:
	free(rows);
	free(count);
	return rc;
}

/* The latest run of key in suite; NULL: none. */
static const struct lks_tp_run *lks_tp_find(const struct lks_tp *t, const char *key,
                                            int64_t suite)
{
	const struct lks_tp_run *found = NULL;

	for (int i = 0; i < t->n; i++)
		if (t->runs[i].suite == suite && strcmp(t->runs[i].key, key) == 0)
			found = &t->runs[i];
	return found;
}

/* The largest |loss - loss(prev)| / |loss(prev)| over the steps both stored; NaN: no step
   to compare. */
static double lks_tp_reldiff(const struct lks_tp_run *a, const struct lks_tp_run *prev)
{
	int n = a->nsteps < prev->nsteps ? a->nsteps : prev->nsteps;
	double worst = NAN;

	for (int s = 0; s < n; s++) {
		double d = fabs(a->loss[s] - prev->loss[s]) / fabs(prev->loss[s]);

		if (isnan(a->loss[s]) != isnan(prev->loss[s]))
			d = INFINITY;  /* one side NaN: as far apart as can be */
		if (!isnan(d) && !(d <= worst))
			worst = d;
	}
	return worst;
}

enum lks_tp_kind { LKS_TP_LOSS, LKS_TP_RELDIFF, LKS_TP_TIME };

/* The value of run x (of suite j) in the plot of kind; NaN: none. */
static double lks_tp_value(const struct lks_tp *t, enum lks_tp_kind kind,
                           const struct lks_tp_run *x, int j)
{
	const struct lks_tp_run *prev;

	if (kind == LKS_TP_TIME)
		return x->step_time;
	if (kind == LKS_TP_LOSS)
		return x->nsteps ? x->loss[x->nsteps - 1] : NAN;
	if (j == 0 || !(prev = lks_tp_find(t, x->key, t->suites[j - 1]))
	    || strcmp(prev->settings, x->settings))  /* another training: not a change */
		return NAN;
	return lks_tp_reldiff(x, prev);
}

/* Whether some run of suite j has a fingerprint or settings other than its run of suite
   j - 1. */
static int lks_tp_fp_changed(const struct lks_tp *t, int j)
{
	for (int i = 0; j > 0 && i < t->n; i++) {
		const struct lks_tp_run *prev;

		if (t->runs[i].suite == t->suites[j] && (prev = lks_tp_find(t, t->runs[i].key,
		                                                            t->suites[j - 1]))
		    && (strcmp(prev->fingerprint, t->runs[i].fingerprint) != 0
		        || strcmp(prev->settings, t->runs[i].settings) != 0))
			return 1;
	}
	return 0;
}

/* The numbers behind the plots, a line per suite and run, beside report.md:
   nightly_trend.tsv, for a reader (a spreadsheet, a test) without gnuplot. */
static int lks_tp_tsv(const struct lks_report *r, const struct lks_tp *t)
{
	char path[LKS_REPORT_PATH];
	FILE *f;

	snprintf(path, sizeof(path), "%s/nightly_trend.tsv", r->dir);
	if (!(f = fopen(path, "w")))
		return lks_err("cannot write '%s': %s", path, strerror(errno));
	fputs("suite\tfingerprint_changed\trun\tfinal_loss\tmax_rel_loss_diff\tstep_time\n", f);
	for (int j = t->first; j < t->nsuites; j++)
		for (int i = 0; i < t->n; i++) {
			const struct lks_tp_run *x = &t->runs[i];

			if (x->suite != t->suites[j] || lks_tp_find(t, x->key, x->suite) != x)
				continue;
			fprintf(f, "%lld\t%d\t%s", (long long)x->suite, lks_tp_fp_changed(t, j), x->key);
			for (int k = LKS_TP_LOSS; k <= LKS_TP_TIME; k++)
				fprintf(f, "\t%.17g", lks_tp_value(t, (enum lks_tp_kind)k, x, j));
			fputc('\n', f);
		}
	return fclose(f) == 0 ? 0 : lks_err("cannot write '%s': %s", path, strerror(errno));
}

/* The window: the nsuites latest suites up to t->upto that hold a run (one more than are
   plotted, which the first plotted is compared with). */
static int lks_tp_window(struct lks_tp *t, int nsuites)
{
	int64_t last = INT64_MAX;

	if (!(t->suites = calloc((size_t)nsuites, sizeof(int64_t))))
		return lks_err("out of memory");
	while (t->nsuites < nsuites) {
		int64_t best = 0;

		for (int i = 0; i < t->n; i++)
			if (t->runs[i].suite < last && t->runs[i].suite > best)
				best = t->runs[i].suite;
		if (!best)
			break;
		t->suites[t->nsuites++] = last = best;
	}
	for (int i = 0; i < t->nsuites / 2; i++) {  /* ascending */
		int64_t v = t->suites[i];

		t->suites[i] = t->suites[t->nsuites - 1 - i];
		t->suites[t->nsuites - 1 - i] = v;
	}
	return 0;
}

/* The x axis: the suites' ids as labels, a star and a dashed line (a gnuplot array of
   positions) where the fingerprint changed. */
static void lks_tp_axis(const struct lks_tp *t, FILE *vars)
{
	int nfp = 0;

	fputs("set xtics (", vars);
	for (int j = t->first; j < t->nsuites; j++) {
		int fp = lks_tp_fp_changed(t, j);

		fprintf(vars, "%s\"%lld%s\" %d", j > t->first ? ", " : "", (long long)t->suites[j],
		        fp ? "*" : "", j - t->first);
		nfp += fp;
	}
	fprintf(vars, ")\nnfp = %d\n%s%d] = [", nfp, nfp ? "array fpx[" : "# fpx[", nfp);
	for (int j = t->first, k = 0; j < t->nsuites; j++)
		if (lks_tp_fp_changed(t, j))
			fprintf(vars, "%s%d", k++ ? ", " : "", j - t->first);
	fprintf(vars, "]\nnsuites = %d\n", t->nsuites - t->first);
}

/* One plot: a series per key, in the order the keys were first stored. */
static int lks_tp_plot(struct lks_report *r, const struct lks_tp *t, enum lks_tp_kind kind)
{
	static const char *const kinds[] = { "trend_loss", "trend_reldiff", "trend_time" };
	static const char *const titles[] = {
		"final loss per run over recent suites",
		"largest relative loss difference against the same run of the suite before",
		"mean step time per run over recent suites",
	};
	/* a plot of no value fails in gnuplot ("no valid points"): said instead */
	static const char *const none[] = {
		"no final loss to plot over recent suites: no run stored one",
		"no relative loss difference to plot over recent suites: no run has one of the "
		"same settings in the suite before",
		"no step time to plot over recent suites: no run stored one",
	};
	struct lks_plot_spec spec = { .kind = kinds[kind], .title = titles[kind], .height = 460,
	                              .caption = "x: suite id; * and a dashed line: a run's "
	                                         "fingerprint differs from the suite before" };
	struct lks_text data = { 0 }, names = { 0 }, vars = { 0 };
	const char *d, *nm, *v;
	int n = 0, rc = 0, finite = 0;

	if (lks_text_open(&data) || lks_text_open(&names) || lks_text_open(&vars)) {
		rc = lks_err("out of memory");
		goto out;
	}
	for (int i = 0; i < t->n; i++) {
		const struct lks_tp_run *x = &t->runs[i];
		/* a key's first run among the plotted suites */
		int new_key = !t->first || x->suite != t->suites[0];

		for (int k = 0; k < i && new_key; k++)
			new_key = strcmp(t->runs[k].key, x->key) != 0
			          || (t->first && t->runs[k].suite == t->suites[0]);
		if (!new_key)
			continue;
		fprintf(names.f, "%s%s", n++ ? " " : "", x->key);
		fprintf(data.f, "# %s\n", x->key);
		for (int j = t->first; j < t->nsuites; j++) {
			const struct lks_tp_run *y = lks_tp_find(t, x->key, t->suites[j]);
			double val = y ? lks_tp_value(t, kind, y, j) : NAN;

			/* an exact agreement at the floor of the log scale, which has no 0; a loss
			   gone NaN (or back) at its ceiling, as far apart as it draws */
			if (kind == LKS_TP_RELDIFF && val < LKS_REPORT_FLOOR)
				val = LKS_REPORT_FLOOR;
			if (kind == LKS_TP_RELDIFF && val > LKS_REPORT_CEILING)
				val = LKS_REPORT_CEILING;

			finite += isfinite(val);
			if (isfinite(val))
				fprintf(data.f, "%d %.17g\n", j - t->first, val);
			else
				fprintf(data.f, "%d NaN\n", j - t->first);
		}
		fputs("\n\n", data.f);
	}
	if (!(nm = lks_text_done(&names))) {
		rc = lks_err("out of memory");
		goto out;
	}
	fprintf(vars.f, "n = %d\nnames = \"%s\"\ntitle_text = '%s'\nfloor = %g\nceiling = %g\n", n,
	        nm, titles[kind], LKS_REPORT_FLOOR, LKS_REPORT_CEILING);
	lks_tp_axis(t, vars.f);
	if (!(d = lks_text_done(&data)) || !(v = lks_text_done(&vars)))
		rc = lks_err("out of memory");
	else if (n && finite)
		rc = lks_plot(r, NULL, &spec, d, v);
	else
		lks_para(r, 1, none[kind]);
out:
	lks_text_free(&data);
	lks_text_free(&names);
	lks_text_free(&vars);
	return rc;
}

int lks_trend_plots(struct lks_report *r, int nsuites, int have_gnuplot)
{
	struct lks_tp t = { .upto = r->suite };
	int rc = -1, keep = 0;

	if (lks_store_get_runs(r->s, lks_tp_add, &t) || lks_tp_window(&t, nsuites + 1))
		goto out;
	/* only the window's runs are kept, and read their steps */
	for (int i = 0; i < t.n; i++) {
		int in = 0;

		for (int j = 0; j < t.nsuites && !in; j++)
			in = t.runs[i].suite == t.suites[j];
		if (in)
			t.runs[keep++] = t.runs[i];
		else
			free(t.runs[i].fingerprint), free(t.runs[i].settings);
	}
	t.n = keep;
	for (int i = 0; i < t.n; i++)
		if (lks_tp_steps(r->s, &t.runs[i]))
			goto out;
	t.first = t.nsuites > nsuites;
	if (lks_tp_tsv(r, &t))
		goto out;
	if (t.nsuites - t.first < 2)  /* --trend 1 asks for one where the database has more */
		lks_para(r, 1, nsuites < 2 && t.first ? "one suite plotted (--trend 1): no trend to "
		                                        "plot" : "one suite only: no trend to plot yet");
	else if (!have_gnuplot)  /* the numbers need no gnuplot: a CI job reads them */
		lks_para(r, 1, "the trend plots need gnuplot, which was not found; their numbers "
		               "are in nightly_trend.tsv beside report.md");
	else
		for (int k = LKS_TP_LOSS; k <= LKS_TP_TIME; k++)
			if (lks_tp_plot(r, &t, (enum lks_tp_kind)k))
				goto out;
	rc = 0;
out:
	for (int i = 0; i < t.n; i++) {
		free(t.runs[i].fingerprint);
		free(t.runs[i].settings);
		free(t.runs[i].loss);
	}
	free(t.runs);
	free(t.suites);
	return rc;
}
