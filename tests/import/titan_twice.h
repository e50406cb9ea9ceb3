/*
 * titan_twice.h: a torchtitan log read both ways, and what they made of it compared:
 * through lks_import_titan_line, whose common lines the reader takes at once
 * (lks_titan_fast in harness/import/import_torchtitan.c), and through a function of its own
 * that calls it, which the reader reads the whole way (colour codes dropped first). The two
 * must hand on the same records, bit for bit, count the same lines and fail alike, with the
 * same message; and the records, put in a block as they come (lks_block_add_rec: the fast
 * reading's carry a layout, the whole way's none), must read back the same from it. For
 * test_import_read and the torchtitan fuzz target.
 */
#ifndef LKS_TESTS_TITAN_TWICE_H
#define LKS_TESTS_TITAN_TWICE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import.h"
#include "harness/store/import_block.h"
#include "kernels/err.h"

struct lks_titan_read {
	lks_import_rec *recs;
	int n, cap;
	lks_import_counts c;
	int rc;
	char err[512];
	lks_block *block;         /* the records as they came */
	int block_rc;
	unsigned char *back;      /* (nback) what the block read back, record after record */
	size_t nback, backcap;
};

/* A record the block read back, written out: step, rank, n, then name, kind and value
   bits of each. */
static int lks_titan_back(void *arg, int step, int rank, const lks_metric_row *rows, int n)
{
	struct lks_titan_read *r = arg;
	size_t need = 3 * sizeof(int) + (size_t)n * (LKS_IMPORT_NAME_MAX + sizeof(int) + 8);

	if (r->nback + need > r->backcap) {
		size_t cap = 2 * (r->nback + need);
		unsigned char *p = realloc(r->back, cap);

		if (!p)
			return -1;
		r->back = p;
		r->backcap = cap;
	}
	memcpy(r->back + r->nback, &step, sizeof(int)), r->nback += sizeof(int);
	memcpy(r->back + r->nback, &rank, sizeof(int)), r->nback += sizeof(int);
	memcpy(r->back + r->nback, &n, sizeof(int)), r->nback += sizeof(int);
	for (int i = 0; i < n; i++) {
		size_t l = strlen(rows[i].name) + 1;

		memcpy(r->back + r->nback, rows[i].name, l), r->nback += l;
		memcpy(r->back + r->nback, &rows[i].kind, sizeof(int)), r->nback += sizeof(int);
		memcpy(r->back + r->nback, &rows[i].value, 8), r->nback += 8;
	}
	return 0;
}

static int lks_titan_keep(void *arg, const lks_import_rec *rec)
{
	struct lks_titan_read *r = arg;

	if (!r->block_rc && (r->block_rc = lks_block_add_rec(r->block, rec)) == 1) {
		const unsigned char *data;
		size_t len;

		/* full: read back, and the next one begun */
		if (!(r->block_rc = lks_block_encode(r->block, &data, &len))
		    && !(r->block_rc = lks_block_decode(data, len, lks_titan_back, r))) {
			lks_block_reset(r->block);
			r->block_rc = lks_block_add_rec(r->block, rec);
		}
	}

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
	const unsigned char *data;
	size_t len;

	static lks_block *block;  /* one for every reading: a new one costs its pages */

	memset(r, 0, sizeof(*r));
	if (!block)
		block = lks_block_new();
	else
		lks_block_reset(block);
	r->block = block;
	r->rc = f && r->block ? lks_import_lines("t.log", f, lks_titan_keep, r, &r->c, fn) : -1;
	snprintf(r->err, sizeof(r->err), "%s", r->rc ? lks_errmsg() : "");
	if (r->block && !r->block_rc && !(r->block_rc = lks_block_encode(r->block, &data, &len)))
		r->block_rc = lks_block_decode(data, len, lks_titan_back, r);
	r->block = NULL;
	if (f)
		fclose(f);
}

static void lks_titan_read_free(struct lks_titan_read *r)
{
	free(r->recs);
	free(r->back);
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
	else if (a.block_rc || b.block_rc)
		snprintf(why, wlen, "a block took the records: %d, the whole way's %d", a.block_rc,
		         b.block_rc);
	else if (a.nback != b.nback || (a.nback && memcmp(a.back, b.back, a.nback)))
		snprintf(why, wlen, "the records read back from a block differ");
	else
		differ = 0;
	for (int i = 0; !differ && i < a.n; i++)
		if (!lks_titan_same_rec(&a.recs[i], &b.recs[i])) {
			snprintf(why, wlen, "record %d (line %ld) differs", i, b.recs[i].line);
			differ = 1;
		}
	lks_titan_read_free(&a);
	lks_titan_read_free(&b);
	return differ;
}

#endif
