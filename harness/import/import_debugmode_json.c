/*
 * import_debugmode_json.c: debugmode's save_logs JSON (import_debugmode.c says what the
 * format reads and after which source): DebugMode.save_logs' document, {"format":
 * "torch.utils._debug_mode.DebugMode.logs", "version": 1, "logs": [call, ...]}, read
 * whole (a file is one line, json.dump's), each tensor hashed of each call a record.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_debugmode_impl.h"
#include "harness/import/import_impl.h"
#include "harness/store/run.h"
#include "kernels/err.h"

/* Python's json writes an int of any size, jansson holds an int64: a copy of the JSON text
   s (n bytes) with each integer beyond an int64 (a uint64 hash), outside strings, written
   as the string "\u0001DIGITS", which lks_dm_jval reads as that integer (no string of
   save_logs' begins so: a control character is escaped, and a hash is no string); NULL
   where there is none, or (*oom set) no memory. */
static char *lks_dm_bigints(const char *s, size_t n, int *oom)
{
	char *o = NULL;
	size_t k = 0, i = 0, j;

	*oom = 0;
	while (i < n) {
		int big;

		if (s[i] == '"') {
			for (j = i + 1; j < n && s[j] != '"'; j += s[j] == '\\' ? 2 : 1)
				;
			j = j < n ? j + 1 : n;
		} else if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
			for (j = i + 1; j < n && strchr("-+.eE0123456789", s[j]); j++)
				;
		} else {
			j = i + 1;
		}
		big = j - i >= 19 + (s[i] == '-') && strspn(s + i + (s[i] == '-'), "0123456789")
		      == j - i - (s[i] == '-')
		      && (j - i > 19 + (s[i] == '-') || strncmp(s + i + (s[i] == '-'), s[i] == '-'
		          ? "9223372036854775808" : "9223372036854775807", 19) > 0);
		if (big && !o) {  /* 19 digits or more: 8 bytes more each, at most */
			if (!(o = malloc(n + 8 * (n / 19 + 1) + 1)))
				return *oom = 1, NULL;
			memcpy(o, s, i);
			k = i;
		}
		if (big)
			memcpy(o + k, "\"\\u0001", 7), k += 7;
		if (o)
			memcpy(o + k, s + i, j - i), k += j - i;
		if (big)
			o[k++] = '"';
		i = j;
	}
	if (o)
		o[k] = 0;
	return o;
}

/* A value save_logs wrote (_serialize_debug_value: {"type": "scalar" | "nonfinite_float"
   | "tuple" | "list" | "dict", "value" or "items"}), its numbers to the leaf. 0, or -1
   where it is none such. */
static int lks_dm_jval(struct lks_dm *x, const json_t *v, int depth)
{
	const char *type = json_string_value(json_object_get(v, "type")), *s;
	const json_t *val = json_object_get(v, "value"), *items = json_object_get(v, "items");
	const json_t *e;
	size_t i;
	uint64_t u;

	if (!type || depth > 16)
		return -1;
	if (!strcmp(type, "scalar")) {
		if (json_is_integer(val))
			lks_dm_int(x, (uint64_t)json_integer_value(val));
		else if (json_is_real(val))
			return lks_dm_float(x, json_real_value(val),
			                    lks_import_shortest_dec(json_real_value(val)));
		else if ((s = json_string_value(val)) && s[0] == 1 && !lks_dm_u64(s + 1,
		                                                                 strlen(s + 1), &u))
			lks_dm_int(x, u);
		else if (val && !json_is_null(val))
			return -1;
		return 0;
	}
	if (!strcmp(type, "nonfinite_float")) {
		s = json_string_value(val);
		if (!s || (strcmp(s, "nan") && strcmp(s, "inf") && strcmp(s, "-inf")))
			return -1;
		return lks_dm_float(x, s[0] == 'n' ? NAN : s[0] == 'i' ? INFINITY : -INFINITY,
		                    LKS_IMPORT_NO_DEC);
	}
	if (strcmp(type, "tuple") && strcmp(type, "list") && strcmp(type, "dict"))
		return -1;
	if (!json_is_array(items))
		return -1;
	json_array_foreach(items, i, e) {
		if (!strcmp(type, "dict"))  /* [key, value] */
			e = json_array_size(e) == 2 ? json_array_get(e, 1) : NULL;
		if (!e || lks_dm_jval(x, e, depth + 1))
			return -1;
	}
	return 0;
}

/* The pairs of save_logs' dict d ([key, value], ...): the value of key, or NULL. */
static const json_t *lks_dm_jget(const json_t *d, const char *key)
{
	const json_t *items = json_object_get(d, "items"), *e;
	size_t i;

	json_array_foreach(items, i, e)
		if (json_array_size(e) == 2 && json_is_string(json_array_get(e, 0))
		    && !strcmp(json_string_value(json_array_get(e, 0)), key))
			return json_array_get(e, 1);
	return NULL;
}

/* One tensor's record: the leaf named, its hash h read, handed on. */
static int lks_dm_jleaf(struct lks_dm *x, size_t at, const char *module, const char *op,
                        int input, int args, const char *p, const json_t *h)
{
	int rc = lks_dm_leaf(x, module, op, input, args, p, strlen(p), 1);

	if (!rc && lks_dm_jval(x, h, 0))
		rc = (lks_err("'%s': logs[%zu] (%s): a hash that is no number, nor a tuple of "
		              "them", x->path, at, op), LKS_E_BAD_INPUT);
	return rc ? rc : lks_dm_emit(x);
}

/* The records of call e (logs[at]), of op (a kernel: triton) in module. */
static int lks_dm_jcall(struct lks_dm *x, size_t at, const json_t *e, const char *module,
                        const char *op, int triton)
{
	static const char *const sides[2][3] = {  /* the inputs', the outputs' */
		{ "input", "input_hash", "pre_hashes" }, { "output", "hash", "post_hashes" },
	};
	const json_t *leaves = json_object_get(e, "tensor_hash_leaves");
	int rc = 0, bad = 0;  /* bad: a hash not laid out as save_logs lays it out */

	for (int out = 0; !rc && !bad && out < 2; out++) {
		const json_t *h, *l;
		size_t i;

		if (triton) {  /* {arg: hash} */
			h = json_object_get(e, sides[out][2]);
			json_array_foreach(json_object_get(h, "items"), i, l)
				if (!rc && !bad && !(bad = json_array_size(l) != 2
				                     || !json_is_string(json_array_get(l, 0))))
					rc = lks_dm_jleaf(x, at, module, op, !out, 0,
					                  json_string_value(json_array_get(l, 0)),
					                  json_array_get(l, 1));
		} else if (leaves && !json_is_null(leaves)) {  /* [(path, hash), ...] */
			json_array_foreach(json_object_get(lks_dm_jget(leaves, sides[out][0]), "items"),
			                   i, l) {
				const json_t *pi = json_object_get(l, "items");
				const char *p = json_string_value(json_object_get(json_array_get(pi, 0),
				                                                  "value"));

				if (!rc && !bad && !(bad = json_array_size(pi) != 2 || !p))
					rc = lks_dm_jleaf(x, at, module, op, !out, !out,  /* (args, kwargs) */
					                  p, json_array_get(pi, 1));
			}
		} else if ((h = lks_dm_jget(json_object_get(e, "log"), sides[out][1]))) {
			rc = lks_dm_jleaf(x, at, module, op, !out, 0, "", h);  /* a tree: one record */
		}
	}
	if (bad)
		rc = (lks_err("'%s': logs[%zu] (%s): want its hashes as save_logs writes them",
		              x->path, at, op), LKS_E_BAD_INPUT);
	return rc;
}

struct lks_dm_mod {
	json_int_t depth;
	const char *tag;
	int bwd;
};

/* save_logs' document doc: its calls' records, in order. */
static int lks_dm_json(struct lks_dm *x, const json_t *doc)
{
	const json_t *logs = json_object_get(doc, "logs"), *e;
	const char *fmt = json_string_value(json_object_get(doc, "format"));
	struct lks_dm_mod *st = NULL;
	size_t nst = 0, cap = 0, i;
	int rc = 0;

	if (!fmt || strcmp(fmt, "torch.utils._debug_mode.DebugMode.logs")
	    || !json_is_integer(json_object_get(doc, "version"))
	    || json_integer_value(json_object_get(doc, "version")) != 1 || !json_is_array(logs))
		return lks_err("'%s': want DebugMode.save_logs' {\"format\": \"torch.utils."
		               "_debug_mode.DebugMode.logs\", \"version\": 1, \"logs\": [...]}",
		               x->path), LKS_E_BAD_INPUT;
	json_array_foreach(logs, i, e) {
		const json_t *d = json_object_get(e, "call_depth");
		const char *type = json_string_value(json_object_get(e, "type"));
		const char *name = json_string_value(json_object_get(e, "op_name"));
		const char *header = json_string_value(json_object_get(e, "header"));
		const char *tag = json_string_value(json_object_get(e, "tag"));

		if (rc)
			break;
		if (!json_is_integer(d) || !type)
			return free(st), lks_err("'%s': logs[%zu]: want a call, with its \"type\" and "
			                         "\"call_depth\"", x->path, i), LKS_E_BAD_INPUT;
		while (nst && st[nst - 1].depth >= json_integer_value(d))
			nst--;  /* the modules it is in: dump_tensor_hashes' module context */
		x->phase = nst && st[nst - 1].bwd ? LKS_PHASE_BACKWARD : LKS_PHASE_FORWARD;
		if (!strcmp(type, "triton_kernel"))
			name = json_string_value(json_object_get(e, "kernel_name"));
		if (!strcmp(type, "op") || !strcmp(type, "triton_kernel")) {
			rc = name ? lks_dm_jcall(x, i, e, nst ? st[nst - 1].tag : NULL, name,
			                         type[0] == 't')
			     : (lks_err("'%s': logs[%zu]: a call without its name", x->path, i),
			        LKS_E_BAD_INPUT);
			continue;
		}
		x->ignored++;
		if (strcmp(type, "annotate") || !header || !tag || strncmp(header, "nn.Mod", 6))
			continue;
		if (lks_room_for((void **)&st, &cap, nst, sizeof(*st)))
			return free(st), lks_err("out of memory");
		st[nst].depth = json_integer_value(d);
		st[nst].tag = tag;
		st[nst].bwd = strstr(header, "bwd") || (nst && st[nst - 1].bwd);
		nst++;
	}
	free(st);
	return rc;
}

/* The rest of f, a JSON document, read whole. */
int lks_dm_json_file(struct lks_dm *x, FILE *f)
{
	char *text = NULL, *big = NULL;
	size_t len = 0;
	json_error_t e;
	json_t *doc;
	int rc, oom;

	if ((rc = lks_import_json_slurp(f, x->path, "a DebugMode dump", &text, &len)))
		return rc == LKS_E_BAD_INPUT ? rc : lks_err("cannot read '%s'", x->path);
	big = lks_dm_bigints(text, len, &oom);
	if (oom)
		rc = lks_err("out of memory");
	else if (!(doc = json_loads(big ? big : text, JSON_REJECT_DUPLICATES, &e))) {
		if (!strstr(e.text, "overflow") || !lks_import_json_range_err(x->path, 1, text, len))
			lks_err("'%s':%d: not JSON: %s", x->path, e.line, e.text);
		rc = LKS_E_BAD_INPUT;
	} else {
		rc = lks_import_json_range_err(x->path, 1, text, len) ? LKS_E_BAD_INPUT
		     : lks_dm_json(x, doc);
		json_decref(doc);
	}
	free(big);
	free(text);
	return rc;
}
