/*
 * golden_compare.c: the comparison of a run with its golden (golden_compare.h), in the
 * order of a divergence (check.h).
 */
#include "harness/verify/golden_compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/err.h"

/* Bits equal, or both NaN (golden files and the store keep no NaN payload). */
static int lks_eq_f64(double a, double b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

/* Within |a - b| <= atol + rtol * |b|; NaN equals only NaN, an infinity only itself. */
static int lks_near(double a, double b, double rtol, double atol)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	if (isinf(a) || isinf(b))
		return a == b;
	return fabs(a - b) <= atol + rtol * fabs(b);
}

struct lks_cmp {
	const lks_golden *run, *gold;
	int exact;
	double rtol, atol;
	lks_check_result *res;
	char *note;
	size_t note_size;
};

/* The first field where a (the run) and b (the golden) differ beyond the tolerance. */
static int lks_cmp_stat(struct lks_cmp *c, const lks_stat_row *a, const lks_stat_row *b)
{
	lks_check_result *res = c->res;
	double rt = c->rtol, at = c->atol;

	if (c->exact)
		return lks_check_row_diff(a, b, res);
	if (!lks_near(a->l2, b->l2, rt, at))
		lks_check_set_real(res, "l2", a->l2, b->l2, 0);
	else if (!lks_near(a->amax, b->amax, rt, at))
		lks_check_set_real(res, "amax", a->amax, b->amax, 1);
	else if (!lks_near(a->scale, b->scale, rt, at))
		lks_check_set_real(res, "scale", a->scale, b->scale, 1);
	else if (a->nonfinite != b->nonfinite)
		lks_check_set_int(res, "nonfinite", a->nonfinite, b->nonfinite, 0);
	else if (!lks_near((double)a->underflow, (double)b->underflow, rt, at))
		lks_check_set_int(res, "underflow", a->underflow, b->underflow, 0);
	else if (!lks_near((double)a->saturated, (double)b->saturated, rt, at))
		lks_check_set_int(res, "saturated", a->saturated, b->saturated, 0);
	else
		return 0;
	return 1;
}

static int lks_cmp_steprow(struct lks_cmp *c, const lks_step_row *a, const lks_step_row *b)
{
	static const char *const field[] = { "loss", "grad_norm", "lr" };
	double va[3] = { a->loss, a->grad_norm, a->lr }, vb[3] = { b->loss, b->grad_norm, b->lr };

	for (int i = 0; i < 3; i++)
		if (c->exact ? !lks_eq_f64(va[i], vb[i]) : !lks_near(va[i], vb[i], c->rtol, c->atol)) {
			lks_check_set_real(c->res, field[i], va[i], vb[i], 0);
			return 1;
		}
	return 0;
}

static int lks_stat_cmp(const void *pa, const void *pb)
{
	const lks_stat_row *a = pa, *b = pb;

	return lks_stat_after(a, b) ? 1 : lks_stat_after(b, a) ? -1 : 0;
}

static const lks_stat_row *lks_find_stat(const lks_golden *g, int step, int rank, int seq)
{
	lks_stat_row key = { .step = step, .rank = rank, .seq = seq };

	return bsearch(&key, g->stats, g->nstats, sizeof(key), lks_stat_cmp);
}

static const lks_step_row *lks_find_step(const lks_golden *g, int step, int rank)
{
	for (int lo = 0, hi = g->nsteprows; lo < hi;) {
		int mid = lo + (hi - lo) / 2;
		const lks_step_row *m = &g->steprows[mid];

		if (m->step == step && m->rank == rank)
			return m;
		if (m->step < step || (m->step == step && m->rank < rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void lks_cmp_at(struct lks_cmp *c, int step, int rank, int seq)
{
	lks_check_result *res = c->res;

	res->failed = 1;
	res->step = step;
	res->rank = rank;
	if (seq >= 0) {
		snprintf(res->tensor, sizeof(res->tensor), "%s", c->run->names[seq]);
		res->phase = (int)c->run->phases[seq];
	}
}

/* Options as the runner writes them, without a planted fault (" inject: ..." up to
   " set: " or the end): a faulty run is still the golden's run, and the golden check is
   to find where the fault struck, not to stop at the options. */
static int lks_options_differ(const char *a, const char *b)
{
	const char *s[2] = { a ? a : "", b ? b : "" }, *cut[2], *rest[2];

	for (int i = 0; i < 2; i++) {
		cut[i] = strstr(s[i], " inject: ");
		rest[i] = cut[i] ? strstr(cut[i], " set: ") : NULL;
		if (!cut[i])
			cut[i] = rest[i] = s[i] + strlen(s[i]);
		else if (!rest[i])
			rest[i] = cut[i] + strlen(cut[i]);
	}
	return cut[0] - s[0] != cut[1] - s[1] || strncmp(s[0], s[1], (size_t)(cut[0] - s[0]))
	       || strcmp(rest[0], rest[1]);
}

/* Header fields: a run of other settings is not the golden's run. */
static int lks_cmp_header(struct lks_cmp *c)
{
	const lks_golden *a = c->run, *b = c->gold;
	const char *sa[] = { a->case_name, a->run_name, a->recipe, a->options };
	const char *sb[] = { b->case_name, b->run_name, b->recipe, b->options };
	static const char *const sf[] = { "case", "run", "recipe", "options" };
	int64_t ia[] = { a->world_size, a->steps, (int64_t)a->seed };
	int64_t ib[] = { b->world_size, b->steps, (int64_t)b->seed };
	static const char *const jf[] = { "world_size", "steps", "seed" };

	for (int i = 0; i < 4; i++)
		if (i == 3 ? lks_options_differ(sa[i], sb[i]) : strcmp(sa[i] ? sa[i] : "", sb[i] ? sb[i] : "")) {
			c->res->failed = 1;
			c->res->field = sf[i];
			snprintf(c->note, c->note_size, "%s '%s' in the run, '%s' in the golden file", sf[i],
			         sa[i] ? sa[i] : "", sb[i] ? sb[i] : "");
			return 1;
		}
	for (int i = 0; i < 3; i++)
		if (ia[i] != ib[i]) {
			c->res->failed = 1;
			lks_check_set_int(c->res, jf[i], ia[i], ib[i], 0);
			snprintf(c->note, c->note_size, "the run was made with other settings than the golden");
			return 1;
		}
	for (int i = 0; i < a->nt || i < b->nt; i++)
		if (i >= a->nt || i >= b->nt || a->phases[i] != b->phases[i]
		    || strcmp(a->names[i], b->names[i])) {
			c->res->failed = 1;
			c->res->field = "tensor";
			snprintf(c->note, c->note_size, "tensor seq %d is '%s' (%s) in the run, '%s' (%s) in "
			         "the golden file", i, i < a->nt ? a->names[i] : "-",
			         i < a->nt ? lks_phase_name(a->phases[i]) : "none",
			         i < b->nt ? b->names[i] : "-", i < b->nt ? lks_phase_name(b->phases[i]) : "none");
			return 1;
		}
	return 0;
}

static int lks_max_step(const lks_golden *g)
{
	int m = -1;

	if (g->nsteprows)
		m = g->steprows[g->nsteprows - 1].step;
	if (g->nstats && g->stats[g->nstats - 1].step > m)
		m = g->stats[g->nstats - 1].step;
	return m;
}

/* One step: tensors by seq, each over the ranks; then the step rows by rank. */
static int lks_cmp_step(struct lks_cmp *c, int step)
{
	int W = c->run->world_size;

	for (int i = 0; i < c->run->nt; i++)
		for (int r = 0; r < W; r++) {
			const lks_stat_row *a = lks_find_stat(c->run, step, r, i);
			const lks_stat_row *b = lks_find_stat(c->gold, step, r, i);

			if (!a && !b)
				continue;
			if (a && b && !lks_cmp_stat(c, a, b))
				continue;
			lks_cmp_at(c, step, r, i);
			if (!a || !b) {
				c->res->field = "row";
				snprintf(c->note, c->note_size, "no stats row in the %s", !a ? "run" : "golden file");
			}
			return 1;
		}
	for (int r = 0; r < W; r++) {
		const lks_step_row *a = lks_find_step(c->run, step, r), *b = lks_find_step(c->gold, step, r);

		if (!a && !b)
			continue;
		if (a && b && !lks_cmp_steprow(c, a, b))
			continue;
		lks_cmp_at(c, step, r, -1);
		if (!a || !b) {
			c->res->field = "row";
			snprintf(c->note, c->note_size, "no step row in the %s", !a ? "run" : "golden file");
		}
		return 1;
	}
	return 0;
}

int lks_golden_compare(const lks_golden *run, const lks_golden *gold, int exact, double rtol,
                       double atol, lks_check_result *res, char *note, size_t note_size)
{
	struct lks_cmp c = {
		.run = run, .gold = gold, .exact = exact, .rtol = rtol, .atol = atol, .res = res,
		.note = note, .note_size = note_size,
	};
	int last = lks_max_step(run) > lks_max_step(gold) ? lks_max_step(run) : lks_max_step(gold);

	note[0] = 0;
	if (lks_cmp_header(&c))
		return 0;
	for (int step = 0; step <= last; step++)
		if (lks_cmp_step(&c, step))
			break;
	if (res->failed && !exact && !note[0] && res->value_type != LKS_VALUE_NONE
	    && strcmp(res->field, "nonfinite"))
		snprintf(note, note_size, "beyond atol %g + rtol %g * |golden|", atol, rtol);
	return 0;
}
