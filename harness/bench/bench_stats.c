/*
 * bench_stats.c: what every 'lockstep bench' comparison shares (bench.h): the sides of a
 * comparison timed in interleaved rounds, and the median of per-round ratios with their
 * spread.
 *
 * On a shared machine the load changes within seconds. Timing one side's repetitions, then
 * the other's (best of each), compares two different machines; timing them in rounds, the
 * sides back to back in each, gives one ratio per round taken under one load, and the
 * median of those ratios ignores the rounds a burst fell on. The spread says how far to
 * trust it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench/bench.h"
#include "kernels/err.h"

static int lks_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile of sorted s[0..n), interpolated between neighbours (as numpy's default). */
static double lks_quantile(const double *s, int n, double q)
{
	double pos = q * (n - 1);
	int i = (int)pos;

	return i + 1 < n ? s[i] + (pos - i) * (s[i + 1] - s[i]) : s[n - 1];
}

int lks_bench_spread_of(const double *v, int n, lks_bench_spread *out)
{
	double *s;

	out->n = n;
	out->median = out->q1 = out->q3 = out->min = out->max = NAN;
	if (n <= 0)
		return 0;
	if (!(s = malloc(sizeof(double) * (size_t)n)))
		return lks_err("out of memory");
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), lks_cmp_double);
	out->min = s[0];
	out->max = s[n - 1];
	out->q1 = lks_quantile(s, n, 0.25);
	out->median = lks_quantile(s, n, 0.5);
	out->q3 = lks_quantile(s, n, 0.75);
	free(s);
	return 0;
}

int lks_bench_rounds(lks_bench_rep_fn fn, void *arg, int nsides, int warmup, int rounds,
                     double *t)
{
	for (int r = -warmup; r < rounds; r++) {
		for (int s = 0; s < nsides; s++) {
			double sec = fn(arg, s, r);

			if (sec < 0)
				return -1;
			if (r >= 0)
				t[(size_t)r * nsides + s] = sec;
		}
	}
	return 0;
}

int lks_bench_per_round(const double *t, int nsides, int rounds, int a, int b,
                        lks_bench_spread *out)
{
	double *v = malloc(sizeof(double) * (size_t)(rounds > 0 ? rounds : 1));
	int rc;

	if (!v)
		return lks_err("out of memory");
	for (int r = 0; r < rounds; r++)
		v[r] = t[(size_t)r * nsides + a] / (b < 0 ? 1.0 : t[(size_t)r * nsides + b]);
	rc = lks_bench_spread_of(v, rounds, out);
	free(v);
	return rc;
}
