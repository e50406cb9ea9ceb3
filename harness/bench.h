/*
 * bench.h: 'lockstep bench' subjects. Each measures lockstep's kernel against a peer in the
 * same run (OpenBLAS sgemm, memcpy) and prints a table with the ratio; numbers belong in
 * benchmarks, never in tests. Returns an exit code: 0 ok, 2 bad usage, 3 failure.
 */
#ifndef LKS_HARNESS_BENCH_H
#define LKS_HARNESS_BENCH_H

#include <time.h>

/* argv[0] is the subject name ("gemm", "quant"). */
int lks_bench_gemm(int argc, char **argv);
int lks_bench_quant(int argc, char **argv);
int lks_bench_store(int argc, char **argv);
int lks_bench_step(int argc, char **argv);
int lks_bench_detect(int argc, char **argv);

/* Monotonic seconds. */
static inline double lks_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
