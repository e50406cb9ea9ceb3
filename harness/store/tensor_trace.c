/*
 * tensor_trace.c: an imported tensor trace's records stored (table tensor_blocks, schema
 * 11) and read back a step at a time (tensor_trace.h). A step's rows of every rank come in
 * one indexed query, by (rank, seq), so each rank's records are in the order they were
 * read; their statistics' names are found once per run by hash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/tensor_trace.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

/* ---- a run's tensors by (name, phase) ---- */

/* The map's key of (name, phase) into key (LKS_TENSOR_NAME_MAX + 1 bytes); -1 when the name
   is too long. */
static int lks_tensor_key(char *key, const char *name, lks_phase phase)
{
	size_t n = strnlen(name, LKS_TENSOR_NAME_MAX);

	if (n == LKS_TENSOR_NAME_MAX)
		return -1;
	key[0] = (char)('0' + (int)phase);
	memcpy(key + 1, name, n + 1);
	return 0;
}

int lks_tensor_map_find(const lks_tensor_map *m, const char *name, lks_phase phase)
{
	char key[LKS_TENSOR_NAME_MAX + 1];
	int i;

	if (lks_tensor_key(key, name, phase) || (i = lks_name_index_find(&m->index, m->keys,
	                                                                  key)) < 0)
		return -1;
	return m->seqs[i];
}

int lks_tensor_map_add(lks_tensor_map *m, const char *name, lks_phase phase, int seq)
{
	char key[LKS_TENSOR_NAME_MAX + 1];

	if (lks_tensor_key(key, name, phase))
		return lks_err("a tensor name of %d bytes or more", LKS_TENSOR_NAME_MAX);
	if (m->n == m->cap) {
		int cap = m->cap ? 2 * m->cap : 256;
		char **k = realloc(m->keys, (size_t)cap * sizeof(*k));
		char **nm = k ? realloc(m->names, (size_t)cap * sizeof(*nm)) : NULL;
		lks_phase *p = nm ? realloc(m->phases, (size_t)cap * sizeof(*p)) : NULL;
		int *q = p ? realloc(m->seqs, (size_t)cap * sizeof(*q)) : NULL;

		if (k)
			m->keys = k;
		if (nm)
			m->names = nm;
		if (p)
			m->phases = p;
		if (!q)
			return lks_err("out of memory");
		m->seqs = q;
		m->cap = cap;
	}
	if (!(m->keys[m->n] = strdup(key)))
		return lks_err("out of memory");
	if (lks_name_index_add(&m->index, key, m->n)) {
		free(m->keys[m->n]);
		return -1;
	}
	m->names[m->n] = m->keys[m->n] + 1;
	m->phases[m->n] = phase;
	m->seqs[m->n++] = seq;
	return 0;
}

void lks_tensor_map_release(lks_tensor_map *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->names);
	free(m->phases);
	free(m->seqs);
	lks_name_index_release(&m->index);
	memset(m, 0, sizeof(*m));
}

/* ---- a trace stored ---- */

int lks_store_tensor_block(lks_store *s, int64_t run_id, int step, int rank, int seq,
                           lks_block *b)
{
	const unsigned char *data;
	sqlite3_stmt *st;
	size_t len;
	int rc;

	if (lks_block_records(b) == 0)
		return 0;
	if (lks_block_encode(b, &data, &len) || lks_store_stmt(s, LKS_Q_TBLOCK, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int(st, 2, step);
	sqlite3_bind_int(st, 3, rank);
	sqlite3_bind_int(st, 4, seq);
	sqlite3_bind_int(st, 5, lks_block_records(b));
	sqlite3_bind_blob64(st, 6, data, len, SQLITE_STATIC);
	rc = lks_store_done(s, st);
	sqlite3_clear_bindings(st);  /* the blob is b's */
	if (rc)
		return lks_err("%s, in the tensors of step %d rank %d", lks_errmsg(), step, rank);
	lks_block_reset(b);
	lks_store_bulk_flush(s);
	return 0;
}

int lks_store_tensor_names(lks_store *s, int64_t run_id, char *const *names,
                           const lks_phase *phases, int n)
{
	for (int i = 0; i < n; i++) {
		const char *phase = lks_phase_name(phases[i]);
		const lks_val v[] = { lks_val_int(run_id), lks_val_int(i), lks_val_text(names[i]),
		                      lks_val_text(phase) };

		if (!phase)
			return lks_err("tensor '%s' of a bad phase (%d)", names[i], (int)phases[i]);
		if (lks_store_put(s, LKS_Q_TENSOR, v, LKS_NVALS(v), NULL))
			return -1;
	}
	return 0;
}

/* ---- a run traced by lockstep-trace ---- */

static int lks_first_id(sqlite3_stmt *st, void *ctx)
{
	*(int64_t *)ctx = sqlite3_column_int64(st, 0);
	return 1;  /* the first row is all */
}

int lks_store_trace_join(lks_store *s, const lks_run_info *info, int rank, int64_t *run_id)
{
	const lks_val v[] = { lks_val_text(info->case_name), lks_val_text(info->run_name),
	                      lks_val_int(info->world_size), lks_val_int(rank),
	                      lks_val_text(info->backend), lks_val_text(info->options) };
	int64_t id = 0;
	int rc;

	if (lks_store_exec(s, LKS_Q_BEGIN))
		return -1;
	rc = lks_store_rows(s, LKS_Q_TRACE_FIND, v, LKS_NVALS(v), lks_first_id, &id);
	if (rc >= 0 && !id)
		rc = lks_store_begin_run(s, info, &id);
	if (rc >= 0)
		rc = lks_store_event(s, id, -1, rank, NULL, "trace_rank", "joined");
	if (rc < 0 || lks_store_exec(s, LKS_Q_COMMIT)) {
		lks_store_rollback(s);
		return -1;
	}
	*run_id = id;
	return 0;
}

int lks_store_trace_tensor(lks_store *s, int64_t run_id, const char *name, lks_phase phase,
                           int *seq)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_text(name),
	                      lks_val_text(lks_phase_name(phase)) };
	int64_t id = -1;

	if (!lks_phase_name(phase))
		return lks_err("tensor '%s' of a bad phase (%d)", name, (int)phase);
	if (lks_store_rows(s, LKS_Q_TRACE_TENSOR, v, LKS_NVALS(v), lks_first_id, &id) < 0
	    || (id < 0 && lks_store_rows(s, LKS_Q_TRACE_TENSOR_ADD, v, LKS_NVALS(v), lks_first_id,
	                                 &id) < 0))
		return -1;
	if (id < 0 || id > INT32_MAX)
		return lks_err("tensor '%s': no seq", name);
	*seq = (int)id;
	return 0;
}

int lks_store_trace_begin(lks_store *s)
{
	return lks_store_exec(s, LKS_Q_BEGIN);
}

int lks_store_trace_commit(lks_store *s)
{
	if (lks_store_exec(s, LKS_Q_COMMIT)) {
		lks_store_rollback(s);
		return -1;
	}
	return 0;
}

void lks_store_trace_rollback(lks_store *s)
{
	lks_store_rollback(s);
}

int lks_store_trace_leave(lks_store *s, int64_t run_id, int rank, int last_step, int failed,
                          const char *why)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_int(last_step) };
	const lks_val id[] = { lks_val_int(run_id) };
	const lks_val fail[] = { lks_val_int(run_id), lks_val_text("failed") };

	if (lks_store_exec(s, LKS_Q_BEGIN))
		return -1;
	if (lks_store_event(s, run_id, last_step, rank, NULL,
	                    failed ? "trace_rank_failed" : "trace_rank_done",
	                    failed ? (why && *why ? why : "aborted") : "closed")
	    || (last_step >= 0 && lks_store_put(s, LKS_Q_TRACE_STEPS, v, LKS_NVALS(v), NULL))
	    || (failed ? lks_store_put(s, LKS_Q_END_RUN, fail, LKS_NVALS(fail), NULL)
	               : lks_store_put(s, LKS_Q_TRACE_DONE, id, LKS_NVALS(id), NULL))
	    || lks_store_exec(s, LKS_Q_COMMIT)) {
		lks_store_rollback(s);
		return -1;
	}
	return 0;
}

static int lks_tsteps_row(sqlite3_stmt *st, void *ctx)
{
	lks_tensor_trace *t = ctx;

	t->nblocks = sqlite3_column_int64(st, 2);
	if (t->nblocks) {
		t->first_step = sqlite3_column_int(st, 0);
		t->last_step = sqlite3_column_int(st, 1);
	}
	return 0;
}

int lks_tensor_trace_open(lks_store *s, int64_t run_id, lks_tensor_trace **out)
{
	const lks_val v[] = { lks_val_int(run_id) };
	lks_tensor_trace *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return lks_err("out of memory");
	t->src = s;
	t->run_id = run_id;
	t->step = -1;
	t->last_step = -1;
	if (lks_store_rows(s, LKS_Q_TSTEPS, v, LKS_NVALS(v), lks_tsteps_row, t)) {
		lks_tensor_trace_free(t);
		return -1;
	}
	if (!t->nblocks) {
		lks_tensor_trace_free(t);
		return 0;
	}
	*out = t;
	return 0;
}

void lks_tensor_trace_free(lks_tensor_trace *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nstats; i++)
		free(t->stats[i]);
	free(t->stats);
	lks_name_index_release(&t->sindex);
	free(t->rfirst);
	free(t->ent);
	free(t->val);
	free(t);
}

int lks_tensor_trace_stat(const lks_tensor_trace *t, const char *name)
{
	return lks_name_index_find(&t->sindex, t->stats, name);
}

/* The index of statistic name, added when new; -1 (out of memory). */
static int lks_tensor_trace_stat_add(lks_tensor_trace *t, const char *name)
{
	int i = lks_tensor_trace_stat(t, name);

	if (i >= 0)
		return i;
	if (t->nstats == t->stats_cap) {
		int cap = t->stats_cap ? 2 * t->stats_cap : 16;
		char **p = realloc(t->stats, (size_t)cap * sizeof(*p));

		if (!p)
			return lks_err("out of memory");
		t->stats = p;
		t->stats_cap = cap;
	}
	if (!(t->stats[t->nstats] = strdup(name))
	    || lks_name_index_add(&t->sindex, name, t->nstats)) {
		free(t->stats[t->nstats]);
		return lks_err("out of memory");
	}
	return t->nstats++;
}

/* Room for n more of size in *p (capacity *cap, doubled as needed). */
static int lks_tt_room(void **p, size_t *cap, size_t have, size_t n, size_t size)
{
	if (have + n > *cap) {
		size_t c = *cap ? *cap : 1024;
		void *q;

		while (c < have + n)
			c *= 2;
		if (!(q = realloc(*p, c * size)))
			return lks_err("out of memory");
		*p = q;
		*cap = c;
	}
	return 0;
}

/* One decoded record of the step being read: appended to its rank's entries (the rows
   come by rank). */
static int lks_tt_record(void *arg, int step, int rank, const lks_block_key *key,
                         const lks_metric_row *rows, int n)
{
	lks_tensor_trace *t = arg;
	lks_tentry *e;

	if (!key || step != t->step || rank < t->nranks - 1)
		return lks_err("a damaged tensor block (step %d rank %d)", step, rank);
	if (rank >= t->nranks) {
		if (lks_tt_room((void **)&t->rfirst, &t->rfirst_cap, 0, (size_t)rank + 2,
		                sizeof(size_t)))
			return -1;
		for (int r = t->nranks; r <= rank + 1; r++)
			t->rfirst[r] = t->nent;  /* ranks without records: none */
		t->nranks = rank + 1;
	}
	if (lks_tt_room((void **)&t->ent, &t->ent_cap, t->nent, 1, sizeof(*t->ent))
	    || lks_tt_room((void **)&t->val, &t->val_cap, t->nval, (size_t)n, sizeof(*t->val)))
		return -1;
	e = &t->ent[t->nent++];
	*e = (lks_tentry){ key->tensor, key->micro, key->has_hash, key->hash,
	                   (uint32_t)t->nval, n };
	for (int i = 0; i < n; i++) {
		int k = lks_tensor_trace_stat_add(t, rows[i].name);

		if (k < 0)
			return -1;
		t->val[t->nval++] = (lks_tval){ rows[i].value, k, rows[i].printed };
	}
	t->rfirst[t->nranks] = t->nent;
	return 0;
}

static int lks_tt_block(sqlite3_stmt *st, void *ctx)
{
	lks_tensor_trace *t = ctx;
	const void *data = sqlite3_column_blob(st, 2);
	int rc = lks_block_decode_keyed(data, (size_t)sqlite3_column_bytes(st, 2), lks_tt_record,
	                                t);

	if (rc)
		return lks_err("run %lld, tensors of step %d rank %d in the database: %s",
		               (long long)t->run_id, t->step, sqlite3_column_int(st, 0),
		               lks_errmsg());
	return 0;
}

int lks_tensor_trace_step(lks_tensor_trace *t, int step)
{
	const lks_val v[] = { lks_val_int(t->run_id), lks_val_int(step) };
	int rc;

	if (t->step == step)
		return 0;
	t->step = step;
	t->nranks = 0;
	t->nent = t->nval = 0;
	if (step < t->first_step || step > t->last_step)
		return 0;
	if ((rc = lks_store_rows(t->src, LKS_Q_GET_TBLOCKS, v, LKS_NVALS(v), lks_tt_block, t))) {
		t->step = -1;
		return -1;
	}
	return 0;
}

size_t lks_tensor_trace_rank(const lks_tensor_trace *t, int rank, const lks_tentry **e)
{
	if (rank < 0 || rank >= t->nranks) {
		*e = NULL;
		return 0;
	}
	*e = t->ent + t->rfirst[rank];
	return t->rfirst[rank + 1] - t->rfirst[rank];
}
