/*
 * test_gemm_lt.c: the cublaslt GEMM mode (kernels/cuda/gemm_lt.h) against the CPU GEMM.
 *
 * Suite gemm_lt runs everywhere: without a usable device the context says why. Suite
 * gemm_lt_gpu needs a device and skips without one (ctest reads the skip line:
 * tests/kernels/CMakeLists.txt). Its inputs make every sum exact: operands small integers, scales
 * powers of two, so that products, partial sums in any order and at any accumulator
 * precision (fast accumulation included), and the scaling are exact in fp32. The result
 * must then equal the CPU's bit for bit whatever algorithm cuBLASLt chose, and a wrong
 * swap, leading dimension, scale vector or 1/scale shows as a wrong value.
 */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/cuda_info.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/err.h"

enum { M = 64, N = 32, K = 64 };

static void need_device(void)
{
	lks_cuda_info info;

	lks_cuda_info_get(&info);
	if (info.device_count == 0) {
		fprintf(stderr, "test_gemm_lt: skipped, no usable CUDA device: %s\n",
		        info.device_error);
		cr_skip_test("no usable CUDA device: %s", info.device_error);
	}
}

Test(gemm_lt, a_context_opens_or_says_why)
{
	lks_cuda_info info;
	lks_lt_ctx *ctx = (lks_lt_ctx *)&info;  /* not NULL, so that clearing it shows */
	int rc = lks_lt_ctx_create(0, &ctx);

	lks_cuda_info_get(&info);
	if (info.device_count > 0) {
		cr_assert_eq(rc, 0, "%s", lks_errmsg());
		cr_assert_not_null(ctx);
		lks_lt_ctx_destroy(ctx);
		return;
	}
	cr_assert_eq(rc, -1);
	cr_assert_null(ctx);
	cr_assert(strncmp(lks_errmsg(), "cublasLt: ", 10) == 0 || strncmp(lks_errmsg(), "cuda: ", 6) == 0,
	          "%s", lks_errmsg());
}

/* n values of type t on the device, from integers x */
static void *upload(lks_dtype t, const float *x, size_t n)
{
	uint8_t host[M * K * 4];
	void *d = NULL;

	cr_assert_leq(n * lks_dtype_size(t), sizeof(host));
	if (t == LKS_BF16)
		lks_f32_to_bf16_n(x, (uint16_t *)host, n);
	else if (t == LKS_F32)
		memcpy(host, x, n * sizeof(float));
	else
		lks_f32_to_fp8_n(x, host, n, t == LKS_E4M3 ? LKS_FP8_E4M3 : LKS_FP8_E5M2, 1);
	cr_assert_eq(cudaMalloc(&d, n * lks_dtype_size(t)), cudaSuccess);
	cr_assert_eq(cudaMemcpy(d, host, n * lks_dtype_size(t), cudaMemcpyHostToDevice),
	             cudaSuccess);
	return d;
}

/* C by cuBLASLt on the device and by the CPU, bit for bit; used <- what cuBLASLt ran */
static void same_as_cpu(lks_dtype ta, lks_scaling ka, lks_dtype tb, lks_scaling kb,
                        lks_gemm_role role, lks_dtype out, lks_lt_algo *used)
{
	static float x[M * K], w[N * K], sx[M], sw[N];
	static uint8_t c_cpu[M * N * 4], c_gpu[M * N * 4];
	lks_lt_ctx *ctx;
	size_t csize = (size_t)M * N * lks_dtype_size(out);

	for (int i = 0; i < M * K; i++)
		x[i] = (float)((i * 7 + 3) % 7 - 3);  /* -3 .. 3 */
	for (int i = 0; i < N * K; i++)
		w[i] = (float)((i * 5 + 1) % 7 - 3);
	for (int i = 0; i < M; i++)
		sx[i] = ka == LKS_SCALE_AXIS ? (float)(1 << (i % 5)) / 4.0f : 0.5f;
	for (int j = 0; j < N; j++)
		sw[j] = kb == LKS_SCALE_AXIS ? (float)(1 << (j % 3)) / 2.0f : 4.0f;
	/* the CPU reads the integers as the codes hold them: exact in every type used */
	lks_gemm g = { .M = M, .N = N, .K = K, .role = role, .out = out, .ldc = N,
	               .a = { LKS_F32, x, K, ka, ka == LKS_SCALE_NONE ? NULL : sx },
	               .b = { LKS_F32, w, K, kb, kb == LKS_SCALE_NONE ? NULL : sw }, .c = c_cpu };
	cr_assert_eq(lks_gemm_run(NULL, &g), 0, "%s", lks_errmsg());

	cr_assert_eq(lks_lt_ctx_create(0, &ctx), 0, "%s", lks_errmsg());
	g.a.dtype = ta;
	g.b.dtype = tb;
	g.a.data = upload(ta, x, (size_t)M * K);
	g.b.data = upload(tb, w, (size_t)N * K);
	g.a.scale = g.a.scale ? upload(LKS_F32, sx, M) : NULL;
	g.b.scale = g.b.scale ? upload(LKS_F32, sw, N) : NULL;
	cr_assert_eq(cudaMalloc(&g.c, csize), cudaSuccess);
	cr_assert_eq(lks_cuda_gemm_lt(ctx, NULL, &g, used), 0, "%s / %s", lks_errmsg(),
	             used->reason);
	cr_assert_eq(cudaMemcpy(c_gpu, g.c, csize, cudaMemcpyDeviceToHost), cudaSuccess);
	cr_assert(memcmp(c_gpu, c_cpu, csize) == 0, "%s x %s (scalings %d x %d): C differs",
	          lks_dtype_name(ta), lks_dtype_name(tb), (int)ka, (int)kb);
	cr_assert_eq(used->fallback, 0);
	cr_assert_eq(used->reduction, 0u, "reduction scheme %u", used->reduction);
	cudaFree((void *)g.a.data);
	cudaFree((void *)g.b.data);
	cudaFree((void *)g.a.scale);
	cudaFree((void *)g.b.scale);
	cudaFree(g.c);
	lks_lt_ctx_destroy(ctx);
}

typedef struct lt_case {
	lks_dtype ta; lks_scaling ka; lks_dtype tb; lks_scaling kb;
	lks_gemm_role role; lks_dtype out;
	int fast;  /* fast accumulation expected */
} lt_case;

static void run_cases(const lt_case *c, size_t n)
{
	lks_lt_algo used;

	need_device();
	for (size_t i = 0; i < n; i++) {
		same_as_cpu(c[i].ta, c[i].ka, c[i].tb, c[i].kb, c[i].role, c[i].out, &used);
		cr_assert_eq(used.fast_accum, c[i].fast, "case %zu", i);
	}
}

#define T LKS_SCALE_TENSOR
#define X LKS_SCALE_AXIS
#define NONE LKS_SCALE_NONE

/* FP8 tensorwise, rowwise, a tensor scale broadcast beside a rowwise one (and none
   beside one), BF16; every role and both outputs */
Test(gemm_lt_gpu, every_mode_equals_the_cpu_on_exact_inputs)
{
	static const lt_case c[] = {
		{ LKS_E4M3, T, LKS_E4M3, T, LKS_GEMM_FWD, LKS_F32, 1 },
		{ LKS_E5M2, T, LKS_E4M3, T, LKS_GEMM_DGRAD, LKS_BF16, 0 },
		{ LKS_E4M3, T, LKS_E5M2, T, LKS_GEMM_WGRAD, LKS_F32, 0 },
		{ LKS_E4M3, X, LKS_E4M3, X, LKS_GEMM_FWD, LKS_F32, 1 },
		{ LKS_E4M3, X, LKS_E4M3, T, LKS_GEMM_FWD, LKS_F32, 1 },
		{ LKS_E4M3, T, LKS_E5M2, X, LKS_GEMM_DGRAD, LKS_BF16, 0 },
		{ LKS_E4M3, NONE, LKS_E4M3, X, LKS_GEMM_WGRAD, LKS_F32, 0 },
		{ LKS_BF16, NONE, LKS_BF16, NONE, LKS_GEMM_FWD, LKS_BF16, 0 },
		{ LKS_BF16, NONE, LKS_BF16, NONE, LKS_GEMM_WGRAD, LKS_F32, 0 },
	};
	run_cases(c, sizeof(c) / sizeof(c[0]));
}

/* C of an fp8 rowwise forward GEMM on inputs whose sums round (codes spread over the
   format, scales not powers of two), with a fresh context: the algorithm is chosen again */
static void rounding_gemm(float *c, lks_lt_algo *used)
{
	static float x[M * K], w[N * K], sx[M], sw[N];
	lks_lt_ctx *ctx;

	for (int i = 0; i < M * K; i++)
		x[i] = (float)((i * 37) % 101 - 50) * 0.173f;
	for (int i = 0; i < N * K; i++)
		w[i] = (float)((i * 53) % 97 - 48) * 0.291f;
	for (int i = 0; i < M; i++)
		sx[i] = 1.7f + 0.31f * (float)i;
	for (int j = 0; j < N; j++)
		sw[j] = 0.9f + 0.77f * (float)j;
	lks_gemm g = { .M = M, .N = N, .K = K, .role = LKS_GEMM_FWD, .out = LKS_F32, .ldc = N,
	               .a = { LKS_E4M3, upload(LKS_E4M3, x, (size_t)M * K), K, LKS_SCALE_AXIS,
	                      upload(LKS_F32, sx, M) },
	               .b = { LKS_E4M3, upload(LKS_E4M3, w, (size_t)N * K), K, LKS_SCALE_AXIS,
	                      upload(LKS_F32, sw, N) } };
	cr_assert_eq(cudaMalloc(&g.c, sizeof(float) * M * N), cudaSuccess);
	cr_assert_eq(lks_lt_ctx_create(0, &ctx), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_cuda_gemm_lt(ctx, NULL, &g, used), 0, "%s / %s", lks_errmsg(),
	             used->reason);
	cr_assert_eq(cudaMemcpy(c, g.c, sizeof(float) * M * N, cudaMemcpyDeviceToHost),
	             cudaSuccess);
	lks_lt_ctx_destroy(ctx);
	cudaFree((void *)g.a.data);
	cudaFree((void *)g.b.data);
	cudaFree((void *)g.a.scale);
	cudaFree((void *)g.b.scale);
	cudaFree(g.c);
}

Test(gemm_lt_gpu, a_rerun_is_bit_for_bit_with_the_same_algorithm)
{
	static float c1[M * N], c2[M * N];
	lks_lt_algo u1, u2;

	need_device();
	rounding_gemm(c1, &u1);
	rounding_gemm(c2, &u2);
	cr_assert_eq(u1.id, u2.id);
	cr_assert_eq(u1.tile, u2.tile);
	cr_assert_eq(u1.stages, u2.stages);
	cr_assert_eq(u1.splitk, u2.splitk);
	cr_assert(memcmp(c1, c2, sizeof(c1)) == 0, "a rerun differs");
}

Test(gemm_lt_gpu, a_shape_cublaslt_refuses_is_a_recorded_fallback)
{
	lks_lt_ctx *ctx;
	lks_lt_algo used;
	lks_gemm g = { .M = M, .N = N, .K = 24, .ldc = N, .out = LKS_F32,
	               .a = { LKS_E4M3, (void *)16, 24, LKS_SCALE_NONE, NULL },
	               .b = { LKS_E4M3, (void *)16, 24, LKS_SCALE_NONE, NULL }, .c = (void *)16 };

	need_device();
	cr_assert_eq(lks_lt_ctx_create(0, &ctx), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_cuda_gemm_lt(ctx, NULL, &g, &used), LKS_LT_REFUSED);
	cr_assert_eq(used.fallback, 1);
	cr_assert(strstr(used.reason, "multiple of 16"), "%s", used.reason);
	lks_lt_ctx_destroy(ctx);
}
