/*
 * gemm_lt.cu: lockstep's GEMM through cuBLASLt (see gemm_lt.h). The plan (lt_map.h, tested
 * on the CPU) says everything; this file translates it into cuBLASLt's descriptors, hands
 * cuBLASLt 1/scale from a small kernel, makes the descriptors and chooses the algorithm
 * once per plan key (a later GEMM of the key sets only its scale pointers, where they
 * moved) and reads back what was chosen.
 */
extern "C" {
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/err.h"
}

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cublasLt.h>
#include <cuda_runtime.h>

/* Shapes of one run: a layer's forward, dgrad and wgrad, a few layer kinds, the head. When
   more come, the oldest choice is replaced (chosen again, the same way, if it returns). */
#define LKS_LT_CACHE 64

/* A timed choice (LKS_GEMM_LIBRARY_TIMED): the candidates asked of the heuristic, and the
   GEMMs timed back to back of each, after one untimed (its kernel's first launch loads it) */
#define LKS_LT_CANDIDATES 8
#define LKS_LT_TIMED_REPS 5

/* The descriptors of one shape (a key); all NULL until made. */
typedef struct lks_lt_descs {
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t a, b, d;  /* C = D: one layout */
	cublasLtMatmulPreference_t pref;
} lks_lt_descs;

/* A shape's choice and its descriptors, made once: a later GEMM of the shape sets only
   its scale pointers, where they moved (the 1/scale scratch grows) */
typedef struct lks_lt_entry {
	int valid;
	lks_lt_key key;
	cublasLtMatmulAlgo_t algo;
	lks_lt_algo info;         /* info.fallback: cuBLASLt offered no algorithm */
	lks_lt_descs d;
	const float *sa, *sb;     /* the scale pointers d.op holds */
} lks_lt_entry;

struct lks_lt_ctx {
	cublasLtHandle_t handle;
	void *workspace;          /* device, size bytes */
	size_t size;
	float *scratch;           /* device: 1/scale of cuBLASLt's A, then of its B */
	size_t scratch_len;       /* floats */
	lks_lt_entry cache[LKS_LT_CACHE];
	int next;                 /* the entry replaced when the cache is full */
};


/* 0 when a cuBLASLt or CUDA call succeeded, else its status recorded with file:line */
/* cuBLAS's status as cuda_check.h's LKS_CUDA does CUDA's: "cublasLt: CALL: WHY (file:line)" */
static int lks_cublas_check_at(cublasStatus_t st, const char *what, const char *file, int line)
{
	const char *base = strrchr(file, '/');

	if (st == CUBLAS_STATUS_SUCCESS)
		return 0;
	return lks_err("cublasLt: %s: %s (%s) (%s:%d)", what, cublasLtGetStatusName(st),
	               cublasLtGetStatusString(st), base ? base + 1 : file, line);
}
#define LKS_CUBLAS(x) lks_cublas_check_at((x), #x, __FILE__, __LINE__)

/* a call that failed: ret = -1 and go to out */
#define LKS_LT_TRY(failed)                                                           \
	do {                                                                         \
		if (failed) {                                                        \
			ret = -1;                                                    \
			goto out;                                                    \
		}                                                                    \
	} while (0)
#define LKS_LT(x) LKS_LT_TRY(LKS_CUBLAS(x))
#define LKS_LT_CUDA(x) LKS_LT_TRY(LKS_CUDA((x), #x))

static cudaDataType_t lks_lt_type(lks_dtype t)
{
	switch (t) {
	case LKS_BF16: return CUDA_R_16BF;
	case LKS_E4M3: return CUDA_R_8F_E4M3;
	case LKS_E5M2: return CUDA_R_8F_E5M2;
	default: return CUDA_R_32F;
	}
}

static cublasOperation_t lks_lt_cu_op(lks_lt_op op)
{
	return op == LKS_LT_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N;
}

static int32_t lks_lt_cu_scale_mode(lks_lt_scale_mode m)
{
	return m == LKS_LT_SCALE_OUTER_VEC ? (int32_t)CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
	                                   : (int32_t)CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

/* out[i] = 1/scale of value i cuBLASLt reads: the source's i-th, its only one repeated
   (broadcast), or 1 when there is none. The same IEEE division as the CPU's epilogue
   (gemm.h; nvcc's -prec-div=true). */
__global__ static void lks_lt_inv_scale_kernel(const float *src, int len, int broadcast,
                                               float *out)
{
	int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);

	if (i < len)
		out[i] = 1.0f / (src ? src[broadcast ? 0 : i] : 1.0f);
}

/* Room in scratch for n floats. cudaFree waits for the work queued on the device, so the
   old buffer is no longer read when it goes. */
static int lks_lt_scratch(lks_lt_ctx *ctx, size_t n)
{
	int ret = 0;

	if (n <= ctx->scratch_len)
		return 0;
	if (ctx->scratch)
		LKS_LT_CUDA(cudaFree(ctx->scratch));
	ctx->scratch = NULL;
	ctx->scratch_len = 0;
	LKS_LT_CUDA(cudaMalloc((void **)&ctx->scratch, n * sizeof(float)));
	ctx->scratch_len = n;
out:
	return ret;
}

/* The scales cuBLASLt reads, 1/lockstep's, computed on s into scratch: *sa, *sb (NULL
   where the plan has none). A's vector starts at 0, B's at a multiple of 64 floats, so
   each is 256-byte aligned. */
static int lks_lt_inv_scales(lks_lt_ctx *ctx, cudaStream_t s, const lks_lt_plan *p,
                             const float **sa, const float **sb)
{
	const lks_lt_scale *sc[2] = { &p->scale_a, &p->scale_b };
	const float **dst[2] = { sa, sb };
	size_t off[2], n = 0;
	int ret = 0;

	for (int i = 0; i < 2; i++) {
		off[i] = n;
		n += ((size_t)sc[i]->len + 63) / 64 * 64;
	}
	if (lks_lt_scratch(ctx, n))
		return -1;
	for (int i = 0; i < 2; i++) {
		*dst[i] = NULL;
		if (sc[i]->mode == LKS_LT_SCALE_NONE)
			continue;
		lks_lt_inv_scale_kernel<<<(unsigned)((sc[i]->len + 255) / 256), 256, 0, s>>>(
			sc[i]->src, sc[i]->len, sc[i]->broadcast, ctx->scratch + off[i]);
		LKS_LT_CUDA(cudaGetLastError());
		*dst[i] = ctx->scratch + off[i];
	}
out:
	return ret;
}

static void lks_lt_descs_free(lks_lt_descs *d)
{
	if (d->pref)
		cublasLtMatmulPreferenceDestroy(d->pref);
	if (d->d)
		cublasLtMatrixLayoutDestroy(d->d);
	if (d->b)
		cublasLtMatrixLayoutDestroy(d->b);
	if (d->a)
		cublasLtMatrixLayoutDestroy(d->a);
	if (d->op)
		cublasLtMatmulDescDestroy(d->op);
	std::memset(d, 0, sizeof(*d));
}

static int lks_lt_layout(cublasLtMatrixLayout_t *l, const lks_lt_mat *m)
{
	int ret = 0;

	LKS_LT(cublasLtMatrixLayoutCreate(l, lks_lt_type(m->type), m->rows, m->cols, m->ld));
out:
	return ret;
}

/* The operation of plan p with scale pointers sa, sb (device, or NULL) */
static int lks_lt_op_desc(cublasLtMatmulDesc_t *op, const lks_lt_plan *p, const float *sa,
                          const float *sb)
{
	cublasOperation_t ta = lks_lt_cu_op(p->transa), tb = lks_lt_cu_op(p->transb);
	int8_t fast = (int8_t)p->fast_accum;
	int32_t mode_a = lks_lt_cu_scale_mode(p->scale_a.mode);
	int32_t mode_b = lks_lt_cu_scale_mode(p->scale_b.mode);
	int ret = 0;

	LKS_LT(cublasLtMatmulDescCreate(op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	LKS_LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
	LKS_LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
	if (p->a.type == LKS_E4M3 || p->a.type == LKS_E5M2)
		LKS_LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
		                                      sizeof(fast)));
	if (sa) {
		LKS_LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a,
		                                      sizeof(mode_a)));
		LKS_LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa,
		                                      sizeof(sa)));
	}
	if (sb) {
		LKS_LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b,
		                                      sizeof(mode_b)));
		LKS_LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb,
		                                      sizeof(sb)));
	}
out:
	return ret;
}

/* What the algorithm may be: no reduction scheme (one accumulation per output element,
   no split-K partial sums summed in another order), the context's workspace, and the
   operands' actual alignment (cuBLASLt otherwise assumes 256 bytes). */
static int lks_lt_pref(cublasLtMatmulPreference_t *pref, const lks_lt_ctx *ctx,
                       const lks_lt_plan *p)
{
	uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
	uint64_t ws = ctx->size;
	uint32_t al[3] = { (uint32_t)p->a.align, (uint32_t)p->b.align, (uint32_t)p->d.align };
	int ret = 0;

	LKS_LT(cublasLtMatmulPreferenceCreate(pref));
	LKS_LT(cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
	                                            &ws, sizeof(ws)));
	LKS_LT(cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
	                                            &mask, sizeof(mask)));
	LKS_LT(cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
	                                            &al[0], sizeof(al[0])));
	LKS_LT(cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
	                                            &al[1], sizeof(al[1])));
	LKS_LT(cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
	                                            &al[2], sizeof(al[2])));
	LKS_LT(cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
	                                            &al[2], sizeof(al[2])));
out:
	return ret;
}

/* info <- the configuration of algo, as cuBLASLt reports it */
static int lks_lt_read_algo(const cublasLtMatmulAlgo_t *algo, lks_lt_algo *info)
{
	size_t n;
	int ret = 0;

	LKS_LT(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &info->id,
	                                            sizeof(info->id), &n));
	LKS_LT(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &info->tile,
	                                            sizeof(info->tile), &n));
	LKS_LT(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID,
	                                            &info->stages, sizeof(info->stages), &n));
	LKS_LT(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
	                                            &info->splitk, sizeof(info->splitk), &n));
	LKS_LT(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
	                                            &info->reduction, sizeof(info->reduction), &n));
out:
	return ret;
}

/* The scale pointers of d.op, set where they differ from what it holds */
static int lks_lt_scale_ptrs(lks_lt_entry *x, const float *sa, const float *sb)
{
	int ret = 0;

	if (sa != x->sa)
		LKS_LT(cublasLtMatmulDescSetAttribute(x->d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
		                                      &sa, sizeof(sa)));
	x->sa = sa;
	if (sb != x->sb)
		LKS_LT(cublasLtMatmulDescSetAttribute(x->d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
		                                      &sb, sizeof(sb)));
	x->sb = sb;
out:
	return ret;
}

/* One GEMM of p on stream s with algo (D written: C = D, beta 0) */
static cublasStatus_t lks_lt_matmul(lks_lt_ctx *ctx, cudaStream_t s, const lks_lt_plan *p,
                                    const lks_lt_descs *d, const cublasLtMatmulAlgo_t *algo)
{
	const float one = 1.0f, zero = 0.0f;

	return cublasLtMatmul(ctx->handle, d->op, &one, p->a.data, d->a, p->b.data, d->b, &zero,
	                      p->d.data, d->d, (void *)p->d.data, d->d, algo, ctx->workspace,
	                      ctx->size, s);
}

/* *ms <- the milliseconds a GEMM of p takes with algo: one untimed, then LKS_LT_TIMED_REPS
   back to back between two events on s, the host waiting for the second. -1 in *ms when
   cuBLASLt cannot run it (the candidate is passed over); a CUDA error fails. */
static int lks_lt_time(lks_lt_ctx *ctx, cudaStream_t s, const lks_lt_plan *p,
                       const lks_lt_descs *d, const cublasLtMatmulAlgo_t *algo, double *ms)
{
	cudaEvent_t t0 = NULL, t1 = NULL;
	float f = 0;
	int ok = 1, ret = 0;

	*ms = -1;
	LKS_LT_CUDA(cudaEventCreate(&t0));
	LKS_LT_CUDA(cudaEventCreate(&t1));
	ok = lks_lt_matmul(ctx, s, p, d, algo) == CUBLAS_STATUS_SUCCESS;
	LKS_LT_CUDA(cudaEventRecord(t0, s));
	for (int r = 0; ok && r < LKS_LT_TIMED_REPS; r++)
		ok = lks_lt_matmul(ctx, s, p, d, algo) == CUBLAS_STATUS_SUCCESS;
	LKS_LT_CUDA(cudaEventRecord(t1, s));
	LKS_LT_CUDA(cudaEventSynchronize(t1));
	LKS_LT_CUDA(cudaEventElapsedTime(&f, t0, t1));
	if (ok)
		*ms = (double)f / LKS_LT_TIMED_REPS;
out:
	if (t0)
		cudaEventDestroy(t0);
	if (t1)
		cudaEventDestroy(t1);
	return ret;
}

/* Of the n candidates in res, the index the timed choice keeps (lks_lt_pick), or -1 when
   none may run; x->info says how many were offered and the kept one's time. */
static int lks_lt_timed(lks_lt_ctx *ctx, cudaStream_t s, const lks_lt_plan *p,
                        lks_lt_entry *x, const cublasLtMatmulHeuristicResult_t *res, int n)
{
	double ms[LKS_LT_CANDIDATES];
	int ok[LKS_LT_CANDIDATES], best;

	for (int i = 0; i < n; i++) {
		lks_lt_algo info;

		std::memset(&info, 0, sizeof(info));
		ok[i] = res[i].state == CUBLAS_STATUS_SUCCESS && res[i].workspaceSize <= ctx->size
		        && lks_lt_read_algo(&res[i].algo, &info) == 0
		        && info.reduction == CUBLASLT_REDUCTION_SCHEME_NONE;
		ms[i] = -1;
		if (ok[i] && lks_lt_time(ctx, s, p, &x->d, &res[i].algo, &ms[i]))
			return -2;
	}
	best = lks_lt_pick(ms, ok, n);
	x->info.offered = n;
	x->info.ms = best >= 0 ? ms[best] : 0;
	return best;
}

/* Whether s is being captured into a graph: then nothing is timed (the heuristic's first) */
static int lks_lt_capturing(cudaStream_t s)
{
	cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;

	return cudaStreamIsCapturing(s, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone;
}

/* *e <- the cache entry of p's key, its descriptors made and its algorithm chosen the
   first time (a full cache replaces its oldest entry, whose descriptors go): the
   heuristic's first, or with p->key.timed the fastest of its candidates on stream s */
static int lks_lt_choose(lks_lt_ctx *ctx, cudaStream_t s, const lks_lt_plan *p,
                         const float *sa, const float *sb, lks_lt_entry **e)
{
	cublasLtMatmulHeuristicResult_t res[LKS_LT_CANDIDATES];
	int want = p->key.timed && !lks_lt_capturing(s) ? LKS_LT_CANDIDATES : 1;
	int found = 0, pick = 0, ret = 0;
	lks_lt_entry *x;
	lks_lt_descs *d;

	for (int i = 0; i < LKS_LT_CACHE; i++)
		if (ctx->cache[i].valid && lks_lt_key_eq(&ctx->cache[i].key, &p->key)) {
			*e = &ctx->cache[i];
			return lks_lt_scale_ptrs(*e, sa, sb);
		}
	x = &ctx->cache[ctx->next];
	ctx->next = (ctx->next + 1) % LKS_LT_CACHE;
	lks_lt_descs_free(&x->d);
	std::memset(x, 0, sizeof(*x));
	std::memset(res, 0, sizeof(res));
	d = &x->d;
	x->sa = sa;
	x->sb = sb;
	if (lks_lt_op_desc(&d->op, p, sa, sb) || lks_lt_layout(&d->a, &p->a)
	    || lks_lt_layout(&d->b, &p->b) || lks_lt_layout(&d->d, &p->d)
	    || lks_lt_pref(&d->pref, ctx, p)) {
		lks_lt_descs_free(d);
		return -1;
	}
	cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx->handle, d->op, d->a, d->b, d->d,
	                                                   d->d, d->pref, want, res, &found);
	x->info.fast_accum = p->fast_accum;
	if (st == CUBLAS_STATUS_SUCCESS && found > 0 && want > 1
	    && (pick = lks_lt_timed(ctx, s, p, x, res, found)) == -2) {
		ret = -1;
		goto out;
	}
	if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0)
	    || pick < 0) {
		x->info.fallback = 1;
		if (pick < 0)
			std::snprintf(x->info.reason, sizeof(x->info.reason),
			              "none of the %d algorithms cuBLASLt offers for this gemm runs "
			              "without a reduction scheme in the workspace", found);
		else
			std::snprintf(x->info.reason, sizeof(x->info.reason),
			              "cuBLASLt offers no algorithm for this gemm (%s)",
			              cublasLtGetStatusName(st));
	} else {
		LKS_LT(st);
		LKS_LT(res[pick].state);
		x->algo = res[pick].algo;
		x->info.workspace = res[pick].workspaceSize;
		if (lks_lt_read_algo(&x->algo, &x->info)) {
			lks_lt_descs_free(d);
			return -1;
		}
		if (x->info.reduction != CUBLASLT_REDUCTION_SCHEME_NONE) {
			x->info.fallback = 1;
			std::snprintf(x->info.reason, sizeof(x->info.reason),
			              "cuBLASLt chose reduction scheme %u despite the mask",
			              (unsigned)x->info.reduction);
		}
	}
	x->key = p->key;
	x->valid = 1;
	*e = x;
out:
	if (ret)
		lks_lt_descs_free(&x->d);
	return ret;
}

extern "C" int lks_lt_ctx_create(size_t workspace, lks_lt_ctx **out)
{
	lks_lt_ctx *ctx;
	int ret = 0;

	*out = NULL;
	if (!(ctx = (lks_lt_ctx *)calloc(1, sizeof(*ctx))))
		return lks_err("cublasLt: out of memory for a context");
	ctx->size = workspace ? workspace : LKS_LT_WORKSPACE;
	LKS_LT(cublasLtCreate(&ctx->handle));
	LKS_LT_CUDA(cudaMalloc(&ctx->workspace, ctx->size));
	*out = ctx;
	ctx = NULL;
out:
	lks_lt_ctx_destroy(ctx);
	return ret;
}

extern "C" void lks_lt_ctx_destroy(lks_lt_ctx *ctx)
{
	if (!ctx)
		return;
	for (int i = 0; i < LKS_LT_CACHE; i++)
		lks_lt_descs_free(&ctx->cache[i].d);
	cudaFree(ctx->scratch);
	cudaFree(ctx->workspace);
	if (ctx->handle)
		cublasLtDestroy(ctx->handle);
	free(ctx);
}

extern "C" int lks_cuda_gemm_lt(lks_lt_ctx *ctx, cudaStream_t s, const lks_gemm *g,
                                lks_lt_algo *used)
{
	lks_lt_plan p;
	lks_lt_entry *e = NULL;
	const float *sa = NULL, *sb = NULL;
	int ret;

	std::memset(used, 0, sizeof(*used));
	ret = lks_lt_plan_of(g, &p);
	if (ret) {
		if (ret == LKS_LT_REFUSED) {
			used->fallback = 1;
			std::snprintf(used->reason, sizeof(used->reason), "%s", p.reason);
		}
		return ret;
	}
	if (lks_lt_inv_scales(ctx, s, &p, &sa, &sb) || lks_lt_choose(ctx, s, &p, sa, sb, &e))
		return -1;
	*used = e->info;
	if (e->info.fallback)
		return LKS_LT_REFUSED;
	LKS_LT(lks_lt_matmul(ctx, s, &p, &e->d, &e->algo));
out:
	return ret;
}
