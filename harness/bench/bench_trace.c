/*
 * bench_trace.c: 'lockstep bench trace': what lockstep-trace costs a training step per
 * tensor (issue 33's target: tracing a 64 MiB host tensor costs at most 1.2 times a memcpy
 * of it), against memcpy of the same bytes in the same run. The library is the one users
 * load (liblockstep-trace.so, opened with dlopen as a Python process opens it), and what is
 * timed is lks_trace_tensor: the statistics taken in the caller's thread before it returns
 * (the step's records are stored by the library's own thread, not timed here, as they do
 * not hold up the caller). Sides in interleaved rounds (bench_stats.c): memcpy into a
 * second buffer, and lks_trace_tensor; the ratio is trace time / memcpy time.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/opt.h"
#include "harness/bench/bench.h"
#include "kernels/err.h"

#define LKS_BENCH_TRACE_TARGET 1.2  /* of memcpy's time (the target) */

static const char lks_bench_trace_help[] =
	"usage: lockstep bench trace [--mib N] [--reps N] [--lib FILE] [--dir DIR]\n"
	"\n"
	"Times, in interleaved rounds (--reps, default 7), lockstep-trace's lks_trace_tensor\n"
	"on a float32 host tensor of N MiB (default 64) against memcpy of the same bytes, and\n"
	"prints the median ratio (trace / memcpy) with its quartiles and whether it meets the\n"
	"target of at most 1.2. The library is FILE (default liblockstep-trace.so beside the\n"
	"lockstep program); its database goes into a new folder under DIR ($TMPDIR or /tmp),\n"
	"removed after.\n";

struct lks_bench_trace {
	void *lib;
	void *(*open)(const char *, const char *, const char *, int, int);
	int (*tensor)(void *, const char *, int, int, const void *, size_t, int);
	int (*step)(void *, int);
	int (*close)(void *);
	const char *(*error)(void);
	void *t;
	float *x, *y;
	size_t n;
	int step_no;
};

static double lks_bench_trace_side(void *arg, int side, int round)
{
	struct lks_bench_trace *b = arg;
	double t0;

	(void)round;
	if (side == 0) {
		t0 = lks_now();
		memcpy(b->y, b->x, b->n * sizeof(float));
		return lks_now() - t0 + (b->y[b->n / 2] == 12345.0f ? 1e-12 : 0);  /* kept */
	}
	t0 = lks_now();
	if (b->tensor(b->t, "bench.x", 0, -1, b->x, b->n, 0))
		return lks_err("lks_trace_tensor: %s", b->error()), -1;
	t0 = lks_now() - t0;
	if (b->step(b->t, b->step_no++))  /* stored by the library's thread, untimed */
		return lks_err("lks_trace_step: %s", b->error()), -1;
	return t0;
}

/* The library beside the running program. */
static void lks_bench_trace_libpath(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 32);
	char *slash;

	if (n <= 0) {
		snprintf(buf, size, "liblockstep-trace.so");
		return;
	}
	buf[n] = 0;
	slash = strrchr(buf, '/');
	snprintf(slash ? slash + 1 : buf, 32, "liblockstep-trace.so");
}

int lks_bench_trace(int argc, char **argv)
{
	struct lks_bench_trace b = { 0 };
	const char *base = getenv("TMPDIR"), *lib = NULL;
	char libbuf[4096], dir[2048], db[2200], cmdline[2200];
	int mib = 64, reps = 7, rc;
	double *t = NULL;
	lks_bench_spread mc, ratio;

	if (!base || !*base)
		base = "/tmp";
	const lks_option opts[] = {  /* the usage's text says each */
		LKS_OPT_INT("--mib", "N", &mib, 1, 1 << 14, NULL),
		LKS_OPT_INT("--reps", "N", &reps, 1, 1 << 20, NULL),
		LKS_OPT_PATH("--lib", "FILE", &lib, NULL),
		LKS_OPT_PATH("--dir", "DIR", &base, NULL),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "bench trace", .usage = lks_bench_trace_help };

	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, NULL)))
		return lks_opt_exit(rc);
	if (!lib) {
		lks_bench_trace_libpath(libbuf, sizeof(libbuf));
		lib = libbuf;
	}
	if (!(b.lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "lockstep: bench trace: cannot load '%s': %s\n", lib, dlerror());
		return LKS_EXIT_INFRA;
	}
	*(void **)&b.open = dlsym(b.lib, "lks_trace_open");
	*(void **)&b.tensor = dlsym(b.lib, "lks_trace_tensor");
	*(void **)&b.step = dlsym(b.lib, "lks_trace_step");
	*(void **)&b.close = dlsym(b.lib, "lks_trace_close");
	*(void **)&b.error = dlsym(b.lib, "lks_trace_error");
	if (!b.open || !b.tensor || !b.step || !b.close || !b.error) {
		fprintf(stderr, "lockstep: bench trace: '%s' lacks the lks_trace_* API\n", lib);
		dlclose(b.lib);
		return LKS_EXIT_INFRA;
	}
	snprintf(dir, sizeof(dir), "%s/lks-bench-trace-XXXXXX", base);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "lockstep: bench trace: cannot create a folder in '%s': %s\n", base,
		        strerror(errno));
		dlclose(b.lib);
		return LKS_EXIT_INFRA;
	}
	snprintf(db, sizeof(db), "%s/trace.db", dir);
	rc = LKS_EXIT_INFRA;
	b.n = (size_t)mib << 18;  /* floats */
	if (!(b.x = malloc(b.n * sizeof(float))) || !(b.y = malloc(b.n * sizeof(float)))
	    || !(t = calloc((size_t)reps * 2, sizeof(*t)))) {
		fprintf(stderr, "lockstep: bench trace: out of memory\n");
		goto out;
	}
	for (size_t i = 0; i < b.n; i++)  /* values of every magnitude, no NaN */
		b.x[i] = (float)((int64_t)(i * 2654435761u % 20001) - 10000) * 1e-3f;
	memset(b.y, 0, b.n * sizeof(float));
	if (!(b.t = b.open(db, "bench", "trace", 0, 1))) {
		fprintf(stderr, "lockstep: bench trace: %s\n", b.error());
		goto out;
	}
	if (lks_bench_rounds(lks_bench_trace_side, &b, 2, 1, reps, t)
	    || lks_bench_per_round(t, 2, reps, 0, -1, &mc)
	    || lks_bench_per_round(t, 2, reps, 1, 0, &ratio)) {
		fprintf(stderr, "lockstep: bench trace: %s\n", lks_errmsg());
		goto out;
	}
	printf("bench trace: lks_trace_tensor of a %d MiB float32 host tensor against memcpy of "
	       "it, '%s'; median of %d rounds\n", mib, lib, reps);
	printf("%-28s %10s %10s %8s %17s\n", "", "ms", "GB/s", "ratio", "ratio q1..q3");
	printf("%-28s %10.3f %10.2f %8.3f\n", "memcpy (peer)", mc.median * 1e3,
	       (double)b.n * 4 / mc.median / 1e9, 1.0);
	printf("%-28s %10.3f %10.2f %8.3f %8.3f..%.3f\n", "lks_trace_tensor",
	       mc.median * ratio.median * 1e3, (double)b.n * 4 / (mc.median * ratio.median) / 1e9,
	       ratio.median, ratio.q1, ratio.q3);
	printf("target <= %.1f x memcpy: %s\n", LKS_BENCH_TRACE_TARGET,
	       ratio.median <= LKS_BENCH_TRACE_TARGET ? "met" : "NOT met");
	rc = LKS_EXIT_OK;
out:
	if (b.t && b.close(b.t) && rc == LKS_EXIT_OK) {
		fprintf(stderr, "lockstep: bench trace: %s\n", b.error());
		rc = LKS_EXIT_INFRA;
	}
	snprintf(cmdline, sizeof(cmdline), "rm -rf '%s'", dir);
	if (system(cmdline) != 0)
		fprintf(stderr, "lockstep: bench trace: cannot remove '%s'\n", dir);
	free(b.x);
	free(b.y);
	free(t);
	dlclose(b.lib);
	return rc;
}
