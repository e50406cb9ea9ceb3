/*
 * import_lines.c: the loop of the line formats (import.h, lks_import_lines): each line read
 * (import_reader.c), tried by its format's quick reader where it has one, else cleaned of
 * ANSI colour codes (and of what a progress bar drew before a carriage return or a cursor
 * moved up on it), its "[rankN]:" prefix taken as the rank (0 without one), and handed to
 * the format's line function; each record to the sink. A line that the format's function
 * says is no metric line is counted as ignored. And the pieces of a line every line format
 * reads alike (import_impl.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

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

/* Where the text a terminal shows of the line s (len bytes) begins: after its last carriage
   return, or its last cursor-up (ESC '[' n 'A') or previous-line (ESC '[' n 'F') sequence,
   where a progress bar was drawn before it (tqdm's, with the message written through it:
   Hugging Face's console, Composer's); 0 where there is none (most lines of most logs). */
static size_t lks_visible_start(const char *s, size_t len)
{
	const char *cr = memchr(s, '\r', len), *esc = memchr(s, 0x1b, len), *end = s + len;
	size_t at = 0;

	if (!cr && !esc)
		return 0;
	for (const char *r = cr && (!esc || cr < esc) ? cr : esc; r && r < end;) {
		if (*r == '\r') {
			at = (size_t)(r + 1 - s);
			r++;
		} else if (*r == 0x1b) {
			const char *q = r + 1;

			if (q < end && *q == '[') {
				for (q++; q < end && lks_digit(*q); q++)
					;
				if (q < end && (*q == 'A' || *q == 'F'))
					at = (size_t)(q + 1 - s);
			}
			r = q < end ? q + 1 : end;
		} else {
			r++;
		}
		while (r < end && *r != '\r' && *r != 0x1b)
			r++;
	}
	return at;
}

/* The line's rank, from its prefix (import_impl.h). */
const char *lks_import_rank_prefix(const char *s, int *rank, int *ranked)
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

/* import_impl.h */
long lks_import_last_prefix(const char *s, size_t len, size_t *plen)
{
	const char *end = s + len;
	long last = -1;

	for (const char *p = s; (p = memchr(p, ']', (size_t)(end - p))) && p + 1 < end; p++) {
		const char *q = p, *d;

		if (p[1] != ':')
			continue;
		while (q > s && lks_digit(q[-1]))
			q--;
		for (d = q; q > s && (lks_alpha(q[-1]) || q[-1] == '_'); q--)
			;
		if (d < p && q < d && q > s && q[-1] == '[') {
			last = (long)(q - 1 - s);
			*plen = (size_t)(p + 2 - (q - 1));
		}
	}
	return last;
}

/* Where the text shown of line s (len bytes, NUL ended) begins, with the prefix of the
   process that wrote it in front. torchrun --tee and srun --label prefix each line a
   process writes; torchrun reads a carriage return as a line's end and writes what came
   before it with its prefix and no newline, so a progress bar's pieces and the line after
   them share one line: "[default0]: 88%|#### | 7/8[default0]:{'loss': ...}" (seen with
   torch 2.15's torchrun and transformers 5.24's Trainer). The line is then the last
   prefix's piece; else what a terminal shows (lks_visible_start), with the prefix that
   came before it (srun's, or torchrun's where the carriage return was kept) moved in front
   of it, so that its rank stays what the prefix says. */
static size_t lks_shown_start(char *s, size_t len)
{
	size_t shown = lks_visible_start(s, len), plen = 0;
	int rank, ranked;
	const char *after = lks_import_rank_prefix(s, &rank, &ranked);
	long last = ranked ? lks_import_last_prefix(s, len, &plen) : -1;

	if (last >= 0 && (size_t)last >= shown)
		return (size_t)last;
	if (shown == 0)
		return 0;
	if (last < 0) {  /* srun's label (or none): from the line's start */
		last = 0;
		plen = (size_t)(after - s);
	}
	if (plen == 0)
		return shown;
	memmove(s + shown - plen, s + last, plen);
	return shown - plen;
}

int lks_import_unmeasured(lks_import_fmt fmt, const char *l, size_t llen, const char *v,
                          size_t vlen)
{
	return vlen == 3 && !memcmp(v, "N/A", 3) && lks_import_label_performance(fmt, l, llen);
}

int lks_import_bad_value(const char *path, long line, const char *label, size_t llen,
                         const char *v, size_t vlen, int answer)
{
	return lks_err("'%s':%ld: bad value '%.*s' of '%.*s'%s", path, line,
	               (int)(vlen > 40 ? 40 : vlen), v, (int)llen, label,
	               lks_import_number_why(answer)), LKS_E_BAD_INPUT;
}

int lks_import_bad_step(const char *path, long line, const char *what, const char *v,
                        size_t vlen)
{
	return lks_err("'%s':%ld: bad %s '%.*s': want a whole number 0 to %d", path, line, what,
	               (int)(vlen > 40 ? 40 : vlen), v, LKS_IMPORT_MAX_STEP), LKS_E_BAD_INPUT;
}

size_t lks_import_decimal_z(const char *s, int commas, double *out, int64_t *dec)
{
	return lks_decimal_z(s, commas, out, dec);
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
	/* a format's common lines read at once (its quick reader): by its line function only,
	   so that a test's own function of the same lines reads them the whole way */
	const lks_import_format *fmt = lks_import_format_of_line(line_fn);
	const struct lks_import_quick *quick = fmt ? fmt->quick : NULL;
	void *memo = quick ? calloc(1, quick->size) : NULL;
	int json_lines = fmt && fmt->json_lines;
	int rc = -1, got;
	char *buf;
	size_t len;

	if (rec)
		rec->counted = 0;  /* a line's step is the line's */
	if (memo)
		quick->open(memo);
	if (!rec || !clean || (quick && !memo)
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
		if ((got == 3 || rd.cut) && json_lines) {  /* every jsonl line is one */
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
		if (!memo || (is = quick->line(memo, buf, len, rec)) < 0) {
			size_t shown = lks_shown_start(buf, len);

			if (memo)
				quick->missed(memo);  /* the record is the whole way's now */
			buf = lks_strip_ansi(buf + shown, len - shown, clean, &len);
			s = lks_import_rank_prefix(buf, &rank, &ranked);
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
		if (is && got == 2 && !json_lines) {
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

/* After the number that ends at v + k (up to ve): the letters or '%' of its unit. */
static const char *lks_unit_end(const char *p, const char *ve)
{
	while (p < ve && (lks_alpha(*p) || *p == '%' || *p == '/'))
		p++;
	return p;
}

/* A field's value v..ve: a number with its unit, if any ("148.74ms", "0.01%"), where the
   fast path reads it; else the whole value as lks_import_number reads it ("nan", "inf", as
   Python's format prints a NaN and an infinity; a repr's 17 digits; an exponent past
   10^22); else such a number before its unit. 0 with *x and *dec, or what
   lks_import_number answered (-1: none; _OVER, _UNDER). */
static int lks_field_value(const char *v, const char *ve, double *x, int64_t *dec)
{
	size_t k = lks_import_number_prefix(v, (size_t)(ve - v), 0, x);
	const char *u = ve;
	int answer;

	if (k && lks_unit_end(v + k, ve) == ve)
		return lks_import_number_dec(v, k, 0, x, dec);
	if ((answer = lks_import_number_dec(v, (size_t)(ve - v), 0, x, dec)) != -1)
		return answer;
	while (u > v && (lks_alpha(u[-1]) || u[-1] == '%' || u[-1] == '/'))
		u--;
	/* a unit after a number's last digit (not an exponent's 'e' with no digits) */
	if (u == ve || u == v || !lks_digit(u[-1]) || *u == 'e' || *u == 'E')
		return -1;
	return lks_import_number_dec(v, (size_t)(u - v), 0, x, dec);
}

int lks_import_fields(lks_import_rec *rec, lks_import_fmt fmt, const char *p,
                      const char *end, char delim, char sep, const char *path)
{
	while (p < end) {
		const char *comma = memchr(p, delim, (size_t)(end - p)), *fe = comma ? comma : end;
		const char *l = p, *le, *v, *ve, *s = NULL;
		const lks_import_metric *m;
		double x;
		int64_t dec = LKS_IMPORT_NO_DEC;
		int answer;

		p = comma ? comma + 1 : end;
		while (l < fe && *l == ' ')
			l++;
		for (ve = fe; ve > l && (ve[-1] == ' ' || ve[-1] == '\r'); ve--)
			;
		if (l == ve)
			continue;
		for (const char *q = ve; !s && q > l;)  /* the separator: the value's word before it */
			if (*--q == sep)
				s = q;
		if (!s)
			return lks_err("'%s':%ld: field '%.*s' has no value", path, rec->line,
			               (int)(ve - l), l), LKS_E_BAD_INPUT;
		for (le = s; le > l && le[-1] == ' '; le--)
			;
		for (v = s + 1; v < ve && *v == ' '; v++)
			;
		if (lks_import_unmeasured(fmt, l, (size_t)(le - l), v, (size_t)(ve - v)))
			continue;
		if ((answer = lks_field_value(v, ve, &x, &dec)))
			return lks_import_bad_value(path, rec->line, l, (size_t)(le - l), v,
			                            (size_t)(ve - v), answer);
		/* a performance value below 0 is one not measured yet: nanoGPT's mfu is -100%
		   until its fifth iteration (its running_mfu starts at -1.0) */
		m = lks_import_metric_label(fmt, l, (size_t)(le - l));
		if (x < 0 && m && m->kind == LKS_METRIC_PERFORMANCE)
			continue;
		int rc = lks_import_rec_add_dec(rec, fmt, l, (size_t)(le - l), x, dec, path);

		if (rc)
			return rc;
	}
	return 1;
}

int lks_import_step_fields(lks_import_rec *rec, lks_import_fmt fmt, const char *d,
                           const char *end, char term, char delim, char sep, const char *what,
                           const char *path)
{
	const char *q = d;

	while (q < end && lks_digit(*q))
		q++;
	if (q == d || q == end || *q != term)
		return 0;
	if (lks_import_step(d, (size_t)(q - d), &rec->step))
		return lks_import_bad_step(path, rec->line, what, d, (size_t)(q - d));
	return lks_import_fields(rec, fmt, q + 1, end, delim, sep, path);
}

int lks_import_rec_close(lks_import_rec *rec, int *open, lks_import_sink sink, void *arg,
                         lks_import_counts *c)
{
	int was = *open;

	*open = 0;
	if (!was || !rec->n)
		return 0;
	c->records++;
	return sink(arg, rec);
}

int lks_import_each_line(const char *path, FILE *f, lks_import_counts *c,
                         int (*fn)(void *arg, char *line, size_t len, long at), void *arg)
{
	return lks_import_each_line_at(path, f, 0, c, fn, arg);
}

int lks_import_each_line_at(const char *path, FILE *f, long at, lks_import_counts *c,
                            int (*fn)(void *arg, char *line, size_t len, long at), void *arg)
{
	lks_import_reader rd;
	char *line;
	size_t len;
	off_t pos = ftello(f);
	int rc = 0, got;

	/* the reader of the line formats: a NUL refused at its file:line, as theirs is (fgets
	   and strlen ended the line there: what followed it was lost), a line a progress bar
	   redrew cut to what a terminal shows (lks_import_reader_next) */
	if (lks_import_reader_open(&rd, path, f, 0))
		return -1;
	/* f has read ahead of its descriptor (a format that looked at its first bytes with
	   getc and ungetc: debugmode), or may have (a pipe): read through f */
	if (rd.fd >= 0 && (pos < 0 || lseek(rd.fd, 0, SEEK_CUR) != pos))
		rd.fd = -1;
	rd.line = at;
	while (rc == 0 && (got = lks_import_reader_next(&rd, &line, &len)) > 0) {
		size_t shown;

		c->lines++;
		if (got == 3) {
			lks_err("'%s':%ld: a line longer than %d bytes", path, rd.line,
			        LKS_IMPORT_LINE_MAX - 1);
			rc = LKS_E_BAD_INPUT;
			break;
		}
		while (len && line[len - 1] == '\r')
			line[--len] = 0;
		shown = lks_shown_start(line, len);  /* a progress bar's drawing before it */
		rc = fn(arg, line + shown, len - shown, rd.line);
	}
	if (rc == 0 && got < 0)
		rc = got;
	lks_import_reader_close(&rd);
	return rc;
}
