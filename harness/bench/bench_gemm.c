/*
 * bench_gemm.c: 'lockstep bench gemm': the deterministic CPU GEMM against OpenBLAS sgemm.
 *
 * Two lockstep GEMMs per size, C = A . B^T with A (M,K), B (N,K), M = N = K = size:
 *   fp8   E4M3 operands with a power-of-two scale per row of each (the fp8_rowwise
 *         forward), float32 output (the BF16 rounding is timed by the other row);
 *   bf16  BF16 operands, BF16 output (the bf16 recipe).
 * The peer is cblas_sgemm on float32 operands of the same shape and layout (row-major,
 * B transposed), with the same thread count, in the same run. Both sides widen nothing
 * for free: lockstep converts its narrow operands while packing, sgemm copies float32.
 * The ratio is sgemm time / lockstep time, so above 1.0 lockstep is faster. The rows run in
 * rounds, sgemm then fp8 then bf16 back to back in each (bench_stats.c), and a row's ratio
 * is the median over rounds of the round's ratio, printed with its spread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench/bench.h"
#include "harness/base/opt.h"
#include "kernels/backend.h"
#include "kernels/cpu/gemm.h"
#include "kernels/err.h"
#include "kernels/philox.h"

#include <dlfcn.h>

#define LKS_BENCH_MAX_SIZES 16

/*
 * OpenBLAS is loaded here, at run time, and nowhere else: linked into the program, its
 * worker threads start with every lockstep command and spin in sched_yield, taking CPU
 * from the runs being measured. The CBLAS constants are the standard's values.
 */
enum { LKS_CBLAS_ROW_MAJOR = 101, LKS_CBLAS_NO_TRANS = 111, LKS_CBLAS_TRANS = 112 };
typedef void (*lks_sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                             const float *a, int lda, const float *b, int ldb, float beta,
                             float *c, int ldc);
static lks_sgemm_fn lks_sgemm;

/* Loads OpenBLAS with threads threads; 0 when it is there, else -1 (no peer). */
static int lks_openblas_load(int threads, char *config, size_t size)
{
	static const char *const names[] = { "libopenblas.so.0", "libopenblas.so" };
	void (*set_threads)(int) = NULL;
	char *(*get_config)(void) = NULL;
	void *lib = NULL;

	/* After a call OpenBLAS's workers spin in sched_yield for 2^28 cycles (its default)
	   before they sleep, and would take the cores from the lockstep GEMM timed right after
	   sgemm in each round. 2^4 cycles, the least it takes, puts them to sleep at once, as
	   lockstep's own workers do; read when the library loads, and a user's value stays. */
	setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !lib; i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib || !(lks_sgemm = (lks_sgemm_fn)dlsym(lib, "cblas_sgemm")))
		return -1;
	*(void **)&set_threads = dlsym(lib, "openblas_set_num_threads");
	*(void **)&get_config = dlsym(lib, "openblas_get_config");
	if (set_threads)
		set_threads(threads);
	snprintf(config, size, "%s", get_config ? get_config() : "OpenBLAS");
	return 0;
}

static const char lks_bench_gemm_help[] =
	"usage: lockstep bench gemm [--threads T] [--sizes S1,S2,...] [--reps R]\n"
	"                           [--isa scalar|avx2|avx512] [--backend NAME [--burst B]]\n"
	"\n"
	"Times C = A . B^T for square shapes M = N = K = S with T threads:\n"
	"  fp8   lockstep, E4M3 operands, power-of-two scale per row of A and of B,\n"
	"        float32 output (dequantized by the scales)\n"
	"  bf16  lockstep, BF16 operands, BF16 output\n"
	"  sgemm OpenBLAS cblas_sgemm on float32 operands, the peer (same threads)\n"
	"in R rounds after a warm-up, each round running sgemm, fp8 and bf16 back to back, so\n"
	"that the rows compared share the machine's load of the moment. Prints each row's median\n"
	"milliseconds and GFLOP/s (2*M*N*K / time), and its ratio to sgemm (sgemm time / its\n"
	"time, above 1 faster): the median of the R per-round ratios, their interquartile\n"
	"range, min-max and count. lockstep's GEMM accumulates each element in one fixed fp32\n"
	"FMA chain, so its results are bit-identical on every ISA path and thread count; --isa\n"
	"(or LKS_ISA) picks the path to time. Defaults: 2 threads, sizes 1024,2048, 9 rounds.\n"
	"\n"
	"--backend cuda times the GPU instead (default sizes 4096,8192): the library's GEMMs\n"
	"(cuBLASLt) on BF16, E4M3 with a tensor scale per operand, and E4M3 with rowwise\n"
	"scales, all with BF16 output and fast accumulation as in forward, then the reference\n"
	"kernel (the CPU's order) on E4M3 rowwise with float32 output; each row's median\n"
	"milliseconds and TFLOP/s, and the other rows' speed over BF16's in the same rounds\n"
	"(targets on an H100: FP8 >= 1.7x BF16, BF16 >= 700 TFLOP/s). A library row times B\n"
	"GEMMs back to back (--burst, default 20) and divides, so that launching and waiting\n"
	"are not counted; the reference row times one. The library's algorithm is its\n"
	"heuristic's first for the shape, as a run's is (the same on every rerun); the row\n"
	"'bf16, timed choice' times up to 8 candidates the heuristic offers without a\n"
	"reduction scheme, once, and keeps the fastest: what cuBLASLt can do, which a run does\n"
	"not ask for (a rerun's timing may keep another algorithm, with other bits). The\n"
	"algorithms used are printed. A GEMM cuBLASLt refuses runs on the reference kernel:\n"
	"the count is printed, and such a row says nothing of cuBLASLt.\n";

/* "1024,2048" -> sizes; returns the count, or -1 after a usage message. */
static int lks_parse_sizes(const char *val, int *sizes)
{
	int n = 0;

	if (!val)
		return lks_usage("bench gemm: --sizes needs a value"), -1;
	while (*val) {
		char *end;
		long v = strtol(val, &end, 10);

		if (end == val || v < 1 || v > 16384 || (*end && *end != ',') || n == LKS_BENCH_MAX_SIZES)
			return lks_usage("bench gemm: --sizes wants up to %d sizes in [1, 16384] "
			                 "separated by commas, not '%s'", LKS_BENCH_MAX_SIZES, val), -1;
		sizes[n++] = (int)v;
		val = *end ? end + 1 : end;
	}
	return n ? n : (lks_usage("bench gemm: --sizes is empty"), -1);
}

/* --sizes S1,S2,...: into sizes, their number into *n, and *given = 1 */
struct lks_sizes_arg {
	int *sizes, *n, *given;
};

static int lks_sizes_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                         const char *arg)
{
	struct lks_sizes_arg *sz = cmd->ctx;

	(void)o; (void)name;
	if ((*sz->n = lks_parse_sizes(arg, sz->sizes)) < 0)
		return LKS_EXIT_USAGE;
	*sz->given = 1;
	return 0;
}

/* The operands of one size, generated from (seed, index) like every lockstep input. */
struct lks_gemm_inputs {
	int n;
	float *a32, *b32, *c32;      /* (n, n) float32: sgemm's operands and every f32 output */
	uint8_t *a8, *b8;            /* (n, n) E4M3 codes */
	uint16_t *a16, *b16, *c16;   /* (n, n) BF16 */
	float *sa, *sb;              /* (n) rowwise scales */
};

static void lks_inputs_free(struct lks_gemm_inputs *in)
{
	free(in->a32); free(in->b32); free(in->c32);
	free(in->a8); free(in->b8);
	free(in->a16); free(in->b16); free(in->c16);
	free(in->sa); free(in->sb);
}

static void *lks_alloc64(size_t bytes)
{
	return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

static int lks_inputs_make(struct lks_gemm_inputs *in, int n)
{
	size_t nn = (size_t)n * n;

	memset(in, 0, sizeof(*in));
	in->n = n;
	in->a32 = lks_alloc64(nn * 4); in->b32 = lks_alloc64(nn * 4); in->c32 = lks_alloc64(nn * 4);
	in->a8 = lks_alloc64(nn); in->b8 = lks_alloc64(nn);
	in->a16 = lks_alloc64(nn * 2); in->b16 = lks_alloc64(nn * 2); in->c16 = lks_alloc64(nn * 2);
	in->sa = malloc((size_t)n * 4); in->sb = malloc((size_t)n * 4);
	if (!in->a32 || !in->b32 || !in->c32 || !in->a8 || !in->b8 || !in->a16 || !in->b16
	    || !in->c16 || !in->sa || !in->sb)
		return lks_err("out of memory for %d x %d operands", n, n);
	for (size_t i = 0; i < nn; i++) {
		uint32_t ua = lks_philox_u32(11, 0, i), ub = lks_philox_u32(11, 1, i);
		float xa = lks_philox_normal(11, 2, i), xb = lks_philox_normal(11, 3, i);
		uint32_t ba, bb;

		in->a32[i] = xa;
		in->b32[i] = xb;
		memcpy(&ba, &xa, 4);
		memcpy(&bb, &xb, 4);
		in->a16[i] = (uint16_t)(ba >> 16);  /* truncation is fine for timing data */
		in->b16[i] = (uint16_t)(bb >> 16);
		in->a8[i] = (ua & 0x7f) == 0x7f ? 0 : (uint8_t)ua;  /* any E4M3 code but NaN */
		in->b8[i] = (ub & 0x7f) == 0x7f ? 0 : (uint8_t)ub;
	}
	for (int i = 0; i < n; i++) {  /* 2^-8 .. 2^7, as power-of-two rowwise scales are */
		in->sa[i] = (float)(1u << (lks_philox_u32(11, 4, (uint64_t)i) % 16)) / 256.0f;
		in->sb[i] = (float)(1u << (lks_philox_u32(11, 5, (uint64_t)i) % 16)) / 256.0f;
	}
	return 0;
}

enum { LKS_ROW_SGEMM, LKS_ROW_FP8, LKS_ROW_BF16, LKS_ROWS };

/* One timed run of a row; returns seconds, or a negative value on failure. */
static double lks_bench_once(int row, lks_pool *pool, struct lks_gemm_inputs *in)
{
	int n = in->n;
	double t0 = lks_now();

	if (row == LKS_ROW_SGEMM) {
		lks_sgemm(LKS_CBLAS_ROW_MAJOR, LKS_CBLAS_NO_TRANS, LKS_CBLAS_TRANS, n, n, n, 1.0f,
		          in->a32, n, in->b32, n, 0.0f, in->c32, n);
	} else {
		int fp8 = row == LKS_ROW_FP8;
		lks_gemm g = {
			.M = n, .N = n, .K = n,
			.a = { fp8 ? LKS_E4M3 : LKS_BF16, fp8 ? (const void *)in->a8 : in->a16,
			       (size_t)n, fp8 ? LKS_SCALE_AXIS : LKS_SCALE_NONE, fp8 ? in->sa : NULL },
			.b = { fp8 ? LKS_E4M3 : LKS_BF16, fp8 ? (const void *)in->b8 : in->b16,
			       (size_t)n, fp8 ? LKS_SCALE_AXIS : LKS_SCALE_NONE, fp8 ? in->sb : NULL },
			.out = fp8 ? LKS_F32 : LKS_BF16,
			.c = fp8 ? (void *)in->c32 : (void *)in->c16,
			.ldc = (size_t)n,
		};

		if (lks_gemm_run(pool, &g))
			return -1.0;
	}
	return lks_now() - t0;
}

/* ---- a device backend (--backend NAME): the library's GEMMs and the reference ---- */

enum { LKS_BE_BF16, LKS_BE_BF16_TIMED, LKS_BE_FP8_TENSOR, LKS_BE_FP8_ROW, LKS_BE_REF,
       LKS_BE_ROWS };

static const char *const lks_be_row_names[LKS_BE_ROWS] = {
	"library bf16", "library bf16, timed choice", "library fp8 e4m3 tensorwise",
	"library fp8 e4m3 rowwise", "reference fp8 e4m3 rowwise",
};

/* GEMMs a library row times back to back between two waits (--burst), so that a launch
   and the host's wait, some microseconds each, are not counted as the GEMM's time */
#define LKS_BE_BURST 20

/* The operands of one size in the backend's memory. */
struct lks_be_inputs {
	const lks_backend *be;
	void *ctx;
	int n;
	int burst;            /* GEMMs a library row times at once */
	void *a8, *b8, *a16, *b16, *sa, *sb, *c;  /* c: (n, n) floats, room for every output */
};

static void lks_be_inputs_free(struct lks_be_inputs *d)
{
	void *bufs[] = { d->a8, d->b8, d->a16, d->b16, d->sa, d->sb, d->c };

	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		if (bufs[i])
			lks_be_free(d->be, d->ctx, bufs[i]);
}

/* The host's operands (lks_inputs_make) uploaded. */
static int lks_be_inputs_make(struct lks_be_inputs *d, const struct lks_gemm_inputs *in)
{
	size_t nn = (size_t)in->n * in->n;
	struct { void **dst; const void *src; size_t bytes; } up[] = {
		{ &d->a8, in->a8, nn }, { &d->b8, in->b8, nn }, { &d->a16, in->a16, 2 * nn },
		{ &d->b16, in->b16, 2 * nn }, { &d->sa, in->sa, 4 * (size_t)in->n },
		{ &d->sb, in->sb, 4 * (size_t)in->n }, { &d->c, NULL, 4 * nn },
	};

	d->n = in->n;
	for (size_t i = 0; i < sizeof(up) / sizeof(up[0]); i++)
		if (lks_be_alloc(d->be, d->ctx, up[i].bytes, up[i].dst)
		    || (up[i].src && lks_be_upload(d->be, d->ctx, *up[i].dst, up[i].src, up[i].bytes)))
			return -1;
	return lks_be_sync(d->be, d->ctx);
}

static double lks_be_gemm_side(void *arg, int row, int round)
{
	struct lks_be_inputs *d = arg;
	int n = d->n, fp8 = row != LKS_BE_BF16;
	lks_scaling sc = row == LKS_BE_BF16 ? LKS_SCALE_NONE
	               : row == LKS_BE_FP8_TENSOR ? LKS_SCALE_TENSOR : LKS_SCALE_AXIS;
	lks_gemm g = {
		.M = n, .N = n, .K = n, .role = LKS_GEMM_FWD,
		.impl = row == LKS_BE_REF ? LKS_GEMM_REFERENCE
		      : row == LKS_BE_BF16_TIMED ? LKS_GEMM_LIBRARY_TIMED : LKS_GEMM_LIBRARY,
		.a = { fp8 ? LKS_E4M3 : LKS_BF16, fp8 ? d->a8 : d->a16, (size_t)n, sc,
		       fp8 ? d->sa : NULL },
		.b = { fp8 ? LKS_E4M3 : LKS_BF16, fp8 ? d->b8 : d->b16, (size_t)n, sc,
		       fp8 ? d->sb : NULL },
		.out = row == LKS_BE_REF ? LKS_F32 : LKS_BF16, .c = d->c, .ldc = (size_t)n,
	};
	int burst = row == LKS_BE_REF ? 1 : d->burst;
	double t0;

	(void)round;
	if (lks_be_sync(d->be, d->ctx))
		return -1.0;
	t0 = lks_now();
	for (int i = 0; i < burst; i++)
		if (lks_be_gemm(d->be, d->ctx, &g))
			return -1.0;
	if (lks_be_sync(d->be, d->ctx))
		return -1.0;
	return (lks_now() - t0) / burst;
}

/* One line per way the library ran the GEMMs (gemm_plans): its algorithm, or why the
   reference kernel ran them instead */
static int lks_be_print_plan(void *arg, const lks_gemm_algo *p)
{
	(void)arg;
	if (p->fallback)
		printf("  %-5s %dx%dx%d %s: the reference kernel (%s), %lld GEMMs\n",
		       lks_gemm_role_name(p->role), p->M, p->N, p->K, lks_dtype_name(p->a),
		       p->reason, (long long)p->gemms);
	else
		printf("  %-5s %dx%dx%d %s: algorithm %d, tile %u, stages %u, split-k %d, "
		       "%lld GEMMs\n", lks_gemm_role_name(p->role), p->M, p->N, p->K,
		       lks_dtype_name(p->a), p->algo, p->tile, p->stages, p->splitk,
		       (long long)p->gemms);
	return 0;
}

static void lks_be_find_key(void *arg, const char *key, const char *value)
{
	char **kv = arg;

	if (!strcmp(key, kv[0]))
		snprintf(kv[1], 32, "%s", value);
}

/* The rows of every size on backend name, in rounds; an exit code. */
static int lks_bench_gemm_be(const char *name, int reps, int burst, int nsizes,
                             const int *sizes)
{
	struct lks_be_inputs d = { 0 };
	double *t = malloc(sizeof(double) * LKS_BE_ROWS * (size_t)reps);
	char fallbacks[32] = "0", *kv[2] = { "cublaslt_fallbacks", fallbacks };
	int rc = LKS_EXIT_INFRA;

	if (!t || !(d.be = lks_backend_find(name)) || lks_be_open(d.be, 1, &d.ctx)) {
		fprintf(stderr, "lockstep: bench gemm: %s\n", t ? lks_errmsg() : "out of memory");
		free(t);
		return d.be || !t ? LKS_EXIT_INFRA : LKS_EXIT_USAGE;
	}
	d.burst = burst;
	printf("bench gemm on backend %s: C = A.B^T, %d round%s after a warm-up, the rows back "
	       "to back in each; a library row's time is that of %d GEMMs back to back, over %d\n",
	       name, reps, reps > 1 ? "s" : "", burst, burst);
	printf("%-16s %-28s %9s %9s %9s %13s\n", "shape", "kernel", "median ms", "TFLOP/s",
	       "vs bf16", "min-max");
	for (int s = 0; s < nsizes; s++) {
		struct lks_gemm_inputs in;
		double flop = 2.0 * sizes[s] * (double)sizes[s] * sizes[s];
		char shape[32];
		int ok = lks_inputs_make(&in, sizes[s]) == 0 && lks_be_inputs_make(&d, &in) == 0
		         && lks_bench_rounds(lks_be_gemm_side, &d, LKS_BE_ROWS, 1, reps, t) == 0;

		lks_inputs_free(&in);
		lks_be_inputs_free(&d);
		memset(&d.a8, 0, sizeof(d) - offsetof(struct lks_be_inputs, a8));
		d.burst = burst;
		if (!ok) {
			fprintf(stderr, "lockstep: bench gemm: %s\n", lks_errmsg());
			goto out;
		}
		snprintf(shape, sizeof(shape), "%dx%dx%d", sizes[s], sizes[s], sizes[s]);
		for (int row = 0; row < LKS_BE_ROWS; row++) {
			lks_bench_spread ms, ratio;
			char range[32] = "-";

			if (lks_bench_per_round(t, LKS_BE_ROWS, reps, row, -1, &ms)
			    || lks_bench_per_round(t, LKS_BE_ROWS, reps, LKS_BE_BF16, row, &ratio))
				goto out;
			if (row)
				snprintf(range, sizeof(range), "%.2f-%.2fx", ratio.min, ratio.max);
			printf("%-16s %-28s %9.3f %9.1f %8.2fx %13s\n", shape, lks_be_row_names[row],
			       ms.median * 1e3, flop / ms.median / 1e12, ratio.median, range);
		}
	}
	lks_be_describe(d.be, d.ctx, lks_be_find_key, kv);
	printf("GEMMs the library refused, run on the reference kernel instead: %s\n", fallbacks);
	printf("the library's algorithms (a shape whose timed choice is not the heuristic's "
	       "first shows two):\n");
	lks_be_gemm_plans(d.be, d.ctx, lks_be_print_plan, NULL);
	rc = LKS_EXIT_OK;
out:
	lks_be_close(d.be, d.ctx);
	free(t);
	return rc;
}

/* The rows of one size, for lks_bench_rounds: side s is row first + s. */
struct lks_gemm_sides {
	int first;                   /* LKS_ROW_SGEMM with the peer, else LKS_ROW_FP8 */
	lks_pool *pool;
	struct lks_gemm_inputs *in;
};

static double lks_gemm_side(void *arg, int side, int round)
{
	struct lks_gemm_sides *g = arg;

	(void)round;
	return lks_bench_once(g->first + side, g->pool, g->in);
}

static const char *const lks_row_names[LKS_ROWS] = {
	"sgemm f32 (OpenBLAS)", "lockstep fp8 e4m3 rowwise", "lockstep bf16",
};

int lks_bench_gemm(int argc, char **argv)
{
	int threads = 2, reps = 9, nsizes = 2, sizes[LKS_BENCH_MAX_SIZES] = { 1024, 2048 };
	int burst = 0;               /* 0: not given (LKS_BE_BURST) */
	int have_peer, sized = 0;
	const char *backend = NULL;
	char blas[256] = "";
	lks_pool *pool = NULL;
	double *t = NULL;            /* (reps, rows) seconds */
	int rc = LKS_EXIT_INFRA;

	const lks_option opts[] = {  /* the usage's text says each */
		LKS_OPT_INT("--threads", "T", &threads, 1, 1024, NULL),
		LKS_OPT_INT("--reps", "R", &reps, 1, 1000, NULL),
		LKS_OPT_CALL("--sizes", "S1,S2,...", lks_sizes_opt, NULL),
		LKS_OPT_STRING("--backend", "NAME", &backend, NULL),
		LKS_OPT_INT("--burst", "B", &burst, 1, 10000, NULL),
		LKS_OPT_ISA(NULL),
		LKS_OPT_END(),
	};
	struct lks_sizes_arg sz = { sizes, &nsizes, &sized };
	const lks_opt_cmd cmd = { .who = "bench gemm", .usage = lks_bench_gemm_help, .ctx = &sz };

	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, NULL)) != 0)
		return lks_opt_exit(rc);
	rc = LKS_EXIT_INFRA;
	if (burst && !(backend && strcmp(backend, "cpu")))
		return lks_usage("bench gemm: --burst times a device backend's GEMMs (--backend "
		                 "cuda); the CPU's are timed one by one");
	if (backend && strcmp(backend, "cpu")) {
		static const int gpu_sizes[] = { 4096, 8192 };

		if (!sized) {
			nsizes = 2;
			memcpy(sizes, gpu_sizes, sizeof(gpu_sizes));
		}
		return lks_bench_gemm_be(backend, reps, burst ? burst : LKS_BE_BURST, nsizes, sizes);
	}
	if (lks_pool_create(threads, &pool)) {
		fprintf(stderr, "lockstep: bench gemm: %s\n", lks_errmsg());
		return LKS_EXIT_INFRA;
	}
	have_peer = lks_openblas_load(threads, blas, sizeof(blas)) == 0;
	if (have_peer)
		printf("peer: %s\n", blas);
	printf("bench gemm: C = A.B^T, %d thread%s, ISA %s, %d round%s after a warm-up, the rows "
	       "back to back in each; fp8 = E4M3 with rowwise scales on both operands and fp32 "
	       "output, bf16 = BF16 in and out\n", threads, threads > 1 ? "s" : "",
	       lks_isa_name(lks_isa_active()), reps, reps > 1 ? "s" : "");
	if (!have_peer)
		printf("peer missing: OpenBLAS (libopenblas.so.0) could not be loaded, so sgemm is "
		       "not timed and there are no ratios\n");
	else
		printf("vs sgemm: per round, sgemm time / the row's time (above 1: faster); the "
		       "median over rounds, the\ninterquartile range and min-max of the rounds' "
		       "ratios, and how many rounds\n");
	printf("%-16s %-26s %9s %9s %9s %13s %13s %6s\n", "shape", "kernel", "median ms",
	       "GFLOP/s", "vs sgemm", "IQR", "min-max", "rounds");
	if (!(t = malloc(sizeof(double) * LKS_ROWS * (size_t)reps))) {
		fprintf(stderr, "lockstep: bench gemm: out of memory\n");
		goto out;
	}
	for (int s = 0; s < nsizes; s++) {
		struct lks_gemm_inputs in;
		struct lks_gemm_sides sides = { have_peer ? LKS_ROW_SGEMM : LKS_ROW_FP8, pool, &in };
		int nsides = LKS_ROWS - sides.first;
		double flop = 2.0 * sizes[s] * (double)sizes[s] * sizes[s];
		char shape[32];

		if (lks_inputs_make(&in, sizes[s])) {
			fprintf(stderr, "lockstep: bench gemm: %s\n", lks_errmsg());
			lks_inputs_free(&in);
			goto out;
		}
		if (lks_bench_rounds(lks_gemm_side, &sides, nsides, 1, reps, t)) {
			fprintf(stderr, "lockstep: bench gemm: %s\n", lks_errmsg());
			lks_inputs_free(&in);
			goto out;
		}
		snprintf(shape, sizeof(shape), "%dx%dx%d", sizes[s], sizes[s], sizes[s]);
		for (int side = 0; side < nsides; side++) {
			lks_bench_spread ms, ratio;

			if (lks_bench_per_round(t, nsides, reps, side, -1, &ms)
			    || (have_peer && lks_bench_per_round(t, nsides, reps, 0, side, &ratio))) {
				fprintf(stderr, "lockstep: bench gemm: %s\n", lks_errmsg());
				lks_inputs_free(&in);
				goto out;
			}
			printf("%-16s %-26s %9.2f %9.1f", shape, lks_row_names[sides.first + side],
			       ms.median * 1e3, flop / ms.median / 1e9);
			if (!have_peer)
				printf(" %9s\n", "-");
			else if (side == 0)
				printf(" %8.2fx\n", 1.0);
			else {
				char iqr[32], range[32];

				snprintf(iqr, sizeof(iqr), "%.2f-%.2fx", ratio.q1, ratio.q3);
				snprintf(range, sizeof(range), "%.2f-%.2fx", ratio.min, ratio.max);
				printf(" %8.2fx %13s %13s %6d\n", ratio.median, iqr, range, ratio.n);
			}
		}
		lks_inputs_free(&in);
	}
	rc = LKS_EXIT_OK;
out:
	free(t);
	lks_pool_free(pool);
	return rc;
}
