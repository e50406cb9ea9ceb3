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
	const float *tab = lks_fp8_table(q->fmt);
	size_t ns = lks_quant_nscales(q);
	uint64_t count[4][256] = { { 0 } };  /* four histograms: no store-to-load stalls */
	double ss = 0.0;
	float m = 0.0f, smin = INFINITY;
	int64_t bad = 0;
	lks_stat_row *row;
	va_list ap;

	va_start(ap, fmt);
	row = lks_trace_row(t, ph, fmt, ap);
	va_end(ap);
	if (!row)
		return;
	for (int r = 0; r < q->rows; r++) {
		const uint8_t *c = q->q + (size_t)r * q->ldq;
		int i = 0;

		for (; i + 4 <= q->cols; i += 4) {
			count[0][c[i]]++;
			count[1][c[i + 1]]++;
			count[2][c[i + 2]]++;
			count[3][c[i + 3]]++;
		}
		for (; i < q->cols; i++)
			count[0][c[i]]++;
	}
	/* statistics of the decoded codes from the histogram, in code order: exact counts,
	   so the sum has one fixed order whatever the tensor's shape */
	for (int v = 0; v < 256; v++) {
		uint64_t k = count[0][v] + count[1][v] + count[2][v] + count[3][v];
		float a = fabsf(tab[v]);

		if (!k)
			continue;
		ss += (double)k * ((double)tab[v] * tab[v]);
		bad += isfinite(tab[v]) ? 0 : (int64_t)k;
		m = a > m || isnan(a) ? a : m;
	}
	for (size_t i = 0; i < ns; i++)
		smin = q->scale[i] < smin || isnan(q->scale[i]) ? q->scale[i] : smin;
	row->l2 = sqrt(ss);
	row->amax = m;
	row->nonfinite = bad;
	row->scale = smin;
	row->underflow = (int64_t)q->underflow;
	row->saturated = (int64_t)q->saturated;
	row->hash = lks_hash_rows(q->q, q->rows, q->cols, q->ldq, q->scale, ns * sizeof(float));
}
