/*
 * import_composer.c: Composer's (and so LLM-Foundry's) console log (import.h), read after
 * the code that prints it, composer/loggers/console_logger.py of mosaicml/composer at
 * 2052adc (log_to_console, _get_progress_string) and format_log_data_value (a float as
 * f'{data:.4f}', an int as str(data)):
 *
 *   [batch=12/100]:
 *   	 Train loss/train/total: 11.6525
 *   	 Train metrics/train/LanguageCrossEntropy: 11.6525
 *   	 Train time/batch: 11
 *
 * A progress line starts a record; its "\t Train NAME: VALUE" lines are its metrics,
 * loss/train/total the loss, every other name as written ('/' and '-' made '_'). The step
 * is the batch: "[batch=B/T]:" (a duration in batches) gives it, and for a duration in
 * epochs "[epoch=E][batch=B/T]:" (B counts from 1 within the epoch: the step is
 * (E - 1) T + B). A duration in another unit prints that unit's count, "[token=N/M]:",
 * "[sample=N/M]:" (tokens pass 2^31 within hours), which is no step: the step is then the
 * record's "time/batch" (6405188, composer/trainer/trainer.py: the trainer logs the
 * batches done at each batch's start, the console prints after its end) plus 1; but where
 * the record's "time/<unit>" is the progress count itself, the values are those the
 * trainer logs as the fit ends (fit_end prints them when the last batch was not printed),
 * the batches done already, and "time/batch" is the step. A record of such a unit
 * without "time/batch" is bad input: its step cannot be told.
 * Eval progress ("[Eval batch=...]") and its "Eval ..." lines, a value that is no number
 * (lks_composer_no_number), and every other line are ignored. Read whole, one record from
 * several lines, as one rank's log.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

static const lks_import_label_row lks_composer_labels[] = {
	{ "loss/train/total", "loss" },
	{ NULL, NULL },
};

/* "[key=N/M]" or "[key=N]" at *p: key (its length), N and M (-1 when none); *p past it.
   0, or -1 where *p holds no such group. */
static int lks_progress_group(const char **p, const char *end, const char **key, size_t *klen,
                              long long *n, long long *m)
{
	const char *q = *p + 1, *eq;
	char *e;

	if (*p >= end || **p != '[' || !(eq = memchr(q, '=', (size_t)(end - q))))
		return -1;
	*key = q;
	*klen = (size_t)(eq - q);
	*n = strtoll(eq + 1, &e, 10);
	if (e == eq + 1 || e >= end)
		return -1;
	*m = -1;
	if (*e == '/') {
		const char *f = e + 1;

		*m = strtoll(f, &e, 10);
		if (e == f || e >= end)
			return -1;
	}
	if (*e != ']')
		return -1;
	*p = e + 1;
	return 0;
}

/* A progress line "[...]...:" (s .. end): its step into *step (1), or a count of another
   unit than batches into *count, its unit's name into unit (2: the step is the record's
   "time/batch", lks_composer_flush); 0 when it is not one, or bad input. */
static int lks_composer_progress(const char *s, const char *end, long line, const char *path,
                                 int *step, long long *count, char unit[16])
{
	long long epoch = -1, n = -1, m = -1, v, t;
	const char *p = s, *key = NULL;
	size_t klen = 0, kl;
	char digits[32];

	if (end - s < 4 || end[-1] != ':' || !memcmp(s, "[Eval", 5))
		return 0;
	while (p < end - 1) {
		const char *k;

		if (lks_progress_group(&p, end, &k, &kl, &v, &t))
			return 0;
		if (kl == 5 && !memcmp(k, "epoch", 5)) {
			epoch = v;
		} else {
			n = v;
			m = t;
			key = k;
			klen = kl;
		}
	}
	if (n < 0)
		return 0;
	if (!(klen == 5 && !memcmp(key, "batch", 5))) {  /* tokens, samples: no step */
		if (n == LLONG_MAX || klen >= 16)  /* strtoll's bound: digits past it */
			return lks_err("'%s':%ld: a progress count past %lld", path, line, LLONG_MAX),
			       LKS_E_BAD_INPUT;
		*count = n;
		memcpy(unit, key, klen);
		unit[klen] = 0;
		return 2;
	}
	/* beyond a step's bounds before any product (no overflow: each is under 2^31) */
	if (n > LKS_IMPORT_MAX_STEP || m > LKS_IMPORT_MAX_STEP || epoch > LKS_IMPORT_MAX_STEP)
		return lks_err("'%s':%ld: a progress count over %d", path, line, LKS_IMPORT_MAX_STEP),
		       LKS_E_BAD_INPUT;
	if (epoch > 1 && m < 0)
		return lks_err("'%s':%ld: epoch %lld's batches have no total: the step cannot be told",
		               path, line, epoch), LKS_E_BAD_INPUT;
	if (epoch > 1)
		n += (epoch - 1) * m;
	snprintf(digits, sizeof(digits), "%lld", n);
	if (lks_import_step(digits, strlen(digits), step))
		return lks_import_bad_step(path, line, "batch", digits, strlen(digits));
	return 1;
}

/* Whether the value v .. end is one of format_log_data_value's forms of no number
   (composer/loggers/logger.py at 6405188): None, a string ("..."), a tensor of more than
   one element ("Tensor of shape ..."), a mapping ("{ ... }") or another iterable
   ("[...]"); or a table of log_table (pandas' JSON, '{"columns":[...],"data":[...]}'). */
static int lks_composer_no_number(const char *v, const char *end)
{
	static const char *const forms[] = { "\"", "Tensor of shape", "{", "[" };
	size_t n = (size_t)(end - v);

	if (n == 4 && !memcmp(v, "None", 4))
		return 1;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (n >= strlen(forms[i]) && !memcmp(v, forms[i], strlen(forms[i])))
			return 1;
	return 0;
}

/* "\t Train NAME: VALUE" into rec; 0 (no number: left), or bad input */
static int lks_composer_metric(const char *s, const char *end, lks_import_rec *rec,
                               const char *path)
{
	const char *colon = NULL, *v;

	for (const char *q = s; !colon && q + 1 < end; q++)  /* the name's end: ": " */
		if (q[0] == ':' && q[1] == ' ')
			colon = q;
	if (!colon)
		return lks_err("'%s':%ld: metric '%.*s' has no value", path, rec->line,
		               (int)(end - s), s), LKS_E_BAD_INPUT;
	for (v = colon + 1; v < end && *v == ' '; v++)
		;
	if (lks_composer_no_number(v, end))
		return 0;
	int rc = lks_import_fields(rec, LKS_IMPORT_COMPOSER, s, end, '\n', ':', path);

	return rc == 1 ? 0 : rc;
}

struct lks_composer_read {
	lks_import_rec rec;
	int open;               /* rec is a progress line's, its metric lines may follow */
	long at;                /* the progress line's */
	/* a progress line of another unit than batches: its count (-1: a batch's, the step
	   known), its unit, and the record's "time/batch" and "time/<unit>" (-1: none yet) */
	long long count, batch, done;
	char unit[16];
	const char *path;
	lks_import_sink sink;
	void *arg;
	lks_import_counts *c;
};

/* The record open, if it has metrics, to the sink, its step the batch where its progress
   line counted another unit; 0, bad input, or the sink's answer. */
static int lks_composer_flush(struct lks_composer_read *x)
{
	long long step = x->batch + (x->done != x->count);

	if (x->open && x->rec.n && x->count >= 0) {
		if (x->batch < 0)
			return lks_err("'%s':%ld: progress in %ss and no 'Train time/batch' line: its "
			               "step (a batch) cannot be told", x->path, x->at, x->unit),
			       LKS_E_BAD_INPUT;
		if (step > LKS_IMPORT_MAX_STEP)
			return lks_err("'%s':%ld: batch %lld: a step over %d", x->path, x->at, step,
			               LKS_IMPORT_MAX_STEP), LKS_E_BAD_INPUT;
		x->rec.step = (int)step;
	}
	return lks_import_rec_close(&x->rec, &x->open, x->sink, x->arg, x->c);
}

/* "time/NAME: N" (s .. end, a metric line's text) into *v where NAME is name. */
static void lks_composer_time(const char *s, const char *end, const char *name, long long *v)
{
	size_t k = strlen(name);
	char *e;

	if ((size_t)(end - s) > k + 7 && !memcmp(s, "time/", 5) && !memcmp(s + 5, name, k)
	    && s[5 + k] == ':' && s[6 + k] == ' ') {
		long long n = strtoll(s + 7 + k, &e, 10);

		*v = e == end && n >= 0 ? n : *v;
	}
}

/* One line: a metric of the record open, or a progress line, or another (ignored). */
static int lks_composer_line(void *arg, char *line, size_t len, long at)
{
	struct lks_composer_read *x = arg;
	const char *end = line + len, *s, *t;
	int rank, ranked, rc, step = 0;

	s = lks_import_rank_prefix(line, &rank, &ranked);
	for (t = s; t < end && (*t == '\t' || *t == ' '); t++)
		;
	if (x->open && t > s && end - t > 6 && !memcmp(t, "Train ", 6)) {
		x->rec.line = at;  /* where a bad value is said to be */
		lks_composer_time(t + 6, end, "batch", &x->batch);
		lks_composer_time(t + 6, end, x->unit, &x->done);
		return lks_composer_metric(t + 6, end, &x->rec, x->path);
	}
	if ((rc = lks_composer_flush(x)))
		return rc;
	x->count = -1;
	if ((rc = lks_composer_progress(s, end, at, x->path, &step, &x->count, x->unit)) <= 0) {
		x->c->ignored += rc == 0;
		return rc;
	}
	memset(&x->rec, 0, sizeof(x->rec));
	x->rec.line = x->at = at;
	x->rec.step = step;
	x->batch = x->done = -1;
	x->open = 1;
	return 0;
}

static int lks_import_parse_composer(const char *path, FILE *f, lks_import_sink sink,
                                     void *arg, lks_import_counts *c)
{
	struct lks_composer_read *x = calloc(1, sizeof(*x));
	int rc;

	if (!x)
		return lks_err("out of memory");
	*x = (struct lks_composer_read){ .count = -1, .path = path, .sink = sink, .arg = arg,
	                                 .c = c };
	if ((rc = lks_import_each_line(path, f, c, lks_composer_line, x)) == 0)
		rc = lks_composer_flush(x);
	free(x);
	return rc;
}

const lks_import_format lks_import_composer_format = {
	.id = LKS_IMPORT_COMPOSER,
	.name = "composer",
	.what = "Composer's and LLM-Foundry's console log ('[batch=12/100]:', then '\\t Train "
	        "loss/train/total: 11.6525' lines; '[token=N/M]:' steps by its time/batch)",
	.parse = lks_import_parse_composer,
	.labels = lks_composer_labels,
};
