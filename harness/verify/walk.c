/*
 * walk.c: the divergence walker (walk.h): two stored runs in the order of a divergence,
 * each pair of values compared bit for bit or within a tolerance, the first that parts
 * named with its errors and ULP distance.
 */
#include "harness/verify/walk.h"

#include <fnmatch.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import.h"
#include "harness/verify/printed.h"
#include "kernels/err.h"

/* ---- ULP distance ---- */

/* Positive values order by their bits; a negative value goes as far below zero as its
   magnitude is above it, so -0 and +0 both map to 0. */
static int64_t lks_ord64(double x)
{
	uint64_t u;

	memcpy(&u, &x, sizeof(u));
	return u >> 63 ? -(int64_t)(u & 0x7fffffffffffffffull) : (int64_t)u;
}

static int64_t lks_ord32(float x)
{
	uint32_t u;

	memcpy(&u, &x, sizeof(u));
	return u >> 31 ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

/* |x - y| of two ordinals: at most 2 * 0x7ff0000000000000 < 2^64, so the unsigned
   difference is exact. */
static uint64_t lks_ord_dist(int64_t x, int64_t y)
{
	return x >= y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
}

uint64_t lks_ulp_f64(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b) ? 0 : LKS_ULP_NAN;
	return lks_ord_dist(lks_ord64(a), lks_ord64(b));
}

uint64_t lks_ulp_f32(float a, float b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b) ? 0 : LKS_ULP_NAN;
	return lks_ord_dist(lks_ord32(a), lks_ord32(b));
}

/* ---- the divergence's place and values ---- */

void lks_walk_at(lks_check_result *res, const lks_stored_run *a, int step, int rank, int seq)
{
	res->failed = 1;
	res->step = step;
	res->rank = rank;
	if (seq >= 0) {
		snprintf(res->tensor, sizeof(res->tensor), "%s", a->names[seq]);
		res->phase = (int)a->phases[seq];
	}
}

void lks_walk_real(lks_check_result *res, const char *field, double a, double b, int f32)
{
	res->field = field;
	res->value_type = LKS_VALUE_REAL;
	res->value_f32 = f32;
	res->a = a;
	res->b = b;
	res->abs_err = fabs(a - b);
	res->rel_err = a == b ? 0.0 : res->abs_err / fabs(b);
	if (!isnan(a) && !isnan(b)) {
		uint64_t u = f32 ? lks_ulp_f32((float)a, (float)b) : lks_ulp_f64(a, b);

		res->ulp = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
	}
}

void lks_walk_int(lks_check_result *res, const char *field, int64_t a, int64_t b, int is_hash)
{
	res->field = field;
	res->value_type = LKS_VALUE_INT;
	res->ia = a;
	res->ib = b;
	if (!is_hash) {
		res->abs_err = fabs((double)a - (double)b);
		res->rel_err = a == b ? 0.0 : res->abs_err / fabs((double)b);
	}
}

/* ---- two values ---- */

/* What a field of a row is, and so how it compares. */
enum { LKS_FIELD_F64, LKS_FIELD_F32, LKS_FIELD_COUNT, LKS_FIELD_COUNT_EXACT, LKS_FIELD_HASH };

typedef struct lks_field {
	const char *name;
	size_t off;               /* in lks_stat_row or lks_step_row */
	int type;
} lks_field;

/* The stat rows' fields in the order a divergence names the first that differs: the hash
   last, since any difference changes it. */
static const lks_field lks_stat_fields[] = {
	{ "l2", offsetof(lks_stat_row, l2), LKS_FIELD_F64 },
	{ "amax", offsetof(lks_stat_row, amax), LKS_FIELD_F32 },
	{ "scale", offsetof(lks_stat_row, scale), LKS_FIELD_F32 },
	/* a NaN or an infinity more is a new kind of failure, never within a tolerance */
	{ "nonfinite", offsetof(lks_stat_row, nonfinite), LKS_FIELD_COUNT_EXACT },
	{ "underflow", offsetof(lks_stat_row, underflow), LKS_FIELD_COUNT },
	{ "saturated", offsetof(lks_stat_row, saturated), LKS_FIELD_COUNT },
	{ "hash", offsetof(lks_stat_row, hash), LKS_FIELD_HASH },
};

/* The step rows' fields, a bit each in lks_walk_opts.step_fields. */
static const lks_field lks_step_fields[] = {
	{ "loss", offsetof(lks_step_row, loss), LKS_FIELD_F64 },
	{ "grad_norm", offsetof(lks_step_row, grad_norm), LKS_FIELD_F64 },
	{ "lr", offsetof(lks_step_row, lr), LKS_FIELD_F64 },
};

#define LKS_NFIELDS(t) ((int)(sizeof(t) / sizeof((t)[0])))

static double lks_real_at(const void *row, const lks_field *f)
{
	const char *p = (const char *)row + f->off;
	float v32;
	double v64;

	if (f->type == LKS_FIELD_F32) {
		memcpy(&v32, p, sizeof(v32));
		return v32;
	}
	memcpy(&v64, p, sizeof(v64));
	return v64;
}

static int64_t lks_int_at(const void *row, const lks_field *f)
{
	int64_t v;

	memcpy(&v, (const char *)row + f->off, sizeof(v));
	return v;
}

/* Bits equal, or both NaN. */
static int lks_same_bits(double a, double b, int f32)
{
	float fa = (float)a, fb = (float)b;

	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return f32 ? memcmp(&fa, &fb, sizeof(fa)) == 0 : memcmp(&a, &b, sizeof(a)) == 0;
}

static int lks_near(const lks_walk_opts *o, double a, double b)
{
	if (o->nan_equal && (isnan(a) || isnan(b)))
		return isnan(a) && isnan(b);
	if (o->nan_equal && (isinf(a) || isinf(b)))
		return a == b;
	return fabs(a - b) <= o->atol + o->rtol * fabs(b);
}

/* Field f of rows a and b agree under o (va, vb: their values as reals). */
static int lks_field_agrees(const lks_walk_opts *o, const lks_field *f, const void *a,
                            const void *b, double va, double vb)
{
	switch (f->type) {
	case LKS_FIELD_HASH:
		return !o->exact || lks_int_at(a, f) == lks_int_at(b, f);
	case LKS_FIELD_COUNT_EXACT:
		return lks_int_at(a, f) == lks_int_at(b, f);
	case LKS_FIELD_COUNT:
		return o->exact ? lks_int_at(a, f) == lks_int_at(b, f) : lks_near(o, va, vb);
	default:
		return o->exact ? lks_same_bits(va, vb, f->type == LKS_FIELD_F32) : lks_near(o, va, vb);
	}
}

/* Field f of rows a and b: 0 when they agree under o, else 1 with the values (and, for a
   tolerance, its bound) in res. */
static int lks_field_differs(const lks_walk_opts *o, const lks_field *f, const void *a,
                             const void *b, lks_check_result *res)
{
	int real = f->type == LKS_FIELD_F64 || f->type == LKS_FIELD_F32;
	double va = real ? lks_real_at(a, f) : (double)lks_int_at(a, f);
	double vb = real ? lks_real_at(b, f) : (double)lks_int_at(b, f);
	int tol = !o->exact && f->type != LKS_FIELD_COUNT_EXACT;

	if (lks_field_agrees(o, f, a, b, va, vb))
		return 0;
	if (real)
		lks_walk_real(res, f->name, va, vb, f->type == LKS_FIELD_F32);
	else
		lks_walk_int(res, f->name, lks_int_at(a, f), lks_int_at(b, f), f->type == LKS_FIELD_HASH);
	if (tol)
		snprintf(res->note, sizeof(res->note), "|a - b| > atol %g + rtol %g * |b| = %.6g",
		         o->atol, o->rtol, o->atol + o->rtol * fabs(vb));
	return 1;
}

/* The metric as a field of the rows it lives in. */
static lks_field lks_metric_field(const lks_metric *m)
{
	return (lks_field){ m->name, m->off, m->f32 ? LKS_FIELD_F32 : LKS_FIELD_F64 };
}

/* The tensor has no such value: a NaN that is not numerical, as the scale of a tensor that
   was not quantized (a quantized tensor's scale is NaN only when its amax is, and then the
   tensor holds a NaN). */
static int lks_metric_absent(const lks_metric *m, const lks_stat_row *r)
{
	lks_field f = lks_metric_field(m);

	return m->nan_absent && isnan(lks_real_at(r, &f)) && r->nonfinite == 0;
}

/* ---- rows ---- */

int lks_walk_pair(const lks_walk_opts *o, const lks_stored_run *a, const lks_stat_row *ra,
                  const lks_stat_row *rb, int step, int rank, int seq, lks_check_result *res)
{
	const lks_metric *m = o->metric;

	if (!ra && !rb)
		return 0;
	if (!ra || !rb) {
		lks_walk_at(res, a, step, rank, seq);
		res->field = "row";
		snprintf(res->note, sizeof(res->note), "no stats row in %s",
		         !ra ? o->label_a : o->label_b);
		return 1;
	}
	if (m) {
		lks_field f = lks_metric_field(m);

		if ((lks_metric_absent(m, ra) && lks_metric_absent(m, rb))
		    || !lks_field_differs(o, &f, ra, rb, res))
			return 0;
	} else {
		int i = 0;

		while (i < LKS_NFIELDS(lks_stat_fields)
		       && !lks_field_differs(o, &lks_stat_fields[i], ra, rb, res))
			i++;
		if (i == LKS_NFIELDS(lks_stat_fields))
			return 0;
	}
	lks_walk_at(res, a, step, rank, seq);
	return 1;
}

/* Which ranks of two runs the walk pairs: rank by rank, or where their world sizes
   differ but not their replicas (a tensor-parallel run's tp groups, options "tp=N": each
   traces whole tensors), replica by replica: the first rank of each group (n pairs, rank
   i sa of a with rank i sb of b). */
struct lks_walk_ranks {
	int n, sa, sb;
};

int lks_stored_run_shards(const lks_stored_run *r)
{
	return r->options && strstr(r->options, " trace=shards") != NULL;
}

int lks_stored_run_tp(const lks_stored_run *r)
{
	const char *p = r->options ? strstr(r->options, "tp=") : NULL;

	while (p && p != r->options && p[-1] != ' ')
		p = strstr(p + 3, "tp=");
	return p && atoi(p + 3) > 0 ? atoi(p + 3) : 1;
}

static int lks_walk_ranks_of(const lks_stored_run *a, const lks_stored_run *b,
                             struct lks_walk_ranks *k)
{
	int ta = lks_stored_run_tp(a), tb = lks_stored_run_tp(b);

	*k = (struct lks_walk_ranks){ a->W, 1, 1 };
	if (a->W == b->W)
		return 0;
	if (a->W % ta || b->W % tb || a->W / ta != b->W / tb)
		return -1;
	*k = (struct lks_walk_ranks){ a->W / ta, ta, tb };
	return 0;
}

/* The step rows of both runs at step, rank by rank, in the fields o asks for. */
static int lks_walk_step_rows(const lks_walk_opts *o, const lks_stored_run *a,
                              const lks_stored_run *b, const struct lks_walk_ranks *k,
                              int step, lks_check_result *res)
{
	for (int i = 0; o->step_fields && i < k->n; i++) {
		int r = i * k->sa;
		const lks_step_row *ra = lks_stored_run_step_row(a, step, r);
		const lks_step_row *rb = lks_stored_run_step_row(b, step, i * k->sb);

		if (!ra && !rb)
			continue;
		if (!ra || !rb) {
			lks_walk_at(res, a, step, r, -1);
			res->field = "row";
			snprintf(res->note, sizeof(res->note), "no step row in %s",
			         !ra ? o->label_a : o->label_b);
			return 1;
		}
		for (int i = 0; i < LKS_NFIELDS(lks_step_fields); i++)
			if ((o->step_fields & (1u << i))
			    && lks_field_differs(o, &lks_step_fields[i], ra, rb, res)) {
				lks_walk_at(res, a, step, r, -1);
				return 1;
			}
	}
	return 0;
}

/* ---- an imported run's metrics ---- */

/* The note of two values that part, where either was printed (a log's text): each side's
   precision, and whether they agree at the coarser, so that a text log held against an
   event file says what the text could say. */
static void lks_walk_printed_note(const lks_walk_opts *o, lks_check_result *res, double va,
                                  int pa, double vb, int pb)
{
	char sa[48], sb[48];
	int d = lks_printed_common(pa, pb);

	if (d < 0)
		return;
	lks_printed_side(sa, sizeof(sa), pa);
	lks_printed_side(sb, sizeof(sb), pb);
	snprintf(res->note, sizeof(res->note), "%s %s, %s %s: %s at %d decimal%s", o->label_a,
	         sa, o->label_b, sb, lks_printed_agree(va, pa, vb, pb) ? "equal" : "they differ",
	         d, d == 1 ? "" : "s");
}

/* lks_walk_metric_pair, and where the two values agree, the decimals they were compared
   at into *d (lks_printed_common; -1: full precision). */
static int lks_walk_mpair(const lks_walk_opts *o, const lks_stored_run *a, int m, int ra,
                          const lks_stored_run *b, int mb, int rb, int step,
                          lks_check_result *res, int *d)
{
	const double *va = m >= 0 ? lks_stored_run_metric(a, step, ra, m) : NULL;
	const double *vb = mb >= 0 ? lks_stored_run_metric(b, step, rb, mb) : NULL;
	lks_field f = { "value", 0, LKS_FIELD_F64 };  /* the value itself */
	int pa, pb;

	*d = -1;
	if (!va && !vb)
		return 0;
	/* a performance metric NaN on both sides was measured on neither (Megatron-LM's golden
	   values hold "nan" for the first iteration's time): nothing to hold to a tolerance */
	if (va && vb && isnan(*va) && isnan(*vb)
	    && (m >= 0 ? a->mkinds[m] : b->mkinds[mb]) == LKS_METRIC_PERFORMANCE)
		return 0;
	pa = va ? lks_stored_run_printed(a, va) : 0;
	pb = vb ? lks_stored_run_printed(b, vb) : 0;
	if (va && vb && !lks_field_differs(o, &f, va, vb, res)) {
		*d = lks_printed_common(pa, pb);
		return 0;
	}
	lks_walk_at(res, a, step, ra, -1);
	snprintf(res->metric, sizeof(res->metric), "%s", m >= 0 ? a->mnames[m] : b->mnames[mb]);
	if (!va || !vb) {
		res->field = "row";
		snprintf(res->note, sizeof(res->note), "no value in %s", !va ? o->label_a : o->label_b);
	} else {
		lks_walk_printed_note(o, res, *va, pa, *vb, pb);
	}
	return 1;
}

int lks_walk_metric_pair(const lks_walk_opts *o, const lks_stored_run *a, int m, int ra,
                         const lks_stored_run *b, int mb, int rb, int step,
                         lks_check_result *res)
{
	int d;

	return lks_walk_mpair(o, a, m, ra, b, mb, rb, step, res, &d);
}

/* The place of a metric name in the walk: its row of the import metric table, names the
   table lacks after every row of it. */
static int lks_metric_rank(const char *name)
{
	const lks_import_metric *row;

	for (int i = 0; (row = lks_import_metric_at(i)); i++)
		if (!strcmp(row->name, name))
			return i;
	return 1 << 20;
}

struct lks_mpair {
	const char *name;
	int ma, mb;
};

static int lks_mpair_cmp(const void *x, const void *y)
{
	const struct lks_mpair *p = x, *q = y;
	int rp = lks_metric_rank(p->name), rq = lks_metric_rank(q->name);

	return rp != rq ? (rp < rq ? -1 : 1) : strcmp(p->name, q->name);
}

/* The metrics a walk compares, as pairs (index in a, in b; -1: not there), in the walk's
   order; *n of them. */
static struct lks_mpair *lks_walk_mpairs(const lks_walk_opts *o, const lks_stored_run *a,
                                         const lks_stored_run *b, int *n)
{
	struct lks_mpair *p = malloc(sizeof(*p) * ((size_t)a->nm + (size_t)b->nm + 1));

	*n = 0;
	for (int side = 0; p && side < 2; side++) {
		const lks_stored_run *r = side ? b : a, *other = side ? a : b;

		for (int i = 0; i < r->nm; i++) {
			int j = lks_stored_run_metric_find(other, r->mnames[i]);

			if ((side && j >= 0) || (o->metric_name ? strcmp(o->metric_name, r->mnames[i])
			                         : r->mkinds[i] != LKS_METRIC_NUMERICS))
				continue;
			p[(*n)++] = (struct lks_mpair){ r->mnames[i], side ? j : i, side ? i : j };
		}
	}
	if (p)
		qsort(p, (size_t)*n, sizeof(*p), lks_mpair_cmp);
	return p;
}

static int lks_key_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* The walk's places (pair i, rank r) as keys i W + r where side run r (pair of each of its
   metric indexes in at) logged a value at step, appended to keys */
static size_t lks_walk_logged(const lks_stored_run *run, const int *at, int step, int W,
                              uint64_t *keys, size_t nk)
{
	for (int r = 0; r < run->W && r < W; r++) {
		const struct lks_mrow *rows;
		size_t nr = lks_stored_run_metric_rows(run, step, r, &rows);

		for (size_t k = 0; k < nr; k++)
			if (at[rows[k].m] >= 0)
				keys[nk++] = (uint64_t)at[rows[k].m] * (uint64_t)W + (uint64_t)r;
	}
	return nk;
}

/* Step by step, metric by metric, rank by rank: in each step only the places either run
   logged (the others compare nothing), so a run of many names, each logged at few steps,
   is walked in the time of its rows. cnt counts every place, as one walk of them all. */
static int lks_walk_metrics(const lks_walk_opts *o, const lks_stored_run *a,
                            const lks_stored_run *b, int nsteps, lks_check_result *res,
                            lks_walk_count *cnt)
{
	int n, W = a->W > b->W ? a->W : b->W, rc = 0, dmin = 99, dmax = -1;
	struct lks_mpair *p = lks_walk_mpairs(o, a, b, &n);
	int *at_a = calloc((size_t)a->nm + 1, sizeof(int)), *at_b = calloc((size_t)b->nm + 1,
	                                                                    sizeof(int));
	uint64_t *keys = malloc((a->nmrows + b->nmrows + 1) * sizeof(uint64_t));

	if (!p || !at_a || !at_b || !keys) {
		rc = lks_err("out of memory");
		goto out;
	}
	for (int m = 0; m < a->nm; m++)
		at_a[m] = -1;
	for (int m = 0; m < b->nm; m++)
		at_b[m] = -1;
	for (int i = 0; i < n; i++) {
		if (p[i].ma >= 0)
			at_a[p[i].ma] = i;
		if (p[i].mb >= 0)
			at_b[p[i].mb] = i;
	}
	cnt->nmatch = cnt->nshared = n;
	for (int step = 0; step < nsteps && !rc; step++) {
		size_t nk = lks_walk_logged(a, at_a, step, W, keys, 0);

		nk = lks_walk_logged(b, at_b, step, W, keys, nk);
		qsort(keys, nk, sizeof(*keys), lks_key_cmp);
		for (size_t k = 0; k < nk && !rc; k++) {
			int i = (int)(keys[k] / (uint64_t)W), r = (int)(keys[k] % (uint64_t)W), d;

			if (k > 0 && keys[k] == keys[k - 1])
				continue;
			if (lks_walk_mpair(o, a, p[i].ma, r, b, p[i].mb, r, step, res, &d)) {
				cnt->ncompared += (int64_t)keys[k] + 1;  /* this step's places up to it */
				rc = 1;
			} else if (d >= 0) {
				dmin = d < dmin ? d : dmin;
				dmax = d > dmax ? d : dmax;
			}
		}
		if (!rc)
			cnt->ncompared += (int64_t)n * W;
	}
	/* bit for bit, and what the bits were: a log's text holds no more than it printed */
	if (!rc && o->exact && dmax >= 0 && !res->note[0]) {
		char w[32];

		lks_printed_words(w, sizeof(w), dmin, dmax);
		snprintf(res->note, sizeof(res->note), "equal to the printed precision (%s)", w);
	}
out:
	free(p);
	free(at_a);
	free(at_b);
	free(keys);
	return rc;
}

/* ---- the walk ---- */

void lks_walk_pairs(const lks_walk_opts *o, const lks_stored_run *a, const lks_stored_run *b,
                    int *map, lks_walk_count *cnt)
{
	cnt->nmatch = cnt->nshared = 0;
	for (int i = 0; i < a->nt; i++) {
		map[i] = -1;
		if (o->recompute ? a->phases[i] != LKS_PHASE_RECOMPUTE
		    : o->pattern && fnmatch(o->pattern, a->names[i], 0) != 0)
			continue;
		cnt->nmatch++;
		map[i] = lks_stored_run_find(b, a->names[i], o->recompute ? LKS_PHASE_FORWARD
		                             : a->phases[i], a->occ[i]);
		cnt->nshared += map[i] >= 0;
	}
}

double lks_walk_step_value(const lks_stored_run *r, int step, const lks_metric *m)
{
	lks_field f = lks_metric_field(m);
	double sum = 0.0;
	int n = 0;

	for (int rank = 0; rank < r->W; rank++) {
		const lks_step_row *row = lks_stored_run_step_row(r, step, rank);

		if (!row)
			continue;
		if (m->scope == LKS_METRIC_STEP_GLOBAL)
			return lks_real_at(row, &f);
		sum += lks_real_at(row, &f);
		n++;
	}
	return n ? sum / n : NAN;
}

int lks_walk_step_stored(const lks_stored_run *r, int step)
{
	for (int rank = 0; rank < r->W; rank++)
		if (lks_stored_run_step_row(r, step, rank))
			return 1;
	return 0;
}

/* A per-step metric, step by step. */
static int lks_walk_step_metric(const lks_walk_opts *o, const lks_stored_run *a,
                                const lks_stored_run *b, int nsteps, lks_check_result *res)
{
	lks_field f = { o->metric->name, 0, LKS_FIELD_F64 };  /* the value itself */

	for (int step = o->from_step; step < nsteps; step++) {
		double va = lks_walk_step_value(a, step, o->metric);
		double vb = lks_walk_step_value(b, step, o->metric);

		if (lks_field_differs(o, &f, &va, &vb, res)) {
			lks_walk_at(res, a, step, -1, -1);
			return 1;
		}
	}
	return 0;
}

/* The tensors at one step: each paired tensor of a in execution order, over the ranks. */
static int lks_walk_tensors(const lks_walk_opts *o, lks_stored_run *a, lks_stored_run *b,
                            const struct lks_walk_ranks *k, const int *map, int step,
                            lks_check_result *res, lks_walk_count *cnt)
{
	if (lks_stored_run_step(a, step) || lks_stored_run_step(b, step))
		return -1;
	for (int i = 0; i < a->nt; i++) {
		if (map[i] < 0 && o->recompute && a->phases[i] == LKS_PHASE_RECOMPUTE) {
			lks_walk_at(res, a, step, -1, i);
			snprintf(res->note, sizeof(res->note), "recomputed, but no forward tensor of that "
			         "name");
			return 1;
		}
		for (int j = 0; map[i] >= 0 && j < k->n; j++) {
			int r = j * k->sa;
			const lks_stat_row *ra = lks_stored_run_row(a, r, i);
			const lks_stat_row *rb = lks_stored_run_row(b, j * k->sb, map[i]);

			cnt->ncompared += ra && rb && !(o->metric && lks_metric_absent(o->metric, ra)
			                                && lks_metric_absent(o->metric, rb));
			if (lks_walk_pair(o, a, ra, rb, step, r, i, res))
				return 1;
		}
	}
	return 0;
}

int lks_walk(const lks_walk_opts *o, lks_stored_run *a, lks_stored_run *b,
             lks_check_result *res, lks_walk_count *cnt)
{
	int nsteps = a->nsteps < b->nsteps ? a->nsteps : b->nsteps, *map, rc = 0;

	if (o->until_step > 0 && o->until_step < nsteps)
		nsteps = o->until_step;
	lks_walk_count scratch;

	cnt = cnt ? cnt : &scratch;
	memset(cnt, 0, sizeof(*cnt));
	if (a->tt || b->tt)
		return lks_walk_tensor_trace(o, a, b, res, cnt);
	if (a->nm || b->nm) {
		if ((rc = lks_walk_metrics(o, a, b, nsteps, res, cnt)) != 0)
			return rc < 0 ? -1 : 0;
	} else if (o->metric && o->metric->scope != LKS_METRIC_TENSOR) {
		if (lks_walk_step_metric(o, a, b, nsteps, res))
			return 0;
	} else {
		struct lks_walk_ranks k;

		/* the pairs first: cnt says what a filter names also where the ranks part */
		if (!(map = malloc(sizeof(int) * ((size_t)a->nt + 1))))
			return lks_err("out of memory");
		lks_walk_pairs(o, a, b, map, cnt);
		if (lks_walk_ranks_of(a, b, &k)) {
			free(map);
			lks_walk_at(res, a, -1, -1, -1);
			lks_walk_int(res, "world_size", a->W, b->W, 0);
			snprintf(res->note, sizeof(res->note), "runs on different numbers of ranks are "
			         "compared rank by rank (or replica by replica where tp groups make the "
			         "difference): they cannot agree");
			return 0;
		}
		if (cnt->nshared == 0 && !o->recompute) {
			lks_walk_at(res, a, -1, -1, -1);
			snprintf(res->note, sizeof(res->note), "the runs share no traced tensor");
			rc = 1;
		}
		for (int step = o->from_step; step < nsteps && !rc; step++)
			if (!(rc = lks_walk_tensors(o, a, b, &k, map, step, res, cnt)))
				rc = lks_walk_step_rows(o, a, b, &k, step, res);
		free(map);
		if (rc)
			return rc < 0 ? -1 : 0;
	}
	if (a->nsteps != b->nsteps && o->until_step <= 0) {
		lks_walk_at(res, a, nsteps, -1, -1);
		lks_walk_int(res, "steps", a->nsteps, b->nsteps, 0);
		/* nsteps is the last step + 1: of an import's steps 1 to 3, 4 (no count) */
		snprintf(res->note, sizeof(res->note), "the runs end at different steps (the last "
		         "stored: %d and %d)", a->nsteps - 1, b->nsteps - 1);
	}
	return 0;
}
