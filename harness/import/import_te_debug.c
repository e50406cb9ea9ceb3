/*
 * import_te_debug.c: te-debug, TransformerEngine's debug API statistics as
 * nvidia-dlfw-inspect logs them (tensor_trace.h): one file per rank,
 * nvdlfw_inspect_statistics_logs/nvdlfw_inspect[_TIMESTAMP]_globalrank-N.log, a line per
 * statistic of a tensor at an iteration:
 *
 *   2025-06-02 10:14:03,117 - INFO - decoder.1.mlp.fc1_gradient_l2_norm \t\t\t\t
 *       iteration=000002 \t\t\t\t value=4.3188
 *
 * Read after nvdlfw_inspect/logging.py of NVIDIA/nvidia-dlfw-inspect (the copy read had no
 * commit to name; FileLogger:
 * _get_log_file_name's "_globalrank-{rank}.log" in make_default_statistics_logger's
 * "nvdlfw_inspect_statistics_logs"; the handler's format "%(asctime)s - %(levelname)s -
 * %(message)s"; log_scalar's "{} \t\t\t\t iteration={:06d} \t\t\t\t value={:.4f}"), and
 * TransformerEngine's debug features (LogTensorStats: min, max, mean, std, l1_norm,
 * l2_norm, cur_amax, dynamic_range; LogFp8TensorStats: underflows%, overflows%,
 * scale_inv_min, scale_inv_max, mse, also of another recipe than the run's, prefixed
 * with it, "mxfp8_underflows%", and "_columnwise" after it), whose name is
 * "{layer_name}_{tensor_name}_{stat}" with tensor_name one of activation, gradient,
 * weight, output, wgrad, dgrad.
 *
 * Read as: the name's last "_<tensor>_" splits it (a layer's name may hold '_'; no
 * statistic's holds a tensor's word), the record's name "<layer>.<tensor>", its phase
 * backward for gradient, wgrad and dgrad, forward for the others; the statistic as
 * lks_tensor_stat_name names it (l2_norm is lockstep's l2, cur_amax its amax,
 * underflows% underflow_pct, others as written), its value with the 4 decimals it was
 * printed with (nan and inf as Python prints them). The lines of one tensor at one
 * iteration come one after another (the feature logs a tensor's statistics in a loop)
 * and make one record; a statistic met again in them begins the next record, the
 * tensor's next call (a microbatch). The iteration is the step; the rank is the file
 * name's globalrank-N, else 0. Lines that are no statistic are counted as ignored; one
 * that is ("iteration=" and "value=") with a name of no tensor's word, or a bad number,
 * is bad input at its line. A folder is read as its files of these names, or where it
 * holds none (the log_dir given to debug_api.initialize), as its
 * nvdlfw_inspect_statistics_logs/ (nvdlfw_inspect_logs/ beside it holds messages, in files
 * of the same names). Seen in logs nvidia-dlfw-inspect 0.2.2 wrote on the CPU, its own
 * LogTensorStats on a torch model (tests/import/data/te_debug/nvdlfw/).
 */
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

static const char *const lks_te_tensors[] = { "activation", "gradient", "weight", "output",
                                              "wgrad", "dgrad" };
#define LKS_TE_NTENSORS (sizeof(lks_te_tensors) / sizeof(lks_te_tensors[0]))

struct lks_te {
	const char *path;
	lks_tensor_sink sink;
	void *arg;
	int rank;
	int open;                 /* t holds a record not yet handed on */
	long ignored;             /* lines that are no statistic */
	char key[LKS_TENSOR_NAME_MAX + 16];  /* its layer and tensor, as the name wrote them */
	lks_tensor_rec t;
};

/* The rank the file's name gives ("..._globalrank-3.log"), else 0. */
static int lks_te_rank(const char *path)
{
	const char *base = strrchr(path, '/'), *g;
	int r = 0;

	base = base ? base + 1 : path;
	if (!(g = strstr(base, "globalrank-")) || !lks_rank_digits(g + 11, &r))
		return 0;
	return r;
}

static int lks_te_flush(struct lks_te *x)
{
	int rc = 0;

	if (x->open && x->t.rec.n)
		rc = x->sink(x->arg, &x->t);
	x->open = 0;
	return rc;
}

/* name[0..len) split at its last "_<tensor>_": the layer's length and the tensor's index,
   or -1 where no tensor's word is in it. */
static int lks_te_split(const char *name, size_t len, size_t *layer, int *tensor)
{
	size_t best = 0;
	int found = -1;

	for (int k = 0; k < (int)LKS_TE_NTENSORS; k++) {
		size_t tl = strlen(lks_te_tensors[k]);

		for (size_t i = 1; i + tl + 1 < len; i++)  /* a layer before, a statistic after */
			if (name[i - 1] == '_' && !memcmp(name + i, lks_te_tensors[k], tl)
			    && name[i + tl] == '_' && i - 1 >= best) {
				best = i - 1;
				found = k;
			}
	}
	if (found < 0 || best == 0)
		return -1;
	*layer = best;
	*tensor = found;
	return 0;
}

static int lks_te_line(void *arg, char *line, size_t len, long at)
{
	struct lks_te *x = arg;
	const char *m, *it, *val, *end = line + len;
	size_t nlen, layer;
	int step, tensor, rc;
	double v;
	int64_t dec;
	const char *stat;

	/* the message after "<asctime> - <LEVEL> - ", or the line itself */
	m = strstr(line, " - INFO - ");
	m = m ? m + 10 : line;
	it = strstr(m, "iteration=");
	val = it ? strstr(it, "value=") : NULL;
	if (!it || !val) {
		x->ignored++;
		return 0;
	}
	while (*m == ' ' || *m == '\t')
		m++;
	for (nlen = 0; m + nlen < it && m[nlen] != ' ' && m[nlen] != '\t'; nlen++)
		;
	if (!nlen || lks_te_split(m, nlen, &layer, &tensor))
		return lks_err("'%s':%ld: '%.*s' names no tensor (%s, %s, ...) before its "
		               "statistic", x->path, at, (int)(nlen > 80 ? 80 : nlen), m,
		               lks_te_tensors[0], lks_te_tensors[1]), LKS_E_BAD_INPUT;
	{
		const char *d = it + 10;
		size_t dl = 0;

		while (lks_digit(d[dl]))
			dl++;
		if ((rc = lks_import_step(d, dl, &step)))
			return lks_import_bad_step(x->path, at, "iteration", d, dl);
	}
	val += 6;
	{
		size_t vl = 0;

		while (val + vl < end && val[vl] != ' ' && val[vl] != '\t')
			vl++;
		if ((rc = lks_import_number_dec(val, vl, 0, &v, &dec)))
			return lks_import_bad_value(x->path, at, "value", 5, val, vl, rc);
	}
	stat = m + layer + 1 + strlen(lks_te_tensors[tensor]) + 1;
	/* the same tensor at the same iteration: its next statistic, unless met already */
	if (x->open && (step != x->t.rec.step || (size_t)(stat - m) != strlen(x->key)
	                || memcmp(m, x->key, (size_t)(stat - m)))) {
		if ((rc = lks_te_flush(x)))
			return rc;
	}
	if (x->open) {
		char buf[LKS_IMPORT_NAME_MAX];
		const char *name = lks_tensor_stat_name(stat, (size_t)(m + nlen - stat), buf);

		for (int i = 0; name && i < x->t.rec.n; i++)
			if (!strcmp(x->t.rec.m[i].name, name) && (rc = lks_te_flush(x)))
				return rc;
	}
	if (!x->open) {
		if (layer + 1 + strlen(lks_te_tensors[tensor]) >= LKS_TENSOR_NAME_MAX)
			return lks_err("'%s':%ld: a layer name of %zu bytes", x->path, at, layer),
			       LKS_E_BAD_INPUT;
		memcpy(x->key, m, (size_t)(stat - m));
		x->key[stat - m] = 0;
		snprintf(x->t.name, sizeof(x->t.name), "%.*s.%s", (int)layer, m,
		         lks_te_tensors[tensor]);
		x->t.phase = tensor == 1 || tensor >= 4 ? LKS_PHASE_BACKWARD : LKS_PHASE_FORWARD;
		x->t.micro = -1;
		x->t.has_hash = 0;
		x->t.rec.step = step;
		x->t.rec.rank = x->rank;
		x->t.rec.ranked = 1;
		x->t.rec.n = 0;
		x->t.rec.layout = 0;
		x->t.rec.line = at;
		x->open = 1;
	}
	return lks_tensor_rec_stat(&x->t, stat, (size_t)(m + nlen - stat), v, dec, x->path);
}

static int lks_te_parse(const char *path, FILE *f, lks_tensor_sink sink, void *arg,
                        lks_import_counts *c)
{
	struct lks_te *x = calloc(1, sizeof(*x));  /* a record is some 3 KiB */
	int rc;

	if (!x)
		return lks_err("out of memory");
	x->path = path;
	x->sink = sink;
	x->arg = arg;
	x->rank = lks_te_rank(path);
	rc = lks_import_each_line(path, f, c, lks_te_line, x);
	if (!rc)
		rc = lks_te_flush(x);
	c->ignored += x->ignored;
	free(x);
	return rc;
}

const lks_import_format lks_import_te_debug_format = {
	.id = LKS_IMPORT_TE_DEBUG,
	.name = "te-debug",
	.what = "TransformerEngine's debug API statistics (nvidia-dlfw-inspect): "
	        "'... - INFO - decoder.1.mlp.fc1_gradient_l2_norm  iteration=000002  "
	        "value=4.3188', a file per rank",
	.tensor_parse = lks_te_parse,
	.tensor_files = "nvdlfw_inspect*_globalrank-*.log",
	/* the log_dir given to debug_api.initialize: its statistics, not nvdlfw_inspect_logs/'s
	   messages (files of the same names) */
	.tensor_folder = "nvdlfw_inspect_statistics_logs",
};
