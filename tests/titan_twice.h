/*
 * titan_twice.h: a torchtitan log read both ways, and what they made of it compared:
 * through lks_import_titan_line, whose common lines the reader takes at once
 * (lks_titan_fast in harness/store/import_log.c), and through a function of its own that
 * calls it, which the reader reads the whole way (colour codes dropped first). The two
 * must hand on the same records, bit for bit, count the same lines and fail alike, with
 * the same message. For test_import_read and the torchtitan fuzz target.
 */
#ifndef LKS_TESTS_TITAN_TWICE_H
#define LKS_TESTS_TITAN_TWICE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/import.h"
#include "kernels/err.h"

struct lks_titan_read {
	lks_import_rec *recs;
	int n, cap;
	lks_import_counts c;
	int rc;
	char err[512];
};

static int lks_titan_keep(void *arg, const lks_import_rec *rec)
{
	struct lks_titan_read *r = arg;

	if (r->n == r->cap) {
		lks_import_rec *p = realloc(r->recs, (size_t)(r->cap ? 2 * r->cap : 16) * sizeof(*p));

		if (!p)
			return -1;
		r->recs = p;
		r->cap = r->cap ? 2 * r->cap : 16;
	}
	r->recs[r->n++] = *rec;
	return 0;
}

/* lks_import_titan_line under another name: the reader's whole way. */
static int lks_titan_whole_way(const char *s, size_t len, lks_import_rec *rec, const char *path)
{
	return lks_import_titan_line(s, len, rec, path);
}

static void lks_titan_read(const char *text, size_t n, lks_import_line_fn fn,
                           struct lks_titan_read *r)
{
	FILE *f = fmemopen((void *)text, n, "r");

	memset(r, 0, sizeof(*r));
	r->rc = f ? lks_import_lines("t.log", f, lks_titan_keep, r, &r->c, fn) : -1;
	snprintf(r->err, sizeof(r->err), "%s", r->rc ? lks_errmsg() : "");
	if (f)
		fclose(f);
}

/* Whether two records are the same as a store would see them: the names to their NUL,
   values bit for bit, decimals. */
static int lks_titan_same_rec(const lks_import_rec *a, const lks_import_rec *b)
{
	if (a->line != b->line || a->step != b->step || a->rank != b->rank
	    || a->ranked != b->ranked || a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (a->m[i].nlen != b->m[i].nlen || strcmp(a->m[i].name, b->m[i].name)
		    || a->m[i].kind != b->m[i].kind || a->m[i].dec != b->m[i].dec
		    || memcmp(&a->m[i].value, &b->m[i].value, sizeof(double)))
			return 0;
	return 1;
}

/* The n bytes of text read both ways: 0 when alike, else 1 and why in why. */
static int lks_titan_twice(const char *text, size_t n, char *why, size_t wlen)
{
	struct lks_titan_read a, b;
	int differ = 1;

	lks_titan_read(text, n, lks_import_titan_line, &a);
	lks_titan_read(text, n, lks_titan_whole_way, &b);
	if (a.rc != b.rc || strcmp(a.err, b.err))
		snprintf(why, wlen, "rc %d '%s', the whole way %d '%s'", a.rc, a.err, b.rc, b.err);
	else if (a.n != b.n || a.c.lines != b.c.lines || a.c.records != b.c.records
	         || a.c.ignored != b.c.ignored)
		snprintf(why, wlen, "%d records of %ld lines (%ld ignored), the whole way %d of %ld "
		         "(%ld)", a.n, a.c.lines, a.c.ignored, b.n, b.c.lines, b.c.ignored);
	else
		differ = 0;
	for (int i = 0; !differ && i < a.n; i++)
		if (!lks_titan_same_rec(&a.recs[i], &b.recs[i])) {
			snprintf(why, wlen, "record %d (line %ld) differs", i, b.recs[i].line);
			differ = 1;
		}
	free(a.recs);
	free(b.recs);
	return differ;
}

#endif
