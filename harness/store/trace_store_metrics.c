/*
 * trace_store_metrics.c: an imported run (lockstep import) written in one transaction, and
 * its metric rows read back (trace_store.h, "imported runs"). The run row, its step rows
 * (loss, grad norm, lr and step time where the log has them, so that list, diff and report
 * see an imported run as they see any) and its metric rows are all inside the BEGIN
 * IMMEDIATE of lks_store_import_begin: a log that turns out bad half way stores nothing.
 * A followed log (lockstep import --follow) commits each step as it completes
 * (lks_store_import_commit): what came before a bad line or a divergence stays stored.
 */
#include <string.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

static const char *const lks_metric_kind_names[] = { "numerics", "performance" };

const char *lks_metric_kind_name(lks_metric_kind k)
{
	return (unsigned)k < 2 ? lks_metric_kind_names[k] : NULL;
}

int lks_store_import_begin(lks_store *s, const lks_run_info *info, int64_t *run_id)
{
	if (lks_store_exec(s, LKS_Q_BEGIN))
		return -1;
	if (lks_store_begin_run(s, info, run_id)) {
		lks_store_rollback(s);
		return -1;
	}
	return 0;
}

int lks_store_import_rows(lks_store *s, int64_t run_id, const lks_step_row *step,
                          const lks_metric_row *rows, int n)
{
	sqlite3_stmt *st;

	if (lks_store_step_rows(s, run_id, step, 1) || lks_store_stmt(s, LKS_Q_METRIC, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	for (int i = 0; i < n; i++) {
		const lks_metric_row *r = &rows[i];
		const char *kind = lks_metric_kind_name(r->kind);
		const lks_val v[] = { lks_val_int(r->step), lks_val_int(r->rank), lks_val_text(r->name),
		                      lks_val_text(kind), lks_val_real(r->value) };

		lks_store_bind(st, 2, v, LKS_NVALS(v));
		if (lks_store_done(s, st)) {
			sqlite3_clear_bindings(st);
			return lks_err("%s, in metric '%s' of step %d rank %d", lks_errmsg(),
			               r->name ? r->name : "?", r->step, r->rank);
		}
	}
	sqlite3_clear_bindings(st);  /* the names are the caller's */
	return 0;
}

int lks_store_import_commit(lks_store *s)
{
	if (lks_store_exec(s, LKS_Q_COMMIT) || lks_store_exec(s, LKS_Q_BEGIN)) {
		lks_store_rollback(s);
		return -1;
	}
	return 0;
}

int lks_store_import_end(lks_store *s, int64_t run_id, int steps, int world_size, int ok)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_int(steps), lks_val_int(world_size) };

	if (!ok) {
		lks_store_rollback(s);
		return 0;
	}
	if (lks_store_put(s, LKS_Q_IMPORT_END, v, LKS_NVALS(v), NULL)
	    || lks_store_exec(s, LKS_Q_COMMIT)) {
		lks_store_rollback(s);
		return -1;
	}
	return 0;
}

struct lks_metric_walk {
	int (*fn)(void *arg, const lks_metric_row *row);
	void *arg;
};

static int lks_metric_row_read(sqlite3_stmt *st, void *ctx)
{
	struct lks_metric_walk *w = ctx;
	const char *kind = lks_column_text(st, 3);
	lks_metric_row r = {
		.step = sqlite3_column_int(st, 0), .rank = sqlite3_column_int(st, 1),
		.name = lks_column_text(st, 2),
		.kind = kind && !strcmp(kind, "performance") ? LKS_METRIC_PERFORMANCE
		                                             : LKS_METRIC_NUMERICS,
		.value = lks_column_real(st, 4),
	};

	return w->fn(w->arg, &r);
}

int lks_store_get_metrics(lks_store *s, int64_t run_id, const char *name,
                          int (*fn)(void *arg, const lks_metric_row *row), void *arg)
{
	struct lks_metric_walk w = { fn, arg };
	const lks_val v[] = { lks_val_int(run_id), lks_val_text(name) };

	return lks_store_rows(s, name ? LKS_Q_GET_METRICS_OF : LKS_Q_GET_METRICS, v, name ? 2 : 1,
	                      lks_metric_row_read, &w);
}
