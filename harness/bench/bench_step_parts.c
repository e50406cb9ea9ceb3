/*
 * bench_step_parts.c: parts 4 to 7 of 'lockstep bench step' (bench_step.c): the FP8
 * runs' loss gap to BF16, the background thread against the GEMM threads, FSDP against
 * DP, and tensor parallel against DP with the cost of tracing it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/bench/bench.h"
#include "harness/bench/bench_step.h"
#include "kernels/err.h"
#include "kernels/pool.h"

/* ---- 5: the background thread against the GEMM threads ---- */

/* Part 5: the run untraced and traced with the GEMM pool on every core, and on one fewer,
   so that the background thread has a core of its own (the runner starts it when it has
   more than one thread to give: --threads, or the cores). */
int lks_step_bg(const struct lks_step_args *a, const lks_case *c, const lks_run_cfg *run,
                       struct lks_step_side *side, struct lks_step_sides *S)
{
	int cores = a->threads > 0 ? a->threads : lks_pool_cpus();

	for (int k = 0; k < 4; k++)
		side[k] = (struct lks_step_side){
			.label = k % 2 ? "traced (stats + hashes)" : "untraced",
			.c = c, .run = run, .no_trace = k % 2 == 0, .threads = cores, .wrap = 1,
			.gemm_threads = k < 2 ? cores : cores - 1 };
	return lks_step_sides_init(S, side, 4, a->steps, a->reps5, -1) || lks_step_sides_time(S, 0);
}

/* ---- 6 and 7: a mesh against DP ---- */

/* The case of a, its run name at W ranks into dp, and with mesh key (fsdp, tp) = val too
   into other; *have: how many were loaded (the caller releases them). */
static int lks_step_mesh_cases(const struct lks_step_args *a, const char *name, int W,
                               const char *key, int val, lks_case *dp, lks_case *other,
                               int *have)
{
	char ws[LKS_NAME_MAX + 64], ms[LKS_NAME_MAX + 64];

	snprintf(ws, sizeof(ws), "run.%s.world_size=%d", name, W);
	snprintf(ms, sizeof(ms), "run.%s.%s=%d", name, key, val);
	a->sets[a->nsets] = ws;
	a->sets[a->nsets + 1] = ms;
	if (lks_case_load(a->case_path, a->sets, a->nsets + 1, dp))
		return -1;
	*have = 1;
	if (lks_case_load(a->case_path, a->sets, a->nsets + 2, other))
		return -1;
	*have = 2;
	return 0;
}

/* Part 6: the run at world size W (the case's, or 2 on a case of one rank), as DP and as
   FSDP over all W ranks (runner_fsdp.c: a reduce-scatter and two all-gathers where DP has
   one all-reduce, AdamW on a shard), untraced, in rounds; the per-round change. */
int lks_step_fsdp(const struct lks_step_args *a, const lks_case *c, const char *name,
                         lks_case *dp, lks_case *fsdp, int *have)
{
	int W = c->world_size > 1 ? c->world_size : 2;
	struct lks_step_side side[2];
	struct lks_step_sides S = { 0 };
	int rc;

	if ((long long)c->model.batch * c->world_size % W) {
		printf("\n6. FSDP against DP: not measured: %d ranks do not divide the global batch\n",
		       W);
		return 0;
	}
	if (lks_step_mesh_cases(a, name, W, "fsdp", W, dp, fsdp, have))
		return -1;
	side[0] = (struct lks_step_side){ .label = "DP", .c = dp, .run = lks_case_run(dp, name),
	                                  .no_trace = 1, .threads = a->threads };
	side[1] = (struct lks_step_side){ .label = "FSDP", .c = fsdp,
	                                  .run = lks_case_run(fsdp, name), .no_trace = 1,
	                                  .threads = a->threads };
	if ((rc = lks_step_sides_init(&S, side, 2, a->steps, a->reps5, -1))
	    || (rc = lks_step_sides_time(&S, 0))) {
		lks_step_sides_release(&S);
		return rc;
	}
	printf("\n6. FSDP against DP: run '%s' on %d ranks (threads), untraced, as DP and as FSDP\n"
	       "   over the %d (a reduce-scatter and two all-gathers in place of the all-reduce,\n"
	       "   AdamW on a shard); %d steps, step 0 left out, %d round%s, both runs back to back\n"
	       "   in each; change: per round, FSDP / DP - 1\n", name, W, W, S.steps, S.rounds,
	       S.rounds > 1 ? "s" : "");
	lks_step_print_head(14, "vs DP");
	lks_step_print_side(&S, 0, 0, 14);
	lks_step_print_side(&S, 1, 0, 14);
	lks_step_sides_release(&S);
	return 0;
}

/* ---- 7: tensor parallel against DP, and its tracing ---- */

/* The tp of part 7 on W ranks: W, else 2, where it divides the model's ffn and heads. */
static int lks_step_tp_of(const lks_case *c, int W)
{
	const lks_model_cfg *m = &c->model;

	for (int tp = W; tp >= 2; tp = tp == W && W != 2 ? 2 : 1)
		if (W % tp == 0 && m->ffn % tp == 0 && (!m->attention || m->heads % tp == 0))
			return tp;
	return 0;
}

/* Part 7: the run on W ranks (as part 6) as DP and with its blocks tensor-parallel over tp
   of them (model_tp.c: partial sums, gathers and scale groups over the host; every tensor
   of the group traced whole, gathered), each untraced and traced (stats + hashes, no
   store), in rounds. */
int lks_step_tp(const struct lks_step_args *a, const lks_case *c, const char *name)
{
	int W = c->world_size > 1 ? c->world_size : 2, tp = lks_step_tp_of(c, W), have = 0, rc;
	struct lks_step_side side[4];
	struct lks_step_sides S = { 0 };
	lks_case dp, tpc;

	if (!tp || (long long)c->model.batch * c->world_size % W) {
		printf("\n7. tensor parallel against DP: not measured: %s\n", tp ? "the ranks do not "
		       "divide the global batch" : "no tp of the ranks divides the model's ffn and heads");
		return 0;
	}
	if ((rc = lks_step_mesh_cases(a, name, W, "tp", tp, &dp, &tpc, &have)) == 0) {
		for (int k = 0; k < 4; k++)
			side[k] = (struct lks_step_side){
				.label = k == 0 ? "DP untraced" : k == 1 ? "DP traced" : k == 2
				       ? "TP untraced" : "TP traced",
				.c = k < 2 ? &dp : &tpc, .run = lks_case_run(k < 2 ? &dp : &tpc, name),
				.no_trace = k % 2 == 0, .threads = a->threads };
		if ((rc = lks_step_sides_init(&S, side, 4, a->steps, a->reps5, -1)) == 0)
			rc = lks_step_sides_time(&S, 0);
	}
	if (rc == 0) {
		printf("\n7. tensor parallel against DP: run '%s' on %d ranks (threads), as DP and with\n"
		       "   tp = %d (partial sums, gathers and FP8 scale groups over the host; each tp\n"
		       "   group traces whole tensors, gathered), untraced and traced (stats + hashes, no\n"
		       "   store); %d steps, step 0 left out, %d round%s, the four back to back in each;\n"
		       "   change: per round, against the row named\n", name, W, tp, S.steps, S.rounds,
		       S.rounds > 1 ? "s" : "");
		lks_step_print_head(14, "change");
		lks_step_print_side(&S, 0, 0, 14);
		printf("   vs DP untraced:\n");
		lks_step_print_side(&S, 1, 0, 14);
		lks_step_print_side(&S, 2, 0, 14);
		printf("   vs TP untraced (the cost of tracing a sharded run):\n");
		lks_step_print_side(&S, 3, 2, 14);
	}
	lks_step_sides_release(&S);
	if (have > 0)
		lks_case_release(&dp);
	if (have > 1)
		lks_case_release(&tpc);
	return rc;
}

void lks_step_print_bg_part(const struct lks_step_sides *S)
{
	printf("\n5. the background thread against the GEMM threads: run '%s' on one rank, the GEMM\n"
	       "   pool on every core and on one fewer; %d steps, step 0 left out, %d round%s with\n"
	       "   the four runs back to back in each; overhead: per round, traced / untraced - 1\n",
	       S->side[0].run->name, S->steps, S->rounds, S->rounds > 1 ? "s" : "");
	for (int p = 0; p < 2; p++) {
		printf("   %d GEMM thread%s, a background thread beside them:\n",
		       S->side[2 * p].gemm_threads, S->side[2 * p].gemm_threads > 1 ? "s" : "");
		lks_step_print_head(30, "overhead");
		lks_step_print_side(S, 2 * p, 2 * p, 30);
		lks_step_print_side(S, 2 * p + 1, 2 * p, 30);
		lks_step_print_bg(&S->side[2 * p + 1]);
	}
}

/* ---- 4: loss gap ---- */

int lks_step_gap(const struct lks_step_args *a, const lks_case *c)
{
	int steps = a->steps_given ? a->steps : c->steps, ref = -1;
	struct lks_step_rec *rec = calloc((size_t)c->nruns, sizeof(*rec));
	lks_runner_opts o = { .steps = steps, .threads = a->threads, .no_trace = 1,
	                      .mark = "bench step" };
	lks_run_result res;
	int rc = -1;

	if (!rec)
		return lks_err("out of memory");
	for (int i = 0; i < c->nruns; i++) {
		if (lks_step_rec_init(&rec[i], steps, 0) || lks_step_run(c, &c->runs[i], NULL, o, &rec[i], &res))
			goto out;
		if (ref < 0 && c->runs[i].recipe == LKS_RECIPE_BF16)
			ref = i;
	}

	printf("\n4. FP8 vs BF16 loss gap: %s, %d steps, every run untraced; gap = |loss - "
	       "loss_bf16| / loss_bf16 per step\n", c->name, steps);
	if (ref < 0)
		printf("   no run of the case has recipe bf16: gaps not computed\n");
	else
		printf("   reference: run '%s'\n", c->runs[ref].name);
	printf("   %-16s %-18s %3s %11s %10s %10s %9s\n", "run", "recipe", "ws", "final loss",
	       "mean gap", "max gap", "max at");
	for (int i = 0; i < c->nruns; i++) {
		const struct lks_step_rec *r = &rec[i];
		double sum = 0.0, max = -1.0;
		int at = -1;

		printf("   %-16s %-18s %3d %11.4f", c->runs[i].name, lks_recipe_name(c->runs[i].recipe),
		       c->runs[i].world_size, r->n ? r->loss[r->n - 1] : NAN);
		if (ref < 0 || i == ref) {
			printf(" %10s %10s %9s\n", "-", "-", "-");
			continue;
		}
		for (int s = 0; s < r->n && s < rec[ref].n; s++) {
			double gap = fabs(r->loss[s] - rec[ref].loss[s]) / rec[ref].loss[s];

			sum += gap;
			if (!(gap <= max)) {  /* a NaN gap is the max and stays it */
				max = gap;
				at = s;
			}
		}
		printf(" %9.3f%% %9.3f%% %9d\n", 100.0 * sum / r->n, 100.0 * max, at);
	}
	rc = 0;
out:
	for (int i = 0; i < c->nruns; i++)
		lks_step_rec_release(&rec[i]);
	free(rec);
	return rc;
}
