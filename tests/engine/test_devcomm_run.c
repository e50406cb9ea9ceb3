/*
 * test_devcomm_run.c: the runner over a device communicator on the stand-in link
 * (standin_link.h): a run trains with the CPU's bits; a rank that fails to join or hangs in
 * a collective ends the run within its timeout, stored failed; a run of one rank asks for
 * no device communicator (a broken NCCL cannot fail it); each rank's device is stored in
 * the run's fingerprint; two processes on one GPU and ranks of two GPU classes are refused;
 * a sharded run's groups are sub-groups of the device communicator, closed at once.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
#include "kernels/clock.h"
#include "backend_fixture.h"
#include "standin_link.h"

TestSuite(devcomm_run, .init = standin_reset);

struct stored {
	char status[16];
	char fingerprint[4096];
	int n;
};

static int stored_of(void *arg, const lks_run_rec *run)
{
	struct stored *s = arg;

	snprintf(s->status, sizeof(s->status), "%s", run->status);
	snprintf(s->fingerprint, sizeof(s->fingerprint), "%s", run->info.fingerprint);
	s->n++;
	return 0;
}

/* two_blocks (with set, or none) on be into a new store, with timeout_s; returns lks_run's
   rc, the stored run in *out, the seconds lks_run took in *seconds */
static int run_into_store(const lks_backend *be, const char *set, double timeout_s,
                          struct stored *out, double *seconds)
{
	lks_runner_opts o = { .threads = 1, .backend = be, .timeout_s = timeout_s,
	                      .fingerprint = "{\n  \"lockstep\": \"test\"\n}\n" };
	char dir[] = "/tmp/lks-test-devcomm-XXXXXX", path[64];
	lks_run_result res;
	lks_store *s;
	lks_case c;
	double t0;
	int rc;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	load_case(two_blocks, set ? &set : NULL, set ? 1 : 0, &c);
	t0 = lks_now();
	rc = lks_run(&c, &c.runs[0], s, &o, &res);
	*seconds = lks_now() - t0;
	memset(out, 0, sizeof(*out));
	cr_assert_eq(lks_store_get_runs(s, stored_of, out), 0, "%s", lks_errmsg());
	lks_store_close(s);
	lks_case_release(&c);
	unlink(path);
	rmdir(dir);
	return rc;
}

/* The runner's ranks all-reduce through devcomm over the stand-in with the CPU's bits, one
   device end per rank. */
Test(devcomm_run, a_run_over_the_stand_in_has_the_cpus_bits)
{
	lks_backend be = standin_backend();
	int W = train_like_cpu(&be, "the stand-in device communicator", NULL);

	cr_expect_eq(atomic_load(&standin_joins), W);
	cr_expect_gt(atomic_load(&standin_ops), 0, "no collective went through the link");
	cr_expect_eq(atomic_load(&standin_released), W);
}

/* A rank whose NCCL init fails ends the run, every rank's wait with it (no hang: the
   timeout, 60 s, is never reached), and the run is stored failed. */
Test(devcomm_run, a_rank_that_cannot_join_ends_the_run_stored_failed)
{
	lks_backend be = standin_backend();
	struct stored st;
	double seconds;

	standin_plan.fail_join = 1;
	cr_expect_neq(run_into_store(&be, NULL, 60, &st, &seconds), 0);
	cr_expect(strstr(lks_errmsg(), "cannot join"), "%s", lks_errmsg());
	cr_expect_eq(st.n, 1, "the run that could not start was not stored");
	cr_expect_str_eq(st.status, "failed");
	cr_expect_lt(seconds, 60);
}

/* A rank that hangs in a collective of its first step ends the run at the timeout, every
   rank's, and the run is stored failed. */
Test(devcomm_run, a_rank_that_hangs_in_a_collective_ends_the_run_at_the_timeout)
{
	lks_backend be = standin_backend();
	struct stored st;
	double seconds;

	standin_plan.hang_rank = 1;
	standin_plan.hang_op = 0;
	cr_expect_neq(run_into_store(&be, NULL, 0.3, &st, &seconds), 0);
	cr_expect(strstr(lks_errmsg(), "no answer") || strstr(lks_errmsg(), "aborted"), "%s",
	          lks_errmsg());
	cr_expect_str_eq(st.status, "failed");
	cr_expect_geq(seconds, 0.3 - 0.01, "ended before the timeout: %s", lks_errmsg());
	/* the timeout and an abort that wakes every waiter within a 1 ms nap: 30 s is a bound
	   no scheduler delay reaches, and far below a hang */
	cr_expect_lt(seconds, 30);
}

static atomic_int comm_asked;

static int broken_comm(const lks_backend *be, void *ctx, lks_comm *host,
                       const lks_devcomm_opts *o, lks_comm **out)
{
	(void)be; (void)ctx; (void)o;
	*out = NULL;
	atomic_fetch_add(&comm_asked, 1);
	lks_comm_abort(host, "a broken NCCL environment");
	return lks_err("a broken NCCL environment");
}

/* A run of one rank sums nothing, so it asks for no device communicator: a broken NCCL
   cannot fail a single-GPU run, whose bits are the CPU's (nor does allreduce = nccl need
   one there). With two ranks the same backend fails, as it must. */
Test(devcomm_run, a_run_of_one_rank_needs_no_device_communicator)
{
	lks_backend be = standin_backend();
	struct stored st;
	double seconds;

	be.comm = broken_comm;
	atomic_store(&comm_asked, 0);
	train_like_cpu(&be, "one rank on a broken NCCL", "run.r.world_size=1");
	cr_expect_eq(atomic_load(&comm_asked), 0);
	cr_expect_eq(run_into_store(&be, "run.r.world_size=1", 60, &st, &seconds), 0, "%s",
	             lks_errmsg());
	cr_expect_str_eq(st.status, "complete");
	cr_expect_neq(run_into_store(&be, NULL, 60, &st, &seconds), 0);
	cr_expect_gt(atomic_load(&comm_asked), 0);
}

/* Each rank's device (ordinal, UUID, host) is stored in the run's fingerprint, beside what
   the caller's fingerprint held. */
Test(devcomm_run, each_ranks_device_is_stored_with_the_run)
{
	lks_backend be = standin_backend();
	struct stored st;
	char host[64] = "", want[160];
	double seconds;

	gethostname(host, sizeof(host) - 1);
	cr_assert_eq(run_into_store(&be, NULL, 60, &st, &seconds), 0, "%s", lks_errmsg());
	cr_expect(strstr(st.fingerprint, "\"lockstep\": \"test\""), "%s", st.fingerprint);
	for (int r = 0; r < 2; r++) {
		snprintf(want, sizeof(want), "rank %d: gpu %d GPU-standin-%d on %.40s", r, r, r, host);
		cr_expect(strstr(st.fingerprint, want), "no '%s' in %s", want, st.fingerprint);
	}
}

/* Ranks of one process may share a GPU (the device communicator declines; the stand-in
   here has one GPU, so both ranks take it): allowed, and trained with the CPU's bits. */
Test(devcomm_run, ranks_of_one_process_may_share_a_gpu)
{
	lks_backend be = standin_backend();
	struct stored st;
	double seconds;

	standin_devices = 1;
	cr_expect_eq(run_into_store(&be, NULL, 60, &st, &seconds), 0, "%s", lks_errmsg());
	cr_expect(strstr(st.fingerprint, "rank 1: gpu 0 GPU-standin-0"), "%s", st.fingerprint);
}

/* The device check: two processes on one GPU are refused, naming both ranks, the host and
   the GPU; so are ranks of two GPU classes; ranks of one process on one GPU are not. */
Test(devcomm_run, two_processes_on_one_gpu_or_two_classes_are_refused)
{
	lks_rank_device d[3] = {
		{ .rank = 0, .first = 0, .ordinal = 0, .uuid = "GPU-a", .name = "H100", .cc = "9.0",
		  .host = "node7" },
		{ .rank = 1, .first = 0, .ordinal = 0, .uuid = "GPU-a", .name = "H100", .cc = "9.0",
		  .host = "node7" },
		{ .rank = 2, .first = 2, .ordinal = 1, .uuid = "GPU-b", .name = "H100", .cc = "9.0",
		  .host = "node7" },
	};
	char why[512] = "";

	cr_expect_eq(lks_devices_check(d, 3, why, sizeof(why)), 0, "%s", why);
	snprintf(d[2].uuid, sizeof(d[2].uuid), "GPU-a");
	d[2].ordinal = 0;
	cr_expect_neq(lks_devices_check(d, 3, why, sizeof(why)), 0);
	cr_expect(strstr(why, "ranks 0 and 2") && strstr(why, "'node7'") && strstr(why, "GPU-a")
	          && strstr(why, "one GPU per process"), "%s", why);
	snprintf(d[2].uuid, sizeof(d[2].uuid), "GPU-b");
	snprintf(d[2].cc, sizeof(d[2].cc), "8.0");
	snprintf(d[2].name, sizeof(d[2].name), "A100");
	cr_expect_neq(lks_devices_check(d, 3, why, sizeof(why)), 0);
	cr_expect(strstr(why, "rank 0 has a H100 (compute capability 9.0) and rank 2 a A100 (8.0)"),
	          "%s", why);
}

/* A tp run and an HSDP run of 4 ranks over the stand-in: their mesh groups are the device
   communicator's sub-groups, with the CPU's bits, and every end, the sub-groups' and the
   world's, leaves and is released. The stand-in's leave waits for every rank of its group,
   as NCCL's finalize does: ends closed one after another in one thread would wait for
   ever, so the runner closes every rank's at once (a hang fails by the timeout). */
Test(devcomm_run, a_sharded_runs_groups_close_at_once_with_the_cpus_bits, .timeout = 120)
{
	static const char *const sets[][3] = {
		{ "run.r.world_size=4", "run.r.tp=2", "run.r.sequence_parallel=on" },
		{ "run.r.world_size=4", "run.r.fsdp=2", "run.r.recipe=bf16" },
	};
	lks_backend be = standin_backend();

	for (int i = 0; i < 2; i++) {
		double loss_cpu[3] = { 0 }, loss_be[3] = { 0 };
		uint64_t hash_cpu, hash_be;
		int n_cpu, n_be;
		lks_case c;

		standin_reset();
		load_case(two_blocks, sets[i], 3, &c);
		train(&c, &lks_backend_cpu, loss_cpu, &hash_cpu, &n_cpu);
		train(&c, &be, loss_be, &hash_be, &n_be);
		cr_expect_eq(n_be, n_cpu);
		cr_expect_eq(hash_be, hash_cpu, "%s: the stand-in changed the traces", sets[i][1]);
		cr_expect_eq(memcmp(loss_be, loss_cpu, sizeof(loss_cpu)), 0, "%s", sets[i][1]);
		/* 4 world ends, and a sub-group end per rank and group: tp, or fsdp and dp */
		cr_expect_eq(atomic_load(&standin_released), i == 0 ? 4 + 4 : 4 + 8, "%s",
		             sets[i][1]);
		lks_case_release(&c);
	}
}
