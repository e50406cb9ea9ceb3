/*
 * update.cu: the CUDA backend's optimizer step without the host between its parts
 * (backend.h's sumsq and update): the gradient's sum of squares in the CPU's exact order,
 * on the device, then the clip and AdamW in one launch that reads the clip's coefficient
 * from the device. One download of 8 bytes (the sum of squares, for the step's row) ends it.
 *
 * The order is kernels/cpu/stats_acc.h's: lane l sums x[i]^2 in double for i = l mod 32,
 * ascending; then the 32 lanes as a balanced tree, pairs first (t[l] = t[2l] + t[2l+1]).
 * One warp: thread l runs lane l's chain, and the xor butterfly (1, 2, 4, 8, 16) is that
 * tree, thread 0 adding thread 1's lane to its own, then the pair of lanes 2 and 3, and so
 * on (IEEE addition commutes, so the order of the two operands does not matter). The square
 * of a float is exact in double (48 significant bits), so a contracted fma would give the
 * same bits as the product then the sum. The chain is n/32 dependent double adds; cp.async
 * keeps SQ_STAGES blocks of 32 x SQ_U floats on their way into shared memory, so the adds
 * wait for each other and not for memory.
 *
 * The coefficient is the runner's, element/ops.h's lks_clip_coef of norm = sqrt(ss); CUDA's
 * double sqrt and division round to nearest as the host's do. The clip is
 * backend_cpu.c's (g *= coef, in float) and AdamW kernels/element/ops.h's lks_adamw_one.
 *
 * With LKS_CUDA_DEVICE_PATHS=0, the sum of squares is downloaded and made on the host, and
 * the clip and AdamW (per part) are the backend's kernels, as the runner called them
 * before update.
 */
#include <cuda_pipeline.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/element/ops.h"

extern "C" {
#include "kernels/err.h"
}

#define SQ_U 32                   /* floats of one lane's chain in a block */
#define SQ_BLOCK (32 * SQ_U)      /* a block: 4 KiB, 32 consecutive floats per row */
#define SQ_STAGES 8               /* blocks in flight: 256 adds of each lane ahead */

/* what the sum of squares leaves on the device for the update */
struct lks_cuda_upd_rec {
	double ss;
	float coef;
	int clip;
};

struct lks_cuda_upd {
	struct lks_cuda_upd_rec *rec;    /* device */
	lks_update_part *dpart, *hpart;  /* the parts on the device, and what they hold */
	int nparts, cap;
};

/* block src (SQ_BLOCK floats) into dst, in 16-byte pieces where src is so aligned */
__device__ static void lks_sq_issue(float *dst, const float *src, int vec, int lane)
{
	if (vec) {
		for (int p = lane; p < SQ_BLOCK / 4; p += 32)
			__pipeline_memcpy_async(dst + 4 * p, src + 4 * p, 16);
	} else {
		for (int p = lane; p < SQ_BLOCK; p += 32)
			__pipeline_memcpy_async(dst + p, src + p, 4);
	}
}

/* <<<1, 32>>>: *ss = the sum of squares of x; with rec, the clip's decision there too */
__global__ static void lks_sumsq_kernel(const float *x, size_t n, float clip, double *ss,
                                        struct lks_cuda_upd_rec *rec)
{
	__shared__ __align__(16) float buf[SQ_STAGES][SQ_BLOCK];
	const int l = threadIdx.x;
	const size_t nb = n / SQ_BLOCK;
	const int vec = ((uintptr_t)x & 15) == 0;
	double acc = 0.0;

	for (int s = 0; s < SQ_STAGES - 1; s++) {
		if ((size_t)s < nb)
			lks_sq_issue(buf[s], x + (size_t)s * SQ_BLOCK, vec, l);
		__pipeline_commit();
	}
	for (size_t b = 0; b < nb; b++) {
		size_t next = b + SQ_STAGES - 1;
		const float *f = buf[b % SQ_STAGES];

		if (next < nb)
			lks_sq_issue(buf[next % SQ_STAGES], x + next * SQ_BLOCK, vec, l);
		__pipeline_commit();
		__pipeline_wait_prior(SQ_STAGES - 1);  /* block b is in */
		__syncwarp();                          /* and every lane's part of it */
#pragma unroll
		for (int j = 0; j < SQ_U; j++) {
			double v = (double)f[32 * j + l];

			acc += v * v;
		}
		__syncwarp();  /* read before the buffer is filled again */
	}
	for (size_t i = nb * SQ_BLOCK + (size_t)l; i < n; i += 32) {
		double v = (double)x[i];

		acc += v * v;
	}
	for (int o = 1; o < 32; o <<= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, o);
	if (l == 0) {
		double norm = sqrt(acc);
		*ss = acc;
		if (rec) {
			rec->coef = 1.0f;
			rec->clip = lks_clip_coef(norm, clip, &rec->coef);
		}
	}
}

/* the part holding element i (parts sorted by off), or NULL */
__device__ static const lks_update_part *lks_part_of(const lks_update_part *part, int nparts,
                                                     size_t i)
{
	int lo = 0, hi = nparts - 1;

	while (lo < hi) {  /* the last part with off <= i */
		int mid = (lo + hi + 1) / 2;

		if (part[mid].off <= i)
			lo = mid;
		else
			hi = mid - 1;
	}
	return nparts > 0 && part[lo].off <= i && i - part[lo].off < part[lo].n ? &part[lo] : NULL;
}

__global__ static void lks_update_kernel(float *p, float *g, float *m, float *v, size_t n,
                                         const lks_update_part *part, int nparts,
                                         const struct lks_cuda_upd_rec *rec, float lr,
                                         float b1, float b2, float eps, float bc1, float bc2)
{
	const int clip = rec->clip;
	const float coef = rec->coef;

	LKS_FOR_EACH(i, n) {
		const lks_update_part *q = lks_part_of(part, nparts, i);
		float gi = g[i];

		if (clip)
			g[i] = gi = gi * coef;
		if (q)
			lks_adamw_one(&p[i], gi, &m[i], &v[i], lr, b1, b2, eps, q->wd, bc1, bc2);
	}
}

/* ctx's update state, made at the first use */
static int lks_cuda_upd_get(void *ctx, struct lks_cuda_upd **out)
{
	struct lks_cuda_upd **u = lks_cuda_ctx_upd(ctx);

	if (!*u) {
		struct lks_cuda_upd *n = (struct lks_cuda_upd *)calloc(1, sizeof(*n));

		if (!n)
			return lks_err("out of memory for the update's state");
		if (LKS_CUDA(cudaMalloc((void **)&n->rec, sizeof(*n->rec)), "the update's record")) {
			free(n);
			return -1;
		}
		*u = n;
	}
	*out = *u;
	return 0;
}

void lks_cuda_upd_free(struct lks_cuda_upd *u)
{
	if (!u)
		return;
	cudaFree(u->rec);
	cudaFree(u->dpart);
	free(u->hpart);
	free(u);
}

/* the parts sorted, apart and within the n elements */
static int lks_cuda_parts_check(const lks_update *up, size_t n)
{
	for (int i = 0; i < up->nparts; i++)
		if (up->part[i].off > n || up->part[i].n > n - up->part[i].off
		    || (i > 0 && up->part[i].off < up->part[i - 1].off + up->part[i - 1].n))
			return lks_err("update: part %d (elements %zu + %zu) is not within the %zu "
			               "elements, after part %d", i, up->part[i].off, up->part[i].n, n,
			               i - 1);
	return 0;
}

/* the parts on the device: uploaded when they differ from the last ones (once a run) */
static int lks_cuda_upd_parts(void *ctx, struct lks_cuda_upd *u, const lks_update *up,
                              size_t n)
{
	size_t bytes = (size_t)up->nparts * sizeof(*up->part);

	if (lks_cuda_parts_check(up, n))
		return -1;
	if (up->nparts == u->nparts && (bytes == 0 || !memcmp(up->part, u->hpart, bytes)))
		return 0;
	if (up->nparts > u->cap) {
		lks_update_part *h = (lks_update_part *)malloc(bytes);

		if (!h)
			return lks_err("out of memory for the update's parts");
		cudaFree(u->dpart);
		u->dpart = NULL;
		free(u->hpart);
		u->hpart = h;
		u->cap = 0;
		if (LKS_CUDA(cudaMalloc((void **)&u->dpart, bytes), "the update's parts"))
			return -1;
		u->cap = up->nparts;
	}
	memcpy(u->hpart, up->part, bytes);
	u->nparts = up->nparts;
	if (bytes && LKS_CUDA(cudaMemcpyAsync(u->dpart, u->hpart, bytes, cudaMemcpyHostToDevice,
	                                      lks_cuda_enter(ctx)), "the update's parts"))
		return -1;
	return 0;
}

/* *ss <- the record's sum of squares, once the stream has come to it */
static int lks_cuda_upd_read(void *ctx, struct lks_cuda_upd *u, double *ss, const char *what)
{
	cudaStream_t st = lks_cuda_enter(ctx);

	return LKS_CUDA(cudaGetLastError(), what)
	    || LKS_CUDA(cudaMemcpyAsync(ss, &u->rec->ss, sizeof(*ss), cudaMemcpyDeviceToHost, st),
	                what)
	    || LKS_CUDA(cudaStreamSynchronize(st), what) ? -1 : 0;
}

/* With LKS_CUDA_DEVICE_PATHS=0: the step as the runner made it before update, the sum of
   squares downloaded and made on the host, the clip and AdamW (per part) as kernels */
static int lks_cuda_update_host(const lks_backend *be, void *ctx, float *p, float *g,
                                float *m, float *v, size_t n, const lks_update *up,
                                double *ss)
{
	float coef;

	if (lks_cuda_parts_check(up, n))
		return -1;
	if (lks_cuda_sumsq_host(ctx, g, n, ss))
		return -1;
	if (lks_clip_coef(sqrt(*ss), up->clip, &coef) && lks_cuda_clip(be, ctx, g, n, coef))
		return -1;
	for (int i = 0; i < up->nparts; i++) {
		const lks_update_part *q = &up->part[i];

		if (lks_cuda_adamw(be, ctx, p + q->off, g + q->off, m + q->off, v + q->off, q->n,
		                   up->lr, up->b1, up->b2, up->eps, q->wd, up->bc1, up->bc2))
			return -1;
	}
	return 0;
}

LKS_CUDA_OP(sumsq, const float *x, size_t n, double *out)
{
	struct lks_cuda_upd *u = NULL;

	(void)be;
	if (!lks_cuda_device_paths())
		return lks_cuda_sumsq_host(ctx, x, n, out);
	if (lks_cuda_upd_get(ctx, &u))
		return -1;
	lks_sumsq_kernel<<<1, 32, 0, lks_cuda_enter(ctx)>>>(x, n, 0.0f, &u->rec->ss, u->rec);
	return lks_cuda_upd_read(ctx, u, out, "sumsq");
}

LKS_CUDA_OP(update, float *p, float *g, float *m, float *v, size_t n, const lks_update *up,
            double *ss)
{
	struct lks_cuda_upd *u = NULL;
	cudaStream_t st = lks_cuda_enter(ctx);

	if (!lks_cuda_device_paths())
		return lks_cuda_update_host(be, ctx, p, g, m, v, n, up, ss);
	if (lks_cuda_upd_get(ctx, &u) || lks_cuda_upd_parts(ctx, u, up, n))
		return -1;
	lks_sumsq_kernel<<<1, 32, 0, st>>>(g, n, up->clip, &u->rec->ss, u->rec);
	if (n > 0)
		lks_update_kernel<<<lks_cuda_blocks(n), LKS_CUDA_THREADS, 0, st>>>(
			p, g, m, v, n, u->dpart, u->nparts, u->rec, up->lr, up->b1, up->b2, up->eps,
			up->bc1, up->bc2);
	return lks_cuda_upd_read(ctx, u, ss, "update");
}

void lks_cuda_sumsq_launch(cudaStream_t st, const float *x, size_t n, double *ss)
{
	lks_sumsq_kernel<<<1, 32, 0, st>>>(x, n, 0.0f, ss, NULL);
}
