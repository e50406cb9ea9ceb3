/*
 * test_gemm_concurrent.c: concurrent calls of the CPU GEMM share its workspace cache
 * safely, every result bit for bit the reference's (gemm_ref.h).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gemm_ref.h"
#include "kernels/cpu/gemm.h"

/* ---- concurrent calls share the workspace cache ---- */

/*
 * A call that gives its workspace back must not read it once it is in the cache, where
 * another call may take it and free it at once (issue 11, item 7). Threads call
 * lks_gemm_run with shapes whose workspaces differ in size, so that blocks are swapped and
 * freed all the time, while this thread stalls them with signals at random points, which
 * widens every window between two steps of the cache; every result is checked bit for bit.
 * A read after free shows only under AddressSanitizer (ci/sanitize), which takes seconds
 * to meet the interleaving on 2 cores: the test runs 8 s there and 1 s in other builds.
 */
#if defined(__SANITIZE_ADDRESS__)
#define HAMMER_SECONDS 8
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAMMER_SECONDS 8
#endif
#endif
#ifndef HAMMER_SECONDS
#define HAMMER_SECONDS 1
#endif

enum { HAMMER_THREADS = 8, HAMMER_SHAPES = 4 };

struct hammer_case {
	lks_gemm g;             /* c unset: each thread has its own */
	uint32_t *want;         /* (M, N) the expected bits, as ref_out gives them */
};

struct hammer_arg {
	const struct hammer_case *cases;
	int id;
	long calls, failed, wrong;
};

static atomic_int hammer_running;  /* threads still calling */

static double hammer_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *hammer_thread(void *v)
{
	struct hammer_arg *h = v;
	double end = hammer_now() + HAMMER_SECONDS;

	for (; hammer_now() < end; h->calls++) {
		const struct hammer_case *hc = &h->cases[(h->calls + h->id) % HAMMER_SHAPES];
		lks_gemm g = hc->g;
		float c[2 * 700];

		g.c = c;
		if (lks_gemm_run(NULL, &g)) {
			h->failed++;
			continue;
		}
		for (int i = 0; i < g.M * g.N; i++)
			h->wrong += (g.out == LKS_BF16 ? ((uint16_t *)c)[i] : lks_f32_bits(c[i])) != hc->want[i];
	}
	atomic_fetch_sub(&hammer_running, 1);
	return NULL;
}

/* Holds its thread up for 5 us wherever the signal struck: long enough for another
   thread to take a block from the cache and free it. Async-signal-safe. */
static void hammer_stall(int sig)
{
	double end = hammer_now() + 5e-6;

	while (hammer_now() < end)
		;
}

Test(gemm, concurrent_calls_share_the_workspace_safely, .timeout = 60)
{
	/* (M, N, K): short calls whose workspaces (B panels of N rows) differ in size */
	static const int shapes[HAMMER_SHAPES][3] = { { 1, 3, 5 }, { 2, 700, 3 }, { 3, 20, 9 },
	                                              { 1, 300, 2 } };
	struct hammer_case cases[HAMMER_SHAPES];
	struct hammer_arg args[HAMMER_THREADS];
	pthread_t th[HAMMER_THREADS];
	struct sigaction sa = { .sa_handler = hammer_stall, .sa_flags = SA_RESTART };
	uint64_t seed = 77;
	long calls = 0;

	for (int s = 0; s < HAMMER_SHAPES; s++) {
		lks_gemm *g = &cases[s].g;
		int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
		float *acc = malloc((size_t)M * N * sizeof(float));

		*g = (lks_gemm){
			.M = M, .N = N, .K = K, .a = { LKS_BF16, NULL, (size_t)K, LKS_SCALE_NONE, NULL },
			.b = { LKS_F32, NULL, (size_t)K, LKS_SCALE_NONE, NULL },
			.out = s % 2 ? LKS_BF16 : LKS_F32, .ldc = (size_t)N,
		};
		g->a.data = make_operand(LKS_BF16, M, K, (size_t)K, &seed);
		g->b.data = make_operand(LKS_F32, N, K, (size_t)K, &seed);
		cases[s].want = malloc((size_t)M * N * sizeof(uint32_t));
		cr_assert(acc && cases[s].want);
		ref_acc(g, acc);
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				cases[s].want[i * N + j] = ref_out(g, acc, i, j);
		free(acc);
	}
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&hammer_running, HAMMER_THREADS);
	for (int t = 0; t < HAMMER_THREADS; t++) {
		args[t] = (struct hammer_arg){ .cases = cases, .id = t };
		cr_assert_eq(pthread_create(&th[t], NULL, hammer_thread, &args[t]), 0);
	}
	for (long k = 0; atomic_load(&hammer_running) > 0; k++)
		pthread_kill(th[k % HAMMER_THREADS], SIGUSR1);
	for (int t = 0; t < HAMMER_THREADS; t++) {
		pthread_join(th[t], NULL);
		calls += args[t].calls;
		cr_expect_eq(args[t].failed, 0, "thread %d: %ld calls failed", t, args[t].failed);
		cr_expect_eq(args[t].wrong, 0, "thread %d: %ld elements differ from the reference", t,
		             args[t].wrong);
	}
	printf("gemm: %ld concurrent calls on %d threads in %d s\n", calls, HAMMER_THREADS,
	       HAMMER_SECONDS);
	cr_expect_gt(calls, 2 * HAMMER_THREADS * HAMMER_SHAPES, "too few calls to mean anything");
	for (int s = 0; s < HAMMER_SHAPES; s++) {
		free((void *)cases[s].g.a.data);
		free((void *)cases[s].g.b.data);
		free(cases[s].want);
	}
}
