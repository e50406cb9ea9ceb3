/*
 * import_megatron_tensors.c: megatron-tensors, Megatron-LM's tokens-per-expert log
 * (--save-tokens-per-expert-interval N): per rank {save}/tokens_per_expert/rankN.jsonl, a
 * line per MoE layer at each iteration saved, the tokens each of the rank's experts got
 * in each forward call of the layer (tensor_trace.h: a record per layer and call):
 *
 *   {"iter": 100, "block": "decoder", "layer": 3, "tpe": [[128, 64], [96, 80]]}
 *   {"iter": 100, "block": "mtp", "mtp_idx": 0, "layer": 1, "tpe": [[50, 50]]}
 *
 * Verified in NVIDIA/Megatron-LM, megatron/training/activation_logging.py,
 * ActivationLogger.save_tpe: PR #3842 (head d494990ffe75fbd1a403233de02871ee7476c784,
 * merged as 8be1e79d160c8dc3ecb097bea7dc2bc4a27552e6) writes json.dumps({"iter",
 * "layer", "tpe"}) a line, appended to the rank's file at each iteration saved (iter the
 * 1-based iteration, train_step's iteration + 1), the layers in sorted order; PR #4412
 * (a52014ca000b52ea5772033e9639650896003415, as at main
 * d98e8a64ddf34856e74b24714e3bedb2f5a39553) adds "block" ("decoder", then "mtp" lines
 * with "mtp_idx"). "tpe" is, per forward call of the layer's grouped linear_fc1 (a
 * microbatch's, or its recompute's), list(tokens_per_expert): the rank's local experts'
 * counts, whole numbers.
 *
 * Read as: the step "iter"; the rank the file name's ("rank3.jsonl"; none: 0); per layer
 * and call a record named for the module the hook is on and the input it reads,
 * decoder.layers.L.mlp.experts.linear_fc1.tokens_per_expert (a line without "block", as
 * #3842 wrote, is the decoder's), or
 * mtp.layers.M.mtp_model_layer.layers.L.mlp.experts.linear_fc1.tokens_per_expert; its
 * microbatch the call's index in "tpe"; phase forward; statistics tokens_e0, tokens_e1,
 * ... (expert k's count, a whole number, stored exact). A rank of more than 32 local
 * experts (a record's most statistics) has a record per 32 of them, named with ".eK"
 * after, K its first.
 * Other keys are skipped, blank lines too. A file appended to by a restarted job goes back
 * to an iteration logged before: bad input at that line (cut the file at the restart).
 *
 * Not read: the activations #3842 saves (--save-activations-interval) are whole tensors
 * written by torch.save ({save}/activations/iter_N/mp_rank_XX.pth), no statistics; one
 * given is refused as such.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

struct lks_mtpe {
	const char *path;
	lks_tensor_sink sink;
	void *arg;
	lks_import_counts *c;
	int rank;
	lks_tensor_rec t;
};

/* The rank the file's name says: digits after "rank" (an '_' between allowed); 0 none. */
static int lks_mtpe_rank(struct lks_mtpe *x)
{
	const char *base = strrchr(x->path, '/'), *r;

	base = base ? base + 1 : x->path;
	x->rank = 0;
	for (r = strstr(base, "rank"); r; r = strstr(r + 1, "rank")) {
		const char *d = r[4] == '_' ? r + 5 : r + 4, *e = d;
		int n;

		while (*e >= '0' && *e <= '9')
			e++;
		if (e == d)
			continue;
		if (e - d > 5 || lks_import_step(d, (size_t)(e - d), &n) || n > LKS_IMPORT_MAX_RANK)
			return lks_err("'%s': the rank its name says is over %d", x->path,
			               LKS_IMPORT_MAX_RANK), LKS_E_BAD_INPUT;
		x->rank = n;
		return 0;
	}
	return 0;
}

/* One call's counts (the array a), as records of 32 experts at most, to the sink. */
static int lks_mtpe_call(struct lks_mtpe *x, const char *name, json_t *a, int micro,
                         long at)
{
	size_t n = json_array_size(a);
	lks_tensor_rec *t = &x->t;
	int rc;

	if (!json_is_array(a) || n == 0)
		return lks_err("'%s':%ld: want \"tpe\": a list per forward call, each the "
		               "experts' token counts", x->path, at), LKS_E_BAD_INPUT;
	for (size_t first = 0; first < n; first += LKS_IMPORT_MAX_METRICS) {
		if (n > LKS_IMPORT_MAX_METRICS)
			snprintf(t->name, sizeof(t->name), "%.200s.e%zu", name, first);
		else
			snprintf(t->name, sizeof(t->name), "%.200s", name);
		t->rec.line = at;
		t->rec.n = 0;
		t->micro = micro;
		for (size_t k = first; k < n && k < first + LKS_IMPORT_MAX_METRICS; k++) {
			json_t *v = json_array_get(a, k);
			char stat[32];
			double d;

			if (!json_is_integer(v) || json_integer_value(v) < 0
			    || json_integer_value(v) >= ((json_int_t)1 << 53))
				return lks_err("'%s':%ld: want \"tpe\" counts: whole numbers from 0 "
				               "(call %d, expert %zu)", x->path, at, micro, k),
				       LKS_E_BAD_INPUT;
			d = (double)json_integer_value(v);
			snprintf(stat, sizeof(stat), "tokens_e%zu", k);
			if ((rc = lks_tensor_rec_stat(t, stat, strlen(stat), d,
			                              lks_import_shortest_dec(d), x->path)))
				return rc;
		}
		if ((rc = x->sink(x->arg, t)))
			return rc;
	}
	return 0;
}

/* A whole number lo..hi under key, or bad input. */
static int lks_mtpe_int(struct lks_mtpe *x, json_t *o, const char *key, int hi, int *out,
                        long at)
{
	if (lks_import_json_int(json_object_get(o, key), 0, hi, 0, out))
		return lks_err("'%s':%ld: want \"%s\": a whole number 0 to %d", x->path, at, key,
		               hi), LKS_E_BAD_INPUT;
	return 0;
}

static int lks_mtpe_record(struct lks_mtpe *x, json_t *o, long at)
{
	json_t *block = json_object_get(o, "block"), *tpe = json_object_get(o, "tpe");
	char name[LKS_TENSOR_NAME_MAX];
	int layer, mtp = 0, rc;

	if ((rc = lks_mtpe_int(x, o, "iter", LKS_IMPORT_MAX_STEP, &x->t.rec.step, at))
	    || (rc = lks_mtpe_int(x, o, "layer", 1 << 20, &layer, at)))
		return rc;
	if (block && !(json_is_string(block) && (!strcmp(json_string_value(block), "decoder")
	                                         || !strcmp(json_string_value(block), "mtp"))))
		return lks_err("'%s':%ld: want \"block\": \"decoder\" or \"mtp\"", x->path, at),
		       LKS_E_BAD_INPUT;
	if (block && !strcmp(json_string_value(block), "mtp")) {
		if ((rc = lks_mtpe_int(x, o, "mtp_idx", 1 << 20, &mtp, at)))
			return rc;
		snprintf(name, sizeof(name), "mtp.layers.%d.mtp_model_layer.layers.%d.mlp.experts."
		         "linear_fc1.tokens_per_expert", mtp, layer);
	} else {
		snprintf(name, sizeof(name), "decoder.layers.%d.mlp.experts.linear_fc1."
		         "tokens_per_expert", layer);
	}
	if (!json_is_array(tpe))
		return lks_err("'%s':%ld: want \"tpe\": a list per forward call, each the "
		               "experts' token counts", x->path, at), LKS_E_BAD_INPUT;
	if (json_array_size(tpe) == 0)
		x->c->ignored++;  /* no call: nothing said of the layer */
	for (size_t i = 0; i < json_array_size(tpe); i++) {
		if ((rc = lks_mtpe_call(x, name, json_array_get(tpe, i), (int)i, at)))
			return rc;
	}
	return 0;
}

static int lks_mtpe_line(void *arg, char *line, size_t len, long at)
{
	struct lks_mtpe *x = arg;
	json_t *o;
	char *s = line;
	int rc;

	(void)len;
	while (*s == ' ' || *s == '\t')
		s++;
	if (at == 1 && (!strncmp(s, "PK\003\004", 4) || (unsigned char)s[0] == 0x80))
		return lks_err("'%s': a torch.save file (Megatron's --save-activations-interval "
		               "writes whole tensors so, no statistics): give the "
		               "tokens_per_expert folder's rankN.jsonl", x->path), LKS_E_BAD_INPUT;
	if ((rc = lks_import_json_object_line(x->path, at, s, &o)) || !o)
		return rc;
	x->t.rec.rank = x->rank;
	x->t.rec.ranked = 1;
	x->t.rec.layout = 0;
	x->t.phase = LKS_PHASE_FORWARD;
	x->t.has_hash = 0;
	rc = lks_mtpe_record(x, o, at);
	json_decref(o);
	return rc;
}

static int lks_mtpe_parse(const char *path, FILE *f, lks_tensor_sink sink, void *arg,
                          lks_import_counts *c)
{
	struct lks_mtpe *x = malloc(sizeof(*x));  /* a record is some 3 KiB */
	int rc;

	if (!x)
		return lks_err("out of memory");
	memset(x, 0, sizeof(*x));
	x->path = path;
	x->sink = sink;
	x->arg = arg;
	x->c = c;
	if (!(rc = lks_mtpe_rank(x)))
		rc = lks_import_each_line(path, f, c, lks_mtpe_line, x);
	free(x);
	return rc;
}

const lks_import_format lks_import_megatron_tensors_format = {
	.id = LKS_IMPORT_MEGATRON_TENSORS,
	.name = "megatron-tensors",
	.what = "Megatron-LM's tokens per expert (tokens_per_expert/rankN.jsonl: iter, block, "
	        "layer, tpe per forward call), a record per MoE layer and call",
	.tensor_parse = lks_mtpe_parse,
	.tensor_files = "rank*.jsonl",
};
