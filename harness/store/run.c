/*
 * run.c: one stored run in memory (run.h): read from the store, filled row by row (golden
 * files, captured steps), and its stat rows one step at a time.
 */
#include "harness/store/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/fingerprint.h"
#include "harness/store/tensor_trace.h"
#include "kernels/err.h"

enum { LKS_NINFO = 12 };

/* The owned strings of what the run was, in the order lks_stored_run_set_info fills them. */
static void lks_info_slots(lks_stored_run *r, char **slot[LKS_NINFO])
{
	char **s[LKS_NINFO] = { &r->case_name, &r->case_path, &r->case_text, &r->run_name,
	                        &r->recipe, &r->options, &r->backend, &r->combo, &r->status,
	                        &r->started, &r->finished, &r->fingerprint };

	memcpy(slot, s, sizeof(s));
}

void lks_stored_run_init(lks_stored_run *r)
{
	memset(r, 0, sizeof(*r));
	r->cur = -1;
}

void lks_stored_run_release(lks_stored_run *r)
{
	char **slot[LKS_NINFO];

	lks_info_slots(r, slot);
	for (int i = 0; i < LKS_NINFO; i++)
		free(*slot[i]);
	for (int i = 0; i < r->nt; i++)
		free(r->names[i]);
	free(r->names);
	free(r->phases);
	free(r->occ);
	free(r->steprows);
	free(r->stats);
	free(r->at);
	free(r->buf);
	lks_stored_run_metrics_release(r);
	lks_tensor_trace_free(r->tt);
	lks_stored_run_init(r);
}

/* ---- what the run was ---- */

/* The fingerprint's value of key, for people: decoded (lks_fingerprint_json_get), tabs and
   newlines made spaces, "" when absent. */
static void lks_fp_value(const char *json, const char *key, char *buf, size_t size)
{
	buf[0] = 0;
	if (!lks_fingerprint_json_get(json, key, buf, size))
		buf[0] = 0;
	for (char *p = buf; *p; p++)
		if (*p == '\t' || *p == '\n')
			*p = ' ';
}

int lks_stored_run_set_info(lks_stored_run *r, const lks_run_rec *rec)
{
	const lks_run_info *in = &rec->info;
	const char *v[LKS_NINFO] = { in->case_name, in->case_path, in->case_text, in->run_name,
	                             in->recipe, in->options, in->backend, in->combo, rec->status,
	                             rec->started, rec->finished, in->fingerprint };
	char **slot[LKS_NINFO], version[32], commit[32];
	int rc = 0;

	lks_info_slots(r, slot);
	for (int i = 0; i < LKS_NINFO; i++) {
		free(*slot[i]);
		if (!(*slot[i] = strdup(v[i] ? v[i] : "")))
			rc = lks_err("out of memory");
	}
	r->id = rec->run_id;
	r->suite_id = in->suite_id;
	r->W = in->world_size;
	r->steps = in->steps;
	r->seed = in->seed;
	lks_fp_value(in->fingerprint, "lockstep.version", version, sizeof(version));
	lks_fp_value(in->fingerprint, "lockstep.commit", commit, sizeof(commit));
	snprintf(r->version, sizeof(r->version), "%s%s%s", version, *commit ? " " : "", commit);
	lks_fp_value(in->fingerprint, "compiler", r->compiler, sizeof(r->compiler));
	lks_fp_value(in->fingerprint, "isa.active", r->isa, sizeof(r->isa));
	return rc;
}

/* ---- filled row by row ---- */

int lks_room_for(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *q;

	if (n + 1 <= *cap)
		return 0;
	while (c < n + 1)
		c *= 2;
	if (!(q = realloc(*p, c * size)))
		return lks_err("out of memory");
	*p = q;
	*cap = c;
	return 0;
}

int lks_stored_run_add_tensor(lks_stored_run *r, int seq, const char *name, lks_phase phase)
{
	size_t cap = (size_t)r->names_cap, c;
	int occ = 0;

	if (seq >= 0 && seq < r->nt)
		return r->phases[seq] != phase || strcmp(r->names[seq], name) != 0;
	if (seq != r->nt)
		return 1;
	c = cap;
	if (lks_room_for((void **)&r->names, &c, (size_t)r->nt, sizeof(*r->names)))
		return -1;
	c = cap;
	if (lks_room_for((void **)&r->phases, &c, (size_t)r->nt, sizeof(*r->phases)))
		return -1;
	if (lks_room_for((void **)&r->occ, &cap, (size_t)r->nt, sizeof(*r->occ)))
		return -1;
	r->names_cap = (int)cap;
	if (!(r->names[r->nt] = strdup(name)))
		return lks_err("out of memory");
	for (int j = 0; j < r->nt; j++)
		occ += r->phases[j] == phase && !strcmp(r->names[j], name);
	r->phases[r->nt] = phase;
	r->occ[r->nt++] = occ;
	return 0;
}

int lks_stored_run_push_steprow(lks_stored_run *r, const lks_step_row *row)
{
	size_t cap = (size_t)r->steprows_cap;

	if (lks_room_for((void **)&r->steprows, &cap, (size_t)r->nsteprows, sizeof(*row)))
		return -1;
	r->steprows_cap = (int)cap;
	r->steprows[r->nsteprows++] = *row;
	if (row->step + 1 > r->nsteps)
		r->nsteps = row->step + 1;
	return 0;
}

int lks_stored_run_push_stat(lks_stored_run *r, const lks_stat_row *row)
{
	if (lks_room_for((void **)&r->stats, &r->stats_cap, r->nstats, sizeof(*row)))
		return -1;
	r->stats[r->nstats++] = *row;
	if (row->step + 1 > r->nsteps)
		r->nsteps = row->step + 1;
	r->cur = -1;  /* the rows may have moved */
	return 0;
}

int lks_stored_run_add_step(lks_stored_run *r, const lks_step_row *steps, int nsteps,
                            const lks_stat_row *stats, size_t nstats)
{
	for (int i = 0; i < nsteps; i++)
		if (lks_stored_run_push_steprow(r, &steps[i]))
			return -1;
	for (size_t i = 0; i < nstats; i++)
		if (lks_stored_run_push_stat(r, &stats[i]))
			return -1;
	return 0;
}

/* ---- read from the store ---- */

static int lks_load_info(void *arg, const lks_run_rec *rec)
{
	return lks_stored_run_set_info(arg, rec);
}

static int lks_load_tensor(void *arg, int seq, const char *name, lks_phase phase)
{
	lks_stored_run *r = arg;
	int rc = lks_stored_run_add_tensor(r, seq, name, phase);

	return rc > 0 ? lks_err("run %lld: tensor seq %d out of order in the store", (long long)r->id,
	                        seq) : rc;
}

static int lks_load_steprows(lks_store *s, lks_stored_run *r)
{
	int n = 0, got = 0;

	if (lks_store_get_steps(s, r->id, -1, NULL, 0, &n))
		return -1;
	if (!(r->steprows = calloc((size_t)n + 1, sizeof(*r->steprows))))
		return lks_err("out of memory");
	r->steprows_cap = n + 1;
	if (lks_store_get_steps(s, r->id, -1, r->steprows, n, &got))
		return -1;
	r->nsteprows = got < n ? got : n;
	for (int i = 0; i < r->nsteprows; i++)
		if (r->steprows[i].step + 1 > r->nsteps)
			r->nsteps = r->steprows[i].step + 1;
	return 0;
}

/* The stat rows of (step, rank) appended to *rows (n of them, capacity *cap). */
static int lks_load_stats_of(lks_stored_run *r, int step, int rank, lks_stat_row **rows,
                             size_t *n, size_t *cap)
{
	size_t got;

	if (lks_room_for((void **)rows, cap, *n + (size_t)r->nt, sizeof(**rows))
	    || lks_store_get_stats(r->src, r->id, step, rank, *rows + *n, (size_t)r->nt, &got))
		return -1;
	*n += got < (size_t)r->nt ? got : (size_t)r->nt;
	return 0;
}

/* Every stat row, by (step, rank, seq): of each step row's (step, rank). */
static int lks_load_whole(lks_stored_run *r)
{
	for (int i = 0; i < r->nsteprows; i++)
		if (lks_load_stats_of(r, r->steprows[i].step, r->steprows[i].rank, &r->stats, &r->nstats,
		                      &r->stats_cap))
			return -1;
	return 0;
}

int lks_stored_run_load(lks_store *s, int64_t run_id, lks_run_load how, lks_stored_run *r)
{
	lks_stored_run_init(r);
	r->id = run_id;
	if (lks_store_get_run(s, run_id, lks_load_info, r))
		return -1;
	if (how == LKS_LOAD_INFO)
		return 0;
	r->src = s;
	if (lks_store_get_tensors(s, run_id, lks_load_tensor, r) || lks_load_steprows(s, r)
	    || lks_stored_run_load_metrics(s, r) || lks_tensor_trace_open(s, run_id, &r->tt))
		return -1;
	if (r->tt && r->tt->last_step + 1 > r->nsteps)
		r->nsteps = r->tt->last_step + 1;
	if (how != LKS_LOAD_WHOLE)
		return 0;
	if (lks_load_whole(r))
		return -1;
	r->src = NULL;
	return 0;
}

/* ---- one step's stat rows ---- */

/* The first row of stats at step or after it (rows by step). */
static size_t lks_first_of_step(const lks_stored_run *r, int step)
{
	size_t lo = 0, hi = r->nstats;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->stats[mid].step < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int lks_stored_run_stats(lks_stored_run *r, int step, const lks_stat_row **rows, size_t *n)
{
	size_t lo, nbuf = 0;

	if (!r->src) {
		lo = lks_first_of_step(r, step);
		*rows = r->stats + lo;
		*n = lks_first_of_step(r, step + 1) - lo;
		return 0;
	}
	r->cur = -1;  /* the buffer is reused */
	for (int rank = 0; rank < r->W; rank++)
		if (lks_load_stats_of(r, step, rank, &r->buf, &nbuf, &r->buf_cap))
			return -1;
	*rows = r->buf;
	*n = nbuf;
	return 0;
}

int lks_stored_run_step(lks_stored_run *r, int step)
{
	size_t cells = (size_t)r->W * (size_t)r->nt, cap = (size_t)r->at_cap, n;
	const lks_stat_row *rows;

	if (r->cur == step)
		return 0;
	if (r->nt == 0) {  /* no tensors (an imported run): no row to read, at any step */
		r->cur = step;
		return 0;
	}
	if (lks_room_for((void **)&r->at, &cap, cells, sizeof(*r->at))
	    || lks_stored_run_stats(r, step, &rows, &n))
		return -1;
	r->at_cap = (int)cap;
	memset(r->at, 0, (cells + 1) * sizeof(*r->at));
	for (size_t i = 0; i < n; i++)
		if (rows[i].rank >= 0 && rows[i].rank < r->W && rows[i].seq >= 0 && rows[i].seq < r->nt)
			r->at[(size_t)rows[i].rank * (size_t)r->nt + (size_t)rows[i].seq] = &rows[i];
	r->cur = step;
	return 0;
}

const lks_stat_row *lks_stored_run_row(const lks_stored_run *r, int rank, int seq)
{
	if (r->cur < 0 || rank < 0 || rank >= r->W || seq < 0 || seq >= r->nt)
		return NULL;
	return r->at[(size_t)rank * (size_t)r->nt + (size_t)seq];
}

const lks_step_row *lks_stored_run_step_row(const lks_stored_run *r, int step, int rank)
{
	int lo = 0, hi = r->nsteprows;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		const lks_step_row *m = &r->steprows[mid];

		if (m->step == step && m->rank == rank)
			return m;
		if (m->step < step || (m->step == step && m->rank < rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int lks_stored_run_find(const lks_stored_run *r, const char *name, lks_phase phase, int occ)
{
	for (int i = 0; i < r->nt; i++)
		if (r->phases[i] == phase && r->occ[i] == occ && !strcmp(r->names[i], name))
			return i;
	return -1;
}
