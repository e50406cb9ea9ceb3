/*
 * import_debugmode.c: debugmode, PyTorch DebugMode's string dump with tensor hashes
 * (tensor_trace.h): what `print(debug_mode.debug_string())` writes of a region run under
 * `with DebugMode() as debug_mode, DebugMode.log_tensor_hashes(...)`, one op a line,
 * indented two blanks a call depth:
 *
 *   aten::mm(t$0: f32[8, 8], t$1: f32[8, 32])  ->  t$2: f32[8, 32]  # {'hash': 1523.25}
 *
 * Read after torch/utils/_debug_mode.py of pytorch/pytorch: at 2423638c (log_tensor_hashes
 * with default_hash_fn, the L1 norm in float64 after nan_to_num) and as it reads in 2026
 * (the same render; hash_fn "norm", "hash_tensor" or a list of both), both:
 * _OpCall.render writes "{op_name}({args}{kwargs})", "  ->  {output}", then
 * "  # {self.log}", the dict the log hooks returned; log_tensor_hashes' post hook puts
 * "hash" in it, a pytree of the output like the output (a tuple's each, None for what is
 * no tensor), each hash_fn's value: "norm" (the default) the tensor's L1 norm in float64,
 * a Python float; "hash_tensor" torch.hash_tensor's uint64, a Python int; a list of both
 * names, a tuple of each; hash_inputs adds "input_hash", taken before the op). Its
 * check_hash_mismatches, which compares two runs' logs, refuses logs of different lengths
 * ("Log lengths don't match"): lockstep aligns them instead. The JSON and text hash dumps
 * of PRs #185010 and #185008 were not in the source I could read; this reads the string
 * dump, which every version writes.
 *
 * Read as: a record per line whose log has "hash", named by its op ("aten::mm", the names
 * repeat: the alignment pairs them by order), phase forward (the dump does not say which
 * ops run in the backward); its hash's floats in order the statistics l1, l1_1, l1_2, ...
 * with the digits repr wrote (its shortest form; past 32 of them, their bits are folded
 * into the hash); its ints, the uint64 hashes, folded into
 * the record's hash (one int: that int), so any that differs is a hash that differs;
 * "input_hash" is not read. Other lines (redistribute_input, annotations, ops without a
 * hash) are counted as ignored. The step and rank are what the file's path says
 * (run/step_3/rank_1.txt; import_impl.h, lks_tensor_path_place), else 0: a dump is one
 * region's, a step's. A hash that is no number is bad input at its line.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

struct lks_dm {
	const char *path;
	lks_tensor_sink sink;
	void *arg;
	int step, rank;
	long ignored;
	lks_tensor_rec t;
};

/* The numbers of the Python literal at *p (a number, None, or tuples and lists of them),
   each to the record: floats statistics, ints the hash. 0, or -1 where it is none such. */
static int lks_dm_value(struct lks_dm *x, const char **p, int depth, int *nf, int *ni)
{
	const char *s = *p;

	while (*s == ' ')
		s++;
	if (*s == '(' || *s == '[') {
		char close = *s == '(' ? ')' : ']';

		if (depth > 16)
			return -1;
		for (s++;;) {
			while (*s == ' ')
				s++;
			if (*s == close)
				break;
			if (lks_dm_value(x, &s, depth + 1, nf, ni))
				return -1;
			while (*s == ' ')
				s++;
			if (*s == ',')
				s++;
			else if (*s != close)
				return -1;
		}
		*p = s + 1;
		return 0;
	}
	if (!strncmp(s, "None", 4)) {
		*p = s + 4;
		return 0;
	}
	{
		size_t n = 0;
		int is_int = 1;
		double v;
		int64_t dec;

		for (; s[n] && !strchr(",)]} ", s[n]); n++)
			if (!((s[n] >= '0' && s[n] <= '9') || (n == 0 && s[n] == '-')))
				is_int = 0;
		if (!n)
			return -1;
		if (is_int && n <= 20) {
			uint64_t h = 0, d;
			size_t i = s[0] == '-';

			for (; i < n; i++) {
				d = (uint64_t)(s[i] - '0');
				if (h > (UINT64_MAX - d) / 10)
					return -1;
				h = h * 10 + d;
			}
			if (s[0] == '-')
				h = (uint64_t)0 - h;
			x->t.hash = *ni ? x->t.hash * 0x9e3779b97f4a7c15ull + h : h;
			x->t.has_hash = 1;
			++*ni;
		} else {
			char name[16];

			if (lks_import_number_dec(s, n, 0, &v, &dec))
				return -1;
			if (*nf == LKS_IMPORT_MAX_METRICS) {  /* more outputs than statistics: hashed */
				uint64_t u;

				memcpy(&u, &v, sizeof(u));
				x->t.hash = x->t.hash * 0x9e3779b97f4a7c15ull + u;
				x->t.has_hash = 1;
				*p = s + n;
				return 0;
			}
			if (*nf)
				snprintf(name, sizeof(name), "l1_%d", *nf);
			else
				snprintf(name, sizeof(name), "l1");
			if (lks_tensor_rec_stat(&x->t, name, strlen(name), v, dec, x->path))
				return -1;
			++*nf;
		}
		*p = s + n;
		return 0;
	}
}

static int lks_dm_line(void *arg, char *line, size_t len, long at)
{
	struct lks_dm *x = arg;
	char *log = NULL, *h, *op, *paren;
	const char *v;
	size_t oplen;
	int nf = 0, ni = 0;

	for (char *q = line; (q = strstr(q, "  # {")); q++)
		log = q;  /* the last: an argument's text may hold one */
	if (!log || !(h = strstr(log, "'hash': "))) {
		x->ignored++;
		return 0;
	}
	(void)len;
	for (op = line; *op == ' '; op++)
		;
	if (!(paren = strchr(op, '(')) || paren > log || (oplen = (size_t)(paren - op)) == 0) {
		x->ignored++;
		return 0;
	}
	if (oplen >= LKS_TENSOR_NAME_MAX)
		return lks_err("'%s':%ld: an op name of %zu bytes", x->path, at, oplen),
		       LKS_E_BAD_INPUT;
	memcpy(x->t.name, op, oplen);
	x->t.name[oplen] = 0;
	x->t.rec.line = at;
	x->t.rec.step = x->step;
	x->t.rec.rank = x->rank;
	x->t.rec.ranked = 1;
	x->t.rec.n = 0;
	x->t.rec.layout = 0;
	x->t.phase = LKS_PHASE_FORWARD;
	x->t.micro = -1;
	x->t.has_hash = 0;
	v = h + 8;
	if (lks_dm_value(x, &v, 0, &nf, &ni))
		return lks_err("'%s':%ld: the hash of '%s' is no number, nor a tuple of them: "
		               "'%.40s'", x->path, at, x->t.name, h + 8), LKS_E_BAD_INPUT;
	if (!nf && !ni) {  /* every output None: nothing measured */
		x->ignored++;
		return 0;
	}
	return x->sink(x->arg, &x->t);
}

static int lks_dm_parse(const char *path, FILE *f, lks_tensor_sink sink, void *arg,
                        lks_import_counts *c)
{
	struct lks_dm *x = calloc(1, sizeof(*x));  /* a record is some 3 KiB */
	int rc;

	if (!x)
		return lks_err("out of memory");
	x->path = path;
	x->sink = sink;
	x->arg = arg;
	if (!(rc = lks_tensor_path_place(path, &x->step, &x->rank)))
		rc = lks_import_each_line(path, f, c, lks_dm_line, x);
	c->ignored += x->ignored;
	free(x);
	return rc;
}

const lks_import_format lks_import_debugmode_format = {
	.id = LKS_IMPORT_DEBUGMODE,
	.name = "debugmode",
	.what = "PyTorch DebugMode's debug_string() with log_tensor_hashes: "
	        "'aten::mm(...)  ->  t$2: f32[8, 32]  # {'hash': 1523.25}'",
	.tensor_parse = lks_dm_parse,
	.tensor_files = "*.txt",
};
