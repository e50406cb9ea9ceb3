/*
 * case.c: case files (DESIGN.md, A case file): INI read with inih, every mistake reported
 * with its file and line, then --set overrides applied and the whole case validated once
 * more. Also the expansion of directories into sorted case paths, for 'list' and 'run'.
 *
 * Debian's inih gives the handler no line number (INI_HANDLER_LINENO is 0) and does not
 * call it for a section without keys, so lines reach inih one at a time through our own
 * reader: it counts them and sees the section headers itself. The reader also strips
 * leading blanks, which turns off inih's multi-line values: an indented key would
 * otherwise be taken as the continuation of the previous value.
 */
#include "harness/engine/case.h"

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <fnmatch.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/base/file.h"
#include "harness/engine/model.h"
#include "harness/base/name.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* values of the keys that choose among names; the index is the stored value */
static const char *const lks_checkpoint_names[] = { "none", "blocks", NULL };
static const char *const lks_amax_algo_names[] = { "max", "most_recent", NULL };
static const char *const lks_expect_names[] = { "pass", "fail", NULL };

const lks_run_cfg *lks_case_run(const lks_case *c, const char *name)
{
	for (int i = 0; i < c->nruns; i++)
		if (strcmp(c->runs[i].name, name) == 0)
			return &c->runs[i];
	return NULL;
}

const char *lks_cases_unknown(const lks_case *cases, int ncases, const char *const *names,
			      int n, int checks)
{
	for (int i = 0; i < n; i++) {
		int known = 0;

		for (int j = 0; j < ncases && !known; j++)
			for (int k = 0; k < (checks ? cases[j].nchecks : cases[j].nruns) && !known; k++)
				known = !strcmp(names[i], checks ? cases[j].checks[k].name
								 : cases[j].runs[k].name);
		if (!known)
			return names[i];
	}
	return NULL;
}

/* ---- the keys of each section ---- */

enum lks_key_type {
	LKS_KEY_INT,     /* int in [lo, hi] */
	LKS_KEY_F32,     /* float, finite, in the range */
	LKS_KEY_F64,     /* double, finite, in the range */
	LKS_KEY_U64,     /* uint64_t, decimal or 0x hex */
	LKS_KEY_STR,     /* char[size] */
	LKS_KEY_RECIPE,  /* lks_recipe */
	LKS_KEY_KIND,    /* lks_check_kind */
	LKS_KEY_CHOICE,  /* int: index into choices */
	LKS_KEY_FAULT,   /* lks_fault (fault.h) */
	LKS_KEY_METRIC,  /* char[size]: a name of the metric table */
};

struct lks_key {
	const char *name;
	enum lks_key_type type;
	size_t off;                 /* in the section's struct */
	size_t size;                /* LKS_KEY_STR: the buffer */
	double lo, hi;              /* accepted values ... */
	int lo_open, hi_open;       /* ... with these ends excluded */
	int required;
	const char *const *choices;
};

/* Sizes are capped well below INT_MAX so that the products a runner forms (tokens x
   hidden, batch x world size) stay in range. Ranks are threads of one process (one thread
   and one model replica each): 1024 of them is four times the 256-GPU jobs lockstep is
   meant to mirror, and far below the thread limits of a Linux machine. */
#define LKS_SIZE_CAP (1 << 20)
#define LKS_STEPS_CAP 10000000
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
	KEY_INT(lks_run_cfg, world_size, 1, LKS_WORLD_CAP, 0),
	KEY_INT(lks_run_cfg, amax_history, 1, 65536, 0),
	{ "amax_algo", LKS_KEY_CHOICE, offsetof(lks_run_cfg, amax_most_recent), 0, 0, 0, 0, 0, 0,
	  lks_amax_algo_names },
	/* 2^-64 is far past any useful margin; an int shift stays defined below that */
	KEY_INT(lks_run_cfg, margin, 0, 64, 0),
	{ "inject", LKS_KEY_FAULT, offsetof(lks_run_cfg, inject), 0, 0, 0, 0, 0, 0, NULL },
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

enum lks_sec { LKS_SEC_NONE = -1, LKS_SEC_CASE, LKS_SEC_MODEL, LKS_SEC_OPTIM, LKS_SEC_RUN,
	LKS_SEC_CHECK, LKS_SEC_COUNT };

static const struct {
	const char *name;
	const struct lks_key *keys;
	int nkeys;
} lks_secs[LKS_SEC_COUNT] = {
	{ "case", lks_case_keys, sizeof(lks_case_keys) / sizeof(lks_case_keys[0]) },
	{ "model", lks_model_keys, sizeof(lks_model_keys) / sizeof(lks_model_keys[0]) },
	{ "optim", lks_optim_keys, sizeof(lks_optim_keys) / sizeof(lks_optim_keys[0]) },
	{ "run", lks_run_keys, sizeof(lks_run_keys) / sizeof(lks_run_keys[0]) },
	{ "check", lks_check_keys, sizeof(lks_check_keys) / sizeof(lks_check_keys[0]) },
};

/* ---- the state of one load ---- */

struct lks_parse {
	lks_case *c;
	const char *next;       /* the reader's position in c->text */
	int line;               /* the line inih is working on */
	enum lks_sec sec;       /* the current section ... */
	int idx;                /* ... and which run or check it is */
	int sec_line[3];        /* header lines of [case], [model], [optim]; 0: absent */
	unsigned seen[3];       /* their keys given, one bit per row of the key table */
	unsigned *run_seen;     /* the same for each run ... */
	unsigned *check_seen;   /* ... and each check */
	int run_cap, check_cap;
	int rc;                 /* the first error, already recorded with lks_err */
};

/* Re-records the last error after a prefix: "cases/x.ini:12: unknown key ...". */
static int lks_err_prefix(const char *prefix)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s", lks_errmsg());
	return lks_err("%s: %s", prefix, msg);
}

/* The last error happened at line of the case file (0: no line to point at). */
static int lks_case_at(struct lks_parse *st, int line)
{
	char where[600];

	if (line > 0)
		snprintf(where, sizeof(where), "%s:%d", st->c->path, line);
	else
		snprintf(where, sizeof(where), "%s", st->c->path);
	st->rc = lks_err_prefix(where);
	return st->rc;
}

static void *lks_sec_base(struct lks_parse *st, enum lks_sec sec, int idx)
{
	switch (sec) {
	case LKS_SEC_CASE: return st->c;
	case LKS_SEC_MODEL: return &st->c->model;
	case LKS_SEC_OPTIM: return &st->c->optim;
	case LKS_SEC_RUN: return &st->c->runs[idx];
	case LKS_SEC_CHECK: return &st->c->checks[idx];
	default: return NULL;
	}
}

static unsigned *lks_sec_seen(struct lks_parse *st, enum lks_sec sec, int idx)
{
	if (sec == LKS_SEC_RUN)
		return &st->run_seen[idx];
	if (sec == LKS_SEC_CHECK)
		return &st->check_seen[idx];
	return &st->seen[sec];
}

static int lks_sec_line(struct lks_parse *st, enum lks_sec sec, int idx)
{
	if (sec == LKS_SEC_RUN)
		return st->c->runs[idx].line;
	if (sec == LKS_SEC_CHECK)
		return st->c->checks[idx].line;
	return st->sec_line[sec];
}

/* "[model]", "[run fp8]" */
static const char *lks_sec_label(struct lks_parse *st, enum lks_sec sec, int idx,
				 char *buf, size_t size)
{
	if (sec == LKS_SEC_RUN)
		snprintf(buf, size, "[run %s]", st->c->runs[idx].name);
	else if (sec == LKS_SEC_CHECK)
		snprintf(buf, size, "[check %s]", st->c->checks[idx].name);
	else
		snprintf(buf, size, "[%s]", lks_secs[sec].name);
	return buf;
}

static int lks_key_find(enum lks_sec sec, const char *name)
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
	default:
		break;
	}
	if (k->hi < FLT_MAX)
		return lks_err("bad value '%s' for '%s' in %s: want a number in %c%g, %g%c", val,
			       k->name, label, k->lo_open ? '(' : '[', k->lo, k->hi,
			       k->hi_open ? ')' : ']');
	if (k->lo > -DBL_MAX)
		return lks_err("bad value '%s' for '%s' in %s: want a number %s %g", val, k->name,
			       label, k->lo_open ? ">" : ">=", k->lo);
	return lks_err("bad value '%s' for '%s' in %s: want a number", val, k->name, label);
}

/* Stores val into the field k of the struct at base; errors name the key and section. */
static int lks_key_store(const struct lks_key *k, void *base, const char *val, const char *label)
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
		if (!lks_metric_find(val))
			return lks_bad_value(k, val, label);
		snprintf(field, k->size, "%s", val);
		return 0;
	}
	return lks_err("internal error: key type %d", (int)k->type);
}

/* One "name = value" of a section; override: a --set may replace a key the file gave. */
static int lks_case_key(struct lks_parse *st, enum lks_sec sec, int idx, const char *name,
			const char *val, int override)
{
	unsigned *seen = lks_sec_seen(st, sec, idx);
	char label[LKS_NAME_MAX + 16];
	int k = lks_key_find(sec, name);

	lks_sec_label(st, sec, idx, label, sizeof(label));
	if (k < 0)
		return lks_err("unknown key '%s' in %s", name, label);
	if ((*seen & (1u << k)) && !override)
		return lks_err("duplicate key '%s' in %s", name, label);
	if (lks_key_store(&lks_secs[sec].keys[k], lks_sec_base(st, sec, idx), val, label))
		return -1;
	*seen |= 1u << k;
	return 0;
}

/* ---- sections ---- */

_Static_assert(LKS_NAME_RULE_MAX < LKS_NAME_MAX, "a good name fits lks_case's buffers");

/* Room for one more run (or check) and its bits in seen. */
static int lks_grow(void **items, size_t size, unsigned **seen, int n, int *cap)
{
	int want = *cap ? *cap * 2 : 8;
	void *p;

	if (n < *cap)
		return 0;
	if (!(p = realloc(*items, (size_t)want * size)))
		return lks_err("out of memory");
	*items = p;
	if (!(p = realloc(*seen, (size_t)want * sizeof(**seen))))
		return lks_err("out of memory");
	*seen = p;
	*cap = want;
	return 0;
}

static int lks_case_add_run(struct lks_parse *st, const char *name)
{
	lks_case *c = st->c;
	lks_run_cfg *r;

	for (int i = 0; i < c->nruns; i++)
		if (strcmp(c->runs[i].name, name) == 0)
			return lks_err("duplicate run '%s' (first at line %d)", name,
				       c->runs[i].line);
	if (lks_grow((void **)&c->runs, sizeof(*c->runs), &st->run_seen, c->nruns, &st->run_cap))
		return -1;
	r = &c->runs[c->nruns];
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->recipe = LKS_RECIPE_BF16;
	r->amax_history = 16;
	r->inject.step = r->inject.rank = -1;
	r->line = st->line;
	st->run_seen[c->nruns] = 0;
	st->idx = c->nruns++;
	return 0;
}

static int lks_case_add_check(struct lks_parse *st, const char *name)
{
	lks_case *c = st->c;
	lks_check_cfg *k;

	for (int i = 0; i < c->nchecks; i++)
		if (strcmp(c->checks[i].name, name) == 0)
			return lks_err("duplicate check '%s' (first at line %d)", name,
				       c->checks[i].line);
	if (lks_grow((void **)&c->checks, sizeof(*c->checks), &st->check_seen, c->nchecks,
		     &st->check_cap))
		return -1;
	k = &c->checks[c->nchecks];
	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->exp_step = k->exp_rank = -1;
	k->line = st->line;
	st->check_seen[c->nchecks] = 0;
	st->idx = c->nchecks++;
	return 0;
}

static const char *lks_skip_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static const char *lks_skip_word(const char *p, const char *end)
{
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	return p;
}

/* A "[...]" line (leading blanks gone). inih parses it too, but cuts its section string
   at 49 characters and never calls the handler for a section without keys. */
static int lks_case_section(struct lks_parse *st, const char *line)
{
	const char *end = strchr(line, ']'), *w, *we, *n, *ne, *p;
	char name[LKS_NAME_MAX];
	size_t wlen;

	if (!end)
		return lks_err("section header without ']'");
	p = lks_skip_blank(end + 1, end + strlen(end));
	if (*p && *p != ';' && *p != '#' && *p != '\r' && *p != '\n')
		return lks_err("text after the section header");
	w = lks_skip_blank(line + 1, end);
	we = lks_skip_word(w, end);
	n = lks_skip_blank(we, end);
	ne = lks_skip_word(n, end);
	wlen = (size_t)(we - w);
	if (w == end)
		return lks_err("empty section header []");
	if (lks_skip_blank(ne, end) != end)
		return lks_err("section [%.*s] has more than one name", (int)(end - w), w);
	for (int s = LKS_SEC_CASE; s <= LKS_SEC_OPTIM; s++) {
		if (wlen != strlen(lks_secs[s].name) || memcmp(w, lks_secs[s].name, wlen) != 0)
			continue;
		if (n != end)
			return lks_err("[%s] takes no name, not '%.*s'", lks_secs[s].name,
				       (int)(ne - n), n);
		if (st->sec_line[s])
			return lks_err("duplicate section [%s] (first at line %d)",
				       lks_secs[s].name, st->sec_line[s]);
		st->sec_line[s] = st->line;
		st->sec = (enum lks_sec)s;
		return 0;
	}
	if (!(wlen == 3 && memcmp(w, "run", 3) == 0) && !(wlen == 5 && memcmp(w, "check", 5) == 0))
		return lks_err("unknown section [%.*s] (case, model, optim, run NAME, check NAME)",
			       (int)(end - w), w);
	if (n == end)
		return lks_err("[%.*s] needs a name: [%.*s NAME]", (int)wlen, w, (int)wlen, w);
	if (lks_name_check(wlen == 3 ? "run" : "check", n, (size_t)(ne - n)))
		return -1;
	snprintf(name, sizeof(name), "%.*s", (int)(ne - n), n);
	st->sec = wlen == 3 ? LKS_SEC_RUN : LKS_SEC_CHECK;
	return st->sec == LKS_SEC_RUN ? lks_case_add_run(st, name) : lks_case_add_check(st, name);
}

/* inih's fgets: one line per call, counted; section headers are seen here. */
static char *lks_case_reader(char *str, int num, void *stream)
{
	struct lks_parse *st = stream;
	const char *p = st->next, *eol;
	size_t len;

	if (st->rc || !*p)
		return NULL;
	eol = strchr(p, '\n');
	len = eol ? (size_t)(eol - p) + 1 : strlen(p);
	st->next = p + len;
	if (++st->line == 1 && len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3, len -= 3;  /* a UTF-8 byte order mark, which inih would skip too */
	while (len && (*p == ' ' || *p == '\t'))
		p++, len--;
	/* room for the line and one byte more, so that inih never sees a cut line */
	if (len + 2 > (size_t)num) {
		lks_err("line longer than %d characters", num - 3);
		lks_case_at(st, st->line);
		return NULL;
	}
	memcpy(str, p, len);
	str[len] = 0;
	if (str[0] == '[' && lks_case_section(st, str)) {
		lks_case_at(st, st->line);
		return NULL;
	}
	return str;
}

#if INI_HANDLER_LINENO
static int lks_case_handler(void *user, const char *section, const char *name, const char *val,
			    int lineno)
#else
static int lks_case_handler(void *user, const char *section, const char *name, const char *val)
#endif
{
	struct lks_parse *st = user;

	/* our section, from the reader, is not cut at 49 characters; our line count is
	   inih's lineno where a build passes it */
	(void)section;
	if (st->rc)
		return 0;
	if (st->sec == LKS_SEC_NONE)
		lks_err("key '%s' before any section", name);
	else if (lks_case_key(st, st->sec, st->idx, name, val ? val : "", 0) == 0)
		return 1;
	lks_case_at(st, st->line);
	return 0;
}

/* ---- validation: defaults that depend on other keys, then rules that span keys ---- */

static int lks_seen(struct lks_parse *st, enum lks_sec sec, int idx, const char *key)
{
	return (*lks_sec_seen(st, sec, idx) >> lks_key_find(sec, key)) & 1;
}

static void lks_case_defaults(struct lks_parse *st)
{
	lks_case *c = st->c;

	/* 5% of the steps, but a schedule longer than one step starts below the peak */
	if (!lks_seen(st, LKS_SEC_OPTIM, 0, "warmup"))
		c->optim.warmup = c->steps == 1 ? 0 : c->steps / 20 ? c->steps / 20 : 1;
	for (int i = 0; i < c->nruns; i++)
		if (!lks_seen(st, LKS_SEC_RUN, i, "world_size"))
			c->runs[i].world_size = c->world_size;
	for (int i = 0; i < c->nchecks; i++)
		if (!lks_seen(st, LKS_SEC_CHECK, i, "metric"))
			strcpy(c->checks[i].metric,
			       lks_check_kind_of(c->checks[i].kind)->keys & LKS_CK_METRIC ? "loss" : "");
}

static int lks_case_required(struct lks_parse *st, enum lks_sec sec, int idx)
{
	char label[LKS_NAME_MAX + 16];

	for (int k = 0; k < lks_secs[sec].nkeys; k++)
		if (lks_secs[sec].keys[k].required && !((*lks_sec_seen(st, sec, idx) >> k) & 1)) {
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

/* A check against its kind's row (check_kind.c): its runs, and the keys the kind reads. */
static int lks_check_runs(struct lks_parse *st, const lks_check_cfg *k)
{
	const lks_check_kind_info *row = lks_check_kind_of(k->kind);
	const char *kind = row->name;
	int metric = (row->keys & LKS_CK_METRIC) != 0;
	const lks_run_cfg *a, *b = NULL;

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
	if (metric && !k->metric[0])
		return lks_err("check '%s' (%s) has an empty metric", k->name, kind);
	if (k->tensors[0] && (!metric || lks_metric_find(k->metric)->scope != LKS_METRIC_TENSOR))
		return lks_err("check '%s': tensors = %s chooses the tensors of a close check on a "
			       "tensor statistic, not of %s%s%s", k->name, k->tensors, kind,
			       metric ? " on " : "", metric ? k->metric : "");
	/* without checkpointing there is no recompute to hold against the forward */
	if ((row->needs & LKS_CK_CHECKPOINT) && !a->checkpoint)
		return lks_err("check '%s' (%s) needs a run with checkpoint = blocks; "
			       "run '%s' has none", k->name, kind, a->name);
	if (!k->expect_fail && (k->exp_step >= 0 || k->exp_rank >= 0 || k->exp_tensor[0]))
		return lks_err("check '%s': step, rank and tensor name an expected divergence "
			       "and need expect = fail", k->name);
	if (k->exp_step > st->c->steps)
		return lks_err("check '%s': step %d is past the case's %d steps", k->name,
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

/* Tokens a rank of run r takes per step: its share of the global batch, in tokens. */
long long lks_case_run_tokens(const lks_case *c, const lks_run_cfg *r)
{
	return (long long)c->model.batch * c->world_size / r->world_size * c->model.seq;
}

/* Whether fault f can act on run r: its recipe, ranks and steps, and the tensor it names. */
static int lks_run_fault_fits(const lks_case *c, const lks_run_cfg *r, const lks_fault *f)
{
	if (lks_fault_fits(f, r->recipe, r->checkpoint, r->world_size, c->steps))
		return -1;
	return lks_fault_fits_model(f, &c->model, lks_case_run_tokens(c, r));
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

static int lks_case_validate(struct lks_parse *st)
{
	lks_case *c = st->c;
	long long global;

	if (!st->sec_line[LKS_SEC_CASE] || !st->sec_line[LKS_SEC_MODEL]) {
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
	lks_case_defaults(st);
	if (c->optim.min_lr > c->optim.lr) {
		lks_err("min_lr %g is above lr %g", c->optim.min_lr, c->optim.lr);
		return lks_case_at(st, st->sec_line[LKS_SEC_OPTIM]);
	}
	if (c->optim.warmup > c->steps) {
		lks_err("warmup %d is longer than the case's %d steps", c->optim.warmup, c->steps);
		return lks_case_at(st, st->sec_line[LKS_SEC_OPTIM]);
	}
	global = (long long)c->model.batch * c->world_size;
	for (int i = 0; i < c->nruns; i++)
		if (global % c->runs[i].world_size) {
			lks_err("run '%s': world_size %d does not divide the global batch of %lld "
				"sequences (model.batch %d x case world_size %d)", c->runs[i].name,
				c->runs[i].world_size, global, c->model.batch, c->world_size);
			return lks_case_at(st, c->runs[i].line);
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

		if (lks_run_fault_fits(c, r, &r->inject)) {
			snprintf(who, sizeof(who), "run '%s'", r->name);
			lks_err_prefix(who);
			return lks_case_at(st, r->line);
		}
		if (lks_run_fits_memory(c, r))
			return lks_case_at(st, r->line);
	}
	for (int i = 0; i < c->nchecks; i++)
		if (lks_check_runs(st, &c->checks[i]))
			return lks_case_at(st, c->checks[i].line);
	return 0;
}

/* ---- overrides ---- */

static void lks_trim(char *s)
{
	size_t len = strlen(s), skip = strspn(s, " \t");

	while (len > skip && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	memmove(s, s + skip, len - skip);
	s[len - skip] = 0;
}

/* "section.key=value" or "run.NAME.key=value"; names hold no '.', so the split is clear. */
static int lks_case_set(struct lks_parse *st, const char *set)
{
	char buf[512], *eq, *dot, *key;
	enum lks_sec sec = LKS_SEC_NONE;
	int idx = 0;

	if (strlen(set) >= sizeof(buf))
		return lks_err("longer than %zu characters", sizeof(buf) - 1);
	strcpy(buf, set);
	if (!(eq = strchr(buf, '=')) || !(dot = memchr(buf, '.', (size_t)(eq - buf))))
		return lks_err("want section.key=value (model.hidden=512, run.NAME.recipe=bf16)");
	*eq = 0;
	*dot = 0;
	lks_trim(buf);
	for (int s = LKS_SEC_CASE; s < LKS_SEC_COUNT; s++)
		if (strcmp(buf, lks_secs[s].name) == 0)
			sec = (enum lks_sec)s;
	if (sec == LKS_SEC_NONE)
		return lks_err("unknown section '%s' (case, model, optim, run.NAME, check.NAME)",
			       buf);
	key = dot + 1;
	if (sec == LKS_SEC_RUN || sec == LKS_SEC_CHECK) {
		const char *name = dot + 1;

		if (!(key = strrchr(name, '.')))
			return lks_err("want %s.NAME.key=value", buf);
		*key++ = 0;
		idx = -1;
		for (int i = 0; sec == LKS_SEC_RUN && i < st->c->nruns; i++)
			if (strcmp(st->c->runs[i].name, name) == 0)
				idx = i;
		for (int i = 0; sec == LKS_SEC_CHECK && i < st->c->nchecks; i++)
			if (strcmp(st->c->checks[i].name, name) == 0)
				idx = i;
		if (idx < 0)
			return lks_err("no %s '%s' in '%s'", buf, name, st->c->path);
	}
	lks_trim(key);
	lks_trim(eq + 1);
	return lks_case_key(st, sec, idx, key, eq + 1, 1);
}

int lks_case_override(lks_case *c, const char *set)
{
	struct lks_parse st = { .c = c, .sec = LKS_SEC_NONE };
	int rc;

	/* no key counts as given: an override may replace any */
	st.run_seen = calloc((size_t)c->nruns + 1, sizeof(*st.run_seen));
	st.check_seen = calloc((size_t)c->nchecks + 1, sizeof(*st.check_seen));
	rc = st.run_seen && st.check_seen ? lks_case_set(&st, set) : lks_err("out of memory");
	free(st.run_seen);
	free(st.check_seen);
	return rc;
}

/* ---- load ---- */

static int lks_read_text(const char *path, char **out)
{
	size_t len;
	int rc = lks_file_read(path, LKS_CASE_FILE_MAX, "a case file", out, &len);

	if (rc == 0 && strlen(*out) != len) {
		free(*out);
		*out = NULL;
		rc = lks_err("'%s' contains a NUL byte: not a case file", path);
	}
	return rc ? -1 : 0;
}

static int lks_case_init(lks_case *c, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t len;

	memset(c, 0, sizeof(*c));
	base = base ? base + 1 : path;
	len = strlen(base);
	if (len > 4 && strcmp(base + len - 4, ".ini") == 0)
		len -= 4;
	if (strlen(path) >= sizeof(c->path))
		return lks_err("path '%s' is too long", path);
	/* the name makes golden/<class>/<case>/: "...ini" would put it beside <class> */
	if (lks_name_check("case", base, len))
		return lks_err_prefix(path);
	strcpy(c->path, path);
	memcpy(c->name, base, len);
	c->seed = 1234;
	c->world_size = 1;
	c->optim = (lks_optim_cfg){ .lr = 3e-3f, .min_lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.95f,
				    .eps = 1e-8f, .weight_decay = 0.1f, .clip = 1.0f };
	return 0;
}

int lks_case_load(const char *path, const char *const *sets, int nsets, lks_case *out)
{
	struct lks_parse st = { .c = out, .sec = LKS_SEC_NONE };
	char msg[1024];
	int rc;

	if ((rc = lks_case_init(out, path)) || (rc = lks_read_text(path, &out->text)))
		goto out;
	st.next = out->text;
	rc = ini_parse_stream(lks_case_reader, &st, lks_case_handler, &st);
	if (st.rc) {
		rc = st.rc;
	} else if (rc > 0) {
		/* inih's own complaint: not "key = value", a comment nor "[section]" */
		lks_err("cannot parse the line: want 'key = value', '[section]' or a comment");
		rc = lks_case_at(&st, rc);
	} else if (rc < 0) {
		rc = lks_err("%s: out of memory", path);
	} else {
		rc = lks_case_validate(&st);
	}
	for (int i = 0; !rc && i < nsets; i++)
		if ((rc = lks_case_set(&st, sets[i]))) {
			snprintf(msg, sizeof(msg), "--set '%s'", sets[i]);
			rc = lks_err_prefix(msg);
		}
	if (!rc && nsets && (rc = lks_case_validate(&st))) {
		snprintf(msg, sizeof(msg), "%s", lks_errmsg());
		rc = lks_err("%s (after --set)", msg);
	}
out:
	free(st.run_seen);
	free(st.check_seen);
	if (rc)
		lks_case_release(out);
	return rc ? -1 : 0;
}

void lks_case_release(lks_case *c)
{
	free(c->text);
	free(c->runs);
	free(c->checks);
	memset(c, 0, sizeof(*c));
}

/* ---- case paths ---- */

static int lks_strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int lks_paths_add(char ***paths, int *n, int *cap, char *p)
{
	char **grown;

	if (!p)
		return lks_err("out of memory");
	if (*n == *cap) {
		if (!(grown = realloc(*paths, (size_t)(*cap ? *cap * 2 : 16) * sizeof(*grown)))) {
			free(p);
			return lks_err("out of memory");
		}
		*paths = grown;
		*cap = *cap ? *cap * 2 : 16;
	}
	(*paths)[(*n)++] = p;
	return 0;
}

/* The *.ini files of dir (not hidden ones, not subdirectories), sorted by name so that
   a suite runs in the same order on every machine. */
static int lks_paths_dir(const char *dir, char ***paths, int *n, int *cap)
{
	size_t dlen = strlen(dir);
	const char *sep = dlen && dir[dlen - 1] == '/' ? "" : "/";
	DIR *d = opendir(dir);
	struct dirent *e;
	int first = *n, rc = 0;

	if (!d)
		return lks_err("cannot open directory '%s': %s", dir, strerror(errno));
	while (!rc && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct stat sb;
		char *p;

		if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 4, ".ini") != 0)
			continue;
		if (!(p = malloc(dlen + len + 2))) {
			rc = lks_err("out of memory");
			break;
		}
		sprintf(p, "%s%s%s", dir, sep, e->d_name);
		if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) {
			free(p);
			continue;
		}
		rc = lks_paths_add(paths, n, cap, p);
	}
	closedir(d);
	if (rc)
		return rc;
	if (*n == first)
		return lks_err("no case files (*.ini) in '%s'", dir);
	qsort(*paths + first, (size_t)(*n - first), sizeof(**paths), lks_strcmp_p);
	return 0;
}

int lks_case_paths(const char *const *args, int nargs, char ***paths, int *npaths)
{
	int n = 0, cap = 0, rc = 0;
	char **out = NULL;

	for (int i = 0; i < nargs && !rc; i++) {
		struct stat sb;

		if (stat(args[i], &sb) != 0)
			rc = lks_err("cannot open '%s': %s", args[i], strerror(errno));
		else if (S_ISDIR(sb.st_mode))
			rc = lks_paths_dir(args[i], &out, &n, &cap);
		else
			rc = lks_paths_add(&out, &n, &cap, strdup(args[i]));
	}
	if (rc) {
		lks_case_paths_free(out, n);
		out = NULL;
		n = 0;
	}
	*paths = out;
	*npaths = n;
	return rc;
}

void lks_case_paths_free(char **paths, int npaths)
{
	for (int i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
}

int lks_cases_load(const char *const *args, int nargs, const char *const *sets, int nsets,
                   lks_case **cases, int *ncases)
{
	char **paths = NULL;
	int npaths = 0, rc = -1;

	*cases = NULL;
	*ncases = 0;
	if (lks_case_paths(args, nargs, &paths, &npaths))
		return -1;
	if (!(*cases = calloc((size_t)npaths + 1, sizeof(**cases)))) {
		lks_err("out of memory");
		goto out;
	}
	for (int i = 0; i < npaths; i++, (*ncases)++)
		if (lks_case_load(paths[i], sets, nsets, &(*cases)[i]))
			goto out;
	rc = lks_cases_inject_env(*cases, *ncases);
out:
	lks_case_paths_free(paths, npaths);
	return rc;
}

/* LOCKSTEP_INJECT: the fault goes to the run it names, or to every run it fits. */
int lks_cases_inject_env(lks_case *cases, int ncases)
{
	const char *spec = getenv(LKS_INJECT_ENV);
	char why[600] = "";  /* why the first run it did not fit refused it */
	lks_fault f;
	int planted = 0;

	if (!spec || !*spec)
		return 0;
	if (lks_fault_parse(spec, 1, &f))
		return lks_err_prefix(LKS_INJECT_ENV);
	for (int i = 0; i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			lks_run_cfg *r = &cases[i].runs[j];

			if (f.run[0] && strcmp(f.run, r->name))
				continue;
			if (lks_run_fault_fits(&cases[i], r, &f)) {
				if (!why[0])
					snprintf(why, sizeof(why), "; run '%s': %s", r->name, lks_errmsg());
				if (!f.run[0])
					continue;
				lks_err_prefix(r->name);
				return lks_err_prefix(LKS_INJECT_ENV);
			}
			r->inject = f;
			planted++;
		}
	if (!planted)
		return lks_err("%s: no run %s '%s'%s", LKS_INJECT_ENV, f.run[0] ? "is called" : "fits",
		               f.run[0] ? f.run : spec, why);
	return 0;
}

void lks_cases_release(lks_case *cases, int ncases)
{
	for (int i = 0; i < ncases; i++)
		lks_case_release(&cases[i]);
	free(cases);
}
