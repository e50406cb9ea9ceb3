/*
 * fingerprint_json.c: reading back a stored fingerprint, the flat JSON object of strings
 * that lks_fingerprint_print(..., json = 1) writes (see fingerprint.h). Apart from
 * fingerprint.c, which collects the build's facts, so that the harness library can read
 * fingerprints without them.
 */
#include <string.h>

#include "harness/fingerprint.h"

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
