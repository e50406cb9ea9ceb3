/*
 * comm.h: how the ranks of a run talk to one another (DESIGN.md, Ranks and the distributed
 * engine). Ranks = processes x threads, as nccl-tests counts them; one lks_comm is one rank's
 * end of a group. Every exchange between ranks goes through these methods, and none of them
 * hands out another rank's memory: a rank passes its own buffers only, so that the same calls
 * work between threads, between MPI processes and (next) between GPUs.
 *
 * It lives beside backend.h, among the kernels, because transports are implemented where
 * their libraries are: threads here (comm_threads.c), NCCL beside the CUDA kernels, which
 * cannot include a harness header. The harness reaches it only through this header.
 *
 * Like SQLite's VFS, an implementation embeds struct lks_comm first and points it at a
 * versioned table of methods; callers use the inline wrappers below, which turn a missing
 * method into a clear error (a method added later goes at the table's end, and its wrapper
 * reads it only from tables whose version has it). Collectives are called by every rank of
 * the group, in the same order; a rank that calls abort makes every collective of every rank, waiting
 * or to come, return -1 (lks_err has why), never hang.
 */
#ifndef LKS_KERNELS_COMM_H
#define LKS_KERNELS_COMM_H

#include <stddef.h>
#include <stdlib.h>

#include "kernels/err.h"

#define LKS_COMM_VERSION 7
#define LKS_COMM_ROOT 0         /* the rank that gathers (the one that owns the database) */

typedef struct lks_comm lks_comm;

/* How a device communicator sums (a run's key allreduce): in rank order, the bits of the
   threads' and MPI's sum; or NCCL's own algorithm (within tolerance of them). */
typedef enum lks_allreduce_mode { LKS_ALLREDUCE_ORDERED, LKS_ALLREDUCE_NCCL } lks_allreduce_mode;

typedef struct lks_comm_methods {
	int version;            /* LKS_COMM_VERSION the table was written for */
	const char *name;       /* "threads", "mpi" */
	/* x (n floats) becomes the sum of every rank's x, element by element in rank order
	   ((x_0 + x_1) + x_2) + ...: the same bits whatever the transport */
	int (*allreduce_sum)(lks_comm *c, float *x, size_t n);
	/* x becomes the element-wise max of every rank's x in rank order; a NaN wins (the
	   last one in rank order), as delayed scaling's amax must see it */
	int (*allreduce_max)(lks_comm *c, float *x, size_t n);
	/* Every rank's bytes to LKS_COMM_ROOT: there *out is a malloc'd block of them in rank
	   order (free() it) and counts[r] the bytes of rank r (counts: size entries); elsewhere
	   out and counts are not touched (may be NULL). */
	int (*gather)(lks_comm *c, const void *x, size_t bytes, void **out, size_t *counts);
	int (*barrier)(lks_comm *c);
	/* Ends the group's collectives with an error (why: the message they return); any rank
	   may call it, any number of times, while others wait in a collective. */
	void (*abort)(lks_comm *c, const char *why);
	/* Releases this rank's end; the last rank to close releases the group. */
	void (*close)(lks_comm *c);
	/* -- version 2 -- */
	/* The ranks of one run on the processes of a job, c being this process's end of the
	   job (one end per process, rank = the process's): nranks ranks in contiguous blocks
	   as lks_comm_layout lays them out, this process's as threads. *first and *count are
	   its ranks, ends[0..*count) their ends (ends: room for nranks), each for one thread;
	   rank and size of an end are the group's (first + i, nranks). A process with no
	   rank gets *count = 0 and takes no part in the group's collectives. Called by every
	   process of the job, in the same order; the ends are closed as any others. */
	int (*group)(lks_comm *c, int nranks, int *first, int *count, lks_comm **ends);
	/* -- version 3 -- */
	/* 1: the all-reduces take device memory (the NCCL communicator's), so the caller
	   passes its backend's buffers as they are; missing or 0: host memory */
	int (*device_memory)(lks_comm *c);
	/* -- version 4 -- */
	/* 1 once abort was called on any end of the group in this process (a device end's
	   waits poll it: the abort of a sibling thread ends them); missing or 0: not seen */
	int (*aborted)(lks_comm *c);
	/* -- version 5 -- */
	/* A transport's own all-gather and reduce-scatter (lks_comm_all_gather,
	   lks_comm_reduce_scatter say what they do); missing: comm_group.c's, made of the
	   all-reduce sum, with the bits of an ordered one. */
	int (*all_gather)(lks_comm *c, const float *x, size_t n, float *out);
	int (*reduce_scatter)(lks_comm *c, const float *x, size_t n, float *out);
	/* -- version 6 -- */
	/* A transport's own sub-groups (lks_comm_split says what they are); missing:
	   comm_group.c's, made of the parent's collectives (host memory only). */
	int (*split)(lks_comm *c, int groups, int color, lks_comm **out);
	/* -- version 7 -- */
	/* 1 once the group was aborted in this process, with the first abort's why in buf (n
	   bytes, terminated); 0: not aborted, or the transport keeps no why (MPI's abort ends
	   the job). A rank whose wait the abort ended says the cause with it. */
	int (*why)(lks_comm *c, char *buf, size_t n);
} lks_comm_methods;

struct lks_comm {
	const lks_comm_methods *m;
	int rank, size;
};

static inline int lks_comm_allreduce_sum(lks_comm *c, float *x, size_t n)
{
	return c->m->allreduce_sum ? c->m->allreduce_sum(c, x, n)
	     : lks_err("communicator '%s' has no all-reduce sum", c->m->name);
}

static inline int lks_comm_allreduce_max(lks_comm *c, float *x, size_t n)
{
	return c->m->allreduce_max ? c->m->allreduce_max(c, x, n)
	     : lks_err("communicator '%s' has no all-reduce max", c->m->name);
}

static inline int lks_comm_gather(lks_comm *c, const void *x, size_t bytes, void **out,
                                  size_t *counts)
{
	return c->m->gather ? c->m->gather(c, x, bytes, out, counts)
	     : lks_err("communicator '%s' has no gather", c->m->name);
}

static inline int lks_comm_barrier(lks_comm *c)
{
	return c->m->barrier ? c->m->barrier(c)
	     : lks_err("communicator '%s' has no barrier", c->m->name);
}

static inline void lks_comm_abort(lks_comm *c, const char *why)
{
	if (c->m->abort)
		c->m->abort(c, why);
}

static inline void lks_comm_close(lks_comm *c)
{
	if (c && c->m->close)
		c->m->close(c);
}

static inline int lks_comm_group(lks_comm *c, int nranks, int *first, int *count,
                                 lks_comm **ends)
{
	return c->m->version >= 2 && c->m->group ? c->m->group(c, nranks, first, count, ends)
	     : lks_err("communicator '%s' cannot lay out ranks over processes", c->m->name);
}

static inline int lks_comm_device_memory(lks_comm *c)
{
	return c->m->version >= 3 && c->m->device_memory && c->m->device_memory(c);
}

static inline int lks_comm_aborted(lks_comm *c)
{
	return c->m->version >= 4 && c->m->aborted && c->m->aborted(c);
}

static inline int lks_comm_why(lks_comm *c, char *buf, size_t n)
{
	return c->m->version >= 7 && c->m->why && c->m->why(c, buf, n);
}

/* n bytes of rank 0's buf to every rank of the group, through an all-reduce sum and no
   method of its own: each byte travels as a float, rank 0's value and every other rank's
   0. Integers 0..255 are exact in fp32 and x + 0 is x, so the sum is rank 0's bytes on
   every rank, whatever the transport (the NCCL unique id goes to every rank this way). */
static inline int lks_comm_bcast_bytes(lks_comm *c, unsigned char *buf, size_t n)
{
	float *f = (float *)calloc(n ? n : 1, sizeof(float));
	int rc;

	if (!f)
		return lks_err("out of memory");
	for (size_t i = 0; i < n && c->rank == 0; i++)
		f[i] = (float)buf[i];
	if ((rc = lks_comm_allreduce_sum(c, f, n)) == 0)
		for (size_t i = 0; i < n; i++) {
			if (!(f[i] >= 0.0f && f[i] <= 255.0f && f[i] == (float)(int)f[i])) {
				rc = lks_err("communicator '%s': byte %zu arrived as %g", c->m->name, i,
				             (double)f[i]);
				break;
			}
			buf[i] = (unsigned char)f[i];
		}
	free(f);
	return rc;
}

/* Every rank's n bytes (mine) to every rank: all (size x n bytes) holds rank r's at r x n.
   An all-reduce sum as lks_comm_bcast_bytes's, each rank's bytes in its own row and 0
   elsewhere: exact over any transport. Collective, for small records (the floats are 4 x
   size x n bytes). */
static inline int lks_comm_allgather_bytes(lks_comm *c, const void *mine, size_t n,
                                           unsigned char *all)
{
	size_t total = (size_t)c->size * n;
	float *f = (float *)calloc(total ? total : 1, sizeof(float));
	int rc;

	if (!f)
		return lks_err("out of memory");
	for (size_t i = 0; i < n; i++)
		f[(size_t)c->rank * n + i] = (float)((const unsigned char *)mine)[i];
	if ((rc = lks_comm_allreduce_sum(c, f, total)) == 0)
		for (size_t i = 0; i < total; i++)
			all[i] = (unsigned char)f[i];
	free(f);
	return rc;
}

/* Where nranks ranks go on procs processes: process p hosts the block [first, first +
   count), first = ceil(p * nranks / procs). Rank 0 is on process 0 (the one that owns the
   database), a process hosts ceil or floor of nranks / procs ranks, and when nranks < procs
   some host none. */
static inline void lks_comm_layout(int nranks, int procs, int p, int *first, int *count)
{
	long long lo = ((long long)p * nranks + procs - 1) / procs;
	long long hi = ((long long)(p + 1) * nranks + procs - 1) / procs;

	*first = (int)lo;
	*count = (int)(hi - lo);
}

/* ---- collectives made of the all-reduces, and sub-groups (comm_group.c) ---- */

/* out (size x n floats) = every rank's x (n floats), rank r's at r x n. */
int lks_comm_all_gather(lks_comm *c, const float *x, size_t n, float *out);
/* out (n floats) = the rows r x n .. (r + 1) x n - 1 of the rank-ordered sum of every
   rank's x (size x n floats), r this rank: each element ((x_0 + x_1) + x_2) + ... */
int lks_comm_reduce_scatter(lks_comm *c, const float *x, size_t n, float *out);
/* *out: this rank's end of the sub-group of c's ranks whose color is its own (0 <= color <
   groups, every group of size / groups ranks), ranked in c's rank order: a mesh
   dimension's group. Called by every rank of c together. A transport with sub-groups of
   its own makes them (the method split: a device communicator's, on the same memory, its
   collectives the group's alone). Else its all-reduces (sum, max) are c's, made over a
   (groups, n) buffer where each group writes its row and the others pad it with what adds
   nothing (-0.0f; -inf for the max), so they are the group's, in its rank order, bit for
   bit; hence every group of a split calls each collective together, as a mesh's ranks do;
   host memory only (another device communicator is refused). Closing *out leaves c open;
   its abort aborts c. It has no gather (c's is the job's). */
int lks_comm_split(lks_comm *c, int groups, int color, lks_comm **out);

/* A group of size ranks as threads of this process: out[r] is rank r's end, to be used by
   one thread each (collectives block until every rank has called them). */
int lks_comm_threads(int size, lks_comm **out);

#endif
