/*
 * test_import_console.c: the consoles that frameworks print, as a terminal shows them
 * (harness/import/): a progress bar redrawn past a line's bound with a metric line after
 * its last '\r' (read, where the line was dropped or the file refused); a NUL byte
 * refused at its file:line in every format, those read whole too (their reader ended the
 * line there, and what followed was lost); a console that prints no step given with
 * another file (a resumed run's began at step 1 again and dropped the first file); NeMo's
 * iterations that start again each epoch; Composer's progress counted in tokens, and its
 * values that are no number.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/import/import.h"
#include "kernels/err.h"

/* What a parse handed on: each record's step, loss and line. */
struct recs {
	int n, step[16];
	double loss[16];
	long line[16];
};

static int keep(void *arg, const lks_import_rec *rec)
{
	struct recs *r = arg;

	cr_assert_lt(r->n, 16);
	r->step[r->n] = rec->step;
	r->line[r->n] = rec->line;
	r->loss[r->n] = NAN;
	for (int i = 0; i < rec->n; i++)
		if (!strcmp(rec->m[i].name, "loss"))
			r->loss[r->n] = rec->m[i].value;
	r->n++;
	return 0;
}

/* The len bytes of text written to a new file; its path in path (unlink it). */
static void file_of(char path[64], const char *text, size_t len)
{
	int fd;

	snprintf(path, 64, "%s", "/tmp/lks-test-console-XXXXXX");
	cr_assert_geq(fd = mkstemp(path), 0);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

/* The len bytes of text parsed as fmt from a file, as lockstep import reads one: rc, *r. */
static int parse(const char *fmt, const char *text, size_t len, struct recs *r)
{
	const lks_import_format *format = lks_import_format_find(fmt);
	lks_import_counts c = { 0 };
	char path[64];
	FILE *in;
	int rc;

	cr_assert(format, "%s", lks_errmsg());
	file_of(path, text, len);
	cr_assert_not_null(in = fopen(path, "r"));
	memset(r, 0, sizeof(*r));
	rc = lks_import_format_parse(format, "t.log", in, keep, r, &c);
	fclose(in);
	unlink(path);
	return rc;
}

/* The texts (NULL ended) imported as fmt, one file each, into no store: rc, *res. */
static int import_texts(const char *fmt, const char *const *texts, lks_import_result *res)
{
	lks_import_opts o = { .fmt = lks_import_format_find(fmt), .case_name = "c",
	                      .run_name = "r" };
	char paths[4][64];
	const char *files[4];
	int n = 0, rc;

	for (; texts[n]; n++) {
		file_of(paths[n], texts[n], strlen(texts[n]));
		files[n] = paths[n];
	}
	rc = lks_import_files(NULL, &o, files, n, res);
	while (n--)
		unlink(paths[n]);
	return rc;
}

#define BAR "\r 12%|\xe2\x96\x88\xe2\x96\x8e        | 1/8 [00:00<00:00, 38.37it/s]"

/* head, BAR 1500 times (80 KB of redraws, past LKS_IMPORT_LINE_MAX), then tail: malloc'd */
static char *with_bar(const char *head, const char *tail)
{
	size_t bar = strlen(BAR), h = strlen(head), t = strlen(tail);
	char *s = malloc(h + 1500 * bar + t + 1), *p = s;

	cr_assert_not_null(s);
	memcpy(p, head, h);
	for (p += h; p < s + h + 1500 * bar; p += bar)
		memcpy(p, BAR, bar);
	memcpy(p, tail, t + 1);
	return s;
}

/* A metric line a terminal shows after 80 KB of a bar's redraws: read, in a line format
   (it was dropped with the bar) and in the formats read whole (their files were refused). */
Test(import_console, a_metric_line_after_a_long_progress_bar_is_read)
{
	static const struct {
		const char *fmt, *head, *tail;
		int steps;
		double loss;          /* the step 2's */
	} cases[] = {
		{ "nemo", "Training epoch 0, iteration 0/9 | reduced_train_loss: 11.02\n",
		  "\rTraining epoch 0, iteration 1/9 | reduced_train_loss: 10.5\n"
		  "Training epoch 0, iteration 2/9 | reduced_train_loss: 10.1\n", 3, 10.1 },
		{ "hf-trainer", "{'loss': 11.02}\n", "\r    \r{'loss': 10.5}\n{'loss': 10.1}\n", 3,
		  10.5 },
		{ "composer", "[batch=1/9]:\n\t Train loss/train/total: 11.0200\n",
		  "\r[batch=2/9]:\n\t Train loss/train/total: 10.5000\n", 2, 10.5 },
		/* srun --label's prefix before the bar: the rank still the line's */
		{ "torchtitan", "", "\r0: [titan] 2025-01-01 00:00:00,000 - root - INFO - step:  2  "
		  "loss: 10.5\n", 1, 10.5 },
	};
	struct recs r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = with_bar(cases[i].head, cases[i].tail);
		int rc = parse(cases[i].fmt, text, strlen(text), &r), k;

		cr_assert_eq(rc, 0, "%s: %s", cases[i].fmt, lks_errmsg());
		cr_assert_eq(r.n, cases[i].steps, "%s: %d records", cases[i].fmt, r.n);
		for (k = 0; k < r.n && r.step[k] != 2; k++)
			;
		cr_assert(k < r.n && r.loss[k] == cases[i].loss, "%s: step 2's loss", cases[i].fmt);
		free(text);
	}
}

/* A redraw longer than any line, with no '\r' after it: what a terminal shows is too long
   to be a metric line; a line format counts it as ignored, a whole-file format refuses it
   at its file:line, as jsonl refuses a line of a bar cut (each of its lines is a record). */
Test(import_console, a_line_too_long_after_its_last_carriage_return_is_no_metric_line)
{
	char *text = with_bar("{'loss': 11.02}\n", "\r"), *p;
	struct recs r;

	text = realloc(text, strlen(text) + 70001 + 20);
	cr_assert_not_null(text);
	p = text + strlen(text);
	memset(p, 'x', 70000);
	strcpy(p + 70000, "\n{'loss': 10.5}\n");
	cr_assert_eq(parse("hf-trainer", text, strlen(text), &r), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "'t.log':2: a line longer than"), "%s", lks_errmsg());
	free(text);
	text = with_bar("{\"step\": 1, \"loss\": 1.5}\n", "\r{\"step\": 2, \"loss\": 1.25}\n");
	cr_assert_eq(parse("jsonl", text, strlen(text), &r), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "'t.log':2: line longer than"), "%s", lks_errmsg());
	free(text);
}

/* A NUL byte: bad input at its file:line in the formats read whole too, where the line
   ended at it and what followed was lost (a value cut to its first digits, a record). */
Test(import_console, a_nul_byte_is_refused_at_its_line_in_the_formats_read_whole)
{
	static const struct {
		const char *fmt, *text;
		size_t len;
		const char *where;
	} cases[] = {
#define TEXT(s) s, sizeof(s) - 1
		{ "composer", TEXT("[batch=1/100]:\n\t Train loss/train/total: 11.6\000525\n"),
		  "'t.log':2: a NUL byte" },
		{ "hf-trainer", TEXT("{'loss': 11.02}\n\0\0\0\0\0\0\0\0{'loss': 10.5}\n"
		                     "{'loss': 10.1}\n"), "'t.log':2: a NUL byte" },
		{ "torchtitan-losses", TEXT("1 8.04\n2 7.9\0001\n3 7.5\n"), "'t.log':2: a NUL byte" },
#undef TEXT
	};
	struct recs r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = parse(cases[i].fmt, cases[i].text, cases[i].len, &r);

		cr_assert_eq(rc, LKS_E_BAD_INPUT, "%s: rc %d", cases[i].fmt, rc);
		cr_assert(strstr(lks_errmsg(), cases[i].where), "%s: %s", cases[i].fmt, lks_errmsg());
	}
}

/* Hugging Face's console prints no step: a resumed run's second console began at step 1
   again, read as a restart that dropped the whole first file. One such file is a run. */
Test(import_console, a_console_without_steps_is_a_runs_only_file)
{
	static const char c1[] = "{'loss': 11.0, 'epoch': 0.1}\n{'loss': 10.0, 'epoch': 0.2}\n"
	                         "{'loss': 9.0, 'epoch': 0.3}\n";
	static const char c2[] = "{'loss': 9.5, 'epoch': 0.3}\n{'loss': 8.0, 'epoch': 0.4}\n";
	static const char state[] = "{\"log_history\": [{\"loss\": 9.5, \"step\": 3}]}\n";
	const char *two[] = { c1, c2, NULL }, *after[] = { state, c1, NULL },
	           *before[] = { c1, state, NULL }, *one[] = { c1, NULL };
	lks_import_result res;

	cr_assert_eq(import_texts("hf-trainer", two, &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "a console that prints no step")
	          && strstr(lks_errmsg(), "trainer_state.json"), "%s", lks_errmsg());
	cr_assert_eq(import_texts("hf-trainer", after, &res), LKS_E_BAD_INPUT);
	cr_assert_eq(import_texts("hf-trainer", before, &res), LKS_E_BAD_INPUT);
	cr_assert_eq(import_texts("hf-trainer", one, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 3);
}

/* NeMo's iteration counts from 0 again each epoch: the step is global_step where the
   line prints it (a second epoch was refused as going backwards, or, in a file of its
   own, read as a restart that dropped the first); without it, an epoch after the first
   is bad input. */
Test(import_console, nemos_step_is_its_global_step_across_epochs)
{
	static const char e0[] =
		"Training epoch 0, iteration 0/2 | reduced_train_loss: 11.02 | global_step: 0\n"
		"Training epoch 0, iteration 1/2 | reduced_train_loss: 10.5 | global_step: 1\n"
		"Training epoch 0, iteration 2/2 | reduced_train_loss: 10.1 | global_step: 2\n";
	static const char e1[] =
		"Training epoch 1, iteration 0/2 | reduced_train_loss: 9.02 | global_step: 3\n"
		"Training epoch 1, iteration 1/2 | reduced_train_loss: 8.5 | global_step: 4\n";
	static const char bare[] = "Training epoch 0, iteration 0/2 | reduced_train_loss: 11.02\n"
	                           "Training epoch 1, iteration 0/2 | reduced_train_loss: 9.02\n";
	const char *split[] = { e0, e1, NULL };
	char both[sizeof(e0) + sizeof(e1)];
	lks_import_result res;
	struct recs r;

	snprintf(both, sizeof(both), "%s%s", e0, e1);
	cr_assert_eq(parse("nemo", both, strlen(both), &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.n, 5);
	cr_assert(r.step[3] == 3 && r.loss[3] == 9.02 && r.step[4] == 4);
	cr_assert_eq(import_texts("nemo", split, &res), 0, "%s", lks_errmsg());
	cr_assert(res.steps == 4 && res.counts.restarts == 0 && res.counts.records == 5);
	cr_assert_eq(parse("nemo", bare, strlen(bare), &r), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "'t.log':2: epoch 1") && strstr(lks_errmsg(), "global_step"),
	          "%s", lks_errmsg());
}

/* Composer's progress in tokens (a duration in tokens): a count past 2^31, no step; the
   step is the batch, time/batch + 1 (logged at the batch's start), or time/batch itself
   where the record's time/token is the progress count (fit_end's final values). Values
   that are no number (None, a table) are left, as a string is. */
Test(import_console, composers_progress_in_tokens_steps_by_its_batches)
{
	static const char log[] =
		"[token=4096/10000000000]:\n"
		"\t Train time/batch: 0\n\t Train time/token: 0\n"
		"\t Train loss/train/total: 11.6525\n"
		"\t Train generations: {\"columns\":[\"a\",\"b\"],\"data\":[[\"x: 1\",2]]}\n"
		"\t Train metrics/train/X: None\n"
		"[token=3000000000/10000000000]:\n"
		"\t Train time/batch: 1\n\t Train time/token: 4096\n"
		"\t Train loss/train/total: 11.5000\n"
		"[token=3000004096/10000000000]:\n"
		"\t Train time/batch: 3\n\t Train time/token: 3000004096\n"
		"\t Train loss/train/total: 11.4000\n";
	static const char no_batch[] = "[token=4096/10000000000]:\n"
	                               "\t Train loss/train/total: 11.6525\n";
	struct recs r;

	cr_assert_eq(parse("composer", log, strlen(log), &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.n, 3);
	cr_assert(r.step[0] == 1 && r.step[1] == 2 && r.step[2] == 3, "%d %d %d", r.step[0],
	          r.step[1], r.step[2]);
	cr_assert(r.loss[0] == 11.6525 && r.loss[2] == 11.4);
	cr_assert_eq(parse("composer", no_batch, strlen(no_batch), &r), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "'t.log':1: progress in tokens"), "%s", lks_errmsg());
}
