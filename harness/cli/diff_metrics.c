/*
 * diff_metrics.c: 'lockstep diff' of imported runs (cmd_diff.c), whose traces are named
 * metrics per (step, rank) rather than tensors (run.h). Two sections, one per kind of
 * metric: numerics (the verdict is theirs, found by the walker as for any run) with per
 * metric the values compared, how many differ, the first step that differs and the largest
 * relative error; and performance (never in a verdict) with per metric the mean of each
 * run and their ratio.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/cli/diff_metrics.h"
#include "harness/import/import.h"

/* What one metric name gives over both runs. */
struct lks_mstat {
	long n, ndiff;            /* (step, rank) values both have; of them, not the same bits */
	int first;                /* the first step that differs; -1: none */
	double rel_max;           /* the largest |a - b| / |b| (NaN against a number: inf) */
	double sum_a, sum_b;      /* of the finite values each run has, for the means */
	long n_a, n_b;
};

static void lks_mstat_of(const lks_stored_run *a, const lks_stored_run *b, const char *name,
                         struct lks_mstat *st)
{
	int ma = lks_stored_run_metric_find(a, name), mb = lks_stored_run_metric_find(b, name);
	int nsteps = a->nsteps > b->nsteps ? a->nsteps : b->nsteps, W = a->W > b->W ? a->W : b->W;

	memset(st, 0, sizeof(*st));
	st->first = -1;
	for (int step = 0; step < nsteps; step++)
		for (int r = 0; r < W; r++) {
			const double *va = ma >= 0 ? lks_stored_run_metric(a, step, r, ma) : NULL;
			const double *vb = mb >= 0 ? lks_stored_run_metric(b, step, r, mb) : NULL;

			if (va && isfinite(*va)) {
				st->sum_a += *va;
				st->n_a++;
			}
			if (vb && isfinite(*vb)) {
				st->sum_b += *vb;
				st->n_b++;
			}
			if (!va || !vb)
				continue;
			st->n++;
			if (memcmp(va, vb, sizeof(*va)) == 0 || (isnan(*va) && isnan(*vb)))
				continue;
			st->ndiff++;
			if (st->first < 0)
				st->first = step;
			{
				double rel = isnan(*va) || isnan(*vb) ? INFINITY
				             : *va == *vb ? 0.0 : fabs(*va - *vb) / fabs(*vb);

				if (rel > st->rel_max || isnan(st->rel_max))
					st->rel_max = rel;
			}
		}
}

/* Calls fn for each metric name of a, then of b not in a, whose kind is kind. */
static void lks_each_metric(const lks_stored_run *a, const lks_stored_run *b,
                            lks_metric_kind kind, void (*fn)(void *arg, const char *name),
                            void *arg)
{
	for (int side = 0; side < 2; side++) {
		const lks_stored_run *r = side ? b : a;

		for (int i = 0; i < r->nm; i++)
			if (r->mkinds[i] == kind && !(side && lks_stored_run_metric_find(a, r->mnames[i]) >= 0))
				fn(arg, r->mnames[i]);
	}
}

struct lks_diff_pair {
	const lks_stored_run *a, *b;
};

static void lks_print_numerics(void *arg, const char *name)
{
	const struct lks_diff_pair *p = arg;
	struct lks_mstat st;
	char first[16] = "-";

	lks_mstat_of(p->a, p->b, name, &st);
	if (st.first >= 0)
		snprintf(first, sizeof(first), "%d", st.first);
	printf("  %-22s %8ld %8ld  %-10s %.3g\n", name, st.n, st.ndiff, first, st.rel_max);
}

/* A mean of n values (sum), or "-" where the run has none finite (not measured: torchtitan's
   "mfu: N/A", or a metric the other run's log alone has). */
static const char *lks_mean_cell(double sum, long n, char *buf, size_t size)
{
	if (!n)
		return "-";
	snprintf(buf, size, "%.6g", sum / (double)n);
	return buf;
}

static void lks_print_performance(void *arg, const char *name)
{
	const struct lks_diff_pair *p = arg;
	struct lks_mstat st;
	char ca[32], cb[32], cr[32] = "-";

	lks_mstat_of(p->a, p->b, name, &st);
	if (st.n_a && st.n_b)
		snprintf(cr, sizeof(cr), "%.4g",
		         (st.sum_b / (double)st.n_b) / (st.sum_a / (double)st.n_a));
	printf("  %-22s %-14s %-14s %s\n", name, lks_mean_cell(st.sum_a, st.n_a, ca, sizeof(ca)),
	       lks_mean_cell(st.sum_b, st.n_b, cb, sizeof(cb)), cr);
}

void lks_diff_metrics(const lks_stored_run *a, const lks_stored_run *b)
{
	struct lks_diff_pair p = { a, b };

	printf("\nnumerics (the verdict; bit for bit, as the logs wrote them; rel = |a - b| / |b|):\n"
	       "  %-22s %8s %8s  %-10s %s\n", "metric", "values", "differ", "first", "rel max");
	lks_each_metric(a, b, LKS_METRIC_NUMERICS, lks_print_numerics, &p);
	printf("\nperformance (never in a verdict; means of the finite values, '-' none):\n"
	       "  %-22s %-14s %-14s %s\n", "metric", "a", "b", "b / a");
	lks_each_metric(a, b, LKS_METRIC_PERFORMANCE, lks_print_performance, &p);
}
