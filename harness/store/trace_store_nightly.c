/*
 * trace_store_nightly.c: night-over-night verdicts (trace_store.h, lks_nightly_rec; schema
 * version 8, the nightly table) written one by one and read back by suite. What they mean
 * and how they are found is harness/verify/nightly.h.
 */
#include "harness/store/trace_store_impl.h"

int lks_store_nightly(lks_store *s, const lks_nightly_rec *r)
{
	const lks_val v[] = {
		lks_val_id(r->suite_id), lks_val_text(r->case_name), lks_val_text(r->run_name),
		lks_val_id(r->run_id), lks_val_id(r->prev_run_id), lks_val_id(r->prev_suite_id),
		lks_val_text(r->verdict), lks_val_int(r->fp_equal != 0),
		lks_val_text(r->fp_keys ? r->fp_keys : ""), lks_val_index(r->step),
		lks_val_index(r->rank), lks_val_text(r->tensor), lks_val_text(r->field),
		lks_val_text(r->message),
	};

	return lks_store_put(s, LKS_Q_NIGHTLY, v, LKS_NVALS(v), NULL);
}

struct lks_nightly_walk {
	int (*fn)(void *arg, const lks_nightly_rec *rec);
	void *arg;
};

static int lks_nightly_row_read(sqlite3_stmt *st, void *ctx)
{
	struct lks_nightly_walk *w = ctx;
	lks_nightly_rec r = {
		.suite_id = sqlite3_column_int64(st, 0), .case_name = lks_column_text(st, 1),
		.run_name = lks_column_text(st, 2), .run_id = sqlite3_column_int64(st, 3),
		.prev_run_id = sqlite3_column_int64(st, 4), .prev_suite_id = sqlite3_column_int64(st, 5),
		.verdict = lks_column_text(st, 6), .fp_equal = sqlite3_column_int(st, 7),
		.fp_keys = lks_column_text(st, 8), .step = lks_column_index(st, 9),
		.rank = lks_column_index(st, 10), .tensor = lks_column_text(st, 11),
		.field = lks_column_text(st, 12), .message = lks_column_text(st, 13),
	};

	return w->fn(w->arg, &r);
}

int lks_store_get_nightly(lks_store *s, int64_t suite_id,
                          int (*fn)(void *arg, const lks_nightly_rec *rec), void *arg)
{
	struct lks_nightly_walk w = { fn, arg };
	const lks_val v[] = { lks_val_int(suite_id) };

	return lks_store_rows(s, LKS_Q_GET_NIGHTLY, v, LKS_NVALS(v), lks_nightly_row_read, &w);
}
