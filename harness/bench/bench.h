/*
 * bench.h: 'lockstep bench' subjects. Each measures lockstep's kernel against a peer in the
 * same run (OpenBLAS sgemm, memcpy) and prints a table with the ratio; numbers belong in
 * benchmarks, never in tests. Returns an exit code: 0 ok, 2 bad usage, 3 failure. Timed
 * comparisons run their sides in interleaved rounds and report the median per-round ratio
 * with its spread (bench_stats.c).
 */
#ifndef LKS_HARNESS_BENCH_H
#define LKS_HARNESS_BENCH_H

#include <time.h>

#include "kernels/clock.h"  /* lks_now: the benches' clock */

/* argv[0] is the subject name ("gemm", "quant"). */
int lks_bench_gemm(int argc, char **argv);
int lks_bench_quant(int argc, char **argv);
int lks_bench_store(int argc, char **argv);
int lks_bench_step(int argc, char **argv);
int lks_bench_detect(int argc, char **argv);
int lks_bench_import(int argc, char **argv);
int lks_bench_tensors(int argc, char **argv);
int lks_bench_trace(int argc, char **argv);
/* 'bench detect --flips' (bench_flips.c): flips single bits at random in the runs of a
   case (the screen's), each within its run's ranks and tensors, and runs it clean repeats
   times, each compared with a clean run; its databases go in dir (refs.db, flip.db). 0, 1
   when a clean repeat differed; LKS_E_BAD_INPUT (lks_err) for a case the flips cannot be
   drawn in, -1 on another error. */
int lks_bench_flips(const char *case_path, const char *dir, int flips, int repeats,
                    unsigned seed);

/* ---- comparisons on a noisy machine (bench_stats.c) ---- */

/* A sample's spread: its size, median, quartiles (interpolated) and extremes; NaN when
   n is 0. */
typedef struct lks_bench_spread {
	int n;
	double median, q1, q3, min, max;
} lks_bench_spread;

int lks_bench_spread_of(const double *v, int n, lks_bench_spread *out);

/* One timed repetition of side `side` of a comparison in round `round` (negative: a
   warm-up): seconds, or a negative value after lks_err. */
typedef double (*lks_bench_rep_fn)(void *arg, int side, int round);

/* Times nsides sides in rounds, each side once per round in order 0, 1, ..., so that the
   sides compared run back to back under the same load: first warmup rounds, untimed, then
   rounds whose times go to t[round * nsides + side]. */
int lks_bench_rounds(lks_bench_rep_fn fn, void *arg, int nsides, int warmup, int rounds,
                     double *t);

/* The spread over rounds of t[a] / t[b] (one ratio per round), or of t[a] when b < 0. */
int lks_bench_per_round(const double *t, int nsides, int rounds, int a, int b,
                        lks_bench_spread *out);

#endif
