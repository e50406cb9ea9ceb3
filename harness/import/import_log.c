/*
 * import_log.c: the text formats of lockstep import (import.h), scanned by hand, no regex:
 *
 *   torchtitan    [rank0]:[titan] 2025-01-01 00:00:00,000 - root - INFO - step:  2  loss:
 *                 6.1098  grad_norm:  4.6416  memory:  2.49GiB(3.14%)  tps: 177,138
 *                 tflops: 96.17  mfu: 9.72%
 *   megatron-log  [2025-01-01 00:00:00] iteration       10/     100 | consumed samples:
 *                 640 | elapsed time per iteration (ms): 812.3 | learning rate:
 *                 1.000000E-04 | global batch size:    64 | lm loss: 1.234567E+00 | loss
 *                 scale: 1.0 | grad norm: 0.123 | number of skipped iterations:   0 |
 *                 number of nan iterations:   0 |
 *
 * (each one line). ANSI colour codes are dropped first and a leading "[rankN]:" gives the
 * rank (0 without one; a megatron line is the job's, rank 0 whoever printed it). A line that does not start a record ("step:" after the logger's
 * " - " or at the start; "iteration N/M |") is not a metric line and is counted as ignored;
 * one that does must be whole: a label without its value, a bad number, or a megatron line
 * not ended by '|' is bad input at its file:line.
 */
#include <ctype.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import.h"
#include "kernels/err.h"

/* Past the escape sequences at r (the line NUL ended, no NUL inside): ESC '[',
   parameters, one final byte 0x40-0x7e; any other ESC with the byte after it. The one
   reading of a sequence: lks_strip_ansi's and lks_titan_fast's. */
static inline __attribute__((always_inline)) const char *lks_esc_skip(const char *r)
{
	while (*r == 0x1b) {
		/* a colour, ESC '[' two digits 'm', the most common at once */
		if (r[1] == '[' && (unsigned)(r[2] - '0') < 10 && (unsigned)(r[3] - '0') < 10
		    && r[4] == 'm') {
			r += 5;
			continue;
		}
		if (*++r == '[')
			for (r++; *r && (unsigned char)(*r - 0x40) > 0x3e; r++)
				;
		if (*r)
			r++;
	}
	return r;
}

/* The len bytes at s (NUL ended there, no NUL before) without their ANSI escape sequences
   (lks_esc_skip), NUL ended: s itself where it has none (most lines of most logs), else
   written into out (len + 8 bytes at least). *n: the length left. The text between two
   sequences moves 8 bytes at a time, its next ESC found among the 8 at once (the zero-byte
   test on x ^ ESC...ESC: its lowest flag is exact, which on a little-endian machine is the
   byte first in memory; elsewhere a byte at a time); all 8 are written, and the bytes past
   the ESC written over after. */
static char *lks_strip_ansi(char *s, size_t len, char *out, size_t *n)
{
	const char *r = memchr(s, 0x1b, len), *end = s + len;
	char *w = out;

	*n = len;
	if (!r)
		return s;
	memcpy(w, s, (size_t)(r - s));
	w += r - s;
	while (r < end) {
		if (*r == 0x1b) {
			r = lks_esc_skip(r);
			continue;
		}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		while (end - r >= 8) {
			const uint64_t ones = 0x0101010101010101u;
			uint64_t x, y, hit;

			memcpy(&x, r, 8);
			memcpy(w, &x, 8);
			y = x ^ (ones * 0x1b);
			if ((hit = (y - ones) & ~y & (ones << 7))) {
				size_t k = (size_t)__builtin_ctzll(hit) / 8;

				w += k;
				r += k;
				break;
			}
			w += 8;
			r += 8;
		}
#endif
		while (r < end && *r != 0x1b)
			*w++ = *r++;
	}
	*w = 0;
	*n = (size_t)(w - out);
	return out;
}

/* ASCII classes, as <ctype.h>'s in the C locale (lockstep sets no other) without a call
   for the table a byte: a prefix is read on every line. */
static int lks_digit(char c) { return (unsigned)(c - '0') < 10; }
static int lks_alpha(char c) { return (unsigned)((c | 0x20) - 'a') < 26; }

/* Digits at p as *rank, then what follows them; NULL where there are none. Digits over
   LKS_IMPORT_MAX_RANK are a rank still, LKS_IMPORT_MAX_RANK + 1, which a line that is a
   record may not name (lks_import_lines_at): stored as rank 0 it would pass unseen. */
static const char *lks_rank_digits(const char *p, int *rank)
{
	long r = 0;

	if (!lks_digit(*p))
		return NULL;
	for (; lks_digit(*p); p++)
		if (r <= LKS_IMPORT_MAX_RANK)  /* no further: it is too big already */
			r = r * 10 + (*p - '0');
	*rank = r > LKS_IMPORT_MAX_RANK ? LKS_IMPORT_MAX_RANK + 1 : (int)r;
	return p;
}

/* The rank a line's prefix names, and the text after it:
   - "[rankN]:", "[defaultN]:": torchrun's --tee prefix, its role's name (letters or '_')
     and the global rank; the line names its rank (*ranked 1);
   - "N: ": srun --label's task number, blanks before it allowed; a torchrun prefix after it
     gives the rank, else N stands for it, but not as a name: a task may run several
     ranks that print alike (*ranked 0);
   - neither: rank 0, *ranked 0. */
static const char *lks_rank_prefix(const char *s, int *rank, int *ranked)
{
	const char *p = s, *q;
	int r;

	*rank = 0;
	*ranked = 0;
	while (*p == ' ')
		p++;
	if ((q = lks_rank_digits(p, &r)) && q[0] == ':' && q[1] == ' ') {
		*rank = r;
		s = q + 2;
	}
	for (p = s + (*s == '['); p > s && (lks_alpha(*p) || *p == '_'); p++)
		;
	if (p > s + 1 && (q = lks_rank_digits(p, &r)) && q[0] == ']' && q[1] == ':') {
		*rank = r;
		*ranked = 1;
		return q + 2;
	}
	return s;
}

/* A performance metric's value "N/A": not measured (lks_import_label_performance). */
static int lks_unmeasured(lks_import_fmt fmt, const char *l, size_t llen, const char *v,
                          size_t vlen)
{
	return vlen == 3 && !memcmp(v, "N/A", 3) && lks_import_label_performance(fmt, l, llen);
}

/* answer: lks_import_number's, which says why where the number is beyond a double. */
static int lks_bad_value(const char *path, long line, const char *label, size_t llen,
                         const char *v, size_t vlen, int answer)
{
	return lks_err("'%s':%ld: bad value '%.*s' of '%.*s'%s", path, line,
	               (int)(vlen > 40 ? 40 : vlen), v, (int)llen, label,
	               lks_import_number_why(answer)), LKS_E_BAD_INPUT;
}

/* A step (what) the log writes as the digits v, over LKS_IMPORT_MAX_STEP or none; as
   jsonl's "step" says it. */
static int lks_bad_step(const char *path, long line, const char *what, const char *v,
                        size_t vlen)
{
	return lks_err("'%s':%ld: bad %s '%.*s': want a whole number 0 to %d", path, line, what,
	               (int)(vlen > 40 ? 40 : vlen), v, LKS_IMPORT_MAX_STEP), LKS_E_BAD_INPUT;
}

/* lks_import_decimal_z, here where a line's values are read: inlined into the readers
   below, for whom commas is a constant. */
static inline __attribute__((always_inline)) size_t lks_decimal_z(const char *s, int commas,
                                                                  double *out, int64_t *dec)
{
	const char *p = s + (*s == '-');
	uint64_t m = 0;
	int digits = 0, frac = 0;
	unsigned d;

#if FLT_EVAL_METHOD != 0
	return 0;
#endif
	for (;;) {  /* the NUL ends the digits: no length to check */
		for (; (d = (unsigned)(*p - '0')) < 10; p++, digits++)
			m = m * 10 + d;
		if (!(commas && *p == ',' && digits && (unsigned)(p[1] - '0') < 10))
			break;
		p++;
	}
	if (*p == '.') {
		const char *f = ++p;

		for (; (d = (unsigned)(*p - '0')) < 10; p++)
			m = m * 10 + d;
		frac = (int)(p - f);
		digits += frac;
	}
	if (digits == 0 || digits > 15 || *p == 'e' || *p == 'E')
		return 0;  /* 15 digits: m < 10^15 < 2^53, so frac <= 15 */
	*out = frac ? (double)m / lks_import_pow10[frac] : (double)m;
	*dec = frac <= 14 && !(m == 0 && *s == '-')
	       ? (int64_t)((uint64_t)(*s == '-' ? -(int64_t)m : (int64_t)m) << 4) | frac
	       : LKS_IMPORT_NO_DEC;
	if (*s == '-')
		*out = -*out;
	return (size_t)(p - s);
}

size_t lks_import_decimal_z(const char *s, int commas, double *out, int64_t *dec)
{
	return lks_decimal_z(s, commas, out, dec);
}

/* One torchtitan value: a number, "N%" (mfu), "NGiB" or "NGiB(P%)" (memory, memory_pct).
   g: whether the value holds a 'G'. */
static int lks_titan_value(lks_import_rec *rec, const char *path, const char *l, size_t llen,
                           const char *v, size_t vlen, int g)
{
	const char *gib = NULL;
	double x, pct;
	int rc;

	for (const char *p = v; g && !gib && (p = memchr(p, 'G', vlen - (size_t)(p - v))); p++)
		if (vlen - (size_t)(p - v) >= 3 && !memcmp(p, "GiB", 3))
			gib = p;
	if (gib) {
		const char *p = gib + 3, *end = v + vlen;

		if ((rc = lks_import_number(v, (size_t)(gib - v), 0, &x)))
			return lks_bad_value(path, rec->line, l, llen, v, vlen, rc);
		if ((rc = lks_import_rec_add(rec, LKS_IMPORT_TORCHTITAN, l, llen, x, path)))
			return rc;
		if (p == end)
			return 0;
		if (end - p < 4 || p[0] != '(' || memcmp(end - 2, "%)", 2))
			return lks_bad_value(path, rec->line, l, llen, v, vlen, -1);
		if ((rc = lks_import_number(p + 1, (size_t)(end - 2 - (p + 1)), 0, &pct)))
			return lks_bad_value(path, rec->line, l, llen, v, vlen, rc);
		return lks_import_rec_add(rec, LKS_IMPORT_TORCHTITAN, "memory_pct", 10, pct, path);
	}
	if (vlen && v[vlen - 1] == '%')
		vlen--;
	if ((rc = lks_import_number(v, vlen, 1, &x)))
		return lks_bad_value(path, rec->line, l, llen, v, vlen, rc);
	return lks_import_rec_add(rec, LKS_IMPORT_TORCHTITAN, l, llen, x, path);
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
   as at the start of the line (lks_rank_prefix). */
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
				return lks_bad_step(path, rec->line, "step", v, vlen);
			continue;
		}
		if (lks_unmeasured(LKS_IMPORT_TORCHTITAN, l, llen, v, vlen))
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
   line goes that way. tests/test_import_read.c and the torchtitan fuzz target hold the
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
static int lks_titan_fast(const char *s, size_t len, lks_import_rec *rec,
                          struct lks_titan_memo *f)
{
	const lks_import_label *memo = f->labels;
	const char *esc = memchr(s, 0x1b, len), *p, *t, *v, *mark;
	int rank, ranked, place = 0;

	/* a prefix is read up to the first ESC at most: it takes no ESC */
	v = lks_rank_prefix(s, &rank, &ranked);
	if ((mark = lks_titan_start(v, (size_t)((esc ? esc : s + len) - v)))) {
		t = mark;
	} else {
		if (!esc)
			return 0;
		t = lks_esc_skip(esc);
		if (memcmp(t, "step:", 5) || !lks_titan_mark(v, esc))
			return -1;
		mark = esc;  /* where the clean line's record starts */
	}
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

/* " iteration N/M |": where the fields start (after that '|'), or NULL; *n, *nlen: N's
   digits, a step however many (the caller reads them: one too big is bad input). */
static const char *lks_mega_start(const char *s, const char **n, size_t *nlen)
{
	for (const char *p = s; (p = strstr(p, "iteration ")); p++) {
		const char *q = p + 10, *d;

		while (*q == ' ')
			q++;
		for (d = q; isdigit((unsigned char)*q); q++)
			;
		if (q == d || *q != '/')
			continue;
		*n = d;
		*nlen = (size_t)(q - d);
		for (q++; *q == ' '; q++)
			;
		while (isdigit((unsigned char)*q))
			q++;
		while (*q == ' ')
			q++;
		if (*q == '|')
			return q + 1;
	}
	return NULL;
}

/* After a number at p (up to ve): its unit, letters or '%', as long as it goes. */
static const char *lks_mega_unit(const char *p, const char *ve)
{
	while (p < ve && (isalpha((unsigned char)*p) || *p == '%'))
		p++;
	return p;
}

/* A performance metric's value of several numbers, as AMD Primus's Megatron writes them: a
   time or throughput and its running average, "X/Y" or "X (avg Y)", or memory as
   "12.3GB/50.1GB/64.0GB/19.2%" (used, free, total, used share); each number may carry a
   unit. X, the first, into *x: it is the step's own (the average is made of the X of the
   lines before; the rest of the memory is the device's). 0, or -1 where v..ve is no such
   value, or the metric is not performance (a numerics value is one number). */
static int lks_mega_several(const char *l, size_t llen, const char *v, const char *ve,
                            double *x)
{
	const lks_import_metric *m = lks_import_metric_label(LKS_IMPORT_MEGATRON_LOG, l, llen);
	size_t k = m && m->kind == LKS_METRIC_PERFORMANCE
	           ? lks_import_number_prefix(v, (size_t)(ve - v), 0, x) : 0;
	const char *p = lks_mega_unit(v + k, ve);
	double more;

	if (!k)
		return -1;
	while (p < ve && *p == '/') {
		if (!(k = lks_import_number_prefix(p + 1, (size_t)(ve - p - 1), 0, &more)))
			return -1;
		p = lks_mega_unit(p + 1 + k, ve);
	}
	if (p < ve && (ve - p < 8 || memcmp(p, " (avg ", 6) || ve[-1] != ')'
	               || lks_import_number(p + 6, (size_t)(ve - 1 - (p + 6)), 0, &more)))
		return -1;
	return 0;
}

int lks_import_mega_line(const char *s, size_t len, lks_import_rec *rec, const char *path)
{
	size_t nlen;
	const char *n, *p = lks_mega_start(s, &n, &nlen), *end;
	int rc;

	if (!p)
		return 0;
	if (lks_import_step(n, nlen, &rec->step))
		return lks_bad_step(path, rec->line, "iteration", n, nlen);
	/* the job's line, printed by its last rank alone (print_rank_last): a "[rank7]:"
	   prefix names the printer, not a rank of its own values */
	rec->rank = 0;
	rec->ranked = 0;
	end = s + len;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	if (end > p && end[-1] != '|')
		return lks_err("'%s':%ld: truncated iteration line (not ended by '|')", path,
		               rec->line), LKS_E_BAD_INPUT;
	while (p < end) {
		const char *bar = memchr(p, '|', (size_t)(end - p)), *colon = NULL, *l, *v, *le, *ve;

		for (const char *q = bar; !colon && q > p;)  /* the last ':': from the short value's end */
			if (*--q == ':')
				colon = q;
		for (l = p; l < bar && *l == ' '; l++)
			;
		p = bar + 1;
		if (l == bar)
			continue;
		if (!colon)
			return lks_err("'%s':%ld: field '%.*s' has no value", path, rec->line,
			               (int)(bar - l), l), LKS_E_BAD_INPUT;
		for (le = colon; le > l && le[-1] == ' '; le--)
			;
		for (v = colon + 1; v < bar && *v == ' '; v++)
			;
		for (ve = bar; ve > v && ve[-1] == ' '; ve--)
			;
		double x;
		int64_t dec;

		if (lks_unmeasured(LKS_IMPORT_MEGATRON_LOG, l, (size_t)(le - l), v, (size_t)(ve - v)))
			continue;
		if ((rc = lks_import_number_dec(v, (size_t)(ve - v), 0, &x, &dec))
		    && lks_mega_several(l, (size_t)(le - l), v, ve, &x))
			return lks_bad_value(path, rec->line, l, (size_t)(le - l), v, (size_t)(ve - v),
			                     rc);
		if ((rc = lks_import_rec_add_dec(rec, LKS_IMPORT_MEGATRON_LOG, l, (size_t)(le - l), x,
		                                 dec, path)))
			return rc;
	}
	return 1;
}

int lks_import_lines(const char *path, FILE *f, lks_import_sink sink, void *arg,
                     lks_import_counts *c, lks_import_line_fn line_fn)
{
	return lks_import_lines_at(path, f, 0, UINT64_MAX, sink, arg, c, line_fn);
}

int lks_import_lines_at(const char *path, FILE *f, long line, uint64_t limit,
                        lks_import_sink sink, void *arg, lks_import_counts *c,
                        lks_import_line_fn line_fn)
{
	lks_import_reader rd = { 0 };
	lks_import_rec *rec = malloc(sizeof(*rec));
	char *clean = malloc(LKS_IMPORT_LINE_MAX + 8);  /* a line without its colour codes */
	/* torchtitan's common lines read at once (lks_titan_fast): by its line function only,
	   so that a test's own function of the same lines reads them the whole way */
	struct lks_titan_memo *memo = line_fn == lks_import_titan_line
	                              ? calloc(1, sizeof(*memo)) : NULL;
	int rc = -1, got;
	char *buf;
	size_t len;

	if (memo)
		memo->labels = lks_import_labels(LKS_IMPORT_TORCHTITAN, &memo->changes);
	if (!rec || !clean || (line_fn == lks_import_titan_line && !memo)
	    || lks_import_reader_open(&rd, path, f, 0)) {
		lks_err("out of memory");
		goto out;
	}
	rd.line = line;
	rd.limit = limit;
	while ((got = lks_import_reader_next(&rd, &buf, &len)) > 0) {
		const char *s;
		int rank, ranked, is;

		c->lines++;
		if (got == 3 && line_fn == lks_import_jsonl_line) {  /* every jsonl line is one */
			lks_err("'%s':%ld: line longer than %d bytes", path, rd.line,
			        LKS_IMPORT_LINE_MAX - 1);
			rc = LKS_E_BAD_INPUT;
			goto out;
		}
		if (got == 3) {  /* longer than any metric line: a progress bar, a dump */
			c->ignored++;
			continue;
		}
		/* a UTF-8 byte order mark (an editor's, or a Windows tool's) is no part of a line:
		   dropped wherever it starts one, so a file cut in parts reads as one reader reads it */
		if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3)) {
			buf += 3;
			len -= 3;
		}
		/* not memset: the record is 2.5 KiB and its metrics are read only up to n */
		rec->n = 0;
		rec->step = 0;
		rec->line = rd.line;
		rec->layout = 0;
		if (!memo || (is = lks_titan_fast(buf, len, rec, memo)) < 0) {
			if (memo)
				memo->named = 0;  /* the record is the whole way's now */
			buf = lks_strip_ansi(buf, len, clean, &len);
			s = lks_rank_prefix(buf, &rank, &ranked);
			rec->n = 0;
			rec->step = 0;
			rec->rank = rank;
			rec->ranked = ranked;
			if ((is = line_fn(s, len - (size_t)(s - buf), rec, path)) < 0) {
				rc = is;
				goto out;
			}
		}
		/* a log line cut short may still read as one with fewer metrics; a JSON object
		   ends at its '}', so a last line without its newline is whole (JSON Lines) */
		if (is && got == 2 && line_fn != lks_import_jsonl_line) {
			lks_err("'%s':%ld: truncated line (no end of line)", path, rd.line);
			rc = LKS_E_BAD_INPUT;
			goto out;
		}
		if (!is) {
			c->ignored++;
			continue;
		}
		/* a prefix's rank over the bound (lks_rank_digits), where jsonl's "rank" is too */
		if (rec->rank > LKS_IMPORT_MAX_RANK) {
			lks_err("'%s':%ld: bad rank in the line's prefix: want a whole number 0 to %d",
			        path, rd.line, LKS_IMPORT_MAX_RANK);
			rc = LKS_E_BAD_INPUT;
			goto out;
		}
		c->records++;
		if ((rc = sink(arg, rec)))
			goto out;
		rc = -1;
	}
	rc = got;
out:
	lks_import_reader_close(&rd);
	free(memo);
	free(clean);
	free(rec);
	return rc;
}

int lks_import_parse_torchtitan(const char *path, FILE *f, lks_import_sink sink, void *arg,
                                lks_import_counts *c)
{
	return lks_import_lines(path, f, sink, arg, c, lks_import_titan_line);
}

int lks_import_parse_megatron_log(const char *path, FILE *f, lks_import_sink sink, void *arg,
                                  lks_import_counts *c)
{
	return lks_import_lines(path, f, sink, arg, c, lks_import_mega_line);
}
