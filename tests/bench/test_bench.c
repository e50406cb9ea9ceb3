/*
 * test_bench.c: what the benchmarks share (harness/bench/bench_stats.c), on given numbers and a
 * stand-in for the timed sides: the median and spread of a sample, the order in which
 * interleaved rounds run the sides, and the per-round ratios. Nothing here is timed.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "harness/bench/bench.h"

Test(bench, spread_of_odd_and_even_samples)
{
	/* quartiles interpolated between order statistics: of 1 2 3, q1 = 1 + 0.5 * (2 - 1);
	   of 1 2 3 4, q1 = 1 + 0.75 * (2 - 1) */
	static const struct {
		double v[4];
		int n;
		double median, q1, q3, min, max;
	} cases[] = {
		{ { 3.0, 1.0, 2.0 }, 3, 2.0, 1.5, 2.5, 1.0, 3.0 },
		{ { 4.0, 1.0, 3.0, 2.0 }, 4, 2.5, 1.75, 3.25, 1.0, 4.0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lks_bench_spread s;

		cr_assert_eq(lks_bench_spread_of(cases[i].v, cases[i].n, &s), 0);
		cr_assert_eq(s.n, cases[i].n);
		cr_assert(s.median == cases[i].median && s.q1 == cases[i].q1 && s.q3 == cases[i].q3
		          && s.min == cases[i].min && s.max == cases[i].max,
		          "case %zu: median %g q1 %g q3 %g min %g max %g", i, s.median, s.q1, s.q3,
		          s.min, s.max);
		cr_assert_eq(cases[i].v[0], i ? 4.0 : 3.0, "the sample is left as it was");
	}
}

Test(bench, spread_of_one_and_of_none)
{
	const double one[] = { 0.5 };
	lks_bench_spread s;

	cr_assert_eq(lks_bench_spread_of(one, 1, &s), 0);
	cr_assert(s.n == 1 && s.median == 0.5 && s.q1 == 0.5 && s.q3 == 0.5 && s.min == 0.5
	          && s.max == 0.5);
	cr_assert_eq(lks_bench_spread_of(one, 0, &s), 0);
	cr_assert_eq(s.n, 0);
	cr_assert(isnan(s.median) && isnan(s.q1) && isnan(s.max));
}

Test(bench, an_outlier_moves_the_median_little)
{
	/* one round that a burst of load fell on: the best-of or the mean would follow it */
	const double v[] = { 1.00, 1.02, 0.98, 5.00, 1.01 };
	lks_bench_spread s;

	cr_assert_eq(lks_bench_spread_of(v, 5, &s), 0);
	cr_assert_eq(s.median, 1.01);
	cr_assert_eq(s.max, 5.00);
}

/* A stand-in for the timed sides: records the order of the calls and returns a time made
   of the side and the round. */
struct fake {
	int calls[64][2];
	int n;
	int fail_at;               /* the call that fails, or -1 */
};

static double fake_side(void *arg, int side, int round)
{
	struct fake *f = arg;

	f->calls[f->n][0] = side;
	f->calls[f->n][1] = round;
	if (f->n++ == f->fail_at)
		return -1.0;
	return (side + 1) * 10.0 + round;
}

Test(bench, rounds_interleave_the_sides_after_the_warmup)
{
	struct fake f = { .fail_at = -1 };
	double t[4 * 3];

	cr_assert_eq(lks_bench_rounds(fake_side, &f, 3, 1, 4, t), 0);
	cr_assert_eq(f.n, 3 * 5, "one warm-up round and four timed ones, three sides each");
	for (int i = 0; i < f.n; i++) {
		cr_assert_eq(f.calls[i][0], i % 3, "call %d: side %d", i, f.calls[i][0]);
		cr_assert_eq(f.calls[i][1], i / 3 - 1, "call %d: round %d", i, f.calls[i][1]);
	}
	for (int r = 0; r < 4; r++)
		for (int s = 0; s < 3; s++)
			cr_assert_eq(t[r * 3 + s], (s + 1) * 10.0 + r, "warm-up times are not kept");
}

Test(bench, rounds_stop_at_a_failure)
{
	struct fake f = { .fail_at = 2 };
	double t[2 * 2];

	cr_assert_eq(lks_bench_rounds(fake_side, &f, 2, 0, 2, t), -1);
	cr_assert_eq(f.n, 3, "no call after the failing one");
}

Test(bench, per_round_ratios_and_one_side)
{
	/* three rounds of two sides: the peer's time first, then ours */
	const double t[] = { 2.0, 1.0,   6.0, 2.0,   1.0, 1.0 };
	lks_bench_spread s;

	cr_assert_eq(lks_bench_per_round(t, 2, 3, 0, 1, &s), 0);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(s.median, 2.0, "ratios 2, 3 and 1");
	cr_assert_eq(s.min, 1.0);
	cr_assert_eq(s.max, 3.0);
	cr_assert_eq(lks_bench_per_round(t, 2, 3, 1, -1, &s), 0);
	cr_assert_eq(s.median, 1.0, "side 1 alone: 1, 2 and 1");
	cr_assert_eq(s.max, 2.0);
}
