/*
 * import_json.c: what the JSON formats share (jsonl, megatron-golden, hf-trainer;
 * import_impl.h): a metric's number, a whole number, a number no double holds named at its
 * file:line, Python's bare NaN and infinities, and a document read whole within its limit.
 */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/base/file.h"
#include "harness/import/import_impl.h"
#include "kernels/err.h"

/* A JSON value as a metric: a number, or a string that spells NaN or an infinity ("nan",
   "-NaN", "+nan", "inf", "-inf": Megatron-LM's golden checker takes any sign and case);
   a number in a string is not one. */
int lks_import_json_number(const json_t *v, double *out)
{
	const char *t;

	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	t = json_string_value(v);
	if (lks_import_number(t, strlen(t), 0, out) || isfinite(*out))
		return -1;
	return 0;
}

/* A whole number lo..hi: a JSON integer, or (a line read with every integer as a double,
   lks_json_load) a double that is one. */
int lks_import_json_int(const json_t *v, int lo, int hi, size_t flags, int *out)
{
	double d;
	json_int_t i;

	if ((flags & JSON_DECODE_INT_AS_REAL) && json_is_real(v)) {
		if (!((d = json_real_value(v)) >= lo && d <= hi && d == (int)d))
			return -1;
		*out = (int)d;
		return 0;
	}
	if (!json_is_integer(v) || (i = json_integer_value(v)) < lo || i > hi)
		return -1;
	*out = (int)i;
	return 0;
}

/* The first number outside a string of the JSON text s (n bytes) that no double holds:
   jansson reads one nearer 0 than the least double as 0, and fails one over the largest
   ("real number overflow") without saying which. Its answer (lks_import_number's
   LKS_IMPORT_NUMBER_OVER or _UNDER), with *at and *len its bytes; 0 where there is none. */
static int lks_json_range(const char *s, size_t n, const char **at, size_t *len)
{
	static const char chars[] = "+-.0123456789eE";
	int in_string = 0;

	for (const char *p = s, *end = s + n; p < end; p++) {
		size_t k = 0;
		double x;
		int answer;

		if (in_string) {
			if (*p == '\\' && p + 1 < end)
				p++;
			else if (*p == '"')
				in_string = 0;
			continue;
		}
		if (*p == '"')
			in_string = 1;
		if (*p != '-' && !isdigit((unsigned char)*p))
			continue;
		while (p + k < end && p[k] && memchr(chars, p[k], sizeof(chars) - 1))
			k++;
		answer = lks_import_number(p, k, 0, &x);
		if (answer == LKS_IMPORT_NUMBER_OVER || answer == LKS_IMPORT_NUMBER_UNDER) {
			*at = p;
			*len = k;
			return answer;
		}
		p += k - 1;
	}
	return 0;
}

/* A number of the JSON text s (n bytes, its first line line) that no double holds
   (lks_json_range) as bad input at its file:line (LKS_E_BAD_INPUT); 0 where there is none. */
int lks_import_json_range_err(const char *path, long line, const char *s, size_t n)
{
	const char *at;
	size_t k;
	int answer = lks_json_range(s, n, &at, &k);

	if (!answer)
		return 0;
	for (const char *p = s; (p = memchr(p, '\n', (size_t)(at - p))); p++)
		line++;
	return lks_err("'%s':%ld: bad value '%.*s'%s", path, line, (int)(k > 40 ? 40 : k), at,
	               lks_import_number_why(answer)), LKS_E_BAD_INPUT;
}

/* Python's json module writes NaN, Infinity and -Infinity bare (allow_nan, its default),
   which JSON lacks: s with each such word outside a string written as the string lockstep
   reads ("nan", "inf", "-inf"), or NULL when there is none (or no memory). Only a line
   jansson refused is looked at, so a good line costs nothing. */
char *lks_import_json_bare_nonfinite(const char *s)
{
	return lks_import_json_bare_nonfinite_as(s, "\"nan\"");
}

char *lks_import_json_bare_nonfinite_as(const char *s, const char *nan_as)
{
	const struct { const char *bare, *as; } words[] = {
		{ "-Infinity", "\"-inf\"" }, { "Infinity", "\"inf\"" }, { "NaN", nan_as },
	};
	/* NaN, 3 bytes, grows the most: to 5 bytes, or nan_as */
	size_t grow = strlen(nan_as) > 5 ? strlen(nan_as) : 5;
	char *out = malloc(grow * strlen(s) + 1), *w = out;
	int in_string = 0, any = 0;

	for (const char *p = s; out && *p;) {
		size_t k = 0, n = 0;

		if (in_string || *p == '"') {
			if (in_string && *p == '\\' && p[1])
				*w++ = *p++;
			else if (*p == '"')
				in_string = !in_string;
			*w++ = *p++;
			continue;
		}
		for (; k < sizeof(words) / sizeof(words[0]); k++)
			if (!strncmp(p, words[k].bare, n = strlen(words[k].bare)))
				break;
		if (k == sizeof(words) / sizeof(words[0])) {
			*w++ = *p++;
			continue;
		}
		w += strlen(strcpy(w, words[k].as));
		p += n;
		any = 1;
	}
	if (out)
		*w = 0;
	if (!any) {
		free(out);
		return NULL;
	}
	return out;
}

int lks_import_json_slurp(FILE *f, const char *path, const char *what, char **text,
                          size_t *len)
{
	size_t cap = 65536, n = 0, got;
	struct stat st = { 0 };
	char *p, *q;

	if (fstat(fileno(f), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
		return lks_err("'%s' is not a regular file or a pipe (%s): want %s", path,
		               S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a socket", what),
		       LKS_E_BAD_INPUT;
	if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > LKS_GOLDEN_FILE_MAX)
		return lks_err("'%s' is %lld bytes, over the limit of %zu bytes for %s", path,
		               (long long)st.st_size, LKS_GOLDEN_FILE_MAX, what), LKS_E_BAD_INPUT;
	if (!(p = malloc(cap)))
		return -1;
	do {
		if (n + 1 == cap) {  /* full: LKS_GOLDEN_FILE_MAX + 1 bytes are enough to refuse */
			if (n > LKS_GOLDEN_FILE_MAX)
				break;
			cap = cap * 2 < LKS_GOLDEN_FILE_MAX + 2 ? cap * 2 : LKS_GOLDEN_FILE_MAX + 2;
			if (!(q = realloc(p, cap))) {
				free(p);
				return -1;
			}
			p = q;
		}
		n += got = fread(p + n, 1, cap - n - 1, f);
	} while (got > 0);
	if (n > LKS_GOLDEN_FILE_MAX) {
		free(p);
		return lks_err("'%s' holds more than the limit of %zu bytes for %s", path,
		               LKS_GOLDEN_FILE_MAX, what), LKS_E_BAD_INPUT;
	}
	if (ferror(f)) {
		free(p);
		return -1;
	}
	p[n] = 0;
	*text = p;
	*len = n;
	return 0;
}

int lks_import_json_object_line(const char *path, long at, const char *line, json_t **out)
{
	json_error_t e;
	json_t *o;

	*out = NULL;
	while (*line == ' ' || *line == '\t')
		line++;
	if (!*line)
		return 0;
	if (!(o = json_loads(line, JSON_REJECT_DUPLICATES, &e))) {
		char *py = lks_import_json_bare_nonfinite(line);
		json_error_t e2;

		o = py ? json_loads(py, JSON_REJECT_DUPLICATES, &e2) : NULL;
		free(py);
	}
	if (!o)
		return lks_err("'%s':%ld: not JSON: %s (column %d)", path, at, e.text, e.column),
		       LKS_E_BAD_INPUT;
	if (!json_is_object(o)) {
		json_decref(o);
		return lks_err("'%s':%ld: not a JSON object", path, at), LKS_E_BAD_INPUT;
	}
	*out = o;
	return 0;
}
