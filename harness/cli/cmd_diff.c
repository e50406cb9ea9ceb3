/*
 * cmd_diff.c: 'lockstep diff RUN_A RUN_B': two stored runs side by side, like diff(1) for
 * traces. Prints what each run was (case, run, recipe, options, world size, steps,
 * backend, and the fingerprint keys in which they differ), the first divergence exactly
 * as the bitwise check reports it (the check walks both runs with walk.h), and a table
 * per step: the loss of both, its relative error, and over every tensor both runs share
 * the largest relative error of the L2 norm (with the tensor where it occurs) and how many
 * tensors have a different hash.
 *
 * Exit 0 when the runs are bitwise identical, 1 when they differ, 2 for bad usage, an
 * unknown run or a bad database, 3 when the database cannot be read.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "harness/verify/walk.h"
#include "harness/cli/cmd.h"
#include "harness/cli/diff_metrics.h"
#include "harness/cli/run_arg.h"
#include "harness/store/fingerprint.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

static const char lks_diff_usage[] =
	"usage: lockstep diff [options] RUN_A RUN_B\n"
	"\n"
	"Compares two stored runs. A run is its id in the database (as 'lockstep run' and the\n"
	"report show it) or CASE/RUN: the latest stored run of that case and run name. Prints\n"
	"  - both runs: case, run, recipe, options, world size, steps (trained: as many as it\n"
	"    was run for; imported: the last step the log holds), backend, status, and\n"
	"    the fingerprint keys that differ (versions, GPU, host, numerics env vars, ...)\n"
	"  - the first divergence, as the bitwise check reports it: step, tensor (execution\n"
	"    order), rank, field, the values of a and b and the error between them\n"
	"  - per step: loss of a and b and their relative error |a - b| / |b|; over the tensors\n"
	"    both runs share (by name and phase; ranks compared pairwise) the largest relative\n"
	"    error of the L2 norm and the tensor where it occurs, and how many tensors have a\n"
	"    different hash (any rank); '-' where a run has no value (no such step), NaN\n"
	"    where it stored a NaN\n"
	"  - of imported tensor traces (te-debug, tensor-jsonl), per step: the tensors each\n"
	"    rank's sequences pair when aligned by name and order, those inserted, removed,\n"
	"    renamed, how many pairs differ (any statistic or hash), hashes that differ, the\n"
	"    largest relative error of l2 and where\n"
	"  - of imported runs ('lockstep import', import = in a case), their metrics instead:\n"
	"    numerics (values, how many differ, the first step that does, the largest\n"
	"    relative error, the decimals each side's text printed them with and how many\n"
	"    differ still at the coarser: a text log against its run's event file agrees\n"
	"    to the printed precision, and the event file holds more), then performance\n"
	"    apart (means of a and b; never in a verdict)\n"
	"\n"
	"options:\n";

static const char lks_diff_tail[] =
	"\n"
	"example:\n"
	"  lockstep run cases/fp8_recipes.ini --db nightly.db\n"
	"  lockstep diff fp8_recipes/bf16 fp8_recipes/rowwise --db nightly.db\n"
	"  lockstep diff 12 31 --db nightly.db        # the same run, last week and tonight\n"
	"\n"
	"exit codes: 0 the runs are bitwise identical, 1 they differ,\n"
	"            2 bad usage, an unknown run or a file that is not a lockstep database,\n"
	"            3 the database cannot be read\n";

/* The run arg names (run_arg.h), loaded with its trace: 0 found; LKS_EXIT_USAGE (message
   printed) unknown or malformed; -1 store error. */
static int lks_diff_resolve(lks_store *s, const char *db, const char *arg, lks_stored_run *out)
{
	int64_t id;
	int rc = lks_run_arg_resolve(s, "diff", db, arg, &id);

	if (rc)
		return rc;
	return lks_stored_run_load(s, id, LKS_LOAD_TRACE, out) ? -1 : 0;
}

/* ---- the header ---- */

/* runs.steps is a count for a run lockstep trained (the steps it was run for) and the last
   step for an import (trace_store.h), whose log may start at step 1 or 0, and for a traced
   run: said as the import says it, from the steps the run holds, since runs.steps of an
   import or a trace is set only when it ends well (a killed rank, a follow stopped by an
   error leave it 0). */
static void lks_diff_header(const char *label, const lks_stored_run *r)
{
	char steps[48];

	if (!lks_stored_run_steps_last(r))
		snprintf(steps, sizeof(steps), "%d steps", r->steps);
	else if (r->nsteps > 0)
		snprintf(steps, sizeof(steps), "steps up to %d", r->nsteps - 1);
	else
		snprintf(steps, sizeof(steps), "no step");
	printf("%s: run %lld  %s/%s  recipe %s%s%s  world size %d  %s  backend %s  %s  %s\n",
	       label, (long long)r->id, r->case_name, r->run_name, r->recipe,
	       r->options[0] ? "  options " : "", r->options, r->W, steps, r->backend,
	       r->status, r->started);
}

/* ---- traces for the per-step table ---- */

/* |a - b| / |b|; 0 for equal values (0 and 0 included), inf when b is 0 and a is not,
   NaN when either is NaN. */
static double lks_rel(double a, double b)
{
	if (a == b)
		return 0.0;
	return fabs(a - b) / fabs(b);
}

/* One row of the per-step table. */
struct lks_diff_step {
	double loss_a, loss_b, loss_rel;
	int has_a, has_b;         /* the run stored the step (its loss may be NaN) */
	double l2_rel;            /* the largest over shared tensors and ranks; -1: none */
	int l2_seq;               /* its tensor in a; -1: none */
	int nhash;                /* shared tensors whose hash differs on some rank */
	int l2_nan;               /* a NaN L2 error was seen (it outranks every number) */
};

/* The loss of a step is the mean over the ranks that stored one, as the close check takes
   it (NaN when none did). */
static void lks_diff_step_eval(const lks_stored_run *a, const lks_stored_run *b,
                               const int *map, int step, struct lks_diff_step *d)
{
	const lks_metric *loss = lks_metric_find("loss");
	int W = a->W < b->W ? a->W : b->W;

	d->loss_a = lks_walk_step_value(a, step, loss);
	d->loss_b = lks_walk_step_value(b, step, loss);
	d->has_a = lks_walk_step_stored(a, step);
	d->has_b = lks_walk_step_stored(b, step);
	d->loss_rel = lks_rel(d->loss_a, d->loss_b);
	d->l2_rel = -1.0;
	d->l2_seq = -1;
	d->nhash = 0;
	d->l2_nan = 0;
	for (int i = 0; i < a->nt; i++) {
		int hash_differs = 0;

		for (int r = 0; map[i] >= 0 && r < W; r++) {
			const lks_stat_row *ra = lks_stored_run_row(a, r, i);
			const lks_stat_row *rb = lks_stored_run_row(b, r, map[i]);
			double e;

			if (!ra || !rb)
				continue;
			hash_differs |= ra->hash != rb->hash;
			e = lks_rel(ra->l2, rb->l2);
			if (d->l2_nan)
				continue;
			if (isnan(e)) {
				d->l2_nan = 1;
				d->l2_seq = i;
			} else if (e > d->l2_rel) {
				d->l2_rel = e;
				d->l2_seq = i;
			}
		}
		d->nhash += hash_differs;
	}
}

/* A value of the table: "-" where there is none (!has), "NaN" where it is one. */
static void lks_fmt_num(char *buf, size_t n, double v, int has, const char *fmt)
{
	if (!has)
		snprintf(buf, n, "-");
	else if (isnan(v))
		snprintf(buf, n, "NaN");
	else
		snprintf(buf, n, fmt, v);
}

/* The tensors are paired as the bitwise check pairs them (walk.h). */
static int lks_diff_table(lks_stored_run *a, lks_stored_run *b, int max_rows)
{
	static const lks_walk_opts shared = { .exact = 1 };
	lks_walk_count n;
	int *map, nsteps;

	if (!(map = malloc(sizeof(int) * ((size_t)a->nt + 1))))
		return lks_err("out of memory");
	lks_walk_pairs(&shared, a, b, map, &n);
	nsteps = a->nsteps > b->nsteps ? a->nsteps : b->nsteps;
	printf("\nper step (%d tensors shared of %d in a, %d in b; ranks 0..%d compared pairwise; "
	       "rel = |a - b| / |b|):\n", n.nshared, a->nt, b->nt, (a->W < b->W ? a->W : b->W) - 1);
	printf("%5s  %-12s %-12s %-10s %-10s %-44s %s\n", "step", "loss a", "loss b", "loss rel",
	       "l2 rel max", "at tensor", "hash differs");
	for (int step = 0; step < nsteps; step++) {
		struct lks_diff_step d;
		char la[32], lb[32], lr[32], l2[32], at[160];

		if (max_rows > 0 && step >= max_rows) {
			printf("... %d more step%s (--max-rows 0 shows all)\n", nsteps - step,
			       nsteps - step > 1 ? "s" : "");
			break;
		}
		/* a step one run lacks has no rows in it */
		if (lks_stored_run_step(a, step) || lks_stored_run_step(b, step)) {
			free(map);
			return -1;
		}
		lks_diff_step_eval(a, b, map, step, &d);
		lks_fmt_num(la, sizeof(la), d.loss_a, d.has_a, "%.6f");
		lks_fmt_num(lb, sizeof(lb), d.loss_b, d.has_b, "%.6f");
		lks_fmt_num(lr, sizeof(lr), d.loss_rel, d.has_a && d.has_b, "%.3g");
		lks_fmt_num(l2, sizeof(l2), d.l2_nan ? NAN : d.l2_rel, d.l2_seq >= 0, "%.3g");
		if (d.l2_seq >= 0 && (d.l2_rel > 0 || d.l2_nan))
			snprintf(at, sizeof(at), "%s (%s)", a->names[d.l2_seq],
			         lks_phase_name(a->phases[d.l2_seq]));
		else
			snprintf(at, sizeof(at), "-");
		printf("%5d  %-12s %-12s %-10s %-10s %-44s %d\n", step, la, lb, lr, l2, at, d.nhash);
	}
	free(map);
	return 0;
}

/* Two tensor traces: per step, the tensors aligned and what differs (walk.h). */
static int lks_diff_tensors(lks_stored_run *a, lks_stored_run *b, int max_rows)
{
	int nsteps = a->nsteps > b->nsteps ? a->nsteps : b->nsteps;

	printf("\nper step (tensor traces: each rank's tensors aligned by name and order; "
	       "rel = |a - b| / |b|):\n");
	printf("%5s  %-8s %-8s %-8s %-8s %-8s %-8s %-10s %s\n", "step", "pairs", "inserted",
	       "removed", "renamed", "differ", "hash", "l2 rel max", "at tensor, rank");
	for (int step = 0; step < nsteps; step++) {
		lks_tensor_step_diff d;
		char l2[32], at[200];

		if (max_rows > 0 && step >= max_rows) {
			printf("... %d more step%s (--max-rows 0 shows all)\n", nsteps - step,
			       nsteps - step > 1 ? "s" : "");
			break;
		}
		if (lks_walk_tensor_step_pairs(a, b, step, NULL, NULL, &d))
			return -1;
		lks_fmt_num(l2, sizeof(l2), d.l2_rel, !isnan(d.l2_rel), "%.3g");
		if (d.l2_seq >= 0)
			snprintf(at, sizeof(at), "%s (%s), rank %d", a->names[d.l2_seq],
			         lks_phase_name(a->phases[d.l2_seq]), d.l2_rank);
		else
			snprintf(at, sizeof(at), "-");
		printf("%5d  %-8ld %-8ld %-8ld %-8ld %-8ld %-8ld %-10s %s\n", step, d.pairs,
		       d.inserted, d.removed, d.renamed, d.nvalue, d.nhash, l2, at);
	}
	return 0;
}

/* The bitwise check k, or where a run was pruned, what both still have (check.h). */
static int lks_diff_eval(lks_store *s, lks_check_cfg *k, lks_stored_run *ra,
                         lks_stored_run *rb, lks_check_result *res, int *pruned)
{
	const lks_stored_run *r[2] = { ra, rb };

	*pruned = 0;
	for (int i = 0; i < 2; i++) {
		int p;

		if (lks_check_run_pruned(s, r[i]->id, &p))
			return -1;
		if (p)
			printf("\nrun %lld has no stat rows (pruned: lockstep prune --help): compared "
			       "on loss and grad norm alone, bit for bit\n", (long long)r[i]->id);
		*pruned |= p;
	}
	return lks_check_bitwise_kept_runs(s, k, ra, rb, *pruned, res);
}

/* ---- the command ---- */

struct lks_diff_args {
	const char *db, *run[2];
	int max_rows;
};

/* 0: go on; LKS_OPT_HELP: help was printed; else an exit code */
static int lks_diff_parse(int argc, char **argv, struct lks_diff_args *a)
{
	lks_opt_list runs = { 0 };
	const lks_option opts[] = {
		LKS_OPT_PATH("--db", "FILE", &a->db,
		             "the database (default lockstep.db), opened read-only"),
		LKS_OPT_INT("--max-rows", "N", &a->max_rows, 0, 1 << 30,
		            "at most N rows in the per-step table (default 100; 0: all)"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "diff", .usage = lks_diff_usage, .tail = lks_diff_tail, .width = 16 };
	int rc;

	a->db = "lockstep.db";
	a->max_rows = 100;
	rc = lks_opt_parse(&cmd, opts, argc, argv, &runs);
	if (rc == 0 && runs.n > 2)
		rc = lks_usage("diff: two runs, not more ('%s')", runs.v[2]);
	else if (rc == 0 && runs.n != 2)
		rc = lks_usage("diff: which two runs? (ids or CASE/RUN; 'lockstep diff --help')");
	for (int i = 0; rc == 0 && i < 2; i++)
		a->run[i] = runs.v[i];
	free(runs.v);
	return rc;
}

/* The case texts the two runs were made from, where both have one (an import by
   'lockstep import --case' has none): their first differing line, as night over night
   names case.text among the keys that differ. */
static void lks_diff_case_text(const lks_stored_run *a, const lks_stored_run *b)
{
	const char *p = a->case_text, *q = b->case_text;
	int line = 1;

	if (!p || !q || !*p || !*q || !strcmp(p, q))
		return;
	for (;;) {
		size_t n = strcspn(p, "\n"), m = strcspn(q, "\n");

		if (n != m || memcmp(p, q, n)) {
			printf("case texts differ (the case file edited between the runs, or two cases), "
			       "first at line %d:\n  a: %.*s\n  b: %.*s\n", line, (int)(n > 200 ? 200 : n),
			       p, (int)(m > 200 ? 200 : m), q);
			return;
		}
		p += n + (p[n] == '\n');
		q += m + (q[m] == '\n');
		line++;
	}
}

int cmd_diff(int argc, char **argv)
{
	struct lks_diff_args a = { 0 };
	lks_stored_run ra, rb;
	lks_check_cfg k = { .name = "diff", .kind = LKS_CHECK_BITWISE, .a = "a", .b = "b",
	                    .exp_step = -1, .exp_rank = -1 };
	lks_check_result res;
	lks_store *store = NULL;
	int rc, open_rc, pruned = 0;

	lks_stored_run_init(&ra);
	lks_stored_run_init(&rb);
	if ((rc = lks_diff_parse(argc, argv, &a)) != 0)
		return lks_opt_exit(rc);
	if ((open_rc = lks_store_open_readonly(a.db, &store)) != 0) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		return lks_exit_code(open_rc);
	}
	rc = LKS_EXIT_INFRA;
	if ((open_rc = lks_diff_resolve(store, a.db, a.run[0], &ra)) != 0
	    || (open_rc = lks_diff_resolve(store, a.db, a.run[1], &rb)) != 0) {
		if (open_rc < 0)
			fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		else
			rc = open_rc;
		goto out;
	}
	lks_diff_header("a", &ra);
	lks_diff_header("b", &rb);
	lks_fingerprint_json_diff(stdout, ra.fingerprint, rb.fingerprint, "a", "b");
	lks_diff_case_text(&ra, &rb);
	if (lks_stored_run_metrics_pair(&ra, &rb)
	    || lks_diff_eval(store, &k, &ra, &rb, &res, &pruned)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		goto out;
	}
	if (res.verdict == LKS_VERDICT_PASS)
		printf("\nidentical: bit for bit in %s\n", ra.tt || rb.tt
		       ? "every statistic and hash of the tensors aligned"
		       : ra.nm || rb.nm ? "every shared numerics metric of every step and rank"
		       : pruned ? "loss and grad norm" : "every shared tensor, loss and grad norm");
	else
		printf("\nfirst divergence: %s\n", res.message);
	if (ra.tt || rb.tt ? lks_diff_tensors(&ra, &rb, a.max_rows)
	    : (ra.nm || rb.nm) ? lks_diff_metrics(&ra, &rb)  /* imported: metrics, not tensors */
	    : lks_diff_table(&ra, &rb, a.max_rows)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		goto out;
	}
	rc = res.verdict == LKS_VERDICT_PASS ? LKS_EXIT_OK : LKS_EXIT_FAIL;
out:
	lks_stored_run_release(&ra);
	lks_stored_run_release(&rb);
	lks_store_close(store);
	return rc;
}
