/*
 * import_debugmode_impl.h: what the two files of the debugmode format share
 * (import_debugmode.c: its text dumps, the format's row and its account of all three;
 * import_debugmode_json.c: save_logs' JSON): a dump being read, and a tensor's record
 * begun, its hash's numbers added, handed on.
 */
#ifndef LKS_HARNESS_IMPORT_IMPORT_DEBUGMODE_IMPL_H
#define LKS_HARNESS_IMPORT_IMPORT_DEBUGMODE_IMPL_H

#include <stdint.h>

#include "harness/import/import.h"

/* Several numbers of a hash folded: h * K + next, K the golden ratio's 64 bits (odd, so a
   change of any one changes h). */
#define LKS_DM_FOLD 0x9e3779b97f4a7c15ull

enum { LKS_DM_UNKNOWN, LKS_DM_STRING, LKS_DM_HASHES };

struct lks_dm {
	const char *path;
	lks_tensor_sink sink;
	void *arg;
	int step, rank;
	long ignored;
	int kind;                 /* a text dump's, from its first line */
	long nops, blocks;        /* a hash dump's: the ops its first line counts, blocks read */
	int inblock, triton;      /* its block's call type */
	char module[LKS_TENSOR_NAME_MAX], call[LKS_TENSOR_NAME_MAX];  /* its block's */
	lks_phase phase;          /* the call's */
	struct lks_dm_open *mods; /* debug_string()'s: the nn.Mod annotations the line is in, */
	size_t nmods, capmods;    /* innermost last */
	int lead;                 /* the blanks before the first line's text, read to see it */
	int nf, ni;               /* the leaf's floats and ints */
	uint64_t fh, ih;          /* their folds */
	lks_tensor_rec t;
};

/* A record begun for the tensor at path p (pn bytes: a pytree path "[0][1]", "['k']",
   ".a", or "<root>" / "" for the whole; or an argument's name) among the inputs or the
   outputs of op in module (NULL: none), at line at; args: p is a path in (args, kwargs),
   whose "[0]" or "[1]" is dropped. Named "module/op.in.0.1". 0, or LKS_E_BAD_INPUT (a name
   too long). */
int lks_dm_leaf(struct lks_dm *x, const char *module, const char *op, int input, int args,
                const char *p, size_t pn, long at);
/* An int of the leaf's hash, folded into its ints'. */
static inline void lks_dm_int(struct lks_dm *x, uint64_t v)
{
	x->ih = x->ni++ ? x->ih * LKS_DM_FOLD + v : v;
}
/* A float of the leaf's hash: a statistic (l1, l1_1, ...; past LKS_IMPORT_MAX_METRICS, in
   the fold only), its bits folded into its floats'. 0, or -1 (lks_err). */
int lks_dm_float(struct lks_dm *x, double v, int64_t dec);
/* The leaf's record to the sink, its hash its ints' fold, else its floats' (none where its
   hash held no number: None). 0, or the sink's answer. */
int lks_dm_emit(struct lks_dm *x);
/* The integer of digits s (n bytes, '-' first allowed; a negative one mod 2^64). 0, or -1
   for none, or one beyond 64 bits. */
int lks_dm_u64(const char *s, size_t n, uint64_t *out);
/* The rest of f, save_logs' JSON document, read whole: its records (import_debugmode_json.c).
   0, LKS_E_BAD_INPUT, -1, or the sink's answer. */
int lks_dm_json_file(struct lks_dm *x, FILE *f);

#endif
