/*
 * case_parse.h: what the files that read a case share, inside the engine (case.h is the
 * interface): the keys of each section as a table (case_keys.c), the state of one load,
 * where an error is placed (case.c), and the validation of a whole case
 * (case_validate.c). Nothing outside case*.c includes it.
 */
#ifndef LKS_HARNESS_CASE_PARSE_H
#define LKS_HARNESS_CASE_PARSE_H

#include <stddef.h>

#include "harness/engine/case.h"

/* ---- the keys of each section (case_keys.c) ---- */

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
	LKS_KEY_METRIC,  /* char[size]: a name of the metric table, or (validated with the
	                    runs: an imported run's) any name of the name rule */
	LKS_KEY_BACKEND, /* char[size]: a name of the backend registry (kernels/backend.h) */
	LKS_KEY_IMPORT,  /* lks_run_cfg's import_fmt and import_path: "FMT:PATH" */
	LKS_KEY_RANKS,   /* a string of ranks, as lks_import_ranks_valid takes them */
	LKS_KEY_TAG_MAP, /* char[size]: a tag map, as lks_import_tag_map_parse takes it ("@FILE"
	                    read when the run is imported) */
	LKS_KEY_RESUME,  /* lks_run_cfg's resume_from and resume_step: "NAME@STEP" */
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

enum lks_sec { LKS_SEC_NONE = -1, LKS_SEC_CASE, LKS_SEC_MODEL, LKS_SEC_OPTIM, LKS_SEC_RUN,
	LKS_SEC_CHECK, LKS_SEC_COUNT };

struct lks_sec_keys {
	const char *name;
	const struct lks_key *keys;
	int nkeys;
};

extern const struct lks_sec_keys lks_secs[LKS_SEC_COUNT];

/* The row of key name in section sec, or -1. */
int lks_key_find(enum lks_sec sec, const char *name);

/* Stores val into the field k of the struct at base; errors name the key and section
   (label: "[model]"). */
int lks_key_store(const struct lks_key *k, void *base, const char *val, const char *label);

/* ---- the state of one load (case.c) ---- */

struct lks_parse {
	lks_case *c;
	const char *next;       /* the reader's position in c->text */
	int line;               /* the line inih is working on */
	enum lks_sec sec;       /* the current section ... */
	int idx;                /* ... and which run or check it is */
	int sec_line[3];        /* header lines of [case], [model], [optim]; 0: absent */
	unsigned seen[3];       /* their keys given, one bit per row of the key table */
	int key_line[3][32];    /* the line of each of those keys; 0: not in the file, or
	                           replaced by --set (so an error is placed at the header) */
	unsigned *run_seen;     /* the same for each run ... */
	unsigned *check_seen;   /* ... and each check */
	int run_cap, check_cap;
	int rc;                 /* the first error, already recorded with lks_err */
};

/* Re-records the last error after a prefix: "cases/x.ini:12: unknown key ...". */
int lks_err_prefix(const char *prefix);

/* The last error happened at line of the case file (0: no line to point at); sets st->rc. */
int lks_case_at(struct lks_parse *st, int line);

/* Of a section (idx: which run or check): the keys given, one bit per row of its key
   table; the line of its header; "[model]", "[run fp8]". */
unsigned *lks_sec_seen(struct lks_parse *st, enum lks_sec sec, int idx);
int lks_sec_line(struct lks_parse *st, enum lks_sec sec, int idx);
const char *lks_sec_label(struct lks_parse *st, enum lks_sec sec, int idx, char *buf,
			  size_t size);

/* ---- validation (case_validate.c) ---- */

/* Fills the defaults that depend on other keys, then checks the rules that span keys and
   sections; an error is placed in the file (lks_case_at). */
int lks_case_validate(struct lks_parse *st);


#endif
