/* run_trace.c: a stored run's trace, read for checks and diffs (see run_trace.h). */
#include "harness/store/run_trace.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/err.h"

void lks_run_trace_release(lks_run_trace *t)
{
	for (int i = 0; i < t->nt; i++)
		free(t->names[i]);
	free(t->names);
	free(t->phases);
	free(t->occ);
	free(t->steps);
	free(t->have_step);
	free(t->stats);
	free(t->have);
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

static int lks_run_trace_add_tensor(void *arg, int seq, const char *name, lks_phase phase)
{
	lks_run_trace *t = arg;

	if (seq != t->nt)
		return lks_err("run %lld: tensor seq %d out of order (expected %d)",
		               (long long)t->run_id, seq, t->nt);
	if (t->nt == t->cap) {
		int cap = t->cap ? 2 * t->cap : 64;
		char **n = realloc(t->names, (size_t)cap * sizeof(*n));
		lks_phase *p;

		if (n)
			t->names = n;
		p = n ? realloc(t->phases, (size_t)cap * sizeof(*p)) : NULL;
		if (!p)
			return lks_err("out of memory");
		t->phases = p;
		t->cap = cap;
	}
	if (!(t->names[t->nt] = strdup(name)))
		return lks_err("out of memory");
	t->phases[t->nt++] = phase;
	return 0;
}

static int lks_run_trace_world(void *arg, const lks_run_rec *run)
{
	((lks_run_trace *)arg)->W = run->info.world_size;
	return 0;
}

static int lks_run_trace_load_steps(lks_store *s, lks_run_trace *t)
{
	lks_step_row *rows;
	int n = 0, got;

	if (lks_store_get_steps(s, t->run_id, -1, NULL, 0, &n))
		return -1;
	if (!(rows = malloc(sizeof(*rows) * ((size_t)n + 1))))
		return lks_err("out of memory");
	if (lks_store_get_steps(s, t->run_id, -1, rows, n, &got)) {
		free(rows);
		return -1;
	}
	n = got < n ? got : n;
	for (int i = 0; i < n; i++)
		if (rows[i].step + 1 > t->nsteps)
			t->nsteps = rows[i].step + 1;
	t->steps = calloc((size_t)t->nsteps * t->W + 1, sizeof(*t->steps));
	t->have_step = calloc((size_t)t->nsteps * t->W + 1, 1);
	if (!t->steps || !t->have_step) {
		free(rows);
		return lks_err("out of memory");
	}
	for (int i = 0; i < n; i++)
		if (rows[i].step >= 0 && rows[i].rank >= 0 && rows[i].rank < t->W) {
			size_t at = (size_t)rows[i].step * t->W + rows[i].rank;

			t->steps[at] = rows[i];
			t->have_step[at] = 1;
		}
	free(rows);
	return 0;
}

int lks_run_trace_load(lks_store *s, int64_t run_id, lks_run_trace *t)
{
	memset(t, 0, sizeof(*t));
	t->run_id = run_id;
	t->cur = -1;
	if (lks_store_get_run(s, run_id, lks_run_trace_world, t)
	    || lks_store_get_tensors(s, run_id, lks_run_trace_add_tensor, t)
	    || lks_run_trace_load_steps(s, t))
		return -1;
	t->occ = calloc((size_t)t->nt + 1, sizeof(*t->occ));
	t->stats = calloc((size_t)t->nt * t->W + 1, sizeof(*t->stats));
	t->have = calloc((size_t)t->nt * t->W + 1, 1);
	t->buf = calloc((size_t)t->nt + 1, sizeof(*t->buf));
	if (!t->occ || !t->stats || !t->have || !t->buf)
		return lks_err("out of memory");
	for (int i = 0; i < t->nt; i++)
		for (int j = 0; j < i; j++)
			t->occ[i] += t->phases[j] == t->phases[i] && !strcmp(t->names[j], t->names[i]);
	return 0;
}

/* The stats of every rank at step (rows by seq; have says which were stored). */
int lks_run_trace_step(lks_store *s, lks_run_trace *t, int step)
{
	if (t->cur == step)
		return 0;
	memset(t->have, 0, (size_t)t->nt * t->W);
	for (int r = 0; r < t->W; r++) {
		size_t n;

		if (lks_store_get_stats(s, t->run_id, step, r, t->buf, (size_t)t->nt, &n))
			return -1;
		for (size_t i = 0; i < n && i < (size_t)t->nt; i++) {
			int seq = t->buf[i].seq;

			if (seq >= 0 && seq < t->nt) {
				t->stats[(size_t)r * t->nt + seq] = t->buf[i];
				t->have[(size_t)r * t->nt + seq] = 1;
			}
		}
	}
	t->cur = step;
	return 0;
}

const lks_stat_row *lks_run_trace_row(const lks_run_trace *t, int rank, int seq)
{
	size_t at = (size_t)rank * t->nt + seq;

	return t->have[at] ? &t->stats[at] : NULL;
}

const lks_step_row *lks_run_trace_step_row(const lks_run_trace *t, int step, int rank)
{
	size_t at = (size_t)step * t->W + rank;

	return step < t->nsteps && rank < t->W && t->have_step[at] ? &t->steps[at] : NULL;
}

/* The seq in t of the tensor called name in phase with occurrence occ; -1 if none. */
int lks_run_trace_find(const lks_run_trace *t, const char *name, lks_phase phase, int occ)
{
	for (int i = 0; i < t->nt; i++)
		if (t->phases[i] == phase && t->occ[i] == occ && !strcmp(t->names[i], name))
			return i;
	return -1;
}
