/*
 * import_titan_losses.c: torchtitan's expected losses (import.h), the files its tests
 * compare a run with, read as they are written in pytorch/torchtitan's tests/assets/losses/
 * (llama3_cuda.txt at 13a712e: rows "1 8.048324584960938", step and loss; real_pg/a10g/
 * llama3.txt at 01d2bd3: "# config: ...", "# ngpu: 8", "# parallelism: ..." comments, then
 * "# step loss grad_norm" naming the columns, then rows "1 8.023969650268555
 * 1.5995219945907593"). The values are float32 written in full (17 significant digits at
 * most), so they are stored as written, exactly.
 *
 * A comment line whose words start with "step" names the columns of the rows after it
 * (without one: step, loss); other comments and blank lines are counted as ignored. A row
 * is the step, then one number per column: a missing or extra number, or a bad one, is bad
 * input at file:line. One rank; rows in step order, one per step. Read whole (such a file
 * holds a few hundred rows), as a golden file is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

#define LKS_LOSSES_COLS 16

struct lks_losses_cols {
	char name[LKS_LOSSES_COLS][LKS_IMPORT_NAME_MAX];
	int n;
};

/* The next word of s (from *p, up to end): its start and length, or 0 at the end. */
static size_t lks_word(const char *end, const char **p)
{
	const char *q;

	while (*p < end && (**p == ' ' || **p == '\t' || **p == '\r'))
		++*p;
	for (q = *p; q < end && *q != ' ' && *q != '\t' && *q != '\r'; q++)
		;
	return (size_t)(q - *p);
}

/* A comment: the columns it names where its first word is "step"; 1 when it did. */
static int lks_losses_header(const char *s, const char *end, struct lks_losses_cols *c,
                             const char *path, long line)
{
	const char *p = s + 1;
	size_t k = lks_word(end, &p);

	if (k != 4 || memcmp(p, "step", 4))
		return 0;
	c->n = 0;
	for (p += k; (k = lks_word(end, &p)); p += k) {
		if (c->n == LKS_LOSSES_COLS || k >= LKS_IMPORT_NAME_MAX)
			return lks_err("'%s':%ld: more than %d columns, or a name of %zu characters",
			               path, line, LKS_LOSSES_COLS, k), LKS_E_BAD_INPUT;
		memcpy(c->name[c->n], p, k);
		c->name[c->n++][k] = 0;
	}
	return 1;
}

/* A row: the step and a value per column into rec. */
static int lks_losses_row(const char *s, const char *end, const struct lks_losses_cols *c,
                          lks_import_rec *rec, const char *path)
{
	const char *p = s;
	size_t k = lks_word(end, &p);
	int rc;

	if (lks_import_step(p, k, &rec->step))
		return lks_import_bad_step(path, rec->line, "step", p, k);
	for (int i = 0; i < c->n; i++) {
		double x;
		int64_t dec;

		p += k;
		if (!(k = lks_word(end, &p)))
			return lks_err("'%s':%ld: step %d has no %s (the columns: step %s...)", path,
			               rec->line, rec->step, c->name[i], c->name[0]), LKS_E_BAD_INPUT;
		if ((rc = lks_import_number_dec(p, k, 0, &x, &dec)))
			return lks_import_bad_value(path, rec->line, c->name[i], strlen(c->name[i]), p, k,
			                            rc);
		if ((rc = lks_import_rec_add_dec(rec, LKS_IMPORT_TITAN_LOSSES, c->name[i],
		                                 strlen(c->name[i]), x, dec, path)))
			return rc;
	}
	p += k;
	if (lks_word(end, &p))
		return lks_err("'%s':%ld: step %d has more numbers than its %d columns", path,
		               rec->line, rec->step, c->n), LKS_E_BAD_INPUT;
	return 0;
}

struct lks_losses_read {
	struct lks_losses_cols cols;
	lks_import_rec rec;
	const char *path;
	lks_import_sink sink;
	void *arg;
	lks_import_counts *c;
};

/* One line: a comment (the columns where it names them), a blank, or a row. */
static int lks_losses_line(void *arg, char *line, size_t len, long at)
{
	struct lks_losses_read *x = arg;
	const char *s = line, *end = line + len;
	int rc;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == end || *s == '#') {
		if (s < end && (rc = lks_losses_header(s, end, &x->cols, x->path, at)) != 0)
			return rc == 1 ? 0 : rc;
		x->c->ignored++;
		return 0;
	}
	memset(&x->rec, 0, sizeof(x->rec));
	x->rec.line = at;
	if ((rc = lks_losses_row(s, end, &x->cols, &x->rec, x->path)))
		return rc;
	x->c->records++;
	return x->sink(x->arg, &x->rec);
}

static int lks_import_parse_titan_losses(const char *path, FILE *f, lks_import_sink sink,
                                         void *arg, lks_import_counts *c)
{
	struct lks_losses_read *x = calloc(1, sizeof(*x));
	int rc;

	if (!x)
		return lks_err("out of memory");
	*x = (struct lks_losses_read){ .cols = { { "loss" }, 1 }, .path = path, .sink = sink,
	                               .arg = arg, .c = c };
	rc = lks_import_each_line(path, f, c, lks_losses_line, x);
	free(x);
	return rc;
}

static const lks_import_label_row lks_titan_losses_labels[] = {
	{ "loss", "loss" },
	{ "grad_norm", "grad_norm" },
	{ NULL, NULL },
};

const lks_import_format lks_import_titan_losses_format = {
	.id = LKS_IMPORT_TITAN_LOSSES,
	.name = "torchtitan-losses",
	.what = "torchtitan's expected losses (tests/assets/losses/*.txt: '# step loss grad_norm', "
	        "then rows)",
	.parse = lks_import_parse_titan_losses,
	.labels = lks_titan_losses_labels,
};
