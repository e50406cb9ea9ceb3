/*
 * case_validate.c: a case as a whole, once its keys are read (and again after --set):
 * the defaults that depend on other keys, the keys each section requires, then the rules
 * that span keys and sections: the schedule, the global batch and each run's share of
 * it, a run's planted fault and its memory, and each check against its kind's row of the
 * check-kind table (its runs, the keys it reads, what it needs of its runs) and the
 * tensors the model traces. Errors name the file and the line of the section at fault.
 */
#include "harness/engine/case_parse.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/name.h"
#include "harness/engine/model.h"
#include "harness/engine/runner.h"
#include "harness/import/import.h"
#include "kernels/backend.h"
#include "kernels/comm.h"
#include "kernels/err.h"

/* ---- validation: defaults that depend on other keys, then rules that span keys ---- */

static int lks_seen(struct lks_parse *st, enum lks_sec sec, int idx, const char *key)
{
	return (*lks_sec_seen(st, sec, idx) >> lks_key_find(sec, key)) & 1;
}

/* Where a rule over keys of [case], [model] or [optim] failed: the line of key, else of
   its section (0: neither is in the file). */
static int lks_key_line(struct lks_parse *st, enum lks_sec sec, const char *key)
{
	int line = st->key_line[sec][lks_key_find(sec, key)];

	return line ? line : st->sec_line[sec];
}

/* case.h */
int lks_case_warmup(const lks_case *c, int steps)
{
	/* 5% of the steps, but a schedule longer than one step starts below the peak */
	if (c->optim.warmup_given)
		return c->optim.warmup;
	return steps == 1 ? 0 : steps / 20 ? steps / 20 : 1;
}

static void lks_case_defaults(struct lks_parse *st)
{
	lks_case *c = st->c;

	c->optim.warmup_given = lks_seen(st, LKS_SEC_OPTIM, 0, "warmup");
	c->optim.warmup = lks_case_warmup(c, c->steps);
	for (int i = 0; i < c->nruns; i++) {
		if (!lks_seen(st, LKS_SEC_RUN, i, "world_size"))
			c->runs[i].world_size = c->world_size;
		if (!lks_seen(st, LKS_SEC_RUN, i, "fsdp"))
			c->runs[i].fsdp = 1;
		if (!lks_seen(st, LKS_SEC_RUN, i, "tp"))
			c->runs[i].tp = 1;
		c->runs[i].gemm_given = lks_seen(st, LKS_SEC_RUN, i, "gemm");
	}
	for (int i = 0; i < c->nchecks; i++)
		if (!lks_seen(st, LKS_SEC_CHECK, i, "metric"))
			strcpy(c->checks[i].metric,
			       lks_check_kind_of(c->checks[i].kind)->keys & LKS_CK_METRIC ? "loss" : "");
}

/* The attention's keys: heads with attention = causal, and only then; head_dim (hidden /
   heads unless given) even, for RoPE's pairs. An error is placed at the key at fault. */
static int lks_case_attention(struct lks_parse *st)
{
	lks_model_cfg *m = &st->c->model;
	int heads = lks_seen(st, LKS_SEC_MODEL, 0, "heads");
	int head_dim = lks_seen(st, LKS_SEC_MODEL, 0, "head_dim");
	const char *at = "heads";

	if (!m->attention) {
		if (!heads && !head_dim)
			return 0;
		at = heads ? "heads" : "head_dim";
		lks_err("%s given, but attention = none: a block without attention has no heads "
		        "(attention = causal adds them)", at);
	} else if (!heads) {
		at = "attention";
		lks_err("attention = causal needs heads, the number of attention heads");
	} else if (!head_dim && m->hidden % m->heads) {
		lks_err("heads %d does not divide hidden %d: give head_dim", m->heads, m->hidden);
	} else {
		if (!head_dim)
			m->head_dim = m->hidden / m->heads;
		if (m->head_dim % 2 == 0 && (long long)3 * m->heads * m->head_dim <= (1 << 20))
			return 0;
		if (m->head_dim % 2) {
			at = head_dim ? "head_dim" : "heads";
			lks_err("head_dim %d is odd: RoPE turns pairs of columns", m->head_dim);
		} else {
			lks_err("heads x head_dim = %lld is over the %d columns a projection may have",
			        (long long)m->heads * m->head_dim, (1 << 20) / 3);
		}
	}
	return lks_case_at(st, lks_key_line(st, LKS_SEC_MODEL, at));
}

/* A run's mesh: fsdp groups or tp groups that tile its ranks; their collectives are made
   over the host's ends (kernels/comm_group.c), so not with a device communicator of its
   own, nor with a fault that fits another mesh (lks_fault_fits_mesh). A tp group splits
   the heads, the MLP's hidden units and (by them) the projections' shards evenly. */
static int lks_run_mesh(const lks_case *c, const lks_run_cfg *r)
{
	const lks_model_cfg *m = &c->model;

	if (r->fp8_all_gather) {
		const lks_operand_rule *w = &lks_recipe_rules_of(r->recipe)->op[LKS_ROLE_FWD][1];

		if (r->fsdp < 2)
			return lks_err("run '%s': fp8_all_gather = on needs fsdp > 1 (it gathers the "
			               "FSDP shards of the weights as FP8)", r->name);
		if ((w->dtype != LKS_E4M3 && w->dtype != LKS_E5M2) || w->scaling != LKS_SCALE_TENSOR)
			return lks_err("run '%s': fp8_all_gather = on needs a recipe that scales the "
			               "forward's weight per tensor in FP8 (fp8_tensorwise, fp8_delayed), "
			               "as torchao's float8 all-gather does; %s does not", r->name,
			               lks_recipe_name(r->recipe));
	}
	if (r->reshard && r->fsdp < 2)
		return lks_err("run '%s': reshard_after_forward = on needs fsdp > 1 (it drops the "
		               "parameters to the FSDP shard between forward and backward)", r->name);
	if (r->trace_optim && r->fsdp > 1)
		return lks_err("run '%s': trace_optimizer = on needs fsdp = 1 (an FSDP rank's "
		               "moments are its shard's: the ranks would differ)", r->name);
	if (r->trace_shards && r->tp < 2)
		return lks_err("run '%s': trace = shards needs tp > 1 (without it every tensor is "
		               "whole on its rank)", r->name);
	if (r->sp && r->tp < 2)
		return lks_err("run '%s': sequence_parallel = on needs tp > 1 (it shards the "
		               "sequence over the tp group)", r->name);
	if (r->sp && m->seq % r->tp)
		return lks_err("run '%s': tp %d does not divide the model's seq (%d): sequence "
		               "parallel shards it", r->name, r->tp, m->seq);
	if (r->tp > 1) {
		if (r->world_size % r->tp)
			return lks_err("run '%s': tp %d does not divide its world size %d", r->name,
			               r->tp, r->world_size);
		if (r->world_size % (r->fsdp * r->tp))
			return lks_err("run '%s': fsdp %d x tp %d does not divide its world size %d",
			               r->name, r->fsdp, r->tp, r->world_size);
		if (m->ffn % r->tp || (m->attention && m->heads % r->tp))
			return lks_err("run '%s': tp %d does not divide the model's %s (%d)", r->name,
			               r->tp, m->ffn % r->tp ? "ffn" : "heads",
			               m->ffn % r->tp ? m->ffn : m->heads);
	}
	if (lks_fault_fits_mesh(&r->inject, r)) {
		char who[LKS_NAME_MAX + 8];

		snprintf(who, sizeof(who), "run '%s'", r->name);
		lks_err_prefix(who);
		return -1;
	}
	if (r->fsdp == 1)
		return 0;
	if (r->world_size % r->fsdp)
		return lks_err("run '%s': fsdp %d does not divide its world size %d", r->name,
		               r->fsdp, r->world_size);
	return 0;
}

/* Every run imported (import = FMT:PATH): the case trains nothing, so it needs no [model]
   and no steps. */
static int lks_case_imports_only(const lks_case *c)
{
	for (int i = 0; i < c->nruns; i++)
		if (!c->runs[i].import_fmt[0])
			return 0;
	return c->nruns > 0;
}

static int lks_case_required(struct lks_parse *st, enum lks_sec sec, int idx)
{
	char label[LKS_NAME_MAX + 16];
	int imported = sec == LKS_SEC_RUN ? st->c->runs[idx].import_fmt[0] != 0
	               : sec != LKS_SEC_CHECK && lks_case_imports_only(st->c);

	/* an imported run has no recipe; a case of imported runs no model */
	if (imported && sec != LKS_SEC_RUN)
		return 0;
	for (int k = 0; k < lks_secs[sec].nkeys; k++)
		if (lks_secs[sec].keys[k].required && !((*lks_sec_seen(st, sec, idx) >> k) & 1)
		    && !(imported && !strcmp(lks_secs[sec].keys[k].name, "recipe"))) {
			lks_err("missing key '%s' in %s", lks_secs[sec].keys[k].name,
				lks_sec_label(st, sec, idx, label, sizeof(label)));
			return lks_case_at(st, lks_sec_line(st, sec, idx));
		}
	return 0;
}

/* lks_model_tensor_each's callback: 1 when name matches the pattern arg */
static int lks_tensor_matches(void *arg, const char *name)
{
	return fnmatch((const char *)arg, name, 0) == 0;
}

/* The tensor names a check gives (its filter, its expected tensor) name tensors the model
   traces: a typo is bad input at the check's line, before anything trains. Whether the runs
   compared trace them (an FP8 operand of a BF16 run) is told when the check runs. */
static int lks_check_tensors(const lks_case *c, const lks_run_cfg *a, const lks_check_cfg *k)
{
	size_t n;
	int rc;

	/* an imported run traces no tensors: tensor = names the metric a divergence is at */
	if (a->import_fmt[0])
		return k->exp_tensor[0] ? lks_name_check("metric", k->exp_tensor,
		                                         strlen(k->exp_tensor)) : 0;
	if (k->tensors[0] && (rc = lks_model_tensor_each(&c->model, lks_tensor_matches,
	                                                 (void *)k->tensors)) <= 0)
		return rc < 0 ? -1 : lks_err("check '%s': tensors = %s names no tensor the model "
		                             "traces (the report and 'lockstep diff' show a run's)",
		                             k->name, k->tensors);
	if (k->exp_tensor[0]
	    && (rc = lks_model_tensor(&c->model, lks_case_run_tokens(c, a), k->exp_tensor, &n))
	       == LKS_TENSOR_NONE)
		return lks_err("check '%s': tensor = %s is no tensor the model traces", k->name,
		               k->exp_tensor);
	return rc < 0 ? -1 : 0;
}

/* A metric not of the table is an imported run's, by the name its log gave: refused, at
   the metric key's line, unless both runs of the check are imported. */
static int lks_check_metric_known(struct lks_parse *st, int idx)
{
	const lks_check_cfg *k = &st->c->checks[idx];
	const lks_run_cfg *a = lks_case_run(st->c, k->a), *b = lks_case_run(st->c, k->b);
	char list[256], label[LKS_NAME_MAX + 16];

	if (!k->metric[0] || lks_metric_find(k->metric)
	    || (a && b && a->import_fmt[0] && b->import_fmt[0]))
		return 0;
	lks_err("unknown metric '%s' in %s (%s; an imported run's: any name)", k->metric,
	        lks_sec_label(st, LKS_SEC_CHECK, idx, label, sizeof(label)),
	        lks_metric_names(list, sizeof(list)));
	return lks_case_at(st, k->metric_line ? k->metric_line : k->line);
}

/* The keys of [check NAME] that only some kinds read, by the flag of the row that reads them:
   one the kind does not read would be silently ignored, so it is refused. */
static const struct { const char *key; unsigned flag; } lks_kind_keys[] = {
	{ "metric", LKS_CK_METRIC }, { "tensors", LKS_CK_METRIC }, { "rtol", LKS_CK_TOL },
	{ "atol", LKS_CK_TOL }, { "floor_db", LKS_CK_FLOOR },
};

/* The kinds a check of imported runs may be, by the table's rows: "bitwise, close, ...". */
static const char *lks_kinds_on_logs(char *buf, size_t size)
{
	const lks_check_kind_info *row;
	size_t len = 0;

	buf[0] = 0;
	for (int i = 0; (row = lks_check_kind_of((lks_check_kind)i)) && len < size; i++)
		if (!(row->needs & LKS_CK_TRAINED))
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
			                        row->name);
	return buf;
}

/* A check against its kind's row (check_kind.c): its runs, and the keys the kind reads. */
static int lks_check_runs(struct lks_parse *st, int idx)
{
	const lks_check_cfg *k = &st->c->checks[idx];
	const lks_check_kind_info *row = lks_check_kind_of(k->kind);
	const char *kind = row->name;
	int metric = (row->keys & LKS_CK_METRIC) != 0;
	int agree = k->kind == LKS_CHECK_RANKS_AGREE;
	const lks_import_format *fa;
	const lks_run_cfg *a, *b = NULL;
	char list[128];

	for (size_t i = 0; i < sizeof(lks_kind_keys) / sizeof(lks_kind_keys[0]); i++)
		if (!(row->keys & lks_kind_keys[i].flag)
		    && lks_seen(st, LKS_SEC_CHECK, idx, lks_kind_keys[i].key)
		    && !(agree && !strcmp(lks_kind_keys[i].key, "tensors")))  /* below */
			return lks_err("check '%s': kind %s does not read '%s'", k->name, kind,
				       lks_kind_keys[i].key);
	if (!k->a[0])
		return lks_err("check '%s' (%s) needs a run: a = NAME", k->name, kind);
	if (row->nruns == 2 && !k->b[0])
		return lks_err("check '%s' (%s) compares two runs: b = NAME is missing", k->name,
			       kind);
	if (row->nruns == 1 && k->b[0])
		return lks_err("check '%s' (%s) takes one run (a), not b = %s", k->name, kind,
			       k->b);
	if (!(a = lks_case_run(st->c, k->a)))
		return lks_err("check '%s' names run '%s', which the case does not have",
			       k->name, k->a);
	if (k->b[0] && !(b = lks_case_run(st->c, k->b)))
		return lks_err("check '%s' names run '%s', which the case does not have",
			       k->name, k->b);
	if (b == a)
		return lks_err("check '%s' compares run '%s' with itself", k->name, k->a);
	if ((row->needs & LKS_CK_TRAINED) && (a->import_fmt[0] || (b && b->import_fmt[0])))
		return lks_err("check '%s' (%s) needs runs lockstep trains, and run '%s' is imported "
		               "(on imported runs: %s)", k->name, kind,
		               a->import_fmt[0] ? a->name : b->name, lks_kinds_on_logs(list,
		                                                                       sizeof(list)));
	if (metric && !k->metric[0])
		return lks_err("check '%s' (%s) has an empty metric", k->name, kind);
	/* ranks_agree on a tensor trace compares the tensors it names (default *weight*); on
	   lockstep's own runs every parameter */
	fa = a->import_fmt[0] ? lks_import_format_find(a->import_fmt) : NULL;
	if (agree && k->tensors[0] && !(fa && fa->tensor_parse))
		return lks_err("check '%s': tensors = %s chooses what ranks_agree compares on a "
		               "tensor trace (a run imported from a tensor format); on lockstep's "
		               "own runs it compares every parameter", k->name, k->tensors);
	if (k->tensors[0] && !agree && (!metric || !lks_metric_find(k->metric)
	                                || lks_metric_find(k->metric)->scope != LKS_METRIC_TENSOR))
		return lks_err("check '%s': tensors = %s chooses the tensors of a close check on a "
			       "tensor statistic, not of %s%s%s", k->name, k->tensors, kind,
			       metric ? " on " : "", metric ? k->metric : "");
	/* without checkpointing there is no recompute to hold against the forward */
	if ((row->needs & LKS_CK_CHECKPOINT) && !a->checkpoint)
		return lks_err("check '%s' (%s) needs a run with checkpoint = blocks; "
			       "run '%s' has none", k->name, kind, a->name);
	if ((row->needs & LKS_CK_RESUMED) && (!b->resume_from[0] || strcmp(b->resume_from, a->name)))
		return lks_err("check '%s' (%s) needs run '%s' to resume from run '%s' "
			       "(resume_from = %s@STEP)", k->name, kind, b->name, a->name, a->name);
	if (!k->expect_fail && (k->exp_step >= 0 || k->exp_rank >= 0 || k->exp_tensor[0]))
		return lks_err("check '%s': step, rank and tensor name an expected divergence "
			       "and need expect = fail", k->name);
	if (k->exp_step >= st->c->steps)
		return lks_err("check '%s': step %d is past the case's %d steps (from 0)", k->name,
			       k->exp_step, st->c->steps);
	if (k->exp_rank >= a->world_size && (!b || k->exp_rank >= b->world_size))
		return lks_err("check '%s': rank %d is past the run's %d ranks", k->name,
			       k->exp_rank, a->world_size);
	/* two replicas that differ have no majority: the check names both, never one */
	if ((row->needs & LKS_CK_MAJORITY) && k->exp_rank >= 0 && a->world_size == 2)
		return lks_err("check '%s': %s on 2 ranks names no single rank (the pair "
			       "disagrees; a golden or a clean run decides which is wrong): leave "
			       "out rank", k->name, kind);
	return lks_check_tensors(st->c, a, k);
}

/* case.h */
int lks_run_backend_fits(const lks_run_cfg *r, const struct lks_backend *be)
{
	if (be != lks_backend_default())
		return 0;
	if (r->gemm == LKS_GEMM_LIBRARY)
		return lks_err("run '%s' asks for gemm = cublaslt%s, which needs backend cuda "
		               "(--backend cuda, or backend = cuda in the run; the cpu backend has "
		               "only the reference GEMM)", r->name,
		               r->gemm_given ? "" : " (--gemm cublaslt)");
	if (r->allreduce == LKS_ALLREDUCE_NCCL)
		return lks_err("run '%s' asks for allreduce = nccl, which needs backend cuda "
		               "(--backend cuda, or backend = cuda in the run; the cpu backend sums "
		               "in rank order on the host)", r->name);
	return 0;
}

int lks_run_fault_fits(const lks_case *c, const lks_run_cfg *r, const lks_fault *f)
{
	if (lks_fault_fits(f, r->recipe, r->checkpoint, r->world_size, c->steps)
	    || lks_fault_fits_mesh(f, r)
	    || (r->resume_from[0] && lks_fault_fits_resumed(f, r->resume_step)))
		return -1;
	return lks_fault_fits_model(f, r, &c->model, lks_case_run_tokens(c, r));
}

/* The machine's memory in bytes; 0 when it cannot be told. */
static double lks_phys_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	return pages > 0 && size > 0 ? (double)pages * (double)size : 0.0;
}

/* A run whose model does not fit the machine fails now, not after the runs before it. */
static int lks_run_fits_memory(const lks_case *c, const lks_run_cfg *r)
{
	double need = lks_run_bytes(c, r), have = lks_phys_bytes(), gib = 1024.0 * 1024 * 1024;

	if (need < 0)
		return -1;
	if (have > 0 && need > have)
		return lks_err("run '%s' needs about %.1f GiB of memory (%d rank%s, estimated from "
		               "the model's sizes, the recipe and checkpointing), more than the %.1f "
		               "GiB of this machine", r->name, need / gib, r->world_size,
		               r->world_size > 1 ? "s" : "", have / gib);
	return 0;
}

/* The keys of [run NAME] an imported run takes: its log, how to read it and its world
   size; every other key is for a run lockstep trains. Listed by what is taken, so that a
   key added to the table is refused on a log until it is meant for one. */
static const char *const lks_import_keys[] = { "import", "import_ranks", "import_tag_map",
                                               "world_size" };
/* The keys only a delayed-scaling recipe reads (its amax history and margin). */
static const char *const lks_delayed_keys[] = { "amax_history", "amax_algo", "margin" };

static int lks_listed_key(const char *const *keys, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i], key))
			return 1;
	return 0;
}

/* The keys given to run i that it would not read: training's on an imported run, a log's
   on a trained one, delayed scaling's on another recipe. Refused at the run's line. */
static int lks_run_keys(struct lks_parse *st, int i)
{
	const lks_run_cfg *r = &st->c->runs[i];
	const struct lks_sec_keys *sec = &lks_secs[LKS_SEC_RUN];

	for (int k = 0; k < sec->nkeys; k++) {
		const char *key = sec->keys[k].name;

		if (!((*lks_sec_seen(st, LKS_SEC_RUN, i) >> k) & 1))
			continue;
		if (r->import_fmt[0] && !lks_listed_key(lks_import_keys, sizeof(lks_import_keys)
		                                         / sizeof(lks_import_keys[0]), key))
			lks_err("run '%s' is imported (import = %s:...): '%s' is for a run lockstep "
			        "trains", r->name, r->import_fmt, key);
		else if (!r->import_fmt[0] && !strcmp(key, "import_ranks"))
			lks_err("run '%s': 'import_ranks' goes with 'import' (the ranks its log holds)",
			        r->name);
		else if (!r->import_fmt[0] && !strcmp(key, "import_tag_map"))
			lks_err("run '%s': 'import_tag_map' goes with 'import' (the labels of its log)",
			        r->name);
		else if (!r->import_fmt[0] && !lks_recipe_delayed(r->recipe)
		         && lks_listed_key(lks_delayed_keys, sizeof(lks_delayed_keys)
		                           / sizeof(lks_delayed_keys[0]), key))
			lks_err("run '%s': '%s' is for recipe fp8_delayed (its amax history), and %s "
			        "would ignore it", r->name, key, lks_recipe_name(r->recipe));
		else
			continue;
		return lks_case_at(st, r->line);
	}
	return 0;
}

int lks_case_import_path(const lks_case *c, const lks_run_cfg *r, char *buf, size_t size)
{
	const char *slash = strrchr(c->path, '/');
	int n = r->import_path[0] == '/' || !slash
	        ? snprintf(buf, size, "%s", r->import_path)
	        : snprintf(buf, size, "%.*s/%s", (int)(slash - c->path), c->path, r->import_path);

	return n < 0 || (size_t)n >= size
	       ? lks_err("%s: run '%s': the import path is too long", c->path, r->name) : 0;
}

/* A run's recipe and, where it scales from an amax history, that history's settings:
   what decides its training beside the case's keys, which its runs share. */
static const char *lks_run_training(const lks_run_cfg *r, char *buf, size_t size)
{
	if (!lks_recipe_delayed(r->recipe))
		snprintf(buf, size, "%s", lks_recipe_name(r->recipe));
	else
		snprintf(buf, size, "%s (amax_history = %d, amax_algo = %s, margin = %d)",
		         lks_recipe_name(r->recipe), r->amax_history,
		         r->amax_most_recent ? "most_recent" : "max", r->margin);
	return buf;
}

/* resume_from = NAME@STEP: an earlier run of the case that lockstep trains, on as many
   ranks (a state per rank), of the same training (recipe and its settings: the layout,
   checkpointing and the backend may differ), and a step that leaves one to train (the
   run's fault acts in those: lks_run_fault_fits). */
static int lks_run_resume(const lks_case *c, int i)
{
	const lks_run_cfg *r = &c->runs[i], *src = NULL;
	char mine[128], theirs[128];

	if (!r->resume_from[0])
		return 0;
	for (int j = 0; j < i && !src; j++)
		if (!strcmp(c->runs[j].name, r->resume_from))
			src = &c->runs[j];
	if (!src)
		return lks_err("run '%s': resume_from names '%s', which is no earlier run of the "
		               "case (the run it resumes from is trained first)", r->name,
		               r->resume_from);
	if (r->import_fmt[0] || src->import_fmt[0])
		return lks_err("run '%s': resume_from is for runs lockstep trains, not imported "
		               "ones", r->name);
	if (src->world_size != r->world_size)
		return lks_err("run '%s': world size %d, but run '%s' it resumes from has %d (a "
		               "state per rank)", r->name, r->world_size, src->name,
		               src->world_size);
	if (strcmp(lks_run_training(r, mine, sizeof(mine)),
	           lks_run_training(src, theirs, sizeof(theirs))))
		return lks_err("run '%s': resume_from %s@%d: run '%s' trains %s, this run %s: a run "
		               "resumes from one of its recipe and settings (in any layout)", r->name,
		               src->name, r->resume_step, src->name, theirs, mine);
	if (r->resume_step >= c->steps - 1)
		return lks_err("run '%s': resume_from %s@%d leaves no step of the case's %d to "
		               "train", r->name, src->name, r->resume_step, c->steps);
	return 0;
}

int lks_case_validate(struct lks_parse *st)
{
	lks_case *c = st->c;
	long long global;

	if (!st->sec_line[LKS_SEC_CASE]
	    || (!st->sec_line[LKS_SEC_MODEL] && !lks_case_imports_only(c))) {
		lks_err("missing section [%s]", st->sec_line[LKS_SEC_CASE] ? "model" : "case");
		return lks_case_at(st, 0);
	}
	if (lks_case_required(st, LKS_SEC_CASE, 0) || lks_case_required(st, LKS_SEC_MODEL, 0))
		return st->rc;
	for (int i = 0; i < c->nruns; i++)
		if (lks_case_required(st, LKS_SEC_RUN, i))
			return st->rc;
	for (int i = 0; i < c->nchecks; i++)
		if (lks_case_required(st, LKS_SEC_CHECK, i))
			return st->rc;
	if (c->nruns == 0) {
		lks_err("no runs: a case needs at least one [run NAME]");
		return lks_case_at(st, 0);
	}
	/* a case of logs alone trains nothing: a model or optimizer given (in the file, or by
	   --set) would be ignored */
	for (int s = LKS_SEC_MODEL; lks_case_imports_only(c) && s <= LKS_SEC_OPTIM; s++)
		if (st->sec_line[s] || *lks_sec_seen(st, (enum lks_sec)s, 0)) {
			lks_err("every run of the case is imported: it trains nothing, so [%s] would be "
			        "ignored", lks_secs[s].name);
			return lks_case_at(st, st->sec_line[s]);
		}
	if (lks_case_imports_only(c) && !lks_seen(st, LKS_SEC_CASE, 0, "steps"))
		c->steps = 1 << 30;  /* the logs say how many: any expected step is let through */
	lks_case_defaults(st);
	for (int i = 0; i < c->nruns; i++)
		if (lks_run_keys(st, i))
			return st->rc;
	if (lks_case_attention(st))
		return st->rc;
	if (c->optim.min_lr > c->optim.lr) {
		lks_err("min_lr %g is above lr %g", c->optim.min_lr, c->optim.lr);
		return lks_case_at(st, lks_key_line(st, LKS_SEC_OPTIM,
		                                    lks_seen(st, LKS_SEC_OPTIM, 0, "min_lr") ? "min_lr"
		                                    : "lr"));
	}
	if (c->optim.warmup > c->steps) {
		lks_err("warmup %d is longer than the case's %d steps", c->optim.warmup, c->steps);
		return lks_case_at(st, lks_key_line(st, LKS_SEC_OPTIM, "warmup"));
	}
	global = (long long)c->model.batch * c->world_size;
	for (int i = 0; i < c->nruns; i++) {
		const lks_run_cfg *r = &c->runs[i];
		/* the replicas that split the batch: the ranks, less the tp groups' */
		int reps = r->tp > 1 && r->world_size % r->tp == 0 ? r->world_size / r->tp
		         : r->world_size;

		if (!r->import_fmt[0] && global % reps) {
			lks_err("run '%s': %s %d does not divide the global batch of %lld sequences "
			        "(model.batch %d x case world_size %d)", r->name,
			        reps == r->world_size ? "world_size" : "world_size / tp", reps, global,
			        c->model.batch, c->world_size);
			return lks_case_at(st, r->line);
		}
	}
	/* the runner's token counts are ints */
	if (global * c->model.seq > INT_MAX) {
		lks_err("the global batch of %lld tokens (model.batch x world_size x seq) is over "
		        "the %d a step can take", global * c->model.seq, INT_MAX);
		return lks_case_at(st, st->sec_line[LKS_SEC_MODEL]);
	}
	for (int i = 0; i < c->nruns; i++) {
		const lks_run_cfg *r = &c->runs[i];
		char who[LKS_NAME_MAX + 8];

		if (r->import_fmt[0])
			continue;
		/* the backend the run names; one it leaves to --backend is the suite's to settle */
		if (lks_run_mesh(c, r)
		    || (r->backend[0] && lks_run_backend_fits(r, lks_backend_find(r->backend))))
			return lks_case_at(st, r->line);
		if (lks_run_fault_fits(c, r, &r->inject)) {
			snprintf(who, sizeof(who), "run '%s'", r->name);
			lks_err_prefix(who);
			return lks_case_at(st, r->line);
		}
		if (lks_run_fits_memory(c, r))
			return lks_case_at(st, r->line);
	}
	for (int i = 0; i < c->nruns; i++)
		if (lks_run_resume(c, i))
			return lks_case_at(st, c->runs[i].line);
	for (int i = 0; i < c->nchecks; i++)
		if (lks_check_metric_known(st, i) || lks_check_runs(st, i))
			return st->rc ? st->rc : lks_case_at(st, c->checks[i].line);
	return 0;
}
