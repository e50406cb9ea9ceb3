/*
 * mpi_comm.c: the MPI communicator (kernels/mpi/comm_mpi.h) in real processes, run by
 * ctest under 'mpirun -np N' (1, 2 and 4). A plain program, since every process must run it
 * whole. Each process makes every rank's input itself (a function of rank and index), so it
 * knows the bits the rank-order reduction must give, and checks its result against them:
 * the all-reduce sum and max (NaNs of different payloads, -0, and values whose sum depends
 * on the order: a library reduction in another order would not give these bits), lengths
 * shorter than the ranks and not a multiple of them, and a gather of blocks of different
 * sizes to rank 0. First on the job's end (one rank per process), then on groups of 1 to 5
 * ranks and of 2 x processes + 1 laid out over the processes (some hosting none, some
 * several), each local rank driven by a thread of its own. On each: the all-gather and
 * reduce-scatter made of the all-reduce, and sub-groups (comm_group.c): the ranks split by
 * rank % 2 and by rank / 2, whose all-reduces and reduce-scatter are their members' in rank
 * order.
 * Exit 0 when every check holds, 1 with the first that does not.
 *
 * 'mpi_comm --hang P [tag]' tests the timeout instead (tests/kernels/mpi_timeout.cmake): a job with
 * a timeout of 2 s, a group of two ranks per process, and on process P one thread that
 * sleeps 60 s before the group's all-reduce; the other processes must end the job (exit 3)
 * naming the all-reduce. tag is ignored: it marks the processes, so the test can see none
 * is left behind.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/mpi/comm_mpi.h"

#define MAX_RANKS 64
#define HANG_TIMEOUT_S 2.0  /* the job's timeout under --hang */

static atomic_int failures;  /* over every thread */
static int me;               /* this process */
static int hang_process = -1, hang_last = -1;  /* --hang: the process, its rank that sleeps */

/* c: the end being checked (its rank and size go into the message) */
#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "mpi_comm: process %d, rank %d of %d: ", me, c->rank, c->size); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		failures++; \
	} \
} while (0)

/* Rank r's element i: order-sensitive magnitudes, signed zeros; with_nan: a NaN on every
   rank but 0 at some indices, its payload the rank's (the last in rank order must win), and
   on rank 1 alone at others. */
static float input(int r, size_t i, int with_nan)
{
	static const float v[] = { 1e8f, 1.0f, -1e8f, 0.5f, -0.0f, 3.25f, -7e-39f, 65504.0f };

	if (with_nan && ((r >= 1 && i % 97 == 5) || (r == 1 && i % 89 == 7))) {
		uint32_t bits = 0x7fc00000u | (uint32_t)r;
		float f;

		memcpy(&f, &bits, sizeof(f));
		return f;
	}
	return v[(r * 3 + i) % 8] * (float)(1 + (i % 5));
}

static int same_bits(float a, float b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static void check_allreduce(lks_comm *c, size_t n, int max)
{
	float *x = malloc((n ? n : 1) * sizeof(float));

	for (size_t i = 0; i < n; i++)
		x[i] = input(c->rank, i, max);
	CHECK((max ? lks_comm_allreduce_max(c, x, n) : lks_comm_allreduce_sum(c, x, n)) == 0,
	      "all-reduce: %s", lks_errmsg());
	for (size_t i = 0; i < n; i++) {
		float acc = input(0, i, max);

		for (int r = 1; r < c->size; r++) {
			float y = input(r, i, max);

			acc = max ? (isnan(y) || y > acc ? y : acc) : acc + y;
		}
		if (!same_bits(x[i], acc)) {
			uint32_t got, want;

			memcpy(&got, &x[i], sizeof(got));
			memcpy(&want, &acc, sizeof(want));
			CHECK(0, "%s of %zu: element %zu is %a (0x%08x), rank order gives %a (0x%08x)",
			      max ? "max" : "sum", n, i, x[i], got, acc, want);
			break;
		}
	}
	free(x);
}

static void check_gather(lks_comm *c)
{
	size_t bytes = (size_t)c->rank * 3 + 1, counts[MAX_RANKS];
	unsigned char *mine = malloc(bytes), *all = NULL;
	void *out = NULL;

	for (size_t i = 0; i < bytes; i++)
		mine[i] = (unsigned char)(c->rank * 16 + i);
	CHECK(lks_comm_gather(c, mine, bytes, &out, counts) == 0, "gather: %s", lks_errmsg());
	if (c->rank == LKS_COMM_ROOT && out) {
		all = out;
		for (int r = 0; r < c->size; r++) {
			CHECK(counts[r] == (size_t)r * 3 + 1, "gather: rank %d sent %zu bytes", r,
			      counts[r]);
			for (size_t i = 0; i < counts[r]; i++)
				CHECK(all[i] == (unsigned char)(r * 16 + i), "gather: rank %d byte %zu", r,
				      i);
			all += counts[r];
		}
		free(out);
	}
	free(mine);
}

/* The reduce-scatter of size x n values and the all-gather of n on c, and on the sub-groups
   of c's ranks split by rank % 2 and by rank / 2 (as a mesh of (size / 2) x 2 groups them),
   each against its members' rank-order sums, bit for bit: members[k] is the k-th rank of
   this rank's group in c (all of c without a split). */
static void check_collectives_on(lks_comm *c, lks_comm *g, const int *members, size_t n)
{
	float *x = malloc(((size_t)g->size * n + 1) * sizeof(float));
	float *out = malloc((n + 1) * sizeof(float)), *all = malloc(((size_t)g->size * n + 1) * 4);
	float *y = malloc((n + 1) * sizeof(float));

	for (size_t i = 0; i < (size_t)g->size * n; i++)
		x[i] = input(c->rank, i, 1);
	CHECK(lks_comm_reduce_scatter(g, x, n, out) == 0, "reduce-scatter: %s", lks_errmsg());
	CHECK(lks_comm_all_gather(g, x, n, all) == 0, "all-gather: %s", lks_errmsg());
	for (size_t i = 0; i < n; i++)
		y[i] = input(c->rank, i, 0);
	CHECK(lks_comm_allreduce_sum(g, y, n) == 0, "sub-group sum: %s", lks_errmsg());
	for (size_t i = 0; i < n; i++) {
		size_t at = (size_t)g->rank * n + i;
		float rs = input(members[0], at, 1), s = input(members[0], i, 0);

		for (int k = 1; k < g->size; k++) {
			rs += input(members[k], at, 1);
			s += input(members[k], i, 0);
		}
		CHECK(same_bits(out[i], rs), "reduce-scatter of %d x %zu: element %zu is %a, rank order "
		      "gives %a", g->size, n, i, out[i], rs);
		CHECK(same_bits(y[i], s), "sum of a group of %d: element %zu is %a, rank order gives "
		      "%a", g->size, i, y[i], s);
		for (int k = 0; k < g->size; k++)
			CHECK(same_bits(all[(size_t)k * n + i], input(members[k], i, 1)),
			      "all-gather: rank %d's element %zu", members[k], i);
	}
	free(x);
	free(out);
	free(all);
	free(y);
}

static void check_collectives(lks_comm *c)
{
	int members[MAX_RANKS], m;

	for (int r = 0; r < c->size; r++)
		members[r] = r;
	check_collectives_on(c, c, members, 1001);
	/* a split's groups are of one size: the even groups only */
	for (int by = 0; by < 2 && c->size % 2 == 0; by++) {
		int groups = c->size / 2;
		int color = by ? c->rank / 2 : c->rank % 2;

		if (!by)
			groups = 2;
		lks_comm *g;

		if (lks_comm_split(c, groups, color, &g)) {
			CHECK(0, "split: %s", lks_errmsg());
			continue;
		}
		m = 0;
		for (int r = 0; r < c->size; r++)
			if ((by ? r / 2 : r % 2) == color)
				members[m++] = r;
		CHECK(g->size == m, "split: a group of %d, want %d", g->size, m);
		check_collectives_on(c, g, members, 333);
		lks_comm_close(g);
	}
}

static void check_all(lks_comm *c)
{
	static const size_t lengths[] = { 0, 1, 3, 1000, 100003 };

	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
		check_allreduce(c, lengths[k], 0);
		check_allreduce(c, lengths[k], 1);
	}
	check_gather(c);
	check_collectives(c);
	CHECK(lks_comm_barrier(c) == 0, "barrier: %s", lks_errmsg());
}

/* One local rank of a group: its checks, then its end closed (the last frees the group). */
static void *rank_thread(void *arg)
{
	lks_comm *c = arg;

	check_all(c);
	lks_comm_close(c);
	return NULL;
}

/* Under --hang: the group's all-reduce, where the last local thread of process hang
   sleeps first; the others must not come back (the job ends, exit 3). */
static void *hang_thread(void *arg)
{
	lks_comm *c = arg;
	float x[16] = { 0 };

	if (me == hang_process && c->rank == hang_last)
		sleep(60);  /* far past HANG_TIMEOUT_S; bounded, so nothing can outlive it long */
	lks_comm_allreduce_sum(c, x, 16);
	CHECK(0, "the all-reduce came back past a process that hangs");
	return NULL;
}

/* A group of nranks over the job's processes, each local rank checked by its own thread
   (run), after the layout is checked: each rank hosted by exactly one process, rank 0 by
   process 0, the ends numbered from first. */
static void check_group(lks_comm *c, int nranks, void *(*run)(void *))
{
	lks_comm *ends[MAX_RANKS];
	pthread_t threads[MAX_RANKS];
	float hosted[MAX_RANKS] = { 0 };
	int first = -1, count = -1;

	if (lks_comm_group(c, nranks, &first, &count, ends)) {
		CHECK(0, "group of %d: %s", nranks, lks_errmsg());
		return;
	}
	CHECK(count >= 0 && first >= 0 && first + count <= nranks, "group of %d: ranks %d + %d",
	      nranks, first, count);
	CHECK(me != 0 || (first == 0 && count > 0), "group of %d: rank 0 is not on process 0",
	      nranks);
	for (int i = 0; i < count && first >= 0 && first + i < nranks; i++)
		hosted[first + i] = 1;
	CHECK(lks_comm_allreduce_sum(c, hosted, (size_t)nranks) == 0, "%s", lks_errmsg());
	for (int r = 0; r < nranks; r++)
		CHECK(hosted[r] == 1, "group of %d: rank %d hosted %g times", nranks, r,
		      (double)hosted[r]);
	for (int i = 0; i < count; i++) {
		CHECK(ends[i]->rank == first + i && ends[i]->size == nranks,
		      "group of %d: end %d is rank %d of %d", nranks, i, ends[i]->rank,
		      ends[i]->size);
		if (pthread_create(&threads[i], NULL, run, ends[i])) {
			fprintf(stderr, "mpi_comm: cannot start a thread\n");
			exit(1);
		}
	}
	for (int i = 0; i < count; i++)
		pthread_join(threads[i], NULL);
}

int main(int argc, char **argv)
{
	int hang = argc >= 3 && strcmp(argv[1], "--hang") == 0;
	lks_comm *c;

	/* no timeout in the checks (ctest's bounds them): a slow machine must not fail them */
	if (lks_comm_mpi(hang ? HANG_TIMEOUT_S : 0, &c)) {
		fprintf(stderr, "mpi_comm: %s\n", lks_errmsg());
		return 1;
	}
	me = c->rank;
	if (c->size * 2 + 1 > MAX_RANKS) {
		fprintf(stderr, "mpi_comm: at most %d processes\n", (MAX_RANKS - 1) / 2);
		return 1;
	}
	if (hang) {
		hang_process = atoi(argv[2]);
		hang_last = -1;
		for (int p = 0; p <= hang_process && p < c->size; p++) {
			int f, n;

			lks_comm_layout(2 * c->size, c->size, p, &f, &n);
			hang_last = f + n - 1;
		}
		check_group(c, 2 * c->size, hang_thread);
		fprintf(stderr, "mpi_comm: process %d: the job went on past a hang\n", me);
		lks_comm_close(c);
		return 1;
	}
	check_all(c);
	for (int nranks = 1; nranks <= 5; nranks++)
		check_group(c, nranks, rank_thread);
	/* and several threads on every process, past process 0 too (the order of two ranks
	   shows in the sums only from a third on) */
	check_group(c, 2 * c->size + 1, rank_thread);
	CHECK(lks_comm_barrier(c) == 0, "barrier: %s", lks_errmsg());
	if (me == 0 && !failures)
		printf("mpi_comm: %d processes agree with the rank-order reduction, on the job and "
		       "on groups of 1 to 5 and %d ranks\n", c->size, 2 * c->size + 1);
	lks_comm_close(c);
	return failures ? 1 : 0;
}
