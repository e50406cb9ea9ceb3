/*
 * devstats.cu: a float tensor's statistics made on the device with the CPU's bits (issue
 * 35, item 3), for the cuda backend's stats_f32: one record of a few bytes comes home
 * instead of the tensor.
 *
 *   l2         the sum of squares in kernels/cpu/stats.h's 32-lane order (update.cu's warp),
 *              its square root on the host as lks_stats_f32 takes it;
 *   amax, non-finite count
 *              on the bits, as kernels/cpu/stats_acc.h's lks_stats_acc_bits: the largest
 *              magnitude that is not NaN (an integer max), a NaN seen (an or), the
 *              non-finite values (an add): exact in any order, integer atomics;
 *   hash       XXH3-64 of the bytes with NaN as LKS_HASH_NAN, in kernels/element/xxh3.h's
 *              pieces: every 1 KiB block's 8 sums at once (one thread a block), then the 8
 *              lane chains (a thread each), the tail and the merge; 240 bytes or fewer in
 *              one thread. tests/test_xxh3_split.c holds those lines to libxxhash on the CPU.
 *
 * The tracer's path (backend_cuda.cu, measure_begin): the tensor is copied into a meter
 * slot on the compute stream, measured on the meter's stream, and only the record comes
 * home; LKS_CUDA_HOST_STATS=1 downloads the tensor and measures it on the host instead.
 */
#include <stdint.h>
#include <string.h>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/element/xxh3.h"

extern "C" {
#include "kernels/err.h"
}

/* the record, first in the scratch (LKS_CUDA_DEVSTAT_REC bytes), the blocks' sums after it */
struct lks_devstat {
	double ss;
	unsigned maxbits, nan;
	unsigned long long bad, hash;
};
static_assert(sizeof(struct lks_devstat) <= LKS_CUDA_DEVSTAT_REC, "the record's room");

/* the bits' statistics, per thread, then per warp, then one atomic of each per warp */
__global__ static void lks_devstat_bits_kernel(const float *x, size_t n, struct lks_devstat *r)
{
	unsigned maxbits = 0, nan = 0;
	unsigned long long bad = 0;

	LKS_FOR_EACH(i, n) {
		unsigned b = __float_as_uint(x[i]) & 0x7fffffffu;

		maxbits = b > maxbits && b <= 0x7f800000u ? b : maxbits;
		nan |= b > 0x7f800000u;
		bad += b >= 0x7f800000u;
	}
	for (int o = 16; o > 0; o >>= 1) {
		maxbits = max(maxbits, __shfl_xor_sync(0xffffffffu, maxbits, o));
		nan |= __shfl_xor_sync(0xffffffffu, nan, o);
		bad += __shfl_xor_sync(0xffffffffu, bad, o);
	}
	if ((threadIdx.x & 31) == 0) {
		atomicMax(&r->maxbits, maxbits);
		atomicOr(&r->nan, nan);
		atomicAdd(&r->bad, bad);
	}
}

/* phase A: block b's 8 sums into d[8 b ...] */
__global__ static void lks_devstat_blocks_kernel(const float *x, size_t n, size_t nb,
                                                 unsigned long long *d)
{
	lks_xxh3_src s = { NULL, 0, (const uint32_t *)x, n };

	LKS_FOR_EACH(b, nb) {
		uint64_t sums[8];

		lks_xxh3_block_sums(&s, b, sums);
		for (int i = 0; i < 8; i++)
			d[8 * b + (size_t)i] = sums[i];
	}
}

/* phase B, <<<1, 8>>>: lane i's chain over the blocks, then thread 0 ends the hash; a
   stream of 240 bytes or fewer is thread 0's alone */
__global__ static void lks_devstat_chain_kernel(const float *x, size_t n, size_t nb,
                                                const unsigned long long *d,
                                                struct lks_devstat *r)
{
	__shared__ uint64_t acc[8];
	lks_xxh3_src s = { NULL, 0, (const uint32_t *)x, n };
	const int i = threadIdx.x;

	if (lks_xxh3_len(&s) <= 240) {
		if (i == 0)
			r->hash = lks_xxh3_short(&s);
		return;
	}
	acc[i] = lks_xxh3_lane_init(i);
	for (size_t b = 0; b < nb; b++)
		acc[i] = lks_xxh3_chain_step(acc[i], d[8 * b + (size_t)i], i);
	__syncthreads();
	if (i == 0) {
		uint64_t t[8];

		lks_xxh3_tail_sums(&s, t);
		for (int k = 0; k < 8; k++)
			acc[k] += t[k];
		r->hash = lks_xxh3_merge(acc, lks_xxh3_len(&s));
	}
}

size_t lks_cuda_devstat_scratch(size_t n)
{
	size_t len = 4 * n;

	return (len > 240 ? 64 * lks_xxh3_nblocks(len) : 0) + LKS_CUDA_DEVSTAT_REC;
}

int lks_cuda_devstat_queue(cudaStream_t st, const float *x, size_t n, void *scratch)
{
	size_t len = 4 * n, nb = len > 240 ? lks_xxh3_nblocks(len) : 0;
	unsigned long long *d = (unsigned long long *)((char *)scratch + LKS_CUDA_DEVSTAT_REC);
	struct lks_devstat *r = (struct lks_devstat *)scratch;

	if (LKS_CUDA(cudaMemsetAsync(r, 0, sizeof(*r), st), "stats"))
		return -1;
	lks_cuda_sumsq_launch(st, x, n, &r->ss);
	if (n > 0)
		lks_devstat_bits_kernel<<<lks_cuda_blocks(n), LKS_CUDA_THREADS, 0, st>>>(x, n, r);
	if (nb > 0)
		lks_devstat_blocks_kernel<<<lks_cuda_blocks(nb), LKS_CUDA_THREADS, 0, st>>>(x, n, nb,
		                                                                           d);
	lks_devstat_chain_kernel<<<1, 8, 0, st>>>(x, n, nb, d, r);
	return LKS_CUDA(cudaGetLastError(), "stats");
}

void lks_cuda_devstat_fill(const void *rec, lks_tensor_stats *s)
{
	struct lks_devstat r;
	float amax;

	memcpy(&r, rec, sizeof(r));
	memcpy(&amax, &r.maxbits, sizeof(amax));
	memset(s, 0, sizeof(*s));  /* a float tensor: no counts */
	s->l2 = sqrt(r.ss);
	s->amax = r.nan ? NAN : amax;
	s->nonfinite = (int64_t)r.bad;
	s->hash = r.hash;
	s->scale = NAN;
}

LKS_CUDA_OP(stats_f32, const float *x, size_t n, lks_tensor_stats *s)
{
	cudaStream_t st = lks_cuda_enter(ctx);
	unsigned char rec[LKS_CUDA_DEVSTAT_REC];
	void *scratch;

	(void)be;
	if (lks_cuda_scratch(ctx, lks_cuda_devstat_scratch(n), &scratch)
	    || lks_cuda_devstat_queue(st, x, n, scratch)
	    || LKS_CUDA(cudaMemcpyAsync(rec, scratch, sizeof(rec), cudaMemcpyDeviceToHost, st),
	                "stats")
	    || LKS_CUDA(cudaStreamSynchronize(st), "stats"))
		return -1;
	lks_cuda_devstat_fill(rec, s);
	return 0;
}
