/*
 * trace_store_health.c: GPU health readings of a run (the health table, schema version 5;
 * trace_store.h). A reading is an integer, or text (a device's name, its NVML errors, or
 * why NVML is absent); the value column holds either, as SQLite lets a column do.
 */
#include <string.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

int lks_store_health(lks_store *s, int64_t run_id, const lks_health_row *rows, int n)
{
	sqlite3_stmt *st;
	int rc = -1;

	if (lks_store_stmt(s, LKS_Q_HEALTH, &st) || lks_store_exec(s, LKS_Q_BEGIN))
		return -1;
	for (int i = 0; i < n; i++) {
		const lks_health_row *r = &rows[i];
		const lks_val v[] = { lks_val_int(run_id), lks_val_text(r->phase),
		                      lks_val_index(r->device), lks_val_text(r->key),
		                      r->text ? lks_val_text(r->text) : lks_val_int(r->value) };

		if (!r->phase || !r->key
		    || (strcmp(r->phase, "before") && strcmp(r->phase, "after"))) {
			lks_err("'%s': run %lld: a health row needs a key and the phase before or after",
			        lks_store_path(s), (long long)run_id);
			goto out;
		}
		lks_store_bind(st, 1, v, LKS_NVALS(v));
		if (lks_store_done(s, st))
			goto out;
	}
	rc = 0;
out:
	return lks_store_batch_end(s, st, rc);
}

struct lks_health_walk {
	int (*fn)(void *arg, const lks_health_row *row);
	void *arg;
};

static int lks_row_health(sqlite3_stmt *st, void *ctx)
{
	struct lks_health_walk *w = ctx;
	int text = sqlite3_column_type(st, 3) == SQLITE_TEXT;
	lks_health_row r = {
		.phase = lks_column_text(st, 0),
		.device = lks_column_index(st, 1),
		.key = lks_column_text(st, 2),
		.value = text ? 0 : sqlite3_column_int64(st, 3),
		.text = text ? lks_column_text(st, 3) : NULL,
	};

	return w->fn(w->arg, &r);
}

int lks_store_get_health(lks_store *s, int64_t run_id,
                         int (*fn)(void *arg, const lks_health_row *row), void *arg)
{
	const lks_val v[] = { lks_val_int(run_id) };
	struct lks_health_walk w = { fn, arg };

	return lks_store_rows(s, LKS_Q_GET_HEALTH, v, LKS_NVALS(v), lks_row_health, &w);
}
