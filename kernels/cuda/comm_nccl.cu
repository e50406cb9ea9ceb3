/*
 * comm_nccl.cu: one rank's link to NCCL (see comm_nccl.h), the primitives of a device
 * communicator (kernels/devcomm.h), which decides when to stop waiting.
 *
 * The communicator is non-blocking (ncclCommInitRankConfig, blocking = 0): joining,
 * collectives and leaving return at once, possibly ncclInProgress before NCCL has put
 * anything on the stream, and poll drives them on: while NCCL's asynchronous state is
 * ncclInProgress the call is not yet queued; once it is ncclSuccess the next part is
 * queued (the fold after an all-gather, the next chunk); then the stream is queried. So
 * no call here blocks on another rank, and an abort (ncclCommAbort) frees a rank from a
 * peer that failed or hangs, at init as in any collective.
 *
 * The ordered all-reduce gathers every rank's chunk into a (W, chunk) device scratch
 * (ncclAllGather puts rank r's at row r) and folds each element over the rows in rank
 * order with element/reduce.h's lks_fold_ranks, the lines comm_threads.c runs: one thread
 * per element, no atomics, so ((x_0 + x_1) + x_2) + ... is the same bits as on the host
 * (-fmad=false: an add alone never contracts anyway). NCCL's own all-reduce (mode nccl) is
 * the only non-determinism here; NCCL_ALGO and NCCL_PROTO fix it and are recorded. The
 * ordered reduce-scatter is the same fold over this rank's part only: each rank sends
 * every peer p its chunk of p's part and receives its own part's chunk from every peer
 * (ncclSend / ncclRecv in a group: an all-to-all) into the (W, chunk) rows, then folds.
 * An all-gather is NCCL's (a copy: exact). Every collective is queued on the rank's
 * backend stream, after the kernels that made its buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

extern "C" {
#include "kernels/cuda/comm_nccl.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/devcomm.h"
#include "kernels/element/reduce.h"
#include "kernels/err.h"
}

/* elements of one ordered round: the scratch holds W of these chunks (W x 64 MiB at most) */
#define LKS_NCCL_CHUNK ((size_t)1 << 24)

struct lks_nccl_link {
	ncclComm_t nc;
	int device;
	cudaStream_t stream;    /* the rank's backend stream */
	float *scratch;         /* (W, LKS_NCCL_CHUNK at most) the ordered all-gather's rows */
	size_t scratch_n;       /* floats in scratch */
	int W;
	int pending;            /* a call NCCL may still be queuing (ncclInProgress) */
	int folds;              /* after the pending exchange: the fold of [i0 - m, i0) */
	/* the collective under way: op on x into out (n: lks_devcomm_op), queued up to i0,
	   the last chunk m long */
	lks_devcomm_op op;
	const float *x;
	float *out;
	size_t n, i0, m;
};

static int lks_nccl_check(ncclResult_t rc, const char *what)
{
	return rc == ncclSuccess || rc == ncclInProgress ? 0
	     : lks_err("nccl: %s: %s", what, ncclGetErrorString(rc));
}

/* x[i] (n) = the fold in rank order of the W rows of all (W, n) */
__global__ static void lks_nccl_fold_kernel(const float *all, int W, size_t n, float *x,
                                            int max)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = lks_fold_ranks(all, W, n, i, max);
}

/* NCCL's asynchronous state: 1 while a call is still being queued, 0 done, -1 failed */
static int lks_nccl_state(struct lks_nccl_link *l, const char *what)
{
	ncclResult_t st = ncclSuccess;

	if (lks_nccl_check(ncclCommGetAsyncError(l->nc, &st), what))
		return -1;
	if (st == ncclInProgress)
		return 1;
	return lks_nccl_check(st, what);
}

/* whether op is one of the ordered ones: exchanges of chunks, each folded in rank order */
static int lks_nccl_ordered(lks_devcomm_op op)
{
	return op == LKS_DEVCOMM_ORDERED_SUM || op == LKS_DEVCOMM_ORDERED_MAX
	    || op == LKS_DEVCOMM_ORDERED_RS;
}

/* The ordered reduce-scatter's exchange of [i0, i0 + m): rank p's chunk of each rank's
   x to p, rows in rank order in the scratch (an all-to-all in one group). */
static ncclResult_t lks_nccl_exchange(struct lks_nccl_link *l)
{
	ncclResult_t rc = ncclGroupStart();

	for (int p = 0; p < l->W && (rc == ncclSuccess || rc == ncclInProgress); p++) {
		rc = ncclSend(l->x + (size_t)p * l->n + l->i0, l->m, ncclFloat, p, l->nc, l->stream);
		if (rc == ncclSuccess || rc == ncclInProgress)
			rc = ncclRecv(l->scratch + (size_t)p * l->m, l->m, ncclFloat, p, l->nc,
			              l->stream);
	}
	/* ends the group whatever happened in it: NCCL's group must be closed */
	ncclResult_t end = ncclGroupEnd();

	return rc == ncclSuccess || rc == ncclInProgress ? end : rc;
}

/* The one call of a library collective on the whole of x (NCCL's own algorithm, or its
   all-gather, a copy) */
static ncclResult_t lks_nccl_library(struct lks_nccl_link *l)
{
	switch (l->op) {
	case LKS_DEVCOMM_LIBRARY_SUM:
		return ncclAllReduce(l->x, l->out, l->n, ncclFloat, ncclSum, l->nc, l->stream);
	case LKS_DEVCOMM_LIBRARY_RS:
		return ncclReduceScatter(l->x, l->out, l->n, ncclFloat, ncclSum, l->nc, l->stream);
	default:
		return ncclAllGather(l->x, l->out, l->n, ncclFloat, l->nc, l->stream);
	}
}

/* Queues what the collective under way has left, as far as NCCL lets: 0 all of it, 1
   NCCL is still queuing a call, -1 failed. */
static int lks_nccl_advance(struct lks_nccl_link *l)
{
	static const char *const names[] = { "all-reduce", "all-reduce max", "all-reduce",
	                                     "all-gather", "reduce-scatter", "reduce-scatter" };
	const char *what = names[l->op];

	for (;;) {
		int st;

		if (l->pending) {
			if ((st = lks_nccl_state(l, what)) != 0)
				return st;
			l->pending = 0;
			if (l->folds) {
				unsigned blocks = (unsigned)((l->m + 255) / 256);

				lks_nccl_fold_kernel<<<blocks, 256, 0, l->stream>>>(
					l->scratch, l->W, l->m, l->out + l->i0 - l->m,
					l->op == LKS_DEVCOMM_ORDERED_MAX);
				if (LKS_CUDA(cudaGetLastError(), "nccl: fold kernel"))
					return -1;
			}
		}
		if (l->i0 >= l->n)
			return 0;
		if (!lks_nccl_ordered(l->op)) {
			l->m = l->n;
			l->folds = 0;
			if (lks_nccl_check(lks_nccl_library(l), what))
				return -1;
		} else {
			l->m = l->n - l->i0 < LKS_NCCL_CHUNK ? l->n - l->i0 : LKS_NCCL_CHUNK;
			l->folds = 1;
			if (lks_nccl_check(l->op == LKS_DEVCOMM_ORDERED_RS ? lks_nccl_exchange(l)
			                   : ncclAllGather(l->x + l->i0, l->scratch, l->m, ncclFloat,
			                                   l->nc, l->stream), what))
				return -1;
		}
		l->i0 += l->m;
		l->pending = 1;
	}
}

static int lks_nccl_make_id(void *link, void *id)
{
	(void)link;
	return lks_nccl_check(ncclGetUniqueId((ncclUniqueId *)id), "cannot make the unique id");
}

static int lks_nccl_join(void *link, int size, int rank, const void *id)
{
	struct lks_nccl_link *l = (struct lks_nccl_link *)link;
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId uid;

	memcpy(&uid, id, sizeof(uid));
	config.blocking = 0;
	l->W = size;
	if (LKS_CUDA(cudaSetDevice(l->device), "nccl: cannot use the device")
	    || lks_nccl_check(ncclCommInitRankConfig(&l->nc, size, uid, rank, &config),
	                      "cannot join the group"))
		return -1;
	l->pending = 1;
	l->folds = 0;
	l->n = l->i0 = 0;
	return 0;
}

static int lks_nccl_queue(void *link, lks_devcomm_op op, const float *x, size_t n,
                          float *out)
{
	struct lks_nccl_link *l = (struct lks_nccl_link *)link;
	size_t need = (size_t)l->W * (n < LKS_NCCL_CHUNK ? n : LKS_NCCL_CHUNK);

	cudaSetDevice(l->device);
	/* the last collective is done (the wait saw it), so the scratch is free to go */
	if (lks_nccl_ordered(op) && need > l->scratch_n) {
		cudaFree(l->scratch);
		l->scratch = NULL;
		l->scratch_n = 0;
		if (LKS_CUDA(cudaMalloc(&l->scratch, need * sizeof(float)), "nccl: all-gather scratch"))
			return -1;
		l->scratch_n = need;
	}
	l->op = op;
	l->x = x;
	l->out = out;
	l->n = n;
	l->i0 = 0;
	l->pending = 0;
	return lks_nccl_advance(l) < 0 ? -1 : 0;
}

static int lks_nccl_poll(void *link)
{
	struct lks_nccl_link *l = (struct lks_nccl_link *)link;
	cudaError_t q;
	int st;

	cudaSetDevice(l->device);
	if ((st = lks_nccl_advance(l)) != 0)
		return st;
	if ((q = cudaStreamQuery(l->stream)) == cudaSuccess)
		return 0;
	if (q != cudaErrorNotReady)
		return LKS_CUDA(q, "nccl: the stream");
	/* NCCL's own error (a peer gone, a network error) while its kernels wait */
	return (st = lks_nccl_state(l, "collective")) != 0 ? st : 1;
}

static int lks_nccl_leave(void *link)
{
	struct lks_nccl_link *l = (struct lks_nccl_link *)link;

	cudaSetDevice(l->device);
	l->n = l->i0 = 0;
	l->folds = 0;
	if (lks_nccl_check(ncclCommFinalize(l->nc), "cannot leave the group"))
		return -1;
	l->pending = 1;
	return 0;
}

static void lks_nccl_abort(void *link)
{
	struct lks_nccl_link *l = (struct lks_nccl_link *)link;

	cudaSetDevice(l->device);
	if (l->nc)
		ncclCommAbort(l->nc);  /* waits for no peer */
	l->nc = NULL;
}

static void lks_nccl_release(void *link)
{
	struct lks_nccl_link *l = (struct lks_nccl_link *)link;

	cudaSetDevice(l->device);
	if (l->nc)  /* after leave: finalized, so destroy waits for no one */
		ncclCommDestroy(l->nc);
	cudaFree(l->scratch);
	free(l);
}

/* ncclCommSplit of l's communicator, non-blocking as l's: the sub-group's link on the same
   device and stream, polled as a join (its pending state is NCCL's asynchronous one) */
static int lks_nccl_split(void *link, int color, int key, int size, void **sub)
{
	struct lks_nccl_link *l = (struct lks_nccl_link *)link;
	struct lks_nccl_link *s = (struct lks_nccl_link *)calloc(1, sizeof(*s));
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;

	*sub = NULL;
	if (!s)
		return lks_err("out of memory");
	s->device = l->device;
	s->stream = l->stream;
	s->W = size;
	config.blocking = 0;
	cudaSetDevice(l->device);
	if (lks_nccl_check(ncclCommSplit(l->nc, color, key, &s->nc, &config),
	                   "cannot split the group")) {
		free(s);
		return -1;
	}
	s->pending = 1;
	*sub = s;
	return 0;
}

static const lks_devlink_methods lks_nccl_link_methods = {
	/* .name = */ "nccl",
	/* .id_bytes = */ sizeof(ncclUniqueId),
	/* .make_id = */ lks_nccl_make_id,
	/* .join = */ lks_nccl_join,
	/* .queue = */ lks_nccl_queue,
	/* .poll = */ lks_nccl_poll,
	/* .leave = */ lks_nccl_leave,
	/* .abort = */ lks_nccl_abort,
	/* .release = */ lks_nccl_release,
	/* .split = */ lks_nccl_split,
};

extern "C" int lks_comm_nccl(lks_comm *host, int device, void *stream, int devices,
                             const lks_devcomm_opts *o, lks_comm **out)
{
	struct lks_nccl_link *l = (struct lks_nccl_link *)calloc(1, sizeof(*l));

	*out = NULL;
	if (!l) {
		lks_err("out of memory");
		lks_comm_abort(host, lks_errmsg());
		return -1;
	}
	l->device = device;
	l->stream = (cudaStream_t)stream;
	/* several ranks of a process on one GPU are not NCCL's: every rank declines alike */
	return lks_devcomm(host, &lks_nccl_link_methods, l, o->nlocal <= devices, o, out);
}

extern "C" int lks_nccl_version(void)
{
	int v = 0;

	return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}
