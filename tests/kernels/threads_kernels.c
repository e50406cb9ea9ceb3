/*
 * threads_kernels.c: the CPU kernels called from many threads at once, as ranks call them,
 * from the very first call on: the ISA path is chosen by whichever thread comes first
 * (issue 11, item 8) and the GEMM's cached workspace passes from call to call (item 7).
 *
 * A plain program, not a Criterion test: Criterion does not start under ThreadSanitizer,
 * and this is the test ci/sanitize runs in the ThreadSanitizer build, where an
 * unsynchronised first use or a read of a block another thread may free is reported
 * whether or not the bad interleaving happens in that run. In every build it also checks
 * that all threads saw one path and that every result is the scalar path's, bit for bit.
 * Exit 0 when all holds, 1 otherwise.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa.h"
#include "kernels/err.h"

enum { THREADS = 8, CALLS = 200, M = 3, K = 7, NMAX = 96 };

static pthread_barrier_t start;
static float a[M * K], b[NMAX * K];

struct worker {
	int id;
	lks_isa isa;            /* the path this thread saw at its first call */
	float c[4][M * NMAX];   /* the last result of each of the 4 shapes */
	int failed;
};

/* N of call i: four sizes, so that workspaces of several sizes pass through the cache */
static int shape_n(int i)
{
	static const int n[4] = { 5, NMAX, 17, 40 };

	return n[i % 4];
}

static lks_gemm shape(int i, float *c)
{
	return (lks_gemm){
		.M = M, .N = shape_n(i), .K = K, .a = { LKS_F32, a, K, LKS_SCALE_NONE, NULL },
		.b = { LKS_F32, b, K, LKS_SCALE_NONE, NULL }, .out = LKS_F32, .c = c,
		.ldc = (size_t)shape_n(i),
	};
}

static void *work(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(&start);
	w->isa = lks_isa_active();
	for (int i = 0; i < CALLS; i++) {
		lks_gemm g = shape(i + w->id, w->c[(i + w->id) % 4]);

		w->failed += lks_gemm_run(NULL, &g) != 0;
	}
	return NULL;
}

int main(void)
{
	static struct worker w[THREADS];
	pthread_t th[THREADS];
	int bad = 0;

	for (int i = 0; i < M * K; i++)
		a[i] = (float)(i % 5) - 1.25f;
	for (int i = 0; i < NMAX * K; i++)
		b[i] = 0.5f + (float)(i % 11) * 0.375f;
	pthread_barrier_init(&start, NULL, THREADS);
	for (int t = 0; t < THREADS; t++) {
		w[t].id = t;
		if (pthread_create(&th[t], NULL, work, &w[t])) {
			fprintf(stderr, "threads_kernels: cannot start thread %d\n", t);
			return 1;
		}
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < THREADS; t++) {
		if (w[t].failed || w[t].isa != w[0].isa) {
			fprintf(stderr, "threads_kernels: thread %d: %d calls failed, path %s (thread 0: "
			        "%s)\n", t, w[t].failed, lks_isa_name(w[t].isa), lks_isa_name(w[0].isa));
			bad = 1;
		}
		for (int s = 0; s < 4; s++) {
			float want[M * NMAX];
			lks_gemm g = shape(s, want);

			if (lks_gemm_run_isa(NULL, &g, LKS_ISA_SCALAR)) {
				fprintf(stderr, "threads_kernels: %s\n", lks_errmsg());
				return 1;
			}
			if (memcmp(want, w[t].c[s], sizeof(float) * M * (size_t)shape_n(s))) {
				fprintf(stderr, "threads_kernels: thread %d, N = %d: not the scalar "
				        "path's bits\n", t, shape_n(s));
				bad = 1;
			}
		}
	}
	printf("threads_kernels: %d threads, %d calls each, path %s: %s\n", THREADS, CALLS,
	       lks_isa_name(w[0].isa), bad ? "FAILED" : "ok");
	return bad;
}
