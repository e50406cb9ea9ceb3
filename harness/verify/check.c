/*
 * check.c: the checks of a case, evaluated on stored traces (check.h, DESIGN.md Checks).
 *
 * Each kind is one row of lks_check_kinds: a function that finds the first divergence
 * (step, then tensor seq, then rank), by the one walker of walk.h wherever two traces are
 * compared, filling the location and values of the result. lks_check_eval then turns
 * "failed or not" into a verdict against what the case expects, and words the message. A
 * run is read back per check (run.h; its stat rows step by step, as far as the walk
 * goes), and no check has to share state with another. A case's checks in order, stored
 * and tallied: check_case.c.
 */
#include "harness/verify/check.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/shell.h"
#include "harness/store/golden.h"
#include "harness/store/run.h"
#include "harness/verify/check_impl.h"
#include "harness/verify/golden_compare.h"
#include "harness/verify/walk.h"
#include "kernels/err.h"

/* A verdict as stored (its name) and as 'lockstep run' prints it. */
static const struct lks_verdict_row {
	const char *name, *word;
} lks_verdicts[] = {
	[LKS_VERDICT_PASS] = { "pass", "pass" },
	[LKS_VERDICT_FAIL] = { "fail", "FAIL" },
	[LKS_VERDICT_EXPECTED_FAIL] = { "expected_fail", "expected failure" },
	[LKS_VERDICT_UNEXPECTED_PASS] = { "unexpected_pass", "FAIL (unexpected pass)" },
	[LKS_VERDICT_UNSUPPORTED] = { "unsupported", "unsupported" },
	[LKS_VERDICT_SKIPPED] = { "skipped", "skipped" },
};

static const struct lks_verdict_row *lks_verdict_of(lks_verdict v)
{
	static const struct lks_verdict_row none = { "?", "?" };

	return (int)v >= 0 && (size_t)v < sizeof(lks_verdicts) / sizeof(lks_verdicts[0])
	       ? &lks_verdicts[v] : &none;
}

const char *lks_verdict_word(lks_verdict v)
{
	return lks_verdict_of(v)->word;
}

const char *lks_verdict_name(lks_verdict v)
{
	return lks_verdict_of(v)->name;
}

/* ---- the kinds ---- */

/* The walk's options of a kind that compares two traces, bit for bit unless it says. */
static lks_walk_opts lks_check_walk_opts(const struct lks_check_ctx *x)
{
	return (lks_walk_opts){ .exact = 1, .label_a = x->label_a, .label_b = x->label_b };
}

/* Every shared tensor bit for bit, then the loss and grad norm of each step's rows. */
static int lks_check_bitwise(struct lks_check_ctx *x)
{
	lks_walk_opts o = lks_check_walk_opts(x);

	o.step_fields = LKS_WALK_LOSS | LKS_WALK_GRAD_NORM;
	return lks_walk(&o, x->a, x->b, x->res, NULL);
}

/* A failure that compared nothing, its message escaped (it may quote a case or golden
   file: control characters are shown, not sent); bad: the bad_input kind, or 0. */
static void lks_check_vfail(lks_check_result *res, int bad, const char *fmt, va_list ap)
{
	char raw[sizeof(res->message)];

	res->verdict = LKS_VERDICT_FAIL;
	res->failed = 1;
	res->bad_input = bad;
	vsnprintf(raw, sizeof(raw), fmt, ap);
	lks_escape(res->message, sizeof(res->message), raw);
}

/* The case asks for a comparison the runs cannot give (a filter that names no tensor they
   share): a failure whatever was expected, and bad input (exit 2) at the check's line. */
static void lks_check_bad(struct lks_check_ctx *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void lks_check_bad(struct lks_check_ctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lks_check_vfail(x->res, LKS_BAD_CASE, fmt, ap);
	va_end(ap);
}

/* A metric within |a - b| <= atol + rtol |b|, a NaN never close: per step (loss, grad
   norm), or per step, tensor and rank of the tensors the filter names that b traced too
   (a tensor without the value in both runs, a scale where neither quantized it, left
   out). A filter that leaves nothing to compare is bad input. */
static int lks_check_close(struct lks_check_ctx *x)
{
	lks_walk_opts o = lks_check_walk_opts(x);
	lks_walk_count n;
	const char *pat = x->k->tensors[0] ? x->k->tensors : NULL;  /* NULL: every tensor */

	o.exact = 0;
	o.rtol = x->k->rtol;
	o.atol = x->k->atol;
	o.pattern = pat;
	if (!(o.metric = lks_metric_find(x->k->metric)))  /* the case's validation lets none through */
		return lks_err("check '%s': unknown metric '%s'", x->k->name, x->k->metric);
	if (lks_walk(&o, x->a, x->b, x->res, &n))
		return -1;
	if (o.metric->scope != LKS_METRIC_TENSOR)
		return 0;
	if (pat && !n.nmatch)
		lks_check_bad(x, "tensors = %s names none of the %d tensors run '%s' traced "
		              "('lockstep diff' lists them)", pat, x->a->nt, x->k->a);
	else if (pat && !n.nshared)
		lks_check_bad(x, "tensors = %s names %d tensors of run '%s', none of which run '%s' "
		              "traced", pat, n.nmatch, x->k->a, x->k->b);
	else if (!x->res->failed && !n.ncompared && x->a->nsteps && pat)
		lks_check_bad(x, "tensors = %s names no tensor with a %s in either run: nothing to "
		              "compare", pat, o.metric->name);
	else if (!x->res->failed && !n.ncompared && x->a->nsteps)
		lks_check_bad(x, "metric = %s: no tensor has a %s in either run (a scale needs a "
		              "quantized tensor): nothing to compare", o.metric->name, o.metric->name);
	return 0;
}

static int lks_check_finite(struct lks_check_ctx *x)
{
	lks_stored_run *a = x->a;

	for (int step = 0; step < a->nsteps; step++) {
		if (lks_stored_run_step(a, step))
			return -1;
		for (int i = 0; i < a->nt; i++)
			for (int r = 0; r < a->W; r++) {
				const lks_stat_row *row = lks_stored_run_row(a, r, i);

				if (row && row->nonfinite > 0) {
					lks_walk_at(x->res, a, step, r, i);
					lks_walk_int(x->res, "nonfinite", row->nonfinite, 0, 0);
					x->res->abs_err = x->res->rel_err = NAN;  /* one run: no error */
					return 0;
				}
			}
		for (int r = 0; r < a->W; r++) {
			const lks_step_row *row = lks_stored_run_step_row(a, step, r);

			if (row && (!isfinite(row->loss) || !isfinite(row->grad_norm))) {
				int loss = !isfinite(row->loss);

				lks_walk_at(x->res, a, step, r, -1);
				lks_walk_real(x->res, loss ? "loss" : "grad_norm",
				              loss ? row->loss : row->grad_norm, NAN, 0);
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
	const lks_stored_run *t;
	int seq;
	int base;               /* the ranks voting are base, base + 1, ... */
};

/* Ranks base + i and base + j hold the same stats row of tensor seq (or neither has one). */
static int lks_same_rank_row(void *arg, int i, int j)
{
	static const lks_walk_opts exact = { .exact = 1 };
	const struct lks_rank_rows *rr = arg;
	lks_check_result scratch;

	lks_check_result_init(&scratch);
	return !lks_walk_pair(&exact, rr->t, lks_stored_run_row(rr->t, rr->base + i, rr->seq),
	                      lks_stored_run_row(rr->t, rr->base + j, rr->seq), 0, i, rr->seq,
	                      &scratch);
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
			len += (size_t)snprintf(buf + len, size - len, "%s %d", k++ ? "," : "",
			                        rr->base + r);
	if (*n > 8 && len < size)
		snprintf(buf + len, size - len, " and %d more", *n - 8);
}

/* Tensor seq at the loaded step: 0 when every rank holds the same row; else 1 and the
   divergence. With a majority (three ranks or more), the ranks that disagree with it are
   named, and the divergence's rank is the one when only one does; two ranks, or no
   majority, name no single rank (rank -1): each is suspect, a golden or a clean run
   decides. */
static int lks_ranks_vote(struct lks_check_ctx *x, int step, int seq, int base, int W)
{
	lks_stored_run *a = x->a;
	lks_walk_opts o = lks_check_walk_opts(x);
	struct lks_rank_rows rr = { a, seq, base };
	char *note = x->res->note;
	int first = 0, m, nout, out = -1;
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
		snprintf(x->label_buf[0], sizeof(x->label_buf[0]), "rank %d", base + out);
		snprintf(x->label_buf[1], sizeof(x->label_buf[1]), "majority");
		lks_walk_pair(&o, a, lks_stored_run_row(a, base + out, seq),
		              lks_stored_run_row(a, base + m, seq), step, nout == 1 ? base + out : -1,
		              seq, x->res);
	} else {
		snprintf(x->label_buf[0], sizeof(x->label_buf[0]), "rank %d", base);
		snprintf(x->label_buf[1], sizeof(x->label_buf[1]), "rank %d", base + first);
		lks_walk_pair(&o, a, lks_stored_run_row(a, base, seq),
		              lks_stored_run_row(a, base + first, seq), step, -1, seq, x->res);
	}
	len = strlen(note);
	if (len)
		len += (size_t)snprintf(note + len, sizeof(x->res->note) - len, "; ");
	if (m >= 0)
		snprintf(note + len, sizeof(x->res->note) - len, "%s %s with the other %d of %d ranks%s",
		         list, nout > 1 ? "disagree" : "disagrees", W - nout, W,
		         W < a->W ? " of its tp group" : "");
	else if (W == 2)
		snprintf(note + len, sizeof(x->res->note) - len, "ranks %d and %d disagree: two ranks "
		         "have no majority, a golden or a clean run decides which is wrong", base,
		         base + 1);
	else
		snprintf(note + len, sizeof(x->res->note) - len, "no majority among ranks %d to %d: each "
		         "is suspect, a golden or a clean run decides", base, base + W - 1);
	return 1;
}

/* Every rank applies the same update to the same all-reduced gradient, so the parameters
   after it are the same bits on every rank; all fields are compared, the hash last. */
static int lks_check_ranks_agree(struct lks_check_ctx *x)
{
	lks_stored_run *a = x->a;
	int nupdate = 0;

	x->label_a = x->label_buf[0];
	x->label_b = x->label_buf[1];
	for (int i = 0; i < a->nt; i++)
		nupdate += a->phases[i] == LKS_PHASE_UPDATE;
	if (a->W == 1) {  /* it passed, comparing nothing */
		x->res->verdict = LKS_VERDICT_UNSUPPORTED;
		snprintf(x->res->message, sizeof(x->res->message), "run '%s' has one rank: no other "
		         "to agree with; not counted as a failure", x->k->a);
		return 0;
	}
	if (nupdate == 0) {
		lks_walk_at(x->res, a, -1, -1, -1);
		snprintf(x->res->note, sizeof(x->res->note), "the run traced no parameters (update phase)");
		return 0;
	}
	/* every rank's parameters after the update; under tp also every tensor a tp group
	   traces, whole and the same on each of its ranks, in execution order (not where each
	   rank traced its own shards: trace = shards) */
	int tp = lks_stored_run_shards(a) ? 1 : lks_stored_run_tp(a);

	for (int step = 0; step < a->nsteps && a->W > 1; step++) {
		if (lks_stored_run_step(a, step))
			return -1;
		for (int i = 0; i < a->nt; i++) {
			if (a->phases[i] == LKS_PHASE_UPDATE) {
				if (lks_ranks_vote(x, step, i, 0, a->W))
					return 0;
				continue;
			}
			for (int g = 0; tp > 1 && g < a->W / tp; g++)
				if (lks_ranks_vote(x, step, i, g * tp, tp))
					return 0;
		}
	}
	return 0;
}

/* The k-th recompute of a name against the k-th forward of it, at the same step and
   rank; in the recompute's execution order. */
static int lks_check_recompute(struct lks_check_ctx *x)
{
	lks_walk_opts o = lks_check_walk_opts(x);
	int nrecomputed = 0;

	for (int i = 0; i < x->a->nt; i++)
		nrecomputed += x->a->phases[i] == LKS_PHASE_RECOMPUTE;
	if (nrecomputed == 0) {
		lks_walk_at(x->res, x->a, -1, -1, -1);
		snprintf(x->res->note, sizeof(x->res->note), "nothing was recomputed (no "
		         "recompute-phase tensors)");
		return 0;
	}
	o.recompute = 1;
	return lks_walk(&o, x->a, x->a, x->res, NULL);
}

/* b resumed from a's state after a step: from b's first step on, every shared tensor bit
   for bit, then the loss, grad norm and learning rate of each step's rows; and b stored
   every step from there to a's last. */
static int lks_check_resume(struct lks_check_ctx *x)
{
	lks_walk_opts o = lks_check_walk_opts(x);
	lks_stored_run *b = x->b;

	if (b->nsteprows == 0 || b->steprows[0].step == 0) {
		lks_walk_at(x->res, x->a, -1, -1, -1);
		snprintf(x->res->note, sizeof(x->res->note), "run '%s' %s", x->k->b,
		         b->nsteprows ? "was not resumed: it stored step 0" : "stored no step");
		return 0;
	}
	o.from_step = b->steprows[0].step;
	o.step_fields = LKS_WALK_LOSS | LKS_WALK_GRAD_NORM | LKS_WALK_LR;
	return lks_walk(&o, x->a, b, x->res, NULL);
}

/* "lockstep golden update CASE --run RUN [--golden DIR]": how a missing golden is made,
   each word quoted for the shell. */
static void lks_golden_howto(const lks_stored_run *run, const char *dir, const char *db,
                             char *buf, size_t n)
{
	int other_dir = strcmp(dir, "golden") != 0;
	int other_db = db && strcmp(db, "lockstep.db") != 0;  /* else it read lockstep.db */
	char qcase[224], qrun[72], qdir[128], qdb[128];  /* the command fits in howto below */

	snprintf(buf, n, "lockstep golden update %s --run %s%s%s%s%s",
	         lks_shell_quote(run->case_path && *run->case_path ? run->case_path : run->case_name,
	                         qcase, sizeof(qcase)),
	         lks_shell_quote(run->run_name, qrun, sizeof(qrun)), other_dir ? " --golden " : "",
	         other_dir ? lks_shell_quote(dir, qdir, sizeof(qdir)) : "", other_db ? " --db " : "",
	         other_db ? lks_shell_quote(db, qdb, sizeof(qdb)) : "");
}

/* A golden check that compared nothing: a failure whatever the case expects; bad, a
   failure with bad_input (a golden or tolerance file), which 'lockstep run' turns into
   exit 2. */
static void lks_golden_fail(lks_check_result *res, int bad, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void lks_golden_fail(lks_check_result *res, int bad, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lks_check_vfail(res, bad ? LKS_BAD_GOLDEN : 0, fmt, ap);
	va_end(ap);
}

/* A missing golden (or tolerance) fails whatever the case expects (nothing was compared);
   a bad one fails with bad_input. Both give the verdict here, so lks_check_eval does not
   judge them. */
static int lks_check_golden(struct lks_check_ctx *x)
{
	lks_check_result *res = x->res;
	const char *dir = x->o && x->o->golden_dir ? x->o->golden_dir : "golden";
	lks_stored_run run, gold;
	char path[1024], howto[480], cls[64];  /* with the error, it fits lks_check_result.message */
	double rtol = 0, atol = 0;
	int rc;

	lks_stored_run_init(&gold);
	if ((rc = lks_stored_run_load(x->s, x->run_a, LKS_LOAD_TRACE, &run)) != 0)
		goto out;
	if (run.tt) {  /* no golden file holds a tensor trace yet: it would compare nothing */
		res->verdict = LKS_VERDICT_UNSUPPORTED;
		snprintf(res->message, sizeof(res->message), "run '%s' is a tensor trace, which has "
		         "no golden file yet: hold it to a reviewed trace with a bitwise check of two "
		         "imported runs; not counted as a failure", x->k->a);
		goto out;
	}
	lks_golden_howto(&run, dir, x->o ? x->o->db : NULL, howto, sizeof(howto));
	if (lks_golden_class_of(&run, cls, sizeof(cls))) {  /* nothing to compare with */
		lks_golden_fail(res, 0, "%s", lks_errmsg());
		goto out;
	}
	if ((rc = lks_golden_path(dir, cls, run.case_name, run.run_name, path, sizeof(path))) != 0)
		goto out;
	rc = lks_golden_read(path, &gold);
	if (rc == LKS_E_MISSING || rc == LKS_E_BAD_INPUT) {
		lks_golden_fail(res, rc == LKS_E_BAD_INPUT, "%s; %s it with: %s", lks_errmsg(),
		                rc == LKS_E_BAD_INPUT ? "fix or rewrite" : "create", howto);
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	/* cpu: the bit-exact reference, so its golden is met bit for bit */
	if (lks_golden_exact(cls)) {
		rc = lks_golden_compare(&run, &gold, 1, 0, 0, res);
		goto out;
	}
	rc = lks_golden_tolerance(dir, cls, run.recipe, &rtol, &atol, path, sizeof(path));
	if (rc == LKS_E_MISSING || rc == LKS_E_BAD_INPUT) {
		lks_golden_fail(res, rc == LKS_E_BAD_INPUT, "%s; measure one on a GPU of the class "
		                "('lockstep golden measure --db DB' after this run) and write [%s] "
		                "rtol = ... with a comment saying what gave it", lks_errmsg(),
		                run.recipe);
		rc = 0;
		goto out;
	}
	if (rc == 0)
		rc = lks_golden_compare_steps(&run, &gold, rtol, atol, res);
out:
	lks_stored_run_release(&run);
	lks_stored_run_release(&gold);
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
	lks_walk_real(res, "sqnr_db", row->db, sc->x->k->floor_db, 0);
	snprintf(res->note, sizeof(res->note), "SQNR %.2f dB is below the floor of %g dB",
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
	int reads;                /* 0: loads no stored run (golden, sqnr) */
} lks_check_kinds[] = {
	[LKS_CHECK_BITWISE] = { lks_check_bitwise, 1 },
	[LKS_CHECK_CLOSE] = { lks_check_close, 1 },
	[LKS_CHECK_SQNR] = { lks_check_sqnr, 0 },
	[LKS_CHECK_GOLDEN] = { lks_check_golden, 0 },
	[LKS_CHECK_FINITE] = { lks_check_finite, 1 },
	[LKS_CHECK_RANKS_AGREE] = { lks_check_ranks_agree, 1 },
	[LKS_CHECK_RECOMPUTE] = { lks_check_recompute, 1 },
	[LKS_CHECK_RESUME] = { lks_check_resume, 1 },
};

_Static_assert(sizeof(lks_check_kinds) / sizeof(lks_check_kinds[0]) == LKS_CHECK_COUNT,
               "one evaluation per check kind");

/* ---- verdicts and their words ---- */

void lks_check_value_text(char *buf, size_t n, const lks_check_result *r, int b)
{
	double v = b ? r->b : r->a;
	int64_t iv = b ? r->ib : r->ia;

	if (r->value_type == LKS_VALUE_REAL && isnan(v))  /* as the report and diff spell it */
		snprintf(buf, n, "NaN");
	else if (r->value_type == LKS_VALUE_REAL)
		snprintf(buf, n, r->value_f32 ? "%.9g" : "%.17g", v);
	else if (r->field && !strcmp(r->field, "hash"))
		snprintf(buf, n, "0x%016" PRIx64, (uint64_t)iv);
	else
		snprintf(buf, n, "%" PRId64, iv);
}

void lks_check_describe(const lks_check_result *r, const char *label_a, const char *label_b,
                        char *buf, size_t n)
{
	const char *phase = r->phase >= 0 ? lks_phase_name((lks_phase)r->phase) : NULL;
	char va[64], vb[64];
	size_t len = 0;

#define LKS_ADD(...) (len += (size_t)snprintf(buf + len, len < n ? n - len : 0, __VA_ARGS__))
	buf[0] = 0;
	if (r->step >= 0)
		LKS_ADD("step %d", r->step);
	if (r->tensor[0])
		LKS_ADD("%stensor '%s' (%s)", len ? ", " : "", r->tensor, phase ? phase : "?");
	if (r->metric[0])
		LKS_ADD("%smetric '%s'", len ? ", " : "", r->metric);
	if (r->rank >= 0)
		LKS_ADD("%srank %d", len ? ", " : "", r->rank);
	if (r->field && r->value_type != LKS_VALUE_NONE) {
		lks_check_value_text(va, sizeof(va), r, 0);
		lks_check_value_text(vb, sizeof(vb), r, 1);
		if (label_b)
			LKS_ADD("%s%s %s=%s %s=%s", len ? ": " : "", r->field, label_a, va, label_b, vb);
		else
			LKS_ADD("%s%s %s", len ? ": " : "", r->field, va);
		if (!isnan(r->abs_err) && label_b) {
			LKS_ADD(" (abs %.3g, rel %.3g", r->abs_err, r->rel_err);
			if (r->ulp >= 0)
				LKS_ADD(", %" PRId64 " ulp", r->ulp);
			LKS_ADD(")");
		}
	} else if (r->field) {
		LKS_ADD("%s%s", len ? ": " : "", r->field);
	}
	if (r->note[0])
		LKS_ADD("%s%s", len ? "; " : "", r->note);
#undef LKS_ADD
}

static int lks_expected_here(const lks_check_cfg *k, const lks_check_result *r)
{
	return (k->exp_step < 0 || k->exp_step == r->step)
	    && (k->exp_rank < 0 || k->exp_rank == r->rank)
	    && (!k->exp_tensor[0] || !strcmp(k->exp_tensor, r->metric[0] ? r->metric : r->tensor));
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

	lks_check_describe(x->res, x->label_a, x->label_b, found, sizeof(found));
	lks_expected_where(k, where, sizeof(where));
	if (!k->expect_fail) {
		r->verdict = r->failed ? LKS_VERDICT_FAIL : LKS_VERDICT_PASS;
		/* a pass says only its note, if any (what it could not compare) */
		snprintf(r->message, sizeof(r->message), "%s", r->failed ? found : r->note);
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

/* The kind's row of k, or NULL (lks_err). */
static const struct lks_check_kind_row *lks_check_row(const lks_check_cfg *k)
{
	if ((unsigned)k->kind < LKS_CHECK_COUNT && lks_check_kinds[k->kind].fn)
		return &lks_check_kinds[k->kind];
	lks_err("check '%s': no evaluation for kind %d", k->name, (int)k->kind);
	return NULL;
}

int lks_check_eval_runs(lks_store *s, const lks_check_cfg *k, const lks_check_opts *o,
                        lks_stored_run *a, lks_stored_run *b, lks_check_result *res)
{
	const struct lks_check_kind_row *row = lks_check_row(k);
	struct lks_check_ctx x = { .s = s, .k = k, .o = o, .res = res, .a = a, .b = b,
	                           .run_a = a->id, .run_b = b ? b->id : 0, .label_a = k->a,
	                           .label_b = k->b };
	int two = lks_check_kind_nruns(k->kind) == 2;
	lks_check_fn fn;

	lks_check_result_init(res);
	if (!row)
		return -1;
	if (two && (!b || lks_stored_run_metrics_pair(a, b)))
		return b ? -1 : lks_err("check '%s': two runs wanted", k->name);
	if (!two)
		x.b = NULL;
	if (k->kind == LKS_CHECK_RECOMPUTE) {
		x.label_a = "recompute";
		x.label_b = "forward";
	} else if (k->kind == LKS_CHECK_GOLDEN) {
		x.label_b = "golden";
	} else if (!two) {
		x.label_b = NULL;
	}
	/* an imported run's metrics: the kinds that read them their own way */
	fn = (a->nm || (x.b && x.b->nm)) && lks_check_import_fn(k->kind)
	     ? lks_check_import_fn(k->kind) : row->fn;
	/* a tensor trace's too (check_tensors.c) */
	if ((a->tt || (x.b && x.b->tt)) && lks_check_tensor_fn(k->kind))
		fn = lks_check_tensor_fn(k->kind);
	if (fn(&x))
		return -1;
	if (!res->message[0])  /* else the kind gave its verdict itself (unsupported, ...) */
		lks_check_judge(&x);
	return 0;
}

int lks_check_eval(lks_store *s, const lks_check_cfg *k, const lks_check_opts *o,
                   int64_t run_a, int64_t run_b, lks_check_result *res)
{
	const struct lks_check_kind_row *row = lks_check_row(k);
	lks_stored_run ta, tb;
	int two = lks_check_kind_nruns(k->kind) == 2, rc = -1;

	lks_check_result_init(res);
	if (!row)
		return -1;
	if (!run_a || (two && !run_b)) {
		res->verdict = LKS_VERDICT_SKIPPED;
		snprintf(res->message, sizeof(res->message), "run '%s' was not run (not selected, "
		         "left out, or it failed)", !run_a ? k->a : k->b);
		return 0;
	}
	lks_stored_run_init(&ta);
	lks_stored_run_init(&tb);
	ta.id = run_a;  /* a kind that reads no trace reads the run through its id */
	tb.id = run_b;
	if (!(row->reads && (lks_stored_run_load(s, run_a, LKS_LOAD_TRACE, &ta)
	                     || (two && lks_stored_run_load(s, run_b, LKS_LOAD_TRACE, &tb)))))
		rc = lks_check_eval_runs(s, k, o, &ta, two ? &tb : NULL, res);
	lks_stored_run_release(&ta);
	lks_stored_run_release(&tb);
	return rc;
}
