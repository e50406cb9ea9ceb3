/*
 * comm_mpi.c: ranks as MPI processes x threads (comm_mpi.h).
 *
 * A group is the ranks of a run laid out over the job's processes (lks_comm_layout): the
 * processes that host ranks share an MPI communicator (split from the job's), and within a
 * process its ranks are threads that meet in a rendezvous (a mutex and a condition, as in
 * comm_threads.c). The thread that arrives last does the MPI exchange for every local
 * buffer while the others wait, so one thread of a group calls MPI at a time; a
 * process-wide lock keeps MPI calls of different groups apart (MPI_THREAD_SERIALIZED). The
 * job's own end is a group too: one rank per process.
 *
 * An all-reduce is a reduce-scatter in rank order, then an all-gather: the n elements are cut
 * into one slice per process, process q owns slice q; an MPI_Ialltoallv hands q every local
 * rank's part of slice q, so that q receives the parts of every rank in global rank order
 * (process 0's threads first, then process 1's, ...) and reduces them in that order,
 * ((x_0 + x_1) + x_2) + ...; an MPI_Iallgatherv gives every process every reduced slice.
 * MPI moves floats and never adds them: the bits are the threads communicator's.
 *
 * Every wait on another process is nonblocking MPI polled with MPI_Test (at first without
 * sleeping, then with sleeps of up to 1 ms) until the job's timeout; past it the process
 * says which collective had no answer and ends the job (MPI_Abort, exit 3): a job with a
 * dead or stuck process must not hang.
 */
#include "kernels/mpi/comm_mpi.h"
#include "kernels/clock.h"

#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A wait polls without sleeping for its first LKS_MPI_SPIN_S (an exchange of a step is
   usually done by then, and a sleep of Linux costs ~50 us at least), then sleeps between
   two MPI_Tests, 10 us doubled up to 1 ms: a wait on a slow process costs little CPU and
   ends at most 1 ms late. */
#define LKS_MPI_SPIN_S 200e-6
#define LKS_MPI_NAP_MAX_NS 1000000L

struct lks_mpi_group;

struct lks_mpi_end {
	lks_comm base;          /* first: an lks_comm * is one of these */
	struct lks_mpi_group *g;
};

struct lks_mpi_group {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	MPI_Comm comm;          /* the processes that host ranks, in job order */
	int procs, me;          /* their number, this process's index among them */
	int first, count;       /* this process's ranks */
	int nranks;
	int *pcount;            /* (procs) ranks per process */
	int initialised;        /* the job's end, whose communicator started MPI: closing it
	                           finalises MPI */
	double timeout_s;       /* this end's waits; <= 0: no limit */
	double group_timeout_s; /* the job's end: its groups' timeout_s */
	int process;            /* MPI_COMM_WORLD's rank of this process, for messages */
	char host[64];
	/* the rendezvous of the local threads */
	int arrived;            /* threads waiting in this generation */
	unsigned gen;           /* collectives done */
	int rc;                 /* of the last collective, with why */
	char why[512];
	int open;               /* ends not yet closed */
	float **x;              /* (count) the buffers of the all-reduce under way */
	const void **send;      /* (count) the blocks of the gather under way */
	size_t *n;              /* (count) their lengths */
	void ***out;            /* (count) where the gather's result goes (rank 0's only) */
	size_t **counts;        /* (count) */
	/* the exchange's scratch */
	int *scounts, *sdispls; /* (procs) in elements */
	int *rcounts, *rdispls; /* (procs) */
	int *gcounts;           /* (nranks) bytes per rank of a gather */
	int *lbytes;            /* (count) bytes per local rank of a gather */
	float *packed;          /* (count * n) the local parts, slice by slice */
	size_t packed_cap;
	float *parts;           /* (nranks * the largest slice) */
	size_t parts_cap;
	struct lks_mpi_end *ends;  /* (count) */
};

typedef int (*lks_mpi_work)(struct lks_mpi_group *g, int max);

/* MPI_THREAD_SERIALIZED: no two threads of this process in MPI at once, whatever group */
static pthread_mutex_t lks_mpi_serial = PTHREAD_MUTEX_INITIALIZER;

static struct lks_mpi_group *lks_mpi_group_of(lks_comm *c)
{
	return ((struct lks_mpi_end *)c)->g;
}

static int lks_mpi_err(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof(msg), "error %d", rc);
	return lks_err("MPI %s: %s", what, msg);
}

/* Names this process's ranks in g, for a message: "rank 2" or "ranks 2-3". */
static void lks_mpi_who(const struct lks_mpi_group *g, char *buf, size_t n)
{
	if (g->count == 1)
		snprintf(buf, n, "rank %d", g->first);
	else
		snprintf(buf, n, "ranks %d-%d", g->first, g->first + g->count - 1);
}

/* Waits for req (started by what's step), polling: past g's timeout, ends the job. */
static int lks_mpi_wait(struct lks_mpi_group *g, MPI_Request *req, const char *what,
                        const char *step)
{
	double t0 = lks_now();
	long nap = 10000;  /* ns, doubled up to LKS_MPI_NAP_MAX_NS */
	double waited;
	char who[64];
	int done = 0, rc;

	for (;;) {
		pthread_mutex_lock(&lks_mpi_serial);
		rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
		pthread_mutex_unlock(&lks_mpi_serial);
		if (rc != MPI_SUCCESS)
			return lks_mpi_err(rc, step);
		if (done)
			return 0;
		waited = lks_now() - t0;
		if (g->timeout_s > 0 && waited > g->timeout_s)
			break;
		if (waited < LKS_MPI_SPIN_S)
			continue;
		nanosleep(&(struct timespec){ 0, nap }, NULL);
		nap = nap * 2 < LKS_MPI_NAP_MAX_NS ? nap * 2 : LKS_MPI_NAP_MAX_NS;
	}
	lks_mpi_who(g, who, sizeof(who));
	fprintf(stderr, "lockstep: %s (process %d on %s): %s (its %s) had no answer from the "
	        "other processes in %g s: a process died or hangs (or process 0 waited that long "
	        "for the database, which another command was writing); the job ends (exit 3)\n",
	        who, g->process, g->host, what, step, g->timeout_s);
	fflush(stderr);
	pthread_mutex_lock(&lks_mpi_serial);
	MPI_Abort(MPI_COMM_WORLD, 3);
	exit(3);  /* MPI_Abort does not return; should it, the process still ends */
}

static int lks_mpi_unlock(int rc)
{
	pthread_mutex_unlock(&lks_mpi_serial);
	return rc;
}

/* Waits for what's step, the nonblocking MPI call `call` (its request req), started under
   the process's MPI lock. */
#define LKS_MPI_START_WAIT(g, call, req, what, step) \
	(pthread_mutex_lock(&lks_mpi_serial), \
	 lks_mpi_started((g), lks_mpi_unlock(call), &(req), (what), (step)))

static int lks_mpi_started(struct lks_mpi_group *g, int rc, MPI_Request *req,
                           const char *what, const char *step)
{
	return rc != MPI_SUCCESS ? lks_mpi_err(rc, step) : lks_mpi_wait(g, req, what, step);
}

/* Where slice p of n elements among size processes starts: floor(p * n / size), without
   overflow. */
static size_t lks_slice_at(size_t n, int size, int p)
{
	size_t s = (size_t)size, q = (size_t)p;

	return n / s * q + n % s * q / s;
}

static int lks_mpi_grow(void **buf, size_t *cap, size_t want, size_t elem)
{
	void *p;

	if (want <= *cap)
		return 0;
	if (!(p = realloc(*buf, want * elem)))
		return lks_err("out of memory");
	*buf = p;
	*cap = want;
	return 0;
}

/* The all-reduce of the local buffers g->x (g->n[0] floats each) over the group. */
static int lks_mpi_allreduce_work(struct lks_mpi_group *g, int max)
{
	const char *what = max ? "the all-reduce max" : "the all-reduce sum";
	size_t n = g->n[0], k = (size_t)g->count, lo, mine;
	float *x = g->x[0];
	const float *src = x;
	MPI_Request req;
	int rc;

	if (g->nranks == 1)
		return 0;
	if (n * k > INT_MAX || n * (size_t)g->nranks > INT_MAX)
		return lks_err("an all-reduce of %zu elements on %d ranks: MPI counts are int", n,
		               g->nranks);
	lo = lks_slice_at(n, g->procs, g->me);
	mine = lks_slice_at(n, g->procs, g->me + 1) - lo;
	if (lks_mpi_grow((void **)&g->parts, &g->parts_cap, mine * (size_t)g->nranks,
	                 sizeof(float)))
		return -1;
	if (k > 1) {  /* slice q of every local buffer, side by side, for process q */
		float *p;

		if (lks_mpi_grow((void **)&g->packed, &g->packed_cap, n * k, sizeof(float)))
			return -1;
		p = g->packed;
		for (int q = 0; q < g->procs; q++) {
			size_t a = lks_slice_at(n, g->procs, q), b = lks_slice_at(n, g->procs, q + 1);

			for (size_t i = 0; i < k && b > a; i++, p += b - a)
				memcpy(p, g->x[i] + a, (b - a) * sizeof(float));
		}
		src = g->packed;
	}
	for (int q = 0, at = 0; q < g->procs; q++) {
		size_t a = lks_slice_at(n, g->procs, q), b = lks_slice_at(n, g->procs, q + 1);

		g->scounts[q] = (int)(k * (b - a));
		g->sdispls[q] = (int)(k * a);
		g->rcounts[q] = (int)((size_t)g->pcount[q] * mine);
		g->rdispls[q] = at;
		at += g->rcounts[q];
	}
	rc = LKS_MPI_START_WAIT(g, MPI_Ialltoallv(src, g->scounts, g->sdispls, MPI_FLOAT,
	                        g->parts, g->rcounts, g->rdispls, MPI_FLOAT, g->comm, &req),
	                        req, what, "all-to-all");
	if (rc)
		return rc;
	/* slice me, reduced over every rank in rank order, into x's own slice */
	for (size_t i = 0; i < mine; i++) {
		float acc = g->parts[i];

		for (int r = 1; r < g->nranks; r++) {
			float y = g->parts[mine * (size_t)r + i];

			if (max)
				acc = isnan(y) || y > acc ? y : acc;
			else
				acc += y;
		}
		x[lo + i] = acc;
	}
	for (int q = 0; q < g->procs; q++) {
		g->sdispls[q] = (int)lks_slice_at(n, g->procs, q);
		g->scounts[q] = (int)(lks_slice_at(n, g->procs, q + 1) - (size_t)g->sdispls[q]);
	}
	rc = LKS_MPI_START_WAIT(g, MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, x, g->scounts,
	                        g->sdispls, MPI_FLOAT, g->comm, &req), req, what, "all-gather");
	for (size_t i = 1; !rc && n && i < k; i++)
		memcpy(g->x[i], x, n * sizeof(float));
	return rc;
}

/* Every local block g->send (g->n bytes) to rank 0, in rank order. */
static int lks_mpi_gather_work(struct lks_mpi_group *g, int unused)
{
	const char *what = "the gather";
	int root = g->me == 0, *mine = g->lbytes, rc;
	size_t total = 0, local = 0;
	char *buf = NULL, *packed;
	MPI_Request req;

	for (int i = 0; i < g->count; i++) {
		if (g->n[i] > INT_MAX || (local += g->n[i]) > INT_MAX)
			return lks_err("a gather of %zu bytes: MPI counts are int", local);
		mine[i] = (int)g->n[i];
	}
	for (int q = 0, at = 0; q < g->procs; q++) {
		g->rcounts[q] = g->pcount[q];
		g->rdispls[q] = at;
		at += g->pcount[q];
	}
	rc = LKS_MPI_START_WAIT(g, MPI_Igatherv(mine, g->count, MPI_INT, g->gcounts, g->rcounts,
	                        g->rdispls, MPI_INT, 0, g->comm, &req), req, what, "sizes");
	if (rc)
		return rc;
	if (root) {
		for (int q = 0, r = 0; q < g->procs; q++) {
			size_t bytes = 0;

			for (int j = 0; j < g->pcount[q]; j++, r++)
				bytes += (size_t)g->gcounts[r];
			g->rdispls[q] = (int)total;
			if ((total += bytes) > INT_MAX)
				return lks_err("a gather of %zu bytes: MPI counts are int", total);
			g->rcounts[q] = (int)bytes;
		}
		if (!(buf = malloc(total ? total : 1)))
			return lks_err("out of memory");
	}
	if (!(packed = malloc(local ? local : 1))) {
		free(buf);
		return lks_err("out of memory");
	}
	for (int i = 0, at = 0; i < g->count; at += mine[i], i++)
		if (mine[i])
			memcpy(packed + at, g->send[i], (size_t)mine[i]);
	rc = LKS_MPI_START_WAIT(g, MPI_Igatherv(packed, (int)local, MPI_BYTE, buf, g->rcounts,
	                        g->rdispls, MPI_BYTE, 0, g->comm, &req), req, what, "blocks");
	free(packed);
	if (rc) {
		free(buf);
		return rc;
	}
	if (root) {  /* the end of rank 0, this process's first */
		*g->out[0] = buf;
		for (int r = 0; r < g->nranks; r++)
			g->counts[0][r] = (size_t)g->gcounts[r];
	}
	return 0;
}

static int lks_mpi_barrier_work(struct lks_mpi_group *g, int unused)
{
	MPI_Request req;

	return LKS_MPI_START_WAIT(g, MPI_Ibarrier(g->comm, &req), req, "the barrier", "barrier");
}

/* The local threads meet; the last to arrive runs work for all of them while the others
   wait, and every one returns its result. */
static int lks_mpi_rendezvous(lks_comm *c, lks_mpi_work work, int arg)
{
	struct lks_mpi_group *g = lks_mpi_group_of(c);
	char why[sizeof(g->why)];
	unsigned gen;
	int rc;

	pthread_mutex_lock(&g->lock);
	gen = g->gen;
	if (++g->arrived == g->count) {
		g->arrived = 0;
		rc = 0;
		for (int i = 1; i < g->count && work != lks_mpi_gather_work; i++)
			if (g->n[i] != g->n[0])
				rc = lks_err("the ranks of process %d passed %zu and %zu elements",
				             g->process, g->n[0], g->n[i]);
		if (!rc)
			rc = work(g, arg);
		g->rc = rc;
		snprintf(g->why, sizeof(g->why), "%s", rc ? lks_errmsg() : "");
		g->gen++;
		pthread_cond_broadcast(&g->wake);
	}
	while (gen == g->gen)
		pthread_cond_wait(&g->wake, &g->lock);
	rc = g->rc;
	memcpy(why, g->why, sizeof(why));
	pthread_mutex_unlock(&g->lock);
	return rc ? lks_err("%s", why) : 0;
}

static int lks_mpi_allreduce(lks_comm *c, float *x, size_t n, int max)
{
	struct lks_mpi_group *g = lks_mpi_group_of(c);
	int i = c->rank - g->first;

	g->x[i] = x;
	g->n[i] = n;
	return lks_mpi_rendezvous(c, lks_mpi_allreduce_work, max);
}

static int lks_mpi_sum(lks_comm *c, float *x, size_t n)
{
	return lks_mpi_allreduce(c, x, n, 0);
}

static int lks_mpi_max(lks_comm *c, float *x, size_t n)
{
	return lks_mpi_allreduce(c, x, n, 1);
}

static int lks_mpi_gather(lks_comm *c, const void *x, size_t bytes, void **out, size_t *counts)
{
	struct lks_mpi_group *g = lks_mpi_group_of(c);
	int i = c->rank - g->first;

	g->send[i] = x;
	g->n[i] = bytes;
	g->out[i] = out;
	g->counts[i] = counts;
	return lks_mpi_rendezvous(c, lks_mpi_gather_work, 0);
}

static int lks_mpi_barrier(lks_comm *c)
{
	struct lks_mpi_group *g = lks_mpi_group_of(c);

	g->n[c->rank - g->first] = 0;
	return lks_mpi_rendezvous(c, lks_mpi_barrier_work, 0);
}

static void lks_mpi_abort(lks_comm *c, const char *why)
{
	fprintf(stderr, "lockstep: rank %d aborts the job: %s\n", c->rank, why);
	fflush(stderr);
	pthread_mutex_lock(&lks_mpi_serial);
	MPI_Abort(MPI_COMM_WORLD, 3);
	pthread_mutex_unlock(&lks_mpi_serial);
}

static void lks_mpi_group_free(struct lks_mpi_group *g)
{
	int finalized = 0;

	pthread_mutex_lock(&lks_mpi_serial);
	MPI_Finalized(&finalized);
	if (!finalized && g->comm != MPI_COMM_NULL)
		MPI_Comm_free(&g->comm);
	if (!finalized && g->initialised)
		MPI_Finalize();
	pthread_mutex_unlock(&lks_mpi_serial);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->wake);
	free(g->pcount);
	free(g->x);
	free(g->send);
	free(g->n);
	free(g->out);
	free(g->counts);
	free(g->scounts);
	free(g->sdispls);
	free(g->rcounts);
	free(g->rdispls);
	free(g->gcounts);
	free(g->lbytes);
	free(g->packed);
	free(g->parts);
	free(g->ends);
	free(g);
}

static void lks_mpi_close(lks_comm *c)
{
	struct lks_mpi_group *g = lks_mpi_group_of(c);
	int last;

	pthread_mutex_lock(&g->lock);
	last = --g->open == 0;
	pthread_mutex_unlock(&g->lock);
	if (last)
		lks_mpi_group_free(g);
}

static int lks_mpi_group(lks_comm *c, int nranks, int *first, int *count, lks_comm **ends);

static const lks_comm_methods lks_mpi_job_methods = {
	.version = LKS_COMM_VERSION,
	.name = "mpi",
	.allreduce_sum = lks_mpi_sum,
	.allreduce_max = lks_mpi_max,
	.gather = lks_mpi_gather,
	.barrier = lks_mpi_barrier,
	.abort = lks_mpi_abort,
	.close = lks_mpi_close,
	.group = lks_mpi_group,
};

/* the ends of a group's ranks: a group is not laid out again */
static const lks_comm_methods lks_mpi_rank_methods = {
	.version = LKS_COMM_VERSION,
	.name = "mpi",
	.allreduce_sum = lks_mpi_sum,
	.allreduce_max = lks_mpi_max,
	.gather = lks_mpi_gather,
	.barrier = lks_mpi_barrier,
	.abort = lks_mpi_abort,
	.close = lks_mpi_close,
};

/* A group of nranks ranks on comm's procs processes (this one the me-th, hosting count
   ranks from first; pcount: every process's count, taken), its ends in g->ends. On
   success the group owns comm; on failure the caller still does. */
static int lks_mpi_group_new(MPI_Comm comm, int procs, int me, int nranks, int first,
                             int count, int *pcount, const lks_comm_methods *m,
                             struct lks_mpi_group **out)
{
	struct lks_mpi_group *g = calloc(1, sizeof(*g));
	size_t k = (size_t)count, p = (size_t)procs;

	if (!g) {
		free(pcount);
		return lks_err("out of memory");
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->wake, NULL);
	g->comm = comm;
	g->procs = procs;
	g->me = me;
	g->nranks = nranks;
	g->first = first;
	g->count = g->open = count;
	g->pcount = pcount;
	if (!pcount || !(g->x = calloc(k, sizeof(*g->x))) || !(g->send = calloc(k, sizeof(*g->send)))
	    || !(g->n = calloc(k, sizeof(*g->n))) || !(g->out = calloc(k, sizeof(*g->out)))
	    || !(g->counts = calloc(k, sizeof(*g->counts)))
	    || !(g->scounts = calloc(p, sizeof(int))) || !(g->sdispls = calloc(p, sizeof(int)))
	    || !(g->rcounts = calloc(p, sizeof(int))) || !(g->rdispls = calloc(p, sizeof(int)))
	    || !(g->gcounts = calloc((size_t)nranks, sizeof(int)))
	    || !(g->lbytes = calloc(k, sizeof(int)))
	    || !(g->ends = calloc(k, sizeof(*g->ends)))) {
		g->comm = MPI_COMM_NULL;  /* the caller's still */
		lks_mpi_group_free(g);
		return lks_err("out of memory");
	}
	for (int i = 0; i < count; i++)
		g->ends[i] = (struct lks_mpi_end){ { m, first + i, nranks }, g };
	*out = g;
	return 0;
}

static int lks_mpi_group(lks_comm *c, int nranks, int *first, int *count, lks_comm **ends)
{
	struct lks_mpi_group *job = lks_mpi_group_of(c), *g = NULL;
	int procs = job->procs, procs_in = 0, me = 0, *pcount, rc;
	MPI_Comm comm = MPI_COMM_NULL;
	MPI_Request req;

	if (nranks < 1)
		return lks_err("a group of %d ranks", nranks);
	lks_comm_layout(nranks, procs, job->me, first, count);
	/* every process here before the (blocking) split, or the timeout says who is not */
	rc = LKS_MPI_START_WAIT(job, MPI_Ibarrier(job->comm, &req), req, "the layout of a group",
	                        "barrier");
	if (rc)
		return rc;
	pthread_mutex_lock(&lks_mpi_serial);
	rc = MPI_Comm_split(job->comm, *count ? 0 : MPI_UNDEFINED, job->me, &comm);
	if (rc == MPI_SUCCESS && comm != MPI_COMM_NULL)
		MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	pthread_mutex_unlock(&lks_mpi_serial);
	if (rc != MPI_SUCCESS)
		return lks_mpi_err(rc, "split of the job");
	if (!*count)
		return 0;
	if ((pcount = calloc((size_t)procs, sizeof(int))))
		for (int p = 0; p < procs; p++) {  /* the processes that host ranks, in order */
			int f, n;

			lks_comm_layout(nranks, procs, p, &f, &n);
			if (p == job->me)
				me = procs_in;
			if (n)
				pcount[procs_in++] = n;
		}
	if (lks_mpi_group_new(comm, procs_in, me, nranks, *first, *count, pcount,
	                      &lks_mpi_rank_methods, &g)) {
		pthread_mutex_lock(&lks_mpi_serial);
		MPI_Comm_free(&comm);
		pthread_mutex_unlock(&lks_mpi_serial);
		return -1;
	}
	g->timeout_s = job->group_timeout_s;
	g->process = job->process;
	memcpy(g->host, job->host, sizeof(g->host));
	for (int i = 0; i < *count; i++)
		ends[i] = &g->ends[i].base;
	return 0;
}

void lks_comm_mpi_library(char *buf, size_t n)
{
	char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0;

	if (MPI_Get_library_version(v, &len) != MPI_SUCCESS)
		snprintf(v, sizeof(v), "unknown");
	v[strcspn(v, "\r\n")] = 0;
	snprintf(buf, n, "%s", v);
}

int lks_comm_mpi(double timeout_s, lks_comm **out)
{
	struct lks_mpi_group *g = NULL;
	int up = 0, initialised = 0, rc, size, rank, *pcount;
	MPI_Comm world;

	MPI_Initialized(&up);
	if (!up) {
		int provided = MPI_THREAD_SINGLE;

		/* one thread of this process calls MPI at a time (lks_mpi_serial) */
		if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided))
		    != MPI_SUCCESS)
			return lks_mpi_err(rc, "start");
		initialised = 1;
		if (provided < MPI_THREAD_SERIALIZED) {
			MPI_Finalize();
			return lks_err("MPI offers threads at level %d only, ranks as threads need "
			               "MPI_THREAD_SERIALIZED", provided);
		}
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &world)) != MPI_SUCCESS) {
		rc = lks_mpi_err(rc, "duplicate of the world");
		if (initialised)
			MPI_Finalize();
		return rc;
	}
	/* a duplicate: lockstep's messages never meet anyone else's */
	MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
	MPI_Comm_rank(world, &rank);
	MPI_Comm_size(world, &size);
	if ((pcount = calloc((size_t)size, sizeof(int))))
		for (int p = 0; p < size; p++)
			pcount[p] = 1;
	if (lks_mpi_group_new(world, size, rank, size, rank, 1, pcount, &lks_mpi_job_methods,
	                      &g)) {
		MPI_Comm_free(&world);
		if (initialised)
			MPI_Finalize();
		return -1;
	}
	g->initialised = initialised;
	/* between runs the other processes wait for process 0 as long as it takes (its checks,
	   a run they have no rank in); it waits for them only as they end the same run */
	g->timeout_s = rank == 0 ? timeout_s : 0;
	g->group_timeout_s = timeout_s;
	g->process = rank;
	if (gethostname(g->host, sizeof(g->host)) != 0)
		snprintf(g->host, sizeof(g->host), "an unknown host");
	g->host[sizeof(g->host) - 1] = 0;
	*out = &g->ends[0].base;
	return 0;
}
