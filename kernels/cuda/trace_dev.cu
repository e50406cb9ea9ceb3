/*
 * trace_dev.cu: lockstep-trace's device tensors (issue 33; kernels/trace/lockstep_trace.h,
 * lks_trace_tensor_device), measured on their GPU by the cuda backend's own measuring
 * (devstats.cu), so that a real run's tensor and lockstep's model's are measured the same
 * way, and only a record of 64 bytes comes home.
 *
 * A context is one trace's, on one GPU (the device of its first tensor), with a stream of
 * its own. A tensor is measured in place, on that stream, after the work the caller's
 * stream has queued (an event), and the caller's stream then waits for the measuring (an
 * event the other way), so that nothing the caller queues later (a write of the tensor, its
 * memory reused) can overtake it, and the host waits for nothing. The records stay on the
 * device, one slot a tensor, until lks_cuda_trace_collect brings the step's home in one
 * copy. The blocks' sums share one scratch: the stream runs one tensor's kernels after the
 * other's.
 */
#include <cuda_runtime.h>
#include <new>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/trace_dev.h"

extern "C" {
#include "kernels/err.h"
}

struct lks_cuda_trace {
	int device;
	cudaStream_t st;
	cudaEvent_t ready, done;   /* the caller's work queued; the measuring queued */
	void *sums;                /* devstats' scratch (a record, then the blocks' sums) of the
	                              largest tensor so far */
	size_t sums_cap;
	unsigned char *recs;       /* the records of the tensors queued since the last collect */
	size_t nrec, cap;
};

static int lks_trace_why(char *why, size_t wsize, const char *what)
{
	snprintf(why, wsize, "%s: %s", what, lks_errmsg());
	return -1;
}

/* Runs with t's device current, restoring the caller's. */
struct lks_dev_guard {
	int prev;
};

static int lks_dev_enter(struct lks_dev_guard *g, int device)
{
	if (LKS_CUDA(cudaGetDevice(&g->prev), "the current device"))
		return -1;
	return g->prev == device ? 0 : LKS_CUDA(cudaSetDevice(device), "the tensor's device");
}

static void lks_dev_leave(const struct lks_dev_guard *g)
{
	cudaSetDevice(g->prev);
}

static void lks_trace_free(struct lks_cuda_trace *t)
{
	if (t->st)
		cudaStreamSynchronize(t->st);
	cudaFree(t->sums);
	cudaFree(t->recs);
	if (t->ready)
		cudaEventDestroy(t->ready);
	if (t->done)
		cudaEventDestroy(t->done);
	if (t->st)
		cudaStreamDestroy(t->st);
	delete t;
}

/* The device of x, which must be device (or managed) memory. */
static int lks_trace_device_of(const void *x, int *device)
{
	cudaPointerAttributes a;

	if (LKS_CUDA(cudaPointerGetAttributes(&a, x), "the tensor's pointer")) {
		cudaGetLastError();  /* not sticky: cleared, or the next launch's check would say it */
		return -1;
	}
	if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
		return lks_err("the tensor's pointer is not device memory (memory type %d): trace a "
		               "host tensor with lks_trace_tensor", (int)a.type);
	*device = a.device;
	return 0;
}

static int lks_trace_open_on(struct lks_cuda_trace *t, int device)
{
	t->device = device;
	return LKS_CUDA(cudaStreamCreateWithFlags(&t->st, cudaStreamNonBlocking), "a stream")
	       || LKS_CUDA(cudaEventCreateWithFlags(&t->ready, cudaEventDisableTiming), "an event")
	       || LKS_CUDA(cudaEventCreateWithFlags(&t->done, cudaEventDisableTiming), "an event")
	       ? -1 : 0;
}

/* Room for one more record and for n floats' sums; growing waits for the stream, which
   may still read what is replaced. */
static int lks_trace_room(struct lks_cuda_trace *t, size_t n)
{
	if (lks_cuda_grow(t->st, lks_cuda_devstat_scratch(n), &t->sums, &t->sums_cap,
	                  "the blocks' sums"))
		return -1;
	if (t->nrec == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		unsigned char *p;

		if (LKS_CUDA(cudaMalloc(&p, cap * LKS_CUDA_DEVSTAT_REC), "the records"))
			return -1;
		if (t->nrec && (LKS_CUDA(cudaMemcpyAsync(p, t->recs, t->nrec * LKS_CUDA_DEVSTAT_REC,
		                                         cudaMemcpyDeviceToDevice, t->st), "the records")
		                || LKS_CUDA(cudaStreamSynchronize(t->st), "the trace's stream"))) {
			cudaFree(p);
			return -1;
		}
		cudaFree(t->recs);
		t->recs = p;
		t->cap = cap;
	}
	return 0;
}

/* The measuring of n floats at x, after stream's work, into record slot t->nrec. The
   record and the blocks' sums are one scratch to devstats: the record is copied out of it
   into its slot (64 bytes, on the stream) before the next tensor's kernels reuse it. */
static int lks_trace_queue(struct lks_cuda_trace *t, const float *x, size_t n,
                           cudaStream_t caller)
{
	unsigned char *rec = t->recs + t->nrec * LKS_CUDA_DEVSTAT_REC;

	if (LKS_CUDA(cudaEventRecord(t->ready, caller), "the caller's stream")
	    || LKS_CUDA(cudaStreamWaitEvent(t->st, t->ready, 0), "the trace's stream")
	    || lks_cuda_devstat_queue(t->st, x, n, t->sums)
	    || LKS_CUDA(cudaMemcpyAsync(rec, t->sums, LKS_CUDA_DEVSTAT_REC, cudaMemcpyDeviceToDevice,
	                                t->st), "the record")
	    || LKS_CUDA(cudaEventRecord(t->done, t->st), "the trace's stream")
	    || LKS_CUDA(cudaStreamWaitEvent(caller, t->done, 0), "the caller's stream"))
		return -1;
	t->nrec++;
	return 0;
}

extern "C" int lks_cuda_trace_measure(void **ctx, const void *x, size_t n, void *stream,
                                      size_t *slot, char *why, size_t wsize)
{
	struct lks_cuda_trace *t = (struct lks_cuda_trace *)*ctx;
	struct lks_dev_guard g;
	int device = -1, rc;

	cudaGetLastError();  /* an error the caller left is not this tensor's */
	if (lks_trace_device_of(x, &device))
		return lks_trace_why(why, wsize, "device tensor");
	if (t && t->device != device) {
		snprintf(why, wsize, "device tensor: on GPU %d, while this trace's tensors are on "
		         "GPU %d (a trace is one rank's, on one GPU)", device, t->device);
		return -1;
	}
	if (lks_dev_enter(&g, device))
		return lks_trace_why(why, wsize, "device tensor");
	if (!t) {
		if (!(t = new (std::nothrow) lks_cuda_trace())) {
			lks_dev_leave(&g);
			snprintf(why, wsize, "device tensor: out of memory");
			return -1;
		}
		if (lks_trace_open_on(t, device)) {
			rc = lks_trace_why(why, wsize, "device tensor");
			lks_trace_free(t);
			lks_dev_leave(&g);
			return rc;
		}
		*ctx = t;
	}
	*slot = t->nrec;
	rc = lks_trace_room(t, n) || lks_trace_queue(t, (const float *)x, n, (cudaStream_t)stream)
	     ? lks_trace_why(why, wsize, "device tensor") : 0;
	lks_dev_leave(&g);
	return rc;
}

extern "C" int lks_cuda_trace_collect(void *ctx, lks_tensor_stats *out, size_t n, char *why,
                                      size_t wsize)
{
	struct lks_cuda_trace *t = (struct lks_cuda_trace *)ctx;
	struct lks_dev_guard g;
	unsigned char *host;
	int rc = 0;

	if (!t || !t->nrec)
		return 0;
	if (n != t->nrec) {
		snprintf(why, wsize, "device tensors: %zu records queued, %zu asked for", t->nrec, n);
		return -1;
	}
	if (!(host = (unsigned char *)malloc(n * LKS_CUDA_DEVSTAT_REC))) {
		snprintf(why, wsize, "device tensors: out of memory");
		return -1;
	}
	if (lks_dev_enter(&g, t->device)) {
		rc = lks_trace_why(why, wsize, "device tensors");
	} else {
		if (LKS_CUDA(cudaMemcpyAsync(host, t->recs, n * LKS_CUDA_DEVSTAT_REC,
		                             cudaMemcpyDeviceToHost, t->st), "the records")
		    || LKS_CUDA(cudaStreamSynchronize(t->st), "the trace's stream"))
			rc = lks_trace_why(why, wsize, "device tensors");
		lks_dev_leave(&g);
	}
	for (size_t i = 0; !rc && i < n; i++)
		lks_cuda_devstat_fill(host + i * LKS_CUDA_DEVSTAT_REC, &out[i]);
	t->nrec = 0;
	free(host);
	return rc;
}

extern "C" void lks_cuda_trace_close(void *ctx)
{
	struct lks_cuda_trace *t = (struct lks_cuda_trace *)ctx;
	struct lks_dev_guard g;

	if (!t)
		return;
	if (lks_dev_enter(&g, t->device) == 0) {
		lks_trace_free(t);
		lks_dev_leave(&g);
	} else {
		delete t;  /* the device is gone: what it held went with it */
	}
}
