/*
 * trace_store_state.c: a run's training state after a step, per rank (table states,
 * schema 12), kept so that a run can resume from it bit for bit. The store keeps the
 * bytes; engine/state.c makes and reads them.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/store/prune.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

int lks_store_put_state(lks_store *s, int64_t run_id, int step, int rank, const void *data,
                        size_t n)
{
	sqlite3_stmt *st;
	int rc;

	if (lks_store_stmt(s, LKS_Q_STATE, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int(st, 2, step);
	sqlite3_bind_int(st, 3, rank);
	sqlite3_bind_blob64(st, 4, data, n, SQLITE_STATIC);
	rc = lks_store_done(s, st);
	sqlite3_clear_bindings(st);  /* the blob is the caller's */
	return rc ? lks_err("%s, keeping the state of run %lld after step %d, rank %d",
	                    lks_errmsg(), (long long)run_id, step, rank) : 0;
}

/* Why a state is not there: prune removes the states of the suites it prunes, and a
   user told that the run kept none would look for a mistake of their own. */
static void lks_state_missing(lks_store *s, int64_t run_id, int step, int rank)
{
	char status[16];
	int pruned = 0;

	if (lks_store_run_status(s, run_id, status, sizeof(status)))
		return;  /* "'DB': no run N" */
	if (!lks_store_run_pruned(s, run_id, &pruned) && pruned)
		lks_err("run %lld has no state after step %d for rank %d: its suite was pruned "
		        "('lockstep prune' removes kept states with the stat rows; 'prune --pin' "
		        "keeps a suite's)", (long long)run_id, step, rank);
	else
		lks_err("run %lld kept no state after step %d for rank %d (a run keeps the steps "
		        "it was asked to: 'resume_from' in a case, 'run --keep-state')",
		        (long long)run_id, step, rank);
}

int lks_store_get_state(lks_store *s, int64_t run_id, int step, int rank, void **data,
                        size_t *n)
{
	sqlite3_stmt *st;
	int rc;

	*data = NULL;
	*n = 0;
	if (lks_store_stmt(s, LKS_Q_GET_STATE, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int(st, 2, step);
	sqlite3_bind_int(st, 3, rank);
	if ((rc = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW) {
		size_t len = (size_t)sqlite3_column_bytes(st, 0);

		if (!(*data = malloc(len ? len : 1))) {
			sqlite3_reset(st);
			return lks_err("out of memory for a state of %zu bytes", len);
		}
		memcpy(*data, sqlite3_column_blob(st, 0), len);
		*n = len;
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = LKS_E_MISSING;
	}
	sqlite3_reset(st);
	if (rc == LKS_E_MISSING)
		lks_state_missing(s, run_id, step, rank);
	return rc;
}
