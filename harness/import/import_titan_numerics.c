/*
 * import_titan_numerics.c: titan-numerics, torchtitan's per-op numerics dump (its
 * --profiler.dump_numerics, agent_tooling/numerics_debugging/activation_tracer.py): one
 * file per rank, {dump_folder}/numerics/rank_N_activations.log, each op's output one
 * block (tensor_trace.h: a record per block), in the order the step dispatched them:
 *
 *   Total captured activations: 2
 *   Excluded ops dispatched: t, view
 *   ================================================================================
 *
 *   [layers.0.attention.wq/op_0_mm]
 *     Shape: torch.Size([2, 16, 64]), Dtype: torch.bfloat16
 *     L2 norm: 1.234568e+01
 *     Min: -2.500000e+00
 *     Max: 2.750000e+00
 *     Mean: 1.250000e-02
 *     Output hash: 3.906250e+02
 *     Input hashes: 1.000000e+02, 2.000000e+01
 *     Input producers: ;layers.0.attention_norm/op_0_mul
 *     Location: common/attention.py:534
 *     Phase: backward
 *
 * Verified in pytorch/torchtitan at b5bcd76c66d0acb1a08b176d9639425bc55e0b2a (main, 21 Aug
 * 2026; PR #3323, merged as 19c567f768fcffc4710ae4efe2441f575f823693):
 * dump_captures_to_file writes the header lines, then per capture "[key]" (key
 * "module_fqn/op_N_opname", "._checkpoint_wrapped_module" dropped), the stats in the
 * order Shape, L1 norm, L2 norm, Min, Max, Mean as "  Label: value" (each "%.6e"; L1 norm
 * is not computed there, the output hash being the float64 L1), "  Output hash:",
 * "  Input hashes:" (", "-separated "%.6e", a tuple's each), "  Input producers:",
 * "  Location:", "  Phase: backward" (forward is not written), then a blank line; an
 * in-place op (_fused_adam_) has hashes and no stats. PR #3190's first version
 * (070645c336a30657e67a0309987891ad04f5243c, torchtitan/tools/activation_tracer.py)
 * writes every stat, L1 norm too, padded ("  L1 norm:  1.0e+00", "  Min:      ..."), and
 * no hashes: both read alike, the value after the colon and its blanks.
 *
 * Read as: the name the key as written; phase forward, or backward as "Phase:" says; the
 * statistics l1, l2, min, max, mean, each with the decimals it was printed with (nan, inf
 * as Python prints them), numel, the Shape's product (the Dtype is no number and is
 * dropped), output_hash and input_hash, the first value of each hash line; and both hash
 * lines' text whole as the record's content hash (FNV-1a), since a list op's inputs
 * (_foreach_*, _fused_adam_) are more values than a record holds statistics. Location and
 * Input producers are counted as ignored lines, as are the header's; a "Total captured
 * activations" the blocks do not match (a dump cut short) is bad input at that line.
 *
 * The rank is the file name's ("rank_3_activations.log"; none: 0). The dump is of one
 * step, the one --profiler.profile_freq says, and does not name it: the step is the last
 * "step_N" or "iteration_N" ("step3", "step-3" too) in the file's path
 * (run_a/step_2/rank_0_activations.log; iteration_N is how torchtitan names its profiler's
 * trace folders), else 0. So a run of several steps is a folder per step, given in order.
 *
 * Not read: torchtitan's tensor_logging (PR #4202, torchtitan/observability/tensor_logging
 * at 60148f078416b20ce0aedae5103895371e6bd40f): it is not this family. It sums each
 * statistic over ranks with all-reduces and publishes scalars ("<module>.xq.x.abs_max")
 * through the metrics logger (W&B, TensorBoard), with no file of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

struct lks_tnum {
	const char *path;
	lks_tensor_sink sink;
	void *arg;
	lks_import_counts *c;
	int step, rank;
	int open;                 /* a block being read into t */
	long total, total_at;     /* the header's count and its line; -1: none */
	long blocks;
	lks_tensor_rec t;
};

/* The step and rank path names (import_impl.h, lks_tensor_path_place). */
static int lks_tnum_path(struct lks_tnum *x)
{
	return lks_tensor_path_place(x->path, 0, &x->step, &x->rank);
}

/* The block read handed on. */
static int lks_tnum_close(struct lks_tnum *x)
{
	if (!x->open)
		return 0;
	x->open = 0;
	return x->sink(x->arg, &x->t);
}

/* A value of the block as statistic name, its text at v (n bytes). */
static int lks_tnum_value(struct lks_tnum *x, const char *name, const char *v, size_t n,
                          long at)
{
	double val;
	int64_t dec;
	int rc = lks_import_number_dec(v, n, 0, &val, &dec);

	if (rc)
		return lks_err("'%s':%ld: bad value of %s: '%.*s'%s", x->path, at, name,
		               (int)(n > 64 ? 64 : n), v, lks_import_number_why(rc)),
		       LKS_E_BAD_INPUT;
	x->t.rec.line = at;  /* a statistic twice is bad input at its own line */
	return lks_tensor_rec_stat(&x->t, name, strlen(name), val, dec, x->path);
}

/* A hash line's values ("a, b, c", each a tensor's): the first as statistic name, and
   the text whole into the record's content hash (FNV-1a, 64 bits, over both hash lines
   as written), so that a difference in any of them is one, however many a list op has. */
static int lks_tnum_hashes(struct lks_tnum *x, const char *name, const char *v, size_t n,
                           long at)
{
	const char *comma = memchr(v, ',', n);
	uint64_t h = x->t.has_hash ? x->t.hash : 14695981039346656037ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)v[i]) * 1099511628211ull;
	h = (h ^ (unsigned char)name[0]) * 1099511628211ull;  /* which line it was */
	x->t.hash = h;
	x->t.has_hash = 1;
	for (const char *p = comma, *end = v + n, *e; p; p = e) {  /* the others: numbers */
		double d;

		for (p++; p < end && *p == ' '; p++)
			;
		e = memchr(p, ',', (size_t)(end - p));
		if (lks_import_number(p, (size_t)((e ? e : end) - p), 0, &d))
			return lks_err("'%s':%ld: bad value in the %s list: '%.*s'", x->path, at,
			               name, (int)((e ? e : end) - p > 64 ? 64 : (e ? e : end) - p),
			               p), LKS_E_BAD_INPUT;
	}
	return lks_tnum_value(x, name, v, comma ? (size_t)(comma - v) : n, at);
}

/* "torch.Size([2, 16, 64]), Dtype: torch.bfloat16": the product of the sizes. */
static int lks_tnum_shape(struct lks_tnum *x, const char *v, long at)
{
	const char *p = v + 12;
	double numel = 1;

	if (strncmp(v, "torch.Size([", 12))
		goto bad;
	while (*p != ']') {
		int d;
		const char *e = p;

		while (*e >= '0' && *e <= '9')
			e++;
		if (e == p || lks_import_step(p, (size_t)(e - p), &d))
			goto bad;
		numel *= d;
		p = e;
		if (*p == ',' && p[1] == ' ' && p[2] != ']')
			p += 2;
		else if (*p != ']')
			goto bad;
	}
	if (p[1] != ')' || (p[2] && p[2] != ','))
		goto bad;
	if (numel >= 9007199254740992.0)  /* 2^53: above, a product no longer exact */
		return lks_err("'%s':%ld: a Shape of more than 2^53 elements", x->path, at),
		       LKS_E_BAD_INPUT;
	x->t.rec.line = at;
	return lks_tensor_rec_stat(&x->t, "numel", 5, numel, (int64_t)numel << 4, x->path);
bad:
	return lks_err("'%s':%ld: want Shape: torch.Size([d, ...]), Dtype: ...", x->path, at),
	       LKS_E_BAD_INPUT;
}

/* "[key]": a block begins. */
static int lks_tnum_key(struct lks_tnum *x, const char *s, size_t len, long at)
{
	lks_tensor_rec *t = &x->t;
	int rc;

	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len < 3 || s[len - 1] != ']')
		return lks_err("'%s':%ld: want an op's key in brackets, [module/op_N_name]",
		               x->path, at), LKS_E_BAD_INPUT;
	if (len - 2 >= LKS_TENSOR_NAME_MAX)
		return lks_err("'%s':%ld: an op's key of %d bytes or more", x->path, at,
		               LKS_TENSOR_NAME_MAX), LKS_E_BAD_INPUT;
	if ((rc = lks_tnum_close(x)))
		return rc;
	memcpy(t->name, s + 1, len - 2);
	t->name[len - 2] = 0;
	t->rec.line = at;
	t->rec.step = x->step;
	t->rec.rank = x->rank;
	t->rec.ranked = 1;
	t->rec.n = 0;
	t->rec.layout = 0;
	t->phase = LKS_PHASE_FORWARD;
	t->micro = -1;
	t->has_hash = 0;
	x->open = 1;
	x->blocks++;
	return 0;
}

/* "  Label: value" of the block being read. */
static int lks_tnum_field(struct lks_tnum *x, const char *s, size_t len, long at)
{
	static const struct { const char *label, *name; } stats[] = {
		{ "L1 norm", "l1" }, { "L2 norm", "l2" }, { "Min", "min" }, { "Max", "max" },
		{ "Mean", "mean" },
	};
	const char *colon = memchr(s, ':', len), *v, *stat = NULL;
	size_t ll, vl;
	long header = x->t.rec.line;
	int rc = 0;

	if (!colon) {
		x->c->ignored++;
		return 0;
	}
	ll = (size_t)(colon - s);
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	vl = len - (size_t)(v - s);
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++)
		if (strlen(stats[i].label) == ll && !memcmp(s, stats[i].label, ll))
			stat = stats[i].name;
	if (stat)
		rc = lks_tnum_value(x, stat, v, vl, at);
	else if (ll == 5 && !memcmp(s, "Shape", 5))
		rc = lks_tnum_shape(x, v, at);
	else if (ll == 11 && !memcmp(s, "Output hash", 11))
		rc = lks_tnum_hashes(x, "output_hash", v, vl, at);
	else if (ll == 12 && !memcmp(s, "Input hashes", 12))
		rc = lks_tnum_hashes(x, "input_hash", v, vl, at);
	else if (ll == 5 && !memcmp(s, "Phase", 5)) {
		if (vl == 7 && !memcmp(v, "forward", 7))
			x->t.phase = LKS_PHASE_FORWARD;
		else if (vl == 8 && !memcmp(v, "backward", 8))
			x->t.phase = LKS_PHASE_BACKWARD;
		else
			rc = (lks_err("'%s':%ld: want Phase: forward or backward", x->path, at),
			      LKS_E_BAD_INPUT);
	} else
		x->c->ignored++;  /* Location, Input producers, what a later version adds */
	x->t.rec.line = header;
	return rc;
}

static int lks_tnum_line(void *arg, char *line, size_t len, long at)
{
	struct lks_tnum *x = arg;
	size_t i = 0;

	if (line[0] == '[')
		return lks_tnum_key(x, line, len, at);
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len)
		return 0;
	if (x->open && i > 0)
		return lks_tnum_field(x, line + i, len - i, at);
	if (!strncmp(line, "Total captured activations:", 27)) {
		const char *v = line + 27;
		int n;

		while (*v == ' ')
			v++;
		if (x->total >= 0 || x->blocks)
			return lks_err("'%s':%ld: a second dump's header: one dump a file", x->path,
			               at), LKS_E_BAD_INPUT;
		if (lks_import_step(v, strlen(v), &n))
			return lks_err("'%s':%ld: want Total captured activations: a count", x->path,
			               at), LKS_E_BAD_INPUT;
		x->total = n;
		x->total_at = at;
		return 0;
	}
	x->c->ignored++;  /* the header's other lines, its rule */
	return 0;
}

static int lks_tnum_parse(const char *path, FILE *f, lks_tensor_sink sink, void *arg,
                          lks_import_counts *c)
{
	struct lks_tnum *x = malloc(sizeof(*x));  /* a record is some 3 KiB */
	int rc;

	if (!x)
		return lks_err("out of memory");
	memset(x, 0, sizeof(*x));
	x->path = path;
	x->sink = sink;
	x->arg = arg;
	x->c = c;
	x->total = x->total_at = -1;
	if (!(rc = lks_tnum_path(x)) && !(rc = lks_import_each_line(path, f, c, lks_tnum_line, x))
	    && !(rc = lks_tnum_close(x)) && x->total >= 0 && x->total != x->blocks)
		rc = (lks_err("'%s':%ld: the dump says %ld activations, the file holds %ld (cut "
		              "short?)", path, x->total_at, x->total, x->blocks), LKS_E_BAD_INPUT);
	free(x);
	return rc;
}

const lks_import_format lks_import_titan_numerics_format = {
	.id = LKS_IMPORT_TITAN_NUMERICS,
	.name = "titan-numerics",
	.what = "torchtitan's --profiler.dump_numerics per-op dump (rank_N_activations.log: "
	        "[module/op_N_name] blocks of L2 norm, Min, Max, Mean, hashes, Phase)",
	.tensor_parse = lks_tnum_parse,
	.tensor_files = "rank_*_activations.log",
};
