/*
 * import_tb_series.c: SummaryWriter.add_scalars' series read with their run's event file
 * (import_impl.h, lks_import_tensorboard_series; import_folder.c pairs each series file
 * with the run's file of its launch). Each series file is read whole first, as any event
 * file (lks_tb_parse, its tags made "<tag>/<key>"), its values kept in memory in step
 * order; then the run's file streams through, each record given the series' values of its
 * step, and a step only the series logged handed on as a record of its own before the
 * run's next.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

/* A series' value, its metric a name of the series' names, its file one of those given */
struct lks_tb_sval {
	int step, name, file;
	long line;
	size_t seq;               /* the order read: values of a step keep it */
	double value;
	int64_t dec;
};

struct lks_tb_series {
	struct lks_tb_sval *v;
	size_t n, cap, at;        /* at: the first value not handed on yet */
	struct lks_import_mval *names;  /* name, nlen and kind of each metric of the series */
	int nnames;
	const lks_import_series *files;
	int file, seen, step;     /* the file being read, and the step of its last record */
	lks_import_rec *rec;      /* the record handed on */
	lks_import_sink sink;
	void *arg;
	lks_import_counts *c;
};

/* A record of series file s->file kept: its values appended. */
static int lks_tb_series_keep(void *arg, const lks_import_rec *rec)
{
	struct lks_tb_series *s = arg;

	if (s->seen && rec->step < s->step)
		return lks_err("'%s':%ld: step %d goes backwards (step %d before it)",
		               s->files[s->file].path, rec->line, rec->step, s->step),
		       LKS_E_BAD_INPUT;
	s->seen = 1;
	s->step = rec->step;
	for (int i = 0; i < rec->n; i++) {
		const struct lks_import_mval *m = &rec->m[i];
		int k = 0;

		while (k < s->nnames && strcmp(s->names[k].name, m->name))
			k++;
		if (k == s->nnames) {
			struct lks_import_mval *p = realloc(s->names, (size_t)(k + 1) * sizeof(*p));

			if (!p)
				return lks_err("out of memory");
			s->names = p;
			p[k] = *m;
			s->nnames++;
		}
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 1024;
			struct lks_tb_sval *p = realloc(s->v, cap * sizeof(*p));

			if (!p)
				return lks_err("out of memory");
			s->v = p;
			s->cap = cap;
		}
		s->v[s->n] = (struct lks_tb_sval){ rec->step, k, s->file, rec->line, s->n,
		                                   m->value, m->dec };
		s->n++;
	}
	return 0;
}

static int lks_tb_sval_order(const void *a, const void *b)
{
	const struct lks_tb_sval *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The series' values of step into rec, each as its metric's last: the same metric with
   the same bits already there is one value (the main file's tag mapped to it too), with
   another value bad input. */
static int lks_tb_series_add(struct lks_tb_series *s, lks_import_rec *rec, int step)
{
	for (; s->at < s->n && s->v[s->at].step == step; s->at++) {
		const struct lks_tb_sval *v = &s->v[s->at];
		const struct lks_import_mval *m = &s->names[v->name];
		int i = 0;

		while (i < rec->n && strcmp(rec->m[i].name, m->name))
			i++;
		if (i < rec->n) {
			if (!memcmp(&rec->m[i].value, &v->value, sizeof(v->value)))
				continue;
			return lks_err("'%s':%ld: metric '%s' at step %d is %.17g in the run's file "
			               "and %.17g in this add_scalars series", s->files[v->file].path,
			               v->line, m->name, step, rec->m[i].value, v->value),
			       LKS_E_BAD_INPUT;
		}
		if (rec->n == LKS_IMPORT_MAX_METRICS)
			return lks_err("'%s':%ld: more than %d metrics at step %d with the run's "
			               "file's", s->files[v->file].path, v->line,
			               LKS_IMPORT_MAX_METRICS, step), LKS_E_BAD_INPUT;
		rec->m[rec->n] = *m;
		rec->m[rec->n].value = v->value;
		rec->m[rec->n].dec = v->dec;
		rec->n++;
		rec->layout = 0;  /* another set of names than the file's records of its layout */
	}
	return 0;
}

/* The series' steps before step (that the run's file does not log), each a record of its
   own, handed on. */
static int lks_tb_series_before(struct lks_tb_series *s, int step)
{
	int rc;

	while (s->at < s->n && s->v[s->at].step < step) {
		lks_tb_rec_start(s->rec, s->v[s->at].step, s->v[s->at].line);
		if ((rc = lks_tb_series_add(s, s->rec, s->rec->step)))
			return rc;
		s->c->records++;
		if ((rc = s->sink(s->arg, s->rec)))
			return rc;
	}
	return 0;
}

/* A record of the run's file, with the series' values of its step (and before it, their
   own records) */
static int lks_tb_series_merge(void *arg, const lks_import_rec *rec)
{
	struct lks_tb_series *s = arg;
	int rc;

	if ((rc = lks_tb_series_before(s, rec->step)))
		return rc;
	if (s->at == s->n || s->v[s->at].step != rec->step)
		return s->sink(s->arg, rec);
	memcpy(s->rec, rec, sizeof(*rec));
	return (rc = lks_tb_series_add(s, s->rec, rec->step)) ? rc : s->sink(s->arg, s->rec);
}

/* import_impl.h */
int lks_import_tensorboard_series(const char *path, FILE *f, const lks_import_series *series,
                                  int n, lks_import_sink sink, void *arg,
                                  lks_import_counts *c)
{
	struct lks_tb_series s = { .files = series, .rec = malloc(sizeof(lks_import_rec)),
	                           .sink = sink, .arg = arg, .c = c };
	long line = c->lines;     /* the run's file's records numbered as without series */
	int rc = s.rec ? 0 : lks_err("out of memory");

	for (int i = 0; i < n && !rc; i++) {
		FILE *g = fopen(series[i].path, "r");
		lks_import_counts own = { 0 };

		s.file = i;
		s.seen = 0;
		if (!g) {
			rc = (lks_err("cannot open '%s'", series[i].path), LKS_E_BAD_INPUT);
			break;
		}
		rc = lks_tb_parse(series[i].path, g, 0, UINT64_MAX, series[i].folder,
		                  lks_tb_series_keep, &s, &own);
		fclose(g);
		c->lines += own.lines;  /* its records are counted as they are handed on */
		c->ignored += own.ignored;
		if (own.cut && !c->cut++)
			memcpy(c->cut_first, own.cut_first, sizeof(c->cut_first));
	}
	if (!rc) {
		if (s.n)  /* qsort's array may not be NULL, even of none */
			qsort(s.v, s.n, sizeof(*s.v), lks_tb_sval_order);
		rc = lks_tb_parse(path, f, line, UINT64_MAX, NULL, lks_tb_series_merge, &s, c);
	}
	if (!rc)
		rc = lks_tb_series_before(&s, INT_MAX);
	free(s.v);
	free(s.names);
	free(s.rec);
	return rc;
}
