/*
 * import_composer.c: Composer's (and so LLM-Foundry's) console log (import.h), read after
 * the code that prints it, composer/loggers/console_logger.py of mosaicml/composer at
 * 2052adc (log_to_console, _get_progress_string) and format_log_data_value (a float as
 * f'{data:.4f}', an int as str(data)):
 *
 *   [batch=12/100]:
 *   	 Train loss/train/total: 11.6525
 *   	 Train metrics/train/LanguageCrossEntropy: 11.6525
 *   	 Train time/batch: 12
 *
 * A progress line, "[batch=B/T]:" (or "[sample=N/M]:", "[token=N/M]:": the duration's unit,
 * its count the step) or, for a duration in epochs, "[epoch=E][batch=B/T]:" (B counts from
 * 1 within the epoch: the step is (E - 1) T + B), starts a record; its "\t Train NAME:
 * VALUE" lines are its metrics, loss/train/total the loss, every other name as written
 * ('/' and '-' made '_'). Eval progress ("[Eval batch=...]") and its "Eval ..." lines, a
 * string value ("\"...\"") or a tensor's shape, and every other line are ignored. Read
 * whole, one record from several lines, as one rank's log.
 */
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

/* A progress line "[...]...:" (s .. end): its step into *step; 1, 0 when it is not one, or
   bad input. */
static int lks_composer_progress(const char *s, const char *end, long line, const char *path,
                                 int *step)
{
	long long epoch = -1, n = -1, m = -1, v, t;
	const char *p = s, *key;
	size_t klen;
	char digits[32];

	if (end - s < 4 || end[-1] != ':' || !memcmp(s, "[Eval", 5))
		return 0;
	while (p < end - 1) {
		if (lks_progress_group(&p, end, &key, &klen, &v, &t))
			return 0;
		if (klen == 5 && !memcmp(key, "epoch", 5))
			epoch = v;
		else {
			n = v;
			m = t;
		}
	}
	if (n < 0)
		return 0;
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

/* "\t Train NAME: VALUE" into rec; 0 (a string or a tensor's shape: left), or bad input */
static int lks_composer_metric(const char *s, const char *end, lks_import_rec *rec,
                               const char *path)
{
	const char *colon = NULL, *v;

	for (const char *q = end; !colon && q > s;)
		if (*--q == ':')
			colon = q;
	if (!colon)
		return lks_err("'%s':%ld: metric '%.*s' has no value", path, rec->line,
		               (int)(end - s), s), LKS_E_BAD_INPUT;
	for (v = colon + 1; v < end && *v == ' '; v++)
		;
	if (v < end && (*v == '"' || !memcmp(v, "Tensor", end - v < 6 ? (size_t)(end - v) : 6)))
		return 0;
	int rc = lks_import_fields(rec, LKS_IMPORT_COMPOSER, s, end, '\n', ':', path);

	return rc == 1 ? 0 : rc;
}

struct lks_composer_read {
	lks_import_rec rec;
	int open;               /* rec is a progress line's, its metric lines may follow */
	const char *path;
	lks_import_sink sink;
	void *arg;
	lks_import_counts *c;
};

/* The record open, if it has metrics, to the sink; 0 or the sink's answer. */
static int lks_composer_flush(struct lks_composer_read *x)
{
	return lks_import_rec_close(&x->rec, &x->open, x->sink, x->arg, x->c);
}

/* One line: a metric of the record open, or a progress line, or another (ignored). */
static int lks_composer_line(void *arg, char *line, size_t len, long at)
{
	struct lks_composer_read *x = arg;
	const char *end = line + len, *s, *t;
	int rank, ranked, rc, step;

	s = lks_import_rank_prefix(line, &rank, &ranked);
	for (t = s; t < end && (*t == '\t' || *t == ' '); t++)
		;
	if (x->open && t > s && end - t > 6 && !memcmp(t, "Train ", 6)) {
		x->rec.line = at;  /* where a bad value is said to be */
		return lks_composer_metric(t + 6, end, &x->rec, x->path);
	}
	if ((rc = lks_composer_flush(x)))
		return rc;
	if ((rc = lks_composer_progress(s, end, at, x->path, &step)) != 1) {
		x->c->ignored += rc == 0;
		return rc;
	}
	memset(&x->rec, 0, sizeof(x->rec));
	x->rec.line = at;
	x->rec.step = step;
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
	*x = (struct lks_composer_read){ .path = path, .sink = sink, .arg = arg, .c = c };
	if ((rc = lks_import_each_line(path, f, c, lks_composer_line, x)) == 0)
		rc = lks_composer_flush(x);
	free(x);
	return rc;
}

const lks_import_format lks_import_composer_format = {
	.id = LKS_IMPORT_COMPOSER,
	.name = "composer",
	.what = "Composer's and LLM-Foundry's console log ('[batch=12/100]:', then '\\t Train "
	        "loss/train/total: 11.6525' lines)",
	.parse = lks_import_parse_composer,
	.labels = lks_composer_labels,
};
