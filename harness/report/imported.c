/*
 * imported.c: the metrics of a case's imported runs in the report (DESIGN.md, Imported
 * runs): numerics, which the checks judge, and performance apart, which no verdict reads.
 * Per run and metric, numerics: the values stored, how many are NaN or infinite and the
 * first step of one, the last value; performance: its unit, the values stored and how many
 * are not finite, and the mean, least and largest of the finite ones ("none" where no value
 * is finite: a NaN throughput is no measurement to average).
 */
#include <math.h>
#include <stdlib.h>

#include "harness/report/report_impl.h"
#include "harness/import/import.h"

struct lks_mvals {
	long n, nonfinite;
	int first_nonfinite;      /* -1: none */
	double last, sum, lo, hi; /* sum, lo, hi: of the finite values */
	long nfinite;
};

/* Every metric's values of run t, in one pass over its rows in the order stored: (t->nm)
   of them, or NULL out of memory. */
static struct lks_mvals *lks_mvals_all(const lks_stored_run *t)
{
	struct lks_mvals *all = malloc(((size_t)t->nm + 1) * sizeof(*all));

	for (int m = 0; all && m < t->nm; m++)
		all[m] = (struct lks_mvals){ .first_nonfinite = -1, .lo = INFINITY, .hi = -INFINITY,
		                             .last = NAN };
	for (size_t i = 0; all && i < t->nmrows; i++) {
		struct lks_mvals *v = &all[t->mrows[i].m];
		double x = t->mrows[i].value;

		v->n++;
		v->last = x;
		if (!isfinite(x)) {
			if (v->nonfinite++ == 0)
				v->first_nonfinite = t->mrows[i].step;
			continue;
		}
		v->nfinite++;
		v->sum += x;
		v->lo = x < v->lo ? x : v->lo;
		v->hi = x > v->hi ? x : v->hi;
	}
	return all;
}

/* A statistic of a performance metric's finite values: "none" where none is finite. */
static void lks_perf_cell(char *buf, size_t size, double v, long nfinite)
{
	if (nfinite)
		snprintf(buf, size, "%.6g", v);
	else
		snprintf(buf, size, "none");
}

/* One table of the case's imported runs' metrics of kind; 1 when it had rows. */
static int lks_imported_table(struct lks_report *r, const char *case_name, lks_metric_kind kind)
{
	static const char *const num_heads[] = { "run", "metric", "values", "non-finite",
	                                         "first non-finite step", "last value" };
	static const char *const perf_heads[] = { "run", "metric", "unit", "values", "non-finite",
	                                          "mean", "least", "largest" };
	static const char *const cls[] = { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
	int n = 0;

	for (int i = 0; i < r->nruns; i++) {
		const lks_stored_run *t = &r->runs[i];
		struct lks_mvals *all;

		if (strcmp(t->case_name, case_name) != 0 || !t->nm)
			continue;
		if (!(all = lks_mvals_all(t))) {
			lks_para(r, 1, "out of memory for this run's metrics");
			continue;
		}
		for (int m = 0; m < t->nm; m++) {
			const lks_import_metric *row = lks_import_metric_find(t->mnames[m]);
			char c[6][48];
			const char *cells[8] = { t->run_name, t->mnames[m], c[0], c[1], c[2], c[3], c[4],
			                         c[5] };
			struct lks_mvals v = all[m];

			if (t->mkinds[m] != kind)
				continue;
			if (n++ == 0)
				lks_table_head(r, kind == LKS_METRIC_NUMERICS ? num_heads : perf_heads,
				               kind == LKS_METRIC_NUMERICS ? 6 : 8);
			if (kind == LKS_METRIC_NUMERICS) {
				snprintf(c[0], sizeof(c[0]), "%ld", v.n);
				snprintf(c[1], sizeof(c[1]), "%ld", v.nonfinite);
				c[2][0] = 0;  /* no step: an empty cell */
				if (v.first_nonfinite >= 0)
					snprintf(c[2], sizeof(c[2]), "%d", v.first_nonfinite);
				/* a log's decimal digits; a NaN spelled as the runs table spells it */
				cells[5] = lks_fmt_stored(c[3], sizeof(c[3]), "%.15g", v.last, 1);
				lks_row(r, v.nonfinite ? "bad" : NULL, cells, cls, 6);
			} else {
				snprintf(c[0], sizeof(c[0]), "%s", row ? row->unit : "");
				snprintf(c[1], sizeof(c[1]), "%ld", v.n);
				snprintf(c[2], sizeof(c[2]), "%ld", v.nonfinite);
				/* of the finite values; none finite: no number (it read nan, inf, -inf) */
				lks_perf_cell(c[3], sizeof(c[3]), v.sum / (double)v.nfinite, v.nfinite);
				lks_perf_cell(c[4], sizeof(c[4]), v.lo, v.nfinite);
				lks_perf_cell(c[5], sizeof(c[5]), v.hi, v.nfinite);
				lks_row(r, NULL, cells, cls, 8);
			}
		}
		free(all);
	}
	if (n)
		lks_table_end(r);
	return n > 0;
}

void lks_case_imported(struct lks_report *r, const char *case_name)
{
	int any = 0;

	for (int i = 0; i < r->nruns && !any; i++)
		any = !strcmp(r->runs[i].case_name, case_name) && r->runs[i].nm > 0;
	if (!any)
		return;
	lks_heading(r, 3, "imported metrics: numerics");
	lks_imported_table(r, case_name, LKS_METRIC_NUMERICS);
	lks_heading(r, 3, "imported metrics: performance (never in a verdict)");
	if (!lks_imported_table(r, case_name, LKS_METRIC_PERFORMANCE))
		lks_para(r, 1, "the logs reported no performance metric");
}
