/*
 * gpu_trace_device.c: lockstep-trace's device tensors on a GPU (lks_trace_tensor_device,
 * issue 33): the same values traced from host memory (run 'host') and from the GPU's
 * memory (run 'dev') have the same statistics bit for bit (l2, amax, non-finite count,
 * hash), on lengths around the lanes', XXH3's short paths' and its 1 KiB blocks' edges, with
 * NaN, infinities and subnormals; and a tensor is measured as the caller's stream left it:
 * a write queued on that stream right after the call does not reach the measuring. A
 * plain program: exit 77 (a skip) where lks_trace_device says no GPU can be used.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"
#include "kernels/trace/lockstep_trace.h"
#include "trace_fill.h"

static const size_t lengths[] = { 1, 31, 32, 33, 60, 61, 256, 257, 1000, 4099, 1048579 };
#define NLEN (sizeof(lengths) / sizeof(lengths[0]))
#define MAXN 1048579

static int failures;

#define CHECK(cond, ...)                                                                  \
	do {                                                                                  \
		if (!(cond)) {                                                                    \
			fprintf(stderr, "gpu_trace_device: " __VA_ARGS__);                            \
			fputc('\n', stderr);                                                          \
			failures++;                                                                   \
		}                                                                                 \
	} while (0)

static int stat_at(const lks_tensor_trace *tt, const lks_tentry *e, const char *name,
                   double *v)
{
	int k = lks_tensor_trace_stat(tt, name);

	for (int i = 0; k >= 0 && i < e->n; i++)
		if (tt->val[e->first + i].stat == k) {
			*v = tt->val[e->first + i].value;
			return 0;
		}
	return -1;
}

static int same(double a, double b)
{
	return !memcmp(&a, &b, sizeof(a)) || (isnan(a) && isnan(b));
}

/* Both runs' records of step, tensor by tensor. */
static void compare(const lks_stored_run *h, const lks_stored_run *d, int step)
{
	const lks_tentry *eh, *ed;
	int nh, nd;

	if (lks_tensor_trace_step(h->tt, step) || lks_tensor_trace_step(d->tt, step)) {
		CHECK(0, "step %d: %s", step, lks_errmsg());
		return;
	}
	nh = lks_tensor_trace_rank(h->tt, 0, &eh);
	nd = lks_tensor_trace_rank(d->tt, 0, &ed);
	CHECK(nh == nd && nh > 0, "step %d: %d host tensors, %d device tensors", step, nh, nd);
	for (int i = 0; i < nh && i < nd; i++) {
		static const char *const stats[] = { "l2", "amax", "nonfinite" };

		for (int k = 0; k < 3; k++) {
			double a, b;

			CHECK(!stat_at(h->tt, &eh[i], stats[k], &a) && !stat_at(d->tt, &ed[i], stats[k], &b)
			      && same(a, b), "step %d tensor %d: %s differs", step, i, stats[k]);
		}
		CHECK(eh[i].has_hash && ed[i].has_hash && eh[i].hash == ed[i].hash,
		      "step %d tensor %d: hash %016llx on the host, %016llx on the device", step, i,
		      (unsigned long long)eh[i].hash, (unsigned long long)ed[i].hash);
	}
}

int main(int argc, char **argv)
{
	const char *db = argc > 1 ? argv[1] : "gpu_trace_device.db";
	float *x = malloc(MAXN * sizeof(float));
	lks_trace *th, *td;
	cudaStream_t st;
	lks_store *s;
	lks_stored_run h, d;

	if (!lks_trace_device()) {
		printf("gpu_trace_device: skipped, no usable CUDA device: %s\n", lks_trace_error());
		return 77;
	}
	remove(db);
	if (!x || cudaStreamCreate(&st) != cudaSuccess
	    || !(th = lks_trace_open(db, "c", "host", 0, 1))
	    || !(td = lks_trace_open(db, "c", "dev", 0, 1))) {
		fprintf(stderr, "gpu_trace_device: set-up: %s\n", lks_trace_error());
		return 1;
	}
	for (int v = 0; v < 3; v++) {
		for (size_t i = 0; i < NLEN; i++) {
			char name[64];
			float *dev;

			trace_fill(x, lengths[i], v);
			snprintf(name, sizeof(name), "t%zu.v%d", lengths[i], v);
			/* each tensor its own device memory: the records of the step stay queued */
			if (cudaMalloc((void **)&dev, lengths[i] * sizeof(float)) != cudaSuccess
			    || cudaMemcpyAsync(dev, x, lengths[i] * sizeof(float), cudaMemcpyHostToDevice,
			                       st) != cudaSuccess)
				return fprintf(stderr, "gpu_trace_device: cuda\n"), 1;
			CHECK(!lks_trace_tensor(th, name, LKS_TRACE_FORWARD, -1, x, lengths[i],
			                        LKS_TRACE_F32), "%s", lks_trace_error());
			CHECK(!lks_trace_tensor_device(td, name, LKS_TRACE_FORWARD, -1, dev, lengths[i],
			                               LKS_TRACE_F32, st), "%s", lks_trace_error());
			/* queued on the caller's stream after the call: must not reach the measuring */
			cudaMemsetAsync(dev, 0xff, lengths[i] * sizeof(float), st);
			cudaFreeAsync(dev, st);
		}
		CHECK(!lks_trace_step(th, v) && !lks_trace_step(td, v), "%s", lks_trace_error());
	}
	CHECK(!lks_trace_close(th) && !lks_trace_close(td), "%s", lks_trace_error());
	if (lks_store_open_readonly(db, &s) || lks_stored_run_load(s, 1, LKS_LOAD_TRACE, &h)
	    || lks_stored_run_load(s, 2, LKS_LOAD_TRACE, &d)) {
		fprintf(stderr, "gpu_trace_device: %s\n", lks_errmsg());
		return 1;
	}
	for (int v = 0; v < 3; v++)
		compare(&h, &d, v);
	lks_stored_run_release(&h);
	lks_stored_run_release(&d);
	lks_store_close(s);
	cudaStreamDestroy(st);
	free(x);
	if (failures)
		return 1;
	printf("gpu_trace_device: %zu tensors x 3 steps, the device's records equal the host's\n",
	       NLEN);
	return 0;
}
