/*
 * fingerprint_json.c: reading back a stored fingerprint, the flat JSON object of strings
 * that lks_fingerprint_print(..., json = 1) writes (see fingerprint.h), its keys and values
 * read by jansson: a value as its string decoded, or (an import's nested "import") as its
 * compact JSON text. Apart from fingerprint.c, which collects the build's facts, so that
 * the harness library can read fingerprints without them. The keys in which two differ are
 * printed here too, for every command that shows them (diff, bisect).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/fingerprint.h"

/* Past blanks at s. */
static const char *lks_fp_blanks(const char *s)
{
	while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
		s++;
	return s;
}

/* The JSON value that starts at s, read by jansson (which stops at its end: *len the bytes
   it took), or NULL where there is none. */
static json_t *lks_fp_load(const char *s, size_t *len)
{
	json_error_t e;
	json_t *v = *s ? json_loads(s, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &e) : NULL;

	if (v)
		*len = (size_t)e.position;
	return v;
}

/* v into dst (cap bytes, cut there): a string as jansson decoded it, any other value as its
   compact JSON text. */
static void lks_fp_text(const json_t *v, char *dst, size_t cap)
{
	char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	snprintf(dst, cap, "%s", text ? text : json_is_string(v) ? json_string_value(v) : "");
	free(text);
}

int lks_fingerprint_json_next(const char **p, char *key, size_t nk, char *val, size_t nv)
{
	const char *s = lks_fp_blanks(*p);
	json_t *k = NULL, *v = NULL;
	size_t len;
	int rc = 0;

	/* the object's brackets and commas are the only bytes read here: what is between
	   them, the keys and values, jansson reads */
	if (*s == '{' || *s == ',')
		s = lks_fp_blanks(s + 1);
	if (*s != '"' || !(k = lks_fp_load(s, &len)) || !json_is_string(k))
		goto out;
	if (*(s = lks_fp_blanks(s + len)) != ':' || !(v = lks_fp_load(lks_fp_blanks(s + 1), &len)))
		goto out;
	lks_fp_text(k, key, nk);
	lks_fp_text(v, val, nv);
	*p = lks_fp_blanks(s + 1) + len;
	rc = 1;
out:
	json_decref(k);
	json_decref(v);
	return rc;
}

int lks_fingerprint_json_get(const char *json, const char *key, char *val, size_t nv)
{
	char k[128];

	while (json && lks_fingerprint_json_next(&json, k, sizeof(k), val, nv))
		if (!strcmp(k, key))
			return 1;
	return 0;
}

/* Calls fn on each key in which fa and fb differ or that one lacks (a's keys in order,
   then b's extra), with both values (NULL: absent); returns how many. */
static int lks_fingerprint_json_walk(const char *fa, const char *fb,
                                     void (*fn)(void *arg, const char *key, const char *va,
                                                const char *vb), void *arg)
{
	char key[128], va[512], vb[512];
	const char *p;
	int ndiff = 0;

	for (p = fa; lks_fingerprint_json_next(&p, key, sizeof(key), va, sizeof(va));) {
		int in_b = lks_fingerprint_json_get(fb, key, vb, sizeof(vb));

		if (in_b && !strcmp(va, vb))
			continue;
		ndiff++;
		fn(arg, key, va, in_b ? vb : NULL);
	}
	for (p = fb; lks_fingerprint_json_next(&p, key, sizeof(key), vb, sizeof(vb));) {
		if (lks_fingerprint_json_get(fa, key, va, sizeof(va)))
			continue;
		ndiff++;
		fn(arg, key, NULL, vb);
	}
	return ndiff;
}

struct lks_fp_print {
	FILE *out;
	const char *la, *lb;
	int n;
};

static void lks_fp_print_key(void *arg, const char *key, const char *va, const char *vb)
{
	struct lks_fp_print *pr = arg;

	if (!pr->n++)
		fprintf(pr->out, "fingerprint keys that differ:\n");
	fprintf(pr->out, "  %-22s %s: %s\n  %-22s %s: %s\n", key, pr->la, va ? va : "(absent)", "",
	        pr->lb, vb ? vb : "(absent)");
}

int lks_fingerprint_json_diff(FILE *out, const char *fa, const char *fb, const char *la,
                              const char *lb)
{
	struct lks_fp_print pr = { out, la, lb, 0 };
	int ndiff = lks_fingerprint_json_walk(fa, fb, lks_fp_print_key, &pr);

	if (!ndiff)
		fprintf(out, "fingerprints: the same in every key\n");
	return ndiff;
}

struct lks_fp_keys {
	char *buf;
	size_t n, len;
};

static void lks_fp_add_key(void *arg, const char *key, const char *va, const char *vb)
{
	struct lks_fp_keys *k = arg;

	(void)va;
	(void)vb;
	if (k->len < k->n)
		k->len += (size_t)snprintf(k->buf + k->len, k->n - k->len, "%s%s", k->len ? " " : "",
		                           key);
}

int lks_fingerprint_json_keys(const char *fa, const char *fb, char *buf, size_t n)
{
	struct lks_fp_keys k = { buf, n, 0 };

	if (n)
		buf[0] = 0;
	return lks_fingerprint_json_walk(fa, fb, lks_fp_add_key, &k);
}
