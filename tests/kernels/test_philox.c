/*
 * test_philox.c: lockstep's counter-based generator is Random123's Philox4x32-10 (checked
 * against the library's published known-answer vectors), and a value depends on
 * (seed, stream, index) only.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "kernels/philox.h"

/* Random123's kat_vectors: counter (4 words), key (2 words) -> output (4 words). */
static const uint32_t kat[3][10] = {
	{ 0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 },
	{ 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
	  0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd },
	{ 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
	  0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 },
};

Test(philox, known_answers)
{
	for (int t = 0; t < 3; t++) {
		/* our mapping: counter = (q lo, q hi, stream, 0), key = (seed lo, seed hi);
		   the KAT counters have a non-zero fourth word, so call Random123 directly for
		   those and through lks_philox_block where the mapping can express them */
		philox4x32_ctr_t ctr = { { kat[t][0], kat[t][1], kat[t][2], kat[t][3] } };
		philox4x32_key_t key = { { kat[t][4], kat[t][5] } };
		philox4x32_ctr_t r = philox4x32(ctr, key);

		for (int i = 0; i < 4; i++)
			cr_assert_eq(r.v[i], kat[t][6 + i], "vector %d word %d", t, i);
	}
	/* the all-zero vector through lockstep's own mapping */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(lks_philox_u32(0, 0, (uint64_t)i), kat[0][6 + i]);
}

Test(philox, mapping_of_seed_stream_index)
{
	uint64_t seed = 0x0123456789abcdefull;
	uint64_t q = 0x00000007fffffff3ull;  /* a block index above 2^32 */
	philox4x32_ctr_t ctr = { { (uint32_t)q, (uint32_t)(q >> 32), 5, 0 } };
	philox4x32_key_t key = { { 0x89abcdefu, 0x01234567u } };
	philox4x32_ctr_t r = philox4x32(ctr, key);

	for (int lane = 0; lane < 4; lane++)
		cr_assert_eq(lks_philox_u32(seed, 5, 4 * q + (uint64_t)lane), r.v[lane]);
}

Test(philox, streams_and_seeds_differ)
{
	int same_stream = 0, same_seed = 0;

	for (uint64_t i = 0; i < 1000; i++) {
		same_stream += lks_philox_u32(1, 0, i) == lks_philox_u32(1, 1, i);
		same_seed += lks_philox_u32(1, 0, i) == lks_philox_u32(2, 0, i);
	}
	/* a 32-bit collision among 1000 pairs has probability ~2e-7 */
	cr_assert_eq(same_stream, 0);
	cr_assert_eq(same_seed, 0);
}

Test(philox, uniform_is_exact_and_in_range)
{
	double sum = 0.0;
	const int n = 100000;

	for (int i = 0; i < n; i++) {
		float u = lks_philox_uniform(42, 3, (uint64_t)i);
		uint32_t k = lks_philox_u32(42, 3, (uint64_t)i) >> 8;

		cr_assert(u >= 0.0f && u < 1.0f);
		cr_assert_eq(u, ldexpf((float)k, -24));
		sum += u;
	}
	/* mean of n uniforms: standard error sqrt(1/12/n) = 9.1e-4; 5 sigma */
	cr_assert(fabs(sum / n - 0.5) < 5 * 9.1e-4, "mean %g", sum / n);
}

Test(philox, normal_moments_and_exactness)
{
	double s1 = 0.0, s2 = 0.0;
	const int n = 200000;

	for (int i = 0; i < n; i++) {
		philox4x32_ctr_t b = lks_philox_block(9, 1, (uint64_t)i);
		double sum = 0.0;
		float z = lks_philox_normal(9, 1, (uint64_t)i);

		/* the float sum is exact, so it equals the double sum of the four parts */
		for (int k = 0; k < 4; k++)
			sum += ldexp((double)(b.v[k] >> 10), -22);
		cr_assert_eq(z, (float)(sum - 2.0) * 1.7320508075688772f);
		cr_assert(fabsf(z) <= 2.0f * 1.7320508075688772f + 1e-6f);
		s1 += z;
		s2 += (double)z * z;
	}
	/* mean 0 with standard error 1/sqrt(n) = 2.2e-3 (5 sigma); variance 1 with standard
	   error ~sqrt(2/n)*0.95 = 3e-3 (5 sigma, Irwin-Hall's kurtosis is below normal's) */
	cr_assert(fabs(s1 / n) < 5 * 2.3e-3, "mean %g", s1 / n);
	cr_assert(fabs(s2 / n - 1.0) < 5 * 3.2e-3, "variance %g", s2 / n);
}
