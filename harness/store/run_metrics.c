/*
 * run_metrics.c: an imported run's metrics in a stored run (run.h): the names by index,
 * each with its kind, and the values as rows by (step, rank, index), read whole from the
 * steps rows (their packed metrics) or added one by one (an import golden file, or a
 * lockstep run's step rows when it is compared with an imported run). A value is found by
 * binary search: a walk asks for one (step, rank, metric) at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/store/run.h"
#include "kernels/err.h"

void lks_stored_run_metrics_release(lks_stored_run *r)
{
	for (int i = 0; i < r->nm; i++)
		free(r->mnames[i]);
	free(r->mnames);
	free(r->mkinds);
	free(r->mrows);
	r->nm = r->mnames_cap = 0;
	r->mnames = NULL;
	r->mkinds = NULL;
	r->mrows = NULL;
	r->nmrows = r->mrows_cap = 0;
}

int lks_stored_run_metric_find(const lks_stored_run *r, const char *name)
{
	for (int i = 0; i < r->nm; i++)
		if (!strcmp(r->mnames[i], name))
			return i;
	return -1;
}

/* The index of name, added (with kind) when new; -1 when out of memory. */
static int lks_metric_index(lks_stored_run *r, const char *name, lks_metric_kind kind)
{
	int m = lks_stored_run_metric_find(r, name);

	if (m >= 0)
		return m;
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
	r->mkinds[r->nm] = kind;
	return r->nm++;
}

int lks_stored_run_add_metric(lks_stored_run *r, int step, int rank, const char *name,
                              lks_metric_kind kind, double value)
{
	int m = lks_metric_index(r, name, kind);

	if (m < 0)
		return -1;
	if (r->nmrows == r->mrows_cap) {
		size_t cap = r->mrows_cap ? 2 * r->mrows_cap : 256;
		struct lks_mrow *p = realloc(r->mrows, cap * sizeof(*p));

		if (!p)
			return lks_err("out of memory");
		r->mrows = p;
		r->mrows_cap = cap;
	}
	r->mrows[r->nmrows++] = (struct lks_mrow){ step, rank, m, value };
	if (step + 1 > r->nsteps)
		r->nsteps = step + 1;
	if (rank + 1 > r->W)
		r->W = rank + 1;
	return 0;
}

static int lks_load_metric_row(void *arg, const lks_metric_row *row)
{
	return lks_stored_run_add_metric(arg, row->step, row->rank, row->name, row->kind,
	                                 row->value);
}

int lks_stored_run_load_metrics(lks_store *s, lks_stored_run *r)
{
	/* only an import (backend import:FMT) stores metrics: lockstep's own runs cost no
	   query, and a database older than steps.metrics (read-only, not upgraded) reads */
	if (!r->backend || strncmp(r->backend, "import:", 7))
		return 0;
	return lks_store_get_metrics(s, r->id, NULL, lks_load_metric_row, r);
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
			                              v[k]))
				return -1;
	}
	return 0;
}

int lks_stored_run_metrics_pair(lks_stored_run *a, lks_stored_run *b)
{
	if (!a->nm == !b->nm)
		return 0;
	return lks_stored_run_metrics_of_steps(a->nm ? b : a);
}

/* Rows by (step, rank), and within one (step, rank) in the order they came: a linear look
   among the few metrics of one line after the binary search. */
const double *lks_stored_run_metric(const lks_stored_run *r, int step, int rank, int m)
{
	size_t lo = 0, hi = r->nmrows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct lks_mrow *x = &r->mrows[mid];

		if (x->step < step || (x->step == step && x->rank < rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < r->nmrows && r->mrows[lo].step == step && r->mrows[lo].rank == rank; lo++)
		if (r->mrows[lo].m == m)
			return &r->mrows[lo].value;
	return NULL;
}
