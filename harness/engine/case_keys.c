/*
 * case_keys.c: the keys of each section of a case file, as a table (its name, type, field,
 * range, whether it is required), and their values: a number must be the whole string and
 * in its range, a name one of the names the key takes (a recipe of the recipe table, a
 * kind of the check-kind table, a choice); every refusal says what is wanted.
 */
#include "harness/engine/case_parse.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/name.h"
#include "harness/import/import.h"
#include "kernels/backend.h"
#include "kernels/err.h"

/* values of the keys that choose among names; the index is the stored value */
static const char *const lks_checkpoint_names[] = { "none", "blocks", NULL };
static const char *const lks_gemm_names[] = { "reference", "cublaslt", NULL };
/* lks_allreduce_mode's order */
static const char *const lks_allreduce_names[] = { "ordered", "nccl", NULL };
static const char *const lks_onoff_names[] = { "off", "on", NULL };
static const char *const lks_trace_names[] = { "whole", "shards", NULL };
static const char *const lks_amax_algo_names[] = { "max", "most_recent", NULL };
static const char *const lks_expect_names[] = { "pass", "fail", NULL };
static const char *const lks_attention_names[] = { "none", "causal", NULL };

/* Sizes are capped well below INT_MAX so that the products a runner forms (tokens x
   hidden, batch x world size) stay in range. Ranks are threads of one process, or
   processes x threads (one thread and one model replica each): 1024 of them is four times
   the 256-GPU jobs lockstep is meant to mirror, and far below the thread limits of a Linux
   machine. Steps: LKS_CASE_STEPS_MAX (case.h). */
#define LKS_SIZE_CAP (1 << 20)
#define LKS_STEPS_CAP LKS_CASE_STEPS_MAX
#define LKS_WORLD_CAP 1024

#define KEY_INT(s, f, lo, hi, req) \
	{ #f, LKS_KEY_INT, offsetof(s, f), 0, lo, hi, 0, 0, req, NULL }
#define KEY_F32(s, f, lo, lo_open, hi, hi_open) \
	{ #f, LKS_KEY_F32, offsetof(s, f), 0, lo, hi, lo_open, hi_open, 0, NULL }

static const struct lks_key lks_case_keys[] = {
	{ "description", LKS_KEY_STR, offsetof(lks_case, description),
	  sizeof(((lks_case *)0)->description), 0, 0, 0, 0, 0, NULL },
	KEY_INT(lks_case, steps, 1, LKS_STEPS_CAP, 1),
	{ "seed", LKS_KEY_U64, offsetof(lks_case, seed), 0, 0, 0, 0, 0, 0, NULL },
	KEY_INT(lks_case, world_size, 1, LKS_WORLD_CAP, 0),
};

static const struct lks_key lks_model_keys[] = {
	KEY_INT(lks_model_cfg, vocab, 2, LKS_SIZE_CAP, 1),
	KEY_INT(lks_model_cfg, hidden, 1, LKS_SIZE_CAP, 1),
	KEY_INT(lks_model_cfg, ffn, 1, LKS_SIZE_CAP, 1),
	KEY_INT(lks_model_cfg, layers, 1, 1024, 1),
	KEY_INT(lks_model_cfg, seq, 1, LKS_SIZE_CAP, 1),
	KEY_INT(lks_model_cfg, batch, 1, LKS_SIZE_CAP, 1),
	{ "attention", LKS_KEY_CHOICE, offsetof(lks_model_cfg, attention), 0, 0, 0, 0, 0, 0,
	  lks_attention_names },
	KEY_INT(lks_model_cfg, heads, 1, 4096, 0),
	/* even: RoPE turns pairs of columns */
	KEY_INT(lks_model_cfg, head_dim, 2, LKS_SIZE_CAP, 0),
};

static const struct lks_key lks_optim_keys[] = {
	KEY_F32(lks_optim_cfg, lr, 0, 1, FLT_MAX, 0),
	KEY_F32(lks_optim_cfg, min_lr, 0, 0, FLT_MAX, 0),
	KEY_INT(lks_optim_cfg, warmup, 0, LKS_STEPS_CAP, 0),
	/* Adam's betas must stay below 1 or the bias correction 1 - beta^t divides by zero */
	KEY_F32(lks_optim_cfg, beta1, 0, 0, 1, 1),
	KEY_F32(lks_optim_cfg, beta2, 0, 0, 1, 1),
	KEY_F32(lks_optim_cfg, eps, 0, 1, FLT_MAX, 0),
	KEY_F32(lks_optim_cfg, weight_decay, 0, 0, FLT_MAX, 0),
	KEY_F32(lks_optim_cfg, clip, 0, 0, FLT_MAX, 0),
};

static const struct lks_key lks_run_keys[] = {
	{ "recipe", LKS_KEY_RECIPE, offsetof(lks_run_cfg, recipe), 0, 0, 0, 0, 0, 1, NULL },
	{ "checkpoint", LKS_KEY_CHOICE, offsetof(lks_run_cfg, checkpoint), 0, 0, 0, 0, 0, 0,
	  lks_checkpoint_names },
	{ "gemm", LKS_KEY_CHOICE, offsetof(lks_run_cfg, gemm), 0, 0, 0, 0, 0, 0, lks_gemm_names },
	{ "backend", LKS_KEY_BACKEND, offsetof(lks_run_cfg, backend),
	  sizeof(((lks_run_cfg *)0)->backend), 0, 0, 0, 0, 0, NULL },
	{ "allreduce", LKS_KEY_CHOICE, offsetof(lks_run_cfg, allreduce), 0, 0, 0, 0, 0, 0,
	  lks_allreduce_names },
	KEY_INT(lks_run_cfg, world_size, 1, LKS_WORLD_CAP, 0),
	KEY_INT(lks_run_cfg, fsdp, 1, LKS_WORLD_CAP, 0),
	KEY_INT(lks_run_cfg, tp, 1, LKS_WORLD_CAP, 0),
	{ "sequence_parallel", LKS_KEY_CHOICE, offsetof(lks_run_cfg, sp), 0, 0, 0, 0, 0, 0,
	  lks_onoff_names },
	{ "fp8_all_gather", LKS_KEY_CHOICE, offsetof(lks_run_cfg, fp8_all_gather), 0, 0, 0, 0, 0,
	  0, lks_onoff_names },
	{ "trace", LKS_KEY_CHOICE, offsetof(lks_run_cfg, trace_shards), 0, 0, 0, 0, 0, 0,
	  lks_trace_names },
	{ "trace_optimizer", LKS_KEY_CHOICE, offsetof(lks_run_cfg, trace_optim), 0, 0, 0, 0, 0,
	  0, lks_onoff_names },
	{ "reshard_after_forward", LKS_KEY_CHOICE, offsetof(lks_run_cfg, reshard), 0, 0, 0, 0, 0,
	  0, lks_onoff_names },
	KEY_INT(lks_run_cfg, amax_history, 1, 65536, 0),
	{ "amax_algo", LKS_KEY_CHOICE, offsetof(lks_run_cfg, amax_most_recent), 0, 0, 0, 0, 0, 0,
	  lks_amax_algo_names },
	/* 2^-64 is far past any useful margin; an int shift stays defined below that */
	KEY_INT(lks_run_cfg, margin, 0, 64, 0),
	{ "inject", LKS_KEY_FAULT, offsetof(lks_run_cfg, inject), 0, 0, 0, 0, 0, 0, NULL },
	{ "import", LKS_KEY_IMPORT, 0, 0, 0, 0, 0, 0, 0, NULL },
	{ "import_ranks", LKS_KEY_RANKS, offsetof(lks_run_cfg, import_ranks),
	  sizeof(((lks_run_cfg *)0)->import_ranks), 0, 0, 0, 0, 0, NULL },
	{ "import_tag_map", LKS_KEY_TAG_MAP, offsetof(lks_run_cfg, import_tag_map),
	  sizeof(((lks_run_cfg *)0)->import_tag_map), 0, 0, 0, 0, 0, NULL },
	{ "resume_from", LKS_KEY_RESUME, 0, 0, 0, 0, 0, 0, 0, NULL },
};

#define KEY_STR(f, key, size) \
	{ key, LKS_KEY_STR, offsetof(lks_check_cfg, f), size, 0, 0, 0, 0, 0, NULL }
#define KEY_F64(f, lo) \
	{ #f, LKS_KEY_F64, offsetof(lks_check_cfg, f), 0, lo, DBL_MAX, 0, 0, 0, NULL }

static const struct lks_key lks_check_keys[] = {
	{ "kind", LKS_KEY_KIND, offsetof(lks_check_cfg, kind), 0, 0, 0, 0, 0, 1, NULL },
	KEY_STR(a, "a", LKS_NAME_MAX),
	KEY_STR(b, "b", LKS_NAME_MAX),
	{ "metric", LKS_KEY_METRIC, offsetof(lks_check_cfg, metric), LKS_NAME_MAX, 0, 0, 0, 0, 0,
	  NULL },
	KEY_STR(tensors, "tensors", sizeof(((lks_check_cfg *)0)->tensors)),
	KEY_F64(rtol, 0),
	KEY_F64(atol, 0),
	KEY_F64(floor_db, -DBL_MAX),
	{ "expect", LKS_KEY_CHOICE, offsetof(lks_check_cfg, expect_fail), 0, 0, 0, 0, 0, 0,
	  lks_expect_names },
	{ "step", LKS_KEY_INT, offsetof(lks_check_cfg, exp_step), 0, 0, LKS_STEPS_CAP, 0, 0, 0,
	  NULL },
	{ "rank", LKS_KEY_INT, offsetof(lks_check_cfg, exp_rank), 0, 0, LKS_WORLD_CAP - 1, 0, 0, 0,
	  NULL },
	KEY_STR(exp_tensor, "tensor", sizeof(((lks_check_cfg *)0)->exp_tensor)),
};

#undef KEY_STR
#undef KEY_F64

#undef KEY_INT
#undef KEY_F32

const struct lks_sec_keys lks_secs[LKS_SEC_COUNT] = {
	{ "case", lks_case_keys, sizeof(lks_case_keys) / sizeof(lks_case_keys[0]) },
	{ "model", lks_model_keys, sizeof(lks_model_keys) / sizeof(lks_model_keys[0]) },
	{ "optim", lks_optim_keys, sizeof(lks_optim_keys) / sizeof(lks_optim_keys[0]) },
	{ "run", lks_run_keys, sizeof(lks_run_keys) / sizeof(lks_run_keys[0]) },
	{ "check", lks_check_keys, sizeof(lks_check_keys) / sizeof(lks_check_keys[0]) },
};

int lks_key_find(enum lks_sec sec, const char *name)
{
	for (int i = 0; i < lks_secs[sec].nkeys; i++)
		if (strcmp(lks_secs[sec].keys[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- values: the whole string must be the number ---- */

static int lks_parse_long(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return end == s || *end || errno == ERANGE ? -1 : 0;
}

/* resume_from = NAME@STEP: a run's name and a step it kept its state after (whether
   there is such a run is the validation's) */
static int lks_resume_key(void *base, const char *val, const char *label)
{
	lks_run_cfg *r = base;
	const char *at = strrchr(val, '@');
	long step;

	if (!at || at == val || (size_t)(at - val) >= sizeof(r->resume_from)
	    || lks_parse_long(at + 1, &step) || step < 0 || step >= LKS_STEPS_CAP)
		return lks_err("bad value '%s' for 'resume_from' in %s: want RUN@STEP, the name of "
		               "an earlier run of the case and a step of it (from 0), e.g. fp8@3",
		               val, label);
	memcpy(r->resume_from, val, (size_t)(at - val));
	r->resume_from[at - val] = 0;
	r->resume_step = (int)step;
	return 0;
}

static int lks_parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	/* strtod takes "inf" and "nan"; no rate or tolerance is meant to be either */
	return end == s || *end || errno == ERANGE || !isfinite(*out) ? -1 : 0;
}

static int lks_parse_u64(const char *s, uint64_t *out)
{
	int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	unsigned long long v;
	char *end;

	/* strtoull wraps "-1" to 2^64-1; a seed written with a sign is a mistake */
	if (!(*s >= '0' && *s <= '9'))
		return -1;
	errno = 0;
	v = strtoull(s, &end, hex ? 16 : 10);
	if (end == s || *end || errno == ERANGE)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int lks_bad_value(const struct lks_key *k, const char *val, const char *label)
{
	char list[256];
	double d;

	switch (k->type) {
	case LKS_KEY_INT:
		return lks_err("bad value '%s' for '%s' in %s: want an integer in [%.0f, %.0f]",
			       val, k->name, label, k->lo, k->hi);
	case LKS_KEY_U64:
		return lks_err("bad value '%s' for '%s' in %s: want an unsigned 64-bit integer",
			       val, k->name, label);
	case LKS_KEY_CHOICE:
		return lks_err("bad value '%s' for '%s' in %s: want %s", val, k->name, label,
			       lks_names_join(k->choices, sizeof(k->choices[0]), 0, -1, list,
					      sizeof(list)));
	case LKS_KEY_RECIPE:
		return lks_err("unknown recipe '%s' in %s (%s)", val, label,
			       lks_recipe_names(NULL, list, sizeof(list)));
	case LKS_KEY_KIND:
		return lks_err("unknown check kind '%s' in %s (%s)", val, label,
			       lks_check_kind_names(list, sizeof(list)));
	case LKS_KEY_METRIC:
		return lks_err("unknown metric '%s' in %s (%s)", val, label,
			       lks_metric_names(list, sizeof(list)));
	case LKS_KEY_RANKS:
		return lks_err("bad value '%s' for '%s' in %s: want ranks and ranges from 0 to %d, "
		               "comma separated (0,8 or 0-3,8)", val, k->name, label,
		               LKS_IMPORT_MAX_RANK);
	default:
		break;
	}
	if (k->hi < FLT_MAX)
		return lks_err("bad value '%s' for '%s' in %s: want a number in %c%g, %g%c", val,
			       k->name, label, k->lo_open ? '(' : '[', k->lo, k->hi,
			       k->hi_open ? ')' : ']');
	/* past the largest the key stores (a float's, 3.4e38): the end it missed is that one */
	if (lks_parse_double(val, &d) == 0
	    && (k->type == LKS_KEY_F32 ? (double)(float)d : d) > k->hi)
		return lks_err("bad value '%s' for '%s' in %s: want a number %s %g and at most %g",
		               val, k->name, label, k->lo_open ? ">" : ">=", k->lo, k->hi);
	if (k->lo > -DBL_MAX)
		return lks_err("bad value '%s' for '%s' in %s: want a number %s %g", val, k->name,
			       label, k->lo_open ? ">" : ">=", k->lo);
	return lks_err("bad value '%s' for '%s' in %s: want a number", val, k->name, label);
}

/* A tag map: a list is read now, so that a bad pair names the case; a file ("@FILE",
   relative to the case file, which is not known here) when its run is imported. */
static int lks_tag_map_key(const struct lks_key *k, char *field, const char *val,
                           const char *label)
{
	lks_import_tag_map *m;

	if (strlen(val) >= k->size)
		return lks_err("value of '%s' in %s is longer than %zu characters", k->name, label,
		               k->size - 1);
	if (val[0] == '@' ? !val[1] : lks_import_tag_map_parse(val, NULL, &m) != 0)
		return lks_err("bad value for '%s' in %s: %s", k->name, label,
		               val[0] == '@' ? "'@' without a file" : lks_errmsg());
	if (val[0] != '@')
		lks_import_tag_map_free(m);
	snprintf(field, k->size, "%s", val);
	return 0;
}

/* "FMT:PATH": a format of the import table and a path (resolved by the validation). */
static int lks_import_key(lks_run_cfg *r, const char *val, const char *label)
{
	const char *colon = strchr(val, ':');
	size_t n = colon ? (size_t)(colon - val) : 0;

	if (!colon || !colon[1] || n >= sizeof(r->import_fmt))
		return lks_err("bad value '%s' for 'import' in %s: want FORMAT:PATH (a log of "
		               "another framework, PATH relative to the case file)", val, label);
	memcpy(r->import_fmt, val, n);
	r->import_fmt[n] = 0;
	if (!lks_import_format_find(r->import_fmt))
		return lks_err("'import' in %s: %s", label, lks_errmsg());
	if (strlen(colon + 1) >= sizeof(r->import_path))
		return lks_err("value of 'import' in %s is longer than %zu characters", label,
		               sizeof(r->import_path) - 1);
	snprintf(r->import_path, sizeof(r->import_path), "%s", colon + 1);
	return 0;
}

int lks_key_store(const struct lks_key *k, void *base, const char *val, const char *label)
{
	char *field = (char *)base + k->off;
	long l;
	double d;

	switch (k->type) {
	case LKS_KEY_INT:
		if (lks_parse_long(val, &l) || l < k->lo || l > k->hi)
			return lks_bad_value(k, val, label);
		*(int *)field = (int)l;
		return 0;
	case LKS_KEY_F32:
	case LKS_KEY_F64:
		if (lks_parse_double(val, &d))
			return lks_bad_value(k, val, label);
		/* the range is checked on the stored value: 1e-50 is 0 as a float */
		if (k->type == LKS_KEY_F32)
			d = (float)d;
		if (d < k->lo || (k->lo_open && d == k->lo) || d > k->hi
		    || (k->hi_open && d == k->hi))
			return lks_bad_value(k, val, label);
		if (k->type == LKS_KEY_F32)
			*(float *)field = (float)d;
		else
			*(double *)field = d;
		return 0;
	case LKS_KEY_U64:
		if (lks_parse_u64(val, (uint64_t *)field))
			return lks_bad_value(k, val, label);
		return 0;
	case LKS_KEY_STR:
		if (strlen(val) >= k->size)
			return lks_err("value of '%s' in %s is longer than %zu characters", k->name,
				       label, k->size - 1);
		memcpy(field, val, strlen(val) + 1);
		return 0;
	case LKS_KEY_RECIPE:
		return lks_recipe_parse(val, (lks_recipe *)field) ? lks_bad_value(k, val, label) : 0;
	case LKS_KEY_KIND:
		return lks_check_kind_parse(val, (lks_check_kind *)field)
		       ? lks_bad_value(k, val, label) : 0;
	case LKS_KEY_CHOICE:
		for (int i = 0; k->choices[i]; i++)
			if (strcmp(val, k->choices[i]) == 0) {
				*(int *)field = i;
				return 0;
			}
		return lks_bad_value(k, val, label);
	case LKS_KEY_FAULT:
		return lks_fault_parse(val, 0, (lks_fault *)field);
	case LKS_KEY_METRIC:
		/* an imported run's metric may be any name: the validation, which knows the
		   check's runs, refuses it for lockstep's own */
		if (!lks_metric_find(val) && lks_name_check("metric", val, strlen(val)))
			return lks_bad_value(k, val, label);
		snprintf(field, k->size, "%s", val);
		return 0;
	case LKS_KEY_IMPORT:
		return lks_import_key(base, val, label);
	case LKS_KEY_RANKS:  /* empty would be every rank, as if not given */
		if (!*val || strlen(val) >= k->size || lks_import_ranks_valid(val))
			return lks_bad_value(k, val, label);
		snprintf(field, k->size, "%s", val);
		return 0;
	case LKS_KEY_TAG_MAP:
		return lks_tag_map_key(k, field, val, label);
	case LKS_KEY_RESUME:
		return lks_resume_key(base, val, label);
	case LKS_KEY_BACKEND:
		/* the registry's error lists the names this build has (they fit the field) */
		if (!lks_backend_find(val) || strlen(val) >= k->size)
			return lks_err("bad value '%s' for '%s' in %s: %s", val, k->name, label,
			               lks_errmsg());
		snprintf(field, k->size, "%s", val);
		return 0;
	}
	return lks_err("internal error: key type %d", (int)k->type);
}
