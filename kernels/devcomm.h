/*
 * devcomm.h: a communicator on devices (kernels/comm.h), built on one rank's link to a
 * device collective library (NCCL: kernels/cuda/comm_nccl.cu) and the rank's host end
 * (threads' or MPI's, which keeps gather, barrier and abort).
 *
 * The link offers asynchronous primitives only: make an id, start joining, queue a
 * collective, poll, abort, destroy. Everything that decides when to stop waiting lives
 * here, in plain C, so that it is the same for NCCL and for the stand-in link of the tests
 * (tests/standin_link.h), which fails or hangs a chosen rank on the CPU:
 *   - joining is non-blocking (NCCL: ncclCommInitRankConfig with blocking = 0) and polled;
 *   - every wait (joining, each collective) polls the link, the group's abort and a deadline
 *     (timeout_s): an abort of any rank of the process's group (the host end's, comm.h
 *     version 4) or of this end ends it with the link aborted; past the deadline the rank
 *     aborts the whole group (the host end: the other threads, or under MPI the job) and
 *     fails, saying which wait had no answer in how long. A wait spins 200 us, then sleeps
 *     10 us doubled up to 1 ms between polls (comm_mpi.c's rule).
 * A failed or hung rank therefore ends every rank's wait, in this process or another,
 * within the timeout: none spins on a collective that will never finish.
 *
 * A split (comm.h, lks_comm_split) is the link's (split) and the host end's: the sub-group's
 * end owns both, with the parent's mode and timeout, and its waits are bounded as every
 * wait (an abort of the parent's host group ends them).
 *
 * Collectives: allreduce_sum is, by mode (lks_allreduce_mode), the link's ordered sum (an
 * all-gather of every rank's x and a fold in rank order: the host's bits) or its library's
 * own algorithm; allreduce_max is always the ordered fold (NaN wins). reduce_scatter is,
 * by mode, the ordered fold of this rank's part of every rank's x (the host's bits) or the
 * library's own; all_gather is the library's (a copy: exact either way).
 */
#ifndef LKS_KERNELS_DEVCOMM_H
#define LKS_KERNELS_DEVCOMM_H

#include <stddef.h>

#include "kernels/comm.h"

#define LKS_DEVCOMM_ID_BYTES 128  /* the largest id a link may make (NCCL's is 128) */

/* What a collective of the link computes */
typedef enum lks_devcomm_op {
	/* all-reduces, x and out n floats (in place: out == x) */
	LKS_DEVCOMM_ORDERED_SUM,   /* all-gather, then the fold in rank order: the host's bits */
	LKS_DEVCOMM_ORDERED_MAX,   /* the same with the NaN-propagating max */
	LKS_DEVCOMM_LIBRARY_SUM,   /* the library's own all-reduce (within tolerance) */
	/* x n floats, out (size x n): rank r's x at r x n */
	LKS_DEVCOMM_ALL_GATHER,
	/* x (size x n), out n: the sum over ranks of their x's rows [rank n, (rank + 1) n) */
	LKS_DEVCOMM_ORDERED_RS,    /* each rank's rows of every x, folded in rank order */
	LKS_DEVCOMM_LIBRARY_RS,    /* the library's own reduce-scatter (within tolerance) */
} lks_devcomm_op;

/* One rank's link to the library: link is the implementation's. make_id, join, queue and
   leave return at once, 0 or -1 (lks_err); the work they start is finished when poll says
   so. */
typedef struct lks_devlink_methods {
	const char *name;                         /* "nccl" */
	size_t id_bytes;                          /* <= LKS_DEVCOMM_ID_BYTES */
	int (*make_id)(void *link, void *id);     /* rank 0 only: the group's id */
	/* starts joining the group of size ranks as rank, with rank 0's id */
	int (*join)(void *link, int size, int rank, const void *id);
	/* queues op on x into out (the rank's device memory; lks_devcomm_op says their sizes,
	   in n floats; an all-reduce works in place, out == x) */
	int (*queue)(void *link, lks_devcomm_op op, const float *x, size_t n, float *out);
	/* 0: everything started is done; 1: not yet; -1: failed (lks_err) */
	int (*poll)(void *link);
	/* starts leaving the group in order (NCCL: ncclCommFinalize, which waits for every
	   rank's) */
	int (*leave)(void *link);
	/* ends the link's work and its membership at once, waiting for no one */
	void (*abort)(void *link);
	/* frees link and what it holds: after leave and its poll, after abort, or unjoined */
	void (*release)(void *link);
	/* starts *sub, this rank's link to the sub-group of the ranks with its color (NCCL:
	   ncclCommSplit), as its rank key (0 .. size - 1: the ranks in the group's order) of
	   size ranks there; called by every rank of the group; polled on *sub as a join.
	   NULL: the link makes no sub-groups. */
	int (*split)(void *link, int color, int key, int size, void **sub);
} lks_devlink_methods;

/* How a rank's device communicator is made (backend.h's comm method takes these) */
typedef struct lks_devcomm_opts {
	int nlocal;             /* the ranks of this process */
	int mode;               /* lks_allreduce_mode */
	double timeout_s;       /* the longest any wait on the other ranks may take; <= 0: none */
} lks_devcomm_opts;

/* The device end of the rank whose host end is host, over link (m's): called by every
   rank of host's group at once. Where any process of the group has more ranks than its
   devices (each process says: fits = nlocal <= devices), every rank declines alike: *out
   NULL, host untouched, link released. Else the group's id goes from rank 0 to every rank
   over host, the link joins (polled as every wait), and *out owns host and link. On an
   error the group is aborted (every rank fails, none hangs) and link released. */
int lks_devcomm(lks_comm *host, const lks_devlink_methods *m, void *link, int fits,
                const lks_devcomm_opts *o, lks_comm **out);

#endif
