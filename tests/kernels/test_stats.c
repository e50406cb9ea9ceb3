/*
 * test_stats.c: the tracer's tensor statistics are the same bits on every ISA path, the
 * hash is XXH3-64 of the bytes as libxxhash computes it, and the sum of squares follows
 * its documented lane order.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/stats.h"
#include "kernels/philox.h"

/* stats.h's order written out: lane i mod 32, then the lanes as a balanced binary tree */
static double ref_sumsq(const float *x, size_t n)
{
	double lane[32] = { 0 }, l2[16], l3[8], l4[4];

	for (size_t i = 0; i < n; i++)
		lane[i % 32] += (double)x[i] * (double)x[i];
	for (int l = 0; l < 16; l++)
		l2[l] = lane[2 * l] + lane[2 * l + 1];
	for (int l = 0; l < 8; l++)
		l3[l] = l2[2 * l] + l2[2 * l + 1];
	for (int l = 0; l < 4; l++)
		l4[l] = l3[2 * l] + l3[2 * l + 1];
	return (l4[0] + l4[1]) + (l4[2] + l4[3]);
}

Test(stats, every_path_agrees_with_the_definition)
{
	static const size_t sizes[] = { 0, 1, 7, 8, 9, 4095, 4096, 4097, 12345, 100003 };
	float *x = malloc(100003 * sizeof(float));

	for (size_t i = 0; i < 100003; i++)
		x[i] = lks_philox_normal(1, 0, i) * ldexpf(1.0f, (int)(i % 50) - 25);
	for (int special = 0; special < 3; special++) {
		if (special == 1)
			x[5000] = INFINITY, x[77] = -INFINITY;
		if (special == 2)
			x[9000] = NAN;
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			size_t n = sizes[s];
			double want_l2 = sqrt(ref_sumsq(x, n));
			uint64_t want_hash = XXH3_64bits(x, n * sizeof(float));
			float want_amax = 0.0f;
			int64_t want_bad = 0;

			for (size_t i = 0; i < n; i++) {
				want_bad += !isfinite(x[i]);
				if (!isnan(want_amax) && (isnan(x[i]) || fabsf(x[i]) > want_amax))
					want_amax = fabsf(x[i]);
			}
			for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
				double l2;
				float amax;
				int64_t bad;
				uint64_t hash;

				if (lks_isa_force((lks_isa)isa) != 0)
					continue;
				lks_stats_f32(x, n, &l2, &amax, &bad, &hash);
				cr_assert(memcmp(&l2, &want_l2, sizeof(l2)) == 0 || (isnan(l2) && isnan(want_l2)),
				          "%s n %zu special %d: l2 %a, want %a", lks_isa_name((lks_isa)isa), n,
				          special, l2, want_l2);
				cr_assert(amax == want_amax || (isnan(amax) && isnan(want_amax)),
				          "%s n %zu: amax %g, want %g", lks_isa_name((lks_isa)isa), n, amax, want_amax);
				cr_assert_eq(bad, want_bad, "%s n %zu", lks_isa_name((lks_isa)isa), n);
				cr_assert_eq(hash, want_hash, "%s n %zu: hash", lks_isa_name((lks_isa)isa), n);
			}
		}
	}
	free(x);
}

Test(stats, hash_rows_is_xxh3_of_the_rows_then_the_tail)
{
	enum { ROWS = 37, COLS = 301, LD = 320 };
	static uint8_t q[ROWS * LD], flat[ROWS * COLS + 4 * ROWS];
	float scales[ROWS];

	for (int i = 0; i < ROWS * LD; i++)
		q[i] = (uint8_t)lks_philox_u32(2, 0, (uint64_t)i);
	for (int r = 0; r < ROWS; r++) {
		scales[r] = lks_philox_uniform(2, 1, (uint64_t)r);
		memcpy(flat + r * COLS, q + r * LD, COLS);  /* the padding past COLS is left out */
	}
	memcpy(flat + ROWS * COLS, scales, sizeof(scales));
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (lks_isa_force((lks_isa)isa) != 0)
			continue;
		cr_assert_eq(lks_hash_rows(q, ROWS, COLS, LD, scales, ROWS),
		             XXH3_64bits(flat, sizeof(flat)), "%s", lks_isa_name((lks_isa)isa));
	}
}

static float bits_f32(uint32_t b)
{
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

/* NaNs as x86 and GPUs make them: the hash sees one NaN, and still tells NaN from inf. */
static const uint32_t nan_bits[] = { 0xffc00000u, 0x7fffffffu, 0x7fc00001u, 0xff800001u,
                                     0x7f800001u };
#define NNAN (sizeof(nan_bits) / sizeof(nan_bits[0]))

Test(stats, every_nan_hashes_as_one_on_every_path)
{
	/* NaNs in the first and in a later block, and in the tail past the last full block */
	static const size_t where[] = { 0, 4095, 4096, 9000, 10006 };
	enum { N = 10007 };
	static float x[N], canon[N], inf[N];

	for (size_t i = 0; i < N; i++)
		x[i] = canon[i] = inf[i] = lks_philox_normal(3, 0, i);
	for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
		x[where[w]] = bits_f32(nan_bits[w % NNAN]);
		canon[where[w]] = bits_f32(LKS_HASH_NAN);
		inf[where[w]] = INFINITY;
	}
	/* the bytes differ, so an unchanged hash of the bytes would fail below */
	cr_assert_neq(XXH3_64bits(x, sizeof(x)), XXH3_64bits(canon, sizeof(canon)));
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		double l2;
		float amax;
		int64_t bad;
		uint64_t hash, hinf;

		if (lks_isa_force((lks_isa)isa) != 0)
			continue;
		lks_stats_f32(x, N, &l2, &amax, &bad, &hash);
		cr_assert_eq(hash, XXH3_64bits(canon, sizeof(canon)), "%s",
		             lks_isa_name((lks_isa)isa));
		cr_assert_eq(bad, 5);
		lks_stats_f32(inf, N, &l2, &amax, &bad, &hinf);
		cr_assert_neq(hinf, hash, "%s: inf and NaN hash apart", lks_isa_name((lks_isa)isa));
		cr_assert_eq(hinf, XXH3_64bits(inf, sizeof(inf)));
	}
}

Test(stats, a_nan_scale_hashes_as_one)
{
	uint8_t q[4 * 8];
	float scales[4] = { 1.0f, 2.0f, 3.0f, 4.0f }, canon[4];

	for (int i = 0; i < 4 * 8; i++)
		q[i] = (uint8_t)i;
	memcpy(canon, scales, sizeof(canon));
	canon[2] = bits_f32(LKS_HASH_NAN);
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		uint64_t want;

		if (lks_isa_force((lks_isa)isa) != 0)
			continue;
		want = lks_hash_rows(q, 4, 8, 8, canon, 4);
		for (size_t k = 0; k < NNAN; k++) {
			scales[2] = bits_f32(nan_bits[k]);
			cr_assert_eq(lks_hash_rows(q, 4, 8, 8, scales, 4), want, "%s: NaN %08x",
			             lks_isa_name((lks_isa)isa), nan_bits[k]);
		}
		scales[2] = INFINITY;
		cr_assert_neq(lks_hash_rows(q, 4, 8, 8, scales, 4), want);
	}
}

/* The FP8 statistics by their definition, from the decode table: each finite square is
   an integer in units of 2^-18 (E4M3) or 2^-32 (E5M2), summed exactly, rounded once. */
static void ref_fp8(const uint8_t *q, size_t n, lks_fp8 fmt, double *l2, float *amax,
                    int64_t *bad)
{
	const float *tab = lks_fp8_table(fmt);
	unsigned __int128 sum = 0;
	int units = fmt == LKS_FP8_E4M3 ? 18 : 32, nan = 0, inf = 0;

	*amax = 0.0f;
	*bad = 0;
	for (size_t i = 0; i < n; i++) {
		float v = tab[q[i]];

		if (isnan(v))
			nan = 1;
		else if (isinf(v))
			inf = 1;
		else
			sum += (unsigned __int128)ldexp((double)v * v, units);
		*bad += !isfinite(v);
		if (!isnan(*amax) && (isnan(v) || fabsf(v) > *amax))
			*amax = fabsf(v);
	}
	*l2 = nan ? NAN : inf ? INFINITY : sqrt(ldexp((double)sum, -units));
}

Test(stats, fp8_every_path_agrees_with_the_exact_sum)
{
	static const size_t sizes[] = { 0, 1, 31, 32, 33, 4095, 65536, 100003 };
	uint8_t *q = malloc(100003);

	for (int fmt = 0; fmt < 2; fmt++) {
		for (int special = 0; special < 4; special++) {
			for (size_t i = 0; i < 100003; i++) {
				uint32_t u = lks_philox_u32(3, (uint32_t)special, i);
				/* mostly small codes, as scaled tensors give, and every code now and then */
				q[i] = (uint8_t)(u % 7 ? (u >> 8) % 0x78 | (u & 0x80) : u >> 8);
				if (special == 0 || (special == 1 && fmt == 0))  /* finite only */
					while ((q[i] & 0x7f) >= (fmt ? 0x7c : 0x7f))
						q[i] -= 8;
			}
			if (special == 2)  /* the largest finite codes: the sum needs every bit */
				for (size_t i = 0; i < 100003; i += 2)
					q[i] = fmt ? 0x7b : 0xfe;
			if (special == 3)
				q[40000] = 0xff, q[77] = fmt ? 0x7c : 0x7f;
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				size_t n = sizes[s];
				double want_l2, l2;
				float want_amax, amax;
				int64_t want_bad, bad;

				ref_fp8(q, n, (lks_fp8)fmt, &want_l2, &want_amax, &want_bad);
				for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
					lks_fp8_stats st = { 0 }, split = { 0 };

					if (lks_isa_force((lks_isa)isa) != 0)
						continue;
					lks_fp8_stats_add(&st, q, n, fmt);
					/* any split into calls gives the same sums */
					lks_fp8_stats_add(&split, q, n / 3, fmt);
					lks_fp8_stats_add(&split, q + n / 3, n - n / 3, fmt);
					cr_assert(st.sq == split.sq && st.nonfinite == split.nonfinite
					          && st.maxmag == split.maxmag, "%s fmt %d n %zu: split",
					          lks_isa_name((lks_isa)isa), fmt, n);
					lks_fp8_stats_result(&st, fmt, &l2, &amax, &bad);
					cr_assert(memcmp(&l2, &want_l2, sizeof(l2)) == 0 || (isnan(l2) && isnan(want_l2)),
					          "%s fmt %d special %d n %zu: l2 %a, want %a",
					          lks_isa_name((lks_isa)isa), fmt, special, n, l2, want_l2);
					cr_assert(amax == want_amax || (isnan(amax) && isnan(want_amax)),
					          "%s fmt %d special %d n %zu: amax %g, want %g",
					          lks_isa_name((lks_isa)isa), fmt, special, n, amax, want_amax);
					cr_assert_eq(bad, want_bad, "%s fmt %d n %zu", lks_isa_name((lks_isa)isa), fmt, n);
				}
			}
		}
	}
	free(q);
}
