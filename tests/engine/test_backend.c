/*
 * test_backend.c: the backend is a versioned struct of methods (kernels/backend.h). The
 * CPU backend has every method; a method that is missing (NULL, or beyond the size of the
 * struct a backend was built with) is an error naming the backend and the op, never a
 * crash; the registry resolves names; and a training step reaches every op through the
 * struct: a counting wrapper of the CPU backend sees each op of the model as often as the
 * model makes it, and trains the same bits as the CPU backend itself.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/case.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
#include "kernels/backend.h"
#include "kernels/cpu/backend_cpu.h"
#include "kernels/err.h"
#include "backend_fixture.h"
#include "case_text.h"
#include "store_fixture.h"

/* ---- the struct ---- */

Test(backend, cpu_has_every_method)
{
	const lks_backend *be = &lks_backend_cpu;
	size_t first = offsetof(lks_backend, open);

	cr_assert_eq(be->version, LKS_BACKEND_VERSION);
	cr_assert_eq(be->size, (int)sizeof(lks_backend));
	cr_assert_str_eq(be->name, "cpu");
	/* every slot from open to the end is a method pointer; none is NULL but mem_peak (the
	   CPU's memory is the host's, which a run does not measure: steps.mem_peak is NULL),
	   measure_begin/end (a kept tensor is measured in the background, the others at once),
	   gemm_plans (it has no GEMM library, so no plans), comm (the host communicators
	   sum in place), traced (a wrapper's window on the trace) and update (its pool's
	   threads make the optimizer step from sumsq, clip and adamw) */
	for (size_t off = first; off + sizeof(void (*)(void)) <= sizeof(lks_backend);
	     off += sizeof(void (*)(void))) {
		void (*fn)(void);

		memcpy(&fn, (const char *)be + off, sizeof(fn));
		if (off == offsetof(lks_backend, mem_peak))
			cr_expect_null(fn, "the cpu backend measures no memory peak");
		else if (off == offsetof(lks_backend, measure_begin)
		         || off == offsetof(lks_backend, measure_end))
			cr_expect_null(fn, "the cpu backend measures a tensor when it is traced");
		else if (off == offsetof(lks_backend, gemm_plans))
			cr_expect_null(fn, "the cpu backend has no GEMM plans");
		else if (off == offsetof(lks_backend, comm))
			cr_expect_null(fn, "the cpu backend offers no device communicator");
		else if (off == offsetof(lks_backend, traced))
			cr_expect_null(fn, "the cpu backend has no window on the trace: wrappers do");
		else if (off == offsetof(lks_backend, update))
			cr_expect_null(fn, "the runner makes the cpu's optimizer step on its threads");
		else
			cr_expect_not_null(fn, "the method at byte %zu of lks_backend is missing", off);
	}
}

Test(backend, a_missing_method_is_an_unsupported_error)
{
	lks_backend be = lks_backend_cpu;
	float x[4] = { 1, 2, 3, 4 }, g[4] = { 1, 1, 1, 1 }, y[4], rstd[1];
	lks_tensor_stats st;

	be.name = "partial";
	be.rmsnorm_fwd = NULL;
	cr_assert_eq(lks_be_rmsnorm_fwd(&be, NULL, x, g, 1, 4, y, rstd, 1), -1);
	cr_assert_str_eq(lks_errmsg(), "backend 'partial' does not support rmsnorm_fwd");
	/* a backend built against an older, shorter struct has no method past its size, whatever
	   lies there */
	be.size = (int)offsetof(lks_backend, stats_f32);
	cr_assert_eq(lks_be_stats_f32(&be, NULL, x, 4, &st), -1);
	cr_assert_str_eq(lks_errmsg(), "backend 'partial' does not support stats_f32");
	/* and what it has still works */
	cr_assert_eq(lks_be_relu2_fwd(&be, NULL, x, 4, y, 1), 0, "%s", lks_errmsg());
	cr_assert_eq(y[3], 16.0f);
}

Test(backend, registry_resolves_names_and_lists_them)
{
	char names[64], want[96];

/* listed with the CUDA Toolkit, device or not (tests/kernels/gpu_backend.c) */
#ifdef LKS_HAVE_CUDA
	const char *all = "cpu, cuda";
#else
	const char *all = "cpu";
#endif

	cr_assert_eq(lks_backend_find("cpu"), &lks_backend_cpu);
	cr_assert_null(lks_backend_find("tpu"));
	snprintf(want, sizeof(want), "backend 'tpu' is not available (this build has: %s)", all);
	cr_assert_str_eq(lks_errmsg(), want);
	cr_assert_str_eq(lks_backend_names(names, sizeof(names)), all);
}

struct described { char keys[8][32], values[8][32]; int n; };

static void put(void *arg, const char *key, const char *value)
{
	struct described *d = arg;

	if (d->n < 8) {
		snprintf(d->keys[d->n], sizeof(d->keys[0]), "%s", key);
		snprintf(d->values[d->n++], sizeof(d->values[0]), "%s", value);
	}
}

static const char *described_value(const struct described *d, const char *key)
{
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->keys[i], key))
			return d->values[i];
	return NULL;
}

Test(backend, open_describe_close)
{
	struct described d = { 0 };
	void *ctx;

	cr_assert_eq(lks_be_open(&lks_backend_cpu, 3, &ctx), 0, "%s", lks_errmsg());
	cr_assert_not_null(ctx, "three threads: a pool");
	cr_assert_eq(lks_be_describe(&lks_backend_cpu, ctx, put, &d), 0);
	cr_assert_str_eq(described_value(&d, "backend"), "cpu");
	cr_assert_str_eq(described_value(&d, "threads"), "3");
	cr_assert_not_null(described_value(&d, "isa"));
	lks_be_close(&lks_backend_cpu, ctx);
}

Test(backend, buffers_round_trip)
{
	const lks_backend *be = &lks_backend_cpu;
	float host[37], back[37];
	void *dev;

	for (int i = 0; i < 37; i++)
		host[i] = (float)i * 0.5f - 3.0f;
	cr_assert_eq(lks_be_alloc(be, NULL, sizeof(host), &dev), 0);
	cr_assert_eq((uintptr_t)dev % 64, 0, "64-byte aligned");
	cr_assert_eq(lks_be_upload(be, NULL, dev, host, sizeof(host)), 0);
	cr_assert_eq(lks_be_sync(be, NULL), 0);
	cr_assert_eq(lks_be_download(be, NULL, back, dev, sizeof(back)), 0);
	cr_assert_eq(memcmp(host, back, sizeof(host)), 0);
	cr_assert_eq(lks_be_zero(be, NULL, dev, sizeof(host)), 0);
	cr_assert_eq(lks_be_download(be, NULL, back, dev, sizeof(back)), 0);
	for (int i = 0; i < 37; i++)
		cr_assert_eq(back[i], 0.0f);
	lks_be_free(be, NULL, dev);
}

/* ---- a step goes through the struct ---- */

enum { C_RMS_FWD, C_RMS_BWD, C_RELU_FWD, C_RELU_BWD, C_XENT, C_GATHER, C_SCATTER, C_ADD,
       C_STATS, C_STATS_Q, C_ALLOC, C_FREE, C_N };
static atomic_int counts[C_N];

static int count_rmsnorm_fwd(const lks_backend *be, void *ctx, const float *x, const float *g,
                             int T, int H, float *y, float *rstd, int bf16)
{
	atomic_fetch_add(&counts[C_RMS_FWD], 1);
	return lks_backend_cpu.rmsnorm_fwd(be, ctx, x, g, T, H, y, rstd, bf16);
}

static int count_rmsnorm_bwd(const lks_backend *be, void *ctx, const float *dy, const float *x,
                             const float *g, const float *rstd, int T, int H, float *dx,
                             float *dg, int bf16)
{
	atomic_fetch_add(&counts[C_RMS_BWD], 1);
	return lks_backend_cpu.rmsnorm_bwd(be, ctx, dy, x, g, rstd, T, H, dx, dg, bf16);
}

static int count_relu2_fwd(const lks_backend *be, void *ctx, const float *u, size_t n, float *y,
                           int bf16)
{
	atomic_fetch_add(&counts[C_RELU_FWD], 1);
	return lks_backend_cpu.relu2_fwd(be, ctx, u, n, y, bf16);
}

static int count_relu2_bwd(const lks_backend *be, void *ctx, const float *u, const float *dy,
                           size_t n, float *du, int bf16)
{
	atomic_fetch_add(&counts[C_RELU_BWD], 1);
	return lks_backend_cpu.relu2_bwd(be, ctx, u, dy, n, du, bf16);
}

static int count_cross_entropy(const lks_backend *be, void *ctx, const float *z,
                               const int32_t *target, int T, int V, float grad_scale, float *dz,
                               double *loss)
{
	atomic_fetch_add(&counts[C_XENT], 1);
	return lks_backend_cpu.cross_entropy(be, ctx, z, target, T, V, grad_scale, dz, loss);
}

static int count_gather(const lks_backend *be, void *ctx, const float *table, const int32_t *tok,
                        int T, int H, float *y)
{
	atomic_fetch_add(&counts[C_GATHER], 1);
	return lks_backend_cpu.embed_gather(be, ctx, table, tok, T, H, y);
}

static int count_scatter(const lks_backend *be, void *ctx, const float *dy, const int32_t *tok,
                         int T, int H, float *table_grad)
{
	atomic_fetch_add(&counts[C_SCATTER], 1);
	return lks_backend_cpu.embed_scatter_add(be, ctx, dy, tok, T, H, table_grad);
}

static int count_add(const lks_backend *be, void *ctx, const float *a, const float *b, size_t n,
                     float *y, int bf16)
{
	atomic_fetch_add(&counts[C_ADD], 1);
	return lks_backend_cpu.add(be, ctx, a, b, n, y, bf16);
}

static int count_stats(const lks_backend *be, void *ctx, const float *x, size_t n,
                       lks_tensor_stats *s)
{
	atomic_fetch_add(&counts[C_STATS], 1);
	return lks_backend_cpu.stats_f32(be, ctx, x, n, s);
}

static int count_stats_quant(const lks_backend *be, void *ctx, const lks_quant *q,
                             lks_tensor_stats *s)
{
	atomic_fetch_add(&counts[C_STATS_Q], 1);
	return lks_backend_cpu.stats_quant(be, ctx, q, s);
}

static int count_alloc(const lks_backend *be, void *ctx, size_t bytes, void **out)
{
	atomic_fetch_add(&counts[C_ALLOC], 1);
	return lks_backend_cpu.alloc(be, ctx, bytes, out);
}

static void count_free(const lks_backend *be, void *ctx, void *p)
{
	atomic_fetch_add(&counts[C_FREE], 1);
	lks_backend_cpu.free(be, ctx, p);
}

static lks_backend counting_backend(void)
{
	lks_backend be = lks_backend_cpu;

	be.name = "counting";
	be.rmsnorm_fwd = count_rmsnorm_fwd;
	be.rmsnorm_bwd = count_rmsnorm_bwd;
	be.relu2_fwd = count_relu2_fwd;
	be.relu2_bwd = count_relu2_bwd;
	be.cross_entropy = count_cross_entropy;
	be.embed_gather = count_gather;
	be.embed_scatter_add = count_scatter;
	be.add = count_add;
	be.stats_f32 = count_stats;
	be.stats_quant = count_stats_quant;
	be.alloc = count_alloc;
	be.free = count_free;
	return be;
}

Test(backend, every_op_of_a_step_goes_through_the_struct)
{
	lks_backend be = counting_backend();
	double loss_cpu[3] = { 0 }, loss_counted[3] = { 0 };
	uint64_t hash_cpu, hash_counted;
	int n_cpu, n_counted;
	lks_case c;
	int steps = 3, W = 2, L = 2;

	load_case(two_blocks, NULL, 0, &c);
	train(&c, &lks_backend_cpu, loss_cpu, &hash_cpu, &n_cpu);
	for (int i = 0; i < C_N; i++)
		atomic_store(&counts[i], 0);
	train(&c, &be, loss_counted, &hash_counted, &n_counted);
	/* per rank and step: a norm per block and the final one, forward and backward; an
	   activation per block, forward and backward; one loss; the embedding gathered and
	   its gradient scattered; a residual add per block forward and one backward */
	cr_expect_eq(atomic_load(&counts[C_RMS_FWD]), steps * W * (L + 1));
	cr_expect_eq(atomic_load(&counts[C_RMS_BWD]), steps * W * (L + 1));
	cr_expect_eq(atomic_load(&counts[C_RELU_FWD]), steps * W * L);
	cr_expect_eq(atomic_load(&counts[C_RELU_BWD]), steps * W * L);
	cr_expect_eq(atomic_load(&counts[C_XENT]), steps * W);
	cr_expect_eq(atomic_load(&counts[C_GATHER]), steps * W);
	cr_expect_eq(atomic_load(&counts[C_SCATTER]), steps * W);
	cr_expect_eq(atomic_load(&counts[C_ADD]), steps * W * 2 * L);
	/* the rank's tensors are the backend's memory (parameters, gradients, tokens,
	   targets, activations at least), every buffer given back */
	cr_expect_geq(atomic_load(&counts[C_ALLOC]), W * 5);
	cr_expect_eq(atomic_load(&counts[C_FREE]), atomic_load(&counts[C_ALLOC]));
	/* every stat row was measured by the backend: float tensors and FP8 operands */
	cr_expect_gt(atomic_load(&counts[C_STATS_Q]), 0);
	cr_expect_eq(atomic_load(&counts[C_STATS]) + atomic_load(&counts[C_STATS_Q]), n_counted);
	/* and the wrapper changes no bit */
	cr_expect_eq(n_counted, n_cpu);
	cr_expect_eq(hash_counted, hash_cpu);
	cr_expect_eq(memcmp(loss_counted, loss_cpu, sizeof(loss_cpu)), 0);
	lks_case_release(&c);
}

/* A backend without an op the model needs fails the run with the op's name. */
Test(backend, a_run_on_a_backend_without_an_op_fails_naming_it)
{
	static const struct { size_t off; const char *op; } missing[] = {
		{ offsetof(lks_backend, relu2_bwd), "relu2_bwd" },
		{ offsetof(lks_backend, embed_gather), "embed_gather" },
		{ offsetof(lks_backend, stats_f32), "stats_f32" },
		{ offsetof(lks_backend, sumsq), "sumsq" },  /* the optimizer's, in the runner */
		{ offsetof(lks_backend, adamw), "adamw" },
		{ offsetof(lks_backend, nonfinite), "nonfinite" },  /* the NaN check, untraced too */
		{ offsetof(lks_backend, upload), "upload" },  /* the initial parameters */
	};
	lks_case c;

	load_case(two_blocks, NULL, 0, &c);
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
		lks_backend be = lks_backend_cpu;
		lks_runner_opts o = { .threads = 1, .backend = &be };
		lks_run_result res;
		char want[96];

		be.name = "partial";
		memset((char *)&be + missing[i].off, 0, sizeof(void (*)(void)));
		snprintf(want, sizeof(want), "backend 'partial' does not support %s", missing[i].op);
		cr_expect_neq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", missing[i].op);
		cr_expect(strstr(lks_errmsg(), want), "'%s' lacks '%s'", lks_errmsg(), want);
	}
	lks_case_release(&c);
}

struct opens {
	atomic_int open, close, threads;
	void *ctx[8];           /* what each open gave, in order */
	int local[8];           /* open_rank's local index, in order (-1: by open) */
};

/* a context of the cpu's, recorded (the runner opens them in turn) */
static int counting_open_rank(const lks_backend *be, int threads, int local, void **ctx)
{
	struct opens *k = be->app;
	int i = atomic_load(&k->open);

	if (lks_backend_cpu.open(&lks_backend_cpu, threads, ctx))
		return -1;
	if (i < 8) {
		k->ctx[i] = *ctx;
		k->local[i] = local;
	}
	k->threads = threads;
	atomic_fetch_add(&k->open, 1);
	return 0;
}

static int counting_open(const lks_backend *be, int threads, void **ctx)
{
	return counting_open_rank(be, threads, -1, ctx);
}

static void counting_close(const lks_backend *be, void *ctx)
{
	struct opens *k = be->app;

	for (int i = 0; i < 8 && i < atomic_load(&k->open); i++)
		if (k->ctx[i] == ctx) {  /* one that open gave */
			atomic_fetch_add(&k->close, 1);
			break;
		}
	lks_backend_cpu.close(&lks_backend_cpu, ctx);
}

/* A backend given without a context is opened by the runner once per rank of the
   process, with the threads of a rank (a single rank: all of them), and each context is
   closed once; one without open_rank (version 4) through its open. */
Test(backend, the_runner_opens_a_backend_given_without_context)
{
	struct opens k = { 0 };
	lks_backend be = lks_backend_cpu;
	lks_runner_opts o = { .threads = 2, .backend = &be };
	lks_run_result res;
	lks_case c;

	be.app = &k;
	be.open = counting_open;
	be.close = counting_close;
	be.size = (int)offsetof(lks_backend, open_rank);  /* a version-4 backend */
	load_case(two_blocks, NULL, 0, &c);
	cr_assert_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
	cr_expect_eq(k.open, c.runs[0].world_size);
	cr_expect_eq(k.close, c.runs[0].world_size);
	cr_expect_eq(k.local[0], -1, "a version-4 backend is opened by its open");
	cr_expect_eq(k.threads, c.runs[0].world_size == 1 ? 2 : 1);
	lks_case_release(&c);
}

/* A context given to the runner is shared by the ranks of a process only where the
   backend's memory is the host's: a device backend's (host_memory missing) holds a stream
   and scratch, so with 2 ranks each gets its own, opened by the runner, and the given one
   goes unused; with one rank the given one is used. */
Test(backend, a_device_context_is_never_shared_between_ranks)
{
	struct opens k = { 0 };
	lks_backend be = device_backend();
	lks_runner_opts o = { .threads = 1, .backend = &be };
	lks_run_result res;
	lks_case c;
	void *given;

	be.app = &k;
	be.open_rank = counting_open_rank;
	be.close = counting_close;
	cr_assert_eq(lks_backend_cpu.open(&lks_backend_cpu, 2, &given), 0);  /* a pool: not NULL */
	cr_assert_not_null(given);
	o.backend_ctx = given;
	load_case(two_blocks, NULL, 0, &c);
	cr_assert_eq(c.runs[0].world_size, 2);
	cr_assert_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
	cr_expect_eq(k.open, 2, "a context per rank, not the one given");
	cr_expect_eq(k.close, 2);
	lks_case_release(&c);
	atomic_store(&k.open, 0);
	load_case(two_blocks, (const char *[]){ "run.r.world_size=1" }, 1, &c);
	cr_assert_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
	cr_expect_eq(k.open, 0, "one rank: the given context (%d opened, ws %d)", k.open, c.runs[0].world_size);
	lks_case_release(&c);
	lks_backend_cpu.close(&lks_backend_cpu, given);
}

/* A backend whose memory is not the host's (host_memory missing) has its gradients
   staged through the host for the all-reduce: downloaded once per rank and step at least,
   and the same bits as the CPU's in place. */
Test(backend, a_device_backends_gradients_are_staged_for_the_all_reduce)
{
	lks_backend be = device_backend();
	int W = train_like_cpu(&be, "the staged all-reduce", NULL);

	cr_expect_geq(atomic_load(&downloads), 3 * W);
}

/* update (version 9) made of the cpu's own sumsq, clip and adamw, as update.cu must match
   them; the steps it clipped counted */
static atomic_int updates, clipped;

static int composed_update(const lks_backend *be, void *ctx, float *p, float *g, float *m,
                           float *v, size_t n, const lks_update *u, double *ss)
{
	const lks_backend *cpu = &lks_backend_cpu;
	double norm;

	(void)be;
	atomic_fetch_add(&updates, 1);
	if (cpu->sumsq(cpu, ctx, g, n, ss))
		return -1;
	norm = sqrt(*ss);
	if (u->clip > 0.0f && !(norm <= u->clip)) {
		atomic_fetch_add(&clipped, 1);
		if (cpu->clip(cpu, ctx, g, n, (float)(u->clip / (norm + 1e-6))))
			return -1;
	}
	for (int i = 0; i < u->nparts; i++) {
		const lks_update_part *q = &u->part[i];

		cr_assert(i == 0 || q->off >= u->part[i - 1].off + u->part[i - 1].n, "parts in order");
		cr_assert_leq(q->off + q->n, n);
		if (cpu->adamw(cpu, ctx, p + q->off, g + q->off, m + q->off, v + q->off, q->n, u->lr,
		               u->b1, u->b2, u->eps, q->wd, u->bc1, u->bc2))
			return -1;
	}
	return 0;
}

/* A backend with update (version 9) makes each rank's optimizer step in that one call, and
   the runner calls none of sumsq, clip and adamw (missing here): the same bits as the cpu's,
   with the clip taken and not. */
Test(backend, a_backends_update_is_the_whole_optimizer_step)
{
	lks_backend be = lks_backend_cpu;
	int W;

	be.name = "updating";
	be.update = composed_update;
	be.sumsq = NULL;
	be.clip = NULL;
	be.adamw = NULL;
	W = train_like_cpu(&be, "update", NULL);
	cr_expect_eq(atomic_load(&updates), 3 * W, "once per rank and step");
	atomic_store(&updates, 0);
	atomic_store(&clipped, 0);
	W = train_like_cpu(&be, "update with the clip taken", "optim.clip=0.001");
	cr_expect_eq(atomic_load(&updates), 3 * W);
	cr_expect_eq(atomic_load(&clipped), 3 * W, "every step clipped at a norm of 0.001");
}

/* open_rank (version 5) gives each rank of the process its own context, with its local
   index (so a GPU backend puts it on its own device); the run's bits are the CPU's. */
Test(backend, the_runner_opens_a_context_per_rank_with_its_index)
{
	struct opens k = { 0 };
	lks_backend be = lks_backend_cpu;

	be.app = &k;
	be.name = "per-rank";
	be.open_rank = counting_open_rank;
	be.close = counting_close;
	cr_assert_eq(train_like_cpu(&be, "per-rank contexts", NULL), 2);
	cr_assert_eq(k.open, 2, "one context per rank of the 2");
	cr_expect_eq(k.local[0], 0);
	cr_expect_eq(k.local[1], 1);
	cr_expect_eq(k.close, 2, "each context closed once");
}

static int64_t peak_seen[8];

static int fixed_mem_peak(const lks_backend *be, void *ctx, int64_t *bytes)
{
	*bytes = 123456789;
	return 0;
}

static void on_step_peak(void *arg, const lks_step_row *steps, int nsteps,
                         const lks_stat_row *stats, size_t n, char *const *names, int nnames)
{
	for (int r = 0; r < nsteps && r < 8; r++)
		peak_seen[r] = steps[r].mem_peak;
}

/* Every rank's step row carries its backend's memory high-water mark (mem_peak), and 0
   where the backend does not measure it: the CPU's, or one built before version 4. */
Test(backend, step_rows_carry_the_backends_memory_peak)
{
	lks_backend be = lks_backend_cpu;
	lks_runner_opts o = { .threads = 1, .backend = &be, .on_step = on_step_peak };
	lks_run_result res;
	lks_case c;

	load_case(two_blocks, NULL, 0, &c);
	be.mem_peak = fixed_mem_peak;
	cr_assert_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
	for (int r = 0; r < c.runs[0].world_size; r++)
		cr_expect_eq(peak_seen[r], 123456789, "rank %d", r);
	be.size = (int)offsetof(lks_backend, mem_peak);  /* a version-3 backend */
	cr_assert_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
	for (int r = 0; r < c.runs[0].world_size; r++)
		cr_expect_eq(peak_seen[r], 0, "rank %d", r);
	o.backend = NULL;
	peak_seen[0] = -1;
	cr_assert_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
	cr_expect_eq(peak_seen[0], 0, "the cpu backend does not measure its memory");
	lks_case_release(&c);
}

/* A backend built against version 1 of the struct (its size ends before nonfinite) lacks the
   method even where the bytes past its end are not zero. */
Test(backend, an_older_backend_lacks_the_newer_methods)
{
	struct { lks_backend be; void *past; } old = { lks_backend_cpu, (void *)&old };
	lks_case c;
	lks_runner_opts o = { .threads = 1, .backend = &old.be };
	lks_run_result res;

	old.be.name = "v1";
	old.be.version = 1;
	old.be.size = (int)offsetof(lks_backend, nonfinite);
	load_case(two_blocks, NULL, 0, &c);
	cr_expect_neq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0);
	cr_expect(strstr(lks_errmsg(), "backend 'v1' does not support nonfinite"), "%s",
	          lks_errmsg());
	lks_case_release(&c);
}

/* The CPU's count of NaN and Inf: every exponent bit set, whatever the sign and payload;
   the largest finite values, zeros and subnormals are not counted. */
Test(backend, nonfinite_counts_nan_and_inf_only)
{
	static const uint32_t bits[] = {
		0x7f800000u, 0xff800000u,              /* +-Inf */
		0x7fc00000u, 0xffc00001u, 0x7f800001u,  /* NaNs: quiet, negative, signalling */
		0x7f7fffffu, 0xff7fffffu,              /* +-FLT_MAX */
		0x00000000u, 0x80000000u, 0x00000001u,  /* zeros, the least subnormal */
		0x3f800000u,
	};
	float x[sizeof(bits) / sizeof(bits[0])];
	int64_t n = -1;

	memcpy(x, bits, sizeof(x));
	cr_assert_eq(lks_be_nonfinite(&lks_backend_cpu, NULL, x, sizeof(bits) / sizeof(bits[0]), &n), 0);
	cr_expect_eq(n, 5);
	cr_assert_eq(lks_be_nonfinite(&lks_backend_cpu, NULL, x + 5, 6, &n), 0);
	cr_expect_eq(n, 0);
}

/* A run's 'gemm' key reaches the backend in every GEMM descriptor: the CPU, which has only
   the reference GEMM, refuses 'cublaslt' by name; 'reference' trains as before. */
static int impl_seen = -1;

static int impl_gemm(const lks_backend *be, void *ctx, const lks_gemm *g)
{
	impl_seen = (int)g->impl;
	return lks_backend_cpu.gemm(&lks_backend_cpu, ctx, g);
}

Test(backend, the_runs_gemm_key_reaches_every_gemm)
{
	const char *lib[] = { "run.r.gemm=cublaslt" }, *ref[] = { "run.r.gemm=reference" };
	lks_backend be = lks_backend_cpu;
	lks_runner_opts o = { .threads = 1, .backend = &be };
	lks_run_result res;
	lks_case c;

	be.gemm = impl_gemm;
	load_case(two_blocks, ref, 1, &c);
	cr_assert_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
	cr_expect_eq(impl_seen, LKS_GEMM_REFERENCE);
	lks_case_release(&c);
	load_case(two_blocks, lib, 1, &c);
	cr_expect_neq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0);
	cr_expect_eq(impl_seen, LKS_GEMM_LIBRARY);
	cr_expect(strstr(lks_errmsg(), "has only the reference GEMM (gemm = cublaslt needs "
	                                "--backend cuda)"), "%s", lks_errmsg());
	lks_case_release(&c);
}

static int backend_of(void *arg, const lks_run_rec *run)
{
	snprintf(arg, 32, "%s", run->info.backend);
	return 0;
}

/* The run stores the name of the backend it ran on (the golden class follows from it),
   not a fixed "cpu". */
Test(backend, the_run_stores_its_backend_name)
{
	lks_backend be = counting_backend();
	char stored[32] = "";

	run_stored(&be, NULL, backend_of, stored);
	cr_assert_str_eq(stored, "counting");
}
