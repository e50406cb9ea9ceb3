/* trace.c: per-rank tensor statistics and hashes (see trace.h). */
#include "harness/engine/trace.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/err.h"

#define LKS_TRACE_JOBS 256  /* jobs in flight before the tracer waits for them */

/* One background measurement; the results wait here, as the rows may move meanwhile. */
struct lks_trace_job {
	const lks_tracer *t;
	size_t row;             /* index in the tracer's rows */
	const float *x;         /* a float tensor (n elements), or NULL for q */
	size_t n;
	lks_quant q;            /* a quantized tensor: codes, scales, shape, format */
	void *begun;            /* the backend's, from measure_begin: what it took of x or q
	                           (NULL: the job measures x or q itself) */
	lks_tensor_stats st;
	int rc;
};

void lks_tracer_init(lks_tracer *t, int rank, const lks_backend *be, void *bectx)
{
	memset(t, 0, sizeof(*t));
	t->rank = rank;
	t->be = be;
	t->bectx = bectx;
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

/* The row's statistics from the backend: a float tensor's (stats_f32), else q's. */
static int lks_trace_measure(const lks_tracer *t, const float *x, size_t n, const lks_quant *q,
                             lks_tensor_stats *st)
{
	return x ? lks_be_stats_f32(t->be, t->bectx, x, n, st)
	         : lks_be_stats_quant(t->be, t->bectx, q, st);
}

static void lks_trace_job_run(void *arg)
{
	struct lks_trace_job *j = arg;

	j->rc = j->begun ? lks_be_measure_end(j->t->be, j->t->bectx, j->begun, &j->st)
	                 : lks_trace_measure(j->t, j->x, j->n, &j->q, &j->st);
}

/* The row gets st, or, when the backend could not measure, stays zero and the tracer
   failed. */
static void lks_trace_fill(lks_tracer *t, lks_stat_row *row, int rc, const lks_tensor_stats *st,
                           int quant)
{
	if (rc) {
		t->failed = 1;
		return;
	}
	row->l2 = st->l2;
	row->amax = st->amax;
	row->nonfinite = st->nonfinite;
	row->hash = st->hash;
	if (quant) {
		row->scale = st->scale;
		row->underflow = st->underflow;
		row->saturated = st->saturated;
	}
}

/* A background job for row, or NULL: measure it now (no thread, no memory). A job is for
   a tensor the step keeps until the sync (kept), or for any tensor of a backend that
   measures in two halves: it takes the tensor now (measure_begin), and the job ends the
   measurement. */
static struct lks_trace_job *lks_trace_job_new(lks_tracer *t, const lks_stat_row *row,
                                               int kept)
{
	if (!t->bg || !(kept || lks_be_measures_later(t->be)))
		return NULL;
	if (!t->jobs && !(t->jobs = malloc(sizeof(*t->jobs) * LKS_TRACE_JOBS)))
		return NULL;
	t->capjobs = LKS_TRACE_JOBS;
	if (t->njobs == t->capjobs)
		lks_tracer_sync(t);
	memset(&t->jobs[t->njobs], 0, sizeof(t->jobs[0]));
	t->jobs[t->njobs].t = t;
	t->jobs[t->njobs].row = (size_t)(row - t->rows);
	return &t->jobs[t->njobs++];
}

/* Posts j, for x (n floats) or, x NULL, q; with a backend that measures in two halves the
   tensor is taken now. When it cannot be, j is dropped and row failed. */
static void lks_trace_job_post(lks_tracer *t, struct lks_trace_job *j, lks_stat_row *row,
                               const float *x, size_t n, const lks_quant *q)
{
	j->x = x;
	j->n = n;
	if (q)
		j->q = *q;
	if (lks_be_measures_later(t->be)
	    && lks_be_measure_begin(t->be, t->bectx, x, n, q, &j->begun)) {
		t->njobs--;  /* j is the last job */
		lks_trace_fill(t, row, -1, NULL, 0);
		return;
	}
	lks_bg_post(t->bg, &t->group, lks_trace_job_run, j);
}

void lks_tracer_sync(lks_tracer *t)
{
	if (!t->njobs)
		return;
	lks_bg_wait(t->bg, &t->group);
	for (int i = 0; i < t->njobs; i++) {
		const struct lks_trace_job *j = &t->jobs[i];

		if (j->rc)  /* the job's message stayed on the thread that ran it */
			lks_err("backend '%s' could not measure '%s' of step %d", t->be->name,
			        t->names[t->rows[j->row].seq], t->step);
		lks_trace_fill(t, &t->rows[j->row], j->rc, &j->st, !j->x);
	}
	t->njobs = 0;
}

static void lks_trace_vf32(lks_tracer *t, lks_phase ph, float *x, size_t n, int kept,
                           const char *fmt, va_list ap)
{
	lks_stat_row *row = lks_trace_row(t, ph, fmt, ap);
	struct lks_trace_job *j;
	lks_tensor_stats st;

	if (!row)
		return;
	/* shown to the backend's wrappers before it is measured (a planted fault may strike) */
	if (lks_be_traced(t->be, t->bectx, x, n, t->names[row->seq], (int)ph))
		t->failed = 1;
	if ((j = lks_trace_job_new(t, row, kept))) {
		lks_trace_job_post(t, j, row, x, n, NULL);
		return;
	}
	lks_trace_fill(t, row, lks_trace_measure(t, x, n, NULL, &st), &st, 0);
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
	struct lks_trace_job *j;
	lks_stat_row *row;
	lks_tensor_stats st;
	va_list ap;

	va_start(ap, fmt);
	row = lks_trace_row(t, ph, fmt, ap);
	va_end(ap);
	if (!row)
		return;
	if ((j = lks_trace_job_new(t, row, 1))) {
		lks_trace_job_post(t, j, row, NULL, 0, q);
		return;
	}
	lks_trace_fill(t, row, lks_trace_measure(t, NULL, 0, q, &st), &st, 1);
}
