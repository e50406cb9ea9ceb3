/*
 * bench_step_sides.c: runs of a case timed step by step for 'lockstep bench step'
 * (bench_step.h): the timing backend, what on_step records of a run (times, losses, the
 * kernels' share, and captured rows as a stored run), and the sides of a comparison run
 * in rounds.
 *
 * Step times are taken between successive on_step callbacks, so they cover the whole
 * step (forward, backward, all-reduce, update, stats, store) and nothing of the run's
 * setup; step 0 is left out of every time (first touch of the buffers, the tensor list).
 */
#include "harness/bench/bench_step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/bench/bench.h"
#include "kernels/backend.h"
#include "kernels/cpu/backend_cpu.h"
#include "kernels/err.h"
#include "kernels/clock.h"

/* A timed method: the CPU backend's call, its time added to kernel k's. */
#define LKS_STEP_TIMED(k, call) \
	do { \
		struct lks_step_timer *t_ = be->app; \
		int64_t t0_ = lks_now_ns(); \
		int rc_ = call; \
                                                                               \
		__atomic_fetch_add(&t_->ns[k], lks_now_ns() - t0_, __ATOMIC_RELAXED); \
		return rc_; \
	} while (0)

static int lks_step_timed_gemm(const lks_backend *be, void *ctx, const lks_gemm *g)
{
	LKS_STEP_TIMED(LKS_STEP_GEMM, lks_backend_cpu.gemm(&lks_backend_cpu, ctx, g));
}

static int lks_step_timed_quantize(const lks_backend *be, void *ctx, lks_quant *q)
{
	LKS_STEP_TIMED(LKS_STEP_QUANT, lks_backend_cpu.quantize(&lks_backend_cpu, ctx, q));
}

static int lks_step_timed_attn_fwd(const lks_backend *be, void *ctx, const float *qkv,
                                   const float *rope, const lks_attn_shape *a, float *qkvr,
                                   float *o, float *stat, int bf16)
{
	LKS_STEP_TIMED(LKS_STEP_ATTN, lks_backend_cpu.attn_fwd(&lks_backend_cpu, ctx, qkv, rope, a,
	                                                         qkvr, o, stat, bf16));
}

static int lks_step_timed_attn_bwd(const lks_backend *be, void *ctx, const float *qkvr,
                                   const float *stat, const float *dout, const float *rope,
                                   const lks_attn_shape *a, float *dqkv, int bf16)
{
	LKS_STEP_TIMED(LKS_STEP_ATTN, lks_backend_cpu.attn_bwd(&lks_backend_cpu, ctx, qkvr, stat,
	                                                         dout, rope, a, dqkv, bf16));
}

int lks_step_rec_init(struct lks_step_rec *r, int steps, int capture)
{
	memset(r, 0, sizeof(*r));
	r->cap = steps;
	r->capture = capture;
	r->dt = calloc((size_t)steps, sizeof(double));
	r->loss = calloc((size_t)steps, sizeof(double));
	lks_stored_run_init(&r->rows);
	if (!r->dt || !r->loss)
		return lks_err("out of memory");
	for (int k = 0; k < LKS_STEP_NK; k++)
		if (!(r->kt[k] = calloc((size_t)steps, sizeof(double))))
			return lks_err("out of memory");
	return 0;
}

void lks_step_rec_release(struct lks_step_rec *r)
{
	free(r->dt);
	free(r->loss);
	for (int k = 0; k < LKS_STEP_NK; k++)
		free(r->kt[k]);
	lks_stored_run_release(&r->rows);
	memset(r, 0, sizeof(*r));
}

/* Ready for another run into the same buffers; captured rows stay unless this run
   captures anew. */
static void lks_step_rec_reset(struct lks_step_rec *r)
{
	r->n = 0;
	if (r->capture > 0)
		lks_stored_run_release(&r->rows);
	for (int k = 0; k < LKS_STEP_NK; k++)
		r->prev[k] = r->timer ? r->timer->ns[k] : 0;
	r->t_prev = lks_now();
}

/* on_step cannot fail, so a capture that runs out of memory stops capturing (capture = -1)
   and the replay reports it. */
static void lks_step_capture(struct lks_step_rec *r, const lks_step_row *steps, int nsteps,
                             const lks_stat_row *stats, size_t nstats)
{
	r->rows.W = nsteps;
	if (lks_stored_run_add_step(&r->rows, steps, nsteps, stats, nstats))
		r->capture = -1;
}

static void lks_step_on_step(void *arg, const lks_step_row *steps, int nsteps,
                             const lks_stat_row *stats, size_t nstats, char *const *names,
                             int nnames)
{
	struct lks_step_rec *r = arg;
	double now = lks_now(), loss = 0.0;

	(void)names;
	(void)nnames;
	if (r->n >= r->cap)
		return;
	for (int k = 0; k < nsteps; k++)
		loss += steps[k].loss;
	r->loss[r->n] = loss / nsteps;
	r->dt[r->n] = now - r->t_prev;
	for (int k = 0; r->timer && k < LKS_STEP_NK; k++) {
		int64_t ns = __atomic_load_n(&r->timer->ns[k], __ATOMIC_RELAXED);

		r->kt[k][r->n] = 1e-9 * (double)(ns - r->prev[k]);
		r->prev[k] = ns;
	}
	r->nstat_rows = nstats;
	r->nranks = nsteps;
	if (r->capture > 0)
		lks_step_capture(r, steps, nsteps, stats, nstats);
	r->n++;
	/* the callback's own work (the capture) is charged to no step */
	r->t_prev = lks_now();
}

/* Mean of v[1..n): step 0 is the warm-up. */
static double lks_step_mean(const double *v, int n)
{
	double s = 0.0;

	for (int i = 1; i < n; i++)
		s += v[i];
	return n > 1 ? s / (n - 1) : NAN;
}

int lks_step_run(const lks_case *c, const lks_run_cfg *run, lks_store *store,
                        lks_runner_opts o, struct lks_step_rec *rec, lks_run_result *res)
{
	o.on_step = lks_step_on_step;
	o.on_step_arg = rec;
	lks_step_rec_reset(rec);
	if (lks_run(c, run, store, &o, res))
		return lks_err("run '%s': %s", run->name, lks_errmsg());
	return 0;
}

/* ---- the sides of a comparison, timed in rounds (bench_stats.c) ---- */

int lks_step_sides_init(struct lks_step_sides *S, struct lks_step_side *side, int n,
                               int steps, int rounds, int capture)
{
	size_t cells = (size_t)n * (size_t)(rounds > 0 ? rounds : 1);

	memset(S, 0, sizeof(*S));
	S->side = side;
	S->n = n;
	S->steps = steps;
	S->rounds = rounds;
	if (!(S->t = calloc(cells, sizeof(double))))
		return lks_err("out of memory");
	for (int k = 0; k < LKS_STEP_NK; k++)
		if (!(S->kt[k] = calloc(cells, sizeof(double))))
			return lks_err("out of memory");
	for (int k = 0; k < n; k++) {
		struct lks_step_side *s = &side[k];

		if (lks_step_rec_init(&s->rec, steps, capture == k))
			return -1;
		if (s->wrap && s->gemm_threads > 1 && lks_pool_create(s->gemm_threads, &s->pool))
			return -1;
		s->timer.be = lks_backend_cpu;  /* every other method as the CPU's, on its pool */
		s->timer.be.app = &s->timer;
		s->timer.be.gemm = lks_step_timed_gemm;
		s->timer.be.quantize = lks_step_timed_quantize;
		s->timer.be.attn_fwd = lks_step_timed_attn_fwd;
		s->timer.be.attn_bwd = lks_step_timed_attn_bwd;
		s->rec.timer = s->wrap ? &s->timer : NULL;
	}
	return 0;
}

void lks_step_sides_release(struct lks_step_sides *S)
{
	for (int k = 0; S->side && k < S->n; k++) {
		lks_step_rec_release(&S->side[k].rec);
		lks_pool_free(S->side[k].pool);
		S->side[k].pool = NULL;
	}
	free(S->t);
	for (int k = 0; k < LKS_STEP_NK; k++)
		free(S->kt[k]);
	memset(S, 0, sizeof(*S));
}

/* lks_bench_rep_fn: one run of side k; its mean step time (step 0 left out). */
static double lks_step_side_run(void *arg, int k, int round)
{
	struct lks_step_sides *S = arg;
	struct lks_step_side *s = &S->side[k];
	lks_runner_opts o = { .steps = S->steps, .threads = s->threads, .no_trace = s->no_trace,
	                      .mark = "bench step" };
	lks_bg_counts b0, b1;
	lks_run_result res;
	double mean;

	if (s->wrap) {
		/* the runner gives a single rank its GEMM pool only when no backend is passed,
		   so the wrapper brings its own */
		o.backend = &s->timer.be;
		o.backend_ctx = s->pool;
		o.pool = s->pool;
	} else if (s->be) {
		o.backend = s->be;
		o.backend_ctx = s->bectx;
	}
	if (round >= 0 && s->rec.capture > 0)  /* the warm-up's rows suffice */
		s->rec.capture = 0;
	lks_bg_counts_get(&b0);
	if (lks_step_run(s->c, s->run, s->store, o, &s->rec, &res))
		return -1.0;
	lks_bg_counts_get(&b1);
	mean = lks_step_mean(s->rec.dt, s->rec.n);
	s->final_loss = res.last_loss;
	if (round < 0)
		return mean;
	s->bg.cpu_ns += b1.cpu_ns - b0.cpu_ns;
	s->bg.jobs_thread += b1.jobs_thread - b0.jobs_thread;
	s->bg.jobs_waiter += b1.jobs_waiter - b0.jobs_waiter;
	s->bg.wait_ns += b1.wait_ns - b0.wait_ns;
	for (int i = 0; i < s->rec.n; i++)
		s->wall += s->rec.dt[i];
	s->steps += s->rec.n;
	for (int j = 0; j < LKS_STEP_NK; j++)
		S->kt[j][(size_t)round * S->n + k] = lks_step_mean(s->rec.kt[j], s->rec.n);
	return mean;
}

int lks_step_sides_time(struct lks_step_sides *S, int warmup)
{
	return lks_bench_rounds(lks_step_side_run, S, S->n, warmup, S->rounds, S->t);
}

/* The median over rounds of num / den of side k, both (rounds, n). */
double lks_step_share(const struct lks_step_sides *S, const double *num, int k)
{
	double *v = malloc(sizeof(double) * (size_t)(S->rounds > 0 ? S->rounds : 1));
	lks_bench_spread sp = { .median = NAN };

	if (v) {
		for (int r = 0; r < S->rounds; r++)
			v[r] = num[(size_t)r * S->n + k] / S->t[(size_t)r * S->n + k];
		lks_bench_spread_of(v, S->rounds, &sp);
		free(v);
	}
	return sp.median;
}

/* "+4.1%" style: a ratio r as a change in percent. */
static void lks_step_pct(char *buf, size_t size, double r)
{
	snprintf(buf, size, "%+.1f%%", 100.0 * (r - 1.0));
}

/* Prints the median step time of side k and, for k > 0 against side base, the change per
   round: its median, interquartile range, min-max and the number of rounds. */
void lks_step_print_side(const struct lks_step_sides *S, int k, int base, int width)
{
	lks_bench_spread ms, d;
	char med[32], lo[32], hi[32], iqr[80], range[80];

	lks_bench_per_round(S->t, S->n, S->rounds, k, -1, &ms);
	printf("   %-*s %9.3f", width, S->side[k].label, 1e3 * ms.median);
	if (k == base || lks_bench_per_round(S->t, S->n, S->rounds, k, base, &d)) {
		printf("\n");
		return;
	}
	lks_step_pct(med, sizeof(med), d.median);
	lks_step_pct(lo, sizeof(lo), d.q1);
	lks_step_pct(hi, sizeof(hi), d.q3);
	snprintf(iqr, sizeof(iqr), "%s..%s", lo, hi);
	lks_step_pct(lo, sizeof(lo), d.min);
	lks_step_pct(hi, sizeof(hi), d.max);
	snprintf(range, sizeof(range), "%s..%s", lo, hi);
	printf(" %9s %17s %17s %6d\n", med, iqr, range, d.n);
}

void lks_step_print_head(int width, const char *vs)
{
	printf("   %-*s %9s %9s %17s %17s %6s\n", width, "configuration", "ms/step", vs, "IQR",
	       "min-max", "rounds");
}

/* What the background thread did in side k's timed runs, in one line. */
void lks_step_print_bg(const struct lks_step_side *s)
{
	int64_t jobs = s->bg.jobs_thread + s->bg.jobs_waiter;

	if (!s->steps)
		return;
	printf("   background thread (idle priority): %.3f ms CPU/step = %.1f%% of the step's wall "
	       "time;\n   the step waited %.3f ms/step for its jobs, %.1f%% of which the waiting "
	       "thread ran itself\n", 1e3 * 1e-9 * (double)s->bg.cpu_ns / s->steps,
	       100.0 * 1e-9 * (double)s->bg.cpu_ns / s->wall,
	       1e3 * 1e-9 * (double)s->bg.wait_ns / s->steps,
	       jobs ? 100.0 * (double)s->bg.jobs_waiter / (double)jobs : 0.0);
}
