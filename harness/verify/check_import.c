/*
 * check_import.c: the check kinds on imported runs (DESIGN.md, Imported runs): runs of
 * other frameworks hold named metrics per (step, rank) instead of traced tensors (run.h).
 * bitwise and golden need nothing here: the walker walks metrics where a run has them
 * (walk.h), numerics only. close compares one metric by name (any: a performance metric
 * may be held to a tolerance, it is never part of a bitwise verdict); finite looks for the
 * first non-finite numerics value; ranks_agree compares the loss every rank reported.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/verify/check_impl.h"
#include "harness/verify/walk.h"
#include "kernels/err.h"

/* The metric the case names, by name, within |a - b| <= atol + rtol |b| (a NaN never
   close), step by step and rank by rank. A name neither run holds is bad input. A golden
   file's iteration-time is iteration_time_s (seconds) where a log's iteration_time is ms:
   two runs that both hold NAME_s and neither NAME compare NAME_s (one unit), and where one
   run lacks NAME but holds NAME_s, the message says so. */
static int lks_import_close(struct lks_check_ctx *x)
{
	lks_walk_opts o = { .rtol = x->k->rtol, .atol = x->k->atol, .metric_name = x->k->metric,
	                    .label_a = x->label_a, .label_b = x->label_b };
	lks_walk_count n;
	char secs[LKS_METRIC_NAME_MAX + 8], hint[192] = "";
	int has_a = lks_stored_run_metric_find(x->a, x->k->metric) >= 0;
	int has_b = lks_stored_run_metric_find(x->b, x->k->metric) >= 0;
	int secs_a, secs_b;

	snprintf(secs, sizeof(secs), "%s_s", x->k->metric);
	secs_a = lks_stored_run_metric_find(x->a, secs) >= 0;
	secs_b = lks_stored_run_metric_find(x->b, secs) >= 0;
	if (!has_a && !has_b && secs_a && secs_b)
		o.metric_name = secs;
	else if ((!has_a && secs_a) || (!has_b && secs_b))
		snprintf(hint, sizeof(hint), "; run '%.40s' holds '%.70s', in seconds: not one unit",
		         !has_a && secs_a ? x->k->a : x->k->b, secs);
	if (lks_walk(&o, x->a, x->b, x->res, &n))
		return -1;
	if (!n.nmatch) {
		lks_check_result_init(x->res);
		x->res->verdict = LKS_VERDICT_FAIL;
		x->res->failed = 1;
		x->res->bad_input = LKS_BAD_CASE;
		snprintf(x->res->message, sizeof(x->res->message), "metric = %s: neither run '%s' "
		         "nor run '%s' reported it ('lockstep diff' lists their metrics)%s",
		         x->k->metric, x->k->a, x->k->b, hint);
	} else if (x->res->failed && *hint) {  /* said after the values */
		size_t len = strlen(x->res->note);

		snprintf(x->res->note + len, sizeof(x->res->note) - len, "%s", hint);
	}
	return 0;
}

/* The first numerics value that is NaN or infinite, by (step, rank), then the metrics of
   that (step, rank) as stored (by name). */
static int lks_import_finite(struct lks_check_ctx *x)
{
	const lks_stored_run *a = x->a;

	for (size_t i = 0; i < a->nmrows; i++) {
		const struct lks_mrow *row = &a->mrows[i];

		if (a->mkinds[row->m] != LKS_METRIC_NUMERICS || isfinite(row->value))
			continue;
		lks_walk_at(x->res, a, row->step, row->rank, -1);
		snprintf(x->res->metric, sizeof(x->res->metric), "%s", a->mnames[row->m]);
		lks_walk_real(x->res, "value", row->value, NAN, 0);
		return 0;
	}
	return 0;
}

struct lks_loss_ranks {
	const lks_stored_run *a;
	int m, step;
	const int *rank;          /* the ranks the run holds (a log of some ranks only: 0, 8) */
};

/* The i-th and j-th ranks held reported the same loss at the step, bit for bit (or
   neither did). */
static int lks_same_loss(void *arg, int i, int j)
{
	static const lks_walk_opts exact = { .exact = 1 };
	const struct lks_loss_ranks *lr = arg;
	lks_check_result scratch;

	lks_check_result_init(&scratch);
	return !lks_walk_metric_pair(&exact, lr->a, lr->m, lr->rank[i], lr->a, lr->m, lr->rank[j],
	                             lr->step, &scratch);
}

/* The ranks of a's metric rows, ascending, into rank[0..W) (a->W of room): every rank
   from 0 up, or the ranks a log of some ranks only held. Their count. */
static int lks_ranks_held(const lks_stored_run *a, int *rank)
{
	unsigned char *held = calloc((size_t)a->W + 1, 1);
	int n = 0;

	if (!held)
		return -1;
	for (size_t i = 0; i < a->nmrows; i++)
		if (a->mrows[i].rank < a->W)
			held[a->mrows[i].rank] = 1;
	for (int r = 0; r < a->W; r++)
		if (held[r])
			rank[n++] = r;
	free(held);
	return n;
}

/* Every rank of a data-parallel job reports the loss of the same global batch: where one
   differs, the majority (three ranks or more) names it; two ranks, or no majority, name
   no single rank (rank -1), as ranks_agree on lockstep's own runs. At each step the ranks
   compared are those that logged the loss there: a rank that logged nothing (a log cut
   off when the job died, a rank that logged alone) disagrees with no one, and the note
   says at how many steps some ranks lacked it. */
static int lks_import_ranks_agree(struct lks_check_ctx *x)
{
	struct lks_loss_ranks lr = { x->a, lks_stored_run_metric_find(x->a, "loss"), 0, NULL };
	lks_walk_opts o = { .exact = 1, .label_a = x->label_buf[0], .label_b = x->label_buf[1] };
	int *rank = malloc(((size_t)x->a->W + 1) * sizeof(*rank)), Wrun;
	int *held = malloc(((size_t)x->a->W + 1) * sizeof(*held));
	int lacking = 0, lack_step = -1, lack_n = 0;

	x->label_a = x->label_buf[0];
	x->label_b = x->label_buf[1];
	if (!rank || !held || (Wrun = lks_ranks_held(x->a, rank)) < 0) {
		free(rank);
		free(held);
		return lks_err("out of memory");
	}
	lr.rank = held;
	if (lr.m < 0) {
		lks_walk_at(x->res, x->a, -1, -1, -1);
		snprintf(x->res->note, sizeof(x->res->note), "the run reported no loss");
		goto out;
	}
	if (Wrun < 2) {  /* it passed, comparing nothing */
		x->res->verdict = LKS_VERDICT_UNSUPPORTED;
		snprintf(x->res->message, sizeof(x->res->message), "run '%s' logged one rank: no "
		         "other to agree with; not counted as a failure", x->k->a);
		goto out;
	}
	for (lr.step = 0; lr.step < x->a->nsteps && Wrun > 1; lr.step++) {
		int first = 0, m, out = -1, nout = 0, W = 0;

		for (int i = 0; i < Wrun; i++)
			if (lks_stored_run_metric(x->a, lr.step, rank[i], lr.m))
				held[W++] = rank[i];
		if (W > 0 && W < Wrun && !lacking++) {
			lack_step = lr.step;
			lack_n = Wrun - W;
		}
		if (W < 2)
			continue;
		for (int r = 1; r < W && !first; r++)
			first = lks_same_loss(&lr, 0, r) ? 0 : r;
		if (!first)
			continue;
		if ((m = lks_majority(W, lks_same_loss, &lr)) < 0) {
			snprintf(x->label_buf[0], sizeof(x->label_buf[0]), "rank %d", held[0]);
			snprintf(x->label_buf[1], sizeof(x->label_buf[1]), "rank %d", held[first]);
			lks_walk_metric_pair(&o, x->a, lr.m, held[0], x->a, lr.m, held[first], lr.step,
			                     x->res);
			x->res->rank = -1;
			snprintf(x->res->note, sizeof(x->res->note), "ranks %d and %d report different "
			         "losses with no majority among %d ranks: a golden or a clean run decides",
			         held[0], held[first], W);
			goto out;
		}
		for (int r = W - 1; r >= 0; r--)
			if (!lks_same_loss(&lr, m, r)) {
				out = held[r];
				nout++;
			}
		snprintf(x->label_buf[0], sizeof(x->label_buf[0]), "rank %d", out);
		snprintf(x->label_buf[1], sizeof(x->label_buf[1]), "majority");
		lks_walk_metric_pair(&o, x->a, lr.m, out, x->a, lr.m, held[m], lr.step, x->res);
		x->res->rank = nout == 1 ? out : -1;
		snprintf(x->res->note, sizeof(x->res->note), "%d of %d ranks disagree with the "
		         "others' loss", nout, W);
		goto out;
	}
	if (lacking)
		snprintf(x->res->note, sizeof(x->res->note), "at %d step%s some ranks logged no loss "
		         "(first step %d: %d of %d ranks), compared among those that did", lacking,
		         lacking == 1 ? "" : "s", lack_step, lack_n, Wrun);
out:
	free(rank);
	free(held);
	return 0;
}

lks_check_fn lks_check_import_fn(lks_check_kind kind)
{
	switch (kind) {
	case LKS_CHECK_CLOSE: return lks_import_close;
	case LKS_CHECK_FINITE: return lks_import_finite;
	case LKS_CHECK_RANKS_AGREE: return lks_import_ranks_agree;
	default: return NULL;
	}
}
