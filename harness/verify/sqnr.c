/* sqnr.c: SQNR of two runs' gradients, compared while the runs are made (see sqnr.h). */
#include "harness/verify/sqnr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/model.h"
#include "kernels/err.h"

struct lks_sqnr_pair {
	int a, b;               /* run indices of the check's a and b */
	int first;              /* the one run first: its gradients go to tmp */
	FILE *tmp;              /* (steps, nparams) floats */
	size_t nparams;
	int64_t id_first;
	lks_sqnr_row *rows;     /* the second run's results */
	size_t nrows, caprows;
	float *buf;             /* one step of the first run's gradients */
	int failed;             /* an I/O error or a mismatch (lks_err said which) */
	int dropped;            /* a run of it failed: nothing compared, nothing stored */
	char err[256];
};

struct lks_sqnr_pairs {
	struct lks_sqnr_pair *p;
	int n;
	int run;                /* the run being made */
};

double lks_sqnr_db(const float *a, const float *b, size_t n)
{
	double sig = 0.0, noise = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d = (double)a[i] - (double)b[i];

		sig += (double)b[i] * (double)b[i];
		noise += d * d;
	}
	if (noise == 0.0)
		return INFINITY;  /* equal, zero tensors included */
	return 10.0 * log10(sig / noise);  /* sig 0: -inf */
}

static lks_sqnr_pairs *lks_sqnr_alloc(int max)
{
	lks_sqnr_pairs *ps = calloc(1, sizeof(*ps));

	if (ps && !(ps->p = calloc((size_t)max + 1, sizeof(*ps->p)))) {
		free(ps);
		ps = NULL;
	}
	if (!ps)
		lks_err("out of memory");
	return ps;
}

static void lks_sqnr_add(lks_sqnr_pairs *ps, int a, int b)
{
	struct lks_sqnr_pair *p = &ps->p[ps->n++];

	p->a = a;
	p->b = b;
	p->first = a < b ? a : b;
}

int lks_sqnr_begin(const lks_case *c, const int *selected, lks_sqnr_pairs **out)
{
	lks_sqnr_pairs *ps;

	*out = NULL;
	if (!(ps = lks_sqnr_alloc(c->nchecks)))
		return -1;
	for (int i = 0; i < c->nchecks; i++) {
		const lks_check_cfg *k = &c->checks[i];
		int a, b;

		if (k->kind != LKS_CHECK_SQNR)
			continue;
		a = (int)(lks_case_run(c, k->a) - c->runs);
		b = (int)(lks_case_run(c, k->b) - c->runs);
		if (selected[a] && selected[b])
			lks_sqnr_add(ps, a, b);
	}
	if (!ps->n) {
		lks_sqnr_free(ps);
		return 0;
	}
	*out = ps;
	return 0;
}

int lks_sqnr_begin_pair(int a, int b, lks_sqnr_pairs **out)
{
	if (!(*out = lks_sqnr_alloc(1)))
		return -1;
	lks_sqnr_add(*out, a, b);
	return 0;
}

static void lks_sqnr_fail(struct lks_sqnr_pair *p, const char *msg)
{
	if (!p->failed)
		snprintf(p->err, sizeof(p->err), "%s", msg);
	p->failed = 1;
}

/* One step of one pair: record (first run) or compare (second run). */
static void lks_sqnr_step(struct lks_sqnr_pair *p, int run, int step, const float *g,
                          const lks_model *m)
{
	size_t n = m->nparams;

	if (p->failed || p->dropped)
		return;
	if (!p->tmp) {
		if (!(p->tmp = tmpfile()) || !(p->buf = malloc(n * sizeof(float)))) {
			lks_sqnr_fail(p, "cannot make a temporary file for the gradients");
			return;
		}
		p->nparams = n;
	}
	if (n != p->nparams) {
		lks_sqnr_fail(p, "the two runs have models of other sizes");
		return;
	}
	if (run == p->first) {
		if (fwrite(g, sizeof(float), n, p->tmp) != n)
			lks_sqnr_fail(p, "cannot write the gradients' temporary file");
		return;
	}
	if (fseeko(p->tmp, (off_t)step * (off_t)(n * sizeof(float)), SEEK_SET)
	    || fread(p->buf, sizeof(float), n, p->tmp) != n) {
		lks_sqnr_fail(p, "the second run has more steps than the first");
		return;
	}
	if (p->nrows + (size_t)m->nt > p->caprows) {
		size_t cap = p->caprows ? 2 * p->caprows : 1024;
		lks_sqnr_row *r;

		while (cap < p->nrows + (size_t)m->nt)
			cap *= 2;
		if (!(r = realloc(p->rows, cap * sizeof(*r)))) {
			lks_sqnr_fail(p, "out of memory");
			return;
		}
		p->rows = r;
		p->caprows = cap;
	}
	/* the backward produces the gradients from the last parameter to the first: seq is
	   that order, as the trace's */
	for (int i = m->nt - 1; i >= 0; i--) {
		const lks_ptensor *t = &m->t[i];
		const float *live = g + t->off, *rec = p->buf + t->off;
		lks_sqnr_row *r = &p->rows[p->nrows++];

		r->step = step;
		r->seq = m->nt - 1 - i;
		snprintf(r->tensor, sizeof(r->tensor), "%s.grad", t->name);
		r->db = run == p->a ? lks_sqnr_db(live, rec, t->n) : lks_sqnr_db(rec, live, t->n);
	}
}

static void lks_sqnr_on_grads(void *arg, int step, const float *g, const lks_model *m)
{
	lks_sqnr_pairs *ps = arg;

	for (int i = 0; i < ps->n; i++)
		if (ps->p[i].a == ps->run || ps->p[i].b == ps->run)
			lks_sqnr_step(&ps->p[i], ps->run, step, g, m);
}

void lks_sqnr_hook(lks_sqnr_pairs *ps, int run, lks_runner_opts *o)
{
	if (!ps)
		return;
	for (int i = 0; i < ps->n; i++)
		if (ps->p[i].a == run || ps->p[i].b == run) {
			ps->run = run;
			o->on_grads = lks_sqnr_on_grads;
			o->on_grads_arg = ps;
			return;
		}
}

int lks_sqnr_end_run(lks_sqnr_pairs *ps, int run, int64_t run_id, lks_store *s)
{
	if (!ps)
		return 0;
	for (int i = 0; i < ps->n; i++) {
		struct lks_sqnr_pair *p = &ps->p[i];

		if ((p->a != run && p->b != run) || p->dropped)
			continue;
		if (p->failed)
			return lks_err("sqnr of runs %d and %d: %s", p->a, p->b, p->err);
		if (run == p->first) {
			p->id_first = run_id;
			continue;
		}
		if (lks_store_sqnr_put(s, run == p->a ? run_id : p->id_first,
		                       run == p->b ? run_id : p->id_first, p->rows, p->nrows))
			return -1;
	}
	return 0;
}

void lks_sqnr_drop_run(lks_sqnr_pairs *ps, int run)
{
	for (int i = 0; ps && i < ps->n; i++)
		ps->p[i].dropped |= ps->p[i].a == run || ps->p[i].b == run;
}

void lks_sqnr_free(lks_sqnr_pairs *ps)
{
	if (!ps)
		return;
	for (int i = 0; i < ps->n; i++) {
		if (ps->p[i].tmp)
			fclose(ps->p[i].tmp);
		free(ps->p[i].rows);
		free(ps->p[i].buf);
	}
	free(ps->p);
	free(ps);
}
