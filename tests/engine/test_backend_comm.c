/*
 * test_backend_comm.c: the backend's communicator seam (kernels/backend.h version 5, comm):
 * a device communicator played on the CPU takes each rank's gradient where it is (only
 * the backend's memory, delayed scaling's amax too), with the CPU's bits; allreduce = nccl
 * needs one and reaches it, and is stored with the run; and the cuda backend's device of
 * each rank of a process (lks_cuda_rank_device).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/cuda/backend_cuda.h"
#include "kernels/pool.h"
#include "backend_fixture.h"

/* the blocks the device backend's alloc handed out: a device communicator takes only
   these, as NCCL takes only device memory */
struct dev_block { const void *p; size_t bytes; };
static struct dev_block dev_blocks[4096];
static int ndev_blocks;
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

static int dev_alloc(const lks_backend *be, void *ctx, size_t bytes, void **out)
{
	if (lks_backend_cpu.alloc(be, ctx, bytes, out))
		return -1;
	pthread_mutex_lock(&dev_lock);
	if (ndev_blocks < 4096)
		dev_blocks[ndev_blocks++] = (struct dev_block){ *out, bytes };
	pthread_mutex_unlock(&dev_lock);
	return 0;
}

static int dev_owns(const float *x, size_t n)
{
	int found = 0;

	pthread_mutex_lock(&dev_lock);
	for (int i = 0; i < ndev_blocks && !found; i++)
		found = (const char *)x >= (const char *)dev_blocks[i].p
		     && (const char *)(x + n) <= (const char *)dev_blocks[i].p + dev_blocks[i].bytes;
	pthread_mutex_unlock(&dev_lock);
	return found;
}

struct dev_end {
	lks_comm base;
	lks_comm *host;
};

static atomic_int dev_sums, dev_maxes, dev_made, dev_mode, dev_parts, dev_splits;

static int dev_sum(lks_comm *c, float *x, size_t n)
{
	atomic_fetch_add(&dev_sums, 1);
	if (!dev_owns(x, n))
		return lks_err("dev: all-reduce sum of memory the backend did not allocate");
	return lks_comm_allreduce_sum(((struct dev_end *)c)->host, x, n);
}

static int dev_max(lks_comm *c, float *x, size_t n)
{
	atomic_fetch_add(&dev_maxes, 1);
	if (!dev_owns(x, n))
		return lks_err("dev: all-reduce max of memory the backend did not allocate");
	return lks_comm_allreduce_max(((struct dev_end *)c)->host, x, n);
}

/* an all-gather (x n floats, out size x n) or a reduce-scatter (x size x n, out n) */
static int dev_ag(lks_comm *c, const float *x, size_t n, float *out)
{
	atomic_fetch_add(&dev_parts, 1);
	if (!dev_owns(x, n) || !dev_owns(out, (size_t)c->size * n))
		return lks_err("dev: all-gather of memory the backend did not allocate");
	return lks_comm_all_gather(((struct dev_end *)c)->host, x, n, out);
}

static int dev_rs(lks_comm *c, const float *x, size_t n, float *out)
{
	atomic_fetch_add(&dev_parts, 1);
	if (!dev_owns(x, (size_t)c->size * n) || !dev_owns(out, n))
		return lks_err("dev: reduce-scatter of memory the backend did not allocate");
	return lks_comm_reduce_scatter(((struct dev_end *)c)->host, x, n, out);
}

static int dev_split(lks_comm *c, int groups, int color, lks_comm **out);

static int dev_gather(lks_comm *c, const void *x, size_t bytes, void **out, size_t *counts)
{
	return lks_comm_gather(((struct dev_end *)c)->host, x, bytes, out, counts);
}

static void dev_abort(lks_comm *c, const char *why)
{
	lks_comm_abort(((struct dev_end *)c)->host, why);
}

static void dev_close(lks_comm *c)
{
	lks_comm_close(((struct dev_end *)c)->host);
	free(c);
}

static int dev_memory(lks_comm *c)
{
	(void)c;
	return 1;
}

static const lks_comm_methods dev_methods = {
	.version = LKS_COMM_VERSION, .name = "dev", .allreduce_sum = dev_sum,
	.allreduce_max = dev_max, .gather = dev_gather, .abort = dev_abort, .close = dev_close,
	.device_memory = dev_memory, .all_gather = dev_ag, .reduce_scatter = dev_rs,
	.split = dev_split,
};

/* a device end of the host end's sub-group (it owns that end, as devcomm's does) */
static int dev_split(lks_comm *c, int groups, int color, lks_comm **out)
{
	struct dev_end *e = malloc(sizeof(*e));
	lks_comm *host;

	*out = NULL;
	if (!e || lks_comm_split(((struct dev_end *)c)->host, groups, color, &host)) {
		free(e);
		return -1;
	}
	*e = (struct dev_end){ { &dev_methods, host->rank, host->size }, host };
	*out = &e->base;
	atomic_fetch_add(&dev_splits, 1);
	return 0;
}

static int dev_comm(const lks_backend *be, void *ctx, lks_comm *host, const lks_devcomm_opts *o,
                    lks_comm **out)
{
	struct dev_end *e = malloc(sizeof(*e));

	(void)be; (void)ctx;
	if (!e)
		return lks_err("out of memory");
	atomic_store(&dev_mode, o->mode);
	*e = (struct dev_end){ { &dev_methods, host->rank, host->size }, host };
	*out = &e->base;
	atomic_fetch_add(&dev_made, 1);
	return 0;
}

static int dev_declines(const lks_backend *be, void *ctx, lks_comm *host,
                        const lks_devcomm_opts *o, lks_comm **out)
{
	(void)be; (void)ctx; (void)host; (void)o;
	*out = NULL;
	return 0;
}

/* A backend whose memory is not the host's and that offers a device communicator: each
   rank's end is made once, the gradients are summed where they are (no download for the
   all-reduce, as NCCL would), only the backend's memory is passed to it (delayed
   scaling's amax too), and the bits are the CPU's. */
Test(backend, a_device_communicator_sums_the_gradients_unstaged)
{
	lks_backend be = device_backend();
	int W;

	be.comm = dev_comm;
	be.alloc = dev_alloc;
	W = train_like_cpu(&be, "the device communicator", NULL);
	cr_expect_eq(atomic_load(&dev_made), W);
	cr_expect_eq(atomic_load(&dev_sums), 3 * W);
	cr_expect_lt(atomic_load(&downloads), 3 * W, "the gradients were staged through the host");
	cr_expect_eq(atomic_load(&dev_maxes), 0, "fp8_rowwise has no amax to all-reduce");
	W = train_like_cpu(&be, "the device communicator", "run.r.recipe=fp8_delayed");
	cr_expect_eq(atomic_load(&dev_maxes), 3 * W, "delayed scaling's amax, once a step");
}

/* allreduce = nccl needs a device communicator: a backend that declines (more ranks than
   GPUs) or whose memory is the host's fails the run, saying why. A context the caller
   gives is not shared by a device backend's ranks (each opens its own), so they get one. */
Test(backend, allreduce_nccl_without_a_device_communicator_fails)
{
	const char *sets[] = { "run.r.allreduce=nccl" };
	lks_backend be = lks_backend_cpu;
	lks_runner_opts o = { .threads = 1, .backend = &be };
	lks_run_result res;
	lks_pool *pool;
	lks_case c;

	load_case(two_blocks, sets, 1, &c);
	cr_assert_eq(c.runs[0].allreduce, LKS_ALLREDUCE_NCCL);
	cr_expect_neq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0);
	cr_expect(strstr(lks_errmsg(), "allreduce = nccl needs a backend whose memory"), "%s",
	          lks_errmsg());
	be.host_memory = NULL;
	be.comm = dev_declines;
	cr_expect_neq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0);
	cr_expect(strstr(lks_errmsg(), "offers no device communicator"), "%s", lks_errmsg());
	/* a context given: the ranks still open their own, and are asked for one */
	be.comm = dev_comm;
	be.alloc = dev_alloc;
	atomic_store(&dev_made, 0);
	cr_assert_eq(lks_pool_create(2, &pool), 0);
	o.backend_ctx = pool;
	cr_expect_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
	cr_expect_eq(atomic_load(&dev_made), c.runs[0].world_size);
	lks_pool_free(pool);
	lks_case_release(&c);
}

/* The cuda backend's device of a process's rank: base (LKS_CUDA_DEVICE) for rank 0, then
   the next devices, wrapping: as many ranks as devices get distinct ones, the next ones
   share them in turn. */
Test(backend, cuda_ranks_map_to_devices_in_turn)
{
	for (int count = 1; count <= 8; count++)
		for (int base = 0; base < count; base++) {
			int seen[8] = { 0 };

			for (int local = 0; local < 2 * count; local++) {
				int d = lks_cuda_rank_device(base, local, count);

				cr_assert(d >= 0 && d < count, "base %d local %d of %d: %d", base, local,
				          count, d);
				cr_assert_eq(d, local < count ? (base + local < count ? base + local
				                                 : base + local - count)
				                              : lks_cuda_rank_device(base, local - count, count));
				if (local < count)
					cr_assert_eq(seen[d]++, 0, "device %d twice among %d ranks", d, count);
			}
			cr_assert_eq(lks_cuda_rank_device(base, 0, count), base);
		}
}

static int options_of(void *arg, const lks_run_rec *run)
{
	snprintf(arg, 256, "%s", run->info.options);
	return 0;
}

/* A run's allreduce = nccl reaches the device communicator as its mode and is stored with
   the run's options; ordered (the default) is not written there. */
Test(backend, the_runs_allreduce_key_reaches_the_communicator_and_the_store)
{
	lks_backend be = device_backend();
	char stored[256] = "";

	be.comm = dev_comm;
	be.alloc = dev_alloc;
	run_stored(&be, "run.r.allreduce=nccl", options_of, stored);
	cr_expect_eq(atomic_load(&dev_mode), LKS_ALLREDUCE_NCCL);
	cr_expect(strstr(stored, " allreduce=nccl"), "%s", stored);
	run_stored(&be, NULL, options_of, stored);
	cr_expect_eq(atomic_load(&dev_mode), LKS_ALLREDUCE_ORDERED);
	cr_expect(!strstr(stored, "allreduce"), "%s", stored);
}

/* An FSDP run on a backend whose memory is not the host's that offers a device
   communicator: its groups' reduce-scatters and all-gathers run on that communicator (the
   world's, seen from runner_fsdp.c's host buffers: lks_comm_staged), on device memory only,
   and its traces are the CPU's FSDP run's, which are DP's, bit for bit. */
Test(backend, an_fsdp_run_on_a_device_backend_gathers_on_the_device_communicator)
{
	const char *fsdp = "run.r.fsdp=2";
	lks_backend be = device_backend();
	double loss_dp[3] = { 0 }, loss_fsdp[3] = { 0 };
	uint64_t hash_dp, hash_fsdp;
	int n_dp, n_fsdp;
	lks_case dp, sharded;

	be.comm = dev_comm;
	be.alloc = dev_alloc;
	atomic_store(&dev_made, 0);
	atomic_store(&dev_parts, 0);
	train_like_cpu(&be, "FSDP on a device backend", fsdp);
	cr_expect_eq(atomic_load(&dev_made), 2, "each rank's device end");
	cr_expect_geq(atomic_load(&dev_parts), 3 * 2 * 3, "a reduce-scatter and two all-gathers "
	              "each step on each rank (%d)", atomic_load(&dev_parts));
	load_case(two_blocks, NULL, 0, &dp);
	load_case(two_blocks, &fsdp, 1, &sharded);
	cr_assert_eq(sharded.runs[0].fsdp, 2);
	train(&dp, &lks_backend_cpu, loss_dp, &hash_dp, &n_dp);
	train(&sharded, &lks_backend_cpu, loss_fsdp, &hash_fsdp, &n_fsdp);
	cr_expect_eq(n_fsdp, n_dp);
	cr_expect_eq(hash_fsdp, hash_dp, "FSDP's traces are not DP's");
	cr_expect_eq(memcmp(loss_fsdp, loss_dp, sizeof(loss_dp)), 0);
	lks_case_release(&dp);
	lks_case_release(&sharded);
}

/* Tensor-parallel runs, with and without sequence parallel, dp 2 x tp 2, FSDP with FP8
   all-gather and HSDP, on a backend whose memory is not the host's that offers a device
   communicator: their groups are that communicator's sub-groups (split where the group is
   not the world), whose collectives (partial sums, gathers, the amax of a scale group, the
   shards' FP8 codes) take device memory only, staged from model_tp.c's and runner_fsdp.c's
   host buffers; their traces and losses are the CPU's bit for bit, and under
   allreduce = nccl too (the test's device communicator sums in rank order). */
Test(backend, a_tp_run_on_a_device_backend_uses_the_device_communicators_groups)
{
	const char *sets[][4] = {
		{ "run.r.tp=2", "run.r.sequence_parallel=off", "run.r.recipe=fp8_rowwise",
		  "run.r.world_size=2" },
		{ "run.r.tp=2", "run.r.sequence_parallel=on", "run.r.recipe=fp8_tensorwise",
		  "run.r.world_size=2" },
		{ "run.r.fsdp=2", "run.r.fp8_all_gather=on", "run.r.recipe=fp8_tensorwise",
		  "run.r.world_size=2" },
		{ "run.r.tp=2", "run.r.sequence_parallel=on", "run.r.recipe=fp8_rowwise",
		  "run.r.world_size=4" },
		{ "run.r.fsdp=2", "run.r.allreduce=nccl", "run.r.recipe=bf16", "run.r.world_size=4" },
	};
	const char *hsdp_cpu[] = { "run.r.fsdp=2", "run.r.allreduce=ordered", "run.r.recipe=bf16",
	                           "run.r.world_size=4" };
	lks_backend be = device_backend();

	be.comm = dev_comm;
	be.alloc = dev_alloc;
	for (int i = 0; i < 5; i++) {
		double loss_cpu[3] = { 0 }, loss_be[3] = { 0 };
		uint64_t hash_cpu, hash_be;
		int n_cpu, n_be, W = i < 3 ? 2 : 4;
		lks_case c, cpu;

		load_case(two_blocks, sets[i], 4, &c);
		/* the CPU's, in rank order (allreduce = nccl needs a device communicator) */
		load_case(two_blocks, i == 4 ? hsdp_cpu : sets[i], 4, &cpu);
		cr_assert_eq(c.runs[0].world_size, W);
		atomic_store(&dev_made, 0);
		atomic_store(&dev_splits, 0);
		train(&cpu, &lks_backend_cpu, loss_cpu, &hash_cpu, &n_cpu);
		cr_expect_eq(atomic_load(&dev_made), 0);
		train(&c, &be, loss_be, &hash_be, &n_be);
		cr_expect_eq(atomic_load(&dev_made), W, "%s %s: each rank's device end", sets[i][0],
		             sets[i][3]);
		/* split where a group is not the world: dp 2 x tp 2, the tp groups; HSDP, the
		   fsdp and the dp groups */
		cr_expect_eq(atomic_load(&dev_splits), i == 3 ? W : i == 4 ? 2 * W : 0, "%s %s",
		             sets[i][0], sets[i][3]);
		cr_expect_gt(n_be, 0);
		cr_expect_eq(n_be, n_cpu);
		cr_expect_eq(hash_be, hash_cpu, "%s %s: the device backend changed the traces",
		             sets[i][0], sets[i][3]);
		cr_expect_eq(memcmp(loss_be, loss_cpu, sizeof(loss_cpu)), 0);
		lks_case_release(&c);
		lks_case_release(&cpu);
	}
}
