/* trace.c: per-rank tensor statistics and hashes (see trace.h). */
#include "harness/trace.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/stats.h"

void lks_tracer_init(lks_tracer *t, int rank)
{
	memset(t, 0, sizeof(*t));
	t->rank = rank;
}

void lks_tracer_release(lks_tracer *t)
{
	for (int i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	free(t->phases);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

void lks_tracer_begin_step(lks_tracer *t, int step)
{
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

void lks_trace_f32(lks_tracer *t, lks_phase ph, float *x, size_t n, const char *fmt, ...)
{
	va_list ap;
	lks_stat_row *row;

	va_start(ap, fmt);
	row = lks_trace_row(t, ph, fmt, ap);
	va_end(ap);
	if (!row)
		return;
	/* the recompute repeats the forward's names; the fault struck the forward only */
	if (t->fault && ph != LKS_PHASE_RECOMPUTE) {
		int hit = lks_fault_tensor(t->fault, t->step, t->rank, t->names[row->seq], x, n);

		t->fault_hits += hit > 0;
		t->fault_failed |= hit < 0;
	}
	lks_stats_f32(x, n, &row->l2, &row->amax, &row->nonfinite, &row->hash);
}

void lks_trace_quant(lks_tracer *t, lks_phase ph, const lks_quant *q, const char *fmt, ...)
{
	size_t ns = lks_quant_nscales(q);
	lks_fp8_stats st = { 0 };
	float smin = INFINITY;
	lks_stat_row *row;
	va_list ap;

	va_start(ap, fmt);
	row = lks_trace_row(t, ph, fmt, ap);
	va_end(ap);
	if (!row)
		return;
	/* the statistics of the decoded codes: exact, so the same whatever the shape */
	if (q->ldq == (size_t)q->cols)
		lks_fp8_stats_add(&st, q->q, (size_t)q->rows * (size_t)q->cols, q->fmt);
	else
		for (int r = 0; r < q->rows; r++)
			lks_fp8_stats_add(&st, q->q + (size_t)r * q->ldq, (size_t)q->cols, q->fmt);
	lks_fp8_stats_result(&st, q->fmt, &row->l2, &row->amax, &row->nonfinite);
	for (size_t i = 0; i < ns; i++)
		smin = q->scale[i] < smin || isnan(q->scale[i]) ? q->scale[i] : smin;
	row->scale = smin;
	row->underflow = (int64_t)q->underflow;
	row->saturated = (int64_t)q->saturated;
	row->hash = lks_hash_rows(q->q, q->rows, q->cols, q->ldq, q->scale, ns * sizeof(float));
}
