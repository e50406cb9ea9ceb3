/*
 * run_trace.h: the old name of a stored run (run.h), kept only so that report/ builds
 * while it moves to lks_stored_run: lks_run_trace_load is lks_stored_run_load(...,
 * LKS_LOAD_TRACE, ...), _step is lks_stored_run_step, _row, _find and _release the same
 * with the new prefix. Nothing else may include it; delete it with the report's last use.
 */
#ifndef LKS_HARNESS_RUN_TRACE_H
#define LKS_HARNESS_RUN_TRACE_H

#include "harness/store/run.h"

typedef lks_stored_run lks_run_trace;

static inline int lks_run_trace_load(lks_store *s, int64_t run_id, lks_run_trace *t)
{
	return lks_stored_run_load(s, run_id, LKS_LOAD_TRACE, t);
}

static inline void lks_run_trace_release(lks_run_trace *t)
{
	lks_stored_run_release(t);
}

static inline int lks_run_trace_step(lks_store *s, lks_run_trace *t, int step)
{
	(void)s;  /* the run reads from the store it was loaded from */
	return lks_stored_run_step(t, step);
}

static inline const lks_stat_row *lks_run_trace_row(const lks_run_trace *t, int rank, int seq)
{
	return lks_stored_run_row(t, rank, seq);
}

static inline int lks_run_trace_find(const lks_run_trace *t, const char *name, lks_phase phase,
                                     int occ)
{
	return lks_stored_run_find(t, name, phase, occ);
}

#endif
