/*
 * import_tensor_jsonl.c: tensor-jsonl, lockstep's own format of a tensor trace
 * (tensor_trace.h; cases/README.md documents it for writers): one JSON object per line,
 * one tensor at one (step, rank),
 *
 *   {"step": 3, "rank": 1, "micro": 0, "phase": "backward",
 *    "tensor": "layers.0.mlp.fc1.weight.grad", "l2": 1.25, "amax": 0.5,
 *    "nonfinite": 0, "hash": "9e3779b97f4a7c15"}
 *
 * "step" and "tensor" required; "rank" 0 and "micro" none without; "phase" one of
 * forward, backward, update, recompute (forward without); "hash" the content hash as 1
 * to 16 hex digits (a JSON number cannot hold 64 bits), optional; every other key a
 * statistic (import.h, lks_tensor_stat_name: l2, amax, min, ...) whose value is a number
 * or "nan", "inf", "-inf", or Python's bare NaN, Infinity, -Infinity; null where it was
 * not measured. Blank lines are skipped. A value keeps the decimals of its shortest form,
 * as Python's json writes a float.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

struct lks_tjsonl {
	const char *path;
	lks_tensor_sink sink;
	void *arg;
	lks_tensor_rec t;
};

static const char *const lks_phase_words[] = { "forward", "backward", "update", "recompute" };

/* s as a hash: 1 to 16 hex digits, "0x" before them allowed. 0, or -1. */
static int lks_hash_text(const char *s, uint64_t *out)
{
	uint64_t h = 0;
	int n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++, n++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : (*s | 0x20) >= 'a' && (*s | 0x20) <= 'f'
		        ? (*s | 0x20) - 'a' + 10 : -1;

		if (d < 0 || n == 16)
			return -1;
		h = h << 4 | (uint64_t)d;
	}
	*out = h;
	return n ? 0 : -1;
}

static int lks_tjsonl_keys(struct lks_tjsonl *x, json_t *o, long at)
{
	lks_tensor_rec *t = &x->t;
	const char *key, *path = x->path;
	json_t *v;

	if (lks_import_json_int(json_object_get(o, "step"), 0, LKS_IMPORT_MAX_STEP, 0,
	                        &t->rec.step))
		return lks_err("'%s':%ld: want \"step\": a whole number 0 to %d", path, at,
		               LKS_IMPORT_MAX_STEP), LKS_E_BAD_INPUT;
	if ((v = json_object_get(o, "rank"))
	    && lks_import_json_int(v, 0, LKS_IMPORT_MAX_RANK, 0, &t->rec.rank))
		return lks_err("'%s':%ld: want \"rank\": a whole number 0 to %d", path, at,
		               LKS_IMPORT_MAX_RANK), LKS_E_BAD_INPUT;
	t->rec.ranked = v != NULL;
	if ((v = json_object_get(o, "micro"))
	    && lks_import_json_int(v, 0, INT32_MAX, 0, &t->micro))
		return lks_err("'%s':%ld: want \"micro\": a whole number from 0", path, at),
		       LKS_E_BAD_INPUT;
	v = json_object_get(o, "tensor");
	if (!json_is_string(v) || !json_string_length(v)
	    || json_string_length(v) >= LKS_TENSOR_NAME_MAX
	    || strlen(json_string_value(v)) != json_string_length(v))
		return lks_err("'%s':%ld: want \"tensor\": its name, 1 to %d bytes", path, at,
		               LKS_TENSOR_NAME_MAX - 1), LKS_E_BAD_INPUT;
	strcpy(t->name, json_string_value(v));
	if ((v = json_object_get(o, "phase"))) {
		int p = -1;

		for (int i = 0; json_is_string(v) && i < 4; i++)
			if (!strcmp(json_string_value(v), lks_phase_words[i]))
				p = i;
		if (p < 0)
			return lks_err("'%s':%ld: want \"phase\": forward, backward, update or "
			               "recompute", path, at), LKS_E_BAD_INPUT;
		t->phase = (lks_phase)p;
	}
	if ((v = json_object_get(o, "hash"))) {
		if (!json_is_string(v) || lks_hash_text(json_string_value(v), &t->hash))
			return lks_err("'%s':%ld: want \"hash\": 1 to 16 hex digits in a string",
			               path, at), LKS_E_BAD_INPUT;
		t->has_hash = 1;
	}
	json_object_foreach(o, key, v) {
		double val;
		int rc;

		if (!strcmp(key, "step") || !strcmp(key, "rank") || !strcmp(key, "micro")
		    || !strcmp(key, "tensor") || !strcmp(key, "phase") || !strcmp(key, "hash")
		    || json_is_null(v))
			continue;
		if (lks_import_json_number(v, &val))
			return lks_err("'%s':%ld: bad value of \"%s\": want a number, \"nan\", "
			               "\"inf\", \"-inf\" or null", path, at, key), LKS_E_BAD_INPUT;
		if ((rc = lks_tensor_rec_stat(t, key, strlen(key), val,
		                              json_is_integer(v) || !isfinite(val)
		                              ? LKS_IMPORT_NO_DEC : lks_import_shortest_dec(val),
		                              path)))
			return rc;
	}
	return 0;
}

static int lks_tjsonl_line(void *arg, char *line, size_t len, long at)
{
	struct lks_tjsonl *x = arg;
	json_t *o;
	int rc;

	(void)len;
	if ((rc = lks_import_json_object_line(x->path, at, line, &o)) || !o)
		return rc;
	x->t.rec.line = at;
	x->t.rec.step = x->t.rec.rank = x->t.rec.n = 0;
	x->t.rec.layout = 0;
	x->t.phase = LKS_PHASE_FORWARD;
	x->t.micro = -1;
	x->t.has_hash = 0;
	if (!(rc = lks_tjsonl_keys(x, o, at)))
		rc = x->sink(x->arg, &x->t);
	json_decref(o);
	return rc;
}

static int lks_tjsonl_parse(const char *path, FILE *f, lks_tensor_sink sink, void *arg,
                            lks_import_counts *c)
{
	struct lks_tjsonl *x = malloc(sizeof(*x));  /* a record is some 3 KiB */
	int rc;

	if (!x)
		return lks_err("out of memory");
	memset(x, 0, sizeof(*x));
	x->path = path;
	x->sink = sink;
	x->arg = arg;
	rc = lks_import_each_line(path, f, c, lks_tjsonl_line, x);
	free(x);
	return rc;
}

const lks_import_format lks_import_tensor_jsonl_format = {
	.id = LKS_IMPORT_TENSOR_JSONL,
	.name = "tensor-jsonl",
	.what = "lockstep's tensor trace: one JSON object per tensor (step, rank, micro, phase, "
	        "tensor, statistics, hash)",
	.tensor_parse = lks_tjsonl_parse,
	.tensor_files = "*.jsonl",
};
