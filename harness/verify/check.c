/*
 * check.c: the checks of a case, evaluated on stored traces (check.h, DESIGN.md Checks).
 *
 * Each kind is one row of lks_check_kinds: a function that walks the traces in the order
 * of a divergence (step, then tensor seq, then rank) and stops at the first difference,
 * filling the location and values of the result. lks_check_eval then turns "failed or
 * not" into a verdict against what the case expects, and words the message. A trace is
 * read back per check: runs hold tens of steps of a few hundred rows, read in
 * milliseconds, and no check has to share state with another.
 */
#include "harness/verify/check.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/golden.h"
#include "harness/verify/golden_compare.h"
#include "harness/store/run_trace.h"
#include "harness/base/shell.h"
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

static const char *const lks_verdict_names[] = {
	[LKS_VERDICT_PASS] = "pass",
	[LKS_VERDICT_FAIL] = "fail",
	[LKS_VERDICT_EXPECTED_FAIL] = "expected_fail",
	[LKS_VERDICT_UNEXPECTED_PASS] = "unexpected_pass",
	[LKS_VERDICT_UNSUPPORTED] = "unsupported",
	[LKS_VERDICT_SKIPPED] = "skipped",
};

const char *lks_verdict_name(lks_verdict v)
{
	return (int)v >= 0 && (int)v <= LKS_VERDICT_SKIPPED ? lks_verdict_names[v] : "?";
}

/* ---- divergences ---- */

struct lks_check_ctx {
	lks_store *s;
	const lks_check_cfg *k;
	lks_run_trace *a, *b;         /* b: NULL for one-run kinds */
	int64_t run_a, run_b;     /* the stored runs (kinds that read no lks_run_trace) */
	lks_check_result *res;
	const char *label_a, *label_b;  /* what the values are: run names, ranks, phases */
	char label_buf[2][32];    /* labels made by a kind (ranks) */
	const lks_metric *metric; /* close: what it compares */
	int ncompared;            /* close: pairs of values compared */
	char note[256];           /* said after the values */
};

static void lks_div_at(struct lks_check_ctx *x, int step, int rank, int seq)
{
	lks_check_result *res = x->res;

	res->failed = 1;
	res->step = step;
	res->rank = rank;
	if (seq >= 0) {
		snprintf(res->tensor, sizeof(res->tensor), "%s", x->a->names[seq]);
		res->phase = (int)x->a->phases[seq];
	}
}

static void lks_div_real(lks_check_result *res, const char *field, double a, double b, int f32)
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

static void lks_div_int(lks_check_result *res, const char *field, int64_t a, int64_t b,
                        int is_hash)
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

/* Bits equal, or both NaN: the store keeps no NaN payload, so all NaNs read back alike. */
static int lks_same_f64(double a, double b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

static int lks_same_f32(float a, float b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

/* The first field in which two stat rows differ, into res; 0 when they are equal. */
static int lks_row_diff(const lks_stat_row *a, const lks_stat_row *b, lks_check_result *res)
{
	if (!lks_same_f64(a->l2, b->l2))
		lks_div_real(res, "l2", a->l2, b->l2, 0);
	else if (!lks_same_f32(a->amax, b->amax))
		lks_div_real(res, "amax", a->amax, b->amax, 1);
	else if (!lks_same_f32(a->scale, b->scale))
		lks_div_real(res, "scale", a->scale, b->scale, 1);
	else if (a->nonfinite != b->nonfinite)
		lks_div_int(res, "nonfinite", a->nonfinite, b->nonfinite, 0);
	else if (a->underflow != b->underflow)
		lks_div_int(res, "underflow", a->underflow, b->underflow, 0);
	else if (a->saturated != b->saturated)
		lks_div_int(res, "saturated", a->saturated, b->saturated, 0);
	else if (a->hash != b->hash)
		lks_div_int(res, "hash", (int64_t)a->hash, (int64_t)b->hash, 1);
	else
		return 0;
	return 1;
}

void lks_check_set_real(lks_check_result *res, const char *field, double a, double b, int f32)
{
	lks_div_real(res, field, a, b, f32);
}

void lks_check_set_int(lks_check_result *res, const char *field, int64_t a, int64_t b,
                       int is_hash)
{
	lks_div_int(res, field, a, b, is_hash);
}

int lks_check_row_diff(const lks_stat_row *a, const lks_stat_row *b, lks_check_result *res)
{
	return lks_row_diff(a, b, res);
}

/* Two rows that should be equal, either possibly missing: 1 (and the divergence at
   step, rank, seq of trace a) when they differ or one is missing. */
static int lks_rows_differ(struct lks_check_ctx *x, const lks_stat_row *ra,
                           const lks_stat_row *rb, int step, int rank, int seq)
{
	if (ra && rb && !lks_row_diff(ra, rb, x->res))
		return 0;
	lks_div_at(x, step, rank, seq);
	if (!ra || !rb) {
		x->res->field = "row";
		snprintf(x->note, sizeof(x->note), "no stats row in %s", !ra ? x->label_a : x->label_b);
	}
	return 1;
}

/* Different step counts: the divergence is the first step one of them lacks. */
static int lks_steps_differ(struct lks_check_ctx *x, const lks_run_trace *a, const lks_run_trace *b)
{
	if (a->nsteps == b->nsteps)
		return 0;
	lks_div_at(x, a->nsteps < b->nsteps ? a->nsteps : b->nsteps, -1, -1);
	lks_div_int(x->res, "steps", a->nsteps, b->nsteps, 0);
	snprintf(x->note, sizeof(x->note), "the runs stored different numbers of steps");
	return 1;
}

/* ---- the kinds ---- */

/* The step rows of both runs, rank by rank: loss and grad norm as bits. */
static int lks_step_rows_differ(struct lks_check_ctx *x, int step)
{
	for (int r = 0; r < x->a->W; r++) {
		const lks_step_row *ra = lks_run_trace_step_row(x->a, step, r);
		const lks_step_row *rb = lks_run_trace_step_row(x->b, step, r);

		if (!ra || !rb) {
			lks_div_at(x, step, r, -1);
			x->res->field = "row";
			snprintf(x->note, sizeof(x->note), "no step row in %s", !ra ? x->label_a : x->label_b);
			return 1;
		}
		if (!lks_same_f64(ra->loss, rb->loss) || !lks_same_f64(ra->grad_norm, rb->grad_norm)) {
			int loss = !lks_same_f64(ra->loss, rb->loss);

			lks_div_at(x, step, r, -1);
			lks_div_real(x->res, loss ? "loss" : "grad_norm", loss ? ra->loss : ra->grad_norm,
			             loss ? rb->loss : rb->grad_norm, 0);
			return 1;
		}
	}
	return 0;
}

/* The case asks for a comparison the runs cannot give (a filter that names no tensor they
   share): a failure whatever was expected, and bad input (exit 2) at the check's line. */
static void lks_check_bad(struct lks_check_ctx *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void lks_check_bad(struct lks_check_ctx *x, const char *fmt, ...)
{
	char raw[sizeof(x->res->message)];
	va_list ap;

	x->res->verdict = LKS_VERDICT_FAIL;
	x->res->failed = 1;
	x->res->bad_input = LKS_BAD_CASE;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* it quotes the case file: its control characters are shown, not sent */
	lks_escape(x->res->message, sizeof(x->res->message), raw);
}

/* How two rows of the walk pair up: 1 (the divergence set) when they part. */
typedef int (*lks_pair_fn)(struct lks_check_ctx *x, const lks_stat_row *ra,
                           const lks_stat_row *rb, int step, int rank, int seq);

/* The tensors of a that b traced too (by name, phase and occurrence), those whose names
   match pattern when one is given: map[seq of a] = seq of b, or -1; how many match into
   *nmatch, how many of those are shared into *nshared. */
static void lks_shared_map(const lks_run_trace *a, const lks_run_trace *b, const char *pattern,
                           int *map, int *nmatch, int *nshared)
{
	*nmatch = *nshared = 0;
	for (int i = 0; i < a->nt; i++) {
		map[i] = -1;
		if (pattern && fnmatch(pattern, a->names[i], 0) != 0)
			continue;
		(*nmatch)++;
		map[i] = lks_run_trace_find(b, a->names[i], a->phases[i], a->occ[i]);
		*nshared += map[i] >= 0;
	}
}

/* Nothing shared to compare: a failure; with a pattern (the case's tensors key), bad input
   as well, since the case asks for what the runs cannot give. */
static void lks_nothing_shared(struct lks_check_ctx *x, const char *pattern, int nmatch)
{
	if (!pattern) {
		lks_div_at(x, -1, -1, -1);
		snprintf(x->note, sizeof(x->note), "the runs share no traced tensor");
	} else if (!nmatch) {
		lks_check_bad(x, "tensors = %s names none of the %d tensors run '%s' traced "
		              "('lockstep diff' lists them)", pattern, x->a->nt, x->k->a);
	} else {
		lks_check_bad(x, "tensors = %s names %d tensors of run '%s', none of which run '%s' "
		              "traced", pattern, nmatch, x->k->a, x->k->b);
	}
}

/* The one walk of two runs in the order of a divergence: per step, the shared tensors (see
   lks_shared_map) in a's execution order, each rank; then, with step_rows, the step rows
   (a loss that differs while every tensor is equal is a bug in the trace itself). Stops
   at the first pair that parts. Rows are compared rank by rank, so the world sizes must
   be equal. */
static int lks_walk_runs(struct lks_check_ctx *x, const char *pattern, lks_pair_fn pair,
                         int step_rows)
{
	lks_run_trace *a = x->a, *b = x->b;
	int *map, nmatch, nshared, nsteps = a->nsteps < b->nsteps ? a->nsteps : b->nsteps, rc = -1;

	if (a->W != b->W) {
		lks_div_at(x, -1, -1, -1);
		lks_div_int(x->res, "world_size", a->W, b->W, 0);
		snprintf(x->note, sizeof(x->note), "runs on different numbers of ranks are compared "
		         "rank by rank: they cannot agree");
		return 0;
	}
	if (!(map = malloc(sizeof(int) * ((size_t)a->nt + 1))))
		return lks_err("out of memory");
	lks_shared_map(a, b, pattern, map, &nmatch, &nshared);
	if (nshared == 0) {
		lks_nothing_shared(x, pattern, nmatch);
		rc = 0;
		goto out;
	}
	for (int step = 0; step < nsteps; step++) {
		if (lks_run_trace_step(x->s, a, step) || lks_run_trace_step(x->s, b, step))
			goto out;
		for (int i = 0; i < a->nt; i++)
			for (int r = 0; map[i] >= 0 && r < a->W; r++)
				if (pair(x, lks_run_trace_row(a, r, i), lks_run_trace_row(b, r, map[i]), step, r,
				         i)) {
					rc = 0;
					goto out;
				}
		if (step_rows && lks_step_rows_differ(x, step)) {
			rc = 0;
			goto out;
		}
	}
	lks_steps_differ(x, a, b);
	rc = 0;
out:
	free(map);
	return rc;
}

static int lks_check_bitwise(struct lks_check_ctx *x)
{
	return lks_walk_runs(x, NULL, lks_rows_differ, 1);
}

/* A metric's value in a step row or a stats row (the metric table says where). */
static double lks_metric_value(const lks_metric *m, const void *row)
{
	const char *p = (const char *)row + m->off;
	float f;
	double d;

	if (m->f32) {
		memcpy(&f, p, sizeof(f));
		return f;
	}
	memcpy(&d, p, sizeof(d));
	return d;
}

/* The metric of a step: the loss is the mean over the ranks (each rank's loss is the mean
   over its tokens, and every rank has as many); the grad norm is global, the same on
   every rank, so the lowest rank's. NaN when the step has no row. */
static double lks_step_metric(const lks_run_trace *t, int step, const lks_metric *m)
{
	double sum = 0.0;
	int n = 0;

	for (int r = 0; r < t->W; r++) {
		const lks_step_row *row = lks_run_trace_step_row(t, step, r);

		if (!row)
			continue;
		if (m->scope == LKS_METRIC_STEP_GLOBAL)
			return lks_metric_value(m, row);
		sum += lks_metric_value(m, row);
		n++;
	}
	return n ? sum / n : NAN;
}

/* |a - b| <= atol + rtol |b|, written so that NaN on either side is never close: 0; else 1,
   with the divergence's field, values and bound set (the caller says where). */
static int lks_close_fails(struct lks_check_ctx *x, const lks_metric *m, double va, double vb)
{
	const lks_check_cfg *k = x->k;
	double bound = k->atol + k->rtol * fabs(vb);

	if (fabs(va - vb) <= bound)
		return 0;
	lks_div_real(x->res, m->name, va, vb, m->f32);
	snprintf(x->note, sizeof(x->note), "|a - b| > atol %g + rtol %g * |b| = %.6g", k->atol,
	         k->rtol, bound);
	return 1;
}

/* The tensor has no such value: a NaN that is not numerical, as the scale of a tensor that
   was not quantized (a quantized tensor's scale is NaN only when its amax is, and then the
   tensor holds a NaN). */
static int lks_metric_absent(const lks_metric *m, const lks_stat_row *r)
{
	return m->nan_absent && isnan(lks_metric_value(m, r)) && r->nonfinite == 0;
}

/* A pair of rows of a tensor statistic: left out when neither has the value, else close
   or the divergence. */
static int lks_close_rows(struct lks_check_ctx *x, const lks_stat_row *ra,
                          const lks_stat_row *rb, int step, int rank, int seq)
{
	const lks_metric *m = x->metric;

	if (!ra || !rb)
		return lks_rows_differ(x, ra, rb, step, rank, seq);
	if (lks_metric_absent(m, ra) && lks_metric_absent(m, rb))
		return 0;
	x->ncompared++;
	if (!lks_close_fails(x, m, lks_metric_value(m, ra), lks_metric_value(m, rb)))
		return 0;
	lks_div_at(x, step, rank, seq);
	return 1;
}

/* A tensor statistic per step, then tensor (in a's execution order: those the filter names
   that b traced too), then rank. A tensor without the value in both runs (a scale where
   neither quantized it) is left out; a filter that leaves nothing is bad input. */
static int lks_close_tensors(struct lks_check_ctx *x, const lks_metric *m)
{
	const char *pat = x->k->tensors[0] ? x->k->tensors : NULL;  /* NULL: every tensor */

	x->metric = m;
	if (lks_walk_runs(x, pat, lks_close_rows, 0))
		return -1;
	if (!x->res->failed && !x->ncompared && x->a->nsteps && pat)
		lks_check_bad(x, "tensors = %s names no tensor with a %s in either run: nothing to "
		              "compare", pat, m->name);
	else if (!x->res->failed && !x->ncompared && x->a->nsteps)
		lks_check_bad(x, "metric = %s: no tensor has a %s in either run (a scale needs a "
		              "quantized tensor): nothing to compare", m->name, m->name);
	return 0;
}

static int lks_check_close(struct lks_check_ctx *x)
{
	const lks_metric *m = lks_metric_find(x->k->metric);
	int nsteps = x->a->nsteps < x->b->nsteps ? x->a->nsteps : x->b->nsteps;

	if (!m)  /* the case's validation lets none through */
		return lks_err("check '%s': unknown metric '%s'", x->k->name, x->k->metric);
	if (m->scope == LKS_METRIC_TENSOR)
		return lks_close_tensors(x, m);
	for (int step = 0; step < nsteps; step++)
		if (lks_close_fails(x, m, lks_step_metric(x->a, step, m), lks_step_metric(x->b, step, m))) {
			lks_div_at(x, step, -1, -1);
			return 0;
		}
	lks_steps_differ(x, x->a, x->b);
	return 0;
}

static int lks_check_finite(struct lks_check_ctx *x)
{
	lks_run_trace *a = x->a;

	for (int step = 0; step < a->nsteps; step++) {
		if (lks_run_trace_step(x->s, a, step))
			return -1;
		for (int i = 0; i < a->nt; i++)
			for (int r = 0; r < a->W; r++) {
				const lks_stat_row *row = lks_run_trace_row(a, r, i);

				if (row && row->nonfinite > 0) {
					lks_div_at(x, step, r, i);
					lks_div_int(x->res, "nonfinite", row->nonfinite, 0, 0);
					x->res->abs_err = x->res->rel_err = NAN;  /* one run: no error */
					return 0;
				}
			}
		for (int r = 0; r < a->W; r++) {
			const lks_step_row *row = lks_run_trace_step_row(a, step, r);

			if (row && (!isfinite(row->loss) || !isfinite(row->grad_norm))) {
				int loss = !isfinite(row->loss);

				lks_div_at(x, step, r, -1);
				lks_div_real(x->res, loss ? "loss" : "grad_norm", loss ? row->loss : row->grad_norm,
				             NAN, 0);
				return 0;
			}
		}
	}
	return 0;
}

/* ---- majorities ---- */

int lks_majority(int n, int (*same)(void *arg, int i, int j), void *arg)
{
	int cand = 0, votes = 0, held = 0;

	/* Boyer and Moore's vote: pairing off unequal values leaves the majority's, if any */
	for (int i = 0; i < n; i++) {
		if (votes == 0) {
			cand = i;
			votes = 1;
		} else {
			votes += same(arg, cand, i) ? 1 : -1;
		}
	}
	for (int i = 0; i < n; i++)
		held += i == cand || same(arg, cand, i);
	return 2 * held > n ? cand : -1;
}

struct lks_rank_rows {
	const lks_run_trace *t;
	int seq;
};

/* Ranks i and j hold the same stats row of tensor seq (or neither has one). */
static int lks_same_rank_row(void *arg, int i, int j)
{
	const struct lks_rank_rows *rr = arg;
	const lks_stat_row *a = lks_run_trace_row(rr->t, i, rr->seq);
	const lks_stat_row *b = lks_run_trace_row(rr->t, j, rr->seq);
	lks_check_result scratch;

	return a && b ? !lks_row_diff(a, b, &scratch) : !a && !b;
}

/* "rank 2", "ranks 1, 3": the ranks whose row of rr's tensor differs from rank ref's, at
   most eight of them and how many more; *n: how many in all. */
static void lks_rank_list(struct lks_rank_rows *rr, int W, int ref, char *buf, size_t size,
                          int *n)
{
	size_t len;

	*n = 0;
	for (int r = 0; r < W; r++)
		*n += !lks_same_rank_row(rr, ref, r);
	len = (size_t)snprintf(buf, size, "rank%s", *n > 1 ? "s" : "");
	for (int r = 0, k = 0; r < W && k < 8 && len < size; r++)
		if (!lks_same_rank_row(rr, ref, r))
			len += (size_t)snprintf(buf + len, size - len, "%s %d", k++ ? "," : "", r);
	if (*n > 8 && len < size)
		snprintf(buf + len, size - len, " and %d more", *n - 8);
}

/* Tensor seq at the loaded step: 0 when every rank holds the same row; else 1 and the
   divergence. With a majority (three ranks or more), the ranks that disagree with it are
   named, and the divergence's rank is the one when only one does; two ranks, or no
   majority, name no single rank (rank -1): each is suspect, a golden or a clean run
   decides. */
static int lks_ranks_vote(struct lks_check_ctx *x, int step, int seq)
{
	lks_run_trace *a = x->a;
	struct lks_rank_rows rr = { a, seq };
	int W = a->W, first = 0, m, nout, out = -1;
	char list[160];
	size_t len;

	for (int r = 1; r < W && !first; r++)
		first = lks_same_rank_row(&rr, 0, r) ? 0 : r;
	if (!first)
		return 0;
	if ((m = lks_majority(W, lks_same_rank_row, &rr)) >= 0) {
		lks_rank_list(&rr, W, m, list, sizeof(list), &nout);
		for (int r = W - 1; r >= 0; r--)
			out = lks_same_rank_row(&rr, m, r) ? out : r;  /* the first who disagrees */
		snprintf(x->label_buf[0], sizeof(x->label_buf[0]), "rank %d", out);
		snprintf(x->label_buf[1], sizeof(x->label_buf[1]), "majority");
		lks_rows_differ(x, lks_run_trace_row(a, out, seq), lks_run_trace_row(a, m, seq), step,
		                nout == 1 ? out : -1, seq);
	} else {
		snprintf(x->label_buf[0], sizeof(x->label_buf[0]), "rank 0");
		snprintf(x->label_buf[1], sizeof(x->label_buf[1]), "rank %d", first);
		lks_rows_differ(x, lks_run_trace_row(a, 0, seq), lks_run_trace_row(a, first, seq), step,
		                -1, seq);
	}
	len = strlen(x->note);
	if (len)
		len += (size_t)snprintf(x->note + len, sizeof(x->note) - len, "; ");
	if (m >= 0)
		snprintf(x->note + len, sizeof(x->note) - len, "%s %s with the other %d of %d ranks",
		         list, nout > 1 ? "disagree" : "disagrees", W - nout, W);
	else if (W == 2)
		snprintf(x->note + len, sizeof(x->note) - len, "ranks 0 and 1 disagree: two ranks have "
		         "no majority, a golden or a clean run decides which is wrong");
	else
		snprintf(x->note + len, sizeof(x->note) - len, "no majority among ranks 0 to %d: each "
		         "is suspect, a golden or a clean run decides", W - 1);
	return 1;
}

/* Every rank applies the same update to the same all-reduced gradient, so the parameters
   after it are the same bits on every rank; all fields are compared, the hash last. */
static int lks_check_ranks_agree(struct lks_check_ctx *x)
{
	lks_run_trace *a = x->a;
	int nupdate = 0;

	x->label_a = x->label_buf[0];
	x->label_b = x->label_buf[1];
	for (int i = 0; i < a->nt; i++)
		nupdate += a->phases[i] == LKS_PHASE_UPDATE;
	if (nupdate == 0) {
		lks_div_at(x, -1, -1, -1);
		snprintf(x->note, sizeof(x->note), "the run traced no parameters (update phase)");
		return 0;
	}
	for (int step = 0; step < a->nsteps && a->W > 1; step++) {
		if (lks_run_trace_step(x->s, a, step))
			return -1;
		for (int i = 0; i < a->nt; i++)
			if (a->phases[i] == LKS_PHASE_UPDATE && lks_ranks_vote(x, step, i))
				return 0;
	}
	return 0;
}

/* The k-th recompute of a name against the k-th forward of it, at the same step and
   rank; in the recompute's execution order. */
static int lks_check_recompute(struct lks_check_ctx *x)
{
	lks_run_trace *a = x->a;
	int nrecomputed = 0;

	for (int i = 0; i < a->nt; i++)
		nrecomputed += a->phases[i] == LKS_PHASE_RECOMPUTE;
	if (nrecomputed == 0) {
		lks_div_at(x, -1, -1, -1);
		snprintf(x->note, sizeof(x->note), "nothing was recomputed (no recompute-phase tensors)");
		return 0;
	}
	for (int step = 0; step < a->nsteps; step++) {
		if (lks_run_trace_step(x->s, a, step))
			return -1;
		for (int i = 0; i < a->nt; i++) {
			int f;

			if (a->phases[i] != LKS_PHASE_RECOMPUTE)
				continue;
			if ((f = lks_run_trace_find(a, a->names[i], LKS_PHASE_FORWARD, a->occ[i])) < 0) {
				lks_div_at(x, step, -1, i);
				snprintf(x->note, sizeof(x->note), "recomputed, but no forward tensor of that name");
				return 0;
			}
			for (int r = 0; r < a->W; r++)
				if (lks_rows_differ(x, lks_run_trace_row(a, r, i), lks_run_trace_row(a, r, f), step, r, i))
					return 0;
		}
	}
	return 0;
}

/* "lockstep golden update CASE --run RUN [--golden DIR]": how a missing golden is made,
   each word quoted for the shell. */
static void lks_golden_howto(const lks_golden *run, char *buf, size_t n)
{
	const char *dir = lks_golden_dir();
	int other_dir = strcmp(dir, "golden") != 0;
	char qcase[224], qrun[72], qdir[128];  /* the command fits in howto below */

	snprintf(buf, n, "lockstep golden update %s --run %s%s%s",
	         lks_shell_quote(run->case_path && *run->case_path ? run->case_path : run->case_name,
	                         qcase, sizeof(qcase)),
	         lks_shell_quote(run->run_name, qrun, sizeof(qrun)), other_dir ? " --golden " : "",
	         other_dir ? lks_shell_quote(dir, qdir, sizeof(qdir)) : "");
}

/* A missing golden fails whatever the case expects (nothing was compared); a bad one fails
   with bad_input, which 'lockstep run' turns into exit 2. Both give the verdict here, so
   lks_check_eval does not judge them. */
static int lks_check_golden(struct lks_check_ctx *x)
{
	lks_check_result *res = x->res;
	lks_golden run, gold = { 0 };
	char path[1024], howto[480];  /* with the error, it fits lks_check_result.message */
	int rc;

	if ((rc = lks_golden_from_run(x->s, x->run_a, 0, &run)) != 0)
		goto out;
	lks_golden_howto(&run, howto, sizeof(howto));
	if ((rc = lks_golden_path(lks_golden_dir(), run.backend, run.case_name, run.run_name, path,
	                          sizeof(path))) != 0)
		goto out;
	rc = lks_golden_read(path, &gold);
	if (rc == LKS_GOLDEN_MISSING || rc == LKS_GOLDEN_BAD) {
		res->verdict = LKS_VERDICT_FAIL;
		res->failed = 1;
		res->bad_input = rc == LKS_GOLDEN_BAD ? LKS_BAD_GOLDEN : 0;
		snprintf(res->message, sizeof(res->message), "%s; %s it with: %s", lks_errmsg(),
		         rc == LKS_GOLDEN_BAD ? "fix or rewrite" : "create", howto);
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	/* cpu: the bit-exact reference, so its golden is met bit for bit */
	rc = lks_golden_compare(&run, &gold, !strcmp(lks_golden_class(run.backend), "cpu"),
	                        x->k->rtol, x->k->atol, res, x->note, sizeof(x->note));
out:
	lks_golden_release(&run);
	lks_golden_release(&gold);
	return rc ? -1 : 0;
}

struct lks_sqnr_scan {
	struct lks_check_ctx *x;
	int nrows;
};

/* The first (step, gradient) whose SQNR is below the floor (NaN included). */
static int lks_sqnr_scan_row(void *arg, const lks_sqnr_row *row)
{
	struct lks_sqnr_scan *sc = arg;
	lks_check_result *res = sc->x->res;

	sc->nrows++;
	if (res->failed || row->db >= sc->x->k->floor_db)
		return 0;
	res->failed = 1;
	res->step = row->step;
	res->rank = 0;  /* the all-reduced gradient: the same on every rank */
	res->phase = LKS_PHASE_BACKWARD;
	snprintf(res->tensor, sizeof(res->tensor), "%s", row->tensor);
	lks_div_real(res, "sqnr_db", row->db, sc->x->k->floor_db, 0);
	snprintf(sc->x->note, sizeof(sc->x->note), "SQNR %.2f dB is below the floor of %g dB",
	         row->db, sc->x->k->floor_db);
	return 0;
}

static int lks_check_sqnr(struct lks_check_ctx *x)
{
	struct lks_sqnr_scan sc = { x, 0 };

	if (lks_store_sqnr_get(x->s, x->run_a, x->run_b, lks_sqnr_scan_row, &sc))
		return -1;
	if (sc.nrows == 0) {
		x->res->verdict = LKS_VERDICT_UNSUPPORTED;
		snprintf(x->res->message, sizeof(x->res->message), "no SQNR rows for these runs: their "
		         "gradients are compared while both are made by one 'lockstep run'; not "
		         "counted as a failure");
	}
	return 0;
}

/* The evaluation of each kind, by its value; its name, runs, keys and list text are its row
   of the check-kind table (engine/check_kind.c). */
static const struct lks_check_kind_row {
	int (*fn)(struct lks_check_ctx *x);
	int reads;                /* 0: reads no lks_run_trace (golden, sqnr) */
} lks_check_kinds[] = {
	[LKS_CHECK_BITWISE] = { lks_check_bitwise, 1 },
	[LKS_CHECK_CLOSE] = { lks_check_close, 1 },
	[LKS_CHECK_SQNR] = { lks_check_sqnr, 0 },
	[LKS_CHECK_GOLDEN] = { lks_check_golden, 0 },
	[LKS_CHECK_FINITE] = { lks_check_finite, 1 },
	[LKS_CHECK_RANKS_AGREE] = { lks_check_ranks_agree, 1 },
	[LKS_CHECK_RECOMPUTE] = { lks_check_recompute, 1 },
};

_Static_assert(sizeof(lks_check_kinds) / sizeof(lks_check_kinds[0]) == LKS_CHECK_COUNT,
               "one evaluation per check kind");

/* ---- verdicts and their words ---- */

static void lks_fmt_value(char *buf, size_t n, const lks_check_result *r, int b)
{
	double v = b ? r->b : r->a;
	int64_t iv = b ? r->ib : r->ia;

	if (r->value_type == LKS_VALUE_REAL)
		snprintf(buf, n, r->value_f32 ? "%.9g" : "%.17g", v);
	else if (r->field && !strcmp(r->field, "hash"))
		snprintf(buf, n, "0x%016" PRIx64, (uint64_t)iv);
	else
		snprintf(buf, n, "%" PRId64, iv);
}

/* "step 3, tensor 'x' (backward), rank 1: l2 fp8_ac=... fp8=... (abs .., rel .., 2 ulp)" */
static void lks_describe(struct lks_check_ctx *x, char *buf, size_t n)
{
	const lks_check_result *r = x->res;
	const char *phase = r->phase >= 0 ? lks_phase_name((lks_phase)r->phase) : NULL;
	char va[64], vb[64];
	size_t len = 0;

#define LKS_ADD(...) (len += (size_t)snprintf(buf + len, len < n ? n - len : 0, __VA_ARGS__))
	buf[0] = 0;
	if (r->step >= 0)
		LKS_ADD("step %d", r->step);
	if (r->tensor[0])
		LKS_ADD("%stensor '%s' (%s)", len ? ", " : "", r->tensor, phase ? phase : "?");
	if (r->rank >= 0)
		LKS_ADD("%srank %d", len ? ", " : "", r->rank);
	if (r->field && r->value_type != LKS_VALUE_NONE) {
		lks_fmt_value(va, sizeof(va), r, 0);
		lks_fmt_value(vb, sizeof(vb), r, 1);
		if (x->label_b)
			LKS_ADD("%s%s %s=%s %s=%s", len ? ": " : "", r->field, x->label_a, va, x->label_b, vb);
		else
			LKS_ADD("%s%s %s", len ? ": " : "", r->field, va);
		if (!isnan(r->abs_err) && x->label_b) {
			LKS_ADD(" (abs %.3g, rel %.3g", r->abs_err, r->rel_err);
			if (r->ulp >= 0)
				LKS_ADD(", %" PRId64 " ulp", r->ulp);
			LKS_ADD(")");
		}
	} else if (r->field) {
		LKS_ADD("%s%s", len ? ": " : "", r->field);
	}
	if (x->note[0])
		LKS_ADD("%s%s", len ? "; " : "", x->note);
#undef LKS_ADD
}

static int lks_expected_here(const lks_check_cfg *k, const lks_check_result *r)
{
	return (k->exp_step < 0 || k->exp_step == r->step)
	    && (k->exp_rank < 0 || k->exp_rank == r->rank)
	    && (!k->exp_tensor[0] || !strcmp(k->exp_tensor, r->tensor));
}

static void lks_expected_where(const lks_check_cfg *k, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = 0;
	if (k->exp_step >= 0)
		len += (size_t)snprintf(buf + len, n - len, "step %d", k->exp_step);
	if (k->exp_tensor[0] && len < n)
		len += (size_t)snprintf(buf + len, n - len, "%stensor '%s'", len ? ", " : "", k->exp_tensor);
	if (k->exp_rank >= 0 && len < n)
		snprintf(buf + len, n - len, "%srank %d", len ? ", " : "", k->exp_rank);
}

/* From "failed or not" and what the case expects to the verdict, and its message. */
static void lks_check_judge(struct lks_check_ctx *x)
{
	const lks_check_cfg *k = x->k;
	lks_check_result *r = x->res;
	char found[400], where[200];

	lks_describe(x, found, sizeof(found));
	lks_expected_where(k, where, sizeof(where));
	if (!k->expect_fail) {
		r->verdict = r->failed ? LKS_VERDICT_FAIL : LKS_VERDICT_PASS;
		snprintf(r->message, sizeof(r->message), "%s", r->failed ? found : "");
	} else if (!r->failed) {
		r->verdict = LKS_VERDICT_UNEXPECTED_PASS;
		snprintf(r->message, sizeof(r->message), "expected to fail%s%s, but passed",
		         where[0] ? " at " : "", where);
	} else if (lks_expected_here(k, r)) {
		r->verdict = LKS_VERDICT_EXPECTED_FAIL;
		snprintf(r->message, sizeof(r->message), "%s", found);
	} else {
		r->verdict = LKS_VERDICT_FAIL;
		snprintf(r->message, sizeof(r->message), "expected to fail at %s, but failed at %s", where,
		         found);
	}
}

void lks_check_result_init(lks_check_result *res)
{
	memset(res, 0, sizeof(*res));
	res->step = res->rank = res->phase = -1;
	res->abs_err = res->rel_err = NAN;
	res->a = res->b = NAN;
	res->ulp = -1;
}

int lks_check_eval(lks_store *s, const lks_check_cfg *k, int64_t run_a, int64_t run_b,
                   lks_check_result *res)
{
	const struct lks_check_kind_row *row = NULL;
	lks_run_trace ta = { 0 }, tb = { 0 };
	struct lks_check_ctx x = { .s = s, .k = k, .res = res, .run_a = run_a,
	                           .run_b = run_b, .label_a = k->a,
	                           .label_b = k->b };
	int two = lks_check_kind_nruns(k->kind) == 2, rc = -1;

	lks_check_result_init(res);
	if ((unsigned)k->kind < LKS_CHECK_COUNT && lks_check_kinds[k->kind].fn)
		row = &lks_check_kinds[k->kind];
	if (!row)
		return lks_err("check '%s': no evaluation for kind %d", k->name, (int)k->kind);
	if (!run_a || (two && !run_b)) {
		res->verdict = LKS_VERDICT_SKIPPED;
		snprintf(res->message, sizeof(res->message), "run '%s' was not run",
		         !run_a ? k->a : k->b);
		return 0;
	}
	if (row->reads && (lks_run_trace_load(s, run_a, &ta) || (two && lks_run_trace_load(s, run_b, &tb))))
		goto out;
	x.a = &ta;
	x.b = two ? &tb : NULL;
	if (k->kind == LKS_CHECK_RECOMPUTE) {
		x.label_a = "recompute";
		x.label_b = "forward";
	} else if (k->kind == LKS_CHECK_GOLDEN) {
		x.label_b = "golden";
	} else if (!two) {
		x.label_b = NULL;
	}
	if (row->fn(&x))
		goto out;
	if (!res->message[0])  /* else the kind gave its verdict itself (unsupported, ...) */
		lks_check_judge(&x);
	rc = 0;
out:
	lks_run_trace_release(&ta);
	lks_run_trace_release(&tb);
	return rc;
}

/* ---- a case ---- */

static int64_t lks_run_id_of(const lks_case *c, const int64_t *run_ids, const char *name)
{
	const lks_run_cfg *r = name[0] ? lks_case_run(c, name) : NULL;

	return r ? run_ids[r - c->runs] : 0;
}

static void lks_tally_add(lks_check_tally *t, lks_verdict v)
{
	t->total++;
	t->passed += v == LKS_VERDICT_PASS;
	t->failed += v == LKS_VERDICT_FAIL || v == LKS_VERDICT_UNEXPECTED_PASS;
	t->expected_fail += v == LKS_VERDICT_EXPECTED_FAIL;
	t->unsupported += v == LKS_VERDICT_UNSUPPORTED;
	t->skipped += v == LKS_VERDICT_SKIPPED;
}

/* "cases/x.ini:12: " before the message of a check whose keys are bad. */
static void lks_check_at_line(lks_check_result *r, const char *path, int line)
{
	char buf[sizeof(r->message) + 600];

	snprintf(buf, sizeof(buf), "%s:%d: %s", path, line, r->message);
	snprintf(r->message, sizeof(r->message), "%.*s", (int)sizeof(r->message) - 1, buf);
}

static void lks_check_print(FILE *out, const lks_case *c, const lks_check_cfg *k,
                            const lks_check_result *r)
{
	static const char *const words[] = {
		[LKS_VERDICT_PASS] = "pass",
		[LKS_VERDICT_FAIL] = "FAIL",
		[LKS_VERDICT_EXPECTED_FAIL] = "expected failure",
		[LKS_VERDICT_UNEXPECTED_PASS] = "FAIL (unexpected pass)",
		[LKS_VERDICT_UNSUPPORTED] = "unsupported",
		[LKS_VERDICT_SKIPPED] = "skipped",
	};

	if (!out)
		return;
	fprintf(out, "%-20s %-26s %-11s %s%s%s\n", c->name, k->name, lks_check_kind_name(k->kind),
	        words[r->verdict], r->message[0] ? ": " : "", r->message);
}

int lks_check_case(lks_store *s, int64_t suite_id, const lks_case *c, const int64_t *run_ids,
                   FILE *out, lks_check_tally *tally)
{
	for (int i = 0; i < c->nchecks; i++) {
		const lks_check_cfg *k = &c->checks[i];
		int64_t ra = lks_run_id_of(c, run_ids, k->a), rb = lks_run_id_of(c, run_ids, k->b);
		lks_check_result r;
		lks_check_rec rec;

		if (lks_check_eval(s, k, ra, rb, &r))
			return lks_err("case '%s', check '%s': %s", c->name, k->name, lks_errmsg());
		if (r.bad_input == LKS_BAD_CASE)
			lks_check_at_line(&r, c->path, k->line);
		lks_check_print(out, c, k, &r);
		rec = (lks_check_rec){
			.suite_id = suite_id, .case_name = c->name, .check_name = k->name,
			.kind = lks_check_kind_name(k->kind), .run_a = ra, .run_b = rb,
			.verdict = lks_verdict_name(r.verdict), .step = r.step, .rank = r.rank,
			.tensor = r.tensor[0] ? r.tensor : NULL, .field = r.field, .type = r.value_type,
			.value_a = r.a, .value_b = r.b, .ivalue_a = r.ia, .ivalue_b = r.ib,
			.abs_err = r.abs_err, .rel_err = r.rel_err, .ulp = r.ulp,
			.message = r.message[0] ? r.message : NULL,
			.params = {
				.a = k->a[0] ? k->a : NULL, .b = k->b[0] ? k->b : NULL,
				.metric = k->metric[0] ? k->metric : NULL,
				.tensors = k->tensors[0] ? k->tensors : NULL,
				.rtol = k->rtol, .atol = k->atol, .floor_db = k->floor_db,
				.expect = k->expect_fail ? "fail" : "pass",
				.exp_step = k->exp_step, .exp_rank = k->exp_rank,
				.exp_tensor = k->exp_tensor[0] ? k->exp_tensor : NULL,
			},
		};
		if (lks_store_check(s, &rec))
			return -1;
		lks_tally_add(tally, r.verdict);
		tally->bad_input += r.bad_input != 0;
	}
	if (out)
		fflush(out);
	return 0;
}
