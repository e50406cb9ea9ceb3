/*
 * trace_store_metrics.c: an imported run (lockstep import) written in one transaction
 * (trace_store.h, "imported runs"). The run row and its blocks of records
 * (trace_store_blocks.c) are all inside the BEGIN IMMEDIATE of lks_store_import_begin: a
 * log that turns out bad half way stores nothing. A followed log (lockstep import
 * --follow) commits each step as it completes (lks_store_import_commit): what came before
 * a bad line or a divergence stays stored.
 *
 * The imports of schema versions 7 to 9 stored a steps row per (step, rank) with its
 * metrics packed in a blob (steps.metrics): per metric, by name, a kind byte (0 numerics,
 * 1 performance), the name and a NUL, then the value as 8 bytes (binary64, little-endian).
 * They are read here, as they always were.
 */
#include <stdint.h>
#include <string.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

static const char *const lks_metric_kind_names[] = { "numerics", "performance" };

const char *lks_metric_kind_name(lks_metric_kind k)
{
	return (unsigned)k < 2 ? lks_metric_kind_names[k] : NULL;
}

/* The import's rows all hang off the run row inserted first in the same transaction, so
   checking each one's run id against runs (two lookups per log line, measured 6% of an
   import) proves nothing: foreign keys are off from begin to end. That changes what is
   checked, never what is written or how: a crash still leaves the earlier content. */
int lks_store_import_begin(lks_store *s, const lks_run_info *info, int64_t *run_id)
{
	if (lks_store_exec(s, LKS_Q_FK_OFF))
		return -1;
	if (lks_store_exec(s, LKS_Q_BEGIN)) {
		lks_store_exec(s, LKS_Q_FK_ON);
		return -1;
	}
	if (lks_store_begin_run(s, info, run_id)) {
		lks_store_rollback(s);
		lks_store_exec(s, LKS_Q_FK_ON);
		return -1;
	}
	return 0;
}

static double lks_unpack_value(const unsigned char *p)
{
	uint64_t u = 0;
	double v;

	for (int i = 0; i < 8; i++)
		u |= (uint64_t)p[i] << (8 * i);
	memcpy(&v, &u, sizeof(v));
	return v;
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
	int rc = 0;

	if (ok && (lks_store_put(s, LKS_Q_IMPORT_END, v, LKS_NVALS(v), NULL)
	           || lks_store_exec(s, LKS_Q_COMMIT)))
		rc = -1;
	if (!ok || rc)
		lks_store_rollback(s);
	if (lks_store_exec(s, LKS_Q_FK_ON))
		rc = -1;
	return rc;
}

struct lks_metric_walk {
	int (*fn)(void *arg, const lks_metric_row *row);
	void *arg;
	const char *name;         /* NULL: every metric */
};

/* One stored row: its metrics unpacked, each handed to the walker's function. */
static int lks_metric_row_read(sqlite3_stmt *st, void *ctx)
{
	struct lks_metric_walk *w = ctx;
	const unsigned char *p = sqlite3_column_blob(st, 2);
	long len = sqlite3_column_bytes(st, 2), at = 0;
	lks_metric_row r = { .step = sqlite3_column_int(st, 0), .rank = sqlite3_column_int(st, 1) };
	int rc;

	while (at < len) {
		const unsigned char *nul = memchr(p + at + 1, 0, (size_t)(len - at - 1));

		if (len - at < 1 + 2 + 8 || !nul || p[at] > 1 || nul == p + at + 1
		    || len - (nul + 1 - p) < 8)
			return lks_err("bad packed metrics of step %d rank %d in the database", r.step,
			               r.rank);
		r.kind = p[at] ? LKS_METRIC_PERFORMANCE : LKS_METRIC_NUMERICS;
		r.name = (const char *)p + at + 1;
		r.value = lks_unpack_value(nul + 1);
		at = nul + 1 + 8 - p;
		if ((!w->name || !strcmp(w->name, r.name)) && (rc = w->fn(w->arg, &r)))
			return rc;
	}
	return 0;
}

int lks_store_get_packed_metrics(lks_store *s, int64_t run_id, const char *name,
                                 int (*fn)(void *arg, const lks_metric_row *row), void *arg)
{
	struct lks_metric_walk w = { fn, arg, name };
	const lks_val v[] = { lks_val_int(run_id) };

	return lks_store_rows(s, LKS_Q_GET_METRICS, v, 1, lks_metric_row_read, &w);
}
