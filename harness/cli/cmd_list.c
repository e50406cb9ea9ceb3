/*
 * cmd_list.c: 'lockstep list': parse cases and show what they would run and check, without
 * running anything. A bad case file is reported and the others are still listed, so one
 * typo does not hide the rest of a suite.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/cli/cmd.h"
#include "kernels/backend.h"
#include "kernels/comm.h"
#include "kernels/err.h"

static const char lks_list_help[] =
	"usage: lockstep list [--set section.key=value]... [CASE|DIR]...\n"
	"\n"
	"Shows each case with its model, its runs and the checks between them. DIR stands for\n"
	"the *.ini files in it, sorted by name; the default is 'cases'. Nothing is run.\n"
	"\n"
	"A case is an INI file: a small language model ([model]), a number of steps, a seed and\n"
	"a world size ([case]), the same training done several ways ([run NAME]: a recipe such\n"
	"as bf16 or fp8_rowwise, activation checkpointing, its own world size), and checks that\n"
	"compare the runs step by step ([check NAME]). For example:\n"
	"\n"
	"  [case]\n"
	"  description = FP8 rowwise with checkpointing equals FP8 rowwise and tracks BF16\n"
	"  steps = 60\n"
	"  world_size = 2\n"
	"\n"
	"  [model]\n"
	"  vocab = 256\n"
	"  hidden = 128\n"
	"  ffn = 512\n"
	"  layers = 2\n"
	"  seq = 32\n"
	"  batch = 2            ; sequences per rank\n"
	"\n"
	"  [run bf16]\n"
	"  recipe = bf16\n"
	"\n"
	"  [run fp8]\n"
	"  recipe = fp8_rowwise\n"
	"\n"
	"  [run fp8_ac]\n"
	"  recipe = fp8_rowwise\n"
	"  checkpoint = blocks\n"
	"\n"
	"  [check ac_neutral]\n"
	"  kind = bitwise        ; checkpointing must not change a bit\n"
	"  a = fp8_ac\n"
	"  b = fp8\n"
	"\n"
	"  [check tracks_bf16]\n"
	"  kind = close\n"
	"  a = fp8\n"
	"  b = bf16\n"
	"  metric = loss\n"
	"  rtol = 0.05\n";

static const char lks_list_tail[] =
	"\n"
	"exit codes: 0 every case is valid, 2 bad usage or a bad case file (each is named with\n"
	"its line on stderr; the others are still listed)\n";

/* After the usage: the recipes, check kinds and metrics of their tables (recipe.h,
   check_kind.h), before the options. */
static void lks_list_tables(FILE *f)
{
	const lks_recipe_rules *r;
	const lks_check_kind_info *k;
	const lks_metric *m;

	fputs("\nrecipes (recipe = NAME):\n", f);
	for (int i = 0; (r = lks_recipe_rules_of((lks_recipe)i)); i++)
		fprintf(f, "  %-18s %s\n", r->name, r->what);
	fputs("check kinds (kind = NAME; the runs compared: a, b):\n", f);
	for (int i = 0; (k = lks_check_kind_of((lks_check_kind)i)); i++)
		fprintf(f, "  %-12s %-5s %s\n", k->name, k->nruns == 2 ? "a, b" : "a", k->what);
	fputs("metrics of close (metric = NAME; per tensor: tensors = PATTERN chooses the tensors\n"
	      "by name, fnmatch globs such as blocks.*.mlp.up.weight.grad, default all):\n", f);
	for (int i = 0; (m = lks_metric_at(i)); i++)
		fprintf(f, "  %-10s %s\n", m->name, m->what);
	fputs("cases/README.md lists every key and its default.\n\n", f);
}

static void lks_list_run(const lks_run_cfg *r, int namew)
{
	if (r->import_fmt[0]) {  /* a log, not a training run */
		printf("    %-*s  imported: %s:%s%s%s%s%s%s%s\n", namew, r->name, r->import_fmt,
		       r->import_path, r->import_ranks[0] ? " (ranks " : "", r->import_ranks,
		       r->import_ranks[0] ? ")" : "", r->import_tag_map[0] ? " (tag map " : "",
		       r->import_tag_map, r->import_tag_map[0] ? ")" : "");
		return;
	}
	printf("    %-*s  %-17s  %d rank%s", namew, r->name, lks_recipe_name(r->recipe),
	       r->world_size, r->world_size == 1 ? "" : "s");
	if (r->fsdp > 1 || r->tp > 1) {  /* the mesh, dp x fsdp x tp (a dimension of 1 left out) */
		printf(", dp %d", r->world_size / (r->fsdp * r->tp));
		if (r->fsdp > 1)
			printf(" x fsdp %d", r->fsdp);
		if (r->tp > 1)
			printf(" x tp %d", r->tp);
	}
	printf("%s%s%s%s%s", r->fp8_all_gather ? ", fp8 all-gather" : "",
	       r->reshard ? ", resharded after forward" : "", r->sp ? ", sequence parallel" : "",
	       r->trace_shards ? ", traced by shard" : "",
	       r->checkpoint ? ", checkpoint blocks" : "");
	/* the keys that choose where and how it runs, where the case gives them */
	if (r->backend[0])
		printf(", backend %s", r->backend);
	if (r->gemm_given)
		printf(", gemm %s", r->gemm == LKS_GEMM_LIBRARY ? "cublaslt" : "reference");
	if (r->allreduce == LKS_ALLREDUCE_NCCL)
		printf(", allreduce nccl");
	if (r->trace_optim)
		printf(", optimizer traced");
	if (lks_recipe_delayed(r->recipe))
		printf(", amax history %d (%s), margin %d", r->amax_history,
		       r->amax_most_recent ? "most_recent" : "max", r->margin);
	if (r->resume_from[0])
		printf(", resumed from %s after step %d", r->resume_from, r->resume_step);
	if (r->inject.kind != LKS_FAULT_NONE) {
		char spec[256];

		lks_fault_format(&r->inject, spec, sizeof(spec));
		printf(", inject %s", spec);
	}
	putchar('\n');
}

static void lks_list_check(const lks_check_cfg *k, int namew)
{
	char runs[2 * LKS_NAME_MAX + 8], tol[LKS_NAME_MAX + 200];

	if (lks_check_kind_nruns(k->kind) == 2)
		snprintf(runs, sizeof(runs), "%s vs %s", k->a, k->b);
	else
		snprintf(runs, sizeof(runs), "%s", k->a);
	lks_check_kind_shown(k, tol, sizeof(tol));
	printf("    %-*s  %-11s  %-24s  %-22s  expect %s", namew, k->name,
	       lks_check_kind_name(k->kind), runs, tol, k->expect_fail ? "fail" : "pass");
	if (k->exp_step >= 0)
		printf(" at step %d", k->exp_step);
	if (k->exp_rank >= 0)
		printf(" rank %d", k->exp_rank);
	if (k->exp_tensor[0])
		printf(" tensor '%s'", k->exp_tensor);
	putchar('\n');
}

static void lks_list_case(const lks_case *c)
{
	const lks_model_cfg *m = &c->model;
	const lks_optim_cfg *o = &c->optim;
	int namew = 4, trained = 0;

	for (int i = 0; i < c->nruns; i++) {
		if ((int)strlen(c->runs[i].name) > namew)
			namew = (int)strlen(c->runs[i].name);
		trained += !c->runs[i].import_fmt[0];
	}
	for (int i = 0; i < c->nchecks; i++)
		if ((int)strlen(c->checks[i].name) > namew)
			namew = (int)strlen(c->checks[i].name);
	printf("%s (%s)\n", c->name, c->path);
	if (c->description[0]) {
		char shown[4 * sizeof(c->description)];

		lks_escape(shown, sizeof(shown), c->description);  /* no raw control characters */
		printf("  %s\n", shown);
	}
	if (!trained) {
		printf("  every run imported from a log: no model, no training\n");
	} else {
		printf("  steps %d, world size %d, seed %llu, global batch %d sequences\n", c->steps,
		       c->world_size, (unsigned long long)c->seed, m->batch * c->world_size);
		printf("  model: vocab %d, hidden %d, ffn %d, layers %d, seq %d, batch %d per rank",
		       m->vocab, m->hidden, m->ffn, m->layers, m->seq, m->batch);
		if (m->attention)
			printf(", causal attention of %d heads of %d", m->heads, m->head_dim);
		putchar('\n');
		printf("  optim: lr %g to %g, warmup %d, betas %g %g, eps %g, weight decay %g, clip "
		       "%g\n", o->lr, o->min_lr, o->warmup, o->beta1, o->beta2, o->eps,
		       o->weight_decay, o->clip);
	}
	printf("  runs:\n");
	for (int i = 0; i < c->nruns; i++)
		lks_list_run(&c->runs[i], namew);
	printf("  checks:%s\n", c->nchecks ? "" : " none");
	for (int i = 0; i < c->nchecks; i++)
		lks_list_check(&c->checks[i], namew);
}

/* Lists the cases of one argument; returns 0, or LKS_EXIT_USAGE if any was bad. */
static int lks_list_arg(const char *arg, const char *const *sets, int nsets, int *shown)
{
	char **paths;
	int npaths, rc = 0;
	lks_case c;

	if (lks_case_paths(&arg, 1, &paths, &npaths))
		return lks_usage("%s", lks_errmsg());
	for (int i = 0; i < npaths; i++) {
		if (lks_case_load(paths[i], sets, nsets, &c)) {
			rc = lks_usage("%s", lks_errmsg());
			continue;
		}
		if (lks_cases_inject_env(&c, 1, 0)) {  /* what run would train */
			rc = lks_usage("%s: %s", paths[i], lks_errmsg());
			lks_case_release(&c);
			continue;
		}
		if ((*shown)++)
			putchar('\n');
		lks_list_case(&c);
		lks_case_release(&c);
	}
	lks_case_paths_free(paths, npaths);
	return rc;
}

int cmd_list(int argc, char **argv)
{
	lks_opt_list sets = { 0 }, args = { 0 };
	int shown = 0, rc;
	const lks_option opts[] = {
		LKS_OPT_LIST("--set", "section.key=value", &sets,
		             "change a key after the file is read, for every case listed:\n"
		             "case.steps=10, model.hidden=64, run.fp8.recipe=fp8_delayed,\n"
		             "check.tracks_bf16.rtol=0.1 (repeatable)"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "list", .usage = lks_list_help, .tail = lks_list_tail, .width = 25,
	                          .more = lks_list_tables };

	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, &args)) != 0) {
		rc = lks_opt_exit(rc);
		goto out;
	}
	for (int i = 0; i < (args.n ? args.n : 1); i++)
		if (lks_list_arg(args.n ? args.v[i] : "cases", sets.v, sets.n, &shown))
			rc = LKS_EXIT_USAGE;
	/* what holds across the cases, as run reads them: two named alike, a LOCKSTEP_INJECT
	   that fits no run of any */
	if (rc == 0) {
		static const char *const dflt[] = { "cases" };
		lks_case *all = NULL;
		int n = 0;

		if (lks_cases_load(args.n ? (const char *const *)args.v : dflt, args.n ? args.n : 1,
		                   sets.v, sets.n, &all, &n))
			rc = lks_usage("%s", lks_errmsg());
		lks_cases_release(all, n);
	}
out:
	free(sets.v);
	free(args.v);
	return rc;
}
