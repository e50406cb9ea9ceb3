/*
 * bench_quant.c: 'lockstep bench quant': rowwise amax + scale + satfinite cast of an fp32
 * matrix into FP8, against memcpy of the same input bytes with the same thread count, in
 * the same run. The ratio is memcpy time / quantize time: 1.0 means quantizing runs at the
 * speed of copying its input (it reads the input twice, the second time from cache, and
 * writes a quarter of the bytes memcpy writes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench/bench.h"
#include "harness/base/opt.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant.h"
#include "kernels/err.h"
#include "kernels/philox.h"

static const char lks_bench_quant_help[] =
	"usage: lockstep bench quant [--rows R] [--cols C] [--threads T] [--reps N]\n"
	"                            [--format e4m3|e5m2] [--isa scalar|avx2|avx512]\n"
	"\n"
	"Quantizes a (R x C) fp32 matrix rowwise (amax per row, power-of-two torchao scale,\n"
	"satfinite cast, underflow and saturation counts) and copies the same bytes with\n"
	"memcpy, both split over T threads; prints the best of N repetitions of each and the\n"
	"ratio of their bandwidths. Defaults: 4096 x 4096, 1 thread, 7 repetitions, e4m3.\n";

struct lks_copy_job {
	const char *src;
	char *dst;
	size_t bytes;
	int ntasks;
};

static void lks_copy_task(void *arg, int task, int thread)
{
	struct lks_copy_job *job = arg;
	size_t chunk = (job->bytes / (size_t)job->ntasks + 63) & ~(size_t)63;
	size_t off = (size_t)task * chunk;

	if (off < job->bytes)
		memcpy(job->dst + off, job->src + off, job->bytes - off < chunk ? job->bytes - off : chunk);
}

static const char *const lks_formats[] = { "e4m3", "e5m2", NULL };

int lks_bench_quant(int argc, char **argv)
{
	int rows = 4096, cols = 4096, threads = 1, reps = 7;
	lks_fp8 fmt = LKS_FP8_E4M3;
	double best_q = 1e30, best_c = 1e30;
	float *x = NULL, *scale = NULL;
	uint8_t *q = NULL;
	char *copy = NULL;
	lks_pool *pool = NULL;
	int rc = LKS_EXIT_INFRA;

	int e5m2 = 0;
	const lks_option opts[] = {  /* the usage's text says each */
		LKS_OPT_INT("--rows", "R", &rows, 1, 1 << 20, NULL),
		LKS_OPT_INT("--cols", "C", &cols, 1, 1 << 20, NULL),
		LKS_OPT_INT("--threads", "T", &threads, 1, 1 << 20, NULL),
		LKS_OPT_INT("--reps", "N", &reps, 1, 1 << 20, NULL),
		LKS_OPT_CHOICE("--format", "e4m3|e5m2", &e5m2, lks_formats, NULL),
		LKS_OPT_ISA(NULL),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "bench quant", .usage = lks_bench_quant_help };

	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, NULL)) != 0)
		return lks_opt_exit(rc);
	rc = LKS_EXIT_INFRA;
	fmt = e5m2 ? LKS_FP8_E5M2 : LKS_FP8_E4M3;

	size_t n = (size_t)rows * (size_t)cols;
	x = aligned_alloc(64, (n * 4 + 63) & ~(size_t)63);
	copy = aligned_alloc(64, (n * 4 + 63) & ~(size_t)63);
	q = aligned_alloc(64, (n + 63) & ~(size_t)63);
	scale = malloc(sizeof(float) * (size_t)rows);
	if (!x || !copy || !q || !scale || lks_pool_create(threads, &pool)) {
		fprintf(stderr, "lockstep: bench quant: out of memory or threads\n");
		goto out;
	}
	/* activations-like data: normal values, rows of different magnitude */
	for (size_t i = 0; i < n; i++)
		x[i] = lks_philox_normal(7, 0, i) * (float)(1 + (i / (size_t)cols) % 13);
	memset(copy, 0, n * 4);
	memset(q, 0, n);

	struct lks_copy_job cj = { (const char *)x, copy, n * 4, threads * 4 };
	lks_quant qt = { .x = x, .rows = rows, .cols = cols, .ldx = (size_t)cols, .fmt = fmt,
	                 .axis = LKS_AXIS_ROW, .pow2 = 1, .q = q, .ldq = (size_t)cols,
	                 .scale = scale };

	/* interleaved, so both see the same machine state; best of reps */
	for (int r = 0; r < reps; r++) {
		double t0 = lks_now(), t1, t2;

		lks_pool_run(pool, cj.ntasks, lks_copy_task, &cj);
		t1 = lks_now();
		if (lks_quantize(pool, &qt)) {
			fprintf(stderr, "lockstep: bench quant: %s\n", lks_errmsg());
			goto out;
		}
		t2 = lks_now();
		best_c = t1 - t0 < best_c ? t1 - t0 : best_c;
		best_q = t2 - t1 < best_q ? t2 - t1 : best_q;
	}

	double gb = (double)n * 4 / 1e9;
	printf("bench quant: %d x %d fp32 -> %s rowwise, pow2 scales, %d thread%s, ISA %s, best of %d\n",
	       rows, cols, lks_fp8_specs[fmt].name, threads, threads > 1 ? "s" : "",
	       lks_isa_name(lks_isa_active()), reps);
	printf("%-28s %10s %12s %8s\n", "kernel", "ms", "GB/s (in)", "ratio");
	printf("%-28s %10.3f %12.2f %8.2f\n", "memcpy (peer)", best_c * 1e3, gb / best_c, 1.0);
	printf("%-28s %10.3f %12.2f %8.2f\n", "amax+scale+cast (lockstep)", best_q * 1e3,
	       gb / best_q, best_c / best_q);
	printf("underflow %llu, saturated %llu (of %zu)\n", (unsigned long long)qt.underflow,
	       (unsigned long long)qt.saturated, n);
	rc = LKS_EXIT_OK;
out:
	lks_pool_free(pool);
	free(x);
	free(copy);
	free(q);
	free(scale);
	return rc;
}
