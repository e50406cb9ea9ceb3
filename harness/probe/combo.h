/*
 * combo.h: combos (DESIGN.md, Concepts): named environments in which 'lockstep matrix',
 * 'bisect' and 'reduce' probe cases. A combos file is INI:
 *
 *   [combo cuda-12.4]                     ; sections in the order they are to be bisected
 *   description = the driver of the fleet ; for people, never compared
 *   env.NCCL_ALGO = Ring                  ; set in the probe's environment
 *   unset.CUBLAS_WORKSPACE_CONFIG =       ; removed from it (the value must be empty)
 *   library_path = /opt/cuda-12.4/lib64   ; DIR[:DIR], prepended to LD_LIBRARY_PATH
 *   set.run.fp8.recipe = fp8_tensorwise   ; a case override: --set run.fp8.recipe=...
 *
 * A probe's environment is lockstep's own, then each unset.VAR removed, each env.VAR set,
 * and library_path put in front of LD_LIBRARY_PATH (after env.LD_LIBRARY_PATH, if the
 * combo sets that too). Each combo stands alone: nothing is inherited from the one above.
 *
 * What a combo says about one thing is an item, and the thing is its target: "env.VAR" (set
 * or unset alike: one variable), "library_path", or "set.SECTION.KEY". Two combos differ in
 * the targets one of them lacks or where their items differ, and in the order of the set.
 * targets both have: overrides apply in order and a later one wins (set.run.*.K after
 * set.run.a.K overrides it), so a set. target out of the other combo's order is moved;
 * reduce applies a subset of such differences to one combo (lks_combo_apply).
 */
#ifndef LKS_HARNESS_COMBO_H
#define LKS_HARNESS_COMBO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LKS_COMBO_NAME_MAX 64
/* The longest value: a probe's environment string "VAR=value" must pass execve, which
   refuses one over 128 KiB (MAX_ARG_STRLEN) and all of them together over a quarter of the
   stack limit; 32 KiB holds any library path a person writes. */
#define LKS_COMBO_VALUE_MAX 32768

typedef enum lks_combo_kind {
	LKS_COMBO_ENV = 0,        /* env.VAR = value */
	LKS_COMBO_UNSET,          /* unset.VAR = */
	LKS_COMBO_LIBRARY_PATH,   /* library_path = DIR[:DIR] */
	LKS_COMBO_SET,            /* set.SECTION.KEY = value */
} lks_combo_kind;

typedef struct lks_combo_item {
	lks_combo_kind kind;
	char *target;             /* "env.VAR" (env and unset alike), "library_path", "set.S.K" */
	char *value;              /* "" for unset */
	int line;                 /* in the combos file; 0: made by lks_combo_apply */
} lks_combo_item;

typedef struct lks_combo {
	char *name;
	lks_combo_item *items;    /* in file order */
	int nitems;
	int line;                 /* of the [combo NAME] header; 0: made by lks_combo_apply */
	int description_line;     /* of its description; 0: none */
} lks_combo;

typedef struct lks_combos {
	char *path;
	lks_combo *combos;        /* in file order */
	int n;
} lks_combos;

/* Reads a combos file. Every mistake is an error (lks_err) naming "file:line": unknown
   keys, a key given twice in one combo, a repeated combo name, a bad variable name, a value
   given to unset; a file without combos is one too. On error *out is empty. */
int lks_combos_load(const char *path, lks_combos *out);
void lks_combos_release(lks_combos *c);
/* The combo called name, or NULL. */
const lks_combo *lks_combos_find(const lks_combos *c, const char *name);

void lks_combo_release(lks_combo *c);

/* The item as a line of the file would say it: "env.X = 1", "unset.X", "library_path = D",
   "set.s.k = v"; truncated to n bytes. */
void lks_combo_item_str(const lks_combo_item *it, char *buf, size_t n);

/* One target in which two combos differ: the item of each side, NULL where it lacks one;
   moved: a set. target both have, whose place among the set. items differs (its values
   may be equal). */
typedef struct lks_combo_change {
	const char *target;
	const lks_combo_item *a, *b;
	int moved;
} lks_combo_change;

/* The targets in which a and b differ: a's in its order, then those only b has. The set.
   targets both have keep their place where they are in the same order in both (the most
   of them that are), and the others are moved. The changes point into a and b. Free *out.
   A subset of them is a bit mask: reduce takes at most LKS_COMBO_CHANGES_MAX. */
#define LKS_COMBO_CHANGES_MAX 64
int lks_combo_diff(const lks_combo *a, const lks_combo *b, lks_combo_change **out, int *n);

/* Prints the changes whose bit is set in mask (LKS_COMBO_ALL: every one, however many),
   each with both sides labelled la and lb ("(absent)" where a combo does not say,
   "(unset)" for unset.VAR), in the layout of the fingerprint differences
   (lks_fingerprint_json_diff). */
#define LKS_COMBO_ALL (~0ull)
void lks_combo_print_changes(FILE *out, const lks_combo_change *ch, int n, uint64_t mask,
                             const char *la, const char *lb);

/* a with the changes of a and b (lks_combo_diff) whose bit is set in mask applied: each
   such target takes b's item, or is dropped where b has none. The set. items come in an
   order that keeps both combos' (a's and b's merged around the targets they keep in
   place; a moved target at b's place when its change is applied, else at a's), so the
   empty mask gives a and every change b, overrides in the same order. name: the new
   combo's name (copied). */
int lks_combo_apply(const lks_combo *a, const lks_combo *b, const lks_combo_change *ch, int n,
                    uint64_t mask, const char *name, lks_combo *out);

/* The environment of a probe under c: base (NULL-terminated "VAR=value" strings, e.g.
   environ) with c's items applied as this header's comment says. *out is NULL-terminated,
   every string and the array malloc'd; free with lks_strv_free. */
int lks_combo_environ(const lks_combo *c, char *const *base, char ***out);
void lks_strv_free(char **v);

#endif
