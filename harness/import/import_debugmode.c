/*
 * import_debugmode.c: debugmode, PyTorch DebugMode's dumps of tensor hashes
 * (tensor_trace.h), of a region run under `with DebugMode() as dm,
 * DebugMode.log_tensor_hashes(...)`: its three dumps, each told from the others by its
 * first bytes.
 *
 * Read after pytorch/pytorch's torch/utils/_debug_mode (the file _debug_mode.py at
 * 2423638c; the package _debug_mode/ after it: _mode.py at 2aa3b961, _calls.py at
 * 02c8b968) and PRs #185010 (save_logs) and #185008 (dump_tensor_hashes). The code of
 * #185008's dump_tensor_hashes I read in a copy of _mode.py whose commit the index I had
 * did not name (its text is the PR's, word for word); its save_logs part, the
 * tensor_hash_leaves of _calls.py at 02c8b968. The hashes, all three: log_tensor_hashes'
 * hash_fn "norm" (the default: the L1 norm in float64, a Python float), "hash_tensor"
 * (torch.hash_tensor of the tensor as float64 or int64, its uint64 as a Python int), or a
 * list of both names (a tuple of each), of each output tensor ("hash") and, hash_inputs
 * set, of each input taken before the op ("input_hash").
 *
 * 1. save_logs' JSON (first byte '{'; a JSON array is refused): {"format": "torch.utils._debug_mode.DebugMode.logs",
 *    "version": 1, "logs": [call, ...]}, a call {"type": "op", "op_name": "aten::mm",
 *    "call_depth": 2, "args_str", "kwargs_str", "output_str", "log", "stack_trace", ...,
 *    "tensor_hash_leaves"}, "annotate" ({"header": "nn.Mod", "tag": "Net.fc1"}),
 *    "triton_kernel" ({"kernel_name", "pre_hashes", "post_hashes"}), "redistribute",
 *    "output_placement"; every value in it as {"type": "scalar", "value": v},
 *    {"type": "nonfinite_float", "value": "nan" | "inf" | "-inf"}, {"type": "tuple" |
 *    "list", "items": [...]} or {"type": "dict", "items": [[key, value], ...]}. Since
 *    #185008, "tensor_hash_leaves": {"input": [(pytree path, hash), ...], "output": [...]}
 *    names each tensor; before it, "log" holds {"input_hash": tree, "hash": tree}, the
 *    trees of the outputs, whose tuples cannot be told from a tuple hash_fn's.
 * 2. dump_tensor_hashes' text (first line "Total captured tensor hash ops: N", then a
 *    line of '=', then a block per op that has a hash):
 *      [Net.fc1/op_1_aten::addmm]
 *        Call type: torch op
 *        Call index: 4
 *        Call depth: 3
 *        Input hashes: [0][0]=[4.5, 12], [0][1]=[13.25, 77]
 *        Output hashes: <root>=[13.625, 15755400384260045840]
 *    the module the innermost nn.Mod annotation names ("<none>"), the op's count in it, its
 *    name; a hash by its pytree path in the op's (args, kwargs) or its output, or a
 *    triton kernel's argument, as json.dumps writes it ("NaN", "Infinity", "-Infinity" for
 *    the floats JSON lacks).
 * 3. debug_string()'s text (any other first line; read since before the two others):
 *      [nn.Mod] Net.fc1
 *        aten::mm(t$0: f32[8, 8], t$1: f32[8, 32])  ->  t$2: f32[8, 32]  # {'hash': 1523.25}
 *    _OpCall.render: "{op_name}({args}{kwargs})", "  ->  {output}", "  # {log}", indented
 *    two blanks a call depth; with record_nn_module, _AnnotateCall.render's "[{header}]
 *    {tag}" where a module is entered, its ops indented deeper below it (the first line
 *    too begins with '['). Seen in dumps torch 2.15.0 wrote (tests/import/data/debugmode/
 *    torch/), whose save_logs has no tensor_hash_leaves yet.
 * DebugMode's own check_hash_mismatches refuses two runs' logs of different lengths: this
 * stores them, and lockstep aligns them (harness/verify/align.h).
 *
 * Read as: in the two first, a record per tensor hashed, named by the module, the op and
 * where the tensor is in it: "Net.fc1/aten::addmm.out" (the output), "...out.1" (a tuple's
 * second), "...in.0" (the first argument), "...in.alpha" (a keyword's), a triton kernel's
 * "...in.in_ptr0"; no module, no "Net.fc1/" (names repeat: the alignment pairs them in
 * order); a call's log before #185008, a record per tree: "...in", "...out". In
 * debug_string()'s, a record per op with a hash, named by its op, within an nn.Mod
 * annotation by its module too ("Net.fc1/aten::mm", the innermost; backward under "nn.Mod
 * (compile bwd)"), its hash's floats in order the statistics l1, l1_1, ..., (past 32 of
 * them their bits folded into the hash), its ints folded into the hash; "input_hash" not
 * read. A hash's numbers in
 * the two first: its floats (the norms) the statistics l1, l1_1, ...; the record's hash
 * its int (hash_tensor's uint64, bit for bit; a negative int of a hash_fn of the user's
 * mod 2^64), several ints folded (h * 0x9e3779b97f4a7c15 + next), and where it has no int,
 * its float's IEEE-754 bits (several folded alike): a record of any hash has one. Phase
 * backward for an op under an "nn.Mod (compile bwd)" annotation (a compiled region's
 * backward; the JSON alone says so), else forward. Step and rank: what the path says
 * (run/step_3/rank_1.json; import_impl.h, lks_tensor_path_place), else for the step the
 * file's place among its rank's files (LKS_TENSOR_STEP_OF_FILE: the n-th given is step n,
 * a folder's in name order), for the rank 0: a dump is one region's, a step's. A hash that
 * is no number, a JSON dump truncated or not save_logs', a hash dump with fewer blocks than
 * its first line counts: bad input at its line (a save_logs file is one line, json.dump's:
 * its records are its line 1, its errors name the call, logs[i]).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_debugmode_impl.h"
#include "harness/import/import_impl.h"
#include "harness/store/run.h"
#include "kernels/err.h"

/* The record of line 'at' begun: this dump's step and rank, no statistic yet, phase ph. */
static void lks_dm_rec_begin(struct lks_dm *x, long at, lks_phase ph)
{
	x->t.rec.line = at;
	x->t.rec.step = x->step;
	x->t.rec.rank = x->rank;
	x->t.rec.ranked = 1;
	x->t.rec.n = 0;
	x->t.rec.layout = 0;
	x->t.phase = ph;
	x->t.micro = -1;
}

/* ---- debug_string()'s text ---- */

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

/* An nn.Mod annotation of debug_string(), open for the lines indented deeper below it */
struct lks_dm_open {
	int indent;
	int bwd;                  /* "nn.Mod (compile bwd)", or inside one: a backward */
	char *name;
};

/* debug_string()'s "[HEADER] TAG" at indent (s: its '['): an nn.Mod one opens module TAG
   for the lines indented deeper (_AnnotateCall.render); any other is ignored. */
static int lks_dm_string_annotation(struct lks_dm *x, const char *s, int indent, long at)
{
	const char *close = strchr(s, ']'), *bwd = strstr(s, "bwd");
	struct lks_dm_open *o;

	x->ignored++;
	if (!close || close[1] != ' ' || strncmp(s, "[nn.Mod", 7) || !close[2])
		return 0;
	if (strlen(close + 2) >= LKS_TENSOR_NAME_MAX)
		return lks_err("'%s':%ld: a module name of %zu bytes", x->path, at,
		               strlen(close + 2)), LKS_E_BAD_INPUT;
	if (lks_room_for((void **)&x->mods, &x->capmods, x->nmods, sizeof(*x->mods)))
		return lks_err("out of memory");
	o = &x->mods[x->nmods];
	if (!(o->name = strdup(close + 2)))
		return lks_err("out of memory");
	o->indent = indent;
	o->bwd = (bwd && bwd < close) || (x->nmods && o[-1].bwd);
	x->nmods++;
	return 0;
}

/* A line of debug_string(): an op's with a hash is a record, named "MODULE/op" within an
   nn.Mod annotation (the innermost whose indent is below the op's), else "op". */
static int lks_dm_string_line(struct lks_dm *x, char *line, size_t len, long at)
{
	char *log = NULL, *h, *op, *paren;
	const char *v, *module;
	size_t oplen, modlen;
	size_t blanks = strspn(line, " ");
	int nf = 0, ni = 0, indent = (int)blanks + x->lead;  /* the first line's, read before */

	x->lead = 0;
	while (x->nmods && x->mods[x->nmods - 1].indent >= indent)
		free(x->mods[--x->nmods].name);
	if (line[blanks] == '[')
		return lks_dm_string_annotation(x, line + blanks, indent, at);
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
	module = x->nmods ? x->mods[x->nmods - 1].name : "";
	modlen = strlen(module);
	if (modlen + !!modlen + oplen >= LKS_TENSOR_NAME_MAX)
		return lks_err("'%s':%ld: an op name of %zu bytes", x->path, at,
		               modlen + !!modlen + oplen), LKS_E_BAD_INPUT;
	snprintf(x->t.name, LKS_TENSOR_NAME_MAX, "%s%s%.*s", module, modlen ? "/" : "",
	         (int)oplen, op);
	lks_dm_rec_begin(x, at, x->nmods && x->mods[x->nmods - 1].bwd ? LKS_PHASE_BACKWARD
	                                                               : LKS_PHASE_FORWARD);
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

/* ---- a tensor's hash, in the two other dumps (import_debugmode_impl.h) ---- */

int lks_dm_leaf(struct lks_dm *x, const char *module, const char *op, int input,
                int args, const char *p, size_t pn, long at)
{
	char *o = x->t.name;
	size_t cap = LKS_TENSOR_NAME_MAX;
	int n = snprintf(o, cap, "%s%s%s.%s", module ? module : "", module ? "/" : "", op,
	                 input ? "in" : "out");
	size_t k = n < 0 ? cap : (size_t)n;

	if (pn == 6 && !memcmp(p, "<root>", 6))
		pn = 0;
	if (args && pn >= 3 && (!memcmp(p, "[0]", 3) || !memcmp(p, "[1]", 3))) {
		p += 3;
		pn -= 3;
	}
	for (size_t i = 0; i < pn && k < cap; i++) {
		if (p[i] == '[' || (i == 0 && p[i] != '.'))
			o[k++] = '.';
		if (k < cap && !strchr("[]'\"", p[i]))
			o[k++] = p[i];
	}
	if (k >= cap)
		return lks_err("'%s':%ld: the name of a tensor of '%.64s' is %d bytes or more",
		               x->path, at, op, LKS_TENSOR_NAME_MAX), LKS_E_BAD_INPUT;
	o[k] = 0;
	lks_dm_rec_begin(x, at, x->phase);
	x->t.has_hash = 0;
	x->nf = x->ni = 0;
	x->fh = x->ih = 0;
	return 0;
}

int lks_dm_float(struct lks_dm *x, double v, int64_t dec)
{
	char name[16];
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	x->fh = x->nf ? x->fh * LKS_DM_FOLD + u : u;
	if (x->nf < LKS_IMPORT_MAX_METRICS) {
		snprintf(name, sizeof(name), x->nf ? "l1_%d" : "l1", x->nf);
		if (lks_tensor_rec_stat(&x->t, name, strlen(name), v, dec, x->path))
			return -1;
	}
	x->nf++;
	return 0;
}

int lks_dm_emit(struct lks_dm *x)
{
	if (!x->nf && !x->ni) {
		x->ignored++;
		return 0;
	}
	x->t.has_hash = 1;
	x->t.hash = x->ni ? x->ih : x->fh;
	return x->sink(x->arg, &x->t);
}

int lks_dm_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t h = 0, d;
	size_t i = n && s[0] == '-';

	if (i == n || n - i > 20)
		return -1;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		d = (uint64_t)(s[i] - '0');
		if (h > (UINT64_MAX - d) / 10)
			return -1;
		h = h * 10 + d;
	}
	*out = s[0] == '-' ? (uint64_t)0 - h : h;
	return 0;
}

/* ---- dump_tensor_hashes' text ---- */

/* The JSON value at *p as json.dumps writes a hash (a number; "NaN", "Infinity",
   "-Infinity"; null; lists, and objects such as a complex's {"imag": .., "real": ..}), its
   numbers to the leaf. 0, or -1 where it is none such. */
static int lks_dm_jtext(struct lks_dm *x, const char **p, int depth)
{
	static const struct { const char *w; double v; } words[] = {
		{ "\"NaN\"", NAN }, { "\"Infinity\"", INFINITY }, { "\"-Infinity\"", -INFINITY },
	};
	const char *s = *p;
	size_t n = 0;
	uint64_t u;
	double v;
	int64_t dec;

	if (*s == '[' || *s == '{') {
		char close = *s == '[' ? ']' : '}';

		if (depth > 16)
			return -1;
		for (s++; *s == ' '; s++)
			;
		while (*s != close) {
			if (close == '}') {  /* a key: a word, sort_keys' */
				if (*s != '"' || !(s = strchr(s + 1, '"')) || s[1] != ':')
					return -1;
				for (s += 2; *s == ' '; s++)
					;
			}
			if (lks_dm_jtext(x, &s, depth + 1))
				return -1;
			if (*s == ',')
				for (s++; *s == ' '; s++)
					;
			else if (*s != close)
				return -1;
		}
		*p = s + 1;
		return 0;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strncmp(s, words[i].w, strlen(words[i].w))) {
			*p = s + strlen(words[i].w);
			return lks_dm_float(x, words[i].v, LKS_IMPORT_NO_DEC);
		}
	if (!strncmp(s, "null", 4)) {
		*p = s + 4;
		return 0;
	}
	while (s[n] && strchr("-+.eE0123456789", s[n]))
		n++;
	*p = s + n;
	if (!lks_dm_u64(s, n, &u)) {
		lks_dm_int(x, u);
		return 0;
	}
	if (strcspn(s, ".eE") >= n)  /* digits only, beyond 64 bits */
		return -1;
	if (lks_import_number_dec(s, n, 0, &v, &dec))
		return -1;
	return lks_dm_float(x, v, dec);
}

/* "NAME=HASH, NAME=HASH" (s) of the block's inputs or outputs: a record each. */
static int lks_dm_hashes(struct lks_dm *x, const char *s, int input, long at)
{
	const char *module = x->module[0] ? x->module : NULL;
	int rc;

	while (*s) {
		const char *name = s, *eq = NULL;
		int depth = 0;
		char q = 0;

		for (; *s && !eq; s++) {  /* the '=' outside brackets and quotes */
			if (q)
				q = *s == q ? 0 : q;
			else if (*s == '\'' || *s == '"')
				q = *s;
			else if (*s == '[' || *s == ']')
				depth += *s == '[' ? 1 : -1;
			else if (*s == '=' && !depth)
				eq = s;
		}
		if (!eq || eq == name)
			return lks_err("'%s':%ld: want NAME=HASH, ... after \"%s hashes:\"", x->path,
			               at, input ? "Input" : "Output"), LKS_E_BAD_INPUT;
		if ((rc = lks_dm_leaf(x, module, x->call, input, input && !x->triton, name,
		                      (size_t)(eq - name), at)))
			return rc;
		s = eq + 1;
		if (lks_dm_jtext(x, &s, 0) || (*s && strncmp(s, ", ", 2)))
			return lks_err("'%s':%ld: the hash of '%s' is no number, nor a list of them: "
			               "'%.40s'", x->path, at, x->t.name, eq + 1), LKS_E_BAD_INPUT;
		if ((rc = lks_dm_emit(x)))
			return rc;
		s += *s ? 2 : 0;
	}
	return 0;
}

/* A block's first line, "[MODULE/op_N_CALL]" (len bytes at s). 0, or LKS_E_BAD_INPUT. */
static int lks_dm_block(struct lks_dm *x, const char *s, size_t len, long at)
{
	const char *o, *c = NULL;

	for (o = strstr(s + 1, "/op_"); o && o < s + len; o = strstr(o + 1, "/op_")) {
		for (c = o + 4; *c >= '0' && *c <= '9'; c++)
			;
		if (c > o + 4 && *c == '_') {
			c++;
			break;
		}
		c = NULL;
	}
	if (!c || c >= s + len - 1 || (size_t)(o - s) >= sizeof(x->module)
	    || (size_t)(s + len - c) >= sizeof(x->call))
		return lks_err("'%s':%ld: want a block's [MODULE/op_N_CALL], not '%.40s'", x->path,
		               at, s), LKS_E_BAD_INPUT;
	memcpy(x->module, s + 1, (size_t)(o - s - 1));
	x->module[o - s - 1] = 0;
	if (!strcmp(x->module, "<none>"))
		x->module[0] = 0;
	memcpy(x->call, c, (size_t)(s + len - 1 - c));
	x->call[s + len - 1 - c] = 0;
	x->blocks++;
	x->inblock = 1;
	x->triton = 0;
	return 0;
}

static int lks_dm_hash_line(struct lks_dm *x, char *s, size_t len, long at)
{
	if (!len || strspn(s, "=") == len)
		return 0;
	if (s[0] == '[' && s[len - 1] == ']')
		return lks_dm_block(x, s, len, at);
	if (strncmp(s, "  ", 2))
		return lks_err("'%s':%ld: not a line of DebugMode's hash dump: '%.40s'", x->path,
		               at, s), LKS_E_BAD_INPUT;
	if (!x->inblock)
		return lks_err("'%s':%ld: a block's line before its [MODULE/op_N_CALL]", x->path,
		               at), LKS_E_BAD_INPUT;
	if (!strncmp(s, "  Input hashes: ", 16))
		return lks_dm_hashes(x, s + 16, 1, at);
	if (!strncmp(s, "  Output hashes: ", 17))
		return lks_dm_hashes(x, s + 17, 0, at);
	if (!strncmp(s, "  Call type: ", 13)) {
		if (strcmp(s + 13, "torch op") && strcmp(s + 13, "triton kernel"))
			return lks_err("'%s':%ld: a call type neither torch op nor triton kernel: "
			               "'%.40s'", x->path, at, s + 13), LKS_E_BAD_INPUT;
		x->triton = !strcmp(s + 13, "triton kernel");
	}
	x->ignored++;  /* its index and depth */
	return 0;
}

static int lks_dm_line(void *arg, char *line, size_t len, long at)
{
	struct lks_dm *x = arg;
	static const char head[] = "Total captured tensor hash ops: ";

	if (x->kind == LKS_DM_UNKNOWN) {
		if (!strncmp(line, head, sizeof(head) - 1)) {
			int n;

			if (lks_import_step(line + sizeof(head) - 1, len - sizeof(head) + 1, &n))
				return lks_err("'%s':%ld: want the count of ops after \"%s\"", x->path, at,
				               head), LKS_E_BAD_INPUT;
			x->kind = LKS_DM_HASHES;
			x->nops = n;
			return 0;
		}
		if (line[0] == '[' && strchr("[{\"]-0123456789", line[1] ? line[1] : ' '))
			return lks_err("'%s':%ld: a JSON array; want DebugMode.save_logs' {\"format\": "
			               "...} document, or a text dump", x->path, at), LKS_E_BAD_INPUT;
		x->kind = LKS_DM_STRING;
	}
	return x->kind == LKS_DM_HASHES ? lks_dm_hash_line(x, line, len, at)
	       : lks_dm_string_line(x, line, len, at);
}

/* ---- the three ---- */

static int lks_dm_parse(const char *path, FILE *f, lks_tensor_sink sink, void *arg,
                        lks_import_counts *c)
{
	struct lks_dm *x = calloc(1, sizeof(*x));  /* a record is some 3 KiB */
	int rc, ch;

	if (!x)
		return lks_err("out of memory");
	x->path = path;
	x->sink = sink;
	x->arg = arg;
	if ((rc = lks_tensor_path_place(path, LKS_TENSOR_STEP_OF_FILE, &x->step, &x->rank)))
		goto out;
	while ((ch = getc(f)) != EOF && isspace(ch)) {  /* the first byte that says which */
		c->lines += ch == '\n';
		x->lead = ch == '\n' ? 0 : x->lead + (ch == ' ');
	}
	if (ch != EOF && ungetc(ch, f) == EOF) {
		rc = lks_err("cannot read '%s'", path);
		goto out;
	}
	if (ch == '{') {  /* '[': debug_string()'s "[nn.Mod] Net" (or a JSON array, refused) */
		rc = lks_dm_json_file(x, f);
		c->lines++;
	} else {
		rc = lks_import_each_line_at(path, f, c->lines, c, lks_dm_line, x);
	}
	if (!rc && x->kind == LKS_DM_HASHES && x->blocks != x->nops)
		rc = (lks_err("'%s': its first line counts %ld ops, it holds %ld: truncated?", path,
		              x->nops, x->blocks), LKS_E_BAD_INPUT);
out:
	c->ignored += x->ignored;
	while (x->nmods)
		free(x->mods[--x->nmods].name);
	free(x->mods);
	free(x);
	return rc;
}

const lks_import_format lks_import_debugmode_format = {
	.id = LKS_IMPORT_DEBUGMODE,
	.name = "debugmode",
	.what = "PyTorch DebugMode's tensor hashes: save_logs' JSON, dump_tensor_hashes' text, "
	        "or debug_string() ('aten::mm(...)  ->  t$2: f32[8, 32]  # {'hash': 1523.25}')",
	.tensor_parse = lks_dm_parse,
	.tensor_files = "*.json|*.txt",
};
