/*
 * element/xxh3.h: XXH3-64 (seed 0, the default secret: xxHash 0.8's XXH3_64bits) in pieces
 * that a GPU runs in parallel, shared by the CPU's simulation of the device statistics and
 * the CUDA kernels (issue 35), so that both compute the hash the tracer's libxxhash gives.
 * Written from XXH3's specification (xxhash.h 0.8.1, the version the fingerprint names);
 * tests/kernels/test_xxh3_split.c checks it against libxxhash from 0 bytes to 16 MiB.
 *
 * An input of more than 240 bytes is hashed in 1 KiB blocks (16 stripes of 64 bytes). Inside
 * a block, XXH3 only adds (mod 2^64) into its 8 accumulators: stripe s adds to lane i^1 the
 * word i of the stripe, and to lane i the product of the halves of that word xor the
 * secret's word s + i. So a block's effect before its scramble is a vector of 8 sums
 * (lks_xxh3_block_sums), and the blocks' sums are independent of each other: any order, any
 * thread. The scramble that ends a block works on each lane alone, so lane i is one chain,
 * acc_i = scramble_i(acc_i + D_b[i]) for b = 0, 1, ...: 8 chains (lks_xxh3_chain_step).
 * Then the last partial block and the last stripe add their sums (lks_xxh3_tail_sums), and
 * the merge and avalanche end it (lks_xxh3_merge). Inputs of 240 bytes or fewer take XXH3's
 * short paths, one thread (lks_xxh3_short).
 *
 * The stream is a source of two parts, as the tracer hashes them: plain bytes (a quantized
 * tensor's codes), then float32 words with every NaN as LKS_HASH_NAN (a float tensor, or a
 * quantized tensor's scales). Little-endian, as x86 and NVIDIA GPUs are.
 */
#ifndef LKS_KERNELS_ELEMENT_XXH3_H
#define LKS_KERNELS_ELEMENT_XXH3_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/hd.h"

#define LKS_XXH3_NAN 0x7fc00000u     /* LKS_HASH_NAN of kernels/cpu/stats.h */
#define LKS_XXH3_STRIPE 64
#define LKS_XXH3_BLOCK 1024          /* 16 stripes: (192 - 64) / 8 with the default secret */
#define LKS_XXH3_SECRET_SIZE 192

#define LKS_XXH_P32_1 0x9E3779B1u
#define LKS_XXH_P32_2 0x85EBCA77u
#define LKS_XXH_P32_3 0xC2B2AE3Du
#define LKS_XXH_P64_1 0x9E3779B185EBCA87ull
#define LKS_XXH_P64_2 0xC2B2AE3D27D4EB4Full
#define LKS_XXH_P64_3 0x165667B19E3779F9ull
#define LKS_XXH_P64_4 0x85EBCA77C2B2AE63ull
#define LKS_XXH_P64_5 0x27D4EB2F165667C5ull
#define LKS_XXH_MX1 0x165667919E3779F9ull
#define LKS_XXH_MX2 0x9FB21C651E98DF25ull

/* XXH3's default secret (kSecret), in the memory of the side that reads it */
#define LKS_XXH3_SECRET_BYTES                                                              \
	{ 0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21,  \
	  0xad, 0x1c, 0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4,  \
	  0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a,  \
	  0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e,  \
	  0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3,  \
	  0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97,  \
	  0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa,  \
	  0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,  \
	  0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78,  \
	  0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff,  \
	  0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16,  \
	  0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc,  \
	  0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16,  \
	  0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e }

#ifdef __CUDACC__
__device__ static const uint8_t lks_xxh3_secret_dev[LKS_XXH3_SECRET_SIZE] = LKS_XXH3_SECRET_BYTES;
#endif
static const uint8_t lks_xxh3_secret_host[LKS_XXH3_SECRET_SIZE] = LKS_XXH3_SECRET_BYTES;
#ifdef __CUDA_ARCH__
#define LKS_XXH3_SECRET lks_xxh3_secret_dev
#else
#define LKS_XXH3_SECRET lks_xxh3_secret_host
#endif

/* the stream: na plain bytes at a, then nb float32 words at b (NaN as LKS_XXH3_NAN) */
typedef struct lks_xxh3_src {
	const uint8_t *a;
	size_t na;
	const uint32_t *b;
	size_t nb;
} lks_xxh3_src;

static inline LKS_HD size_t lks_xxh3_len(const lks_xxh3_src *s)
{
	return s->na + 4 * s->nb;
}

static inline LKS_HD uint32_t lks_xxh3_word(const lks_xxh3_src *s, size_t w)
{
	uint32_t v = s->b[w];

	return (v & 0x7fffffffu) > 0x7f800000u ? LKS_XXH3_NAN : v;
}

static inline LKS_HD unsigned lks_xxh3_byte(const lks_xxh3_src *s, size_t o)
{
	if (o < s->na)
		return s->a[o];
	o -= s->na;
	return (lks_xxh3_word(s, o / 4) >> (8 * (o % 4))) & 0xffu;
}

/* the little-endian 64 bits of the stream at byte o (o + 8 <= its length) */
static inline LKS_HD uint64_t lks_xxh3_read64(const lks_xxh3_src *s, size_t o)
{
	uint64_t v = 0;

	if (o >= s->na && (o - s->na) % 4 == 0) {  /* two float words */
		size_t w = (o - s->na) / 4;

		return (uint64_t)lks_xxh3_word(s, w) | (uint64_t)lks_xxh3_word(s, w + 1) << 32;
	}
	if (o + 8 <= s->na) {
		memcpy(&v, s->a + o, 8);
		return v;
	}
	for (int k = 7; k >= 0; k--)
		v = v << 8 | lks_xxh3_byte(s, o + (size_t)k);
	return v;
}

static inline LKS_HD uint32_t lks_xxh3_read32(const lks_xxh3_src *s, size_t o)
{
	uint32_t v = 0;

	for (int k = 3; k >= 0; k--)
		v = v << 8 | lks_xxh3_byte(s, o + (size_t)k);
	return v;
}

static inline LKS_HD uint64_t lks_xxh3_secret64(size_t o)
{
	uint64_t v;

	memcpy(&v, LKS_XXH3_SECRET + o, 8);
	return v;
}

static inline LKS_HD uint32_t lks_xxh3_secret32(size_t o)
{
	uint32_t v;

	memcpy(&v, LKS_XXH3_SECRET + o, 4);
	return v;
}

/* the 128-bit product of a and b, its halves xor'ed */
static inline LKS_HD uint64_t lks_xxh3_fold(uint64_t a, uint64_t b)
{
#ifdef __CUDA_ARCH__
	return (a * b) ^ __umul64hi(a, b);
#else
	unsigned __int128 p = (unsigned __int128)a * b;

	return (uint64_t)p ^ (uint64_t)(p >> 64);
#endif
}

static inline LKS_HD uint64_t lks_xxh3_rotl(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

static inline LKS_HD uint64_t lks_xxh3_avalanche(uint64_t h)
{
	h ^= h >> 37;
	h *= LKS_XXH_MX1;
	return h ^ h >> 32;
}

static inline LKS_HD uint64_t lks_xxh64_avalanche(uint64_t h)
{
	h ^= h >> 33;
	h *= LKS_XXH_P64_2;
	h ^= h >> 29;
	h *= LKS_XXH_P64_3;
	return h ^ h >> 32;
}

static inline LKS_HD uint64_t lks_xxh3_rrmxmx(uint64_t h, uint64_t len)
{
	h ^= lks_xxh3_rotl(h, 49) ^ lks_xxh3_rotl(h, 24);
	h *= LKS_XXH_MX2;
	h ^= (h >> 35) + len;
	h *= LKS_XXH_MX2;
	return h ^ h >> 28;
}

/* 16 bytes of the stream at o with 16 of the secret at k */
static inline LKS_HD uint64_t lks_xxh3_mix16(const lks_xxh3_src *s, size_t o, size_t k)
{
	return lks_xxh3_fold(lks_xxh3_read64(s, o) ^ lks_xxh3_secret64(k),
	                     lks_xxh3_read64(s, o + 8) ^ lks_xxh3_secret64(k + 8));
}

/* The hash of a stream of at most 240 bytes: XXH3's short paths. */
static inline LKS_HD uint64_t lks_xxh3_short(const lks_xxh3_src *s)
{
	size_t len = lks_xxh3_len(s);
	uint64_t acc, end;

	if (len == 0)
		return lks_xxh64_avalanche(lks_xxh3_secret64(56) ^ lks_xxh3_secret64(64));
	if (len <= 3) {
		uint32_t c = lks_xxh3_byte(s, 0) << 16 | lks_xxh3_byte(s, len >> 1) << 24
		           | lks_xxh3_byte(s, len - 1) | (uint32_t)len << 8;

		return lks_xxh64_avalanche((uint64_t)c ^ (lks_xxh3_secret32(0) ^ lks_xxh3_secret32(4)));
	}
	if (len <= 8) {
		uint64_t in = lks_xxh3_read32(s, len - 4) + ((uint64_t)lks_xxh3_read32(s, 0) << 32);

		return lks_xxh3_rrmxmx(in ^ (lks_xxh3_secret64(8) ^ lks_xxh3_secret64(16)), len);
	}
	if (len <= 16) {
		uint64_t lo = lks_xxh3_read64(s, 0) ^ (lks_xxh3_secret64(24) ^ lks_xxh3_secret64(32));
		uint64_t hi = lks_xxh3_read64(s, len - 8)
		            ^ (lks_xxh3_secret64(40) ^ lks_xxh3_secret64(48));
		uint64_t sw = lo >> 56 | (lo >> 40 & 0xff00u) | (lo >> 24 & 0xff0000u)
		            | (lo >> 8 & 0xff000000u) | (lo << 8 & 0xff00000000ull)
		            | (lo << 24 & 0xff0000000000ull) | (lo << 40 & 0xff000000000000ull) | lo << 56;

		return lks_xxh3_avalanche(len + sw + hi + lks_xxh3_fold(lo, hi));
	}
	acc = len * LKS_XXH_P64_1;
	if (len <= 128) {
		if (len > 32) {
			if (len > 64) {
				if (len > 96) {
					acc += lks_xxh3_mix16(s, 48, 96);
					acc += lks_xxh3_mix16(s, len - 64, 112);
				}
				acc += lks_xxh3_mix16(s, 32, 64);
				acc += lks_xxh3_mix16(s, len - 48, 80);
			}
			acc += lks_xxh3_mix16(s, 16, 32);
			acc += lks_xxh3_mix16(s, len - 32, 48);
		}
		acc += lks_xxh3_mix16(s, 0, 0);
		acc += lks_xxh3_mix16(s, len - 16, 16);
		return lks_xxh3_avalanche(acc);
	}
	for (size_t i = 0; i < 8; i++)
		acc += lks_xxh3_mix16(s, 16 * i, 16 * i);
	acc = lks_xxh3_avalanche(acc);
	end = lks_xxh3_mix16(s, len - 16, 136 - 17);  /* the secret's minimum size, less 17 */
	for (size_t i = 8; i < len / 16; i++)
		end += lks_xxh3_mix16(s, 16 * i, 16 * (i - 8) + 3);
	return lks_xxh3_avalanche(acc + end);
}

/* the stripe at byte o with the secret at k added into d (8 lanes) */
static inline LKS_HD void lks_xxh3_stripe(const lks_xxh3_src *s, size_t o, size_t k,
                                          uint64_t d[8])
{
	for (int i = 0; i < 8; i++) {
		uint64_t v = lks_xxh3_read64(s, o + 8 * (size_t)i);
		uint64_t key = v ^ lks_xxh3_secret64(k + 8 * (size_t)i);

		d[i ^ 1] += v;
		d[i] += (key & 0xffffffffu) * (key >> 32);
	}
}

/* Inputs of more than 240 bytes: the full blocks before the last partial one (the last
   byte always falls after them). */
static inline LKS_HD size_t lks_xxh3_nblocks(size_t len)
{
	return (len - 1) / LKS_XXH3_BLOCK;
}

/* Phase A: d = what block b adds to the accumulators (zeroed here): any order, any thread */
static inline LKS_HD void lks_xxh3_block_sums(const lks_xxh3_src *s, size_t b, uint64_t d[8])
{
	for (int i = 0; i < 8; i++)
		d[i] = 0;
	for (size_t st = 0; st < LKS_XXH3_BLOCK / LKS_XXH3_STRIPE; st++)
		lks_xxh3_stripe(s, b * LKS_XXH3_BLOCK + st * LKS_XXH3_STRIPE, 8 * st, d);
}

/* Phase B: lane i's start, and one block's step of its chain: add, then scramble */
static inline LKS_HD uint64_t lks_xxh3_lane_init(int i)
{
	const uint64_t init[8] = { LKS_XXH_P32_3, LKS_XXH_P64_1, LKS_XXH_P64_2, LKS_XXH_P64_3,
	                           LKS_XXH_P64_4, LKS_XXH_P32_2, LKS_XXH_P64_5, LKS_XXH_P32_1 };

	return init[i];
}

static inline LKS_HD uint64_t lks_xxh3_chain_step(uint64_t acc, uint64_t d, int i)
{
	acc += d;
	acc ^= acc >> 47;
	acc ^= lks_xxh3_secret64(LKS_XXH3_SECRET_SIZE - LKS_XXH3_STRIPE + 8 * (size_t)i);
	return acc * LKS_XXH_P32_1;
}

/* what the last partial block's whole stripes and the last stripe add after the chains */
static inline LKS_HD void lks_xxh3_tail_sums(const lks_xxh3_src *s, uint64_t d[8])
{
	size_t len = lks_xxh3_len(s), base = lks_xxh3_nblocks(len) * LKS_XXH3_BLOCK;
	size_t nstripes = (len - 1 - base) / LKS_XXH3_STRIPE;

	for (int i = 0; i < 8; i++)
		d[i] = 0;
	for (size_t st = 0; st < nstripes; st++)
		lks_xxh3_stripe(s, base + st * LKS_XXH3_STRIPE, 8 * st, d);
	lks_xxh3_stripe(s, len - LKS_XXH3_STRIPE, LKS_XXH3_SECRET_SIZE - LKS_XXH3_STRIPE - 7, d);
}

/* the 8 accumulators (chains ended, tail added) to the hash */
static inline LKS_HD uint64_t lks_xxh3_merge(const uint64_t acc[8], size_t len)
{
	uint64_t h = len * LKS_XXH_P64_1;

	for (int i = 0; i < 4; i++)
		h += lks_xxh3_fold(acc[2 * i] ^ lks_xxh3_secret64(11 + 16 * (size_t)i),
		                   acc[2 * i + 1] ^ lks_xxh3_secret64(11 + 16 * (size_t)i + 8));
	return lks_xxh3_avalanche(h);
}

/* The whole hash in one thread, the pieces in order: the reference the split is held to. */
static inline LKS_HD uint64_t lks_xxh3_64(const lks_xxh3_src *s)
{
	size_t len = lks_xxh3_len(s), nb;
	uint64_t acc[8], d[8];

	if (len <= 240)
		return lks_xxh3_short(s);
	nb = lks_xxh3_nblocks(len);
	for (int i = 0; i < 8; i++)
		acc[i] = lks_xxh3_lane_init(i);
	for (size_t b = 0; b < nb; b++) {
		lks_xxh3_block_sums(s, b, d);
		for (int i = 0; i < 8; i++)
			acc[i] = lks_xxh3_chain_step(acc[i], d[i], i);
	}
	lks_xxh3_tail_sums(s, d);
	for (int i = 0; i < 8; i++)
		acc[i] += d[i];
	return lks_xxh3_merge(acc, len);
}

#endif
