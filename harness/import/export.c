/*
 * export.c: a stored run written for other tools (lockstep export; import.h, "export"):
 * an imported run's metric rows, or a lockstep run's step rows (loss, grad_norm, lr per
 * step and rank), as jsonl (one object per step and rank) or as Megatron-LM's golden
 * values JSON (the metrics of one rank: golden files hold one value per metric and step).
 *
 * Every value reads back as the same double: jansson writes a real with 17 significant
 * digits (its default precision), which strtod turns back into the bits written; NaN and
 * the infinities, which JSON has no numbers for, are the strings "nan", "inf" and "-inf"
 * that the importers take. So import(export(run)) stores the values of run, bit for bit.
 * A golden file cannot hold a NaN (Megatron's "nan" is a step not logged): such a run is
 * refused as bad input, and jsonl named instead.
 * Names are each format's label for the metric (import_label.c), or the stored name where
 * the format has none; a performance metric Megatron's golden format has no label for
 * (tps, mfu, memory, a log's iteration_time in ms: a golden file's iteration-time is
 * seconds) is left out of a golden file, since read back it would be numerics.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import.h"
#include "harness/store/name_index.h"
#include "harness/store/run.h"
#include "kernels/err.h"

/* The values of one metric of a golden file, by step (its label: lks_export.labels). */
struct lks_export_series {
	json_t *values;           /* array, by step */
	int *steps;
	size_t n, cap;
};

struct lks_export {
	lks_import_fmt fmt;
	int rank;                 /* the rank written; -1 (jsonl only): every rank */
	FILE *out;
	long written;
	long rows, taken;         /* the run's metric rows, and those of rank */
	json_t *line;             /* jsonl: the object of (step, rank) being filled */
	int step, line_rank;
	struct lks_export_series *series;
	char **labels;            /* (nseries) each series' label, found by hash: a run may
	                             have tens of thousands of metrics */
	int nseries;
	size_t series_cap, labels_cap;
	lks_name_index index;
};

/* A metric value as JSON: a real, or "nan", "inf", "-inf". */
static json_t *lks_export_value(double v)
{
	if (isnan(v))
		return json_string("nan");
	if (isinf(v))
		return json_string(v > 0 ? "inf" : "-inf");
	return json_real(v);
}

static int lks_export_flush_line(struct lks_export *x)
{
	char *text;
	int rc = 0;

	if (!x->line)
		return 0;
	if (!(text = json_dumps(x->line, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		rc = lks_err("out of memory");
	else if (fprintf(x->out, "%s\n", text) < 0)
		rc = lks_err("cannot write the export: %s", strerror(errno));
	free(text);
	json_decref(x->line);
	x->line = NULL;
	x->written++;
	return rc;
}

static int lks_export_jsonl(struct lks_export *x, const lks_metric_row *r, const char *label)
{
	json_t *v = lks_export_value(r->value);

	if (x->line && (r->step != x->step || r->rank != x->line_rank)
	    && lks_export_flush_line(x)) {
		json_decref(v);
		return -1;
	}
	if (!x->line) {
		x->line = json_pack("{s:i,s:i}", "step", r->step, "rank", r->rank);
		x->step = r->step;
		x->line_rank = r->rank;
	}
	if (!v || !x->line || json_object_set_new(x->line, label, v))
		return lks_err("out of memory");
	return 0;
}

static struct lks_export_series *lks_export_series_of(struct lks_export *x, const char *label)
{
	int i = lks_name_index_find(&x->index, x->labels, label);
	struct lks_export_series *p;

	if (i >= 0)
		return &x->series[i];
	if (lks_room_for((void **)&x->series, &x->series_cap, (size_t)x->nseries, sizeof(*p))
	    || lks_room_for((void **)&x->labels, &x->labels_cap, (size_t)x->nseries, sizeof(char *))
	    || !(x->labels[x->nseries] = strdup(label)))
		return NULL;
	p = &x->series[x->nseries];
	memset(p, 0, sizeof(*p));
	if (!(p->values = json_array()) || lks_name_index_add(&x->index, label, x->nseries)) {
		json_decref(p->values);
		free(x->labels[x->nseries]);
		return NULL;
	}
	x->nseries++;
	return p;
}

static int lks_export_golden(struct lks_export *x, const lks_metric_row *r, const char *label)
{
	struct lks_export_series *s;

	/* Megatron's extractor writes "nan" for a step a metric was not logged at, and its
	   checker (and import_megatron_golden.c) reads it so: a NaN written would read back
	   as no value, the diverged step unchecked */
	if (isnan(r->value))
		return lks_err("step %d, metric '%s', rank %d is NaN, which a Megatron-LM golden "
		               "file cannot hold (its \"nan\" means a step not logged); export "
		               "--format jsonl keeps it", r->step, r->name, r->rank),
		       LKS_E_BAD_INPUT;
	if (!(s = lks_export_series_of(x, label)))
		return lks_err("out of memory");
	if (s->n == s->cap) {
		int *p = realloc(s->steps, (s->cap ? 2 * s->cap : 64) * sizeof(*p));

		if (!p)
			return lks_err("out of memory");
		s->steps = p;
		s->cap = s->cap ? 2 * s->cap : 64;
	}
	s->steps[s->n++] = r->step;
	return json_array_append_new(s->values, lks_export_value(r->value))
	       ? lks_err("out of memory") : 0;
}

static int lks_export_row(void *arg, const lks_metric_row *r)
{
	struct lks_export *x = arg;
	const lks_import_metric *m = lks_import_metric_find(r->name);
	const char *own = m ? lks_import_label_of(x->fmt, r->name) : NULL;
	const char *label = own ? own : r->name;

	x->rows++;
	if (x->rank >= 0 && r->rank != x->rank)
		return 0;
	x->taken++;
	if (x->fmt == LKS_IMPORT_JSONL)
		return lks_export_jsonl(x, r, label);
	if (m && !own && r->kind == LKS_METRIC_PERFORMANCE)
		return 0;
	return lks_export_golden(x, r, label);
}

static int lks_gcd(int a, int b)
{
	while (b) {
		int t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* One metric of a golden file as Megatron-LM writes them today (840 of the 844 in its
   tests/functional_tests, August 2026; its checker reads them into a pydantic model that
   takes values only as a map and needs the other three fields): start_step, end_step,
   step_interval (the greatest common divisor of the steps' differences; 1 for one step) and
   values, a map from step to value, in step order. */
static json_t *lks_export_golden_metric(struct lks_export_series *s)
{
	json_t *map = json_object();
	int every = 0;

	if (!map)
		return NULL;
	for (size_t i = 0; i < s->n; i++) {
		char key[16];

		if (i)
			every = lks_gcd(every, s->steps[i] - s->steps[i - 1]);
		snprintf(key, sizeof(key), "%d", s->steps[i]);
		if (json_object_set(map, key, json_array_get(s->values, i))) {
			json_decref(map);
			return NULL;
		}
	}
	return json_pack("{s:i,s:i,s:i,s:o}", "start_step", s->n ? s->steps[0] : 0, "end_step",
	                 s->n ? s->steps[s->n - 1] : 0, "step_interval", every > 0 ? every : 1,
	                 "values", map);
}

static int lks_export_golden_write(struct lks_export *x)
{
	json_t *doc = json_object();
	int rc = 0;

	for (int i = 0; doc && i < x->nseries; i++) {
		json_t *m = lks_export_golden_metric(&x->series[i]);

		if (!m || json_object_set_new(doc, x->labels[i], m)) {
			json_decref(doc);
			doc = NULL;
		}
	}
	if (!doc)
		return lks_err("out of memory");
	if (json_dumpf(doc, x->out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) || fputc('\n', x->out) < 0)
		rc = lks_err("cannot write the export: %s", strerror(errno));
	x->written = x->nseries;
	json_decref(doc);
	return rc;
}

int lks_export_run(lks_store *s, int64_t run_id, lks_import_fmt fmt, int rank, FILE *out,
                   long *written)
{
	struct lks_export x = { .fmt = fmt, .rank = rank, .out = out };
	int rc;

	if (fmt != LKS_IMPORT_JSONL && fmt != LKS_IMPORT_MEGATRON_GOLDEN)
		return lks_err("export: want jsonl or megatron-golden");
	if (fmt != LKS_IMPORT_JSONL && rank < 0)
		return lks_err("export: a golden file holds one rank: want one");
	rc = lks_run_metrics(s, run_id, lks_export_row, &x);
	/* nothing to write is refused before a byte is: an empty file (or a golden '{}') read
	   back as a run of no values, and the importers refuse it */
	if (!rc && !x.rows)
		rc = (lks_err("run %lld holds no metric values", (long long)run_id), LKS_E_MISSING);
	else if (!rc && !x.taken)
		rc = (lks_err("run %lld holds no values of rank %d, only of other ranks",
		              (long long)run_id, rank), LKS_E_MISSING);
	else if (!rc && fmt == LKS_IMPORT_MEGATRON_GOLDEN && !x.nseries)
		rc = (lks_err("run %lld holds only performance metrics of rank %d, which a "
		              "Megatron-LM golden file has no names for (export --format jsonl "
		              "keeps them)", (long long)run_id, rank), LKS_E_BAD_INPUT);
	if (!rc)
		rc = fmt == LKS_IMPORT_JSONL ? lks_export_flush_line(&x) : lks_export_golden_write(&x);
	if (!rc && fflush(out))
		rc = lks_err("cannot write the export: %s", strerror(errno));
	*written = x.written;
	json_decref(x.line);
	for (int i = 0; i < x.nseries; i++) {
		json_decref(x.series[i].values);
		free(x.series[i].steps);
		free(x.labels[i]);
	}
	free(x.series);
	free(x.labels);
	lks_name_index_release(&x.index);
	return rc;
}
