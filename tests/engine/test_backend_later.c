/*
 * test_backend_later.c: the backend methods of the later versions that serve the trace and
 * the store: a traced tensor measured in two halves (version 5, measure_begin/end: taken
 * when traced, measured on the tracer's thread) and the GEMM library's plans stored with
 * the run (version 6, gemm_plans).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/case.h"
#include "harness/engine/runner.h"
#include "harness/engine/trace.h"
#include "harness/store/trace_store.h"
#include "kernels/backend.h"
#include "kernels/bg.h"
#include "kernels/cpu/backend_cpu.h"
#include "kernels/err.h"
#include "backend_fixture.h"
#include "case_text.h"
#include "store_fixture.h"

/* ---- measuring in two halves (version 5) ---- */

/* What measure_begin took: a copy of the tensor's bytes, as a device backend takes them
   before the step goes on. */
struct taken { float *x; size_t n; lks_quant q; uint8_t *codes; float *scales; };
static atomic_int begins, ends;

static int taking_begin(const lks_backend *be, void *ctx, const float *x, size_t n,
                        const lks_quant *q, void **job)
{
	struct taken *t = calloc(1, sizeof(*t));

	if (!t)
		return lks_err("out of memory");
	if (x) {
		t->n = n;
		t->x = malloc(n * sizeof(float) + 1);
		memcpy(t->x, x, n * sizeof(float));
	} else {
		size_t nq = (size_t)(q->rows - 1) * q->ldq + (size_t)q->cols;
		size_t ns = lks_quant_nscales(q);

		t->q = *q;
		t->codes = malloc(nq);
		t->scales = malloc(ns * sizeof(float));
		memcpy(t->codes, q->q, nq);
		memcpy(t->scales, q->scale, ns * sizeof(float));
		t->q.q = t->codes;
		t->q.scale = t->scales;
	}
	atomic_fetch_add(&begins, 1);
	*job = t;
	return 0;
}

static int taking_end(const lks_backend *be, void *ctx, void *job, lks_tensor_stats *s)
{
	struct taken *t = job;
	int rc = t->x ? lks_backend_cpu.stats_f32(&lks_backend_cpu, ctx, t->x, t->n, s)
	              : lks_backend_cpu.stats_quant(&lks_backend_cpu, ctx, &t->q, s);

	atomic_fetch_add(&ends, 1);
	free(t->x);
	free(t->codes);
	free(t->scales);
	free(t);
	return rc;
}

/* A backend that measures in two halves has every traced tensor taken when it is traced
   (the kept and the others, which the step overwrites next) and measured on the tracer's
   thread: the same traces as the CPU's, each begun measurement ended once. */
Test(backend, a_backend_measuring_in_two_halves_traces_the_same_bits)
{
	const char *one_rank[] = { "case.world_size=1" };
	lks_backend be = lks_backend_cpu;
	double loss_cpu[3] = { 0 }, loss_taken[3] = { 0 };
	uint64_t hash_cpu, hash_taken;
	int n_cpu, n_taken;
	lks_case c;

	be.name = "taking";
	be.measure_begin = taking_begin;
	be.measure_end = taking_end;
	load_case(two_blocks, one_rank, 1, &c);
	train_on(&c, &lks_backend_cpu, 2, loss_cpu, &hash_cpu, &n_cpu);
	atomic_store(&begins, 0);
	atomic_store(&ends, 0);
	train_on(&c, &be, 2, loss_taken, &hash_taken, &n_taken);
	cr_expect_eq(atomic_load(&begins), n_taken, "every stat row was begun");
	cr_expect_eq(atomic_load(&ends), atomic_load(&begins));
	cr_expect_eq(n_taken, n_cpu);
	cr_expect_eq(hash_taken, hash_cpu, "measuring in two halves changed the traces");
	cr_expect_eq(memcmp(loss_taken, loss_cpu, sizeof(loss_cpu)), 0);
	lks_case_release(&c);
}

/* The other half matters: a backend that takes nothing at begin measures the tensor as it
   is when the job runs, after the step overwrote it; the taking one as it was traced. The
   background thread is held by a job of another group, so the tracer's job runs at the
   sync, after the overwrite: no race decides it. */
static int lazy_begin(const lks_backend *be, void *ctx, const float *x, size_t n,
                      const lks_quant *q, void **job)
{
	struct taken *t = calloc(1, sizeof(*t));

	if (!t)
		return lks_err("out of memory");
	t->x = (float *)x;  /* not a copy */
	t->n = n;
	*job = t;
	return 0;
}

static int lazy_end(const lks_backend *be, void *ctx, void *job, lks_tensor_stats *s)
{
	struct taken *t = job;
	int rc = lks_backend_cpu.stats_f32(&lks_backend_cpu, ctx, t->x, t->n, s);

	free(t);
	return rc;
}

static atomic_int hold;

static void holding_job(void *arg)
{
	(void)arg;
	while (atomic_load(&hold))
		usleep(1000);
}

/* The hash the tracer records for x traced (not kept) and then overwritten, with be. */
static uint64_t hash_traced_then_overwritten(const lks_backend *be, float *x, size_t n)
{
	lks_jobs other = { 0 };
	lks_tracer t;
	lks_bg *bg;
	uint64_t h;

	cr_assert_eq(lks_bg_create(&bg), 0);
	atomic_store(&hold, 1);
	lks_bg_post(bg, &other, holding_job, NULL);
	lks_tracer_init(&t, 0, be, NULL);
	t.bg = bg;
	lks_tracer_begin_step(&t, 0);
	lks_trace_f32(&t, LKS_PHASE_FORWARD, x, n, "x");
	for (size_t i = 0; i < n; i++)
		x[i] = -x[i];
	lks_tracer_sync(&t);
	cr_assert_eq(t.nrows, 1);
	cr_assert(!t.failed, "%s", lks_errmsg());
	h = t.rows[0].hash;
	atomic_store(&hold, 0);
	lks_tracer_release(&t);
	lks_bg_free(bg);
	return h;
}

Test(backend, a_tensor_is_measured_as_traced_not_as_overwritten_after)
{
	float x[64], first[64];
	lks_tensor_stats st;
	lks_backend taking = lks_backend_cpu, lazy = lks_backend_cpu;

	taking.measure_begin = taking_begin;
	taking.measure_end = taking_end;
	lazy.measure_begin = lazy_begin;
	lazy.measure_end = lazy_end;
	for (int i = 0; i < 64; i++)
		x[i] = first[i] = (float)i + 0.5f;
	cr_assert_eq(lks_backend_cpu.stats_f32(&lks_backend_cpu, NULL, first, 64, &st), 0);
	cr_expect_eq(hash_traced_then_overwritten(&taking, x, 64), st.hash);
	memcpy(x, first, sizeof(x));
	cr_expect_neq(hash_traced_then_overwritten(&lazy, x, 64), st.hash,
	              "a backend measuring late sees the overwritten tensor");
}

/* ---- the GEMM library's plans, stored with the run ---- */

/* A backend whose "library" notes each GEMM by role and shape, as the cuda backend's
   cuBLASLt does (kernels/cuda/lt_map.h): a plan per shape with an algorithm made of it,
   and wgrad refused (a fallback with its reason), each counting its GEMMs. */
static pthread_mutex_t noted_lock = PTHREAD_MUTEX_INITIALIZER;
static lks_gemm_algo noted[32];
static int nnoted, ngemms;

static int noting_gemm(const lks_backend *be, void *ctx, const lks_gemm *g)
{
	lks_gemm_algo p = {
		.role = g->role, .M = g->M, .N = g->N, .K = g->K, .a = g->a.dtype, .b = g->b.dtype,
		.out = g->out, .scaling_a = g->a.scaling, .scaling_b = g->b.scaling,
		.fast_accum = g->role == LKS_GEMM_FWD, .fallback = g->role == LKS_GEMM_WGRAD,
		.gemms = 1,
	};
	int i;

	if (p.fallback)
		snprintf(p.reason, sizeof(p.reason), "no wgrad of %dx%dx%d", g->M, g->N, g->K);
	else
		p.algo = 1000 * g->M + g->K, p.tile = 7, p.stages = 3, p.splitk = 1;
	pthread_mutex_lock(&noted_lock);
	ngemms++;
	for (i = 0; i < nnoted; i++)
		if (noted[i].role == p.role && noted[i].M == p.M && noted[i].N == p.N
		    && noted[i].K == p.K && noted[i].a == p.a && noted[i].b == p.b)
			break;
	if (i < nnoted)
		noted[i].gemms++;
	else if (nnoted < 32)
		noted[nnoted++] = p;
	pthread_mutex_unlock(&noted_lock);
	return lks_backend_cpu.gemm(be, ctx, g);
}

static int noting_gemm_plans(const lks_backend *be, void *ctx, lks_plan_fn put, void *arg)
{
	int rc = 0;

	(void)be; (void)ctx;
	for (int i = 0; !rc && i < nnoted; i++)
		rc = put(arg, &noted[i]);
	return rc;
}

struct stored_plans {
	int n, gemms, fallbacks;
	lks_gemm_algo p[32];
};

static int see_stored_plan(void *arg, const lks_gemm_algo *p)
{
	struct stored_plans *sp = arg;

	if (sp->n < 32)
		sp->p[sp->n] = *p;
	sp->n++;
	sp->gemms += (int)p->gemms;
	sp->fallbacks += p->fallback;
	return 0;
}

/* Runs two_blocks on be into a new database and reads its plans back. */
static void run_and_read_plans(const lks_backend *be, struct stored_plans *sp)
{
	lks_runner_opts o = { .threads = 1, .backend = be };
	lks_run_result res;
	char path[512];
	lks_store *s;
	lks_case c;

	memset(sp, 0, sizeof(*sp));
	nnoted = ngemms = 0;
	load_case(two_blocks, NULL, 0, &c);
	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "plans.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_run(&c, &c.runs[0], s, &o, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_gemm_plans(s, res.run_id, see_stored_plan, sp), 0, "%s",
	             lks_errmsg());
	lks_store_close(s);
	rm_tmp();
	lks_case_release(&c);
}

/* The runner stores, at the end of a run, the plans its backend reports (version 6's
   gemm_plans), each as the backend gave it, in its order; none where the method is
   missing: the cpu's, or a backend built before version 6. */
Test(backend, a_runs_gemm_plans_are_stored_with_it)
{
	lks_backend be = lks_backend_cpu;
	struct stored_plans sp;

	be.name = "noting";
	be.gemm = noting_gemm;
	be.gemm_plans = noting_gemm_plans;
	run_and_read_plans(&be, &sp);
	cr_assert_gt(nnoted, 3, "the model's GEMMs came in %d shapes", nnoted);
	cr_assert_eq(sp.n, nnoted);
	cr_expect_eq(sp.gemms, ngemms, "every GEMM of the run counted in one plan");
	cr_expect_gt(sp.fallbacks, 0);
	cr_expect_lt(sp.fallbacks, sp.n);
	for (int i = 0; i < sp.n && i < 32; i++) {
		const lks_gemm_algo *g = &sp.p[i], *w = &noted[i];

		cr_expect(g->role == w->role && g->M == w->M && g->N == w->N && g->K == w->K,
		          "plan %d: %s %dx%dx%d", i, lks_gemm_role_name(g->role), g->M, g->N, g->K);
		cr_expect(g->a == w->a && g->b == w->b && g->out == w->out
		          && g->scaling_a == w->scaling_a && g->scaling_b == w->scaling_b
		          && g->fast_accum == w->fast_accum, "plan %d", i);
		cr_expect(g->fallback == w->fallback && g->algo == w->algo && g->tile == w->tile
		          && g->stages == w->stages && g->splitk == w->splitk, "plan %d", i);
		cr_expect_eq(g->gemms, w->gemms, "plan %d", i);
		cr_expect_str_eq(g->reason, w->reason, "plan %d", i);
	}

	be.size = (int)offsetof(lks_backend, gemm_plans);  /* a version-5 backend */
	run_and_read_plans(&be, &sp);
	cr_assert_gt(ngemms, 0);
	cr_expect_eq(sp.n, 0, "a version-5 backend has no plans to store");
	run_and_read_plans(&lks_backend_cpu, &sp);
	cr_expect_eq(sp.n, 0, "the cpu backend has no plans");
}

/* A backend like the cuda one: each rank's context its own (open_rank), each noting the
   GEMMs it ran, and gemm_plans given a rank's context, not anything else. The cpu's
   contexts with two threads are pools, so each rank's is a pointer of its own. */
static void *rank_ctx[4];
static int nrank_ctx, plan_walks, foreign_gemms;  /* GEMMs on a context not open_rank's */
static lks_gemm_algo ctx_noted[4][32];
static int ctx_nnoted[4];

static int ctx_index(const void *ctx)
{
	for (int i = 0; i < nrank_ctx && i < 4; i++)
		if (rank_ctx[i] == ctx)
			return i;
	return -1;
}

static int ctx_open_rank(const lks_backend *be, int threads, int local, void **ctx)
{
	(void)threads;
	if (lks_backend_cpu.open_rank(be, 2, local, ctx))
		return -1;
	pthread_mutex_lock(&noted_lock);
	if (nrank_ctx < 4)
		rank_ctx[nrank_ctx] = *ctx;
	nrank_ctx++;  /* more than 4 fails the test's count */
	pthread_mutex_unlock(&noted_lock);
	return 0;
}

static int ctx_gemm(const lks_backend *be, void *ctx, const lks_gemm *g)
{
	lks_gemm_algo p = {
		.role = g->role, .M = g->M, .N = g->N, .K = g->K, .a = g->a.dtype, .b = g->b.dtype,
		.out = g->out, .scaling_a = g->a.scaling, .scaling_b = g->b.scaling, .algo = g->K,
		.gemms = 1,
	};
	int c, i;

	pthread_mutex_lock(&noted_lock);  /* on a rank's thread: counted, asserted after the run */
	if ((c = ctx_index(ctx)) < 0) {
		foreign_gemms++;
		pthread_mutex_unlock(&noted_lock);
		return lks_backend_cpu.gemm(be, ctx, g);
	}
	ngemms++;
	for (i = 0; i < ctx_nnoted[c] && !lks_gemm_algo_eq(&ctx_noted[c][i], &p); i++)
		;
	if (i < ctx_nnoted[c])
		ctx_noted[c][i].gemms++;
	else if (i < 32)
		ctx_noted[c][ctx_nnoted[c]++] = p;
	pthread_mutex_unlock(&noted_lock);
	return lks_backend_cpu.gemm(be, ctx, g);
}

static int ctx_gemm_plans(const lks_backend *be, void *ctx, lks_plan_fn put, void *arg)
{
	int c = ctx_index(ctx), rc = 0;

	(void)be;
	if (c < 0)
		return lks_err("gemm_plans: %p is not a context open_rank gave", ctx);
	plan_walks++;
	for (int i = 0; !rc && i < ctx_nnoted[c]; i++)
		rc = put(arg, &ctx_noted[c][i]);
	return rc;
}

/* Every rank's context hands its plans over (the runner once passed the array of them,
   which the cuda backend took for a context and hung on), and the plans the ranks share
   are stored once, with the GEMMs of all ranks counted. */
Test(backend, the_plans_of_every_ranks_context_are_stored_as_one_list)
{
	lks_backend be = lks_backend_cpu;
	struct stored_plans sp;

	be.name = "noting per rank";
	be.open_rank = ctx_open_rank;
	be.gemm = ctx_gemm;
	be.gemm_plans = ctx_gemm_plans;
	nrank_ctx = plan_walks = foreign_gemms = 0;
	memset(ctx_nnoted, 0, sizeof(ctx_nnoted));
	run_and_read_plans(&be, &sp);
	cr_assert_eq(foreign_gemms, 0, "GEMMs on a context open_rank did not give");
	cr_assert_eq(nrank_ctx, 2, "two_blocks runs 2 ranks, each on a context of its own");
	cr_assert_neq(rank_ctx[0], rank_ctx[1]);
	cr_assert_gt(ctx_nnoted[0], 3);
	cr_assert_eq(ctx_nnoted[1], ctx_nnoted[0], "the ranks ran GEMMs of the same shapes");
	cr_expect_eq(plan_walks, 4, "each context walked when counting and when copying");
	cr_assert_eq(sp.n, ctx_nnoted[0], "a plan both ranks ran is stored once");
	cr_expect_eq(sp.gemms, ngemms, "every GEMM of both ranks counted");
	for (int i = 0; i < sp.n && i < 32; i++) {
		const lks_gemm_algo *w = &ctx_noted[0][i];
		int64_t both = w->gemms;

		for (int j = 0; j < ctx_nnoted[1]; j++)
			if (lks_gemm_algo_eq(&ctx_noted[1][j], w))
				both += ctx_noted[1][j].gemms;
		cr_expect(lks_gemm_algo_eq(&sp.p[i], w), "plan %d in rank 0's order", i);
		cr_expect_eq(sp.p[i].gemms, both, "plan %d: %lld GEMMs", i, (long long)sp.p[i].gemms);
	}
}
