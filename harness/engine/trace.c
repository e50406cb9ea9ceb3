/* trace.c: per-rank tensor statistics and hashes (see trace.h). */
#include "harness/engine/trace.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/stats.h"

#define LKS_TRACE_JOBS 256  /* jobs in flight before the tracer waits for them */

/* One background measurement; the results wait here, as the rows may move meanwhile. */
struct lks_trace_job {
	size_t row;             /* index in the tracer's rows */
	const float *x;         /* a float tensor (n elements), or NULL for q */
	size_t n;
	lks_quant q;            /* a quantized tensor: codes, scales, shape, format */
	double l2;
	float amax;
	int64_t nonfinite;
	uint64_t hash;
};

void lks_tracer_init(lks_tracer *t, int rank)
{
	memset(t, 0, sizeof(*t));
	t->rank = rank;
}

void lks_tracer_release(lks_tracer *t)
{
	lks_tracer_sync(t);
	free(t->jobs);
	for (int i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	free(t->phases);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

void lks_tracer_begin_step(lks_tracer *t, int step)
{
	lks_tracer_sync(t);  /* the last step's rows are complete before they go */
	t->step = step;
	t->seq = 0;
	t->nrows = 0;
	t->registering = t->nnames == 0;
}

/* The next row, with its name registered in the first step; NULL when out of memory or
   when this step strays from the first step's order. */
static lks_stat_row *lks_trace_row(lks_tracer *t, lks_phase ph, const char *fmt, va_list ap)
{
	lks_stat_row *row;

	if (t->off)
		return NULL;
	if (t->registering) {
		char name[160];

		if (t->nnames == t->capnames) {
			int cap = t->capnames ? 2 * t->capnames : 64;
			char **nn = realloc(t->names, sizeof(*nn) * (size_t)cap);
			lks_phase *np = nn ? realloc(t->phases, sizeof(*np) * (size_t)cap) : NULL;

			if (nn)
				t->names = nn;
			if (!np)
				return NULL;
			t->phases = np;
			t->capnames = cap;
		}
		vsnprintf(name, sizeof(name), fmt, ap);
		if (!(t->names[t->nnames] = strdup(name)))
			return NULL;
		t->phases[t->nnames++] = ph;
	} else if (t->seq >= t->nnames || t->phases[t->seq] != ph) {
		t->broken = 1;
		return NULL;
	}
	if (t->nrows == t->caprows) {
		size_t cap = t->caprows ? 2 * t->caprows : 256;
		lks_stat_row *nr = realloc(t->rows, sizeof(*nr) * cap);

		if (!nr)
			return NULL;
		t->rows = nr;
		t->caprows = cap;
	}
	row = &t->rows[t->nrows++];
	memset(row, 0, sizeof(*row));
	row->step = t->step;
	row->rank = t->rank;
	row->seq = t->seq++;
	row->scale = NAN;
	return row;
}

/* The statistics of a quantized tensor's codes and scales. */
static void lks_quant_stats(const lks_quant *q, double *l2, float *amax, int64_t *nonfinite,
                            uint64_t *hash)
{
	size_t ns = lks_quant_nscales(q);
	lks_fp8_stats st = { 0 };

	/* the statistics of the decoded codes: exact, so the same whatever the shape */
	if (q->ldq == (size_t)q->cols)
		lks_fp8_stats_add(&st, q->q, (size_t)q->rows * (size_t)q->cols, q->fmt);
	else
		for (int r = 0; r < q->rows; r++)
			lks_fp8_stats_add(&st, q->q + (size_t)r * q->ldq, (size_t)q->cols, q->fmt);
	lks_fp8_stats_result(&st, q->fmt, l2, amax, nonfinite);
	*hash = lks_hash_rows(q->q, q->rows, q->cols, q->ldq, q->scale, ns * sizeof(float));
}

static void lks_trace_job_run(void *arg)
{
	struct lks_trace_job *j = arg;

	if (j->x)
		lks_stats_f32(j->x, j->n, &j->l2, &j->amax, &j->nonfinite, &j->hash);
	else
		lks_quant_stats(&j->q, &j->l2, &j->amax, &j->nonfinite, &j->hash);
}

/* A background job for row, or NULL: measure it now (no thread, no memory). */
static struct lks_trace_job *lks_trace_job_new(lks_tracer *t, const lks_stat_row *row)
{
	if (!t->bg)
		return NULL;
	if (!t->jobs && !(t->jobs = malloc(sizeof(*t->jobs) * LKS_TRACE_JOBS)))
		return NULL;
	t->capjobs = LKS_TRACE_JOBS;
	if (t->njobs == t->capjobs)
		lks_tracer_sync(t);
	memset(&t->jobs[t->njobs], 0, sizeof(t->jobs[0]));
	t->jobs[t->njobs].row = (size_t)(row - t->rows);
	return &t->jobs[t->njobs++];
}

void lks_tracer_sync(lks_tracer *t)
{
	if (!t->njobs)
		return;
	lks_bg_wait(t->bg, &t->group);
	for (int i = 0; i < t->njobs; i++) {
		const struct lks_trace_job *j = &t->jobs[i];
		lks_stat_row *row = &t->rows[j->row];

		row->l2 = j->l2;
		row->amax = j->amax;
		row->nonfinite = j->nonfinite;
		row->hash = j->hash;
	}
	t->njobs = 0;
}

static void lks_trace_vf32(lks_tracer *t, lks_phase ph, float *x, size_t n, int kept,
                           const char *fmt, va_list ap)
{
	lks_stat_row *row = lks_trace_row(t, ph, fmt, ap);
	struct lks_trace_job *j;

	if (!row)
		return;
	/* the recompute repeats the forward's names; the fault struck the forward only */
	if (t->fault && ph != LKS_PHASE_RECOMPUTE) {
		int hit = lks_fault_tensor(t->fault, t->step, t->rank, t->names[row->seq], x, n);

		t->fault_hits += hit > 0;
		t->fault_failed |= hit < 0;
	}
	if (kept && (j = lks_trace_job_new(t, row))) {
		j->x = x;
		j->n = n;
		lks_bg_post(t->bg, &t->group, lks_trace_job_run, j);
		return;
	}
	lks_stats_f32(x, n, &row->l2, &row->amax, &row->nonfinite, &row->hash);
}

void lks_trace_f32(lks_tracer *t, lks_phase ph, float *x, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lks_trace_vf32(t, ph, x, n, 0, fmt, ap);
	va_end(ap);
}

void lks_trace_f32_kept(lks_tracer *t, lks_phase ph, float *x, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lks_trace_vf32(t, ph, x, n, 1, fmt, ap);
	va_end(ap);
}

void lks_trace_quant(lks_tracer *t, lks_phase ph, const lks_quant *q, const char *fmt, ...)
{
	size_t ns = lks_quant_nscales(q);
	float smin = INFINITY;
	struct lks_trace_job *j;
	lks_stat_row *row;
	va_list ap;

	va_start(ap, fmt);
	row = lks_trace_row(t, ph, fmt, ap);
	va_end(ap);
	if (!row)
		return;
	for (size_t i = 0; i < ns; i++)
		smin = q->scale[i] < smin || isnan(q->scale[i]) ? q->scale[i] : smin;
	row->scale = smin;
	row->underflow = (int64_t)q->underflow;
	row->saturated = (int64_t)q->saturated;
	if ((j = lks_trace_job_new(t, row))) {
		j->q = *q;
		lks_bg_post(t->bg, &t->group, lks_trace_job_run, j);
		return;
	}
	lks_quant_stats(q, &row->l2, &row->amax, &row->nonfinite, &row->hash);
}
