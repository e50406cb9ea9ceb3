/*
 * backend_fixture.h: a small run on a backend, for the tests of the backend seam: two_blocks
 * (3 steps, 2 blocks, 2 ranks), trained and its traces folded into one hash (train,
 * train_on), the same against the cpu backend's bits (train_like_cpu), the cpu's methods as a
 * backend whose memory is not the host's (device_backend, its downloads counted), and a run into a
 * new store (run_stored).
 */
#ifndef LKS_TESTS_BACKEND_FIXTURE_H
#define LKS_TESTS_BACKEND_FIXTURE_H

#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/case.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
#include "kernels/backend.h"
#include "kernels/cpu/backend_cpu.h"
#include "kernels/err.h"
#include "case_text.h"

/* 3 steps of a 2-block model on 2 ranks */
static const char two_blocks[] =
	"[case]\nsteps = 3\nseed = 7\nworld_size = 2\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 2\nseq = 8\nbatch = 2\n"
	"[run r]\nrecipe = fp8_rowwise\n";

static int nstats;
static uint64_t stats_hash;

/* every stat row's hash, folded in order: the traces of two runs are the same bits when
   these are (besides their count) */
static inline void on_step(void *arg, const lks_step_row *steps, int nsteps,
                           const lks_stat_row *stats, size_t n, char *const *names, int nnames)
{
	double *loss = arg;

	(void)names; (void)nnames;
	for (int r = 0; r < nsteps; r++)
		loss[steps[r].step] += steps[r].loss;
	for (size_t i = 0; i < n; i++) {
		stats_hash = stats_hash * 0x100000001b3ull ^ stats[i].hash;
		nstats++;
	}
}

/* two_blocks trained on threads (2 with a single rank: it measures on its background
   thread) */
static inline void train_on(const lks_case *c, const lks_backend *be, int threads, double *loss,
                            uint64_t *hash, int *n)
{
	lks_runner_opts o = { .threads = threads, .backend = be, .on_step = on_step,
	                      .on_step_arg = loss };
	lks_run_result res;

	nstats = 0;
	stats_hash = 0;
	cr_assert_eq(lks_run(c, &c->runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 3);
	*hash = stats_hash;
	*n = nstats;
}

static inline void train(const lks_case *c, const lks_backend *be, double *loss, uint64_t *hash,
                         int *n)
{
	train_on(c, be, 1, loss, hash, n);
}

static atomic_int downloads;

static inline int counting_download(const lks_backend *be, void *ctx, void *dst,
                                    const void *src, size_t bytes)
{
	atomic_fetch_add(&downloads, 1);
	return lks_backend_cpu.download(&lks_backend_cpu, ctx, dst, src, bytes);
}

/* two_blocks (with set, an override, or none) on the cpu backend and on be (downloads
   counted from 0 for be): the traces and losses must be the same bits; returns the run's
   world size */
static inline int train_like_cpu(const lks_backend *be, const char *what, const char *set)
{
	double loss_cpu[3] = { 0 }, loss_be[3] = { 0 };
	uint64_t hash_cpu, hash_be;
	int n_cpu, n_be, W;
	lks_case c;

	load_case(two_blocks, set ? &set : NULL, set ? 1 : 0, &c);
	train(&c, &lks_backend_cpu, loss_cpu, &hash_cpu, &n_cpu);
	atomic_store(&downloads, 0);
	train(&c, be, loss_be, &hash_be, &n_be);
	cr_expect_eq(n_be, n_cpu);
	cr_expect_eq(hash_be, hash_cpu, "%s changed the traces", what);
	cr_expect_eq(memcmp(loss_be, loss_cpu, sizeof(loss_cpu)), 0, "%s changed the loss", what);
	W = c.runs[0].world_size;
	lks_case_release(&c);
	return W;
}

/* the cpu's methods, as a backend whose memory is not the host's (its downloads counted) */
static inline lks_backend device_backend(void)
{
	lks_backend be = lks_backend_cpu;

	be.name = "device";
	be.host_memory = NULL;
	be.download = counting_download;
	return be;
}

/* two_blocks (with set, or none) on be into a new store; get reads the stored run into
   out */
static inline void run_stored(const lks_backend *be, const char *set,
                              int (*get)(void *, const lks_run_rec *), char *out)
{
	lks_runner_opts o = { .threads = 1, .backend = be };
	char dir[] = "/tmp/lks-test-backend-XXXXXX", path[64];
	lks_run_result res;
	lks_store *s;
	lks_case c;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	load_case(two_blocks, set ? &set : NULL, set ? 1 : 0, &c);
	cr_assert_eq(lks_run(&c, &c.runs[0], s, &o, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_runs(s, get, out), 0, "%s", lks_errmsg());
	lks_store_close(s);
	lks_case_release(&c);
	unlink(path);
	rmdir(dir);
}

#endif
