/*
 * follow.c: the per-step comparison of a followed log against its reference (follow.h).
 * The reference is read whole into one array sorted by (step, rank, name): a reference is
 * a golden file (of values, or of class import) or a finished run, bounded where the followed log is not; each step of
 * the log then finds its values by binary search.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/verify/follow.h"
#include "harness/store/golden.h"
#include "kernels/err.h"

struct lks_ref_val {
	int step, rank;
	char name[LKS_IMPORT_NAME_MAX];
	lks_metric_kind kind;
	double value;
};

struct lks_follow_ref {
	struct lks_ref_val *v;
	size_t n, cap;
};

static int lks_ref_cmp(const void *a, const void *b)
{
	const struct lks_ref_val *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int lks_ref_add(lks_follow_ref *ref, int step, int rank, const char *name,
                       lks_metric_kind kind, double value)
{
	if (ref->n == ref->cap) {
		size_t cap = ref->cap ? 2 * ref->cap : 256;
		struct lks_ref_val *p = realloc(ref->v, cap * sizeof(*p));

		if (!p)
			return lks_err("out of memory");
		ref->v = p;
		ref->cap = cap;
	}
	ref->v[ref->n] = (struct lks_ref_val){ step, rank, "", kind, value };
	snprintf(ref->v[ref->n].name, sizeof(ref->v[0].name), "%s", name);
	ref->n++;
	return 0;
}

static int lks_ref_row(void *arg, const lks_metric_row *r)
{
	return lks_ref_add(arg, r->step, r->rank, r->name, r->kind, r->value);
}

static int lks_ref_rec(void *arg, const lks_import_rec *rec)
{
	for (int i = 0; i < rec->n; i++)
		if (lks_ref_add(arg, rec->step, rec->rank, rec->m[i].name, rec->m[i].kind,
		                rec->m[i].value))
			return -1;
	return 0;
}

static int lks_ref_done(lks_follow_ref *ref, int rc, lks_follow_ref **out)
{
	if (rc) {
		lks_follow_ref_free(ref);
		return rc;
	}
	qsort(ref->v, ref->n, sizeof(*ref->v), lks_ref_cmp);
	*out = ref;
	return 0;
}

int lks_follow_ref_run(lks_store *s, int64_t run_id, lks_follow_ref **out)
{
	lks_follow_ref *ref = calloc(1, sizeof(*ref));

	if (!ref)
		return lks_err("out of memory");
	return lks_ref_done(ref, lks_run_metrics(s, run_id, lks_ref_row, ref), out);
}

int lks_follow_ref_file(const lks_import_format *fmt, const char *path, lks_follow_ref **out)
{
	lks_follow_ref *ref = calloc(1, sizeof(*ref));
	lks_import_counts c = { 0 };
	FILE *f;
	int rc;

	if (!ref)
		return lks_err("out of memory");
	if (!(f = fopen(path, "r"))) {
		free(ref);
		return lks_err("cannot open '%s'", path), LKS_E_BAD_INPUT;
	}
	rc = lks_import_format_parse(fmt, path, f, lks_ref_rec, ref, &c);
	fclose(f);
	return lks_ref_done(ref, rc, out);
}

int lks_follow_ref_golden(const char *path, lks_follow_ref **out)
{
	lks_follow_ref *ref = calloc(1, sizeof(*ref));
	lks_stored_run g;
	int rc;

	if (!ref)
		return lks_err("out of memory");
	lks_stored_run_init(&g);
	rc = lks_golden_read(path, &g);
	if (rc == LKS_E_MISSING)
		lks_err("no golden file '%s'", path);
	else if (!rc && !g.nm)
		lks_err("'%s' is a golden of run %s/%s (backend %s), not of class import: it holds "
		        "no metrics", path, g.case_name, g.run_name, g.backend);
	if (rc == LKS_E_MISSING || rc == LKS_E_BAD_INPUT || (!rc && !g.nm))
		rc = LKS_E_BAD_INPUT;  /* bad input, as a bad reference file is */
	for (size_t i = 0; !rc && i < g.nmrows; i++) {
		const struct lks_mrow *m = &g.mrows[i];

		rc = lks_ref_add(ref, m->step, m->rank, g.mnames[m->m], g.mkinds[m->m], m->value);
	}
	lks_stored_run_release(&g);
	return lks_ref_done(ref, rc, out);
}

void lks_follow_ref_free(lks_follow_ref *ref)
{
	if (ref)
		free(ref->v);
	free(ref);
}

long lks_follow_ref_size(const lks_follow_ref *ref)
{
	return (long)ref->n;
}

/* The first value of (step, rank) in ref, or NULL. */
static const struct lks_ref_val *lks_ref_first(const lks_follow_ref *ref, int step, int rank)
{
	size_t lo = 0, hi = ref->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct lks_ref_val *v = &ref->v[mid];

		if (v->step < step || (v->step == step && v->rank < rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ref->n && ref->v[lo].step == step && ref->v[lo].rank == rank ? &ref->v[lo]
	                                                                           : NULL;
}

static int lks_follow_equal(double got, double want, double rtol, double atol)
{
	if (isnan(got) || isnan(want))
		return isnan(got) && isnan(want);
	if (rtol == 0 && atol == 0)
		return !memcmp(&got, &want, sizeof(got));
	if (isinf(got) || isinf(want))
		return got == want;
	return fabs(got - want) <= atol + rtol * fabs(want);
}

int lks_follow_step(const lks_follow_ref *ref, const lks_import_rec *recs, int n, double rtol,
                    double atol, long *compared, lks_follow_div *div)
{
	for (int i = 0; i < n; i++) {
		const lks_import_rec *rec = &recs[i];
		const struct lks_ref_val *v = lks_ref_first(ref, rec->step, rec->rank);

		for (; v && v < ref->v + ref->n && v->step == rec->step && v->rank == rec->rank; v++) {
			int k = 0;

			if (v->kind != LKS_METRIC_NUMERICS)
				continue;
			while (k < rec->n && strcmp(rec->m[k].name, v->name))
				k++;
			*div = (lks_follow_div){ rec->step, rec->rank, "", k < rec->n ? rec->m[k].value : NAN,
			                         v->value, k == rec->n };
			snprintf(div->metric, sizeof(div->metric), "%s", v->name);
			if (k == rec->n || !lks_follow_equal(rec->m[k].value, v->value, rtol, atol))
				return 1;
			++*compared;
		}
	}
	return 0;
}
