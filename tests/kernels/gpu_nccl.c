/*
 * gpu_nccl.c: the NCCL communicator (kernels/cuda/comm_nccl.h) of 2 ranks, one thread each,
 * through the cuda backend's comm method, against the threads communicator on the same
 * data: bit for bit, sums and maxes, NaN, +-Inf and -0 included. A plain program, as
 * gpu_backend.c: without a usable device it prints "no CUDA device: ..." and exits with
 * LKS_SKIP (ctest's SKIP_RETURN_CODE).
 *
 * With 2 GPUs or more the ranks go on 2 devices (open_rank) and NCCL sums them: ordered
 * (all-gather and fold), and NCCL's own all-reduce, which for 2 ranks must give the same
 * bits too (x_0 + x_1 = x_1 + x_0 exactly: float addition commutes). With one GPU both
 * ranks land on it, which NCCL refuses: the group must decline (no end), so the runner
 * stages through the host; that is checked and said.
 *
 * One difference is allowed and counted, as in gpu_backend.c: where a sum meets a NaN, x86
 * keeps the input's payload and sign while the GPU gives its canonical NaN; both are NaN.
 * The max only selects, so its NaNs keep their bits on both sides.
 *
 * The all-gather (a copy) and the reduce-scatter are checked the same way: every rank's
 * first NP values gathered in rank order, exactly; the reduce-scatter of the first 2 NP
 * values the threads' sum's part of the rank, in either mode.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/cuda/backend_cuda.h"

#define LKS_SKIP 77
#define N (3 * 65536 + 77)  /* several fold blocks and a part */
#define NP (N / 2)          /* a rank's part in the all-gather and the reduce-scatter */

#define CHECK(cond, ...)                                                            \
	do {                                                                            \
		if (!(cond)) {                                                              \
			fprintf(stderr, "gpu_nccl: FAIL %s:%d: ", __FILE__, __LINE__);        \
			fprintf(stderr, __VA_ARGS__);                                           \
			fprintf(stderr, "\n");                                                  \
			exit(1);                                                                \
		}                                                                           \
	} while (0)

static const lks_backend *gpu = &lks_backend_cuda;
static int nan_payloads;

struct rank {
	int r, mode, rc, declined;
	void *ctx;
	lks_comm *host, *end;
	float *x, *dx;          /* (N) host values; then the all-reduce's, the all-gather's and
	                           the reduce-scatter's, downloaded; dx (3 N) the device's */
	char err[512];
};

static float value(int r, size_t i)
{
	static const float special[] = { -0.0f, 0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e-40f };
	uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(r * 40503u + 7u);

	if (i < 49)  /* every pair of specials between the 2 ranks */
		return special[(r ? i / 7 : i % 7)];
	h ^= h >> 15;
	h *= 2246822519u;
	return ldexpf((float)(h & 0xffff) / 65536.0f + 0.5f, (int)(h >> 16) % 40 - 20)
	     * ((h >> 31) ? -1.0f : 1.0f);
}

/* rank k's all-reduce, sum then max, each on its values, on the device */
static void *rank_main(void *p)
{
	struct rank *k = p;
	size_t bytes = N * sizeof(float);
	float *back = k->x + N;

	/* a minute: far more than two GPUs of one machine take to join and sum 2^20 floats */
	lks_devcomm_opts o = { .nlocal = 2, .mode = k->mode, .timeout_s = 60 };

	if ((k->rc = lks_be_comm(gpu, k->ctx, k->host, &o, &k->end)))
		goto out;
	if (!k->end) {
		k->declined = 1;
		return NULL;
	}
	for (int max = 0; max <= 1 && !k->rc; max++)
		k->rc = lks_be_upload(gpu, k->ctx, k->dx, k->x, bytes)
		     || (max ? lks_comm_allreduce_max(k->end, k->dx, N)
		             : lks_comm_allreduce_sum(k->end, k->dx, N))
		     || lks_be_download(gpu, k->ctx, back + (size_t)max * N, k->dx, bytes);
	/* from the values at dx into dx + N: the all-gather of the first NP, then the
	   reduce-scatter of the first 2 NP */
	if (!k->rc)
		k->rc = lks_be_upload(gpu, k->ctx, k->dx, k->x, bytes)
		     || lks_comm_all_gather(k->end, k->dx, NP, k->dx + N)
		     || lks_be_download(gpu, k->ctx, back + 2 * N, k->dx + N, 2 * NP * sizeof(float))
		     || lks_comm_reduce_scatter(k->end, k->dx, NP, k->dx + N)
		     || lks_be_download(gpu, k->ctx, back + 3 * N, k->dx + N, NP * sizeof(float));
out:
	if (k->rc)
		snprintf(k->err, sizeof(k->err), "%s", lks_errmsg());
	return NULL;
}

struct host_arg { lks_comm *c; float *x; int max, rc; };

static void *host_main(void *p)
{
	struct host_arg *a = p;

	a->rc = a->max ? lks_comm_allreduce_max(a->c, a->x, N) : lks_comm_allreduce_sum(a->c, a->x, N);
	return NULL;
}

/* the threads communicator's sum (max 0) or max of the 2 ranks' values, into want */
static void threads_want(int max, float *want)
{
	lks_comm *c[2];
	float *other = malloc(N * sizeof(float));
	struct host_arg a[2] = { { NULL, want, max, 0 }, { NULL, other, max, 0 } };
	pthread_t th[2];

	CHECK(other && lks_comm_threads(2, c) == 0, "threads communicator");
	for (int r = 0; r < 2; r++) {
		for (size_t i = 0; i < N; i++)
			a[r].x[i] = value(r, i);
		a[r].c = c[r];
		pthread_create(&th[r], NULL, host_main, &a[r]);
	}
	for (int r = 0; r < 2; r++) {
		pthread_join(th[r], NULL);
		CHECK(a[r].rc == 0, "threads all-reduce: %s", lks_errmsg());
		lks_comm_close(c[r]);
	}
	free(other);
}

/* 2 ranks in mode; 1 when the group declined (one device) */
static int run_mode(int mode, void *ctx[2], const float *want_sum, const float *want_max)
{
	struct rank k[2];
	lks_comm *host[2];
	pthread_t th[2];
	int declined;

	CHECK(lks_comm_threads(2, host) == 0, "threads communicator");
	for (int r = 0; r < 2; r++) {
		k[r] = (struct rank){ .r = r, .mode = mode, .ctx = ctx[r], .host = host[r] };
		CHECK((k[r].x = malloc(5 * N * sizeof(float))), "out of memory");
		CHECK(lks_be_alloc(gpu, ctx[r], 3 * N * sizeof(float), (void **)&k[r].dx) == 0,
		      "alloc: %s", lks_errmsg());
		for (size_t i = 0; i < N; i++)
			k[r].x[i] = value(r, i);
		pthread_create(&th[r], NULL, rank_main, &k[r]);
	}
	for (int r = 0; r < 2; r++)
		pthread_join(th[r], NULL);
	declined = k[0].declined;
	for (int r = 0; r < 2; r++) {
		CHECK(k[r].rc == 0, "mode %d rank %d: %s", mode, r, k[r].err);
		CHECK(k[r].declined == declined, "the ranks decided differently");
		for (size_t i = 0; i < N && !declined; i++) {
			const float *s = k[r].x + N, *m = k[r].x + 2 * N;

			if (isnan(s[i]) && isnan(want_sum[i]) && memcmp(&s[i], &want_sum[i], 4))
				nan_payloads++;  /* float arithmetic on a NaN: see the top */
			else
				CHECK(!memcmp(&s[i], &want_sum[i], 4), "mode %d rank %d sum [%zu]: %a, threads %a",
			      mode, r, i, (double)s[i], (double)want_sum[i]);
			CHECK(!memcmp(&m[i], &want_max[i], 4), "mode %d rank %d max [%zu]: %a, threads %a",
			      mode, r, i, (double)m[i], (double)want_max[i]);
		}
		for (size_t i = 0; i < 2 * NP && !declined; i++) {
			const float *g = k[r].x + 3 * N, v = value((int)(i / NP), i % NP);

			CHECK(!memcmp(&g[i], &v, 4), "mode %d rank %d all-gather [%zu]", mode, r, i);
		}
		for (size_t i = 0; i < NP && !declined; i++) {
			const float *s = k[r].x + 4 * N, *w = want_sum + (size_t)r * NP;

			if (isnan(s[i]) && isnan(w[i]) && memcmp(&s[i], &w[i], 4))
				nan_payloads++;
			else
				CHECK(!memcmp(&s[i], &w[i], 4), "mode %d rank %d reduce-scatter [%zu]: %a, "
				      "threads %a", mode, r, i, (double)s[i], (double)w[i]);
		}
		lks_be_free(gpu, ctx[r], k[r].dx);
		lks_comm_close(declined ? host[r] : k[r].end);
		free(k[r].x);
	}
	return declined;
}

int main(void)
{
	void *ctx[2];
	float *want_sum = malloc(N * sizeof(float)), *want_max = malloc(N * sizeof(float));
	int one_device;

	CHECK(want_sum && want_max, "out of memory");
	if (lks_be_open_rank(gpu, 1, 0, &ctx[0])) {
		printf("no CUDA device: %s\n", lks_errmsg());
		return LKS_SKIP;
	}
	CHECK(lks_be_open_rank(gpu, 1, 1, &ctx[1]) == 0, "open_rank 1: %s", lks_errmsg());
	one_device = lks_cuda_ctx_device(ctx[0]) == lks_cuda_ctx_device(ctx[1]);
	threads_want(0, want_sum);
	threads_want(1, want_max);
	for (int mode = LKS_ALLREDUCE_ORDERED; mode <= LKS_ALLREDUCE_NCCL; mode++)
		CHECK(run_mode(mode, ctx, want_sum, want_max) == one_device,
		      "mode %d: NCCL %s 2 ranks on %s", mode, one_device ? "took" : "declined",
		      one_device ? "one device" : "two");
	lks_be_close(gpu, ctx[0]);
	lks_be_close(gpu, ctx[1]);
	if (one_device)
		printf("gpu_nccl: one device: the group declines NCCL for 2 ranks on it (the runner "
		       "stages through the host); the NCCL all-reduces need 2 GPUs\n");
	else
		printf("gpu_nccl: 2 ranks on 2 GPUs, ordered and nccl: sums, maxes, all-gathers and "
		       "reduce-scatters equal the threads communicator's bit for bit (%d NaN payloads "
		       "differ, both NaN)\n", nan_payloads);
	return 0;
}
