/*
 * philox.h: counter-based random numbers, the same everywhere.
 *
 * A value is a pure function of (seed, stream, index): Philox4x32-10 from Random123 with
 * key = seed (64 bits) and counter = (index / 4 as 64 bits, stream, 0); the index picks one
 * of the four 32-bit outputs. No state, so any slice of any tensor can be regenerated on any
 * rank, thread or device (this header compiles as CUDA C too), and the float transforms
 * below use only exact arithmetic and one rounded multiply, so CPU and GPU agree bit for bit.
 */
#ifndef LKS_KERNELS_PHILOX_H
#define LKS_KERNELS_PHILOX_H

#include <stdint.h>

#include <Random123/philox.h>

#include "kernels/hd.h"

/* The four 32-bit outputs of block q, which holds indices 4q .. 4q+3. */
static inline LKS_HD philox4x32_ctr_t lks_philox_block(uint64_t seed, uint32_t stream, uint64_t q)
{
	philox4x32_ctr_t ctr = { { (uint32_t)q, (uint32_t)(q >> 32), stream, 0 } };
	philox4x32_key_t key = { { (uint32_t)seed, (uint32_t)(seed >> 32) } };

	return philox4x32(ctr, key);
}

static inline LKS_HD uint32_t lks_philox_u32(uint64_t seed, uint32_t stream, uint64_t index)
{
	return lks_philox_block(seed, stream, index >> 2).v[index & 3];
}

/* Uniform on [0, 1) with 24 random bits: k * 2^-24, exact. */
static inline LKS_HD float lks_u32_to_uniform(uint32_t u)
{
	return (float)(u >> 8) * 0x1p-24f;
}

static inline LKS_HD float lks_philox_uniform(uint64_t seed, uint32_t stream, uint64_t index)
{
	return lks_u32_to_uniform(lks_philox_u32(seed, stream, index));
}

/*
 * Approximately standard normal: the sum of the four outputs of one block as uniforms of 22
 * bits (Irwin-Hall, variance 4/12), centred and scaled by sqrt(3). Four multiples of 2^-22
 * below 1 sum exactly in float32 (the sum is below 4, where the ulp is 2^-22), the centring
 * is exact, and the scaling is one rounded multiply, so every device gets the same bits,
 * which a Box-Muller through logf/cosf would not promise. Tails end at +-2 sqrt(3). One
 * value per block: index selects the block, not a lane.
 */
static inline LKS_HD float lks_philox_normal(uint64_t seed, uint32_t stream, uint64_t index)
{
	philox4x32_ctr_t r = lks_philox_block(seed, stream, index);
	float s = 0.0f;

	for (int i = 0; i < 4; i++)
		s += (float)(r.v[i] >> 10) * 0x1p-22f;
	return (s - 2.0f) * 1.7320508075688772f;
}

#endif
