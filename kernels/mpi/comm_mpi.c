/*
 * comm_mpi.c: ranks as MPI processes (comm_mpi.h).
 *
 * An all-reduce is a reduce-scatter in rank order, then an all-gather: the n elements are cut
 * into size slices, rank p owns slice p; an MPI_Alltoallv hands every rank's part of slice p
 * to p, which reduces the parts in rank order, ((x_0 + x_1) + x_2) + ..., and an
 * MPI_Allgatherv gives every rank every reduced slice. MPI moves floats and never adds them.
 */
#include "kernels/mpi/comm_mpi.h"

#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lks_comm_mpi {
	lks_comm base;          /* first: an lks_comm * is one of these */
	MPI_Comm world;         /* a duplicate: lockstep's messages never meet anyone else's */
	int initialised;        /* this communicator started MPI, and finalises it */
	int *counts, *displs;   /* (size) slice lengths and offsets, in elements */
	int *rcounts, *rdispls; /* (size) for the received parts */
	float *parts;           /* (size * the largest slice) */
	size_t parts_cap;
};

static struct lks_comm_mpi *lks_mpi_of(lks_comm *c)
{
	return (struct lks_comm_mpi *)c;
}

static int lks_mpi_err(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof(msg), "error %d", rc);
	return lks_err("MPI %s: %s", what, msg);
}

/* Where slice p of n elements among size ranks starts: floor(p * n / size), without
   overflow. */
static size_t lks_slice_at(size_t n, int size, int p)
{
	size_t s = (size_t)size, q = (size_t)p;

	return n / s * q + n % s * q / s;
}

static int lks_mpi_allreduce(lks_comm *c, float *x, size_t n, int max)
{
	struct lks_comm_mpi *m = lks_mpi_of(c);
	int size = c->size, me = c->rank, rc;
	size_t mine, lo;

	if (size == 1)
		return 0;
	if (n > INT_MAX)
		return lks_err("an all-reduce of %zu elements: MPI counts are int", n);
	lo = lks_slice_at(n, size, me);
	mine = lks_slice_at(n, size, me + 1) - lo;
	if (mine * (size_t)size > m->parts_cap) {
		float *p = realloc(m->parts, mine * (size_t)size * sizeof(float));

		if (!p)
			return lks_err("out of memory");
		m->parts = p;
		m->parts_cap = mine * (size_t)size;
	}
	for (int p = 0; p < size; p++) {
		m->displs[p] = (int)lks_slice_at(n, size, p);
		m->counts[p] = (int)(lks_slice_at(n, size, p + 1) - (size_t)m->displs[p]);
		m->rcounts[p] = (int)mine;
		m->rdispls[p] = (int)(mine * (size_t)p);
	}
	rc = MPI_Alltoallv(x, m->counts, m->displs, MPI_FLOAT, m->parts, m->rcounts, m->rdispls,
	                   MPI_FLOAT, m->world);
	if (rc != MPI_SUCCESS)
		return lks_mpi_err(rc, "all-to-all of an all-reduce");
	/* the reduction of slice me, in rank order, into x's own slice */
	for (size_t i = 0; i < mine; i++) {
		float acc = m->parts[i];

		for (int r = 1; r < size; r++) {
			float y = m->parts[mine * (size_t)r + i];

			if (max)
				acc = isnan(y) || y > acc ? y : acc;
			else
				acc += y;
		}
		x[lo + i] = acc;
	}
	rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, x, m->counts, m->displs, MPI_FLOAT, m->world);
	return rc == MPI_SUCCESS ? 0 : lks_mpi_err(rc, "all-gather of an all-reduce");
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
	struct lks_comm_mpi *m = lks_mpi_of(c);
	int size = c->size, root = c->rank == LKS_COMM_ROOT, rc, n = (int)bytes;
	size_t total = 0;
	char *buf = NULL;

	if (bytes > INT_MAX)
		return lks_err("a gather of %zu bytes: MPI counts are int", bytes);
	rc = MPI_Gather(&n, 1, MPI_INT, m->counts, 1, MPI_INT, LKS_COMM_ROOT, m->world);
	if (rc != MPI_SUCCESS)
		return lks_mpi_err(rc, "gather of the sizes");
	if (root) {
		for (int r = 0; r < size; r++) {
			m->displs[r] = (int)total;
			total += (size_t)m->counts[r];
			if (total > INT_MAX)
				return lks_err("a gather of %zu bytes: MPI counts are int", total);
		}
		if (!(buf = malloc(total ? total : 1)))
			return lks_err("out of memory");
	}
	rc = MPI_Gatherv(x, n, MPI_BYTE, buf, m->counts, m->displs, MPI_BYTE, LKS_COMM_ROOT,
	                 m->world);
	if (rc != MPI_SUCCESS) {
		free(buf);
		return lks_mpi_err(rc, "gather");
	}
	if (root) {
		*out = buf;
		for (int r = 0; r < size; r++)
			counts[r] = (size_t)m->counts[r];
	}
	return 0;
}

static int lks_mpi_barrier(lks_comm *c)
{
	int rc = MPI_Barrier(lks_mpi_of(c)->world);

	return rc == MPI_SUCCESS ? 0 : lks_mpi_err(rc, "barrier");
}

static void lks_mpi_abort(lks_comm *c, const char *why)
{
	fprintf(stderr, "lockstep: rank %d aborts the job: %s\n", c->rank, why);
	MPI_Abort(lks_mpi_of(c)->world, 3);
}

static void lks_mpi_close(lks_comm *c)
{
	struct lks_comm_mpi *m = lks_mpi_of(c);
	int finalized = 0;

	MPI_Finalized(&finalized);
	if (!finalized) {
		MPI_Comm_free(&m->world);
		if (m->initialised)
			MPI_Finalize();
	}
	free(m->counts);
	free(m->displs);
	free(m->rcounts);
	free(m->rdispls);
	free(m->parts);
	free(m);
}

static const lks_comm_methods lks_comm_mpi_methods = {
	.version = LKS_COMM_VERSION,
	.name = "mpi",
	.allreduce_sum = lks_mpi_sum,
	.allreduce_max = lks_mpi_max,
	.gather = lks_mpi_gather,
	.barrier = lks_mpi_barrier,
	.abort = lks_mpi_abort,
	.close = lks_mpi_close,
};

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
	struct lks_comm_mpi *m = calloc(1, sizeof(*m));
	int up = 0, rc, size;

	if (!m)
		return lks_err("out of memory");
	MPI_Initialized(&up);
	if (!up) {
		int provided;

		/* one thread of this process calls MPI at a time */
		if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided))
		    != MPI_SUCCESS) {
			free(m);
			return lks_mpi_err(rc, "start");
		}
		m->initialised = 1;
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->world)) != MPI_SUCCESS) {
		free(m);
		return lks_mpi_err(rc, "duplicate of the world");
	}
	MPI_Comm_set_errhandler(m->world, MPI_ERRORS_RETURN);
	MPI_Comm_rank(m->world, &m->base.rank);
	MPI_Comm_size(m->world, &size);
	m->base.size = size;
	m->base.m = &lks_comm_mpi_methods;
	if (!(m->counts = calloc((size_t)size, sizeof(int)))
	    || !(m->displs = calloc((size_t)size, sizeof(int)))
	    || !(m->rcounts = calloc((size_t)size, sizeof(int)))
	    || !(m->rdispls = calloc((size_t)size, sizeof(int)))) {
		lks_mpi_close(&m->base);
		return lks_err("out of memory");
	}
	*out = &m->base;
	return 0;
}
