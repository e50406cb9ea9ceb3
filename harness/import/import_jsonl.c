/*
 * import_jsonl.c: JSON Lines (import.h), read with jansson: one object per line,
 *
 *   {"step": 3, "rank": 1, "loss": 2.5, "tps": 1200}
 *
 * ("rank" optional, 0 without; every other key a metric whose value is a number or "nan",
 * "inf", "-inf", or Python's bare NaN, Infinity, -Infinity; null for a performance metric
 * not measured). Blank lines are ignored; the last line may lack its newline (JSON Lines
 * allows it: an object ends at its '}'). Its labels are the table's names. It streams one
 * line at a time (the loop of the line formats, import_lines.c).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

/* s parsed; jansson refuses an integer beyond 64 bits ("too big integer"), and such a line
   is parsed again with every integer as a double (*flags says so): a metric's value is a
   double whatever it is written as, rounded to nearest as strtod rounds it. */
static json_t *lks_json_load(const char *s, size_t *flags, json_error_t *e)
{
	json_t *o = json_loads(s, *flags, e);

	if (!o && strstr(e->text, "too big")) {
		*flags |= JSON_DECODE_INT_AS_REAL;
		o = json_loads(s, *flags, e);
	}
	return o;
}

int lks_import_jsonl_line(const char *s, size_t len, lks_import_rec *rec, const char *path)
{
	json_error_t e, e2;
	json_t *o, *v;
	const char *key;
	size_t flags = JSON_REJECT_DUPLICATES;
	int rc = LKS_E_BAD_INPUT, zero = 0, rank = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return 0;
	if (!(o = lks_json_load(s, &flags, &e))) {
		char *py = lks_import_json_bare_nonfinite(s);

		o = py ? lks_json_load(py, &flags, &e2) : NULL;
		free(py);
	}
	if (!o) {
		if (!strstr(e.text, "overflow") || !lks_import_json_range_err(path, rec->line, s, strlen(s)))
			lks_err("'%s':%ld: not JSON: %s (column %d)", path, rec->line, e.text, e.column);
		return LKS_E_BAD_INPUT;
	}
	if (!json_is_object(o)) {
		lks_err("'%s':%ld: not a JSON object", path, rec->line);
		goto out;
	}
	if (lks_import_json_int(json_object_get(o, "step"), 0, LKS_IMPORT_MAX_STEP, flags, &rec->step)) {
		lks_err("'%s':%ld: want \"step\": a whole number 0 to %d", path, rec->line,
		        LKS_IMPORT_MAX_STEP);
		goto out;
	}
	if ((v = json_object_get(o, "rank"))
	    && lks_import_json_int(v, 0, LKS_IMPORT_MAX_RANK, flags, &rank)) {
		lks_err("'%s':%ld: want \"rank\": a whole number 0 to %d", path, rec->line,
		        LKS_IMPORT_MAX_RANK);
		goto out;
	}
	/* a prefix's rank ("[rank1]:", srun's "1: ") and the object's must agree: a script's
	   local rank under a launcher of several nodes merged them */
	if (v && rec->ranked && rank != rec->rank) {
		lks_err("'%s':%ld: \"rank\": %d, but the line's prefix says rank %d", path,
		        rec->line, rank, rec->rank);
		goto out;
	}
	if (v) {
		rec->rank = rank;
		rec->ranked = 1;
	}
	json_object_foreach(o, key, v) {
		double x;

		if (!strcmp(key, "step") || !strcmp(key, "rank"))
			continue;
		if (json_is_null(v) && lks_import_label_performance(LKS_IMPORT_JSONL, key, strlen(key)))
			continue;  /* not measured at this step */
		if (lks_import_json_number(v, &x)) {
			lks_err("'%s':%ld: bad value of \"%s\": want a number, \"nan\", \"inf\" or "
			        "\"-inf\"%s", path, rec->line, key, json_is_null(v)
			        ? " (null only for a performance metric: not measured)" : "");
			goto out;
		}
		/* a 0 that jansson read: 0 as written, or an underflow (once a line: a 0 is rare) */
		if (x == 0 && json_is_real(v) && !zero++
		    && (rc = lks_import_json_range_err(path, rec->line, s, strlen(s))))
			goto out;
		if ((rc = lks_import_rec_add(rec, LKS_IMPORT_JSONL, key, strlen(key), x, path)))
			goto out;
		rc = LKS_E_BAD_INPUT;
	}
	rc = 1;
out:
	json_decref(o);
	return rc;
}

const lks_import_format lks_import_jsonl_format = {
	.id = LKS_IMPORT_JSONL,
	.name = "jsonl",
	.what = "one JSON object per line: step, rank (optional), metrics",
	.line = lks_import_jsonl_line,
	.json_lines = 1,
	.labels = NULL,  /* the table's names */
};
