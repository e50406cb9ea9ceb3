/*
 * check_pruned.c: two runs compared bit for bit when 'lockstep prune' removed the stat
 * rows of one of them (prune.h): on what both still have, the step rows. The one place
 * 'lockstep diff' and night over night (nightly.c) decide it.
 */
#include <stdio.h>

#include "harness/store/prune.h"
#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "harness/verify/check.h"

int lks_check_run_pruned(lks_store *s, int64_t run_id, int *pruned)
{
	int64_t nt, nstats = 0;

	if (lks_store_run_pruned(s, run_id, pruned))
		return -1;
	if (*pruned)  /* marked: some or all of its rows gone, however many are left */
		return 0;
	if (lks_store_count(s, run_id, LKS_TABLE_TENSORS, &nt))
		return -1;
	if (nt > 0 && lks_store_count(s, run_id, LKS_TABLE_STATS, &nstats))
		return -1;
	*pruned = nt > 0 && nstats == 0;
	if (*pruned) {  /* tensors without stat rows: a tensor trace's, kept in blocks */
		lks_tensor_trace *t;

		if (lks_tensor_trace_open(s, run_id, &t))
			return -1;
		*pruned = !t;
		lks_tensor_trace_free(t);
	}
	return 0;
}

int lks_check_bitwise_kept_runs(lks_store *s, const lks_check_cfg *k, lks_stored_run *a,
                                lks_stored_run *b, int pruned, lks_check_result *res)
{
	static const char *const step_metrics[] = { "loss", "grad_norm" };
	lks_check_cfg c = *k;

	if (!pruned)
		return lks_check_eval_runs(s, k, NULL, a, b, res);
	/* a close check with no tolerance: equal values, NaN never equal */
	c.kind = LKS_CHECK_CLOSE;
	c.rtol = c.atol = 0;
	for (int i = 0; i < 2; i++) {
		snprintf(c.metric, sizeof(c.metric), "%s", step_metrics[i]);
		if (lks_check_eval_runs(s, &c, NULL, a, b, res))
			return -1;
		if (res->verdict != LKS_VERDICT_PASS)
			break;
	}
	return 0;
}

int lks_check_bitwise_kept(lks_store *s, const lks_check_cfg *k, int64_t a, int64_t b,
                           int pruned, lks_check_result *res)
{
	lks_stored_run ta, tb;
	int rc = -1;

	if (!a || !b)  /* "skipped" */
		return lks_check_eval(s, k, NULL, a, b, res);
	lks_stored_run_init(&ta);
	lks_stored_run_init(&tb);
	if (!lks_stored_run_load(s, a, LKS_LOAD_TRACE, &ta)
	    && !lks_stored_run_load(s, b, LKS_LOAD_TRACE, &tb))
		rc = lks_check_bitwise_kept_runs(s, k, &ta, &tb, pruned, res);
	lks_stored_run_release(&ta);
	lks_stored_run_release(&tb);
	return rc;
}
