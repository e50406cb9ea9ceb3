/*
 * import_block_impl.h: what the block codec's encoder (import_block.c) and decoder
 * (import_block_decode.c) share of the layout (import_block.h): its version, the kind
 * byte's bits, the short form's limits, and the zigzag of its signed varints. No file
 * outside the two includes it.
 */
#ifndef LKS_HARNESS_STORE_IMPORT_BLOCK_IMPL_H
#define LKS_HARNESS_STORE_IMPORT_BLOCK_IMPL_H

#include <stdint.h>

#include "harness/store/import_rec.h"

/* 2: a name's kind byte also says whether its column is printed (bit 1); 1 had no such
   bit, and reads as no column printed */
#define LKS_BLOCK_VERSION 2
/* 3: keyed records, a tensor trace's (import_block.h) */
#define LKS_BLOCK_VERSION_KEYED 3
#define LKS_KIND_PERFORMANCE 1
#define LKS_KIND_PRINTED 2
#define LKS_DEC_MAX 14                 /* decimals of the short form: 10^14 < 2^53 */
#define LKS_DEC_RAW 15
_Static_assert(LKS_DEC_RAW == LKS_IMPORT_NO_DEC, "a record's 'no decimal' is the raw form's d");
#define LKS_M_LIMIT 9007199254740992.0 /* 2^53: every integer below is a double */
_Static_assert(LKS_DEC_MAX < 23, "10^d of the short form is lks_import_pow10[d]");

static inline uint64_t lks_zz(int64_t x)
{
	return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63);
}

static inline int64_t lks_unzz(uint64_t x)
{
	return (int64_t)(x >> 1) ^ -(int64_t)(x & 1);
}

#endif
