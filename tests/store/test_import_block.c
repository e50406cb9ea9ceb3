/*
 * test_import_block.c: the blocks an imported run's records are stored in
 * (harness/store/import_block.h): every value reads back with its bits, whatever it is;
 * records keep their order, ranks, steps and metric sets; a full block says so; a damaged
 * blob is refused, never read past its end. Records as lockstep import reads them
 * (lks_block_add_rec) read back the same, whatever decimal they come with.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import.h"
#include "harness/store/import_block.h"
#include "kernels/err.h"

#define RECS 3000
#define NAMES 5

static const char *const names[NAMES] = { "loss", "grad_norm", "tps", "lr", "odd" };

static uint64_t next(uint64_t *r)
{
	*r = *r * 6364136223846793005u + 1442695040888963407u;
	return *r >> 11;
}

/* Values of every sort: decimals a log prints, random bits (NaNs, infinities, subnormals
   among them), signed zeros, integers near 2^53, extremes. */
static double value(uint64_t *r, int i)
{
	static const double special[] = { 0.0, -0.0, INFINITY, -INFINITY, DBL_MAX, -DBL_MIN,
	                                  4.9406564584124654e-324, 9007199254740991.0,
	                                  9007199254740993.0, -9007199254740992.0, 1e-14, 0.1 };
	uint64_t u = next(r), bits;
	double v;

	switch (u % 5) {
	case 0:  /* as printf %.Nf prints it, N decimals, read back by strtod */
	{
		char buf[64];

		snprintf(buf, sizeof(buf), "%.*f", (int)(u >> 3) % 9, (double)(next(r) % 100000000) /
		         (double)(1 + next(r) % 1000) * ((u >> 40) & 1 ? -1 : 1));
		return strtod(buf, NULL);
	}
	case 1:
		bits = next(r) << 11 ^ next(r);
		memcpy(&v, &bits, sizeof(v));
		return v;
	case 2:
		return special[(size_t)(u >> 3) % (sizeof(special) / sizeof(special[0]))];
	case 3:
		return (double)(int64_t)(next(r) % 2000000) - 1000000;  /* integers */
	default:
		return 10.0 / (1 + 0.001 * i);  /* a loss curve */
	}
}

struct want {
	int step[RECS], rank[RECS], n[RECS];
	const char *name[RECS][NAMES];
	double v[RECS][NAMES];
	int at;
};

static int same_bits(double a, double b)
{
	if (isnan(a) && isnan(b))
		return 1;  /* every NaN is stored as one */
	return !memcmp(&a, &b, sizeof(a));
}

static int expect_record(void *arg, int step, int rank, const lks_metric_row *rows, int n)
{
	struct want *w = arg;
	int i = w->at++;

	cr_assert_lt(i, RECS);
	cr_assert_eq(step, w->step[i], "record %d", i);
	cr_assert_eq(rank, w->rank[i], "record %d", i);
	cr_assert_eq(n, w->n[i], "record %d", i);
	for (int k = 0; k < n; k++) {
		int j = 0;

		while (j < n && strcmp(w->name[i][j], rows[k].name))
			j++;
		cr_assert_lt(j, n, "record %d: '%s' was not in it", i, rows[k].name);
		cr_assert(same_bits(rows[k].value, w->v[i][j]), "record %d, %s: %a read back as %a", i,
		          rows[k].name, w->v[i][j], rows[k].value);
		cr_assert_eq(rows[k].step, step);
		cr_assert_eq(rows[k].rank, rank);
		cr_assert_eq(rows[k].kind, !strcmp(rows[k].name, "tps") ? LKS_METRIC_PERFORMANCE
		                                                        : LKS_METRIC_NUMERICS);
	}
	return 0;
}

/* Records of 1 to 8 ranks, steps forward and back, each with a random subset of the names
   in a random order, through the layout and back. */
Test(import_block, every_value_reads_back_with_its_bits_in_record_order)
{
	static struct want w;
	lks_block *b = lks_block_new();
	uint64_t r = 42;
	const unsigned char *data;
	size_t len;
	int first, last, step = 0;

	cr_assert_not_null(b);
	for (int i = 0; i < RECS; i++) {
		lks_metric_row rows[NAMES];
		int n = (int)(next(&r) % (NAMES + 1)), start = (int)(next(&r) % NAMES);

		step += (int)(next(&r) % 4) - 1;  /* a step may come again, or go back */
		if (step < 0)
			step = 0;
		w.step[i] = step;
		w.rank[i] = (int)(next(&r) % 8);
		w.n[i] = n;
		for (int k = 0; k < n; k++) {
			const char *name = names[(start + k) % NAMES];

			w.name[i][k] = name;
			w.v[i][k] = value(&r, i);
			rows[k] = (lks_metric_row){ -1, -1, name, !strcmp(name, "tps") ?
			                            LKS_METRIC_PERFORMANCE : LKS_METRIC_NUMERICS, w.v[i][k], 0 };
		}
		cr_assert_eq(lks_block_add(b, w.step[i], w.rank[i], rows, n), 0, "%s", lks_errmsg());
	}
	cr_assert_eq(lks_block_records(b), RECS);
	lks_block_steps(b, &first, &last);
	for (int i = 0; i < RECS; i++)
		cr_assert(w.step[i] >= first && w.step[i] <= last);
	cr_assert_eq(lks_block_encode(b, &data, &len), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_block_decode(data, len, expect_record, &w), 0, "%s", lks_errmsg());
	cr_assert_eq(w.at, RECS);
	lks_block_free(b);
}

/* A log's lines (a loss curve, a constant, a counter, 8 ranks) take a few bytes each: the
   reason blocks exist. 16 bytes a record for 4 metrics is far above what the short
   decimals and differences give (about 6) and far below raw doubles (over 32). */
Test(import_block, a_logs_records_take_a_few_bytes_each)
{
	lks_block *b = lks_block_new();
	const unsigned char *data;
	size_t len;
	int n = 0;

	for (int step = 1; n < 8000; step++)
		for (int rank = 0; rank < 8; rank++, n++) {
			char loss[32];
			lks_metric_row rows[4] = {
				{ 0, 0, "loss", LKS_METRIC_NUMERICS, 0, 0 },
				{ 0, 0, "grad_norm", LKS_METRIC_NUMERICS, 1.0 + 0.01 * rank, 0 },
				{ 0, 0, "memory", LKS_METRIC_PERFORMANCE, 2.47, 0 },
				{ 0, 0, "tps", LKS_METRIC_PERFORMANCE, 177001 + step, 0 },
			};

			snprintf(loss, sizeof(loss), "%.4f", 10.0 / (1 + 0.001 * step));
			rows[0].value = strtod(loss, NULL);
			cr_assert_eq(lks_block_add(b, step, rank, rows, 4), 0, "%s", lks_errmsg());
		}
	cr_assert_eq(lks_block_encode(b, &data, &len), 0);
	cr_assert_lt(len, 16 * 8000, "%zu bytes for 8000 records", len);
	lks_block_free(b);
}

static int count_records(void *arg, int step, int rank, const lks_metric_row *rows, int n)
{
	(void)step, (void)rank, (void)rows, (void)n;
	++*(int *)arg;
	return 0;
}

/* A block takes LKS_BLOCK_RECORDS records, and LKS_BLOCK_NAMES names; past either it says
   it is full (1) and keeps what it has. */
Test(import_block, a_full_block_says_so_and_keeps_its_records)
{
	lks_block *b = lks_block_new();
	lks_metric_row row = { 0, 0, "loss", LKS_METRIC_NUMERICS, 1.5, 0 };
	const unsigned char *data;
	char name[32];
	size_t len;
	int n = 0;

	for (int i = 0; i < LKS_BLOCK_RECORDS; i++)
		cr_assert_eq(lks_block_add(b, i, 0, &row, 1), 0);
	cr_assert_eq(lks_block_add(b, LKS_BLOCK_RECORDS, 0, &row, 1), 1);
	cr_assert_eq(lks_block_encode(b, &data, &len), 0);
	cr_assert_eq(lks_block_decode(data, len, count_records, &n), 0, "%s", lks_errmsg());
	cr_assert_eq(n, LKS_BLOCK_RECORDS);
	lks_block_reset(b);
	for (int i = 0; i < LKS_BLOCK_NAMES; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		row.name = name;
		cr_assert_eq(lks_block_add(b, i, 0, &row, 1), 0, "%s", lks_errmsg());
	}
	snprintf(name, sizeof(name), "one_more");
	cr_assert_eq(lks_block_add(b, 0, 1, &row, 1), 1);
	cr_assert_eq(lks_block_records(b), LKS_BLOCK_NAMES);
	lks_block_free(b);
}

/* A blob cut short anywhere, or with a byte changed in its header, is refused with a
   message (under ASan: never read past its end). */
Test(import_block, a_damaged_blob_is_refused)
{
	lks_block *b = lks_block_new();
	lks_metric_row rows[2] = { { 0, 0, "loss", LKS_METRIC_NUMERICS, 2.5, 0 },
	                           { 0, 0, "x", LKS_METRIC_NUMERICS, NAN, 0 } };
	const unsigned char *data;
	unsigned char *copy;
	size_t len;
	int n;

	for (int i = 0; i < 50; i++)
		cr_assert_eq(lks_block_add(b, i, i % 3, rows, 1 + i % 2), 0);
	cr_assert_eq(lks_block_encode(b, &data, &len), 0);
	for (size_t cut = 0; cut < len; cut++) {
		cr_assert(copy = malloc(cut ? cut : 1));
		memcpy(copy, data, cut);
		n = 0;
		cr_assert_eq(lks_block_decode(copy, cut, count_records, &n), -1, "cut at %zu", cut);
		cr_assert_eq(n, 0, "records handed on from a blob cut at %zu", cut);
		free(copy);
	}
	cr_assert(copy = malloc(len));
	memcpy(copy, data, len);
	copy[0] = 7;  /* a layout version this build does not know */
	cr_assert_eq(lks_block_decode(copy, len, count_records, &n), -1);
	cr_assert(strstr(lks_errmsg(), "unknown layout"), "%s", lks_errmsg());
	free(copy);
	lks_block_free(b);
}

/* The steps row of a record: the canonical metrics in their columns, iteration time in
   seconds, the numerics not finite counted (performance ones not). */
Test(import_block, a_record_stands_for_its_steps_row)
{
	lks_metric_row rows[] = { { 0, 0, "loss", LKS_METRIC_NUMERICS, 2.5, 0 },
	                          { 0, 0, "lr", LKS_METRIC_NUMERICS, 1e-4, 0 },
	                          { 0, 0, "num_zeros", LKS_METRIC_NUMERICS, INFINITY, 0 },
	                          { 0, 0, "iteration_time", LKS_METRIC_PERFORMANCE, 812.5, 0 },
	                          { 0, 0, "tps", LKS_METRIC_PERFORMANCE, NAN, 0 } };
	lks_step_row s;

	lks_block_step_row(7, 3, rows, 5, &s);
	cr_assert_eq(s.step, 7);
	cr_assert_eq(s.rank, 3);
	cr_assert_eq(s.loss, 2.5);
	cr_assert_eq(s.lr, 1e-4);
	cr_assert(isnan(s.grad_norm), "no grad_norm: NaN");
	cr_assert_eq(s.step_time, 0.8125);
	cr_assert_eq(s.nonfinite, 1);
	/* Megatron's golden values hold the time in seconds, as it is; without any, NaN */
	rows[3] = (lks_metric_row){ 0, 0, "iteration_time_s", LKS_METRIC_PERFORMANCE, 12.8, 0 };
	lks_block_step_row(7, 3, rows, 5, &s);
	cr_assert_eq(s.step_time, 12.8);
	lks_block_step_row(7, 3, rows, 3, &s);
	cr_assert(isnan(s.step_time));
}

/* A name empty, too long, missing, or met before with the other kind is refused, and the
   block keeps what it had. */
Test(import_block, a_bad_name_is_refused)
{
	lks_block *b = lks_block_new();
	char longest[LKS_METRIC_NAME_MAX + 1];
	lks_metric_row row = { 0, 0, "loss", LKS_METRIC_NUMERICS, 1.0, 0 };

	cr_assert_eq(lks_block_add(b, 1, 0, &row, 1), 0);
	memset(longest, 'x', LKS_METRIC_NAME_MAX);
	longest[LKS_METRIC_NAME_MAX] = 0;
	row.name = longest;
	cr_assert_eq(lks_block_add(b, 2, 0, &row, 1), -1);
	longest[LKS_METRIC_NAME_MAX - 1] = 0;  /* the longest that is a name */
	cr_assert_eq(lks_block_add(b, 2, 0, &row, 1), 0, "%s", lks_errmsg());
	row.name = "";
	cr_assert_eq(lks_block_add(b, 3, 0, &row, 1), -1);
	row.name = NULL;
	cr_assert_eq(lks_block_add(b, 3, 0, &row, 1), -1);
	row.name = "loss";
	row.kind = LKS_METRIC_PERFORMANCE;
	cr_assert_eq(lks_block_add(b, 3, 0, &row, 1), -1);
	cr_assert(strstr(lks_errmsg(), "two kinds"), "%s", lks_errmsg());
	cr_assert_eq(lks_block_records(b), 2);
	lks_block_free(b);
}

/* Records as lockstep import hands them on (lks_block_add_rec): each value with the
   decimal it was read as, or a wrong one, or none. The blob reads back every value with its
   bits whatever the decimal said (a wrong one is checked, not trusted), and names that
   agree in their first 16 bytes are two columns. The same values added as rows
   (lks_block_add, no decimals) read back the same. */
Test(import_block, records_with_their_decimals_read_back_as_records_without)
{
	static struct want w;
	static const char *const long_names[NAMES] = {
		"loss", "a_name_of_sixteen", "a_name_of_sixteen_and_more", "a_name_of_sixteen_or_so",
		"exactly_15_byte",
	};
	lks_block *b = lks_block_new(), *plain = lks_block_new();
	lks_import_rec *rec = calloc(1, sizeof(*rec));
	uint64_t r = 7;
	const unsigned char *data;
	size_t len;
	int told = 0, wrong = 0;

	cr_assert(b && plain && rec);
	for (int i = 0; i < RECS; i++) {
		lks_metric_row rows[NAMES];
		int n = 1 + (int)(next(&r) % NAMES);

		w.step[i] = i / 4;
		w.rank[i] = i % 4;
		w.n[i] = n;
		rec->n = 0;
		rec->line = i + 1;
		rec->step = w.step[i];
		rec->rank = w.rank[i];
		for (int k = 0; k < n; k++) {
			int64_t m = (int64_t)(next(&r) % 2000000) - 1000000, dec;
			int d = (int)(next(&r) % 15), how = (int)(next(&r) % 4);
			double v = d ? (double)m / pow(10.0, d) : (double)m;  /* 10^d exact: d <= 14 */

			if (how == 0) {          /* no decimal */
				dec = LKS_IMPORT_NO_DEC;
			} else if (how == 1) {   /* a wrong one: another m, or a value not of it */
				dec = (int64_t)((uint64_t)(m + 1) << 4) | d;
				wrong++;
			} else if (how == 2 && k == 0) {
				v = value(&r, i);    /* any value at all, with a decimal not its own */
				dec = (int64_t)((uint64_t)m << 4) | d;
				wrong++;
			} else {                 /* the right one */
				dec = (int64_t)((uint64_t)m << 4) | d;
				told++;
			}
			w.name[i][k] = long_names[k];
			w.v[i][k] = v;
			cr_assert_eq(lks_import_rec_add_dec(rec, LKS_IMPORT_JSONL, long_names[k],
			                                    strlen(long_names[k]), v, dec, "t"), 0, "%s",
			             lks_errmsg());
			rows[k] = (lks_metric_row){ 0, 0, long_names[k], LKS_METRIC_NUMERICS, v, 0 };
		}
		cr_assert_eq(lks_block_add_rec(b, rec), 0, "%s", lks_errmsg());
		cr_assert_eq(lks_block_add(plain, w.step[i], w.rank[i], rows, n), 0, "%s",
		             lks_errmsg());
	}
	cr_assert(told > 1000 && wrong > 1000, "%d %d", told, wrong);
	cr_assert_eq(lks_block_encode(b, &data, &len), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_block_decode(data, len, expect_record, &w), 0, "%s", lks_errmsg());
	cr_assert_eq(w.at, RECS);
	w.at = 0;
	cr_assert_eq(lks_block_encode(plain, &data, &len), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_block_decode(data, len, expect_record, &w), 0, "%s", lks_errmsg());
	cr_assert_eq(w.at, RECS);
	/* a name given twice in a record is refused, as lks_block_add refuses it */
	rec->n = 2;
	rec->m[1] = rec->m[0];
	cr_assert_eq(lks_block_add_rec(b, rec), -1);
	cr_assert(strstr(lks_errmsg(), "twice"), "%s", lks_errmsg());
	free(rec);
	lks_block_free(b);
	lks_block_free(plain);
}

/* Records of a layout (lks_import_rec.layout: the same names in the same order) go into
   the columns the first of them went to, found again only where another record came
   between: one of no layout, one of another, rows added (lks_block_add), a full block. */
Test(import_block, records_of_one_layout_read_back_whatever_came_between)
{
	static struct want w;
	static const char *const order[3][3] = { { "loss", "tps", "lr" }, { "tps", "loss", "lr" },
	                                         { "lr", "a_name_of_sixteen_and_more", "loss" } };
	lks_block *b = lks_block_new();
	lks_import_rec *rec = calloc(1, sizeof(*rec));
	uint64_t r = 11;
	const unsigned char *data;
	size_t len;

	cr_assert(b && rec);
	for (int i = 0; i < RECS; i++) {
		int o = (int)(next(&r) % 3), how = (int)(next(&r) % 8);
		lks_metric_row rows[3];

		w.step[i] = i;
		w.rank[i] = 0;
		w.n[i] = 3;
		rec->n = 0;
		rec->step = i;
		rec->rank = 0;
		for (int k = 0; k < 3; k++) {
			w.name[i][k] = order[o][k];
			w.v[i][k] = value(&r, i);
			cr_assert_eq(lks_import_rec_add(rec, LKS_IMPORT_JSONL, order[o][k],
			                                strlen(order[o][k]), w.v[i][k], "t"), 0);
			rows[k] = (lks_metric_row){ 0, 0, order[o][k],
			                            !strcmp(order[o][k], "tps") ? LKS_METRIC_PERFORMANCE
			                                                        : LKS_METRIC_NUMERICS,
			                            w.v[i][k], 0 };
		}
		rec->layout = how == 0 ? 0 : (uint64_t)(o + 1) << 8 | 3;  /* an order, a layout */
		if (how == 1)
			cr_assert_eq(lks_block_add(b, i, 0, rows, 3), 0, "%s", lks_errmsg());
		else
			cr_assert_eq(lks_block_add_rec(b, rec), 0, "%s", lks_errmsg());
	}
	cr_assert_eq(lks_block_encode(b, &data, &len), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_block_decode(data, len, expect_record, &w), 0, "%s", lks_errmsg());
	cr_assert_eq(w.at, RECS);
	/* a block emptied forgets the layout: its columns are new */
	lks_block_reset(b);
	rec->step = 0;
	cr_assert_eq(lks_block_add_rec(b, rec), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_block_encode(b, &data, &len), 0, "%s", lks_errmsg());
	w.at = RECS - 1;
	w.step[RECS - 1] = 0;
	cr_assert_eq(lks_block_decode(data, len, expect_record, &w), 0, "%s", lks_errmsg());
	free(rec);
	lks_block_free(b);
}

static int count_ok(void *arg, int step, int rank, const lks_metric_row *rows, int n)
{
	cr_assert(step >= 0 && rank >= 0 && rank <= LKS_BLOCK_MAX_RANK && n >= 0
	          && n <= LKS_METRICS_MAX);
	for (int i = 0; i < n; i++)
		cr_assert(rows[i].name && *rows[i].name);
	++*(int *)arg;
	return 0;
}

/* Any byte of a blob changed to any value: the blob is read (what it then says may be
   other values: a block has no checksum, as SQLite's pages have none) or refused, and
   nothing is read past its end or overflows (ASan and UBSan see this test in CI). */
Test(import_block, a_blob_with_any_byte_changed_is_read_or_refused)
{
	lks_block *b = lks_block_new();
	lks_metric_row rows[3] = { { 0, 0, "loss", LKS_METRIC_NUMERICS, 2.5, 0 },
	                           { 0, 0, "tps", LKS_METRIC_PERFORMANCE, 177001, 0 },
	                           { 0, 0, "x", LKS_METRIC_NUMERICS, -0.0, 0 } };
	const unsigned char *data;
	unsigned char *copy;
	size_t len;

	for (int i = 0; i < 24; i++) {
		rows[0].value = 10.0 / (1 + i);
		cr_assert_eq(lks_block_add(b, i / 3, i % 3, rows, 1 + i % 3), 0);
	}
	cr_assert_eq(lks_block_encode(b, &data, &len), 0);
	cr_assert(copy = malloc(len));
	for (size_t at = 0; at < len; at++)
		for (int v = 0; v < 256; v += 5) {
			int n = 0, rc;

			memcpy(copy, data, len);
			copy[at] = (unsigned char)v;
			rc = lks_block_decode(copy, len, count_ok, &n);
			cr_assert(rc == 0 || rc == -1, "byte %zu = %d: %d", at, v, rc);
			cr_assert_leq(n, LKS_BLOCK_RECORDS);
		}
	free(copy);
	lks_block_free(b);
}

/* ---- keyed records: a tensor trace's (layout 3) ---- */

struct keyed_seen {
	int n;
	uint64_t r;
};

/* A record's key as keyed_rec made it: tensor 7i mod 1000 (back and forth), microbatch
   i mod 3 - 1, a hash on two records of three. */
static lks_block_key key_of(int i)
{
	return (lks_block_key){ .tensor = (7 * i) % 1000, .micro = i % 3 - 1,
	                        .has_hash = i % 3 != 0,
	                        .hash = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) };
}

static int expect_keyed(void *arg, int step, int rank, const lks_block_key *key,
                        const lks_metric_row *rows, int n)
{
	struct keyed_seen *s = arg;
	lks_block_key k = key_of(s->n);

	cr_assert_not_null(key);
	cr_assert_eq(step, 5 + s->n / 100);
	cr_assert_eq(rank, 3);
	cr_assert_eq(key->tensor, k.tensor);
	cr_assert_eq(key->micro, k.micro);
	cr_assert_eq(key->has_hash, k.has_hash, "record %d", s->n);
	if (k.has_hash)
		cr_assert_eq(key->hash, k.hash);
	cr_assert_eq(n, 2);
	cr_assert(same_bits(rows[0].value, value(&s->r, 0)));
	cr_assert(same_bits(rows[1].value, value(&s->r, 1)));
	s->n++;
	return 0;
}

Test(import_block, keyed_records_read_back_with_their_keys)
{
	lks_block *b = lks_block_new();
	lks_import_rec *rec = calloc(1, sizeof(*rec));
	const unsigned char *data;
	size_t len;
	struct keyed_seen seen = { 0, 42 };
	uint64_t r = 42;

	cr_assert(b && rec);
	for (int i = 0; i < 1000; i++) {
		lks_block_key k = key_of(i);

		rec->step = 5 + i / 100;
		rec->rank = 3;
		rec->n = 2;
		for (int j = 0; j < 2; j++) {
			memset(rec->m[j].name, 0, 16);
			strcpy(rec->m[j].name, j ? "amax" : "l2");
			rec->m[j].nlen = (int)strlen(rec->m[j].name);
			rec->m[j].kind = LKS_METRIC_NUMERICS;
			rec->m[j].value = value(&r, j);
			rec->m[j].dec = LKS_IMPORT_NO_DEC;
		}
		cr_assert_eq(lks_block_add_keyed(b, rec, &k), 0, "%s", lks_errmsg());
	}
	/* a step's record into a block of tensor records: refused */
	cr_assert_eq(lks_block_add_rec(b, rec), -1);
	cr_assert_eq(lks_block_encode(b, &data, &len), 0);
	cr_assert_eq(data[0], 3, "layout 3");
	cr_assert_eq(lks_block_decode_keyed(data, len, expect_keyed, &seen), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(seen.n, 1000);
	/* read as steps' records: refused, a tensor's statistics are no step's metrics */
	cr_assert_eq(lks_block_decode(data, len, count_records, &(int){ 0 }), -1);
	/* a blob cut short in its last hash or value is refused */
	{
		unsigned char *copy = malloc(len);
		struct keyed_seen again = { 0, 42 };

		memcpy(copy, data, len);
		lks_block_reset(b);
		/* and the other way: a keyed record into a block of steps' records */
		cr_assert_eq(lks_block_add_rec(b, rec), 0);
		cr_assert_eq(lks_block_add_keyed(b, rec, &(lks_block_key){ 0, -1, 0, 0 }), -1);
		cr_assert_eq(lks_block_decode_keyed(copy, len - 1, expect_keyed, &again), -1,
		             "a blob cut short");
		free(copy);
	}
	lks_block_free(b);
	free(rec);
}
