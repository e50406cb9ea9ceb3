/*
 * test_import_read.c: what lockstep import's parsers read, at the speed they read it
 * (harness/store/import_metric.c): lines cut out of blocks of any size as a line at a time
 * would cut them (a model of the rules beside the reader, on generated files with long
 * lines, NUL bytes, '\r' and a last line without newline); numbers read in place, with
 * and without thousands separators, bit for bit as strtod reads them; and torchtitan
 * values read in one pass equal to the same values read the long way. Suite import_lines
 * reads from memory or a stream; import_read imports files (test_import_parts runs those
 * again with the files read in parts).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/import/import.h"
#include "kernels/err.h"
#include "titan_twice.h"

static uint64_t rnd(uint64_t *r)
{
	*r = *r * 6364136223846793005u + 1442695040888963407u;
	return *r >> 33;
}

/* One line as the reader should hand it on. */
struct want {
	int rc;
	size_t off, len;          /* the text, in the input (a line cut: in cut[]) */
	char cut[LKS_IMPORT_LINE_MAX];
};

/* A line of len bytes at s (nl: a newline ends it) of LKS_IMPORT_LINE_MAX - 1 bytes or more,
   as lks_import_reader_next cuts it: its head before its first '\r' where that is short, a
   '\r', what follows its last (a newline's '\r' no cut), into w; 3 where that is too long. */
static void model_cut(const char *s, size_t len, int nl, struct want *w)
{
	size_t e = len - (nl && len && s[len - 1] == '\r'), f = 0, l = e, head;

	while (f < e && s[f] != '\r')
		f++;
	while (l > 0 && s[l - 1] != '\r')
		l--;
	head = f <= LKS_IMPORT_LINE_HEAD ? f : 0;
	if (f == e || head + 1 + (e - l) >= LKS_IMPORT_LINE_MAX - 1) {
		*w = (struct want){ .rc = 3 };
		return;
	}
	w->rc = nl ? 1 : 2;
	memcpy(w->cut, s, head);
	w->cut[head] = '\r';
	memcpy(w->cut + head + 1, s + l, e - l);
	w->len = head + 1 + (e - l);
	w->off = SIZE_MAX;
}

/* The rules, a line at a time (import.h, lks_import_reader_next): a line with a NUL is bad
   input; a line of LKS_IMPORT_LINE_MAX - 1 bytes or more is cut at its carriage returns
   (model_cut); '\r' before a newline is dropped; a last line without newline is 2. */
static int model(const char *in, size_t n, struct want *w, int max)
{
	size_t at = 0;
	int k = 0;

	while (at < n && k < max) {
		const char *nl = memchr(in + at, '\n', n - at);
		size_t len = nl ? (size_t)(nl - (in + at)) : n - at;

		if (memchr(in + at, 0, len)) {
			w[k++] = (struct want){ LKS_E_BAD_INPUT, 0, 0, "" };
			return k;
		}
		if (len >= LKS_IMPORT_LINE_MAX - 1)
			model_cut(in + at, len, nl != NULL, &w[k++]);
		else if (!nl)
			w[k++] = (struct want){ 2, at, len, "" };
		else
			w[k++] = (struct want){ 1, at, len && in[at + len - 1] == '\r' ? len - 1 : len,
			                        "" };
		at += len + (nl != NULL);
	}
	w[k++] = (struct want){ 0, 0, 0, "" };
	return k;
}

/* A file of lines short and long, with the bytes that matter. A long line is a progress
   bar's redraws ('\r' anywhere), or one redraw of a line too long (its only '\r' near its
   start, or none). */
static size_t gen(uint64_t *r, char *buf, size_t cap)
{
	static const char alphabet[] = "ab :\r\x1b\n";
	size_t n = 0;
	int lines = 1 + (int)(rnd(r) % 12), nul = rnd(r) % 4 == 0;

	for (int i = 0; i < lines; i++) {
		size_t len = rnd(r) % 5 == 0 ? LKS_IMPORT_LINE_MAX - 4 + rnd(r) % 8 : rnd(r) % 40;
		int bar = len < 40 || rnd(r) % 2;
		size_t cr = rnd(r) % 2 ? rnd(r) % (2 * LKS_IMPORT_LINE_HEAD) : SIZE_MAX;

		if (n + len + 2 > cap)
			break;
		for (size_t j = 0; j < len; j++)
			buf[n++] = j + 1 == len && rnd(r) % 3 == 0 ? '\r'
			           : bar ? alphabet[rnd(r) % 6] : j == cr ? '\r' : alphabet[rnd(r) % 4];
		if (nul && len && rnd(r) % 3 == 0)  /* anywhere in the line, past its head too */
			buf[n - 1 - rnd(r) % (rnd(r) % 2 ? len : len < 8 ? len : 8)] = 0;
		if (i + 1 < lines || rnd(r) % 2)
			buf[n++] = '\n';
		else if (rnd(r) % 4 == 0)
			buf[n++] = alphabet[rnd(r) % 7];
	}
	return n;
}

/* The lines of f, read chunk bytes at a time, against the model's. */
static void check_reader(FILE *f, size_t chunk, const char *in, const struct want *w, int nw,
                         const char *what)
{
	lks_import_reader r;
	char *s;
	size_t len;

	cr_assert_eq(lks_import_reader_open(&r, "x.log", f, chunk), 0);
	for (int k = 0; k < nw; k++) {
		int rc = lks_import_reader_next(&r, &s, &len);

		cr_assert_eq(rc, w[k].rc, "%s, chunk %zu, line %d: %d, want %d", what, chunk, k + 1,
		             rc, w[k].rc);
		if (rc)
			cr_assert_eq(r.line, k + 1, "%s, chunk %zu: line %ld, want %d", what, chunk,
			             r.line, k + 1);
		if (rc == LKS_E_BAD_INPUT)
			cr_assert(strstr(lks_errmsg(), "'x.log':") && strstr(lks_errmsg(), "NUL byte"),
			          "%s", lks_errmsg());
		if (rc != 1 && rc != 2)
			continue;
		cr_assert_eq(len, w[k].len, "%s, chunk %zu, line %d", what, chunk, k + 1);
		cr_assert(!memcmp(s, w[k].off == SIZE_MAX ? w[k].cut : in + w[k].off, len)
		          && s[len] == 0, "%s, line %d", what, k + 1);
	}
	lks_import_reader_close(&r);
}

Test(import_lines, lines_cut_from_blocks_of_any_size_as_a_line_at_a_time)
{
	static const size_t chunks[] = { 1, 2, 3, 7, 64, 4093, 0 };
	size_t cap = 8 * LKS_IMPORT_LINE_MAX;
	char *in = malloc(cap);
	static struct want w[64];  /* a cut line's text each: 4 MiB, off the stack */
	uint64_t r = 7;
	int bad = 0, long_lines = 0, last = 0, cuts = 0;

	cr_assert_not_null(in);
	for (int t = 0; t < 300; t++) {
		size_t n = gen(&r, in, cap);
		int nw = model(in, n, w, 62);
		FILE *f = tmpfile();

		cr_assert_not_null(f);
		cr_assert_eq(fwrite(in, 1, n, f), n);
		for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
			/* tiny chunks cost a syscall a byte: on files without long lines */
			if (chunks[c] && chunks[c] < 64 && n > LKS_IMPORT_LINE_MAX)
				continue;
			cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
			check_reader(f, chunks[c], in, w, nw, "a file");
		}
		fclose(f);
		/* a stream without a descriptor (--follow's): up to a newline at a time */
		if (n && (f = fmemopen(in, n, "r"))) {
			check_reader(f, 0, in, w, nw, "a stream");
			fclose(f);
		}
		for (int k = 0; k < nw; k++) {
			bad += w[k].rc == LKS_E_BAD_INPUT;
			long_lines += w[k].rc == 3;
			cuts += (w[k].rc == 1 || w[k].rc == 2) && w[k].off == SIZE_MAX;
			last += w[k].rc == 2;
		}
	}
	/* the generator reached every case */
	cr_assert(bad > 10 && long_lines > 10 && last > 10 && cuts > 10, "%d %d %d %d", bad,
	          long_lines, last, cuts);
	free(in);
}

/* A decimal with thousands separators put in its integer part, and the same without. */
static void with_commas(uint64_t *r, const char *plain, char *out)
{
	const char *dot = plain + strcspn(plain, ".eE");
	size_t lead = plain[0] == '-', digits = (size_t)(dot - plain) - lead, k = 0;

	for (const char *p = plain; *p; p++) {
		out[k++] = *p;
		if (p >= plain + lead && p + 1 < dot && (size_t)(dot - p - 1) % 3 == 0
		    && digits > 3 && rnd(r) % 4)
			out[k++] = ',';
	}
	out[k] = 0;
}

/* Numbers read in place, bit for bit as strtod reads the text without its separators,
   and a number's prefix (lks_import_number_prefix) where text follows it. */
Test(import_lines, numbers_read_in_place_as_strtod_reads_them)
{
	static const char *const fmt[] = { "%.*f", "%.*e", "%.*g", "%.*E" };
	uint64_t r = 11;
	int commas = 0, prefixes = 0, decs = 0, zs = 0;

	for (int i = 0; i < 200000; i++) {
		char plain[160], text[240], tail[260];
		int p = (int)(rnd(&r) % 18);
		double v = (double)rnd(&r) * pow(10.0, (int)(rnd(&r) % 45) - 22), got, want;
		int64_t dec, decz;
		double gotz;
		size_t k, kz;

		if (rnd(&r) % 2)
			v = -v;
		snprintf(plain, sizeof(plain), fmt[i % 4], p, v);
		want = strtod(plain, NULL);
		with_commas(&r, plain, text);
		commas += strchr(text, ',') != NULL;
		cr_assert_eq(lks_import_number(text, strlen(text), 1, &got), 0, "'%s'", text);
		cr_assert(!memcmp(&got, &want, sizeof(got)), "'%s': %a, strtod %a", text, got, want);
		if (strchr(text, ','))
			cr_assert_neq(lks_import_number(text, strlen(text), 0, &got), 0, "'%s'", text);
		/* followed by what ends a value in a log: its prefix, exact when it is read */
		snprintf(tail, sizeof(tail), "%s%s", text, i % 3 ? "GiB(3.1%)" : " ");
		/* the NUL-ended reader: the same, or none where the number has an exponent */
		if ((kz = lks_import_decimal_z(tail, 1, &gotz, &decz))) {
			zs++;
			cr_assert_eq(kz, lks_import_decimal_prefix(tail, strlen(tail), 1, &got, &dec),
			             "'%s'", tail);
			cr_assert(!memcmp(&got, &gotz, sizeof(got)) && dec == decz, "'%s'", tail);
		} else if (lks_import_decimal_prefix(tail, strlen(tail), 1, &got, &dec)) {
			cr_assert(strpbrk(text, "eE"), "'%s': read without the NUL-ended reader", tail);
		}
		if ((k = lks_import_decimal_prefix(tail, strlen(tail), 1, &got, &dec))) {
			prefixes++;
			cr_assert_eq(k, strlen(text), "'%s'", tail);
			cr_assert(!memcmp(&got, &want, sizeof(got)), "'%s': %a, strtod %a", tail, got,
			          want);
			/* its decimal, where it gives one, is the value as the block layout reads it */
			if (dec != LKS_IMPORT_NO_DEC) {
				int d = (int)(dec & 15);
				int64_t m = (dec - d) / 16;
				double back = d ? (double)m / pow(10.0, d) : (double)m;

				decs++;
				cr_assert(d <= 14 && llabs(m) < ((int64_t)1 << 53), "'%s'", tail);
				cr_assert(!memcmp(&back, &want, sizeof(back)), "'%s': %a, from its decimal %a",
				          tail, want, back);
			}
		}
	}
	cr_assert(commas > 20000 && prefixes > 20000 && decs > 20000 && zs > 20000, "%d %d %d %d",
	          commas, prefixes, decs, zs);
	/* the decimals of a few: as written, or none (an exponent past the point's digits, -0,
	   more than 14 decimals) */
	static const struct { const char *s; int64_t dec; } decimal[] = {
		{ "1.50", 150 * 16 + 2 }, { "3,502", 3502 * 16 }, { "-2.5", -25 * 16 + 1 },
		{ "1.5e-3", 15 * 16 + 4 }, { "12.5E+1", 125 * 16 }, { "1e3", LKS_IMPORT_NO_DEC },
		{ "-0.0", LKS_IMPORT_NO_DEC }, { "-0", LKS_IMPORT_NO_DEC }, { "0.0", 0 * 16 + 1 },
		{ "1.5e-14", LKS_IMPORT_NO_DEC },
		{ "1.5e-13", 15 * 16 + 14 },
	};
	for (size_t i = 0; i < sizeof(decimal) / sizeof(decimal[0]); i++) {
		double x;
		int64_t dec;

		cr_assert_eq(lks_import_decimal_prefix(decimal[i].s, strlen(decimal[i].s), 1, &x, &dec),
		             strlen(decimal[i].s), "'%s'", decimal[i].s);
		cr_assert_eq(dec, decimal[i].dec, "'%s': %lld", decimal[i].s, (long long)dec);
		if (!strpbrk(decimal[i].s, "eE")) {
			cr_assert_eq(lks_import_decimal_z(decimal[i].s, 1, &x, &dec), strlen(decimal[i].s),
			             "'%s'", decimal[i].s);
			cr_assert_eq(dec, decimal[i].dec, "'%s': %lld", decimal[i].s, (long long)dec);
		}
	}
	/* the NUL-ended reader's edges: what it leaves, and where it stops */
	static const struct { const char *s; int commas; size_t read; } z[] = {
		{ "1e5", 1, 0 }, { "1.5E3", 1, 0 }, { "", 1, 0 }, { "-", 1, 0 }, { ".", 1, 0 },
		{ "1234567890123456", 1, 0 }, { "123456789012345", 1, 15 }, { "3,502 ", 1, 5 },
		{ "3,502", 0, 1 }, { ",5", 1, 0 }, { "1,", 1, 1 }, { "1,,5", 1, 1 }, { "1.", 1, 2 },
		{ ".5%", 1, 2 }, { "-0.25GiB", 1, 5 },
	};
	for (size_t i = 0; i < sizeof(z) / sizeof(z[0]); i++) {
		double x;
		int64_t dec;

		cr_assert_eq(lks_import_decimal_z(z[i].s, z[i].commas, &x, &dec), z[i].read, "'%s'",
		             z[i].s);
	}
	/* not a number, or not one the fast path may read: how much of it it reads */
	static const struct { const char *s; size_t n; int commas; size_t read; } edge[] = {
		{ "nan", 3, 1, 0 }, { "1234567890123456", 16, 1, 0 }, { "1e23", 4, 1, 0 },
		{ "1e", 2, 1, 0 }, { ",1", 2, 1, 0 }, { "1,5", 3, 0, 1 }, { "1,,5", 4, 1, 1 },
		{ "-", 1, 1, 0 }, { "-", 0, 1, 0 }, { "0.000000000000001", 17, 0, 0 },
		{ "0.00000000000001", 16, 0, 16 },
	};
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		double x;

		cr_assert_eq(lks_import_number_prefix(edge[i].s, edge[i].n, edge[i].commas, &x),
		             edge[i].read, "'%s'", edge[i].s);
	}
}

struct got {
	int n;
	lks_import_rec rec[4];
};

static int keep(void *arg, const lks_import_rec *rec)
{
	struct got *g = arg;

	if (g->n < 4)
		g->rec[g->n] = *rec;
	g->n++;
	return 0;
}

/* The records of a torchtitan log given as text. */
static int titan(const char *text, struct got *g)
{
	lks_import_counts c = { 0 };
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rc;

	cr_assert_not_null(f);
	memset(g, 0, sizeof(*g));
	rc = lks_import_format_parse(&lks_import_torchtitan_format, "t.log", f, keep, g, &c);
	fclose(f);
	return rc;
}

/* Values read in one pass (a plain decimal, N%, NGiB, NGiB(P%)) are the values read the
   long way (digits past the fast path's 15, forms it leaves to lks_titan_value). */
Test(import_lines, torchtitan_values_read_at_once_as_the_long_way_reads_them)
{
	struct got quick, slow;

	cr_assert_eq(titan("- step: 3  loss: 2.5  tps: 3,502  mfu: 9.72%  memory: 2.47GiB(3.12%)"
	                   "\tgrad_norm: -1e-3  tflops: 96.17\n", &quick), 0, "%s", lks_errmsg());
	cr_assert_eq(titan("- step: 3  loss: 2.50000000000000000  tps: 3,502.0000000000000000  "
	                   "mfu: 9.7200000000000000%  memory: 2.4700000000000000GiB(3.1200000000000000%)"
	                   "\tgrad_norm: -0.0010000000000000000  tflops: 96.170000000000000000\n",
	                   &slow), 0, "%s", lks_errmsg());
	cr_assert_eq(quick.n, 1);
	cr_assert_eq(slow.n, 1);
	cr_assert_eq(quick.rec[0].n, 7);
	cr_assert_eq(slow.rec[0].n, quick.rec[0].n);
	for (int i = 0; i < quick.rec[0].n; i++) {
		cr_assert_str_eq(quick.rec[0].m[i].name, slow.rec[0].m[i].name);
		cr_assert(quick.rec[0].m[i].value == slow.rec[0].m[i].value, "%s: %a %a",
		          quick.rec[0].m[i].name, quick.rec[0].m[i].value, slow.rec[0].m[i].value);
	}
	cr_assert_eq(quick.rec[0].m[3].value, 2.47);
	cr_assert_eq(quick.rec[0].m[4].value, 3.12);
	cr_assert_eq(quick.rec[0].m[2].value, 9.72);
	/* forms near the quick ones keep the long way's verdicts */
	cr_assert_eq(titan("- step: 1  memory: 2,470GiB\n", &quick), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "bad value '2,470GiB' of 'memory'"), "%s", lks_errmsg());
	cr_assert_eq(titan("- step: 1  memory: 2.4GiB(3.1%\n", &quick), LKS_E_BAD_INPUT);
	cr_assert_eq(titan("- step: 1  mfu: 9.72%%\n", &quick), LKS_E_BAD_INPUT);
	cr_assert_eq(titan("- step: 1  loss: 2.5x\n", &quick), LKS_E_BAD_INPUT);
	cr_assert_eq(titan("- step: 1  loss: nan  tps: 1,234,567\n", &quick), 0, "%s", lks_errmsg());
	cr_assert(isnan(quick.rec[0].m[0].value));
	cr_assert_eq(quick.rec[0].m[1].value, 1234567.0);
	cr_assert_eq(titan("- step: 1  loss: 1  loss: 2\n", &quick), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "'t.log':1: metric 'loss' given twice"), "%s", lks_errmsg());
}

/* ANSI colour codes anywhere in a line, in a label or a number too, read as the line
   without them: they are dropped before anything else reads it. */
Test(import_lines, ansi_codes_anywhere_are_dropped_first)
{
	static const char *const codes[] = { "\033[31m", "\033[0m", "\033[1;38;5;208m", "\033c",
	                                     "\033[39m" };
	static const char plain[] = "[titan] 2026-01-05 10:00:01,001 - root - INFO - step: 12  "
	                            "loss:  9.9900  grad_norm:  1.0100  memory:  2.47GiB(3.12%)  "
	                            "tps: 178,001  tflops: 96.17  mfu: 9.72%";
	struct got want, got;
	uint64_t r = 5;

	cr_assert_eq(titan("- step: 0\n", &want), 0);  /* the label memo of another line first */
	{
		char line[sizeof(plain) + 2];

		snprintf(line, sizeof(line), "%s\n", plain);
		cr_assert_eq(titan(line, &want), 0, "%s", lks_errmsg());
	}
	cr_assert_eq(want.rec[0].n, 7);
	for (int t = 0; t < 2000; t++) {
		char line[4 * sizeof(plain)];
		size_t n = 0;

		for (size_t i = 0; i < sizeof(plain) - 1; i++) {
			if (rnd(&r) % 13 == 0) {
				const char *c = codes[rnd(&r) % 5];

				memcpy(line + n, c, strlen(c));
				n += strlen(c);
			}
			line[n++] = plain[i];
		}
		line[n++] = '\n';
		line[n] = 0;
		cr_assert_eq(titan(line, &got), 0, "%s", lks_errmsg());
		cr_assert_eq(got.n, 1);
		cr_assert_eq(got.rec[0].step, 12);
		cr_assert_eq(got.rec[0].n, want.rec[0].n);
		for (int i = 0; i < got.rec[0].n; i++) {
			cr_assert_str_eq(got.rec[0].m[i].name, want.rec[0].m[i].name);
			cr_assert(got.rec[0].m[i].value == want.rec[0].m[i].value, "%s", line);
		}
	}
}

/* A line is what a terminal shows of it: a progress bar drawn before a carriage return is
   no part of it, its rank prefix after the return is the line's; a bar drawn after the
   record overwrites it (no record, as on a screen). The quick reader leaves such lines to
   the whole way (the fuzz target holds the two to one reading). */
Test(import_lines, a_line_behind_a_progress_bar_is_what_a_terminal_shows)
{
	struct got g;

	cr_assert_eq(titan(" 50%|#####     | 5/10 [00:05<00:05]\r[rank3]:[titan] 2026-01-05 "
	                   "10:00:01,001 - root - INFO - step: 12  loss:  9.9900  tps: 178,001\n"
	                   "\r[rank3]:[titan] 2026-01-05 10:00:02,001 - root - INFO - step: 13  "
	                   "loss:  9.8900\r 60%|######    | 6/10\n", &g), 0, "%s", lks_errmsg());
	cr_assert_eq(g.n, 1);
	cr_assert_eq(g.rec[0].rank, 3);
	cr_assert_eq(g.rec[0].step, 12);
	cr_assert_eq(g.rec[0].n, 2);
	cr_assert_eq(g.rec[0].m[0].value, 9.99);
}

/* A metric given twice on a line is bad input whatever the lines before it held: labels
   remembered by their place (import_metric.c) never stand in for that check. Lines of
   labels drawn from a few, each with its expected verdict: "grad-norm" makes the name
   "grad_norm", the same as the label "grad_norm" does. */
Test(import_lines, a_metric_twice_is_refused_after_any_lines)
{
	static const char *const label[] = { "loss", "lr", "grad_norm", "grad-norm", "tps", "x.y",
	                                     "x_y" };
	static const char *const name[] = { "loss", "lr", "grad_norm", "grad_norm", "tps", "x_y",
	                                     "x_y" };
	uint64_t r = 3;
	int twice = 0;

	for (int t = 0; t < 20000; t++) {
		char line[512];
		int n = 1 + (int)(rnd(&r) % 5), pick[5], k = snprintf(line, sizeof(line), "- step: 1");
		int dup = 0;
		struct got g;

		for (int i = 0; i < n; i++) {
			/* mostly the order of the line before, as logs write them */
			pick[i] = rnd(&r) % 4 ? i % 7 : (int)(rnd(&r) % 7);
			for (int j = 0; j < i; j++)
				dup |= !strcmp(name[pick[i]], name[pick[j]]);
			k += snprintf(line + k, sizeof(line) - (size_t)k, "  %s: %d", label[pick[i]], i);
		}
		snprintf(line + k, sizeof(line) - (size_t)k, "\n");
		twice += dup;
		if (dup) {
			cr_assert_eq(titan(line, &g), LKS_E_BAD_INPUT, "%s", line);
			cr_assert(strstr(lks_errmsg(), "given twice"), "%s", lks_errmsg());
			continue;
		}
		cr_assert_eq(titan(line, &g), 0, "%s: %s", line, lks_errmsg());
		cr_assert_eq(g.rec[0].n, n);
		for (int i = 0; i < n; i++) {
			cr_assert_str_eq(g.rec[0].m[i].name, name[pick[i]], "%s", line);
			cr_assert_eq(g.rec[0].m[i].value, i);
		}
	}
	cr_assert_gt(twice, 1000);
}

/* The torchtitan log text imported with no store: its result, counts in *res. */
static int titan_import(const char *text, lks_import_result *res)
{
	char path[] = "/tmp/lks-test-import-read-XXXXXX";
	const char *files[] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find("torchtitan"), .case_name = "c",
	                      .run_name = "r" };
	int fd = mkstemp(path), rc;
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	rc = lks_import_files(NULL, &o, files, 1, res);
	unlink(path);
	return rc;
}

/* A step logged again with the same values is repeated, not refused, whatever an earlier
   line left in the record past a name's end: a long name at the same place on a line of
   another rank between the two. */
Test(import_read, a_step_again_with_the_same_values_is_repeated_after_longer_names)
{
	lks_import_result res;

	cr_assert_eq(titan_import("[rank0]:- step: 1  a_rather_long_metric_name_28: 1.5  loss: 2\n"
	                          "[rank1]:- step: 1  a_rather_long_metric_name_28_and_more_too: "
	                          "2.5  loss: 3\n"
	                          "[rank0]:- step: 1  a_rather_long_metric_name_28: 1.5  loss: 2\n",
	                          &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.counts.records, 3);
	cr_assert_eq(res.counts.repeated, 1);
	/* and the same names with another value: refused */
	cr_assert_eq(titan_import("[rank0]:- step: 1  a_rather_long_metric_name_28: 1.5  loss: 2\n"
	                          "[rank1]:- step: 1  a_rather_long_metric_name_28_and_more_too: "
	                          "2.5  loss: 3\n"
	                          "[rank0]:- step: 1  a_rather_long_metric_name_28: 1.5  loss: 2.5\n",
	                          &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), ":3: step 1 of rank 0 again with other values"), "%s",
	          lks_errmsg());
}

/* A step that comes again is held to the metrics its rank gave it, bit for bit: NaN as
   NaN, 0 not -0, the same names in the same order; performance metrics too where the line
   names its rank, the numerics only where it does not (each rank has its own timings). */
Test(import_read, a_step_again_is_held_to_its_metrics_bit_for_bit)
{
	static const struct {
		const char *log;
		int repeated;             /* 1 repeated, 0 refused */
		const char *why;
	} cases[] = {
		{ "- step: 1  loss: nan  tps: 5\n- step: 1  loss: nan  tps: 5\n", 1, "" },
		{ "- step: 1  loss: -nan  tps: 5\n- step: 1  loss: nan  tps: 6\n", 1, "" },
		{ "- step: 1  loss: 2  tps: 5\n- step: 1  loss: 2  tps: 6\n", 1, "" },
		{ "[rank0]:- step: 1  loss: 2  tps: 5\n[rank0]:- step: 1  loss: 2  tps: 5\n", 1, "" },
		{ "[rank0]:- step: 1  loss: 2  tps: 5\n[rank0]:- step: 1  loss: 2  tps: 6\n", 0,
		  "step 1 of rank 0 again with other values" },
		{ "[rank0]:- step: 1  loss: 0.0\n[rank0]:- step: 1  loss: -0.0\n", 0, "other values" },
		{ "[rank0]:- step: 1  loss: 2\n[rank0]:- step: 1  lr: 2\n", 0, "other values" },
		{ "[rank0]:- step: 1  loss: 2  lr: 1\n[rank0]:- step: 1  lr: 1  loss: 2\n", 0,
		  "other values" },
		{ "[rank0]:- step: 1  loss: 2\n[rank0]:- step: 1  loss: 2  lr: 1\n", 0, "other values" },
		{ "- step: 1  loss: 2  tps: 5\n- step: 1  loss: 2.5  tps: 5\n", 0,
		  "and the lines name no rank" },
		{ "[rank0]:- step: 1  a_rather_long_metric_name_of_40_bytes_x: 1\n"
		  "[rank0]:- step: 1  a_rather_long_metric_name_of_40_bytes_y: 1\n", 0, "other values" },
		/* a step with no metrics, kept and compared: nothing to copy (UBSan: no copy from
		   or to nothing) */
		{ "[rank0]:- step: 1\n[rank0]:- step: 1\n", 1, "" },
		/* lines of one layout: the last step's values kept without its names again */
		{ "[rank0]:- step: 1  loss: 2  tps: 5\n[rank0]:- step: 2  loss: 2  tps: 5\n"
		  "[rank0]:- step: 3  loss: 3  tps: 6\n[rank0]:- step: 3  loss: 3  tps: 6\n", 1, "" },
		{ "[rank0]:- step: 1  loss: 2  tps: 5\n[rank0]:- step: 2  loss: 2  tps: 5\n"
		  "[rank0]:- step: 3  loss: 3  tps: 6\n[rank0]:- step: 3  loss: 3  tps: 7\n", 0,
		  "step 3 of rank 0 again with other values" },
		{ "[rank0]:- step: 1  loss: 2  tps: 5\n[rank0]:- step: 2  loss: 2  tps: 5\n"
		  "[rank0]:- step: 3  loss: 3  tps: 6\n[rank0]:- step: 3  loss: 2  tps: 6\n", 0,
		  "step 3 of rank 0 again with other values" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lks_import_result res;
		int rc = titan_import(cases[i].log, &res);

		if (cases[i].repeated) {
			cr_assert_eq(rc, 0, "%s: %s", cases[i].log, lks_errmsg());
			cr_assert_eq(res.counts.repeated, 1, "%s", cases[i].log);
		} else {
			cr_assert_eq(rc, LKS_E_BAD_INPUT, "%s", cases[i].log);
			cr_assert(strstr(lks_errmsg(), cases[i].why), "%s: %s", cases[i].log, lks_errmsg());
		}
	}
}

/* One of the n strings: the first, or where odd is set any, alike. */
static const char *pick(uint64_t *r, const char *const *s, int n, int odd)
{
	return odd && rnd(r) % 2 ? s[rnd(r) % (uint64_t)n] : s[0];
}

/* A torchtitan log line, mostly of the common shape (a "[rankN]:" prefix, the logger's
   text, a colour before each label, the labels of the line before), and one line in 10
   with one part of it (one field of the fields) changed in any of the ways the reader
   tells apart: other prefixes,
   record starts, labels, values, blanks, marks, and escape codes anywhere, whole or cut
   short. */
static size_t titan_gen(uint64_t *r, char *out, size_t cap)
{
	enum { PRE = 1, LOG, STEP, FIELDS, LABEL, VALUE, SEP, COLON, CODES, TAIL, NODD };
	static const char *const pre[] = { "[rank%d]:", "[default%d]:", "%d: [rank%d]:", " %d: ",
	                                   "", "[pod/x/y] [rank%d]:", "[rank]:", "\033[1m[rank%d]:",
	                                   "[rank7%d000]:", "\xef\xbb\xbf[rank%d]:", "[rank%d]\033[0m:",
	                                   "[rank%d]:\033[0m" };
	static const char *const log[] = { "[titan] 2026-01-05 10:00:01,001 - root - INFO - ", "",
	                                   "validate step: 3 ", "x ] : ", "INFO -", "- \033[0m",
	                                   "a step: 1 - ", "[titan] - INFO - Saving at step 5",
	                                   "INFO\t", "st\033[0m" };
	static const char *const step[] = { "step: %d", "step:%d", "step: -1", "step: 12345678901",
	                                    "step: %dx", "step:", "xstep: %d", "step: 2147483648",
	                                    "step:\t0%d", "step: 2147483647", "step:\033[0m %d",
	                                    "step: %d\033[0mx", "ep: %d", "step %d", "steps: %d",
	                                    "step:: %d" };
	static const char *const label[] = { "loss", "grad_norm", "memory", "tps", "tflops", "mfu",
	                                     "lr", "a_rather_long_metric_name_28", "x.y", "step",
	                                     "memory_pct", "name_of_more_than_48_bytes_for_the_memo_"
	                                     "to_hold_not", "lossy", "los", "tflops\033[0m",
	                                     "grad_norm_x", "lost", "grad_nurm", "tflopx", "mfx" };
	static const char *const value[] = { "", "N/A", "nan", "1e-3", "-0.0", "2,470GiB", "3.1%%",
	                                     "12345678901234567", "9.53%%%%", "1.5GiB(2%%", "7GiB",
	                                     "-2.5", "1,2", "0.000000000000001", ",5", "1.", ".5",
	                                     "2.4GiB(3.1%%)x", "1.5GiB\033[0m(2.5%%)", "2.5\033[0mx",
	                                     "2.5%%\033[0m%%", "1.5GiB(2.5%%)\033[0m)", "2,5GiB(1%%)",
	                                     "1.5GiB(2.5%%\033[0m)", "3\033[0m.5", "-", "1e5GiB",
	                                     "7GiBx", "7GiB/8GiB", "7GiB(", "7GiB()", "7GiB(1%%)%%",
	                                     "7GiBmemory_pct: 1" };
	static const char *const sep[] = { "  ", "\t", " ", "", "  \033[0m ", "\033[0m",
	                                   " \033[31", " \033" };
	static const char *const colon[] = { ":", "=", " ", ":\033[0m", "\033[0m:", "::" };
	static const char *const code[] = { "\033[3%dm", "\033[0m", "\033[1;38;5;208m", "\033c",
	                                    "\033[", "\033", "\033[31", "\033[s", "\033[2\177" };
	static const char *const tail[] = { "\033[39m", "\033", "\033[", "\033[31", "  \033",
	                                    " ", "\t\033[0m" };
	char line[1024], v[64];
	int k = 0, n = 0, rank = (int)(rnd(r) % 10);
	int odd = rnd(r) % 10 ? 0 : 1 + (int)(rnd(r) % (NODD - 1));

#define PUT(...) (k += snprintf(line + k, sizeof(line) - (size_t)k, __VA_ARGS__))
	PUT(pick(r, pre, 12, odd == PRE), rank, rank);
	PUT("%s", pick(r, log, 10, odd == LOG));
	if (rnd(r) % 8)
		PUT("\033[31m");
	PUT(pick(r, step, 16, odd == STEP), (int)(rnd(r) % 1000));
	for (int i = 0, nf = odd == FIELDS ? (int)(rnd(r) % 9) : 6, at = (int)(rnd(r) % 6); i < nf;
	     i++) {
		int here = i == at;  /* the field a change of a field changes */
		const char *l = odd == LABEL && here ? label[rnd(r) % 20] : label[i % 6];

		PUT("%s", pick(r, sep, 8, odd == SEP && here));
		if (rnd(r) % 10)
			PUT("\033[3%dm", (int)(rnd(r) % 8));
		if (!strcmp(l, "memory") && rnd(r) % 30 == 0)  /* no share: the next place's label */
			snprintf(v, sizeof(v), "%.2fGiB", (double)(rnd(r) % 9000) / 100);
		else if (!strcmp(l, "memory"))
			snprintf(v, sizeof(v), "%.2fGiB(%.2f%%)", (double)(rnd(r) % 9000) / 100,
			         (double)(rnd(r) % 10000) / 100);
		else if (!strcmp(l, "tps"))
			snprintf(v, sizeof(v), "%d,%03d", (int)(rnd(r) % 300), (int)(rnd(r) % 1000));
		else if (!strcmp(l, "mfu"))
			snprintf(v, sizeof(v), "%.2f%%", (double)(rnd(r) % 10000) / 100);
		else
			snprintf(v, sizeof(v), "%*.4f", (int)(rnd(r) % 8), (double)(rnd(r) % 200000) / 1e4);
		PUT("%s%s%s", l, pick(r, colon, 6, odd == COLON && here),
		    rnd(r) % 4 ? "  " : " ");
		if (odd == VALUE && here)
			PUT(value[rnd(r) % 33]);
		else
			PUT("%s", v);
	}
	if (odd == TAIL || rnd(r) % 4)
		PUT("%s", pick(r, tail, 7, odd == TAIL));
	for (int c = odd == CODES ? 1 + (int)(rnd(r) % 3) : 0; c > 0 && k > 0; c--) {
		char code_s[32];
		int at = (int)(rnd(r) % (uint64_t)k), cl = snprintf(code_s, sizeof(code_s),
		                                                     pick(r, code, 9, 1), 1);

		if (k + cl < (int)sizeof(line)) {
			memmove(line + at + cl, line + at, (size_t)(k - at));
			memcpy(line + at, code_s, (size_t)cl);
			k += cl;
		}
	}
#undef PUT
	n = k < (int)cap ? k : (int)cap;
	memcpy(out, line, (size_t)n);
	return (size_t)n;
}

/* A memory share is memory_pct where the labels remembered say so: after a line whose
   memory had none, the place after memory's holds another label, and a line that ends with
   memory and its share must not give the share that label's name. */
Test(import_lines, a_memory_share_takes_its_own_name_whatever_the_line_before)
{
	static const char *const log[] = {
		"[rank0]:- \033[31mstep: 1  loss: 2  memory: 1.5GiB  tps: 3\n"
		"[rank0]:- \033[31mstep: 2  loss: 2  memory: 1.5GiB(2.5%)\n",
		/* a label of memory_pct's length, and one that starts with it */
		"[rank0]:- \033[31mstep: 1  loss: 2  memory: 1.5GiB  tflops_est: 3\n"
		"[rank0]:- \033[31mstep: 2  loss: 2  memory: 1.5GiB(2.5%)\n",
		"[rank0]:- \033[31mstep: 1  loss: 2  memory: 1.5GiB  memory_pct_x: 3\n"
		"[rank0]:- \033[31mstep: 2  loss: 2  memory: 1.5GiB(2.5%)\n",
		"[rank0]:- step: 1  loss: 2  memory: 1.5GiB(2.5%)  tps: 3\n"
		"[rank0]:- step: 2  loss: 2  memory: 1.5GiB  memory_pct: 4  tps: 3\n"
		"[rank0]:- step: 3  loss: 2  memory: 1.5GiB(2.5%)  tps: 3\n",
	};

	for (size_t i = 0; i < sizeof(log) / sizeof(log[0]); i++) {
		char why[1200];
		struct lks_titan_read a;

		cr_assert_eq(lks_titan_twice(log[i], strlen(log[i]), why, sizeof(why)), 0, "%s", why);
		lks_titan_read(log[i], strlen(log[i]), lks_import_titan_line, &a);
		cr_assert_eq(a.rc, 0, "%s", a.err);
		cr_assert_str_eq(a.recs[a.n - 1].m[2].name, "memory_pct");
		cr_assert_eq(a.recs[a.n - 1].m[2].value, 2.5);
		lks_titan_read_free(&a);
	}
}

/* Logs of such lines read both ways (tests/import/titan_twice.h): the common lines at once, and
   everything the whole way, hand on the same records and counts, or fail alike. */
Test(import_lines, torchtitan_lines_read_at_once_as_the_whole_way_reads_them)
{
	static char text[64 * 1100];
	uint64_t r = 11;
	int failed = 0, records = 0;

	for (int t = 0; t < 3000; t++) {
		size_t n = 0;
		char why[1200];

		for (int i = 0, lines = 1 + (int)(rnd(&r) % 30); i < lines; i++) {
			n += titan_gen(&r, text + n, 1100);
			if (i + 1 < lines || rnd(&r) % 8)
				n += (size_t)snprintf(text + n, 3, rnd(&r) % 30 ? "\n" : "\r\n");
		}
		cr_assert_eq(lks_titan_twice(text, n, why, sizeof(why)), 0, "%s:\n%.*s", why,
		             (int)n, text);
		{
			struct lks_titan_read a;

			lks_titan_read(text, n, lks_import_titan_line, &a);
			failed += a.rc != 0;
			records += a.n;
			lks_titan_read_free(&a);
		}
	}
	/* both kinds are many: logs read whole, and logs that fail */
	cr_assert_gt(failed, 300);
	cr_assert_lt(failed, 2700);
	cr_assert_gt(records, 20000);
}
