/*
 * gpu_quant_gemm.c: the GPU's quantize and reference GEMM (kernels/cuda/quant_gemm.h)
 * against the CPU's lks_quantize and lks_gemm_run, bit for bit, on a real device.
 *
 * A plain program, as ctest's skip needs an exit code: without a usable device it checks
 * what it can (bad descriptors refused naming the op; valid ones failing with the op and
 * CUDA's reason), prints "no CUDA device: <why>" and exits LKS_SKIP (tests/kernels/CMakeLists.txt:
 * SKIP_RETURN_CODE).
 * Otherwise it runs every case, prints the first mismatches, and exits 1 if any, else 0.
 *
 * Inputs are generated from (seed, stream, index) by Philox, with -0, float32 subnormals,
 * values that underflow FP8 and, in the "specials" variants, NaN and +-Inf planted at fixed
 * places. Everything the GPU writes is compared over whole buffers, padding included (it
 * starts as the same byte pattern on both sides), so a write outside the shape shows.
 * The one comparison that is not of bits: a float32 GEMM output that is NaN on both sides.
 * The GPU's arithmetic gives the canonical NaN 0x7fffffff, x86 a NaN of the first NaN
 * operand or the default 0xffc00000, and neither side keeps a payload the other could
 * reproduce (the store keeps no payload either: harness/store/trace_store.h). BF16
 * outputs, FP8 codes, amax and scales are compared bit for bit, NaN included.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/quant.h"
#include "kernels/cuda/quant_gemm.h"
#include "kernels/err.h"
#include "kernels/philox.h"

#define LKS_SKIP 77        /* tests/kernels/CMakeLists.txt: SKIP_RETURN_CODE */
#define SEED 20261124u
#define SHOW_MAX 10        /* mismatches printed in full; all are counted */
#define PAD 0xab           /* the byte every output buffer starts as, on both sides */

static long mismatches;

static void mismatch(const char *what, const char *fmt, ...) LKS_PRINTF(2, 3);

static void mismatch(const char *what, const char *fmt, ...)
{
	va_list ap;

	if (mismatches++ >= SHOW_MAX)
		return;
	fprintf(stderr, "gpu_quant_gemm: %s: ", what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- device memory ---- */

static void *dev_alloc(size_t bytes)
{
	void *d = NULL;

	if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess) {
		fprintf(stderr, "gpu_quant_gemm: cannot allocate %zu bytes on the device\n", bytes);
		exit(3);
	}
	return d;
}

static void *dev_copy(const void *h, size_t bytes)
{
	void *d = dev_alloc(bytes);

	if (bytes && cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
		fprintf(stderr, "gpu_quant_gemm: cannot upload %zu bytes\n", bytes);
		exit(3);
	}
	return d;
}

static void dev_get(void *h, const void *d, size_t bytes)
{
	cudaError_t e = cudaDeviceSynchronize();

	if (e == cudaSuccess && bytes)
		e = cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
	if (e != cudaSuccess) {
		fprintf(stderr, "gpu_quant_gemm: cannot download %zu bytes: %s\n", bytes,
		        cudaGetErrorString(e));
		exit(3);
	}
}

/* ---- inputs ---- */

/* Value idx of a stream: normal * mag, with 1 in 16 of them -0, a float32 subnormal, or a
   value some 2^-20 smaller (below FP8's subnormals once scaled). */
static float gen(uint32_t stream, uint64_t idx, float mag)
{
	float v = lks_philox_normal(SEED, stream, idx) * mag;

	switch (lks_philox_u32(SEED, stream + 1000, idx) % 64) {
	case 0: return -0.0f;
	case 1: return v * 1e-39f;          /* subnormal float32 */
	case 2: return v * 0x1p-20f;
	case 3: return 0.0f;
	default: return v;
	}
}

static uint32_t bits(float x)
{
	uint32_t u;

	memcpy(&u, &x, sizeof(u));
	return u;
}

/* ---- quantize ---- */

static void *given_scratch;  /* lks_cuda_quantize_in's, kept for every case */

typedef struct qcase {
	int rows, cols;
	lks_fp8 fmt;
	lks_axis axis;
	int pow2, scale_given, want_amax, specials;
} qcase;

static void qcase_name(const qcase *c, char *buf, size_t size)
{
	snprintf(buf, size, "quantize %dx%d %s axis %d pow2 %d given %d amax %d specials %d",
	         c->rows, c->cols, lks_fp8_specs[c->fmt].name, (int)c->axis, c->pow2,
	         c->scale_given, c->want_amax, c->specials);
}

static void quant_one(const qcase *c, const float *x, size_t ldx, const float *x_d)
{
	size_t ldq = (size_t)c->cols + 5, qbytes = (size_t)c->rows * ldq;
	lks_quant cq = { .x = x, .rows = c->rows, .cols = c->cols, .ldx = ldx, .fmt = c->fmt,
	                 .axis = c->axis, .pow2 = c->pow2, .scale_given = c->scale_given,
	                 .ldq = ldq };
	lks_quant gq = cq;
	size_t ns = lks_quant_nscales(&cq), sbytes = (ns ? ns : 1) * sizeof(float);
	uint8_t *q_cpu = malloc(qbytes + 1), *q_gpu = malloc(qbytes + 1);
	float *s_cpu = malloc(sbytes), *s_gpu = malloc(sbytes);
	float *a_cpu = malloc(sbytes), *a_gpu = malloc(sbytes);
	void *q_d, *s_d, *a_d;
	char name[160];

	qcase_name(c, name, sizeof(name));
	if (!q_cpu || !q_gpu || !s_cpu || !s_gpu || !a_cpu || !a_gpu) {
		fprintf(stderr, "gpu_quant_gemm: out of memory\n");
		exit(3);
	}
	memset(q_cpu, PAD, qbytes + 1);
	memset(a_cpu, PAD, sbytes);
	memset(s_cpu, PAD, sbytes);
	/* given scales: some saturate (x * scale past the format's max), one is NaN, one 0 */
	for (size_t i = 0; c->scale_given && i < ns; i++)
		s_cpu[i] = (i % 5 == 4 && c->specials == 2) ? (i % 10 == 4 ? NAN : 0.0f)
		         : 1.0f + lks_philox_uniform(SEED, 50, i) * 200.0f;
	q_d = dev_copy(q_cpu, qbytes + 1);
	s_d = dev_copy(s_cpu, sbytes);
	a_d = dev_copy(a_cpu, sbytes);
	cq.q = q_cpu;
	cq.scale = s_cpu;
	cq.amax = c->want_amax ? a_cpu : NULL;
	gq.x = x_d;
	gq.q = q_d;
	gq.scale = s_d;
	gq.amax = c->want_amax ? a_d : NULL;
	gq.underflow = gq.saturated = 12345;  /* must be overwritten */
	if (lks_quantize(NULL, &cq)) {
		fprintf(stderr, "gpu_quant_gemm: %s: cpu: %s\n", name, lks_errmsg());
		exit(3);
	}
	if (lks_cuda_quantize(NULL, &gq)) {
		mismatch(name, "gpu failed: %s", lks_errmsg());
		goto out;
	}
	dev_get(q_gpu, q_d, qbytes + 1);
	dev_get(s_gpu, s_d, sbytes);
	dev_get(a_gpu, a_d, sbytes);
	for (size_t i = 0; i < qbytes + 1; i++)
		if (q_cpu[i] != q_gpu[i]) {
			mismatch(name, "code at byte %zu (row %zu col %zu): cpu 0x%02x, gpu 0x%02x", i,
			         i / ldq, i % ldq, q_cpu[i], q_gpu[i]);
			break;
		}
	if (memcmp(s_cpu, s_gpu, sbytes))
		mismatch(name, "scales differ (first: cpu %a, gpu %a)", s_cpu[0], s_gpu[0]);
	if (memcmp(a_cpu, a_gpu, sbytes))
		mismatch(name, "amax differ (first: cpu %a, gpu %a)", a_cpu[0], a_gpu[0]);
	if (cq.underflow != gq.underflow || cq.saturated != gq.saturated)
		mismatch(name, "counts: cpu underflow %llu saturated %llu, gpu %llu %llu",
		         (unsigned long long)cq.underflow, (unsigned long long)cq.saturated,
		         (unsigned long long)gq.underflow, (unsigned long long)gq.saturated);
	/* no_counts (an untraced step): the same codes and scales, the counts left 0 */
	gq.no_counts = 1;
	gq.underflow = gq.saturated = 12345;
	if (lks_cuda_quantize(NULL, &gq)) {
		mismatch(name, "gpu failed without counts: %s", lks_errmsg());
		goto out;
	}
	dev_get(q_gpu, q_d, qbytes + 1);
	dev_get(s_gpu, s_d, sbytes);
	if (memcmp(q_cpu, q_gpu, qbytes + 1) || memcmp(s_cpu, s_gpu, sbytes))
		mismatch(name, "no_counts changed the codes or the scales");
	if (gq.underflow || gq.saturated)
		mismatch(name, "no_counts: counts %llu %llu, not 0", (unsigned long long)gq.underflow,
		         (unsigned long long)gq.saturated);
	/* on the caller's scratch (a context's: lks_cuda_quantize_in), counts again */
	gq.no_counts = 0;
	if (!given_scratch && cudaMalloc(&given_scratch, LKS_CUDA_QUANT_SCRATCH) != cudaSuccess) {
		mismatch(name, "no device memory for the scratch");
		goto out;
	}
	if (lks_cuda_quantize_in(NULL, &gq, given_scratch)) {
		mismatch(name, "gpu failed on a given scratch: %s", lks_errmsg());
		goto out;
	}
	dev_get(q_gpu, q_d, qbytes + 1);
	if (memcmp(q_cpu, q_gpu, qbytes + 1) || cq.underflow != gq.underflow
	    || cq.saturated != gq.saturated)
		mismatch(name, "on a given scratch: other codes or counts");
out:
	cudaFree(q_d);
	cudaFree(s_d);
	cudaFree(a_d);
	free(q_cpu);
	free(q_gpu);
	free(s_cpu);
	free(s_gpu);
	free(a_cpu);
	free(a_gpu);
}

/* x (rows, ldx): specials 0 clean, 1 with huge values too (saturating at given scales),
   2 with NaN in one row and one column's element and +-Inf elsewhere. */
static float *quant_input(int rows, int cols, size_t ldx, int specials)
{
	float *x = malloc(((size_t)rows * ldx + 1) * sizeof(float));

	if (!x) {
		fprintf(stderr, "gpu_quant_gemm: out of memory\n");
		exit(3);
	}
	for (size_t i = 0; i < (size_t)rows * ldx; i++)
		x[i] = gen(10 + (uint32_t)specials, i, specials == 1 ? 3000.0f : 4.0f);
	if (specials == 2 && rows > 0 && cols > 0) {
		x[(size_t)(rows / 2) * ldx + (size_t)(cols / 3)] = NAN;
		x[(size_t)(rows - 1) * ldx] = INFINITY;
		x[cols - 1] = -INFINITY;
	}
	return x;
}

static void test_quantize(void)
{
	static const int shapes[][2] = {
		{ 0, 5 }, { 5, 0 }, { 0, 0 }, { 1, 1 }, { 1, 1000 }, { 1000, 1 }, { 37, 129 },
		{ 257, 300 }, { 3000, 700 },  /* more elements than the cast's blocks cover once */
	};

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		int rows = shapes[s][0], cols = shapes[s][1];
		size_t ldx = (size_t)cols + 3;

		for (int sp = 0; sp < 3; sp++) {
			float *x = quant_input(rows, cols, ldx, sp);
			void *x_d = dev_copy(x, ((size_t)rows * ldx + 1) * sizeof(float));

			for (int f = 0; f < 2; f++)
				for (int ax = 0; ax < 3; ax++)
					for (int p = 0; p < 3; p++)
						for (int sg = 0; sg < 2; sg++)
							for (int wa = 0; wa < 2; wa++) {
								qcase c = { rows, cols, (lks_fp8)f, (lks_axis)ax, p, sg,
								            wa, sp };

								quant_one(&c, x, ldx, x_d);
							}
			cudaFree(x_d);
			free(x);
		}
	}
}

/* ---- GEMM ---- */

/* One operand of (rows, K), ld = K + pad, in every dtype, and its scales; host and device. */
typedef struct operand_set {
	size_t ld;
	void *h[4], *d[4];   /* by lks_dtype */
	float *scale_h;      /* (rows): per row; [0] is the tensor scale */
	void *scale_d;
} operand_set;

/* specials: NaN, +-Inf, and row 1 all tiny (sign tiny_sign), so that the chains of
   C(1, 1) underflow to -0 from the first k on when A's row is negative and B's positive
   (one more fmaf(0, 0, -0) past K would give +0); scales 0 and NaN in rows 2 and 3. */
static void operand_make(operand_set *o, int rows, int K, int pad, uint32_t stream,
                         int specials, float tiny_sign)
{
	size_t n;
	float *v;

	o->ld = (size_t)K + (size_t)pad;
	n = (size_t)rows * o->ld + 1;
	v = malloc(n * sizeof(float));
	o->scale_h = malloc(((size_t)rows + 1) * sizeof(float));
	if (!v || !o->scale_h) {
		fprintf(stderr, "gpu_quant_gemm: out of memory\n");
		exit(3);
	}
	for (size_t i = 0; i < n; i++)
		v[i] = gen(stream, i, 8.0f);
	if (specials && rows >= 4)  /* products below float32's subnormals: every chain step -0 */
		for (int k = 0; k < K; k++)
			v[o->ld + (size_t)k] = tiny_sign * 1e-25f;
	if (specials && rows > 0 && K > 0) {  /* a NaN, an Inf and a -Inf at fixed places */
		v[(size_t)(rows / 2) * o->ld + (size_t)(K / 2)] = NAN;
		v[(size_t)(rows - 1) * o->ld] = INFINITY;
		v[K - 1] = -INFINITY;
	}
	for (int r = 0; r <= rows; r++)  /* positive, not powers of two; specials: 0 and NaN */
		o->scale_h[r] = specials && r == 2 ? 0.0f : specials && r == 3 ? NAN
		              : 0.25f + lks_philox_uniform(SEED, stream + 500, (uint64_t)r) * 100.0f;
	for (int t = 0; t < 4; t++) {
		size_t sz = lks_dtype_size((lks_dtype)t);
		char *h = malloc(n * sz);

		if (!h) {
			fprintf(stderr, "gpu_quant_gemm: out of memory\n");
			exit(3);
		}
		for (size_t i = 0; i < n; i++) {
			if (t == LKS_F32)
				((float *)h)[i] = v[i];
			else if (t == LKS_BF16)
				((uint16_t *)h)[i] = lks_f32_to_bf16(v[i]);
			else  /* unsaturated: E5M2 keeps +-Inf; every FP8 NaN code appears as 0x7f */
				((uint8_t *)h)[i] = lks_f32_to_fp8(v[i], t == LKS_E4M3 ? LKS_FP8_E4M3
				                                                        : LKS_FP8_E5M2, 0);
		}
		o->h[t] = h;
		o->d[t] = dev_copy(h, n * sz);
	}
	o->scale_d = dev_copy(o->scale_h, ((size_t)rows + 1) * sizeof(float));
	free(v);
}

static void operand_free(operand_set *o)
{
	for (int t = 0; t < 4; t++) {
		free(o->h[t]);
		cudaFree(o->d[t]);
	}
	free(o->scale_h);
	cudaFree(o->scale_d);
}

static lks_operand operand_of(const operand_set *o, lks_dtype t, lks_scaling sc, int dev)
{
	lks_operand op = { t, dev ? o->d[t] : o->h[t], o->ld, sc, NULL };

	if (sc != LKS_SCALE_NONE)
		op.scale = dev ? o->scale_d : o->scale_h;
	return op;
}

static void gemm_compare(const char *name, const lks_gemm *g, const void *c_cpu,
                         const void *c_gpu, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (g->out == LKS_BF16) {
			uint16_t x = ((const uint16_t *)c_cpu)[i], y = ((const uint16_t *)c_gpu)[i];

			if (x != y) {
				mismatch(name, "element %zu (row %zu col %zu): cpu 0x%04x, gpu 0x%04x", i,
				         i / g->ldc, i % g->ldc, x, y);
				return;
			}
		} else {
			float x = ((const float *)c_cpu)[i], y = ((const float *)c_gpu)[i];

			if (bits(x) != bits(y) && !(isnan(x) && isnan(y))) {
				mismatch(name, "element %zu (row %zu col %zu): cpu %a (0x%08x), gpu %a "
				         "(0x%08x)", i, i / g->ldc, i % g->ldc, x, bits(x), y, bits(y));
				return;
			}
		}
	}
}

static void test_gemm_shape(int M, int N, int K, int specials)
{
	operand_set a, b;
	size_t ldc = (size_t)N + 2, cbytes = ((size_t)M * ldc + 1) * sizeof(float);
	char *c_cpu = malloc(cbytes), *c_gpu = malloc(cbytes), *c_pad = malloc(cbytes);
	void *c_d = dev_alloc(cbytes);

	if (!c_cpu || !c_gpu || !c_pad) {
		fprintf(stderr, "gpu_quant_gemm: out of memory\n");
		exit(3);
	}
	memset(c_pad, PAD, cbytes);
	operand_make(&a, M, K, M % 3, 20 + (uint32_t)specials, specials, -1.0f);
	operand_make(&b, N, K, 1 + N % 2, 30 + (uint32_t)specials, specials, 1.0f);
	for (int ta = 0; ta < 4; ta++)
		for (int tb = 0; tb < 4; tb++)
			for (int sa = 0; sa < 3; sa++)
				for (int sb = 0; sb < 3; sb++)
					for (int o = 0; o < 2; o++) {
						lks_gemm g = { .M = M, .N = N, .K = K, .role = LKS_GEMM_FWD,
						               .out = o ? LKS_BF16 : LKS_F32, .c = c_cpu,
						               .ldc = ldc };
						lks_gemm gd;
						char name[160];

						snprintf(name, sizeof(name), "gemm %dx%dx%d %s.%d x %s.%d -> %s "
						         "specials %d", M, N, K, lks_dtype_name((lks_dtype)ta),
						         sa, lks_dtype_name((lks_dtype)tb), sb,
						         o ? "bf16" : "f32", specials);
						g.a = operand_of(&a, (lks_dtype)ta, (lks_scaling)sa, 0);
						g.b = operand_of(&b, (lks_dtype)tb, (lks_scaling)sb, 0);
						gd = g;
						gd.a = operand_of(&a, (lks_dtype)ta, (lks_scaling)sa, 1);
						gd.b = operand_of(&b, (lks_dtype)tb, (lks_scaling)sb, 1);
						gd.c = c_d;
						memcpy(c_cpu, c_pad, cbytes);
						if (cudaMemcpy(c_d, c_pad, cbytes, cudaMemcpyHostToDevice)
						    != cudaSuccess) {
							fprintf(stderr, "gpu_quant_gemm: cannot upload C\n");
							exit(3);
						}
						if (lks_gemm_run(NULL, &g)) {
							fprintf(stderr, "gpu_quant_gemm: %s: cpu: %s\n", name,
							        lks_errmsg());
							exit(3);
						}
						if (lks_cuda_gemm_ref(NULL, &gd)) {
							mismatch(name, "gpu failed: %s", lks_errmsg());
							continue;
						}
						dev_get(c_gpu, c_d, cbytes);
						gemm_compare(name, &g, c_cpu, c_gpu,
						             cbytes / lks_dtype_size(g.out));
					}
	operand_free(&a);
	operand_free(&b);
	cudaFree(c_d);
	free(c_cpu);
	free(c_gpu);
	free(c_pad);
}

static void test_gemm(void)
{
	static const int shapes[][3] = {
		{ 0, 3, 4 }, { 3, 0, 4 }, { 0, 0, 0 }, { 1, 1, 0 }, { 5, 7, 0 }, { 1, 1, 1 },
		{ 1, 17, 33 }, { 19, 1, 31 }, { 17, 23, 45 }, { 33, 65, 129 }, { 64, 64, 64 },
		{ 70, 40, 300 },
	};

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (int sp = 0; sp < 2; sp++)
			test_gemm_shape(shapes[s][0], shapes[s][1], shapes[s][2], sp);
}

/* A bad descriptor is refused with a message naming the op, before any launch. */
static void test_errors(void)
{
	lks_gemm g = { .M = -1, .out = LKS_F32 };
	lks_quant q = { .rows = 2, .cols = 2, .ldx = 2, .ldq = 2 };

	if (lks_cuda_gemm_ref(NULL, &g) == 0 || !strstr(lks_errmsg(), "gemm"))
		mismatch("errors", "a negative M was accepted or unnamed: '%s'", lks_errmsg());
	if (lks_cuda_quantize(NULL, &q) == 0 || !strstr(lks_errmsg(), "quantize"))
		mismatch("errors", "a quantize without input was accepted or unnamed: '%s'",
		         lks_errmsg());
}

/* Without a device, a valid descriptor fails with the op and CUDA's reason, no crash. The
   pointers are host memory that nothing may read: the first CUDA call fails before. */
static void test_no_device(void)
{
	float x[4] = { 1, 2, 3, 4 }, scale[1], c[4];
	uint8_t q8[4];
	lks_quant q = { .x = x, .rows = 2, .cols = 2, .ldx = 2, .q = q8, .ldq = 2,
	                .scale = scale };
	lks_gemm g = { .M = 2, .N = 2, .K = 2, .role = LKS_GEMM_FWD,
	               .a = { LKS_F32, x, 2, LKS_SCALE_NONE, NULL },
	               .b = { LKS_F32, x, 2, LKS_SCALE_NONE, NULL }, .out = LKS_F32, .c = c,
	               .ldc = 2 };

	if (lks_cuda_quantize(NULL, &q) == 0 || strncmp(lks_errmsg(), "cuda: quantize", 14)
	    || strlen(lks_errmsg()) < 24)
		mismatch("no device", "quantize did not fail naming cuda and the op: '%s'",
		         lks_errmsg());
	if (lks_cuda_gemm_ref(NULL, &g) == 0 || strncmp(lks_errmsg(), "cuda: gemm", 10)
	    || strlen(lks_errmsg()) < 30)
		mismatch("no device", "gemm did not fail naming cuda and the op: '%s'",
		         lks_errmsg());
}

int main(void)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);

	test_errors();
	if (e != cudaSuccess || count == 0) {
		test_no_device();
		if (mismatches) {
			fprintf(stderr, "gpu_quant_gemm: %ld failures without a device\n", mismatches);
			return 1;
		}
		printf("no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e)
		                                                : "the driver lists none");
		return LKS_SKIP;
	}
	test_quantize();
	test_gemm();
	if (mismatches) {
		fprintf(stderr, "gpu_quant_gemm: %ld mismatches\n", mismatches);
		return 1;
	}
	printf("gpu_quant_gemm: the GPU equals the CPU, bit for bit\n");
	return 0;
}
