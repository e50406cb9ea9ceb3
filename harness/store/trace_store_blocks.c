/*
 * trace_store_blocks.c: an imported run's records many to a row (schema version 10, table
 * import_blocks; the layout of a block is import_block.h's), and what reads them back: the
 * run's metric rows by (step, rank, name), its step rows by (step, rank), a rank's records
 * dropped from a step on (a run restarted from a checkpoint). The imports of versions 7
 * to 9 hold a steps row per record with its metrics packed (trace_store_metrics.c); a
 * reader gets both, merged, so a database keeps every import it was given.
 *
 * Blocks hold records in the order the log gave them, which is nearly always (step, rank)
 * order; where it is not, or where old rows join, the records are sorted in memory after
 * reading (a reader of a run holds it whole in memory anyway). The run's names are found
 * by hash and sorted once (a run may have tens of thousands), each record's few metrics
 * then by the names' places.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/import_block.h"
#include "harness/store/name_index.h"
#include "harness/store/run.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

int lks_store_import_block(lks_store *s, int64_t run_id, int64_t seq, lks_block *b)
{
	const unsigned char *data;
	sqlite3_stmt *st;
	size_t len;
	int first, last, rc;

	if (lks_block_records(b) == 0)
		return 0;
	if (lks_block_encode(b, &data, &len) || lks_store_stmt(s, LKS_Q_BLOCK, &st))
		return -1;
	lks_block_steps(b, &first, &last);
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int64(st, 2, seq);
	sqlite3_bind_int(st, 3, first);
	sqlite3_bind_int(st, 4, last);
	sqlite3_bind_int(st, 5, lks_block_records(b));
	sqlite3_bind_blob64(st, 6, data, len, SQLITE_STATIC);
	rc = lks_store_done(s, st);
	sqlite3_clear_bindings(st);  /* the blob is b's */
	if (rc)
		return lks_err("%s, in a block of steps %d to %d", lks_errmsg(), first, last);
	lks_block_reset(b);
	lks_store_bulk_flush(s);
	return 0;
}

int lks_store_import_unblock(lks_store *s, int64_t run_id, int64_t seq)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_int(seq) };

	return lks_store_put(s, LKS_Q_BLOCKS_DROP, v, LKS_NVALS(v), NULL);
}

/* ---- walking the blocks ---- */

struct lks_block_walk {
	int64_t run_id;
	lks_block_fn fn;
	void *arg;
};

static int lks_block_row(sqlite3_stmt *st, void *ctx)
{
	const struct lks_block_walk *w = ctx;
	const void *data = sqlite3_column_blob(st, 1);
	int rc = lks_block_decode(data, (size_t)sqlite3_column_bytes(st, 1), w->fn, w->arg);

	if (rc == -1)
		return lks_err("run %lld, import block %lld in the database: %s", (long long)w->run_id,
		               (long long)sqlite3_column_int64(st, 0), lks_errmsg());
	return rc;
}

/* The records of the run's blocks that may hold steps first..last, block by block. */
static int lks_store_walk_blocks(lks_store *s, int64_t run_id, int first, int last,
                                 lks_block_fn fn, void *arg)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_int(first), lks_val_int(last),
	                      lks_val_int(INT64_MAX) };
	struct lks_block_walk w = { run_id, fn, arg };

	return lks_store_rows(s, LKS_Q_GET_BLOCKS_AT, v, LKS_NVALS(v), lks_block_row, &w);
}

static int lks_store_has_blocks(lks_store *s, int64_t run_id, int64_t *n)
{
	const lks_val v[] = { lks_val_int(run_id) };

	return lks_store_scalar(s, LKS_Q_COUNT_BLOCKS, v, LKS_NVALS(v), n);
}

/* ---- a rank's records from a step on, dropped ---- */

struct lks_kept {
	lks_block *b;
	int rank, step;           /* what goes */
	int dropped;
};

static int lks_keep_record(void *arg, int step, int rank, const lks_metric_row *rows, int n)
{
	struct lks_kept *k = arg;

	if (rank == k->rank && step >= k->step) {
		k->dropped++;
		return 0;
	}
	/* never full: as many records and names as the block it came from */
	return lks_block_add(k->b, step, rank, rows, n) ? -1 : 0;
}

struct lks_blob {
	int64_t seq;
	size_t len;
	unsigned char *data;
};

struct lks_blobs {
	struct lks_blob *b;
	int n, cap;
};

static int lks_blob_copy(sqlite3_stmt *st, void *ctx)
{
	struct lks_blobs *l = ctx;
	struct lks_blob *x;

	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 8;
		struct lks_blob *p = realloc(l->b, (size_t)cap * sizeof(*p));

		if (!p)
			return lks_err("out of memory");
		l->b = p;
		l->cap = cap;
	}
	x = &l->b[l->n];
	x->seq = sqlite3_column_int64(st, 0);
	x->len = (size_t)sqlite3_column_bytes(st, 1);
	if (!(x->data = malloc(x->len + 1)))
		return lks_err("out of memory");
	memcpy(x->data, sqlite3_column_blob(st, 1), x->len);
	l->n++;
	return 0;
}

/* Each block below seq_below that holds rank's records from step on is written again
   without them (or deleted when nothing is left). The blocks are copied out before any
   is written. */
static int lks_store_blocks_drop(lks_store *s, int64_t run_id, int rank, int step,
                                 int64_t seq_below)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_int(step), lks_val_int(INT_MAX),
	                      lks_val_int(seq_below) };
	struct lks_blobs l = { 0 };
	struct lks_kept k = { .rank = rank, .step = step };
	int rc = lks_store_rows(s, LKS_Q_GET_BLOCKS_AT, v, LKS_NVALS(v), lks_blob_copy, &l);

	if (!rc && !(k.b = lks_block_new()))
		rc = -1;
	for (int i = 0; !rc && i < l.n; i++) {
		const lks_val key[] = { lks_val_int(run_id), lks_val_int(l.b[i].seq) };
		const unsigned char *data;
		sqlite3_stmt *st;
		size_t len;
		int first, last;

		lks_block_reset(k.b);
		k.dropped = 0;
		if ((rc = lks_block_decode(l.b[i].data, l.b[i].len, lks_keep_record, &k)) || !k.dropped)
			continue;
		if (lks_block_records(k.b) == 0) {
			rc = lks_store_put(s, LKS_Q_BLOCK_DELETE, key, LKS_NVALS(key), NULL);
			continue;
		}
		if ((rc = lks_block_encode(k.b, &data, &len))
		    || (rc = lks_store_stmt(s, LKS_Q_BLOCK_UPDATE, &st)))
			continue;
		lks_block_steps(k.b, &first, &last);
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_int64(st, 2, l.b[i].seq);
		sqlite3_bind_int(st, 3, first);
		sqlite3_bind_int(st, 4, last);
		sqlite3_bind_int(st, 5, lks_block_records(k.b));
		sqlite3_bind_blob64(st, 6, data, len, SQLITE_STATIC);
		rc = lks_store_done(s, st);
		sqlite3_clear_bindings(st);
	}
	for (int i = 0; i < l.n; i++)
		free(l.b[i].data);
	free(l.b);
	lks_block_free(k.b);
	return rc;
}

int lks_store_import_restart(lks_store *s, int64_t run_id, int rank, int step,
                             int64_t seq_below)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_int(rank), lks_val_int(step) };

	if (lks_store_put(s, LKS_Q_IMPORT_RESTART, v, LKS_NVALS(v), NULL))
		return -1;
	return lks_store_blocks_drop(s, run_id, rank, step, seq_below);
}

/* ---- metric rows, merged and sorted ---- */

/* Every record of a run in memory: its metrics as indexes into names, by (step, rank) once
   sorted, each record's metrics by name. */
struct lks_mrec {
	int step, rank;
	size_t at;                /* its first metric in vals */
	int n;
};

struct lks_mval {
	int name;                 /* index into names */
	lks_metric_kind kind;
	double value;
	int printed;              /* lks_metric_row's */
};

struct lks_mall {
	struct lks_mrec *recs;
	size_t nrecs, recs_cap;
	struct lks_mval *vals;
	size_t nvals, vals_cap;
	char **names;
	int nnames;
	size_t names_cap;
	lks_name_index index;     /* names by hash */
	int *order;               /* a name's place in strcmp order */
	int hint[LKS_METRICS_MAX];
};

static int lks_mall_name(struct lks_mall *a, const char *name, int i)
{
	int *h = &a->hint[i < LKS_METRICS_MAX ? i : 0];
	int j;

	if (*h < a->nnames && !strcmp(a->names[*h], name))
		return *h;
	if ((j = lks_name_index_find(&a->index, a->names, name)) >= 0)
		return *h = j;
	if (lks_room_for((void **)&a->names, &a->names_cap, (size_t)a->nnames, sizeof(char *))
	    || !(a->names[a->nnames] = strdup(name)))
		return lks_err("out of memory");
	if (lks_name_index_add(&a->index, name, a->nnames)) {
		free(a->names[a->nnames]);
		return -1;
	}
	return *h = a->nnames++;
}

/* A record: its (step, rank) and metrics, appended. */
static int lks_mall_add(struct lks_mall *a, int step, int rank, const lks_metric_row *rows,
                        int n)
{
	if (lks_room_for((void **)&a->recs, &a->recs_cap, a->nrecs, sizeof(*a->recs))
	    || lks_room_for((void **)&a->vals, &a->vals_cap, a->nvals + (size_t)n,
	                    sizeof(*a->vals)))
		return -1;
	a->recs[a->nrecs++] = (struct lks_mrec){ step, rank, a->nvals, n };
	for (int i = 0; i < n; i++) {
		int m = lks_mall_name(a, rows[i].name, i);

		if (m < 0)
			return -1;
		a->vals[a->nvals++] = (struct lks_mval){ m, rows[i].kind, rows[i].value,
		                                         rows[i].printed };
	}
	return 0;
}

static int lks_mall_record(void *arg, int step, int rank, const lks_metric_row *rows, int n)
{
	return lks_mall_add(arg, step, rank, rows, n);
}

/* A steps row's packed metrics come one at a time, a record's together (by step, rank):
   one that goes on the record before joins it. */
static int lks_mall_row(void *arg, const lks_metric_row *row)
{
	struct lks_mall *a = arg;
	struct lks_mrec *last = a->nrecs ? &a->recs[a->nrecs - 1] : NULL;

	if (last && last->step == row->step && last->rank == row->rank
	    && last->at + (size_t)last->n == a->nvals) {
		int m = lks_mall_name(a, row->name, last->n);

		if (m < 0 || lks_room_for((void **)&a->vals, &a->vals_cap, a->nvals, sizeof(*a->vals)))
			return -1;
		a->vals[a->nvals++] = (struct lks_mval){ m, row->kind, row->value, row->printed };
		last->n++;
		return 0;
	}
	return lks_mall_add(a, row->step, row->rank, row, 1);
}

static int lks_mrec_cmp(const void *x, const void *y)
{
	const struct lks_mrec *a = x, *b = y;

	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* A name and its index, sorted by name. */
struct lks_mname {
	const char *name;
	int j;
};

static int lks_mname_cmp(const void *x, const void *y)
{
	return strcmp(((const struct lks_mname *)x)->name, ((const struct lks_mname *)y)->name);
}

/* Records by (step, rank), and each one's metrics by name (through order). */
static int lks_mall_sort(struct lks_mall *a)
{
	struct lks_mname *by = malloc(((size_t)a->nnames + 1) * sizeof(*by));

	if (!by || !(a->order = malloc(((size_t)a->nnames + 1) * sizeof(int)))) {
		free(by);
		return lks_err("out of memory");
	}
	for (int j = 0; j < a->nnames; j++)  /* names are distinct: no two equal in the sort */
		by[j] = (struct lks_mname){ a->names[j], j };
	qsort(by, (size_t)a->nnames, sizeof(*by), lks_mname_cmp);
	for (int j = 0; j < a->nnames; j++)
		a->order[by[j].j] = j;
	free(by);
	for (size_t i = 1; i < a->nrecs; i++)
		if (lks_mrec_cmp(&a->recs[i - 1], &a->recs[i]) > 0) {
			qsort(a->recs, a->nrecs, sizeof(*a->recs), lks_mrec_cmp);
			break;
		}
	for (size_t i = 0; i < a->nrecs; i++) {
		struct lks_mval *v = a->vals + a->recs[i].at;

		for (int k = 1; k < a->recs[i].n; k++)  /* insertion: a record has few metrics */
			for (int j = k; j > 0 && a->order[v[j - 1].name] > a->order[v[j].name]; j--) {
				struct lks_mval t = v[j];

				v[j] = v[j - 1];
				v[j - 1] = t;
			}
	}
	return 0;
}

static void lks_mall_free(struct lks_mall *a)
{
	for (int j = 0; j < a->nnames; j++)
		free(a->names[j]);
	free(a->names);
	lks_name_index_release(&a->index);
	free(a->order);
	free(a->recs);
	free(a->vals);
}

int lks_store_get_metrics(lks_store *s, int64_t run_id, const char *name,
                          int (*fn)(void *arg, const lks_metric_row *row), void *arg)
{
	struct lks_mall a = { 0 };
	int64_t blocks = 0;
	int rc;

	if (lks_store_has_blocks(s, run_id, &blocks))
		return -1;
	if (blocks == 0)  /* an import of versions 7 to 9, or none: streamed, in order */
		return lks_store_get_packed_metrics(s, run_id, name, fn, arg);
	rc = lks_store_get_packed_metrics(s, run_id, NULL, lks_mall_row, &a);
	if (!rc)
		rc = lks_store_walk_blocks(s, run_id, 0, INT_MAX, lks_mall_record, &a);
	if (!rc)
		rc = lks_mall_sort(&a);
	for (size_t i = 0; !rc && i < a.nrecs; i++)
		for (int k = 0; !rc && k < a.recs[i].n; k++) {
			const struct lks_mval *v = &a.vals[a.recs[i].at + (size_t)k];
			lks_metric_row row = { a.recs[i].step, a.recs[i].rank, a.names[v->name], v->kind,
			                       v->value, v->printed };

			if (!name || !strcmp(name, row.name))
				rc = fn(arg, &row);
		}
	lks_mall_free(&a);
	return rc;
}

/* ---- step rows ---- */

struct lks_step_fill {
	int step;                 /* < 0: every step */
	lks_step_row *rows;
	int cap, n;
};

static int lks_step_record(void *arg, int step, int rank, const lks_metric_row *rows, int n)
{
	struct lks_step_fill *f = arg;

	if (f->step >= 0 && step != f->step)
		return 0;
	if (f->n < f->cap)
		lks_block_step_row(step, rank, rows, n, &f->rows[f->n]);
	f->n++;
	return 0;
}

static int lks_step_cmp(const void *x, const void *y)
{
	const lks_step_row *a = x, *b = y;

	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

int lks_store_block_steps(lks_store *s, int64_t run_id, int step, lks_step_row *rows, int cap,
                          int *n)
{
	struct lks_step_fill f = { step, rows, cap, *n };
	int had = *n, rc;

	rc = lks_store_walk_blocks(s, run_id, step < 0 ? 0 : step, step < 0 ? INT_MAX : step,
	                           lks_step_record, &f);
	if (!rc && f.n > had) {
		int filled = f.n < cap ? f.n : cap;

		for (int i = 1; i < filled; i++)
			if (lks_step_cmp(&rows[i - 1], &rows[i]) > 0) {
				qsort(rows, (size_t)filled, sizeof(*rows), lks_step_cmp);
				break;
			}
	}
	*n = f.n;
	return rc;
}
