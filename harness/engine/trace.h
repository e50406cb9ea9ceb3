/*
 * trace.h: what one rank records of a step: per tensor, in execution order, L2 norm, amax,
 * non-finite count, FP8 scale, underflow and saturation counts and an XXH3-64 hash of the
 * bits (DESIGN.md, Trace). Names are formatted and kept only in the first step; later steps
 * must visit the same tensors in the same order, which the tracer checks.
 */
#ifndef LKS_HARNESS_TRACE_H
#define LKS_HARNESS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "harness/store/trace_store.h"
#include "kernels/backend.h"
#include "kernels/bg.h"

struct lks_trace_job;

typedef struct lks_tracer {
	int rank, step;
	const lks_backend *be;  /* measures the tensors (stats_f32, stats_quant) */
	void *bectx;
	int seq;                /* position of the next tensor in this step */
	int registering;        /* first step: names are being recorded */
	char **names;           /* (nnames) */
	lks_phase *phases;      /* (nnames) */
	int nnames, capnames;
	lks_stat_row *rows;     /* (nrows) this step's rows */
	size_t nrows, caprows;
	int broken;             /* a later step visited other tensors than the first */
	int off;                /* record nothing (to measure what tracing costs) */
	int failed;             /* the backend could not measure a tensor, or a wrapper of it
	                           failed where it was shown one (lks_err has why) */
	lks_bg *bg;             /* set: kept tensors are measured there, in the background, and
	                           so is every tensor of a backend that measures in two halves
	                           (backend.h measure_begin: taken now, measured there) */
	lks_jobs group;         /* those jobs */
	struct lks_trace_job *jobs;  /* (capjobs) posted and not yet collected */
	int njobs, capjobs;
} lks_tracer;

void lks_tracer_init(lks_tracer *t, int rank, const lks_backend *be, void *bectx);
void lks_tracer_release(lks_tracer *t);
void lks_tracer_begin_step(lks_tracer *t, int step);

/* The stats of n float32 values (the backend's stats_f32); name is a printf format (used in the
   first step only). A backend that cannot measure leaves the row's stats zero and sets
   failed (lks_err has why). The backend is shown x first (backend.h traced): a wrapper of it
   (a planted fault) may change x, and the model goes on with what was measured: x is the
   tensor the model uses next. */
void lks_trace_f32(lks_tracer *t, lks_phase ph, float *x, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* As lks_trace_f32, for a tensor the caller keeps unchanged until lks_tracer_sync: with a
   background thread (t->bg), it is measured there (the row is complete after the sync). */
void lks_trace_f32_kept(lks_tracer *t, lks_phase ph, float *x, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Waits for the background jobs and completes their rows: before anything reads the rows
   or changes a kept tensor. */
void lks_tracer_sync(lks_tracer *t);
/* The stats of a quantized tensor: l2 and amax of the decoded codes (in scaled units), the
   smallest scale, the cast's counts, a hash of codes and scales. q's codes and scales are
   kept, as with lks_trace_f32_kept, until lks_tracer_sync. */
void lks_trace_quant(lks_tracer *t, lks_phase ph, const lks_quant *q, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
