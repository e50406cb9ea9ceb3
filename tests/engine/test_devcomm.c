/*
 * test_devcomm.c: a device communicator's waits (kernels/devcomm.h) and the runner's
 * devices, on the CPU with the stand-in link of standin_link.h in NCCL's place: a rank that
 * fails to join, or hangs in joining or in a collective, ends every rank's wait (by the
 * group's abort, or the timeout), and a run so stopped is stored failed; the sums are the
 * threads communicator's bits; a run of one rank asks for no device communicator; two
 * processes on one GPU, or ranks of two GPU classes, are refused; each rank's device is
 * stored with the run; all-gathers, reduce-scatters and a device end's sub-groups are the
 * host's bits.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/runner.h"
#include "kernels/clock.h"
#include "kernels/comm.h"
#include "kernels/devcomm.h"
#include "standin_link.h"

#define W 4
#define N 1000

struct rank {
	lks_comm *host, *end;
	int r, rc, ops;         /* ops: the collectives to run (sum, max, sum, ...) */
	int abort_at;           /* this rank aborts instead of its collective of this index */
	double timeout_s, seconds;
	float x[N], max[N];
	char err[512];
};

static float value(int r, size_t i)
{
	static const float special[] = { NAN, INFINITY, -INFINITY, -0.0f, 0.0f };

	if (i < 5 && r == 2)
		return special[i];
	return ldexpf((float)((i * 2654435761u + (unsigned)r * 40503u) % 1000u) - 500.0f,
	              (int)(i % 7) - 3);
}

static void *rank_main(void *p)
{
	struct rank *k = p;
	lks_devcomm_opts o = { .nlocal = W, .mode = LKS_ALLREDUCE_ORDERED,
	                       .timeout_s = k->timeout_s };
	double t0 = lks_now();

	for (size_t i = 0; i < N; i++)
		k->x[i] = k->max[i] = value(k->r, i);
	if ((k->rc = standin_comm(NULL, NULL, k->host, &o, &k->end)) == 0)
		for (int j = 0; j < k->ops && !k->rc; j++) {
			if (j == k->abort_at) {
				lks_comm_abort(k->end, "the test's rank failed");
				k->rc = -1;
				lks_err("aborted by the test");
			} else {
				k->rc = j % 2 ? lks_comm_allreduce_max(k->end, k->max, N)
				              : lks_comm_allreduce_sum(k->end, k->x, N);
			}
		}
	if (k->rc)
		snprintf(k->err, sizeof(k->err), "%s", lks_errmsg());
	k->seconds = lks_now() - t0;
	/* every rank's end closed at once, each in its thread: leaving waits for every rank's
	   (the stand-in's as NCCL's finalize) */
	lks_comm_close(k->end ? k->end : k->host);  /* an end owns its host's */
	k->end = k->host = NULL;
	return NULL;
}

/* W ranks as threads, each its device end over the stand-in and ops collectives; every
   thread must end (a hang fails the test by ctest's timeout) */
static void run_group(struct rank *k, int ops, double timeout_s)
{
	lks_comm *host[W];

	cr_assert_eq(lks_comm_threads(W, host), 0);
	for (int r = 0; r < W; r++) {
		k[r] = (struct rank){ .host = host[r], .r = r, .ops = ops, .abort_at = -1,
		                      .timeout_s = timeout_s };
	}
}

static void start_group(struct rank *k)
{
	pthread_t th[W];

	for (int r = 0; r < W; r++)
		cr_assert_eq(pthread_create(&th[r], NULL, rank_main, &k[r]), 0);
	for (int r = 0; r < W; r++)
		pthread_join(th[r], NULL);
}

TestSuite(devcomm, .init = standin_reset);

/* The stand-in's sums and maxes through devcomm are the threads communicator's bits, and
   every rank's link is released once at close. */
struct host_arg { lks_comm *c; float *s, *m; int rc; };

static void *host_main(void *p)
{
	struct host_arg *h = p;

	h->rc = lks_comm_allreduce_sum(h->c, h->s, N) || lks_comm_allreduce_max(h->c, h->m, N);
	return NULL;
}

Test(devcomm, sums_and_maxes_are_the_threads_communicators_bits)
{
	static struct rank k[W];
	static float want_sum[W][N], want_max[W][N];
	struct host_arg a[W];
	lks_comm *host[W];
	pthread_t th[W];

	/* the threads communicator's answers */
	cr_assert_eq(lks_comm_threads(W, host), 0);
	for (int r = 0; r < W; r++) {
		for (size_t i = 0; i < N; i++)
			want_sum[r][i] = want_max[r][i] = value(r, i);
		a[r] = (struct host_arg){ host[r], want_sum[r], want_max[r], 0 };
		cr_assert_eq(pthread_create(&th[r], NULL, host_main, &a[r]), 0);
	}
	for (int r = 0; r < W; r++) {
		pthread_join(th[r], NULL);
		cr_assert_eq(a[r].rc, 0);
		lks_comm_close(host[r]);
	}

	run_group(k, 2, 60);
	start_group(k);
	for (int r = 0; r < W; r++) {
		cr_assert_eq(k[r].rc, 0, "rank %d: %s", r, k[r].err);
		cr_expect_eq(memcmp(k[r].x, want_sum[r], sizeof(k[r].x)), 0, "rank %d's sum", r);
		cr_expect_eq(memcmp(k[r].max, want_max[r], sizeof(k[r].max)), 0, "rank %d's max", r);
	}
	cr_expect_eq(atomic_load(&standin_joins), W);
	cr_expect_eq(atomic_load(&standin_released), W);
}

/* A rank's all-gather, reduce-scatter and all-reduce sum, on its host end (comm_group.c's,
   made of the threads communicator's sums) or on its device end over the stand-in (mode:
   ordered or the library's); split: in its sub-group of two */
#define NP (N / W)
struct part_arg {
	lks_comm *c;
	int r, mode, device, split, rc;
	float gathered[N], scattered[N], summed[N];
	char err[512];
};

static void *part_main(void *p)
{
	struct part_arg *a = p;
	lks_devcomm_opts o = { .nlocal = W, .mode = a->mode, .timeout_s = 60 };
	lks_comm *c = a->c, *g = NULL;
	float mine[NP], all[N];
	int n = a->split ? W / 2 : W;  /* the ranks of the group the collectives run in */

	for (size_t i = 0; i < N; i++)
		all[i] = value(a->r, i);
	memcpy(mine, all + (size_t)a->r * NP, sizeof(mine));
	if (a->device && (a->rc = standin_comm(NULL, NULL, a->c, &o, &c)) != 0)
		c = NULL;
	/* split: ranks 0, 2 and 1, 3 (a tp group of two under dp 2 is ranks 0, 1) */
	if (c && a->split && (a->rc = lks_comm_split(c, 2, a->r % 2, &g)) != 0)
		g = NULL;
	if (c && (!a->split || g))
		a->rc = lks_comm_all_gather(g ? g : c, mine, NP, a->gathered)
		     || lks_comm_reduce_scatter(g ? g : c, all, (size_t)N / (size_t)n, a->scattered)
		     || lks_comm_allreduce_sum(g ? g : c, all, N);
	if (!a->rc)
		memcpy(a->summed, all, sizeof(all));
	if (a->rc)
		snprintf(a->err, sizeof(a->err), "%s", lks_errmsg());
	lks_comm_close(g);  /* before its parent */
	lks_comm_close(c ? c : a->c);  /* a device end owns its host's */
	return NULL;
}

static void run_parts(struct part_arg *a, int device, int mode, int split)
{
	lks_comm *host[W];
	pthread_t th[W];

	cr_assert_eq(lks_comm_threads(W, host), 0);
	for (int r = 0; r < W; r++) {
		a[r] = (struct part_arg){ .c = host[r], .r = r, .mode = mode, .device = device,
		                          .split = split };
		cr_assert_eq(pthread_create(&th[r], NULL, part_main, &a[r]), 0);
	}
	for (int r = 0; r < W; r++) {
		pthread_join(th[r], NULL);
		cr_assert_eq(a[r].rc, 0, "rank %d: %s", r, a[r].err);
	}
}

/* A device end's all-gather and reduce-scatter (NaN, infinities and -0.0 among the
   values) give each rank the host's bits, in either mode: the all-gather every rank's
   part in rank order, the reduce-scatter the rank-ordered sum of its part. */
Test(devcomm, all_gathers_and_reduce_scatters_are_the_hosts_bits)
{
	static struct part_arg want[W], got[W];

	run_parts(want, 0, LKS_ALLREDUCE_ORDERED, 0);
	for (size_t i = 0; i < N; i++)  /* the host's all-gather: each part where it was */
		cr_assert_eq(memcmp(&want[0].gathered[i], &(float){ value((int)(i / NP), i) },
		                    sizeof(float)), 0, "element %zu", i);
	for (int mode = LKS_ALLREDUCE_ORDERED; mode <= LKS_ALLREDUCE_NCCL; mode++) {
		run_parts(got, 1, mode, 0);
		for (int r = 0; r < W; r++) {
			cr_expect_eq(memcmp(got[r].gathered, want[r].gathered, sizeof(got[r].gathered)),
			             0, "mode %d, rank %d's all-gather", mode, r);
			cr_expect_eq(memcmp(got[r].scattered, want[r].scattered, NP * sizeof(float)), 0,
			             "mode %d, rank %d's reduce-scatter", mode, r);
			cr_expect_eq(memcmp(got[r].summed, want[r].summed, sizeof(got[r].summed)), 0,
			             "mode %d, rank %d's sum", mode, r);
		}
	}
	cr_expect_eq(atomic_load(&standin_ops), 3 * 2 * W, "three collectives a rank, two modes");
}

/* A device end's sub-groups (two of two ranks: 0, 2 and 1, 3) are the link's own: their
   all-gathers, reduce-scatters and sums are the host's sub-groups' bits (comm_group.c's,
   made of the whole group's collectives), in either mode, and every link (4 ends, 4
   sub-group ends) is released once. */
Test(devcomm, sub_groups_are_the_hosts_bits)
{
	static struct part_arg want[W], got[W];

	run_parts(want, 0, LKS_ALLREDUCE_ORDERED, 1);
	for (int mode = LKS_ALLREDUCE_ORDERED; mode <= LKS_ALLREDUCE_NCCL; mode++) {
		standin_reset();
		run_parts(got, 1, mode, 1);
		for (int r = 0; r < W; r++) {
			cr_expect_eq(memcmp(got[r].gathered, want[r].gathered, (W / 2) * NP * sizeof(float)),
			             0, "mode %d, rank %d's all-gather", mode, r);
			cr_expect_eq(memcmp(got[r].scattered, want[r].scattered, N / 2 * sizeof(float)),
			             0, "mode %d, rank %d's reduce-scatter", mode, r);
			cr_expect_eq(memcmp(got[r].summed, want[r].summed, sizeof(got[r].summed)), 0,
			             "mode %d, rank %d's sum", mode, r);
		}
		cr_expect_eq(atomic_load(&standin_ops), 3 * W, "three collectives a rank");
		cr_expect_eq(atomic_load(&standin_released), 2 * W);
	}
	/* the groups are their own: a sum over a group is not the whole group's */
	cr_expect_neq(memcmp(got[0].summed, got[1].summed, sizeof(got[0].summed)), 0);
	cr_expect_eq(memcmp(got[0].summed, got[2].summed, sizeof(got[0].summed)), 0);
}

/* A rank whose join fails at once aborts the group: every other rank's join wait ends by
   the abort, long before the timeout (60 s, which no step of this test comes near: were
   the abort not seen, the ranks would sit out the minute and say 'no answer'). */
Test(devcomm, a_rank_that_fails_to_join_ends_every_ranks_wait)
{
	static struct rank k[W];

	run_group(k, 2, 60);
	standin_plan.fail_join = 2;
	start_group(k);
	for (int r = 0; r < W; r++) {
		cr_expect_neq(k[r].rc, 0, "rank %d joined a group whose rank 2 could not", r);
		cr_expect(!strstr(k[r].err, "no answer"), "rank %d waited out the timeout: %s", r,
		          k[r].err);
		cr_expect_lt(k[r].seconds, 60, "rank %d", r);
	}
	cr_expect(strstr(k[2].err, "rank 2 cannot join"), "%s", k[2].err);
	cr_expect_eq(atomic_load(&standin_released), W, "a link not released");
}

/* A rank that never finishes joining (NCCL's init blocked on it): every rank's wait ends
   at the timeout, the first to see it aborting the group, so all fail and none hangs. */
Test(devcomm, a_rank_that_hangs_in_joining_ends_at_the_timeout)
{
	static struct rank k[W];
	int said = 0;

	run_group(k, 2, 0.3);
	standin_plan.hang_join = 1;
	start_group(k);
	for (int r = 0; r < W; r++) {
		cr_expect_neq(k[r].rc, 0, "rank %d", r);
		said += strstr(k[r].err, "joining the group of rank") && strstr(k[r].err, "no answer")
		     && strstr(k[r].err, "0.3 s");
		/* 0.3 s and then an abort that wakes every waiter within a 1 ms nap: 30 s is a
		   bound no scheduler delay of a test machine reaches, and far below a hang */
		cr_expect_lt(k[r].seconds, 30, "rank %d", r);
		cr_expect_geq(k[r].seconds, 0.3 - 0.01, "rank %d ended before anyone timed out", r);
	}
	cr_expect_geq(said, 1, "no rank said which wait had no answer: %s", k[0].err);
	cr_expect_eq(atomic_load(&standin_released), W);
}

/* A rank that never posts its third collective: the other ranks' third collective waits
   end at the timeout (the first two are done, and right), with every rank failed. */
Test(devcomm, a_rank_that_hangs_in_a_collective_ends_every_rank_at_the_timeout)
{
	static struct rank k[W];

	run_group(k, 4, 0.3);
	standin_plan.hang_rank = 3;
	standin_plan.hang_op = 2;
	start_group(k);
	for (int r = 0; r < W; r++) {
		cr_expect_neq(k[r].rc, 0, "rank %d", r);
		cr_expect(strstr(k[r].err, "all-reduce sum") || strstr(k[r].err, "aborted"), "%s",
		          k[r].err);
		cr_expect_lt(k[r].seconds, 30, "rank %d", r);
	}
	/* 2 collectives of every rank, then the third of every rank (the hung one's too) */
	cr_expect_eq(atomic_load(&standin_ops), 3 * W);
}

/* A rank that fails on its own (an error between collectives: it aborts its end, as the
   runner does) ends the others' waits in their next collective through the group's abort,
   without the timeout (60 s). */
Test(devcomm, a_sibling_abort_ends_a_device_wait)
{
	static struct rank k[W];

	run_group(k, 3, 60);
	k[1].abort_at = 2;
	start_group(k);
	for (int r = 0; r < W; r++) {
		cr_expect_neq(k[r].rc, 0, "rank %d", r);
		cr_expect(!strstr(k[r].err, "no answer"), "rank %d waited out the timeout: %s", r,
		          k[r].err);
		cr_expect_lt(k[r].seconds, 60, "rank %d", r);
	}
	cr_expect(strstr(k[0].err, "aborted"), "%s", k[0].err);
}
