/*
 * comm_nccl.cu: the NCCL communicator of one rank (see comm_nccl.h).
 *
 * The ordered all-reduce gathers every rank's chunk into a (W, chunk) device scratch
 * (ncclAllGather puts rank r's at row r) and folds each element over the rows in rank
 * order with element/reduce.h's lks_fold_ranks, the lines comm_threads.c runs: one thread
 * per element, no atomics, so ((x_0 + x_1) + x_2) + ... is the same bits as on the host
 * (-fmad=false: an add alone never contracts anyway). NCCL's own all-reduce (mode nccl) is
 * the only non-determinism here; NCCL_ALGO and NCCL_PROTO fix it and are recorded.
 *
 * Every collective is queued on the rank's backend stream, after the kernels that made its
 * buffer, and waited for by polling the stream and NCCL's asynchronous error, so that an
 * abort of this end (its abort method, from another thread) ends the wait with
 * ncclCommAbort instead of a hang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

extern "C" {
#include "kernels/cuda/comm_nccl.h"
#include "kernels/element/reduce.h"
#include "kernels/err.h"
}

/* elements of one ordered round: the scratch holds W of these chunks (W x 64 MiB at most) */
#define LKS_NCCL_CHUNK ((size_t)1 << 24)

struct lks_comm_nccl_end {
	lks_comm base;          /* first: an lks_comm * is one of these */
	lks_comm *host;         /* the rank's host end: gather, barrier, abort */
	ncclComm_t nc;
	int device, mode;
	cudaStream_t stream;    /* the rank's backend stream */
	float *scratch;         /* (W, LKS_NCCL_CHUNK at most) the ordered all-gather's rows */
	size_t scratch_n;       /* floats in scratch */
	volatile int aborted;
};

static struct lks_comm_nccl_end *lks_nccl_of(lks_comm *c)
{
	return (struct lks_comm_nccl_end *)c;
}

static int lks_nccl_check(ncclResult_t rc, const char *what)
{
	return rc == ncclSuccess ? 0 : lks_err("nccl: %s: %s", what, ncclGetErrorString(rc));
}

static int lks_nccl_cuda(cudaError_t rc, const char *what)
{
	return rc == cudaSuccess ? 0 : lks_err("nccl: %s: %s", what, cudaGetErrorString(rc));
}

/* x[i] (n) = the fold in rank order of the W rows of all (W, n) */
__global__ static void lks_nccl_fold_kernel(const float *all, int W, size_t n, float *x,
                                            int max)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = lks_fold_ranks(all, W, n, i, max);
}

/* Waits for the stream: NCCL's asynchronous error or an abort of this end ends the wait */
static int lks_nccl_wait(struct lks_comm_nccl_end *e, const char *what)
{
	for (;;) {
		cudaError_t q = cudaStreamQuery(e->stream);
		ncclResult_t async = ncclSuccess;

		if (q == cudaSuccess)
			return 0;
		if (q != cudaErrorNotReady)
			return lks_nccl_cuda(q, what);
		if (lks_nccl_check(ncclCommGetAsyncError(e->nc, &async), what)
		    || lks_nccl_check(async, what))
			return -1;
		if (e->aborted) {
			ncclCommAbort(e->nc);
			e->nc = NULL;
			return lks_err("nccl: %s: the group was aborted", what);
		}
	}
}

/* The all-reduce in rank order, chunk by chunk: all-gather, then fold (sum, or max) */
static int lks_nccl_ordered(struct lks_comm_nccl_end *e, float *x, size_t n, int max)
{
	int W = e->base.size;

	for (size_t i0 = 0; i0 < n; i0 += LKS_NCCL_CHUNK) {
		size_t m = n - i0 < LKS_NCCL_CHUNK ? n - i0 : LKS_NCCL_CHUNK;
		unsigned blocks = (unsigned)((m + 255) / 256);

		if ((size_t)W * m > e->scratch_n) {
			cudaFree(e->scratch);
			e->scratch = NULL;
			e->scratch_n = 0;
			if (lks_nccl_cuda(cudaMalloc(&e->scratch, (size_t)W * m * sizeof(float)),
			                  "all-gather scratch"))
				return -1;
			e->scratch_n = (size_t)W * m;
		}
		if (lks_nccl_check(ncclAllGather(x + i0, e->scratch, m, ncclFloat, e->nc, e->stream),
		                   "all-gather"))
			return -1;
		lks_nccl_fold_kernel<<<blocks, 256, 0, e->stream>>>(e->scratch, W, m, x + i0, max);
		if (lks_nccl_cuda(cudaGetLastError(), "fold kernel")
		    || lks_nccl_wait(e, max ? "all-reduce max" : "all-reduce sum"))
			return -1;
	}
	return 0;
}

static int lks_nccl_sum(lks_comm *c, float *x, size_t n)
{
	struct lks_comm_nccl_end *e = lks_nccl_of(c);

	if (!e->nc)
		return lks_err("nccl: the communicator was aborted");
	cudaSetDevice(e->device);
	if (e->mode != LKS_ALLREDUCE_NCCL)
		return lks_nccl_ordered(e, x, n, 0);
	if (lks_nccl_check(ncclAllReduce(x, x, n, ncclFloat, ncclSum, e->nc, e->stream),
	                   "all-reduce"))
		return -1;
	return lks_nccl_wait(e, "all-reduce");
}

static int lks_nccl_max(lks_comm *c, float *x, size_t n)
{
	struct lks_comm_nccl_end *e = lks_nccl_of(c);

	if (!e->nc)
		return lks_err("nccl: the communicator was aborted");
	cudaSetDevice(e->device);
	return lks_nccl_ordered(e, x, n, 1);
}

static int lks_nccl_gather(lks_comm *c, const void *x, size_t bytes, void **out,
                           size_t *counts)
{
	return lks_comm_gather(lks_nccl_of(c)->host, x, bytes, out, counts);
}

static int lks_nccl_barrier(lks_comm *c)
{
	return lks_comm_barrier(lks_nccl_of(c)->host);
}

static void lks_nccl_abort(lks_comm *c, const char *why)
{
	struct lks_comm_nccl_end *e = lks_nccl_of(c);

	e->aborted = 1;  /* this end's wait, if any, aborts its NCCL communicator */
	lks_comm_abort(e->host, why);
}

static int lks_nccl_device_memory(lks_comm *c)
{
	(void)c;
	return 1;
}

static void lks_nccl_close(lks_comm *c)
{
	struct lks_comm_nccl_end *e = lks_nccl_of(c);

	cudaSetDevice(e->device);
	/* destroy waits for every rank's (the caller closes the ends of its ranks at once);
	   after an abort a rank may be gone, so abort, which does not wait */
	if (e->nc && e->aborted)
		ncclCommAbort(e->nc);
	else if (e->nc)
		ncclCommDestroy(e->nc);
	cudaFree(e->scratch);
	lks_comm_close(e->host);
	free(e);
}

static const lks_comm_methods lks_comm_nccl_methods = {
	/* .version = */ LKS_COMM_VERSION,
	/* .name = */ "nccl",
	/* .allreduce_sum = */ lks_nccl_sum,
	/* .allreduce_max = */ lks_nccl_max,
	/* .gather = */ lks_nccl_gather,
	/* .barrier = */ lks_nccl_barrier,
	/* .abort = */ lks_nccl_abort,
	/* .close = */ lks_nccl_close,
	/* .group = */ NULL,
	/* .device_memory = */ lks_nccl_device_memory,
};

/* Whether every rank of the group may have NCCL: no process with more ranks than GPUs.
   The host's all-reduce max of each rank's "cannot" (0 or 1) makes every rank decide
   alike. -1 on the host's error. */
static int lks_nccl_fits(lks_comm *host, int nlocal, int devices)
{
	float cannot = nlocal > devices ? 1.0f : 0.0f;

	if (lks_comm_allreduce_max(host, &cannot, 1))
		return -1;
	return cannot == 0.0f;
}

extern "C" int lks_comm_nccl(lks_comm *host, int device, void *stream, int nlocal, int devices,
                             int mode, lks_comm **out)
{
	struct lks_comm_nccl_end *e;
	ncclUniqueId id;
	int fits;

	*out = NULL;
	if ((fits = lks_nccl_fits(host, nlocal, devices)) <= 0)
		return fits;
	memset(&id, 0, sizeof(id));
	if (host->rank == 0 && lks_nccl_check(ncclGetUniqueId(&id), "cannot make the unique id")) {
		lks_comm_abort(host, lks_errmsg());
		return -1;
	}
	/* rank 0's 128 id bytes to every rank, as floats in an all-reduce sum (exact in fp32) */
	if (lks_comm_bcast_bytes(host, (unsigned char *)&id, sizeof(id)))
		return -1;
	if (!(e = (struct lks_comm_nccl_end *)calloc(1, sizeof(*e))))
		return lks_err("out of memory");
	e->base = (lks_comm){ &lks_comm_nccl_methods, host->rank, host->size };
	e->host = host;
	e->device = device;
	e->mode = mode;
	e->stream = (cudaStream_t)stream;
	if (lks_nccl_cuda(cudaSetDevice(device), "cannot use the device")
	    || lks_nccl_check(ncclCommInitRank(&e->nc, host->size, id, host->rank),
	                      "cannot join the group")) {
		lks_comm_abort(host, lks_errmsg());
		free(e);
		return -1;
	}
	*out = &e->base;
	return 0;
}

extern "C" int lks_nccl_version(void)
{
	int v = 0;

	return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}
