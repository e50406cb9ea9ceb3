/*
 * gemm.c: the deterministic CPU GEMM driver (see gemm.h), blocked BLIS-style over the
 * per-ISA kernels of gemm_kernel.h.
 *
 * C is cut into task blocks (mt, nt) on a grid; a task owns its block and runs the whole
 * K loop for it:
 *   for each K block pc (kc wide), ascending:
 *       pack B rows [j0, j0+nt) x [pc, pc+kc) into the thread's B panel
 *       for each (mc) slab of the block's rows: pack it from A into the thread's A panel,
 *           then for every (mr, nr) tile: micro(kc, A sliver, B sliver, acc tile),
 *           and after the last K block, the epilogue (scales, output rounding) over each
 *           (mc, nr) column of tiles as soon as it is done
 * The accumulator lives in C itself for float32 output and in a per-thread float32 block
 * for BF16 output. Operand conversion happens only while packing, and is exact.
 *
 * Deterministic: no element is touched by two tasks, K is never split, and the chain of
 * each element (gemm.h) does not depend on the block sizes, the grid, the thread that runs
 * a task or the ISA path, so every thread count and path gives the same bits.
 */
#include "kernels/cpu/gemm.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm_kernel.h"
#include "kernels/err.h"

/* The largest task block: B panels (kc, nt) and BF16 accumulators (mt, nt) per thread
   stay a few MiB, and packing (once per task per K block) stays a few percent of the work. */
#define LKS_GEMM_MT_MAX 1024
#define LKS_GEMM_NT_MAX 1024

static const lks_gemm_kernel *const lks_gemm_kernels[LKS_ISA_COUNT] = {
	[LKS_ISA_SCALAR] = &lks_gemm_kernel_scalar,
	[LKS_ISA_AVX2] = &lks_gemm_kernel_avx2,
	[LKS_ISA_AVX512] = &lks_gemm_kernel_avx512,
};

/* One call's plan, shared read-only by its tasks. */
typedef struct lks_gemm_plan {
	const lks_gemm *g;
	const lks_gemm_kernel *kern;
	int mt, nt;            /* task block, multiples of mr and nr */
	int tn;                /* task blocks across N; task t is block (t / tn, t % tn) */
	int scaled;            /* an operand has scales: the epilogue multiplies */
	const float *inva;     /* (M) 1/scale_a per row of C, or 1.0f */
	const float *invb;     /* (N) 1/scale_b per column of C, or 1.0f */
	float **apanel;        /* per thread: (mc, kc) packed A */
	float **bpanel;        /* per thread: (nt, kc) packed B */
	float **accbuf;        /* per thread: (mt, nt) accumulators for BF16 output, else NULL */
} lks_gemm_plan;

static int lks_round_up(int x, int m)
{
	return (x + m - 1) / m * m;
}

static int lks_operand_check(const lks_operand *op, const char *name, int rows, int K)
{
	int nscale;

	if ((unsigned)op->dtype > LKS_E5M2)
		return lks_err("gemm operand %s has an unknown dtype %d", name, (int)op->dtype);
	if (rows > 0 && K > 0 && op->ld < (size_t)K)
		return lks_err("gemm operand %s has ld %zu < K %d", name, op->ld, K);
	if (rows > 0 && K > 0 && !op->data)
		return lks_err("gemm operand %s is NULL", name);
	switch (op->scaling) {
	case LKS_SCALE_NONE: return 0;
	case LKS_SCALE_TENSOR: nscale = 1; break;
	case LKS_SCALE_AXIS: nscale = rows; break;
	default:
		return lks_err("gemm operand %s has an unknown scaling %d", name, (int)op->scaling);
	}
	if (nscale > 0 && !op->scale)
		return lks_err("gemm operand %s is scaled but its scale is NULL", name);
	/* Any scale is accepted: a NaN or zero scale (from a NaN or infinite amax) must show
	   up as NaN or inf in C, where the run's non-finite checks find it, not stop the run. */
	return 0;
}

int lks_gemm_check(const lks_gemm *g)
{
	if (!g)
		return lks_err("gemm description is NULL");
	if (g->M < 0 || g->N < 0 || g->K < 0)
		return lks_err("gemm sizes M=%d N=%d K=%d must not be negative", g->M, g->N, g->K);
	if (lks_operand_check(&g->a, "a", g->M, g->K) || lks_operand_check(&g->b, "b", g->N, g->K))
		return -1;
	if (g->out != LKS_F32 && g->out != LKS_BF16)
		return lks_err("gemm output dtype '%s' is not f32 or bf16", lks_dtype_name(g->out));
	if (g->M > 0 && g->N > 0 && g->ldc < (size_t)g->N)
		return lks_err("gemm ldc %zu < N %d", g->ldc, g->N);
	if (g->M > 0 && g->N > 0 && !g->c)
		return lks_err("gemm output c is NULL");
	return 0;
}

/* 1/scale of each row of an operand, or 1.0f where unscaled (gemm.h, the epilogue). */
static void lks_inv_scales(const lks_operand *op, int rows, float *inv)
{
	for (int i = 0; i < rows; i++) {
		if (op->scaling == LKS_SCALE_AXIS)
			inv[i] = 1.0f / op->scale[i];
		else if (op->scaling == LKS_SCALE_TENSOR)
			inv[i] = 1.0f / op->scale[0];
		else
			inv[i] = 1.0f;
	}
}

/* One (mr, nr) tile whose valid part is (m, n), accumulators at acc (ld ldacc). Edge tiles
   run the same microkernel on a scratch tile, so they follow the same chain. */
static void lks_gemm_tile(const lks_gemm_kernel *kern, int kc, const float *a, const float *b,
                          float *acc, size_t ldacc, int m, int n, int first)
{
	_Alignas(64) float t[LKS_GEMM_TILE_MAX];  /* (mr, nr) */

	if (m == kern->mr && n == kern->nr) {
		kern->micro(kc, a, b, acc, ldacc, first);
		return;
	}
	memset(t, 0, sizeof(t));
	if (!first)
		for (int i = 0; i < m; i++)
			memcpy(t + i * kern->nr, acc + (size_t)i * ldacc, (size_t)n * sizeof(float));
	kern->micro(kc, a, b, t, (size_t)kern->nr, first);
	for (int i = 0; i < m; i++)
		memcpy(acc + (size_t)i * ldacc, t + i * kern->nr, (size_t)n * sizeof(float));
}

static void lks_gemm_task(void *arg, int task, int thread)
{
	const lks_gemm_plan *p = arg;
	const lks_gemm *g = p->g;
	const lks_gemm_kernel *kern = p->kern;
	int i0 = task / p->tn * p->mt, j0 = task % p->tn * p->nt;
	int mb = g->M - i0 < p->mt ? g->M - i0 : p->mt;
	int nb = g->N - j0 < p->nt ? g->N - j0 : p->nt;
	float *apanel = p->apanel[thread];
	float *bpanel = p->bpanel[thread];
	float *acc;      /* (mb, nb) at acc[i*ldacc + j] */
	size_t ldacc;
	int bf16 = g->out == LKS_BF16, epilogue = p->scaled || bf16;
	char *out = g->c;  /* C, element (i, j) at byte (i*ldc + j) * osz */
	size_t osz = lks_dtype_size(g->out);

	if (g->out == LKS_F32) {
		acc = (float *)g->c + (size_t)i0 * g->ldc + j0;
		ldacc = g->ldc;
	} else {
		acc = p->accbuf[thread];
		ldacc = (size_t)p->nt;
	}
	/* K = 0 still runs one empty block, whose microkernels store +0.0f. */
	for (int pc = 0; pc == 0 || pc < g->K; pc += kern->kc) {
		int kc = g->K - pc < kern->kc ? g->K - pc : kern->kc;
		int first = pc == 0, last = pc + kc >= g->K;

		kern->pack(g->b.dtype, g->b.data, g->b.ld, j0, nb, pc, kc, kern->nr,
		           bpanel);
		for (int ic = 0; ic < mb; ic += kern->mc) {
			int mc = mb - ic < kern->mc ? mb - ic : kern->mc;

			kern->pack(g->a.dtype, g->a.data, g->a.ld, i0 + ic, mc, pc, kc,
			           kern->mr, apanel);
			for (int jr = 0; jr < nb; jr += kern->nr) {
				const float *b = bpanel + (size_t)jr * kc;  /* (kc, nr) */
				int n = nb - jr < kern->nr ? nb - jr : kern->nr;

				for (int ir = 0; ir < mc; ir += kern->mr) {
					const float *a = apanel + (size_t)ir * kc;  /* (kc, mr) */
					int m = mc - ir < kern->mr ? mc - ir : kern->mr;

					lks_gemm_tile(kern, kc, a, b, acc + (size_t)(ic + ir) * ldacc + jr,
					              ldacc, m, n, first);
				}
				/* the (mc, nr) column of tiles is finished and still in L1: the
				   epilogue now costs no pass over C from memory */
				if (last && epilogue)
					kern->epilogue(mc, n, acc + (size_t)ic * ldacc + jr, ldacc, p->scaled,
					               p->inva + i0 + ic, p->invb + j0 + jr, bf16,
					               out + ((size_t)(i0 + ic) * g->ldc + (size_t)(j0 + jr)) * osz,
					               g->ldc);
			}
		}
	}
}

/* Chooses the task grid: blocks of at most MT_MAX x NT_MAX, cut further (the longer side
   first) until every thread has a task. Any grid gives the same bits; this is for speed. */
static void lks_gemm_grid(lks_gemm_plan *p, int M, int N, int nthreads)
{
	const lks_gemm_kernel *kern = p->kern;
	int tm = (M - 1) / LKS_GEMM_MT_MAX + 1;  /* M, N > 0; no overflow near INT_MAX */
	int tn = (N - 1) / LKS_GEMM_NT_MAX + 1;

	while (tm * tn < nthreads) {
		int can_m = M / (tm + 1) >= kern->mr, can_n = N / (tn + 1) >= kern->nr;

		if (can_m && (!can_n || M / tm >= N / tn))
			tm++;
		else if (can_n)
			tn++;
		else
			break;
	}
	p->mt = lks_round_up((M - 1) / tm + 1, kern->mr);
	p->nt = lks_round_up((N - 1) / tn + 1, kern->nr);
	p->tn = (N - 1) / p->nt + 1;
}

static size_t lks_align64(size_t bytes)
{
	return (bytes + 63) / 64 * 64;
}

/*
 * The packing buffers of the last call, kept for the next one. A few MiB allocated and
 * freed per call go back to the kernel each time, and touching them again costs a page
 * fault per 4 KiB, a few percent of a 1024^3 GEMM; a training step makes the same calls
 * over and over. Concurrent calls each take the block or find none: whoever finds none
 * allocates, and whoever returns a block while another is cached frees the smaller one.
 * A block is read only by the call that holds it: out of the cache, it is nobody else's.
 * The last block is still reachable at exit.
 */
struct lks_gemm_ws {
	size_t bytes;
	_Alignas(64) char data[];
};

static _Atomic(struct lks_gemm_ws *) lks_gemm_ws_cache;

static struct lks_gemm_ws *lks_gemm_ws_take(size_t bytes)
{
	struct lks_gemm_ws *ws = atomic_exchange(&lks_gemm_ws_cache, NULL);

	if (ws && ws->bytes >= bytes)
		return ws;
	free(ws);
	ws = aligned_alloc(64, lks_align64(sizeof(*ws) + bytes));
	if (ws)
		ws->bytes = bytes;
	return ws;
}

static void lks_gemm_ws_give(struct lks_gemm_ws *ws)
{
	struct lks_gemm_ws *old;
	size_t bytes;

	if (!ws)
		return;
	/* once in the cache, ws belongs to whoever takes it next, who may free it at once:
	   its size is read before, and only blocks taken out of the cache are read after */
	bytes = ws->bytes;
	old = atomic_exchange(&lks_gemm_ws_cache, ws);
	if (old && old->bytes > bytes) {  /* keep the larger one */
		old = atomic_exchange(&lks_gemm_ws_cache, old);
		free(old);  /* ws, or a block another call gave back meanwhile */
	} else {
		free(old);
	}
}

int lks_gemm_run_isa(lks_pool *pool, const lks_gemm *g, lks_isa isa)
{
	lks_gemm_plan p = { .g = g };
	int nthreads = lks_pool_threads(pool);
	size_t asz, bsz, csz, per;  /* bytes per thread: A panel, B panel, accumulators */
	float *inv = NULL;
	struct lks_gemm_ws *ws = NULL;
	char *buf;
	float **ptrs = NULL;
	int rc = -1, ntasks;

	if (lks_gemm_check(g))
		return -1;
	if ((unsigned)isa >= LKS_ISA_COUNT)
		return lks_err("unknown ISA path %d", (int)isa);
	if (!lks_isa_supported(isa))
		return lks_err("this CPU cannot run the '%s' path", lks_isa_name(isa));
	if (g->M == 0 || g->N == 0)
		return 0;

	p.kern = lks_gemm_kernels[isa];
	lks_gemm_grid(&p, g->M, g->N, nthreads);
	ntasks = ((g->M - 1) / p.mt + 1) * p.tn;

	asz = lks_align64((size_t)lks_round_up(p.kern->mc, p.kern->mr) * p.kern->kc * sizeof(float));
	bsz = lks_align64((size_t)p.nt * p.kern->kc * sizeof(float));
	csz = g->out == LKS_BF16 ? lks_align64((size_t)p.mt * p.nt * sizeof(float)) : 0;
	per = asz + bsz + csz;
	inv = malloc(((size_t)g->M + (size_t)g->N) * sizeof(float));
	ptrs = malloc(3 * (size_t)nthreads * sizeof(*ptrs));
	ws = lks_gemm_ws_take(per * (size_t)nthreads);
	if (!inv || !ptrs || !ws) {
		lks_err("out of memory for a %dx%dx%d gemm on %d threads", g->M, g->N, g->K, nthreads);
		goto out;
	}
	buf = ws->data;
	lks_inv_scales(&g->a, g->M, inv);
	lks_inv_scales(&g->b, g->N, inv + g->M);
	p.inva = inv;
	p.invb = inv + g->M;
	p.scaled = g->a.scaling != LKS_SCALE_NONE || g->b.scaling != LKS_SCALE_NONE;
	p.apanel = ptrs;
	p.bpanel = ptrs + nthreads;
	p.accbuf = ptrs + 2 * nthreads;
	for (int t = 0; t < nthreads; t++) {
		char *base = buf + per * (size_t)t;

		p.apanel[t] = (float *)base;
		p.bpanel[t] = (float *)(base + asz);
		p.accbuf[t] = csz ? (float *)(base + asz + bsz) : NULL;
	}
	lks_pool_run(pool, ntasks, lks_gemm_task, &p);
	rc = 0;
out:
	lks_gemm_ws_give(ws);
	free(ptrs);
	free(inv);
	return rc;
}

int lks_gemm_run(lks_pool *pool, const lks_gemm *g)
{
	return lks_gemm_run_isa(pool, g, lks_isa_active());
}
