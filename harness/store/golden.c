/*
 * golden.c: golden files (golden.h): a stored run (run.h) into a text file, and back with
 * every line checked.
 *
 * A stored run and a golden file become the same struct, so writing is "read the run, print
 * it", and comparing (verify/golden_compare.c) is "read both, walk both"; the test that a
 * written file reads back equal is the comparison itself.
 */
#include "harness/store/golden.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/base/atomic_file.h"
#include "harness/base/file.h"
#include "harness/base/name.h"
#include "harness/store/import_rec.h"
#include "kernels/err.h"

static const char lks_golden_magic[] = "# lockstep golden";
static const char lks_golden_step_head[] = "step\trank\tloss\tgrad_norm\tlr";
static const char lks_golden_stat_head[] =
	"step\trank\tseq\tname\tphase\tl2\tamax\tscale\tnonfinite\tunderflow\tsaturated\thash";
/* an imported run's (class import): its metrics in place of the step and stat rows */
static const char lks_golden_metric_head[] = "step\trank\tmetric\tvalue";

/* ---- where ---- */

const char *lks_golden_dir(const char *given)
{
	const char *env = getenv("LKS_GOLDEN_DIR");

	if (given && *given)
		return given;
	return env && *env ? env : "golden";
}

int lks_golden_path(const char *dir, const char *cls, const char *case_name,
                    const char *run_name, char *buf, size_t size)
{
	int n;

	/* names read from a database an older lockstep wrote may not keep the rule: one such
	   as '..' must not lead the file out of its folder */
	if (lks_name_check("case", case_name, strlen(case_name))
	    || lks_name_check("run", run_name, strlen(run_name))
	    || lks_name_check("golden class", cls, strlen(cls)))
		return -1;
	n = snprintf(buf, size, "%s/%s/%s/%s.tsv", dir, cls, case_name, run_name);
	if (n < 0 || (size_t)n >= size)
		return lks_err("golden path too long for case '%s', run '%s'", case_name, run_name);
	return 0;
}

/* ---- writing ---- */

/* "%.17g" for doubles, "%.9g" for floats: see golden.h. */
static void lks_put_f64(FILE *f, double v)
{
	if (isnan(v))
		fputs("nan", f);
	else
		fprintf(f, "%.17g", v);
}

static void lks_put_f32(FILE *f, float v)
{
	if (isnan(v))
		fputs("nan", f);
	else
		fprintf(f, "%.9g", (double)v);
}

/* A header value on one line: tabs and newlines become spaces. */
static void lks_put_value(FILE *f, const char *key, const char *v)
{
	fprintf(f, "# %s: ", key);
	for (; v && *v; v++)
		fputc(*v == '\n' || *v == '\r' || *v == '\t' ? ' ' : *v, f);
	fputc('\n', f);
}

/* The stat rows of step, as lines; *n: how many. */
static int lks_golden_print_stats(lks_stored_run *g, int step, FILE *f, size_t *n)
{
	const lks_stat_row *rows;

	if (lks_stored_run_stats(g, step, &rows, n))
		return -1;
	for (size_t i = 0; i < *n; i++) {
		const lks_stat_row *r = &rows[i];

		if (r->seq < 0 || r->seq >= g->nt)
			return lks_err("stats row with seq %d outside the %d tensors", r->seq, g->nt);
		fprintf(f, "%d\t%d\t%d\t%s\t%s\t", r->step, r->rank, r->seq, g->names[r->seq],
		        lks_phase_name(g->phases[r->seq]));
		lks_put_f64(f, r->l2);
		fputc('\t', f);
		lks_put_f32(f, r->amax);
		fputc('\t', f);
		lks_put_f32(f, r->scale);
		fprintf(f, "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%016" PRIx64 "\n", r->nonfinite,
		        r->underflow, r->saturated, r->hash);
	}
	return 0;
}

/* An imported run's metric rows, every one as written ("%.17g" gives the double back). */
static int lks_golden_print_metrics(const lks_stored_run *g, FILE *f)
{
	fprintf(f, "%s\n", lks_golden_metric_head);
	for (size_t i = 0; i < g->nmrows; i++) {
		fprintf(f, "%d\t%d\t%s\t", g->mrows[i].step, g->mrows[i].rank,
		        g->mnames[g->mrows[i].m]);
		lks_put_f64(f, g->mrows[i].value);
		fputc('\n', f);
	}
	fprintf(f, "# end\t%zu\n", g->nmrows);
	return 0;
}

static int lks_golden_print(lks_stored_run *g, FILE *f)
{
	size_t nstats = 0;

	fprintf(f, "%s %d\n", lks_golden_magic, LKS_GOLDEN_VERSION);
	lks_put_value(f, "case", g->case_name);
	lks_put_value(f, "run", g->run_name);
	lks_put_value(f, "recipe", g->recipe);
	lks_put_value(f, "options", g->options);
	lks_put_value(f, "backend", g->backend);
	fprintf(f, "# world_size: %d\n# steps: %d\n# seed: %" PRIu64 "\n", g->W, g->steps, g->seed);
	lks_put_value(f, "lockstep", g->version);
	lks_put_value(f, "compiler", g->compiler);
	lks_put_value(f, "isa", g->isa);
	if (g->nm)
		return lks_golden_print_metrics(g, f);
	fprintf(f, "%s\n", lks_golden_step_head);
	for (int i = 0; i < g->nsteprows; i++) {
		const lks_step_row *r = &g->steprows[i];

		fprintf(f, "%d\t%d\t", r->step, r->rank);
		lks_put_f64(f, r->loss);
		fputc('\t', f);
		lks_put_f64(f, r->grad_norm);
		fputc('\t', f);
		lks_put_f64(f, r->lr);
		fputc('\n', f);
	}
	fprintf(f, "%s\n", lks_golden_stat_head);
	for (int step = 0; step < g->nsteps; step++) {
		size_t n;

		if (lks_golden_print_stats(g, step, f, &n))
			return -1;
		nstats += n;
	}
	fprintf(f, "# end\t%d\t%zu\n", g->nsteprows, nstats);
	return 0;
}

/* mkdir -p of the directories above path. */
static int lks_mkdirs_for(const char *path)
{
	char buf[1024];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return lks_err("path too long: '%s'", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) && errno != EEXIST)
			return lks_err("cannot create directory '%s': %s", buf, strerror(errno));
		*p = '/';
	}
	return 0;
}

int lks_golden_stage(lks_stored_run *g, const char *path, lks_atomic *a)
{
	int e;

	if (!g->status || strcmp(g->status, "complete")) {
		lks_err("run %lld ('%s' of case '%s') is %s: only a complete run can become golden",
		        (long long)g->id, g->run_name ? g->run_name : "", g->case_name ? g->case_name : "",
		        g->status && *g->status ? g->status : "of no status");
		return LKS_E_BAD_INPUT;
	}
	if (lks_mkdirs_for(path) || lks_atomic_open(a, path))
		return -1;
	if (lks_golden_print(g, a->f))
		goto fail;
	/* the bytes handed to the file system now, so that a full disk fails here, before
	   any golden of the set is renamed in */
	if (fflush(a->f) != 0 || ferror(a->f)) {
		e = errno;
		lks_err("cannot write '%s': %s", path, strerror(e));
		goto fail;
	}
	return 0;
fail:
	lks_atomic_abort(a);
	return -1;
}

int lks_golden_write(lks_stored_run *g, const char *path)
{
	lks_atomic a;
	int rc;

	if ((rc = lks_golden_stage(g, path, &a)) != 0)
		return rc;
	return lks_atomic_commit(&a);
}

/* ---- reading ---- */

struct lks_rd {
	const char *path;
	int line;
	lks_stored_run *g;
	unsigned have;            /* header keys seen, a bit each */
};

static int lks_bad(struct lks_rd *r, const char *fmt, ...) LKS_PRINTF(2, 3);

/* "path:line: what", and LKS_E_BAD_INPUT */
static int lks_bad(struct lks_rd *r, const char *fmt, ...)
{
	char what[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	lks_err("%s:%d: %s", r->path, r->line, what);
	return LKS_E_BAD_INPUT;
}

/* Splits line at tabs into at most max fields; the count. */
static int lks_split(char *line, char **f, int max)
{
	int n = 0;

	f[n++] = line;
	for (char *p = line; *p; p++)
		if (*p == '\t') {
			*p = 0;
			if (n == max)
				return max + 1;
			f[n++] = p + 1;
		}
	return n;
}

static int lks_parse_i64(struct lks_rd *r, const char *col, const char *s, int64_t lo,
                         int64_t hi, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (!*s || *s == ' ' || *end || errno || v < lo || v > hi)
		return lks_bad(r, "bad %s '%s' (an integer in [%" PRId64 ", %" PRId64 "])", col, s, lo,
		               hi);
	*out = v;
	return 0;
}

static int lks_parse_int(struct lks_rd *r, const char *col, const char *s, int lo, int hi,
                         int *out)
{
	int64_t v = 0;
	int rc = lks_parse_i64(r, col, s, lo, hi, &v);

	*out = (int)v;
	return rc;
}

/* strtod / strtof accept what the writer writes (and a little more, e.g. "NAN", "1e3");
   the whole field must be the number. */
static int lks_parse_f64(struct lks_rd *r, const char *col, const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	if (!*s || *s == ' ' || *end)
		return lks_bad(r, "bad number '%s' in column '%s'", s, col);
	return 0;
}

static int lks_parse_f32(struct lks_rd *r, const char *col, const char *s, float *out)
{
	char *end;

	*out = strtof(s, &end);
	if (!*s || *s == ' ' || *end)
		return lks_bad(r, "bad number '%s' in column '%s'", s, col);
	return 0;
}

static int lks_parse_hash(struct lks_rd *r, const char *s, uint64_t *out)
{
	uint64_t v = 0;

	for (int i = 0; i < 16; i++) {
		int c = s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (d < 0)
			return lks_bad(r, "bad hash '%s' (16 lowercase hex digits)", s);
		v = v << 4 | (uint64_t)d;
	}
	if (s[16])
		return lks_bad(r, "bad hash '%s' (16 lowercase hex digits)", s);
	*out = v;
	return 0;
}

enum {
	LKS_H_CASE, LKS_H_RUN, LKS_H_RECIPE, LKS_H_OPTIONS, LKS_H_BACKEND, LKS_H_WORLD, LKS_H_STEPS,
	LKS_H_SEED, LKS_H_REQUIRED,
};
static const char *const lks_header_keys[LKS_H_REQUIRED] = {
	"case", "run", "recipe", "options", "backend", "world_size", "steps", "seed",
};

/* "# key: value"; keys beyond the required ones are kept where known (lockstep, compiler,
   isa) and otherwise allowed, so a later writer may add some without a new version. */
/* A header value into *dst (owned). */
static int lks_set_string(char **dst, const char *v)
{
	free(*dst);
	return (*dst = strdup(v)) ? 0 : lks_err("out of memory");
}

static int lks_read_header(struct lks_rd *r, char *line)
{
	lks_stored_run *g = r->g;
	char *key = line + 2, *colon = strstr(line, ": ");
	const char *v;
	int k;

	if (strncmp(line, "# ", 2) || !colon || colon == key)
		return lks_bad(r, "expected a header line '# key: value' or the step rows' column line");
	*colon = 0;
	v = colon + 2;
	for (k = 0; k < LKS_H_REQUIRED && strcmp(key, lks_header_keys[k]); k++)
		;
	if (k < LKS_H_REQUIRED && (r->have & (1u << k)))
		return lks_bad(r, "'%s' given twice in the header", key);
	if (k < LKS_H_REQUIRED)
		r->have |= 1u << k;
	if (k <= LKS_H_BACKEND && k != LKS_H_OPTIONS && !*v)
		return lks_bad(r, "empty '%s' in the header", key);
	switch (k) {
	case LKS_H_CASE: return lks_set_string(&g->case_name, v);
	case LKS_H_RUN: return lks_set_string(&g->run_name, v);
	case LKS_H_RECIPE: return lks_set_string(&g->recipe, v);
	case LKS_H_BACKEND: return lks_set_string(&g->backend, v);
	case LKS_H_OPTIONS: return lks_set_string(&g->options, v);
	case LKS_H_WORLD: return lks_parse_int(r, "world_size", v, 1, 1 << 20, &g->W);
	case LKS_H_STEPS: return lks_parse_int(r, "steps", v, 1, 1 << 30, &g->steps);
	case LKS_H_SEED: {
		char *end;

		errno = 0;
		g->seed = strtoull(v, &end, 10);
		if (!*v || *v < '0' || *v > '9' || *end || errno)
			return lks_bad(r, "bad seed '%s'", v);
		break;
	}
	default:
		if (!strcmp(key, "lockstep"))
			snprintf(g->version, sizeof(g->version), "%s", v);
		else if (!strcmp(key, "compiler"))
			snprintf(g->compiler, sizeof(g->compiler), "%s", v);
		else if (!strcmp(key, "isa"))
			snprintf(g->isa, sizeof(g->isa), "%s", v);
	}
	return 0;
}

static int lks_header_complete(struct lks_rd *r)
{
	for (int k = 0; k < LKS_H_REQUIRED; k++)
		if (!(r->have & (1u << k)))
			return lks_bad(r, "the header lacks '# %s: ...'", lks_header_keys[k]);
	return 0;
}

static int lks_read_step(struct lks_rd *r, char *line)
{
	lks_stored_run *g = r->g;
	char *f[6];
	lks_step_row row = { 0 };
	int n = lks_split(line, f, 5), rc;

	if (n != 5)
		return lks_bad(r, "a step row has 5 tab-separated columns (step rank loss grad_norm lr), "
		               "not %d", n);
	if ((rc = lks_parse_int(r, "step", f[0], 0, g->steps - 1, &row.step))
	    || (rc = lks_parse_int(r, "rank", f[1], 0, g->W - 1, &row.rank))
	    || (rc = lks_parse_f64(r, "loss", f[2], &row.loss))
	    || (rc = lks_parse_f64(r, "grad_norm", f[3], &row.grad_norm))
	    || (rc = lks_parse_f64(r, "lr", f[4], &row.lr)))
		return rc;
	if (g->nsteprows > 0) {
		const lks_step_row *p = &g->steprows[g->nsteprows - 1];

		if (row.step < p->step || (row.step == p->step && row.rank <= p->rank))
			return lks_bad(r, "step %d rank %d out of order (after step %d rank %d)", row.step,
			               row.rank, p->step, p->rank);
	}
	return lks_stored_run_push_steprow(g, &row);
}

static int lks_phase_parse(const char *s, lks_phase *out)
{
	for (int p = 0; p <= LKS_PHASE_RECOMPUTE; p++)
		if (!strcmp(s, lks_phase_name((lks_phase)p))) {
			*out = (lks_phase)p;
			return 0;
		}
	return -1;
}

/* Whether stat row a comes after p in (step, rank, seq) order, the order of a golden's rows. */
static int lks_stat_after(const lks_stat_row *a, const lks_stat_row *p)
{
	if (a->step != p->step)
		return a->step > p->step;
	if (a->rank != p->rank)
		return a->rank > p->rank;
	return a->seq > p->seq;
}

static int lks_read_stat(struct lks_rd *r, char *line)
{
	lks_stored_run *g = r->g;
	char *f[13];
	lks_stat_row row = { 0 };
	lks_phase phase;
	int n = lks_split(line, f, 12), rc;

	if (n != 12)
		return lks_bad(r, "a stats row has 12 tab-separated columns, not %d", n);
	if ((rc = lks_parse_int(r, "step", f[0], 0, g->steps - 1, &row.step))
	    || (rc = lks_parse_int(r, "rank", f[1], 0, g->W - 1, &row.rank))
	    || (rc = lks_parse_int(r, "seq", f[2], 0, 1 << 24, &row.seq)))
		return rc;
	if (!*f[3])
		return lks_bad(r, "empty tensor name");
	if (lks_phase_parse(f[4], &phase))
		return lks_bad(r, "bad phase '%s' (forward, backward, update or recompute)", f[4]);
	if ((rc = lks_stored_run_add_tensor(g, row.seq, f[3], phase)) < 0)
		return rc;
	if (rc > 0)
		return row.seq > g->nt
		       ? lks_bad(r, "seq %d before any row of seq %d", row.seq, g->nt)
		       : lks_bad(r, "seq %d is '%s' (%s) here but '%s' (%s) above", row.seq, f[3], f[4],
		                 g->names[row.seq], lks_phase_name(g->phases[row.seq]));
	if ((rc = lks_parse_f64(r, "l2", f[5], &row.l2))
	    || (rc = lks_parse_f32(r, "amax", f[6], &row.amax))
	    || (rc = lks_parse_f32(r, "scale", f[7], &row.scale))
	    || (rc = lks_parse_i64(r, "nonfinite", f[8], 0, INT64_MAX, &row.nonfinite))
	    || (rc = lks_parse_i64(r, "underflow", f[9], 0, INT64_MAX, &row.underflow))
	    || (rc = lks_parse_i64(r, "saturated", f[10], 0, INT64_MAX, &row.saturated))
	    || (rc = lks_parse_hash(r, f[11], &row.hash)))
		return rc;
	if (g->nstats > 0 && !lks_stat_after(&row, &g->stats[g->nstats - 1]))
		return lks_bad(r, "step %d rank %d seq %d out of order (rows go by step, rank, seq)",
		               row.step, row.rank, row.seq);
	return lks_stored_run_push_stat(g, &row);
}

/* A metric row of an imported run's golden: its kind from the import metric table. */
static int lks_read_metric(struct lks_rd *r, char *line)
{
	lks_stored_run *g = r->g;
	const lks_import_metric *row;
	const struct lks_mrow *p = g->nmrows ? &g->mrows[g->nmrows - 1] : NULL;
	char *f[5];
	int n = lks_split(line, f, 4), step, rank, rc;
	double v;

	if (n != 4)
		return lks_bad(r, "a metric row has 4 tab-separated columns (step rank metric value), "
		               "not %d", n);
	if ((rc = lks_parse_int(r, "step", f[0], 0, g->steps, &step))
	    || (rc = lks_parse_int(r, "rank", f[1], 0, g->W - 1, &rank))
	    || (rc = lks_parse_f64(r, "value", f[3], &v)))
		return rc;
	if (lks_name_check("metric", f[2], strlen(f[2])))
		return lks_bad(r, "%s", lks_errmsg());
	if (p && (step < p->step || (step == p->step && rank < p->rank)))
		return lks_bad(r, "step %d rank %d out of order (rows go by step, rank)", step, rank);
	if (p && step == p->step && rank == p->rank
	    && lks_stored_run_metric(g, step, rank, lks_stored_run_metric_find(g, f[2])))
		return lks_bad(r, "metric '%s' twice at step %d rank %d", f[2], step, rank);
	row = lks_import_metric_find(f[2]);
	return lks_stored_run_add_metric(g, step, rank, f[2],
	                                 row ? row->kind : LKS_METRIC_NUMERICS, v, 0);
}

/* "# end<TAB>ROWS" after an imported run's metric rows. */
static int lks_read_metric_end(struct lks_rd *r, char *line)
{
	char *f[3];
	int64_t n = 0;
	int rc;

	if (lks_split(line, f, 2) != 2 || strcmp(f[0], "# end"))
		return lks_bad(r, "expected a metric row or the end line '# end<TAB>METRIC_ROWS'");
	if ((rc = lks_parse_i64(r, "metric row count", f[1], 0, INT64_MAX, &n)))
		return rc;
	if ((size_t)n != r->g->nmrows)
		return lks_bad(r, "the end line counts %" PRId64 " metric rows, the file has %zu", n,
		               r->g->nmrows);
	return 0;
}

static int lks_read_end(struct lks_rd *r, char *line)
{
	char *f[4];
	int64_t nsteps = 0, nstats = 0;
	int rc;

	if (lks_split(line, f, 3) != 3 || strcmp(f[0], "# end"))
		return lks_bad(r, "expected a stats row or the end line '# end<TAB>STEP_ROWS<TAB>STAT_ROWS'");
	if ((rc = lks_parse_i64(r, "step row count", f[1], 0, INT64_MAX, &nsteps))
	    || (rc = lks_parse_i64(r, "stats row count", f[2], 0, INT64_MAX, &nstats)))
		return rc;
	if (nsteps != r->g->nsteprows || (size_t)nstats != r->g->nstats)
		return lks_bad(r, "the end line counts %" PRId64 " step and %" PRId64 " stats rows, the "
		               "file has %d and %zu", nsteps, nstats, r->g->nsteprows, r->g->nstats);
	return 0;
}

enum { LKS_RD_MAGIC, LKS_RD_HEADER, LKS_RD_STEPS, LKS_RD_STATS, LKS_RD_DONE, LKS_RD_METRICS };

static int lks_read_line(struct lks_rd *r, int *state, char *line)
{
	int version, rc;

	switch (*state) {
	case LKS_RD_MAGIC:
		if (strncmp(line, lks_golden_magic, sizeof(lks_golden_magic) - 1)
		    || line[sizeof(lks_golden_magic) - 1] != ' ')
			return lks_bad(r, "not a golden file (the first line is not '%s %d')",
			               lks_golden_magic, LKS_GOLDEN_VERSION);
		if ((rc = lks_parse_int(r, "format version", line + sizeof(lks_golden_magic), 1, 1 << 20,
		                        &version)))
			return rc;
		if (version != LKS_GOLDEN_VERSION)
			return lks_bad(r, "golden format version %d (this lockstep reads %d)", version,
			               LKS_GOLDEN_VERSION);
		*state = LKS_RD_HEADER;
		return 0;
	case LKS_RD_HEADER:
		if (!strcmp(line, lks_golden_metric_head)) {
			*state = LKS_RD_METRICS;
			return lks_header_complete(r);
		}
		if (strcmp(line, lks_golden_step_head))
			return lks_read_header(r, line);
		*state = LKS_RD_STEPS;
		return lks_header_complete(r);
	case LKS_RD_METRICS:
		if (line[0] != '#')
			return lks_read_metric(r, line);
		*state = LKS_RD_DONE;
		return lks_read_metric_end(r, line);
	case LKS_RD_STEPS:
		if (strcmp(line, lks_golden_stat_head))
			return lks_read_step(r, line);
		*state = LKS_RD_STATS;
		return 0;
	case LKS_RD_STATS:
		if (line[0] != '#')
			return lks_read_stat(r, line);
		*state = LKS_RD_DONE;
		return lks_read_end(r, line);
	default:
		return lks_bad(r, "text after the end line");
	}
}

int lks_golden_read(const char *path, lks_stored_run *g)
{
	struct lks_rd r = { .path = path, .g = g };
	char *text = NULL, *line, *next;
	size_t len;
	int state = LKS_RD_MAGIC, rc;

	lks_stored_run_init(g);
	if (!(g->status = strdup("complete")))  /* only a complete run becomes golden */
		return lks_err("out of memory");
	if ((rc = lks_file_read(path, LKS_GOLDEN_FILE_MAX, "a golden file", &text, &len))) {
		if (rc == LKS_E_MISSING) {
			lks_err("no golden file '%s'", path);
			return LKS_E_MISSING;
		}
		return LKS_E_BAD_INPUT;
	}
	for (line = text; rc == 0 && line < text + len; line = next) {
		size_t n = (size_t)(text + len - line);

		next = memchr(line, '\n', n);
		r.line++;
		if (memchr(line, 0, next ? (size_t)(next - line) : n))
			rc = lks_bad(&r, "a NUL byte in the line");
		else if (!next)
			rc = lks_bad(&r, "the last line has no newline: the file is cut short");
		else {
			*next++ = 0;
			rc = lks_read_line(&r, &state, line);
		}
	}
	if (rc == 0 && state != LKS_RD_DONE) {
		static const char *const what[] = { "is empty", "ends in its header",
		                                    "ends in its step rows", "ends in its stats rows",
		                                    "", "ends in its metric rows" };

		r.line++;
		rc = lks_bad(&r, "the file %s, before its '# end' line: it is cut short", what[state]);
	}
	if (rc == 0)
		lks_stored_run_metrics_index(g);
	free(text);
	return rc;
}
