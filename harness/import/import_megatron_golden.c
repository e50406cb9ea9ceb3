/*
 * import_megatron_golden.c: Megatron-LM's golden values (import.h), one JSON document read
 * whole with jansson (it holds one value per metric and step, not a log):
 *
 *   {"lm loss": {"start_step": 0, "end_step": 50, "step_interval": 5, "values": [10.8, ...]},
 *    ...}, or "values": {"1": 10.8, "2": ...}; a number beside the metrics (older files'
 *   "iteration_timing_avg", a mean over the run) is counted as ignored
 *
 * Read after Megatron-LM's own code. The list layout is what its checker compared
 * (tests/functional_tests/python_test_utils/test_ci_pipeline.py at 1df56dc):
 * actual[start_step:end_step:step_interval], actual being the TensorBoard scalars of
 * iterations 1, 2, ... in order, so values[i] is iteration start_step + i step_interval + 1,
 * and there are as many as that slice has (end_step excluded). In the map layout
 * (common.py at bae83e4) a key is the iteration, and its extractor writes "nan" for an
 * iteration with no scalar, which its checker matches with "nan" on the other side: here a
 * string "nan" ("+nan", "-NaN") is a step not logged, and nothing is stored for it.
 *
 * or Megatron-Bridge's (step -> metrics, with megatron-log's labels). Its records are handed
 * on by step, every metric of a step in one.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

static const lks_import_label_row lks_megatron_golden_labels[] = {
	{ "lm loss", "loss" },
	{ "grad-norm", "grad_norm" },
	{ "lr", "lr" },
	{ "loss-scale", "loss_scale" },
	{ "num-zeros", "num_zeros" },
	{ "params-norm", "params_norm" },
	{ "consumed-samples", "consumed_samples" },
	{ "iteration-time", "iteration_time_s" },
	{ "mem-allocated-bytes", "mem_allocated" },
	{ "mem-max-allocated-bytes", "mem_max_allocated" },
	{ NULL, NULL },
};

/* One (step, metric, value) of a golden file. */
struct lks_golden_val {
	int step, metric;
	double value;
};

static int lks_golden_val_cmp(const void *a, const void *b)
{
	const struct lks_golden_val *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return (x->metric > y->metric) - (x->metric < y->metric);
}

/* Whether v is a golden file's "nan": a string that spells a NaN, the value of an iteration
   that logged none (the file's comment). */
static int lks_golden_logged_nan(const json_t *v)
{
	return json_is_string(v) && !strcmp(json_string_value(v), LKS_JSON_LOGGED_NAN);
}

static int lks_golden_unlogged(const json_t *v)
{
	double x;

	return json_is_string(v) && lks_import_json_number(v, &x) == 0 && isnan(x);
}

/* A value: a number, "nan" (not logged: lks_golden_unlogged), "inf", or a NaN that Python
   wrote bare (round(nan, 5) is nan: a step that went NaN, read as LKS_JSON_LOGGED_NAN). */
static int lks_golden_number(const json_t *v, double *x)
{
	if (lks_golden_logged_nan(v)) {
		*x = NAN;
		return 0;
	}
	return lks_import_json_number(v, x);
}

/* The values of one metric appended to *vals (room for *cap), but for those not logged: a
   list of the iterations start_step + 1 by step_interval before end_step + 1, or a map from
   step to value. The room at least doubles when it grows: a file of many metrics of a value
   each is not copied once per metric. */
static int lks_golden_metric(const char *path, const char *name, int m, const json_t *o,
                             struct lks_golden_val **vals, size_t *n, size_t *cap)
{
	const json_t *values = json_object_get(o, "values"), *v;
	int start = 0, end = 0, every = 1;
	size_t need = *n + (json_is_array(values) ? json_array_size(values)
	                                          : json_object_size(values));
	struct lks_golden_val *p = *vals;

	if (need > *cap || !p) {
		size_t room = need > 2 * *cap ? need : 2 * *cap;

		if (!(p = realloc(*vals, (room ? room : 1) * sizeof(*p))))
			return lks_err("out of memory");
		*vals = p;
		*cap = room;
	}
	if (json_is_array(values)) {
		size_t i;

		if (lks_import_json_int(json_object_get(o, "start_step"), 0, LKS_IMPORT_MAX_STEP, 0, &start)
		    || lks_import_json_int(json_object_get(o, "end_step"), start, LKS_IMPORT_MAX_STEP, 0, &end)
		    || lks_import_json_int(json_object_get(o, "step_interval"), 1, LKS_IMPORT_MAX_STEP, 0,
		                    &every))
			return lks_err("'%s': \"%s\": want start_step <= end_step and step_interval >= 1, "
			               "whole numbers up to %d", path, name, LKS_IMPORT_MAX_STEP),
			       LKS_E_BAD_INPUT;
		/* Megatron's slice start:end:every: end excluded */
		if (json_array_size(values) > (size_t)(end - start + every - 1) / (size_t)every)
			return lks_err("'%s': \"%s\": %zu values, more than Megatron-LM's checker compares "
			               "(its actual[%d:%d:%d], iterations %d to %d by %d)", path, name,
			               json_array_size(values), start, end, every, start + 1, end, every),
			       LKS_E_BAD_INPUT;
		json_array_foreach(values, i, v) {
			p[*n] = (struct lks_golden_val){ start + (int)i * every + 1, m, 0 };
			if (lks_golden_number(v, &p[*n].value))
				return lks_err("'%s': \"%s\".values[%zu]: want a number or \"nan\"", path, name,
				               i), LKS_E_BAD_INPUT;
			*n += !lks_golden_unlogged(v);
		}
		return 0;
	}
	if (!json_is_object(values))
		return lks_err("'%s': \"%s\": want \"values\", a list or a map from step to value",
		               path, name), LKS_E_BAD_INPUT;
	const char *key;

	json_object_foreach((json_t *)values, key, v) {
		p[*n] = (struct lks_golden_val){ 0, m, 0 };
		if (lks_import_step(key, strlen(key), &p[*n].step) || lks_golden_number(v, &p[*n].value))
			return lks_err("'%s': \"%s\".values[\"%s\"]: want a step (0 to %d) and a number "
			               "or \"nan\"", path, name, key, LKS_IMPORT_MAX_STEP), LKS_E_BAD_INPUT;
		*n += !lks_golden_unlogged(v);
	}
	return 0;
}

/* A step key of Megatron-Bridge's golden file: "0" up, its iteration less one. */
static int lks_bridge_step(const char *key, int *step)
{
	int k;

	/* as Python's str(int) writes it: no sign, no leading zero */
	if (lks_import_step(key, strlen(key), &k) || k == LKS_IMPORT_MAX_STEP
	    || (key[0] == '0' && key[1]))
		return -1;
	*step = k + 1;
	return 0;
}

static int lks_bridge_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Megatron-Bridge's golden values (scripts/performance/utils/evaluate.py): step ->
   {label: value}, the step 0-based ("iteration N announces that step N-1 just
   completed": stored as iteration N, as its log says), the labels its log's ("lm loss",
   "elapsed time per iteration (ms)", and "GPU utilization", its model TFLOP/s per GPU),
   a value a number, "nan" or null (not measured, for a performance metric); beside the
   steps, numbers and strings of the whole run (alloc, max_alloc, job_id), counted as
   ignored. Records in step order. */
static int lks_bridge_golden(const char *path, json_t *doc, lks_import_rec *rec,
                             lks_import_sink sink, void *arg, lks_import_counts *c)
{
	int *steps = calloc(json_object_size(doc) + 1, sizeof(*steps)), rc = LKS_E_BAD_INPUT;
	size_t n = 0;
	const char *key;
	json_t *o;

	if (!steps)
		return lks_err("out of memory");
	json_object_foreach(doc, key, o) {
		int is_step = !lks_bridge_step(key, &steps[n]);

		if (is_step && json_is_object(o)) {
			n++;
		} else if (!is_step && (json_is_number(o) || json_is_string(o) || json_is_null(o))) {
			c->ignored++;
		} else {
			lks_err("'%s': \"%s\": want a step (\"0\" to \"%d\") with an object of its "
			        "metrics, or a number or string of the whole run", path, key,
			        LKS_IMPORT_MAX_STEP - 1);
			goto out;
		}
	}
	qsort(steps, n, sizeof(*steps), lks_bridge_cmp);
	for (size_t i = 0; i < n; i++) {
		char k[16];
		const char *label;
		json_t *v;

		snprintf(k, sizeof(k), "%d", steps[i] - 1);
		memset(rec, 0, sizeof(*rec));
		rec->step = steps[i];
		json_object_foreach(json_object_get(doc, k), label, v) {
			double x;

			if (json_is_null(v) && lks_import_label_performance(LKS_IMPORT_MEGATRON_LOG, label,
			                                                  strlen(label)))
				continue;  /* not measured at this step */
			if (lks_import_json_number(v, &x)) {
				lks_err("'%s': \"%s\".\"%s\": want a number or \"nan\"", path, k, label);
				goto out;
			}
			if ((rc = lks_import_rec_add(rec, LKS_IMPORT_MEGATRON_LOG, label, strlen(label), x,
			                             path)))
				goto out;
			rc = LKS_E_BAD_INPUT;
		}
		c->records++;
		if ((rc = sink(arg, rec)))
			goto out;
		rc = LKS_E_BAD_INPUT;
	}
	rc = 0;
out:
	free(steps);
	return rc;
}

/* Whether doc is Megatron-Bridge's step -> metrics form: no metric object with "values",
   and a step key whose value is an object. */
static int lks_golden_is_bridge(const json_t *doc)
{
	const char *key;
	json_t *o;
	int step, steps = 0;

	json_object_foreach((json_t *)doc, key, o) {
		if (json_is_object(o) && json_object_get(o, "values"))
			return 0;
		steps += json_is_object(o) && !lks_bridge_step(key, &step);
	}
	return steps > 0;
}

static int lks_import_parse_megatron_golden(const char *path, FILE *f, lks_import_sink sink,
                                            void *arg, lks_import_counts *c)
{
	struct lks_golden_val *vals = NULL;
	lks_import_rec *rec = calloc(1, sizeof(*rec));
	json_error_t e;
	json_t *doc = NULL, *o;
	const char *name, *cat;
	const char **names = NULL;
	char *text = NULL;
	size_t n = 0, cap = 0, m = 0, len, bom;
	int rc = LKS_E_BAD_INPUT;

	/* read whole (a golden file is small), to see its first bytes */
	if ((rc = lks_import_json_slurp(f, path, "a golden file", &text, &len)) != 0) {
		if (rc != LKS_E_BAD_INPUT)
			rc = lks_err("cannot read '%s'", path);
		goto out;
	}
	rc = LKS_E_BAD_INPUT;
	if ((cat = lks_import_compressed(text, len))) {
		lks_err("'%s': compressed, not JSON: give it decompressed ('%s %s | lockstep import "
		        "... -')", path, cat, path);
		goto out;
	}
	bom = len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? 3 : 0;  /* a byte order mark */
	if (!(doc = json_loadb(text + bom, len - bom, JSON_REJECT_DUPLICATES, &e))) {
		/* Python's bare NaN and infinities (json.dump's allow_nan): a NaN logged */
		char *py = lks_import_json_bare_nonfinite_as(text + bom, "\"" LKS_JSON_LOGGED_NAN "\"");
		json_error_t e2;

		doc = py ? json_loads(py, JSON_REJECT_DUPLICATES, &e2) : NULL;
		free(py);
	}
	if (!doc) {
		if (!strstr(e.text, "overflow") || !lks_import_json_range_err(path, 1, text, len))
			lks_err("'%s':%d: not JSON: %s", path, e.line, e.text);
		goto out;
	}
	/* a golden file is small: every number looked at for an underflow jansson read as 0 */
	if (lks_import_json_range_err(path, 1, text, len))
		goto out;
	if (!json_is_object(doc)) {
		lks_err("'%s': want a JSON object of metrics", path);
		goto out;
	}
	if (!rec || !(names = calloc(json_object_size(doc) + 1, sizeof(*names)))) {
		rc = lks_err("out of memory");
		goto out;
	}
	if (lks_golden_is_bridge(doc)) {
		rc = lks_bridge_golden(path, doc, rec, sink, arg, c);
		goto out;
	}
	json_object_foreach(doc, name, o) {
		names[m] = name;
		if (json_is_number(o)) {  /* older files' "iteration_timing_avg": no step's */
			c->ignored++;
			continue;
		}
		if (!json_is_object(o)) {
			lks_err("'%s': \"%s\": want an object with \"values\"", path, name);
			goto out;
		}
		if ((rc = lks_golden_metric(path, name, (int)m++, o, &vals, &n, &cap)))
			goto out;
		rc = LKS_E_BAD_INPUT;
	}
	if (n)  /* "{}" or numbers only: vals is NULL, which qsort may not be given */
		qsort(vals, n, sizeof(*vals), lks_golden_val_cmp);
	for (size_t i = 0; i < n;) {
		memset(rec, 0, sizeof(*rec));
		rec->step = vals[i].step;
		for (; i < n && vals[i].step == rec->step; i++) {
			const char *l = names[vals[i].metric];

			/* its extractor rounds each scalar to 5 decimals (read_tb_logs_as_list:
			   round(x.value, 5)), whose repr drops the zeros after: 10.84 is 10.84000 */
			if ((rc = lks_import_rec_add_dec(rec, LKS_IMPORT_MEGATRON_GOLDEN, l, strlen(l),
			                                 vals[i].value, lks_import_dec_widen(
			                                 lks_import_shortest_dec(vals[i].value), 5),
			                                 path)))
				goto out;
		}
		c->records++;
		if ((rc = sink(arg, rec)))
			goto out;
	}
	rc = 0;
out:
	free(names);
	free(vals);
	free(rec);
	free(text);
	json_decref(doc);
	return rc;
}

const lks_import_format lks_import_megatron_golden_format = {
	.id = LKS_IMPORT_MEGATRON_GOLDEN,
	.name = "megatron-golden",
	.what = "Megatron-LM's golden values JSON (metric -> start_step, end_step, step_interval, "
	        "values), or Megatron-Bridge's (step -> metrics)",
	.parse = lks_import_parse_megatron_golden,
	.labels = lks_megatron_golden_labels,
};
