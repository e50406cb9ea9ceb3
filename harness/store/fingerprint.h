/*
 * fingerprint.h: the environment a result was produced in, as ordered key/value pairs
 * (DESIGN.md, Trace): lockstep version and commit, compiler and flags, CPU and ISA path,
 * library versions, and the CUDA side when built with it. Runs store it; 'lockstep env'
 * prints it; bisect compares two of them.
 */
#ifndef LKS_HARNESS_FINGERPRINT_H
#define LKS_HARNESS_FINGERPRINT_H

#include <stdio.h>

#define LKS_FP_MAX 48

typedef struct lks_fingerprint {
	int n;
	struct {
		char key[40];
		char value[256];
	} item[LKS_FP_MAX];
} lks_fingerprint;

void lks_fingerprint_collect(lks_fingerprint *fp);
void lks_fingerprint_add(lks_fingerprint *fp, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* NULL if absent. */
const char *lks_fingerprint_get(const lks_fingerprint *fp, const char *key);
void lks_fingerprint_print(const lks_fingerprint *fp, FILE *out, int json);
/* A stored fingerprint (a flat JSON object, as print writes it) with one more pair, key:
   value, at its end: malloc'd, or NULL when out of memory. */
char *lks_fingerprint_json_add(const char *json, const char *key, const char *value);

/* Reading a stored fingerprint (fingerprint_json.c): the next "key": "value" pair of the flat
   JSON object at *p, 0 at the end (or where the text is not such an object). Keys and
   values are read by jansson: a string value is its text decoded (escapes undone, cut at
   nv - 1 bytes), so two values compare equal iff the strings they stand for do, which for
   the one writer (lks_fingerprint_print, lks_fingerprint_json_add) is iff their texts do; a
   value that is no string (an import's "import" object) is its compact JSON text. And the
   value of key, 0 when absent. */
int lks_fingerprint_json_next(const char **p, char *key, size_t nk, char *val, size_t nv);
int lks_fingerprint_json_get(const char *json, const char *key, char *val, size_t nv);
/* Prints the keys in which two stored fingerprints differ or that one lacks (a's keys in
   order, then b's extra), each with both values labelled la and lb, or a line saying they
   are the same; 'lockstep diff' and 'lockstep bisect' show them so. Returns how many. */
int lks_fingerprint_json_diff(FILE *out, const char *fa, const char *fb, const char *la,
                              const char *lb);
/* The same keys, blank-separated, into buf (cut at n - 1 bytes). Returns how many. */
int lks_fingerprint_json_keys(const char *fa, const char *fb, char *buf, size_t n);

#endif
