/*
 * import_block.c: many records of an imported run in one blob, column by column
 * (import_block.h has the layout). The encoder keeps each name's column as it is added
 * (a value and a presence bit per record) and writes the blob in one pass per column;
 * the decoder (import_block_decode.c) reads the columns back and hands the records on in
 * their order.
 *
 * A value is written as a short decimal m / 10^d only when that division gives back its
 * exact bits (checked here, on the machine that writes it; IEEE 754 division is correctly
 * rounded, so every machine reads the same bits back). The d tried first is the one the
 * name took last: a log prints a metric with the same number of decimals on every line,
 * so one multiply, one rounding and one divide usually settle it, and equal d keep the
 * differences of m small.
 *
 * A column some value of which came with the decimal it was written with (a log's text)
 * is printed: its d are then those decimals, which the decoder gives back as the value's
 * precision (lks_metric_row.printed), and a value of it without one is written raw
 * rather than as a decimal looked for, which would claim a precision nobody printed. A
 * column without (an event file's floats) takes any d that gives the bits back: there d
 * is an encoding and says nothing.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/import_rec.h"
#include "harness/store/import_block.h"
#include "harness/store/import_block_impl.h"
#include "kernels/err.h"

struct lks_bcol {
	char name[LKS_METRIC_NAME_MAX];
	lks_metric_kind kind;
	int last_d;                       /* the decimals the last value took */
	double *v;                        /* per record (unset where absent) */
	int64_t *dec;                     /* per record: its decimal as read, or
	                                     LKS_IMPORT_NO_DEC (import_rec.h) */
	unsigned char *has;               /* presence bits, per record */
	int stamp;                        /* 1 + the record that last took this column */
};

struct lks_buf {
	unsigned char *p;
	size_t n, cap;
};

struct lks_block {
	int n;                            /* records */
	int *step, *rank;                 /* (LKS_BLOCK_RECORDS) */
	int max_rank;
	int ncols;
	struct lks_bcol cols[LKS_BLOCK_NAMES];
	int hint[LKS_METRICS_MAX];        /* the column of a record's i-th row last time */
	uint64_t layout;                  /* of the record added last (lks_import_rec), 0:
	                                     none; its metrics' columns are hint[] */
	/* keyed records (version 3): their keys, allocated with the first */
	int keyed;                        /* the records are keyed (0 while there are none) */
	int *ktensor, *kmicro;            /* (LKS_BLOCK_RECORDS) */
	uint64_t *khash;                  /* (LKS_BLOCK_RECORDS) where khas says */
	unsigned char *khas;              /* hash presence bits */
	int nhash;                        /* records with a hash */
	int64_t *prev;                    /* encoding: per rank, the m before */
	int prev_cap;
	struct lks_buf out;
	int encoded;                      /* out holds the records as they are */
};

lks_block *lks_block_new(void)
{
	lks_block *b = calloc(1, sizeof(*b));

	if (!b || !(b->step = malloc(LKS_BLOCK_RECORDS * sizeof(int)))
	    || !(b->rank = malloc(LKS_BLOCK_RECORDS * sizeof(int)))) {
		lks_block_free(b);
		lks_err("out of memory");
		return NULL;
	}
	return b;
}

void lks_block_free(lks_block *b)
{
	if (!b)
		return;
	for (int j = 0; j < LKS_BLOCK_NAMES; j++) {
		free(b->cols[j].v);
		free(b->cols[j].dec);
		free(b->cols[j].has);
	}
	free(b->step);
	free(b->rank);
	free(b->ktensor);
	free(b->kmicro);
	free(b->khash);
	free(b->khas);
	free(b->prev);
	free(b->out.p);
	free(b);
}

void lks_block_reset(lks_block *b)
{
	for (int j = 0; j < b->ncols; j++)
		memset(b->cols[j].has, 0, LKS_BLOCK_RECORDS / 8);
	if (b->khas)
		memset(b->khas, 0, LKS_BLOCK_RECORDS / 8);
	b->keyed = 0;
	b->nhash = 0;
	b->n = 0;
	b->ncols = 0;
	b->max_rank = 0;
	b->encoded = 0;
	b->layout = 0;
}

int lks_block_records(const lks_block *b)
{
	return b->n;
}

void lks_block_steps(const lks_block *b, int *first, int *last)
{
	*first = *last = b->n ? b->step[0] : 0;
	for (int i = 1; i < b->n; i++) {
		if (b->step[i] < *first)
			*first = b->step[i];
		if (b->step[i] > *last)
			*last = b->step[i];
	}
}

/* The column of name, made when new (of kind); -1 when the block has no room for it, -2
   out of memory, -3 a name of another kind, -4 a name empty or too long. */
static int lks_block_col(lks_block *b, const char *name, lks_metric_kind kind, int *hint)
{
	struct lks_bcol *c;
	int j = *hint < b->ncols && !strcmp(b->cols[*hint].name, name) ? *hint : 0;

	for (; j < b->ncols && strcmp(b->cols[j].name, name); j++)
		;
	if (j < b->ncols)
		return b->cols[j].kind == kind ? (*hint = j) : -3;
	if (!*name || strnlen(name, LKS_METRIC_NAME_MAX) == LKS_METRIC_NAME_MAX)
		return -4;  /* checked once, where the name is new to the block */
	if (b->ncols == LKS_BLOCK_NAMES)
		return -1;
	c = &b->cols[b->ncols];
	if (!c->v && (!(c->v = malloc(LKS_BLOCK_RECORDS * sizeof(double)))
	              || !(c->dec = malloc(LKS_BLOCK_RECORDS * sizeof(int64_t)))
	              || !(c->has = calloc(LKS_BLOCK_RECORDS / 8, 1))))
		return -2;
	memset(c->name, 0, sizeof(c->name));  /* NUL padded: lks_block_add_rec's compare */
	strcpy(c->name, name);
	c->kind = kind;
	c->last_d = 0;
	c->stamp = 0;
	return *hint = b->ncols++;
}

/* A value of the record being added (n, b->n) into its column: n given, as the stores may
   alias b->n. */
static void lks_block_put(struct lks_bcol *c, int n, double v, int64_t dec)
{
	c->v[n] = v;
	c->dec[n] = dec;
	c->has[n / 8] |= (unsigned char)(1u << (n % 8));
}

/* The record added: its step and rank. */
static void lks_block_next(lks_block *b, int step, int rank)
{
	b->step[b->n] = step;
	b->rank[b->n] = rank;
	b->encoded = 0;
	if (rank > b->max_rank)
		b->max_rank = rank;
	b->n++;
}

/* Whether b takes a record of (step, rank) with n metrics: 0, 1 when b is full, -1
   (lks_err). */
static int lks_block_room(const lks_block *b, int step, int rank, int n)
{
	if (b->n == LKS_BLOCK_RECORDS)
		return 1;
	if (step < 0 || rank < 0 || rank > LKS_BLOCK_MAX_RANK)
		return lks_err("step %d rank %d: out of range", step, rank);
	if (n > LKS_METRICS_MAX)
		return lks_err("%d metrics in one record (at most %d)", n, LKS_METRICS_MAX);
	return 0;
}

/* Column j taken by the record being added, for its metric name: 0, or -1 (lks_err) where
   the record took it already. */
static int lks_block_mark(lks_block *b, int j, const char *name)
{
	if (b->cols[j].stamp == b->n + 1)
		return lks_err("metric '%s' twice in one record", name);
	b->cols[j].stamp = b->n + 1;
	return 0;
}

/* The column of the record's i-th metric, name of kind, looked for from where the i-th
   was last time, made when new, and marked taken: 0 (*col), 1 when b has no room for a
   new one, -1 (lks_err). */
static int lks_block_take(lks_block *b, const char *name, lks_metric_kind kind, int i, int *col)
{
	int j = lks_block_col(b, name, kind, &b->hint[i]);

	if (j == -2)
		return lks_err("out of memory");
	if (j == -3)
		return lks_err("metric '%s' of two kinds", name);
	if (j == -4)
		return lks_err("bad metric name '%.*s'", LKS_METRIC_NAME_MAX, name);
	if (j < 0)
		return 1;  /* columns made here stay, empty: harmless */
	*col = j;
	return lks_block_mark(b, j, name);
}

/* x rounded to the nearest integer, ties to even, as nearbyint in the default rounding
   mode, without its call: below 2^52 in magnitude, adding and taking away 2^52 leaves
   exactly the rounded integer (the sum has no bits below 1); from 2^52 on every double is
   an integer already. The sign is put back after, so -0.3 gives -0. */
static double lks_round(double x)
{
	const double two52 = 4503599627370496.0;
	double a = fabs(x);

	if (!(a < two52))
		return x;
	a = (a + two52) - two52;
	return x < 0 ? -a : a;
}

/* v as the decimal of d places it was written with (lks_import_rec's dec), d < 0 none:
   the integer nearest v 10^d, or one beside it where that product was rounded across
   the half (m up to 2^53: the product's error is under 2), whichever gives v back; else
   none. */
static int64_t lks_block_dec_at(double v, int d)
{
	double r;

	if (d < 0 || d > LKS_DEC_MAX || !isfinite(v) || (v == 0 && signbit(v)))
		return LKS_IMPORT_NO_DEC;
	r = lks_round(v * lks_import_pow10[d]);
	for (int k = 0; k < 3; k++) {
		double m = r + (k == 1 ? -1 : k == 2 ? 1 : 0);

		if (fabs(m) < LKS_M_LIMIT && (d ? m / lks_import_pow10[d] : m) == v)
			return (int64_t)((uint64_t)(int64_t)m << 4) | d;
	}
	return LKS_IMPORT_NO_DEC;
}

int lks_block_add(lks_block *b, int step, int rank, const lks_metric_row *rows, int n)
{
	int col[LKS_METRICS_MAX], rc;

	if ((rc = lks_block_room(b, step, rank, n)))
		return rc;
	b->layout = 0;  /* the hints change */
	for (int i = 0; i < n; i++) {
		if (!rows[i].name)
			return lks_err("a metric without a name");
		if ((rc = lks_block_take(b, rows[i].name, rows[i].kind, i, &col[i])))
			return rc;
	}
	for (int i = 0, at = b->n; i < n; i++)
		lks_block_put(&b->cols[col[i]], at, rows[i].value,
		              lks_block_dec_at(rows[i].value, rows[i].printed - 1));
	lks_block_next(b, step, rank);
	return 0;
}

/* Whether the column's name is name, both NUL padded to 16 bytes (a longer one's first 16
   bytes are all of it but the rest): 16 bytes at once. */
static int lks_block_same16(const char *a, const char *b)
{
	uint64_t a0, a1, b0, b1;

	memcpy(&a0, a, 8), memcpy(&a1, a + 8, 8);
	memcpy(&b0, b, 8), memcpy(&b1, b + 8, 8);
	return a0 == b0 && a1 == b1 && (!a[15] || !strcmp(a + 16, b + 16));
}

int lks_block_add_rec(lks_block *b, const lks_import_rec *rec)
{
	int col[LKS_METRICS_MAX], n = rec->n, rc;

	if ((rc = lks_block_room(b, rec->step, rec->rank, n)))
		return rc;
	if (b->keyed)
		return lks_err("a step's record into a block of tensor records");
	/* the layout of the record before: its names' columns, found and checked then (a
	   block's columns stay while it fills), no name twice */
	if (rec->layout && rec->layout == b->layout) {
		for (int i = 0, at = b->n; i < n; i++)
			lks_block_put(&b->cols[b->hint[i]], at, rec->m[i].value, rec->m[i].dec);
		lks_block_next(b, rec->step, rec->rank);
		return 0;
	}
	b->layout = 0;
	for (int i = 0; i < n; i++) {
		const char *name = rec->m[i].name;
		int h = b->hint[i];

		/* a log writes its names in the same order every line: the hint's column */
		if (h < b->ncols && lks_block_same16(b->cols[h].name, name)
		    && b->cols[h].kind == rec->m[i].kind)
			rc = lks_block_mark(b, col[i] = h, name);
		else
			rc = lks_block_take(b, name, rec->m[i].kind, i, &col[i]);
		if (rc)
			return rc;
	}
	for (int i = 0, at = b->n; i < n; i++)
		lks_block_put(&b->cols[col[i]], at, rec->m[i].value, rec->m[i].dec);
	b->layout = rec->layout;  /* hint[i] is col[i]: found there, or set by lks_block_take */
	lks_block_next(b, rec->step, rec->rank);
	return 0;
}

int lks_block_add_keyed(lks_block *b, const lks_import_rec *rec, const lks_block_key *key)
{
	int at = b->n, rc;

	if (b->n && !b->keyed)
		return lks_err("a tensor record into a block of steps' records");
	if (key->tensor < 0 || key->micro < -1)
		return lks_err("tensor %d microbatch %d: out of range", key->tensor, key->micro);
	if (!b->ktensor && (!(b->ktensor = malloc(LKS_BLOCK_RECORDS * sizeof(int)))
	                    || !(b->kmicro = malloc(LKS_BLOCK_RECORDS * sizeof(int)))
	                    || !(b->khash = malloc(LKS_BLOCK_RECORDS * sizeof(uint64_t)))
	                    || !(b->khas = calloc(LKS_BLOCK_RECORDS / 8, 1))))
		return lks_err("out of memory");
	b->keyed = 0;  /* lks_block_add_rec takes it as a step's record */
	rc = lks_block_add_rec(b, rec);
	b->keyed = 1;
	if (rc)
		return rc;
	b->ktensor[at] = key->tensor;
	b->kmicro[at] = key->micro;
	if (key->has_hash) {
		b->khash[at] = key->hash;
		b->khas[at / 8] |= (unsigned char)(1u << (at % 8));
		b->nhash++;
	}
	return 0;
}

/* ---- the bytes ---- */

static int lks_buf_room(struct lks_buf *o, size_t more)
{
	if (o->n + more > o->cap) {
		size_t cap = o->cap ? o->cap : 65536;
		unsigned char *p;

		while (cap < o->n + more)
			cap *= 2;
		if (!(p = realloc(o->p, cap)))
			return lks_err("out of memory");
		o->p = p;
		o->cap = cap;
	}
	return 0;
}

/* x as a varint at q (room made by the caller: at most 10 bytes); where it ends. */
static unsigned char *lks_varint_at(unsigned char *q, uint64_t x)
{
	while (x >= 0x80) {
		*q++ = (unsigned char)(x | 0x80);
		x >>= 7;
	}
	*q++ = (unsigned char)x;
	return q;
}

/* Written through a pointer of its own: a store through o->p may alias o->n, which would
   be read back every byte. */
static void lks_put_varint(struct lks_buf *o, uint64_t x)
{
	o->n = (size_t)(lks_varint_at(o->p + o->n, x) - o->p);
}

static int lks_same_bits(double a, double b)
{
	return !memcmp(&a, &b, sizeof(a));
}

/* v as m / 10^d (the short form): d, or LKS_DEC_RAW. try_d first. */
static int lks_decimal(double v, int try_d, int64_t *m)
{
	if (!(fabs(v) < LKS_M_LIMIT) || (v == 0 && signbit(v)))
		return LKS_DEC_RAW;  /* NaN, inf, too large, -0 */
	for (int k = -1; k <= LKS_DEC_MAX; k++) {
		int d = k < 0 ? try_d : k;
		double x = v * lks_import_pow10[d], r = lks_round(x);

		if (k == try_d || !(fabs(r) < LKS_M_LIMIT))
			continue;
		if (lks_same_bits(d ? r / lks_import_pow10[d] : r, v)) {
			*m = (int64_t)r;
			return d;
		}
	}
	return LKS_DEC_RAW;
}

/* v's 8 bytes at q, little-endian (room made by the caller); where they end. */
static unsigned char *lks_raw_at(unsigned char *q, double v)
{
	uint64_t u;

	if (isnan(v))
		v = NAN;  /* one NaN, as everywhere in the store */
	memcpy(&u, &v, sizeof(u));
	for (int i = 0; i < 8; i++)
		*q++ = (unsigned char)(u >> (8 * i));
	return q;
}

/* Whether a value of column c came with its decimal as written (lks_block_add_rec's dec):
   the column is printed. */
static int lks_col_printed(const lks_block *b, const struct lks_bcol *c)
{
	for (int i = 0; i < b->n; i++)
		if (c->dec[i] != LKS_IMPORT_NO_DEC && (c->has[i / 8] >> (i % 8) & 1))
			return 1;
	return 0;
}

static int lks_encode_col(lks_block *b, struct lks_bcol *c)
{
	int all = 1, full = b->n / 8, printed = lks_col_printed(b, c);

	for (int k = 0; all && k < full; k++)  /* every record has it: its bytes all ones */
		all = c->has[k] == 0xff;
	for (int i = 8 * full; all && i < b->n; i++)
		all = c->has[i / 8] >> (i % 8) & 1;
	if (lks_buf_room(&b->out, 1 + (size_t)b->n / 8 + 1 + (size_t)b->n * 10))
		return -1;
	b->out.p[b->out.n++] = !all;
	if (!all) {
		memcpy(b->out.p + b->out.n, c->has, (size_t)(b->n + 7) / 8);
		b->out.n += (size_t)(b->n + 7) / 8;
	}
	memset(b->prev, 0, (size_t)(b->max_rank + 1) * sizeof(*b->prev));
	/* the loop's arrays, state and place in the output in locals: the bytes written may
	   alias any of b's or c's fields, which would otherwise be read again after every
	   byte */
	{
		const unsigned char *has = c->has;
		const double *v = c->v;
		const int64_t *dec = c->dec;
		const int *rank = b->rank;
		int64_t *prev = b->prev;
		int n = b->n, last_d = c->last_d, skip = 0;
		unsigned char *w = b->out.p + b->out.n;

		for (int i = 0; i < n; i++) {
			int64_t m = 0;
			int d;

			if (!all && !(has[i / 8] >> (i % 8) & 1))
				continue;
			/* the decimal as read, where it reads back as the value (as it should:
			   import_rec.h); else one looked for */
			d = (int)(dec[i] & 15);
			m = dec[i] >> 4;  /* floor(dec / 16): GCC and Clang shift a signed value
			                     arithmetically (C leaves it to the compiler) */
			if (d == LKS_DEC_RAW || !(fabs((double)m) < LKS_M_LIMIT)
			    || !lks_same_bits(d ? (double)m / lks_import_pow10[d] : (double)m, v[i])) {
				/* a search that found none (an event file's float32: 15 tries) is not
				   made again for the next 63 values, which are written raw: exact all
				   the same, and a column that turns short is found within 64 */
				if (printed) {
					d = LKS_DEC_RAW;
				} else if (skip > 0) {
					d = LKS_DEC_RAW;
					skip--;
				} else if ((d = lks_decimal(v[i], last_d, &m)) == LKS_DEC_RAW) {
					skip = 63;
				}
			}
			if (d == LKS_DEC_RAW) {
				*w++ = LKS_DEC_RAW;
				w = lks_raw_at(w, v[i]);
				continue;
			}
			last_d = d;
			w = lks_varint_at(w, lks_zz(m - prev[rank[i]]) << 4 | (uint64_t)d);
			prev[rank[i]] = m;
		}
		c->last_d = last_d;
		b->out.n = (size_t)(w - b->out.p);
	}
	return 0;
}

/* The keys of keyed records (import_block.h, version 3). */
static int lks_encode_keys(lks_block *b)
{
	unsigned char *w;
	int mode = b->nhash == b->n ? 0 : b->nhash ? 1 : 2;
	int64_t prev_t = 0, prev_m = 0;

	if (lks_buf_room(&b->out, (size_t)b->n * 28 + (size_t)b->n / 8 + 2))
		return -1;
	w = b->out.p + b->out.n;
	for (int i = 0; i < b->n; i++) {
		w = lks_varint_at(w, lks_zz((int64_t)b->ktensor[i] - prev_t));
		prev_t = b->ktensor[i];
	}
	for (int i = 0; i < b->n; i++) {
		w = lks_varint_at(w, lks_zz((int64_t)b->kmicro[i] - prev_m));
		prev_m = b->kmicro[i];
	}
	*w++ = (unsigned char)mode;
	if (mode == 1) {
		memcpy(w, b->khas, (size_t)(b->n + 7) / 8);
		w += (b->n + 7) / 8;
	}
	for (int i = 0; mode < 2 && i < b->n; i++)
		if (b->khas[i / 8] >> (i % 8) & 1)
			for (int k = 0; k < 8; k++)
				*w++ = (unsigned char)(b->khash[i] >> (8 * k));
	b->out.n = (size_t)(w - b->out.p);
	return 0;
}

int lks_block_encode(lks_block *b, const unsigned char **data, size_t *len)
{
	size_t head = 32;
	int prev = 0;

	if (b->encoded) {  /* encoded before a lock is taken, stored under it (import.c) */
		*data = b->out.p;
		*len = b->out.n;
		return 0;
	}
	if (b->max_rank + 1 > b->prev_cap) {
		int64_t *p = realloc(b->prev, (size_t)(b->max_rank + 1) * sizeof(*p));

		if (!p)
			return lks_err("out of memory");
		b->prev = p;
		b->prev_cap = b->max_rank + 1;
	}
	for (int j = 0; j < b->ncols; j++)
		head += strlen(b->cols[j].name) + 2;
	b->out.n = 0;
	if (lks_buf_room(&b->out, head + (size_t)b->n * 20))
		return -1;
	lks_put_varint(&b->out, b->keyed ? LKS_BLOCK_VERSION_KEYED : LKS_BLOCK_VERSION);
	lks_put_varint(&b->out, (uint64_t)b->n);
	lks_put_varint(&b->out, (uint64_t)b->ncols);
	for (int j = 0; j < b->ncols; j++) {
		size_t nl = strlen(b->cols[j].name) + 1;

		b->out.p[b->out.n++] = (unsigned char)((b->cols[j].kind == LKS_METRIC_PERFORMANCE
		                                        ? LKS_KIND_PERFORMANCE : 0)
		                                       | (lks_col_printed(b, &b->cols[j])
		                                          ? LKS_KIND_PRINTED : 0));
		memcpy(b->out.p + b->out.n, b->cols[j].name, nl);
		b->out.n += nl;
	}
	{
		unsigned char *w = b->out.p + b->out.n;  /* as in lks_encode_col */

		for (int i = 0; i < b->n; i++)
			w = lks_varint_at(w, (uint64_t)b->rank[i]);
		for (int i = 0; i < b->n; i++) {
			w = lks_varint_at(w, lks_zz((int64_t)b->step[i] - prev));
			prev = b->step[i];
		}
		b->out.n = (size_t)(w - b->out.p);
	}
	if (b->keyed && lks_encode_keys(b))
		return -1;
	for (int j = 0; j < b->ncols; j++)
		if (lks_encode_col(b, &b->cols[j]))
			return -1;
	b->encoded = 1;
	*data = b->out.p;
	*len = b->out.n;
	return 0;
}
