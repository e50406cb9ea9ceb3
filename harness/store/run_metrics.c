/*
 * run_metrics.c: an imported run's metrics in a stored run (run.h): the names by index,
 * each with its kind, and the values as rows by (step, rank, index), read whole from the
 * steps rows (their packed metrics) or added one by one (an import golden file, or a
 * lockstep run's step rows when it is compared with an imported run). A name is found by
 * hash (name_index.h: a run may have tens of thousands), at most LKS_IMPORT_MAX_NAMES of
 * them, as many as an import stores. A value is found through an index of where each
 * (step, rank) begins, or by binary search where there is none: a walk asks for one
 * (step, rank, metric) at a time, millions of times for a long log. And a stored run's
 * metric rows, as an export or a followed import's reference reads them (lks_run_metrics).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/import_rec.h"
#include "harness/store/run.h"
#include "kernels/err.h"

_Static_assert(LKS_IMPORT_MAX_NAMES == UINT16_MAX + 1, "a run holds every name an import may");

void lks_stored_run_metrics_release(lks_stored_run *r)
{
	for (int i = 0; i < r->nm; i++)
		free(r->mnames[i]);
	free(r->mnames);
	free(r->mkinds);
	free(r->mrows);
	free(r->mprinted);
	r->mprinted = NULL;
	free(r->mfirst);
	r->mfirst = NULL;
	r->mhint = 0;
	r->nm = r->mnames_cap = 0;
	r->mnames = NULL;
	r->mkinds = NULL;
	r->mrows = NULL;
	r->nmrows = r->mrows_cap = 0;
	lks_name_index_release(&r->mindex);
}

int lks_stored_run_metric_find(const lks_stored_run *r, const char *name)
{
	return lks_name_index_find(&r->mindex, r->mnames, name);
}

/* The index of name, added (with kind) when new; -1 when out of memory. Rows come with
   their names in the same order line after line: the one after the last found first. */
static int lks_metric_index(lks_stored_run *r, const char *name, lks_metric_kind kind)
{
	int m = r->mhint < r->nm && !strcmp(r->mnames[r->mhint], name) ? r->mhint
	        : lks_stored_run_metric_find(r, name);

	if (m >= 0) {
		r->mhint = m + 1 < r->nm ? m + 1 : 0;
		return m;
	}
	if (r->nm == r->mnames_cap) {
		int cap = r->mnames_cap ? 2 * r->mnames_cap : 16;
		char **n = realloc(r->mnames, (size_t)cap * sizeof(*n));
		lks_metric_kind *k = n ? realloc(r->mkinds, (size_t)cap * sizeof(*k)) : NULL;

		if (n)
			r->mnames = n;
		if (!k)
			return lks_err("out of memory");
		r->mkinds = k;
		r->mnames_cap = cap;
	}
	if (!(r->mnames[r->nm] = strdup(name)))
		return lks_err("out of memory");
	if (lks_name_index_add(&r->mindex, name, r->nm)) {
		free(r->mnames[r->nm]);
		return -1;
	}
	r->mkinds[r->nm] = kind;
	return r->nm++;
}

/* The row's printed (lks_metric_row) into mprinted, made (zeros for the rows before)
   at the first that says one: a run none of whose values was printed keeps none. */
static int lks_metric_printed(lks_stored_run *r, size_t i, int printed)
{
	if (!r->mprinted && !printed)
		return 0;
	if (!r->mprinted || r->mprinted_cap < r->mrows_cap) {
		unsigned char *p = realloc(r->mprinted, r->mrows_cap);

		if (!p)
			return lks_err("out of memory");
		memset(p + r->mprinted_cap, 0, r->mrows_cap - r->mprinted_cap);
		r->mprinted = p;
		r->mprinted_cap = r->mrows_cap;
	}
	r->mprinted[i] = (unsigned char)printed;
	return 0;
}

int lks_stored_run_printed(const lks_stored_run *r, const double *v)
{
	const struct lks_mrow *row = (const struct lks_mrow *)(const void *)
	                             ((const char *)v - offsetof(struct lks_mrow, value));

	return r->mprinted ? r->mprinted[row - r->mrows] : 0;
}

int lks_stored_run_add_metric(lks_stored_run *r, int step, int rank, const char *name,
                              lks_metric_kind kind, double value, int printed)
{
	int m;

	if (rank < 0 || rank > UINT16_MAX)
		return lks_err("metric '%s' of rank %d: ranks 0 to %d only", name, rank, UINT16_MAX);
	if ((m = lks_metric_index(r, name, kind)) < 0)
		return -1;
	if (m >= LKS_IMPORT_MAX_NAMES)
		return lks_err("more than %d metric names in one run", LKS_IMPORT_MAX_NAMES);
	if (r->nmrows == r->mrows_cap) {
		size_t cap = r->mrows_cap ? 2 * r->mrows_cap : 256;
		struct lks_mrow *p = realloc(r->mrows, cap * sizeof(*p));

		if (!p)
			return lks_err("out of memory");
		r->mrows = p;
		r->mrows_cap = cap;
	}
	if (printed < 0 || printed > 15)
		return lks_err("metric '%s': %d decimals printed", name, printed - 1);
	if (lks_metric_printed(r, r->nmrows, printed))
		return -1;
	r->mrows[r->nmrows++] = (struct lks_mrow){ .value = value, .step = step,
	                                           .rank = (uint16_t)rank, .m = (uint16_t)m };
	free(r->mfirst);  /* out of date: made again once the rows are in */
	r->mfirst = NULL;
	if (step + 1 > r->nsteps)
		r->nsteps = step + 1;
	if (rank + 1 > r->W)
		r->W = rank + 1;
	return 0;
}

static int lks_load_metric_row(void *arg, const lks_metric_row *row)
{
	return lks_stored_run_add_metric(arg, row->step, row->rank, row->name, row->kind,
	                                 row->value, row->printed);
}

int lks_stored_run_load_metrics(lks_store *s, lks_stored_run *r)
{
	/* only an import (backend import:FMT) stores metrics: lockstep's own runs cost no
	   query, and a database older than steps.metrics (read-only, not upgraded) reads */
	if (!lks_stored_run_imported(r))
		return 0;
	if (lks_store_get_metrics(s, r->id, NULL, lks_load_metric_row, r))
		return -1;
	lks_stored_run_metrics_index(r);
	return 0;
}

/* A lockstep run's step rows as the metrics an import of them stores (lockstep export
   writes the same three), by (step, rank) as the rows come. */
static int lks_stored_run_metrics_of_steps(lks_stored_run *r)
{
	static const char *const names[] = { "grad_norm", "loss", "lr" };

	for (int i = 0; i < r->nsteprows; i++) {
		const lks_step_row *s = &r->steprows[i];
		const double v[] = { s->grad_norm, s->loss, s->lr };

		for (int k = 0; k < 3; k++)
			if (lks_stored_run_add_metric(r, s->step, s->rank, names[k], LKS_METRIC_NUMERICS,
			                              v[k], 0))
				return -1;
	}
	return 0;
}

int lks_stored_run_metrics_pair(lks_stored_run *a, lks_stored_run *b)
{
	if (!a->nm == !b->nm)
		return 0;
	if (lks_stored_run_metrics_of_steps(a->nm ? b : a))
		return -1;
	lks_stored_run_metrics_index(a->nm ? b : a);
	return 0;
}

void lks_stored_run_metrics_index(lks_stored_run *r)
{
	size_t keys, k = 0;
	int w = r->W > 0 ? r->W : 1;

	free(r->mfirst);
	r->mfirst = NULL;
	keys = (size_t)r->nsteps * (size_t)w;
	/* dense: no more entries than rows and then some (a log of every step and rank is one
	   entry a line); a golden file of every 100th step keeps its binary search */
	if (!r->nmrows || keys > 2 * r->nmrows + 4096 || !(r->mfirst = malloc((keys + 1) * sizeof(size_t))))
		return;
	for (size_t i = 0; i < r->nmrows; i++) {
		const struct lks_mrow *x = &r->mrows[i];
		size_t key = (size_t)x->step * (size_t)w + (size_t)x->rank;

		if (x->step < 0 || x->rank >= w || x->step >= r->nsteps || key + 1 < k) {
			free(r->mfirst);  /* not by (step, rank): the binary search's order is not met */
			r->mfirst = NULL;
			return;
		}
		while (k <= key)
			r->mfirst[k++] = i;
	}
	while (k <= keys)
		r->mfirst[k++] = r->nmrows;
	r->mfirst_w = w;
	r->mfirst_steps = r->nsteps;
}

/* Rows by (step, rank), and within one (step, rank) in the order they came: a linear look
   among the few metrics of one line after the index or the binary search. */
size_t lks_stored_run_metric_rows(const lks_stored_run *r, int step, int rank,
                                  const struct lks_mrow **rows)
{
	size_t lo = 0, hi = r->nmrows, end;

	*rows = NULL;
	if (r->mfirst) {
		size_t key = (size_t)step * (size_t)r->mfirst_w + (size_t)rank;

		if (step < 0 || rank < 0 || step >= r->mfirst_steps || rank >= r->mfirst_w)
			return 0;
		*rows = r->mrows + r->mfirst[key];
		return r->mfirst[key + 1] - r->mfirst[key];
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct lks_mrow *x = &r->mrows[mid];

		if (x->step < step || (x->step == step && x->rank < rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < r->nmrows && r->mrows[end].step == step && r->mrows[end].rank == rank;
	     end++)
		;
	*rows = r->mrows + lo;
	return end - lo;
}

const double *lks_stored_run_metric(const lks_stored_run *r, int step, int rank, int m)
{
	const struct lks_mrow *rows;
	size_t n = lks_stored_run_metric_rows(r, step, rank, &rows);

	for (size_t i = 0; i < n; i++)
		if (rows[i].m == m)
			return &rows[i].value;
	return NULL;
}

/* A lockstep run's step rows as the metrics an import of them stores, by name. */
static int lks_steprows_metrics(const lks_stored_run *run,
                                int (*fn)(void *arg, const lks_metric_row *row), void *arg)
{
	static const char *const names[] = { "grad_norm", "loss", "lr" };

	for (int i = 0; i < run->nsteprows; i++) {
		const lks_step_row *s = &run->steprows[i];
		const double v[] = { s->grad_norm, s->loss, s->lr };

		for (int k = 0; k < 3; k++) {
			lks_metric_row r = { s->step, s->rank, names[k], LKS_METRIC_NUMERICS, v[k], 0 };
			int rc = fn(arg, &r);

			if (rc)
				return rc;
		}
	}
	return 0;
}

int lks_run_metrics(lks_store *s, int64_t run_id,
                    int (*fn)(void *arg, const lks_metric_row *row), void *arg)
{
	lks_stored_run run;
	int rc = -1;

	lks_stored_run_init(&run);
	if (lks_stored_run_load(s, run_id, LKS_LOAD_TRACE, &run))
		goto out;
	if (lks_stored_run_imported(&run))
		rc = lks_store_get_metrics(s, run_id, NULL, fn, arg);
	else
		rc = lks_steprows_metrics(&run, fn, arg);
out:
	lks_stored_run_release(&run);
	return rc;
}
