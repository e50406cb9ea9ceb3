/*
 * fingerprint_json.c: reading back a stored fingerprint, the flat JSON object of strings
 * that lks_fingerprint_print(..., json = 1) writes (see fingerprint.h). Apart from
 * fingerprint.c, which collects the build's facts, so that the harness library can read
 * fingerprints without them. The keys in which two differ are printed here too, for every
 * command that shows them (diff, bisect).
 */
#include <stdio.h>
#include <string.h>

#include "harness/store/fingerprint.h"

int lks_fingerprint_json_next(const char **p, char *key, size_t nk, char *val, size_t nv)
{
	char *dst[2] = { key, val };
	size_t cap[2] = { nk, nv };

	for (int k = 0; k < 2; k++) {
		const char *s = strchr(*p, '"');
		size_t len = 0;

		if (!s)
			return 0;
		for (s++; *s && *s != '"'; s++) {
			if (*s == '\\' && s[1]) {
				if (len + 1 < cap[k])
					dst[k][len++] = *s;
				s++;
			}
			if (len + 1 < cap[k])
				dst[k][len++] = *s;
		}
		dst[k][len] = 0;
		if (!*s)
			return 0;
		*p = s + 1;
	}
	return 1;
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
