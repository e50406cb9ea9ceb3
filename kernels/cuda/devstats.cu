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
 *              one thread. tests/kernels/test_xxh3_split.c holds those lines to libxxhash
 *              on the CPU.
 *
 * The tracer's path (backend_cuda.cu, measure_begin): the tensor is copied into a meter
 * slot on the compute stream, measured on the meter's stream, and only the record comes
 * home. With LKS_CUDA_DEVICE_PATHS=0 the tensor is downloaded and measured on the host
 * instead.
 */
#include <stdint.h>
#include <string.h>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/element/fp8_sq.h"
#include "kernels/element/xxh3.h"

extern "C" {
#include "kernels/cpu/stats.h"
#include "kernels/err.h"
}

/* the record, first in the scratch (LKS_CUDA_DEVSTAT_REC bytes), the blocks' sums after it:
   a float tensor's ss, maxbits, nan; a quantized one's lo, hi (the 128-bit sum of squares
   in the format's units), maxmag, smin; both bad and hash */
struct lks_devstat {
	double ss;
	unsigned maxbits, nan;
	unsigned long long bad, hash, lo, hi;
	unsigned maxmag;
	float smin;
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

/* FP8 codes (rows, cols) at leading dimension ldq, as stats_acc.h's lks_fp8_stats_one takes
   them: the largest magnitude code, the non-finite ones, and the squares of the finite ones
   as a 128-bit integer (lo, hi): per thread, per warp, then an atomic add of lo whose carry
   goes into hi, exact in any order */
__global__ static void lks_devstat_codes_kernel(const uint8_t *q, int rows, int cols,
                                                size_t ldq, int fmt, struct lks_devstat *r)
{
	size_t n = (size_t)rows * (size_t)cols;
	unsigned maxmag = 0;
	unsigned long long bad = 0, lo = 0, hi = 0;

	LKS_FOR_EACH(e, n) {
		unsigned mag = q[ldq == (size_t)cols ? e : e / cols * ldq + e % cols] & 0x7fu;

		maxmag = mag > maxmag ? mag : maxmag;
		if (mag >= lks_fp8_first_nonfinite(fmt)) {
			bad++;
		} else {
			unsigned long long v = lks_fp8_sq_units(mag, fmt);

			lo += v;
			hi += lo < v;
		}
	}
	for (int o = 16; o > 0; o >>= 1) {
		unsigned long long ol = __shfl_xor_sync(0xffffffffu, lo, o);
		unsigned long long oh = __shfl_xor_sync(0xffffffffu, hi, o);

		maxmag = max(maxmag, __shfl_xor_sync(0xffffffffu, maxmag, o));
		bad += __shfl_xor_sync(0xffffffffu, bad, o);
		lo += ol;
		hi += oh + (lo < ol);
	}
	if ((threadIdx.x & 31) == 0) {
		unsigned long long old = atomicAdd(&r->lo, lo);

		atomicAdd(&r->hi, hi + (old + lo < old));
		atomicMax(&r->maxmag, maxmag);
		atomicAdd(&r->bad, bad);
	}
}

/* <<<1, 1>>>: the smallest scale in order, a NaN taking it (backend_cpu.c's stats_quant) */
__global__ static void lks_devstat_smin_kernel(const float *scale, size_t ns,
                                               struct lks_devstat *r)
{
	float smin = INFINITY;

	for (size_t i = 0; i < ns; i++)
		smin = scale[i] < smin || isnan(scale[i]) ? scale[i] : smin;
	r->smin = smin;
}

/* phase A: block b's 8 sums into d[8 b ...] */
__global__ static void lks_devstat_blocks_kernel(lks_xxh3_src s, size_t nb,
                                                 unsigned long long *d)
{
	LKS_FOR_EACH(b, nb) {
		uint64_t sums[8];

		lks_xxh3_block_sums(&s, b, sums);
		for (int i = 0; i < 8; i++)
			d[8 * b + (size_t)i] = sums[i];
	}
}

#define LKS_CHAIN_AHEAD 32  /* blocks' sums loaded before the chain steps through them */

/* phase B, <<<1, 8>>>: lane i's chain over the blocks, then thread 0 ends the hash; a
   stream of 240 bytes or fewer is thread 0's alone */
__global__ static void lks_devstat_chain_kernel(lks_xxh3_src s, size_t nb,
                                                const unsigned long long *d,
                                                struct lks_devstat *r)
{
	__shared__ uint64_t acc[8];
	const int i = threadIdx.x;

	if (lks_xxh3_len(&s) <= 240) {
		if (i == 0)
			r->hash = lks_xxh3_short(&s);
		return;
	}
	uint64_t a = lks_xxh3_lane_init(i);
	size_t b = 0;

	for (; b + LKS_CHAIN_AHEAD <= nb; b += LKS_CHAIN_AHEAD) {  /* loads ahead of the chain */
		uint64_t v[LKS_CHAIN_AHEAD];

#pragma unroll
		for (int k = 0; k < LKS_CHAIN_AHEAD; k++)
			v[k] = d[8 * (b + (size_t)k) + (size_t)i];
#pragma unroll
		for (int k = 0; k < LKS_CHAIN_AHEAD; k++)
			a = lks_xxh3_chain_step(a, v[k], i);
	}
	for (; b < nb; b++)
		a = lks_xxh3_chain_step(a, d[8 * b + (size_t)i], i);
	acc[i] = a;
	__syncthreads();
	if (i == 0) {
		uint64_t t[8];

		lks_xxh3_tail_sums(&s, t);
		for (int k = 0; k < 8; k++)
			acc[k] += t[k];
		r->hash = lks_xxh3_merge(acc, lks_xxh3_len(&s));
	}
}

/* the blocks' sums' bytes of a stream of len bytes */
static size_t lks_devstat_sums(size_t len)
{
	return len > 240 ? 64 * lks_xxh3_nblocks(len) : 0;
}

/* the hash of s into r, the blocks' sums at d */
static void lks_devstat_hash(cudaStream_t st, lks_xxh3_src s, unsigned long long *d,
                             struct lks_devstat *r)
{
	size_t len = lks_xxh3_len(&s), nb = len > 240 ? lks_xxh3_nblocks(len) : 0;

	if (nb > 0)
		lks_devstat_blocks_kernel<<<lks_cuda_blocks(nb), LKS_CUDA_THREADS, 0, st>>>(s, nb, d);
	lks_devstat_chain_kernel<<<1, 8, 0, st>>>(s, nb, d, r);
}

size_t lks_cuda_devstat_scratch(size_t n)
{
	return LKS_CUDA_DEVSTAT_REC + lks_devstat_sums(4 * n);
}

int lks_cuda_devstat_queue(cudaStream_t st, const float *x, size_t n, void *scratch)
{
	struct lks_devstat *r = (struct lks_devstat *)scratch;
	lks_xxh3_src s = { NULL, 0, (const uint32_t *)x, n };

	if (LKS_CUDA(cudaMemsetAsync(r, 0, sizeof(*r), st), "stats"))
		return -1;
	lks_cuda_sumsq_launch(st, x, n, &r->ss);
	if (n > 0)
		lks_devstat_bits_kernel<<<lks_cuda_blocks(n), LKS_CUDA_THREADS, 0, st>>>(x, n, r);
	lks_devstat_hash(st, s, (unsigned long long *)((char *)scratch + LKS_CUDA_DEVSTAT_REC), r);
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

int lks_cuda_devstat_quant_ok(const lks_quant *q)
{
	return q->ldq == (size_t)q->cols || q->rows <= 1;
}

size_t lks_cuda_devstat_scratch_q(const lks_quant *q)
{
	size_t n = (size_t)q->rows * (size_t)q->cols;

	return LKS_CUDA_DEVSTAT_REC + lks_devstat_sums(n + 4 * lks_quant_nscales(q));
}

int lks_cuda_devstat_queue_q(cudaStream_t st, const uint8_t *codes, const float *scales,
                             const lks_quant *q, void *scratch)
{
	struct lks_devstat *r = (struct lks_devstat *)scratch;
	size_t n = (size_t)q->rows * (size_t)q->cols, ns = lks_quant_nscales(q);
	lks_xxh3_src s = { codes, n, (const uint32_t *)scales, ns };

	if (!lks_cuda_devstat_quant_ok(q))
		return lks_err("stats: codes with a leading dimension past their columns");
	if (LKS_CUDA(cudaMemsetAsync(r, 0, sizeof(*r), st), "stats"))
		return -1;
	if (n > 0)
		lks_devstat_codes_kernel<<<lks_cuda_blocks(n), LKS_CUDA_THREADS, 0, st>>>(
			codes, q->rows, q->cols, q->ldq, (int)q->fmt, r);
	lks_devstat_smin_kernel<<<1, 1, 0, st>>>(scales, ns, r);
	lks_devstat_hash(st, s, (unsigned long long *)((char *)scratch + LKS_CUDA_DEVSTAT_REC), r);
	return LKS_CUDA(cudaGetLastError(), "stats");
}

void lks_cuda_devstat_fill_q(const void *rec, const lks_quant *q, lks_tensor_stats *s)
{
	struct lks_devstat r;
	lks_fp8_stats st;

	memcpy(&r, rec, sizeof(r));
	memset(&st, 0, sizeof(st));
	st.sq = (unsigned __int128)r.hi << 64 | r.lo;
	st.maxmag = r.maxmag;
	st.nonfinite = (int64_t)r.bad;
	memset(s, 0, sizeof(*s));
	lks_fp8_stats_result(&st, (int)q->fmt, &s->l2, &s->amax, &s->nonfinite);
	s->hash = r.hash;
	s->scale = r.smin;
	s->underflow = (int64_t)q->underflow;
	s->saturated = (int64_t)q->saturated;
}

/* the statistics of n floats, or (x NULL) of q's codes and scales, on ctx's stream */
static int lks_devstat_now(void *ctx, const float *x, size_t n, const lks_quant *q,
                           lks_tensor_stats *s)
{
	cudaStream_t st = lks_cuda_enter(ctx);
	unsigned char rec[LKS_CUDA_DEVSTAT_REC];
	void *scratch;

	if (lks_cuda_scratch(ctx, x ? lks_cuda_devstat_scratch(n) : lks_cuda_devstat_scratch_q(q),
	                     &scratch)
	    || (x ? lks_cuda_devstat_queue(st, x, n, scratch)
	          : lks_cuda_devstat_queue_q(st, q->q, q->scale, q, scratch))
	    || LKS_CUDA(cudaMemcpyAsync(rec, scratch, sizeof(rec), cudaMemcpyDeviceToHost, st),
	                "stats")
	    || LKS_CUDA(cudaStreamSynchronize(st), "stats"))
		return -1;
	if (x)
		lks_cuda_devstat_fill(rec, s);
	else
		lks_cuda_devstat_fill_q(rec, q, s);
	return 0;
}

LKS_CUDA_OP(stats_f32, const float *x, size_t n, lks_tensor_stats *s)
{
	(void)be;
	return lks_devstat_now(ctx, x, n, NULL, s);
}

int lks_cuda_stats_quant_dev(void *ctx, const lks_quant *q, lks_tensor_stats *s)
{
	return lks_devstat_now(ctx, NULL, 0, q, s);
}
