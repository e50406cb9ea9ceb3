/*
 * import_torchtitan.c: torchtitan's training log (import.h), one line a step, scanned by
 * hand, no regex:
 *
 *   [rank0]:[titan] 2025-01-01 00:00:00,000 - root - INFO - step:  2  loss:  6.1098
 *   grad_norm:  4.6416  memory:  2.49GiB(3.14%)  tps: 177,138  tflops: 96.17  mfu: 9.72%
 *
 * (one line), through the loop of the line formats (import_lines.c: colour codes dropped,
 * "[rankN]:" the rank). A line that does not start a record ("step:" after the logger's
 * " - ", or at the start) is not a metric line; one that does must be whole: a label
 * without its value or a bad number is bad input at its file:line. Its common lines are
 * read at once by its quick reader (lks_titan_fast, below), the rest the whole way.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

/* torchtitan's labels: the table's names, and those of forks that estimate the FLOPs (TTP's
   metrics processor) */
static const lks_import_label_row lks_torchtitan_labels[] = {
	{ "loss", "loss" },
	{ "grad_norm", "grad_norm" },
	{ "lr", "lr" },
	{ "tps", "tps" },
	{ "wps", "wps" },
	{ "tflops", "tflops" },
	{ "mfu", "mfu" },
	{ "memory", "memory" },
	{ "memory_pct", "memory_pct" },
	{ NULL, NULL },
};
static const lks_import_label_row lks_torchtitan_aliases[] = {
	{ "est_tflops", "tflops" },
	{ "est_mfu", "mfu" },
	{ NULL, NULL },
};

/* One torchtitan value: a number, "N%" (mfu), "NGiB" or "NGiB(P%)" (memory, memory_pct).
   g: whether the value holds a 'G'. */
static int lks_titan_value(lks_import_rec *rec, const char *path, const char *l, size_t llen,
                           const char *v, size_t vlen, int g)
{
	const char *gib = NULL;
	double x, pct;
	int64_t dx, dpct;
	int rc;

	for (const char *p = v; g && !gib && (p = memchr(p, 'G', vlen - (size_t)(p - v))); p++)
		if (vlen - (size_t)(p - v) >= 3 && !memcmp(p, "GiB", 3))
			gib = p;
	if (gib) {
		const char *p = gib + 3, *end = v + vlen;

		if ((rc = lks_import_number_dec(v, (size_t)(gib - v), 0, &x, &dx)))
			return lks_import_bad_value(path, rec->line, l, llen, v, vlen, rc);
		if ((rc = lks_import_rec_add_dec(rec, LKS_IMPORT_TORCHTITAN, l, llen, x, dx, path)))
			return rc;
		if (p == end)
			return 0;
		if (end - p < 4 || p[0] != '(' || memcmp(end - 2, "%)", 2))
			return lks_import_bad_value(path, rec->line, l, llen, v, vlen, -1);
		if ((rc = lks_import_number_dec(p + 1, (size_t)(end - 2 - (p + 1)), 0, &pct, &dpct)))
			return lks_import_bad_value(path, rec->line, l, llen, v, vlen, rc);
		return lks_import_rec_add_dec(rec, LKS_IMPORT_TORCHTITAN, "memory_pct", 10, pct, dpct,
		                              path);
	}
	if (vlen && v[vlen - 1] == '%')
		vlen--;
	if ((rc = lks_import_number_dec(v, vlen, 1, &x, &dx)))
		return lks_import_bad_value(path, rec->line, l, llen, v, vlen, rc);
	return lks_import_rec_add_dec(rec, LKS_IMPORT_TORCHTITAN, l, llen, x, dx, path);
}

/* Whether a record at p of the text from s starts where one may: at the start, or after
   blanks after a mark that is no word (the logger's "- ", a wrapper's "] : "), so not
   "validate step:". */
static int lks_titan_mark(const char *s, const char *p)
{
	const char *q = p;

	while (q > s && (q[-1] == ' ' || q[-1] == '\t'))
		q--;
	return q == s || (q < p && !lks_alpha(q[-1]) && !lks_digit(q[-1]));
}

/* Where the record of a torchtitan line starts: the first "step:" where one may
   (lks_titan_mark); or NULL. Found by its ':', of which a line has few. */
static const char *lks_titan_start(const char *s, size_t len)
{
	const char *end = s + len;

	for (const char *c = s; (c = memchr(c, ':', (size_t)(end - c))); c++)
		if (c - s >= 4 && !memcmp(c - 4, "step", 4) && lks_titan_mark(s, c - 4))
			return c - 4;
	return NULL;
}

static int lks_titan_blank(char c) { return c == ' ' || c == '\t' || c == 0; }

/* The bytes a torchtitan label or value ends at, by class: a table of 256, one load a
   byte where the loops below would make three or four compares (a line is mostly labels
   and values). */
enum { LKS_TT_BLANK = 1, LKS_TT_COLON = 2 };
static const unsigned char lks_titan_class[256] = {
	[0] = LKS_TT_BLANK, [' '] = LKS_TT_BLANK, ['\t'] = LKS_TT_BLANK, [':'] = LKS_TT_COLON,
};

/* A torchrun prefix "[roleN]:" after what a log collector put before it, between s and
   the record's start: kubectl logs --prefix's "[pod/NAME/CONTAINER] ", a container
   runtime's "TIME stdout F ", --timestamps' "TIME ". The first such one gives the rank,
   as at the start of the line (lks_import_rank_prefix). */
static void lks_titan_later_rank(const char *s, const char *start, lks_import_rec *rec)
{
	for (const char *q = s; q + 1 < start && (q = memchr(q, ']', (size_t)(start - q))); q++) {
		const char *d = q, *l;
		int r = 0;

		if (q[1] != ':')
			continue;
		while (d > s && lks_digit(d[-1]))
			d--;
		for (l = d; l > s && (lks_alpha(l[-1]) || l[-1] == '_'); l--)
			;
		/* letters, then digits up to LKS_IMPORT_MAX_RANK, right up to the "]:" */
		if (l == d || l == s || l[-1] != '[' || lks_rank_digits(d, &r) != q)
			continue;
		rec->rank = r;
		rec->ranked = 1;
		return;
	}
}

/* The value at v (up to end) read at once where it is a number that reads exactly
   (lks_import_number_prefix) in one of the forms lks_titan_value takes: "N", "N%", "NGiB",
   "NGiB(P%)". The metrics added and where the value ends, or NULL when it is none of these
   (then lks_titan_value reads it, with its errors). */
static const char *lks_titan_quick(lks_import_rec *rec, const char *path, const char *l,
                                   size_t llen, const char *v, const char *end, int *rc)
{
	double x, pct;
	int64_t dx, dpct;
	size_t k = lks_decimal_z(v, 1, &x, &dx), k2;
	const char *q, *u;

	if (!k && !(k = lks_import_decimal_prefix(v, (size_t)(end - v), 1, &x, &dx)))
		return NULL;
	q = v + k;
	if (lks_titan_blank(*q) || (*q == '%' && lks_titan_blank(q[1]))) {
		*rc = lks_import_rec_add_dec(rec, LKS_IMPORT_TORCHTITAN, l, llen, x, dx, path);
		return q + (*q == '%');
	}
	/* memory: no thousands separators before "GiB", as lks_titan_value reads it */
	if (end - q < 3 || memcmp(q, "GiB", 3) || memchr(v, ',', k))
		return NULL;
	if (lks_titan_blank(*(u = q + 3))) {
		*rc = lks_import_rec_add_dec(rec, LKS_IMPORT_TORCHTITAN, l, llen, x, dx, path);
		return u;
	}
	if (*u != '(' || (!(k2 = lks_decimal_z(u + 1, 0, &pct, &dpct))
	                  && !(k2 = lks_import_decimal_prefix(u + 1, (size_t)(end - u - 1), 0, &pct,
	                                                      &dpct)))
	    || end - (u + 1 + k2) < 2 || memcmp(u + 1 + k2, "%)", 2) || !lks_titan_blank(u[k2 + 3]))
		return NULL;
	if (!(*rc = lks_import_rec_add_dec(rec, LKS_IMPORT_TORCHTITAN, l, llen, x, dx, path)))
		*rc = lks_import_rec_add_dec(rec, LKS_IMPORT_TORCHTITAN, "memory_pct", 10, pct, dpct,
		                             path);
	return u + k2 + 3;
}

/* The record of a torchtitan metric line: "step: N" and then "label: value" pairs, blank
   separated. 1 when s is one, 0 when it is no metric line. */
int lks_import_titan_line(const char *s, size_t len, lks_import_rec *rec, const char *path)
{
	const char *p = lks_titan_start(s, len), *end = s + len;
	int rc = 0;

	if (!p)
		return 0;
	if (!rec->ranked)
		lks_titan_later_rank(s, p, rec);
	for (int first = 1;; first = 0) {
		const char *l, *v, *q;
		size_t llen, vlen;
		int g = 0;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		for (l = p; !lks_titan_class[(unsigned char)*p]; p++)
			;
		llen = (size_t)(p - l);
		if (*p != ':')
			return lks_err("'%s':%ld: truncated or bad metric line: '%.*s' has no value", path,
			               rec->line, (int)llen, l), LKS_E_BAD_INPUT;
		for (p++; *p == ' ' || *p == '\t'; p++)
			;
		if (!first && (q = lks_titan_quick(rec, path, l, llen, p, end, &rc))) {
			if (rc)
				return rc;
			p = q;
			continue;
		}
		for (v = p; !(lks_titan_class[(unsigned char)*p] & LKS_TT_BLANK); p++)
			g |= *p == 'G';
		vlen = (size_t)(p - v);
		if (vlen == 0)
			return lks_err("'%s':%ld: truncated metric line: '%.*s' has no value", path,
			               rec->line, (int)llen, l), LKS_E_BAD_INPUT;
		if (first) {
			if (lks_import_step(v, vlen, &rec->step))
				return lks_import_bad_step(path, rec->line, "step", v, vlen);
			continue;
		}
		if (lks_import_unmeasured(LKS_IMPORT_TORCHTITAN, l, llen, v, vlen))
			continue;
		if ((rc = lks_titan_value(rec, path, l, llen, v, vlen, g)))
			return rc;
	}
	return 1;
}

/* ---- the common torchtitan line, read as it comes ----

   Most lines of a torchtitan log have one shape: a "[rankN]:" prefix, the logger's text,
   colour codes before the labels, and the labels of the line before in the same order.
   lks_titan_fast reads such a line once, colour codes and all, and takes what
   lks_import_titan_line would make of it cleaned (lks_strip_ansi), or says it cannot: it
   goes only where that is certain, which is where

   - the line's first escape code is one run of them right before its record's "step:",
     or comes after that "step:", or there is none: the text before the record is then
     the clean line's, byte for byte (a prefix read up to the run sees a letter, 's', in
     the clean line where it sees ESC here, and both stop there alike);
   - after that, each byte it reads as part of a label or a value is no ESC (a code inside
     a token would join what the clean line joins), and each token is followed, after the
     codes there, by what ends it in the clean line: a blank or the end;
   - each label is the one of its place remembered (lks_import_labels), so each metric is
     what lks_import_rec_add takes it for;
   - each value is of the forms lks_titan_quick reads at once.

   Anything else, and any doubt, is the whole reading's (-1): every error and every rare
   line goes that way. tests/import/test_import_read.c and the torchtitan fuzz target hold the
   two readings to the same records, counts and errors. */

/* Past blanks and escape sequences: where the clean line's blanks end. A byte's class
   from a table of 256: one load a byte where there would be three compares. */
static const unsigned char lks_blank_esc[256] = { [' '] = 1, ['\t'] = 1, [0x1b] = 2 };

static inline __attribute__((always_inline)) const char *lks_esc_blanks(const char *r)
{
	for (unsigned c; (c = lks_blank_esc[(unsigned char)*r]);)
		r = c == 1 ? r + 1 : lks_esc_skip(r);
	return r;
}

/* Whether the text at p starts with the entry's label (it holds no NUL: a line that ends
   before its length differs). Up to 8 bytes one masked word, up to 16 two words (the
   first and the last 8: they may overlap); LKS_IMPORT_SLACK covers the text's words. */
static int lks_label_at(const char *p, const lks_import_label *e)
{
	uint64_t a, b, a1, b1;
	size_t n = e->len;

	if (n > 16)
		return !memcmp(p, e->label, n);
	memcpy(&a, p, 8), memcpy(&b, e->label, 8);
	if (n <= 8) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		uint64_t mask = n == 8 ? ~(uint64_t)0 : ((uint64_t)1 << 8 * n) - 1;

		return !((a ^ b) & mask);
#else
		return !memcmp(p, e->label, n);
#endif
	}
	memcpy(&a1, p + n - 8, 8), memcpy(&b1, e->label + n - 8, 8);
	return a == b && a1 == b1;
}

/* What the reader of a file's lines (one thread) learnt for lks_titan_fast: the labels
   remembered, and per place the bytes that went before its label's ':' on a line read,
   from the end of the value before (blanks, colour codes, the label, the ':';
   LKS_TITAN_SEG at most), as a masked word compare. Where a line has the same bytes there,
   they read as they read then: a run of blanks and whole escape sequences, not followed by
   another (the label's first byte is none), then the place's label and its ':' (while the
   labels stay: changes). */
#define LKS_TITAN_SEG 24
_Static_assert(LKS_IMPORT_MAX_METRICS < 256, "a layout's count of metrics fits its 8 bits");
struct lks_titan_memo {
	const lks_import_label *labels;
	const uint64_t *changes;
	uint64_t seen;                    /* *changes when the places were learnt */
	int named;                        /* the record's metrics 0 .. named - 1 hold the names
	                                     and kinds of those places' labels (as of seen): a
	                                     line need write only their values there */
	struct {
		unsigned char b[LKS_TITAN_SEG], mask[LKS_TITAN_SEG];  /* mask 0xff over the bytes */
		size_t len;                   /* 0: none learnt */
	} seg[LKS_IMPORT_MAX_METRICS];
};

/* The entry's metric and the value as the record's place (lks_import_rec_put), where the
   record does not hold its name already (f->named). */
static void lks_fast_put(struct lks_titan_memo *f, lks_import_rec *rec, int place,
                         const lks_import_label *e, double value, int64_t dec)
{
	if (place < f->named) {
		rec->m[place].value = value;
		rec->m[place].dec = dec;
		rec->n = place + 1;
	} else {
		lks_import_rec_put(rec, place, e, value, dec);
	}
}

/* Whether the text at p starts with the bytes of g (LKS_IMPORT_SLACK covers the words). */
static int lks_seg_at(const char *p, const unsigned char *b, const unsigned char *mask)
{
	uint64_t x = 0;

	for (int w = 0; w < LKS_TITAN_SEG; w += 8) {
		uint64_t t, want, m;

		memcpy(&t, p + w, 8), memcpy(&want, b + w, 8), memcpy(&m, mask + w, 8);
		x |= (t ^ want) & m;
	}
	return !x;
}

/* The record of the torchtitan line s (len bytes, LKS_IMPORT_SLACK readable after its
   NUL; rec's line set) as described above: 1 a record, 0 no metric line, -1 not this
   reading's to say (rec is then of no use). */
static int lks_titan_fast(void *state, const char *s, size_t len, lks_import_rec *rec)
{
	struct lks_titan_memo *f = state;
	const lks_import_label *memo = f->labels;
	const char *esc = memchr(s, 0x1b, len), *p, *t, *v, *mark;
	int rank, ranked, place = 0;

	/* a prefix is read up to the first ESC at most: it takes no ESC */
	v = lks_import_rank_prefix(s, &rank, &ranked);
	if ((mark = lks_titan_start(v, (size_t)((esc ? esc : s + len) - v)))) {
		t = mark;
	} else {
		if (!esc)  /* a bar's carriage return: what a terminal shows is the whole way's */
			return memchr(s, '\r', len) ? -1 : 0;
		t = lks_esc_skip(esc);
		if (memcmp(t, "step:", 5) || !lks_titan_mark(v, esc) || t[-1] != 'm')
			return -1;  /* t[-1]: a colour's end, not a cursor's move (lks_visible_start) */
		mark = esc;  /* where the clean line's record starts */
	}
	/* before the record, a carriage return (a bar drawn before it), or another process's
	   prefix (torchrun joins a bar's pieces to the line after them): the whole way's, which
	   reads what a terminal shows; after it, one ends no token and the values say -1 */
	if (memchr(s, '\r', (size_t)(mark - s))
	    || (ranked && lks_import_last_prefix(v, (size_t)(mark - v), &(size_t){ 0 }) >= 0))
		return -1;
	rec->rank = rank;
	rec->ranked = ranked;
	if (!ranked)
		lks_titan_later_rank(v, mark, rec);
	/* the step: digits, up to LKS_IMPORT_MAX_STEP (else the whole way says so) */
	for (p = v = lks_esc_blanks(t + 5); lks_digit(*p); p++)
		;
	if (lks_import_step(v, (size_t)(p - v), &rec->step) || !lks_titan_blank(*lks_esc_skip(p)))
		return -1;
	if (*f->changes != f->seen) {  /* the labels changed: what was learnt of them goes */
		for (int i = 0; i < LKS_IMPORT_MAX_METRICS; i++)
			f->seg[i].len = 0;
		f->named = 0;
		f->seen = *f->changes;
	}
	for (;;) {
		const lks_import_label *e = &memo[place];
		double x, pct;
		int64_t dx, dpct;
		size_t k, k2;
		const char *q, *u;

		if (place < LKS_IMPORT_MAX_METRICS && f->seg[place].len
		    && lks_seg_at(p, f->seg[place].b, f->seg[place].mask)) {
			p += f->seg[place].len;
		} else {
			const char *from = p;

			if (!*(p = lks_esc_blanks(p))) {
				f->named = place > f->named ? place : f->named;
				/* the names of the labels' state seen, places 0 .. place - 1 */
				rec->layout = f->seen ? f->seen << 8 | (uint64_t)place : 0;
				return 1;
			}
			if (place >= LKS_IMPORT_MAX_METRICS || !e->len || !lks_label_at(p, e)
			    || p[e->len] != ':')
				return -1;
			p += e->len + 1;
			if ((size_t)(p - from) <= LKS_TITAN_SEG) {
				size_t n = (size_t)(p - from);

				memset(f->seg[place].b, 0, LKS_TITAN_SEG);
				memcpy(f->seg[place].b, from, n);
				memset(f->seg[place].mask, 0xff, n);
				memset(f->seg[place].mask + n, 0, LKS_TITAN_SEG - n);
				f->seg[place].len = n;
			}
		}
		v = lks_esc_blanks(p);
		if (!(k = lks_decimal_z(v, 1, &x, &dx)))
			return -1;
		q = v + k;
		if (lks_titan_blank(*(p = lks_esc_skip(q + (*q == '%'))))) {  /* N, N% */
			lks_fast_put(f, rec, place++, e, x, dx);
			continue;
		}
		if (memcmp(q, "GiB", 3) || memchr(v, ',', k))
			return -1;
		if (lks_titan_blank(*(p = lks_esc_skip(u = q + 3)))) {  /* NGiB */
			lks_fast_put(f, rec, place++, e, x, dx);
			continue;
		}
		/* NGiB(P%): memory, then memory_pct, remembered at the place after */
		if (*u != '(' || !(k2 = lks_decimal_z(u + 1, 0, &pct, &dpct))
		    || memcmp(u + 1 + k2, "%)", 2) || !lks_titan_blank(*(p = lks_esc_skip(u + k2 + 3)))
		    || place + 1 >= LKS_IMPORT_MAX_METRICS || e[1].len != 10
		    || memcmp(e[1].label, "memory_pct", 10))
			return -1;
		lks_fast_put(f, rec, place++, e, x, dx);
		lks_fast_put(f, rec, place++, e + 1, pct, dpct);
	}
}

/* A reader's state: what it learnt (lks_titan_memo) starts from this thread's labels. */
static void lks_titan_fast_open(void *state)
{
	struct lks_titan_memo *f = state;

	f->labels = lks_import_labels(LKS_IMPORT_TORCHTITAN, &f->changes);
}

/* The whole way read the line: the record's names are its now. */
static void lks_titan_fast_missed(void *state)
{
	((struct lks_titan_memo *)state)->named = 0;
}

static const struct lks_import_quick lks_titan_quick_reader = {
	sizeof(struct lks_titan_memo), lks_titan_fast_open, lks_titan_fast, lks_titan_fast_missed,
};

const lks_import_format lks_import_torchtitan_format = {
	.id = LKS_IMPORT_TORCHTITAN,
	.name = "torchtitan",
	.what = "torchtitan's training log ('step: 1  loss: ...  grad_norm: ...  memory: ...  "
	        "tps: ...')",
	.line = lks_import_titan_line,
	.labels = lks_torchtitan_labels,
	.aliases = lks_torchtitan_aliases,
	.quick = &lks_titan_quick_reader,
};
