/*
 * test_xxh3_split.c: the CPU's simulation of the device statistics (issue 35, item 3), held
 * to what the tracer computes on the host: kernels/element/xxh3.h's XXH3-64 in pieces (the
 * blocks' sums in any order, the 8 lane chains, the tail, the merge) against libxxhash's
 * XXH3_64bits from 0 bytes to 16 MiB; a float tensor's stream (NaN as LKS_HASH_NAN) against
 * lks_stats_f32's hash; a quantized tensor's codes-then-scales stream against
 * lks_hash_rows; and the warp's xor butterfly over the 32 lanes of the sum of squares
 * against lks_sumsq. The CUDA kernels run these same lines (tests/kernels/gpu_backend.c).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "kernels/cpu/stats.h"
#include "kernels/element/xxh3.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* the hash as a device makes it: the blocks' sums made last block first (any order must
   do), each lane's chain alone, then the tail and the merge */
static uint64_t split_hash(const lks_xxh3_src *s)
{
	size_t len = lks_xxh3_len(s), nb;
	uint64_t (*d)[8], acc[8], t[8];

	if (len <= 240)
		return lks_xxh3_short(s);
	nb = lks_xxh3_nblocks(len);
	d = malloc((nb + 1) * sizeof(*d));
	cr_assert_not_null(d);
	for (size_t b = nb; b-- > 0;)
		lks_xxh3_block_sums(s, b, d[b]);
	for (int i = 0; i < 8; i++) {
		acc[i] = lks_xxh3_lane_init(i);
		for (size_t b = 0; b < nb; b++)
			acc[i] = lks_xxh3_chain_step(acc[i], d[b][i], i);
	}
	free(d);
	lks_xxh3_tail_sums(s, t);
	for (int i = 0; i < 8; i++)
		acc[i] += t[i];
	return lks_xxh3_merge(acc, len);
}

static void check_bytes(size_t len)
{
	uint8_t *p = malloc(len + 1);
	lks_xxh3_src s = { p, len, NULL, 0 };
	uint64_t want;

	cr_assert_not_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng();
	want = XXH3_64bits(p, len);
	cr_assert_eq(lks_xxh3_64(&s), want, "%zu bytes: the pieces in order", len);
	cr_assert_eq(split_hash(&s), want, "%zu bytes: the pieces split", len);
	free(p);
}

/* every length of the short paths and around every edge of the long one */
Test(xxh3_split, equals_libxxhash_from_0_bytes_to_16_mib)
{
	static const size_t lens[] = { 241, 255, 256, 257, 319, 320, 1023, 1024, 1025, 1087,
	                               1088, 1089, 2047, 2048, 2049, 4096 + 64, 16383, 16384,
	                               16385, 100003, (16u << 20) + 12 };

	for (size_t len = 0; len <= 260; len++)
		check_bytes(len);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		check_bytes(lens[i]);
	for (int k = 0; k < 40; k++)
		check_bytes(241 + rng() % 70000);
}

/* n floats with NaNs of every sign and payload, infinities, zeros and subnormals */
static float *floats(size_t n)
{
	static const uint32_t specials[] = { 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u,
	                                     0x7fffffffu, 0x7f800000u, 0xff800000u, 0x80000000u,
	                                     0x00000001u, 0x807fffffu };
	float *x = malloc(n * sizeof(float) + 1);

	cr_assert_not_null(x);
	for (size_t i = 0; i < n; i++) {
		uint32_t u = i % 37 == 5 ? specials[(i / 37) % 10]
		           : (uint32_t)(rng() % 0x7f000000u) ^ (uint32_t)(rng() & 0x80000000u);

		memcpy(&x[i], &u, 4);
	}
	return x;
}

/* the sum of squares as a warp makes it (update.cu): lane l sums x[i]^2 for i = l mod 32,
   then lane l adds lane l ^ o for o = 1, 2, 4, 8, 16; lane 0's */
static double butterfly_sumsq(const float *x, size_t n)
{
	double lane[32] = { 0 }, next[32];

	for (size_t i = 0; i < n; i++)
		lane[i % 32] += (double)x[i] * (double)x[i];
	for (int o = 1; o < 32; o <<= 1) {
		for (int l = 0; l < 32; l++)
			next[l] = lane[l] + lane[l ^ o];
		memcpy(lane, next, sizeof(lane));
	}
	return lane[0];
}

/* A float tensor's hash (NaN as LKS_HASH_NAN) and its sum of squares as the device makes
   them: the hash split, the 32 lanes' chains summed by a warp's xor butterfly (lane l adds
   lane l ^ o for o = 1, 2, 4, 8, 16; the result in lane 0). */
Test(xxh3_split, a_float_tensor_hashes_and_sums_as_lks_stats_f32)
{
	static const size_t ns[] = { 0, 1, 2, 3, 4, 31, 32, 33, 60, 61, 255, 256, 257, 1000,
	                             4097, 65536 + 3, (4u << 20) + 1 };

	cr_assert_eq(LKS_XXH3_NAN, LKS_HASH_NAN);
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		size_t n = ns[k];
		float *x = floats(n), amax;
		lks_xxh3_src s = { NULL, 0, (const uint32_t *)x, n };
		double l2, lane0;
		int64_t bad;
		uint64_t hash;

		lks_stats_f32(x, n, &l2, &amax, &bad, &hash);
		cr_assert_eq(split_hash(&s), hash, "%zu floats: hash", n);
		cr_assert_eq(lks_xxh3_64(&s), hash, "%zu floats: hash in order", n);
		lane0 = butterfly_sumsq(x, n);
		cr_assert(isnan(l2) ? isnan(lane0) : sqrt(lane0) == l2,
		          "%zu floats: the butterfly's l2 %a, the CPU's %a", n, sqrt(lane0), l2);
		if (n > 5)
			cr_assert(isnan(l2), "the specials make it NaN");
		free(x);
	}
	/* finite values: the butterfly equals lks_sumsq bit for bit */
	for (size_t n = 1; n < 5000; n += 97) {
		float *x = malloc(n * sizeof(float));
		double lane0, want;

		cr_assert_not_null(x);
		for (size_t i = 0; i < n; i++)
			x[i] = (float)((double)(rng() >> 11) / 9007199254740992.0 - 0.5) * 1e3f;
		want = lks_sumsq(x, n);
		lane0 = butterfly_sumsq(x, n);
		cr_assert(!memcmp(&lane0, &want, sizeof(want)), "%zu floats: %a vs %a", n, lane0, want);
		free(x);
	}
}

/* A quantized tensor's stream: its codes, then its scales as floats (NaN as LKS_HASH_NAN),
   hashed as lks_hash_rows hashes them, whatever the sizes of the two parts (a part ending
   inside a stripe or a word of the other). */
Test(xxh3_split, codes_then_scales_hash_as_lks_hash_rows)
{
	static const size_t sizes[][2] = { { 0, 1 }, { 1, 1 }, { 3, 2 }, { 5, 1 }, { 13, 1 },
	                                   { 200, 10 }, { 237, 1 }, { 240, 4 }, { 1021, 7 },
	                                   { 4096, 64 }, { 65539, 257 }, { 1u << 20, 1024 } };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t nq = sizes[k][0], ns = sizes[k][1];
		uint8_t *q = malloc(nq + 1);
		float *sc = floats(ns);
		lks_xxh3_src s = { q, nq, (const uint32_t *)sc, ns };
		uint64_t want;

		cr_assert_not_null(q);
		for (size_t i = 0; i < nq; i++)
			q[i] = (uint8_t)rng();
		want = lks_hash_rows(q, 1, (int)nq, nq, sc, ns);
		cr_assert_eq(split_hash(&s), want, "%zu codes, %zu scales", nq, ns);
		cr_assert_eq(lks_xxh3_64(&s), want, "%zu codes, %zu scales, in order", nq, ns);
		free(q);
		free(sc);
	}
}
