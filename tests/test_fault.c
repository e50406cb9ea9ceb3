/*
 * test_fault.c: planted faults (harness/engine/fault.h) are caught and located exactly.
 *
 * The specs parse and refuse what is wrong; each fault changes the data exactly as it
 * says; the fault cases in cases/faults each find their fault at the declared step, rank
 * and tensor (and fail when the declared place is off by one step); LOCKSTEP_INJECT plants
 * a fault from the environment; the clean nightly cases pass three reruns.
 * LKS_BIN is the built program, LKS_SRC the source tree (tests/CMakeLists.txt).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "run_bin.h"
#include "harness/engine/case.h"
#include "harness/engine/fault.h"
#include "harness/engine/model.h"
#include "harness/engine/runner.h"
#include "harness/verify/sqnr.h"
#include "harness/store/trace_store.h"
#include "kernels/cpu/quant.h"
#include "kernels/err.h"

/* ---- the spec ---- */

Test(fault, parse_and_format_round_trip)
{
	static const char *const specs[] = {
		"bitflip step=3 rank=1 tensor=blocks.0.mlp.up.out element=100 bit=22",
		"nan step=2 rank=0 tensor=head.logits",
		"nan step=2 rank=0 tensor=head.logits element=9",
		"stale_bwd_scale",
		"skip_allreduce step=4 rank=3",
		"scale_round_up",
		"scale_round_up step=2 rank=1",
	};

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		lks_fault f, g;
		char buf[256];

		cr_assert_eq(lks_fault_parse(specs[i], 0, &f), 0, "%s: %s", specs[i], lks_errmsg());
		lks_fault_format(&f, buf, sizeof(buf));
		cr_assert_str_eq(buf, specs[i]);
		cr_assert_eq(lks_fault_parse(buf, 0, &g), 0);
		cr_assert_eq(memcmp(&f, &g, sizeof(f)), 0, "%s", specs[i]);
	}
}

Test(fault, bad_specs_say_why)
{
	static const struct { const char *spec, *why; } bad[] = {
		{ "", "empty" },
		{ "flip step=1", "unknown fault 'flip'" },
		{ "bitflip step=1 rank=0 tensor=x element=0", "needs bit=" },
		{ "bitflip step=1 rank=0 tensor=x element=0 bit=32", "bad bit '32'" },
		{ "nan step=1 rank=0", "needs tensor=" },
		{ "nan step=-1 rank=0 tensor=x", "bad step '-1'" },
		{ "skip_allreduce step=1 rank=0 tensor=x", "takes no tensor=" },
		{ "stale_bwd_scale step=2", "takes no step=" },
		{ "skip_allreduce step=1 step=2 rank=0", "given twice" },
		{ "skip_allreduce step=1 rank", "not key=value" },
		{ "skip_allreduce step=1 rank=0 run=a", "unknown key 'run'" },  /* env only */
	};
	lks_fault f;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(lks_fault_parse(bad[i].spec, 0, &f), -1, "'%s' parsed", bad[i].spec);
		cr_assert_not_null(strstr(lks_errmsg(), bad[i].why), "'%s': %s", bad[i].spec,
		                   lks_errmsg());
	}
	cr_assert_eq(lks_fault_parse("skip_allreduce step=1 rank=0 run=a", 1, &f), 0);
	cr_assert_str_eq(f.run, "a");
}

Test(fault, fits_only_where_it_can_act)
{
	lks_fault f;

	cr_assert_eq(lks_fault_parse("stale_bwd_scale", 0, &f), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_DELAYED, 1, 1, 5), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_DELAYED, 0, 1, 5), -1);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_ROWWISE, 1, 1, 5), -1);
	cr_assert_eq(lks_fault_parse("skip_allreduce step=4 rank=1", 0, &f), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_BF16, 0, 2, 5), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_BF16, 0, 1, 5), -1, "one rank");
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_BF16, 0, 2, 4), -1, "step 4 of 4");
	cr_assert_eq(lks_fault_parse("scale_round_up", 0, &f), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_ROWWISE, 0, 1, 5), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_TENSORWISE, 0, 1, 5), -1,
	             "tensorwise scales are not powers of two");
}

/* ---- what each fault does to the data ---- */

Test(fault, bitflip_and_nan_change_one_element)
{
	float x[64], y[64];
	lks_fault f;

	for (int i = 0; i < 64; i++)
		x[i] = y[i] = 0.25f * (float)(i + 1);
	cr_assert_eq(lks_fault_parse("bitflip step=3 rank=1 tensor=t element=17 bit=22", 0, &f), 0);
	cr_assert_eq(lks_fault_tensor(&f, 2, 1, "t", x, 64), 0, "other step");
	cr_assert_eq(lks_fault_tensor(&f, 3, 0, "t", x, 64), 0, "other rank");
	cr_assert_eq(lks_fault_tensor(&f, 3, 1, "u", x, 64), 0, "other tensor");
	cr_assert_eq(memcmp(x, y, sizeof(x)), 0);
	cr_assert_eq(lks_fault_tensor(&f, 3, 1, "t", x, 64), 1);
	for (int i = 0; i < 64; i++) {
		uint32_t a, b;

		memcpy(&a, &x[i], 4);
		memcpy(&b, &y[i], 4);
		cr_assert_eq(a ^ b, i == 17 ? 1u << 22 : 0u, "element %d", i);
	}
	cr_assert_eq(lks_fault_tensor(&f, 3, 1, "t", x, 17), -1, "element 17 of 17");

	cr_assert_eq(lks_fault_parse("nan step=0 rank=0 tensor=t element=5", 0, &f), 0);
	memcpy(x, y, sizeof(x));
	cr_assert_eq(lks_fault_tensor(&f, 0, 0, "t", x, 64), 1);
	for (int i = 0; i < 64; i++)
		cr_assert(i == 5 ? isnan(x[i]) : x[i] == y[i], "element %d", i);
}

Test(fault, scale_round_up_is_the_next_power_of_two)
{
	/* amax 448 / 2^k gives an exact power-of-two scale, which rounding leaves alone */
	for (int k = -10; k <= 10; k++) {
		float amax = ldexpf(448.0f, k);

		cr_assert_eq(lks_fp8_scale(amax, LKS_FP8_E4M3, LKS_POW2_UP),
		             lks_fp8_scale(amax, LKS_FP8_E4M3, 1), "amax %g", amax);
	}
	/* any other amax: up is exactly twice down, and the exact scale lies between */
	for (float amax = 1e-3f; amax < 1e4f; amax *= 1.37f) {
		float down = lks_fp8_scale(amax, LKS_FP8_E4M3, 1);
		float up = lks_fp8_scale(amax, LKS_FP8_E4M3, LKS_POW2_UP);
		float exact = lks_fp8_scale(amax, LKS_FP8_E4M3, 0);

		if (exact == down)
			continue;
		cr_assert_eq(up, 2.0f * down, "amax %g", amax);
		cr_assert(down < exact && exact < up, "amax %g", amax);
	}
}

/* ---- case files ---- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

Test(fault, case_file_errors_name_the_run_line)
{
	char path[] = "/tmp/lks_fault_case_XXXXXX";
	int fd = mkstemp(path);
	lks_case c;

	cr_assert_geq(fd, 0);
	close(fd);
	write_file(path, "[case]\nsteps = 4\n[model]\nvocab = 16\nhidden = 8\nffn = 16\n"
	                 "layers = 1\nseq = 4\nbatch = 1\n\n[run a]\nrecipe = bf16\n"
	                 "inject = stale_bwd_scale\n");
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), -1);
	cr_assert_not_null(strstr(lks_errmsg(), ":11: run 'a': inject: stale_bwd_scale needs"),
	                   "%s", lks_errmsg());
	write_file(path, "[case]\nsteps = 4\n[model]\nvocab = 16\nhidden = 8\nffn = 16\n"
	                 "layers = 1\nseq = 4\nbatch = 1\n\n[run a]\nrecipe = bf16\n"
	                 "inject = bitflip step=1\n");
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), -1);
	cr_assert_not_null(strstr(lks_errmsg(), ":13: inject: bitflip needs rank="), "%s",
	                   lks_errmsg());
	unlink(path);
}

/* The fault in the run of a small case: "" when it loads, else the message. */
static const char *load_fault(const char *path, const char *run_keys, const char *inject)
{
	static char msg[1024];
	char text[1024];
	lks_case c;

	snprintf(text, sizeof(text), "[case]\nsteps = 4\nworld_size = 2\n[model]\nvocab = 16\n"
	         "hidden = 8\nffn = 16\nlayers = 1\nseq = 4\nbatch = 1\n\n[run a]\n%sinject = %s\n",
	         run_keys, inject);
	write_file(path, text);
	if (lks_case_load(path, NULL, 0, &c))
		return snprintf(msg, sizeof(msg), "%s", lks_errmsg()), msg;
	lks_case_release(&c);
	return "";
}

/* A bitflip or NaN aimed where it cannot act is bad input when the case is read (exit 2,
   file:line), not an infrastructure failure after the other runs have trained. */
Test(fault, tensor_and_element_checked_when_the_case_is_read)
{
	static const struct { const char *keys, *inject, *why; } t[] = {
		/* FP8 operands are codes and scales: no float to flip */
		{ "recipe = fp8_rowwise\n", "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.fwd.x element=0 bit=3",
		  ":12: run 'a': inject: 'blocks.0.mlp.up.fwd.x' is an FP8 operand (codes and scales): "
		  "bitflip acts on float tensors, such as the layer's output 'blocks.0.mlp.up.out'" },
		{ "recipe = fp8_delayed\n", "nan step=1 rank=1 tensor=blocks.0.mlp.down.wgrad.dy",
		  ":12: run 'a': inject: 'blocks.0.mlp.down.wgrad.dy' is an FP8 operand" },
		/* names the model does not have: a typo, a layer past the last */
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.0.mlp.upp.out",
		  ":12: run 'a': inject: the model has no tensor 'blocks.0.mlp.upp.out'" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.1.mlp.up.out",
		  ":12: run 'a': inject: the model has no tensor 'blocks.1.mlp.up.out'" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.01.mlp.up.out",
		  ":12: run 'a': inject: the model has no tensor 'blocks.01.mlp.up.out'" },
		/* a rank takes 1 sequence of 4 tokens: up.out is (4, 16), 64 elements */
		{ "recipe = bf16\n", "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out element=64 bit=3",
		  ":12: run 'a': inject: element 64 is out of range: 'blocks.0.mlp.up.out' has 64 "
		  "elements on a rank" },
		/* one rank takes the whole batch: 128 */
		{ "recipe = bf16\nworld_size = 1\n", "nan step=1 rank=0 tensor=blocks.0.mlp.up.out "
		  "element=128", ":12: run 'a': inject: element 128 is out of range: "
		  "'blocks.0.mlp.up.out' has 128 elements on a rank" },
		/* parameters and their gradients: head (16, 8), a norm's gain (8) */
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=head.weight.grad element=128",
		  ":12: run 'a': inject: element 128 is out of range: 'head.weight.grad' has 128" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.0.norm.weight element=8",
		  ":12: run 'a': inject: element 8 is out of range: 'blocks.0.norm.weight' has 8" },
	};
	static const struct { const char *keys, *inject; } ok[] = {
		{ "recipe = bf16\n", "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out element=63 bit=3" },
		{ "recipe = bf16\nworld_size = 1\n", "nan step=1 rank=0 tensor=blocks.0.mlp.up.out element=127" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=head.weight.grad element=127" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.0.norm.weight element=7" },
		{ "recipe = fp8_rowwise\ncheckpoint = blocks\n", "nan step=1 rank=1 tensor=head.logits.grad" },
		{ "recipe = fp8_rowwise\n", "skip_allreduce step=1 rank=1" },
	};
	char path[] = "/tmp/lks_fault_model_XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *msg = load_fault(path, t[i].keys, t[i].inject);

		cr_assert(msg[0] && !strncmp(msg, path, strlen(path))
		          && !strncmp(msg + strlen(path), t[i].why, strlen(t[i].why)),
		          "%s: want '%s', got '%s'", t[i].inject, t[i].why, msg);
	}
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert_str_eq(load_fault(path, ok[i].keys, ok[i].inject), "", "%s", ok[i].inject);
	unlink(path);
}

struct traced {
	char names[256][128];
	int n, nonfinite[256];
};

/* the names of step 0's tensors, and which had a non-finite value on rank 0 */
static void traced_on_step(void *arg, const lks_step_row *steps, int nsteps,
                           const lks_stat_row *stats, size_t nstats, char *const *names, int nnames)
{
	struct traced *t = arg;

	(void)steps, (void)nsteps;
	cr_assert_leq(nnames, 256);
	t->n = nnames;
	for (int i = 0; i < nnames; i++)
		snprintf(t->names[i], sizeof(t->names[i]), "%s", names[i]);
	for (size_t i = 0; i < nstats; i++)
		if (stats[i].step == 0 && stats[i].rank == 0)
			t->nonfinite[stats[i].seq] += stats[i].nonfinite > 0;
}

static int seen_before(const struct traced *t, int i)
{
	for (int j = 0; j < i; j++)
		if (!strcmp(t->names[j], t->names[i]))
			return 1;
	return 0;
}

/* One step of run with fault f planted (none: kind NONE); its tensors into t. */
static int run_traced(lks_case *c, lks_run_cfg *run, const lks_fault *f, struct traced *t)
{
	lks_runner_opts o = { .steps = 1, .threads = 1, .on_step = traced_on_step, .on_step_arg = t };
	lks_run_result res;

	memset(t, 0, sizeof(*t));
	run->inject = *f;
	return lks_run(c, run, NULL, &o, &res);
}

/* The model's table of tensors (lks_model_tensor, which the case check reads) is what a
   rank really traces: every traced name is in it, as float tensor or FP8 operand, and each
   float tensor has exactly the elements the table says: a NaN at the last one shows in
   that tensor's row, one past it is refused by the running model itself. */
Test(fault, tensor_table_is_what_the_model_traces, .timeout = 120)
{
	static const char *const runs[] = {
		"[run a]\nrecipe = fp8_rowwise\nworld_size = 2\n",
		"[run a]\nrecipe = fp8_delayed\ncheckpoint = blocks\nworld_size = 1\n",
	};
	char path[] = "/tmp/lks_fault_table_XXXXXX", text[1024];
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		struct traced clean, hit;
		lks_fault none = { .kind = LKS_FAULT_NONE, .step = -1, .rank = -1 };
		long long tokens;
		lks_case c;
		int nfloat = 0, nfp8 = 0;

		/* sizes all different, so that a wrong dimension shows */
		snprintf(text, sizeof(text), "[case]\nsteps = 2\nworld_size = 2\n[model]\nvocab = 24\n"
		         "hidden = 8\nffn = 12\nlayers = 2\nseq = 5\nbatch = 1\n%s", runs[k]);
		write_file(path, text);
		cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
		tokens = 2LL * 5 / c.runs[0].world_size;
		cr_assert_eq(run_traced(&c, &c.runs[0], &none, &clean), 0, "%s", lks_errmsg());
		for (int i = 0; i < clean.n; i++) {
			const char *name = clean.names[i];
			lks_fault f = { .kind = LKS_FAULT_NAN, .step = 0, .rank = 0 };
			size_t n = 0;
			int kind = lks_model_tensor(&c.model, tokens, name, &n);

			cr_assert(kind == LKS_TENSOR_FLOAT || kind == LKS_TENSOR_FP8, "%s: not in the table",
			          name);
			nfp8 += kind == LKS_TENSOR_FP8;
			if (kind != LKS_TENSOR_FLOAT || seen_before(&clean, i))
				continue;  /* the recompute repeats the forward's names; the fault strikes
				              the forward */
			nfloat++;
			snprintf(f.tensor, sizeof(f.tensor), "%s", name);
			f.element = (int64_t)n - 1;
			cr_assert_eq(run_traced(&c, &c.runs[0], &f, &hit), 0, "%s: %s", name, lks_errmsg());
			cr_assert_geq(hit.nonfinite[i], 1, "%s: a NaN at element %zu did not show", name,
			              n - 1);
			f.element = (int64_t)n;
			cr_assert_neq(run_traced(&c, &c.runs[0], &f, &hit), 0, "%s: element %zu exists", name, n);
		}
		/* 2 layers: per block 5 forward and 7 backward float tensors, 3 parameters, 12 FP8
		   operands (2 per GEMM); outside them 8 float tensors and 3 parameters */
		cr_assert_eq(nfloat, 2 * (5 + 7 + 3) + 8 + 3, "%s", runs[k]);
		cr_assert_geq(nfp8, 2 * 12, "%s", runs[k]);
		lks_case_release(&c);
	}
	unlink(path);
}

/* ---- the program ---- */

struct verdicts {
	int n, expected_fail, pass;
	char seen[16][LKS_NAME_MAX];
	int step[16], rank[16];
	char tensor[16][128];
};

static int collect(void *arg, const lks_check_rec *r)
{
	struct verdicts *v = arg;

	if (v->n < 16 && !strcmp(r->check_name, "caught")) {
		snprintf(v->seen[v->n], LKS_NAME_MAX, "%s", r->case_name);
		v->step[v->n] = r->step;
		v->rank[v->n] = r->rank;
		snprintf(v->tensor[v->n], 128, "%s", r->tensor ? r->tensor : "");
		v->n++;
	}
	v->expected_fail += !strcmp(r->verdict, "expected_fail");
	v->pass += !strcmp(r->verdict, "pass");
	return 0;
}

static void read_verdicts(const char *db, struct verdicts *v)
{
	lks_store *s;

	memset(v, 0, sizeof(*v));
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_checks(s, 0, collect, v), 0, "%s", lks_errmsg());
	lks_store_close(s);
}

static void remove_db(const char *db)
{
	char p[700];

	unlink(db);
	snprintf(p, sizeof(p), "%s-wal", db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db);
	unlink(p);
}

struct event {
	int step, rank;
	char tensor[128], message[256];
};

/* The first event the runner stored for the case's runs. */
static void first_event(const char *db, const char *case_name, struct event *ev)
{
	sqlite3 *h;
	sqlite3_stmt *st;

	cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(h, "SELECT e.step, e.rank, e.tensor, e.message FROM events e "
	             "JOIN runs r USING (run_id) WHERE r.case_name = ?1 ORDER BY e.event_id LIMIT 1",
	             -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
	sqlite3_bind_text(st, 1, case_name, -1, SQLITE_STATIC);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "no event for '%s'", case_name);
	ev->step = sqlite3_column_int(st, 0);
	ev->rank = sqlite3_column_int(st, 1);
	snprintf(ev->tensor, sizeof(ev->tensor), "%s", (const char *)sqlite3_column_text(st, 2));
	snprintf(ev->message, sizeof(ev->message), "%s", (const char *)sqlite3_column_text(st, 3));
	sqlite3_finalize(st);
	sqlite3_close(h);
}

/* Whether dir/name holds the text (a line of it); NULL when not. */
static const char *lks_grep_file(const char *dir, const char *name, const char *text)
{
	static char buf[1 << 16];
	char path[700];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "r")))
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strstr(buf, text);
}

/* Every fault case: its 'caught' check fails exactly where the case file says. The two
   seed scenarios of DESIGN are among them: a NaN at step 1 located before the all-reduce
   (nan_step1) and a faulty rank 0 (faulty_rank0). */
Test(fault, every_fault_case_is_caught_where_declared, .timeout = 300)
{
	static const struct { const char *name, *tensor; int step, rank; } want[] = {
		{ "bitflip", "blocks.0.mlp.up.out", 3, 1 },
		{ "faulty_rank0", "blocks.1.mlp.down.weight", 2, 0 },
		{ "nan", "blocks.1.mlp.down.weight.grad", 2, 1 },
		{ "nan_step1", "blocks.0.mlp.up.weight.grad", 1, 3 },
		{ "scale_round_up", "blocks.0.mlp.up.fwd.x", 0, 0 },
		{ "skip_allreduce", "embed.weight", 3, 2 },
		{ "stale_bwd_scale", "blocks.1.mlp.down.dgrad.dy", 1, 0 },
	};
	char dir[] = "/tmp/lks_fault_XXXXXX", db[600], args[1600], out[16384];
	struct verdicts v;
	struct event ev;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/f.db", dir);
	snprintf(args, sizeof(args), "run '%s/cases/faults' --db '%s' --quiet", LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	read_verdicts(db, &v);
	cr_assert_eq(v.n, 7, "one caught check per fault case");
	cr_assert_eq(v.expected_fail, 7, "%s", out);
	for (int i = 0; i < 7; i++) {
		cr_assert_str_eq(v.seen[i], want[i].name);
		cr_assert_eq(v.step[i], want[i].step, "%s", want[i].name);
		cr_assert_eq(v.rank[i], want[i].rank, "%s", want[i].name);
		cr_assert_str_eq(v.tensor[i], want[i].tensor, "%s", want[i].name);
	}

	/* the NaN at step 1 is located before the all-reduce: the runner's first event is
	   rank 3's own gradient, before any replica holds the all-reduced NaN */
	first_event(db, "nan_step1", &ev);
	cr_assert_eq(ev.step, 1);
	cr_assert_eq(ev.rank, 3);
	cr_assert_str_eq(ev.tensor, "blocks.0.mlp.up.weight.grad");
	cr_assert_not_null(strstr(ev.message, "before the all-reduce"), "%s", ev.message);

	/* the report puts the planted faults beside the verdicts: every one caught */
	snprintf(args, sizeof(args), "report --db '%s' -o '%s/report'", db, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "planted faults: 7 of 7 caught exactly where planted"), "%s", out);

	/* the declared place is held to exactly: one step later is a failure */
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet "
	         "--set check.caught.step=4", LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "expected to fail at step 4"), "%s", out);
	/* and the report of that suite says so: caught, but not where planted */
	snprintf(args, sizeof(args), "report --db '%s' -o '%s/report'", db, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "planted faults: 0 of 1 caught exactly where planted"), "%s", out);
	cr_assert_not_null(lks_grep_file(dir, "report/report.md",
	                   "| bitflip | caught | bitwise | step 4, rank 1, blocks.0.mlp.up.out | "
	                   "step 3, rank 1, blocks.0.mlp.up.out | found elsewhere |"));
	remove_db(db);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

Test(fault, environment_plants_a_fault, .timeout = 120)
{
	char dir[] = "/tmp/lks_fault_env_XXXXXX", db[600], args[1600], out[16384];
	struct verdicts v;
	lks_store *s;
	sqlite3_stmt *st;
	int n = 0;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/e.db", dir);
	/* the NaN aimed at run 'clean' only, at step 5: its finite check fails there; the case's
	   own fault, at step 3, is still caught first by the bitwise check */
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet", LKS_SRC, db);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=5 rank=0 tensor=blocks.0.mlp.act.out run=clean'",
	                 args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "clean_finite"), "%s", out);
	cr_assert_not_null(strstr(out, "FAIL: step 5, tensor 'blocks.0.mlp.act.out' (forward), rank 0"),
	                   "%s", out);
	read_verdicts(db, &v);
	cr_assert_eq(v.expected_fail, 1, "the case's own fault is still caught");

	/* the run records what was planted: in its options and in its fingerprint */
	cr_assert_eq(lks_store_open(db, &s), 0);
	cr_assert_eq(sqlite3_prepare_v2(lks_store_db(s),
	             "SELECT run_name, options, fingerprint FROM runs ORDER BY run_id", -1, &st, NULL),
	             SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *opt = (const char *)sqlite3_column_text(st, 1);
		const char *fp = (const char *)sqlite3_column_text(st, 2);

		if (!strcmp(name, "clean"))
			cr_assert_not_null(strstr(opt, "inject: nan step=5 rank=0 tensor=blocks.0.mlp.act.out"),
			                   "%s", opt);
		else
			cr_assert_not_null(strstr(opt, "inject: bitflip step=3"), "%s", opt);
		cr_assert_not_null(strstr(fp, "\"env.LOCKSTEP_INJECT\""), "%s", fp);
		n++;
	}
	sqlite3_finalize(st);
	lks_store_close(s);
	cr_assert_eq(n, 2);

	/* bad or misaimed specs are bad input: exit 2, nothing run */
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=1'", args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "LOCKSTEP_INJECT: inject: nan needs rank="), "%s", out);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='stale_bwd_scale'", args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no run fits"), "%s", out);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='skip_allreduce step=1 rank=0 run=nosuch'", args, out,
	                 sizeof(out)), 2, "%s", out);
	/* a tensor the run does not trace is bad input, found before anything trains, not a
	   fault that silently never acts */
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=1 rank=0 tensor=blocks.0.mlp.up.fwd.x'", args,
	                 out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "run 'clean': inject: 'blocks.0.mlp.up.fwd.x' is an FP8 operand"),
	                   "%s", out);
	cr_assert_null(strstr(out, "loss"), "a run trained: %s", out);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=1 rank=0 tensor=head.logits element=8192 "
	                 "run=flipped'", args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "element 8192 is out of range: 'head.logits' has 8192 elements"),
	                   "%s", out);
	remove_db(db);
	rmdir(dir);
}

/* --steps that stop before the planted fault say so: the run is clean, and its checks
   say nothing about the fault. */
Test(fault, steps_before_the_fault_warn, .timeout = 120)
{
	char dir[] = "/tmp/lks_fault_steps_XXXXXX", db[600], args[1600], out[16384];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/s.db", dir);
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet --steps 3",
	         LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "lockstep: warning: bitflip / flipped: the fault at step 3 "
	                          "will not be planted: --steps 3 stops before it"), "%s", out);
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet --steps 4",
	         LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_null(strstr(out, "warning"), "step 3 of 4 is planted: %s", out);
	remove_db(db);
	rmdir(dir);
}

/* A faulty rank 0 of three: a flipped bit in one of its parameters, and rank 0 keeping its
   own gradient, are each found on rank 0 by the majority of the replicas (comparing every
   rank with rank 0 blamed rank 1). The verdict is stored, and written to JUnit, so. */
Test(fault, faulty_rank_0_of_3_is_named, .timeout = 120)
{
	static const char text[] =
		"[case]\nsteps = 5\nworld_size = 3\n"
		"[model]\nvocab = 64\nhidden = 16\nffn = 32\nlayers = 1\nseq = 8\nbatch = 1\n"
		"[run flipped]\nrecipe = bf16\n"
		"inject = bitflip step=2 rank=0 tensor=blocks.0.mlp.up.weight element=5 bit=22\n"
		"[run lost]\nrecipe = bf16\ninject = skip_allreduce step=1 rank=0\n"
		"[check caught]\nkind = ranks_agree\na = flipped\nexpect = fail\nstep = 2\nrank = 0\n"
		"tensor = blocks.0.mlp.up.weight\n"
		"[check lost]\nkind = ranks_agree\na = lost\nexpect = fail\nstep = 1\nrank = 0\n"
		"tensor = embed.weight\n";
	char dir[] = "/tmp/lks_fault_rank0_XXXXXX", path[600], db[600], xml[600], args[2000];
	char out[16384], *junit;
	struct verdicts v;
	size_t n;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rank0.ini", dir);
	snprintf(db, sizeof(db), "%s/r.db", dir);
	snprintf(xml, sizeof(xml), "%s/j.xml", dir);
	write_file(path, text);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --junit '%s' --quiet", path, db, xml);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "rank 0 disagrees with the other 2 of 3 ranks"), "%s", out);
	read_verdicts(db, &v);
	cr_assert_eq(v.expected_fail, 2, "%s", out);
	cr_assert_eq(v.n, 1);
	cr_assert_eq(v.step[0], 2);
	cr_assert_eq(v.rank[0], 0, "stored as rank %d", v.rank[0]);
	cr_assert_str_eq(v.tensor[0], "blocks.0.mlp.up.weight");
	f = fopen(xml, "r");
	cr_assert_not_null(f);
	junit = calloc(1, 65536);
	n = fread(junit, 1, 65535, f);
	fclose(f);
	cr_assert_gt(n, 0);
	cr_assert_not_null(strstr(junit, "expected failure: step 2, tensor &apos;blocks.0.mlp.up.weight"
	                                 "&apos; (update), rank 0: "), "%s", junit);
	free(junit);
	unlink(xml);
	unlink(path);
	remove_db(db);
	rmdir(dir);
}

/* Two replicas that differ: the pair is named, no single rank is stored (a golden or a
   clean run decides), and a case that expects one rank of a 2-rank ranks_agree is refused
   before anything runs. */
Test(fault, two_ranks_name_the_pair, .timeout = 120)
{
	static const char text[] =
		"[case]\nsteps = 5\nworld_size = 2\n"
		"[model]\nvocab = 64\nhidden = 16\nffn = 32\nlayers = 1\nseq = 8\nbatch = 1\n"
		"[run lost]\nrecipe = bf16\ninject = skip_allreduce step=3 rank=1\n"
		"[check caught]\nkind = ranks_agree\na = lost\nexpect = fail\nstep = 3\n"
		"tensor = embed.weight\n";
	char dir[] = "/tmp/lks_fault_pair_XXXXXX", path[600], db[600], args[2000], out[16384];
	struct verdicts v;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pair.ini", dir);
	snprintf(db, sizeof(db), "%s/p.db", dir);
	write_file(path, text);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "expected failure: step 3, tensor 'embed.weight' (update): "),
	                   "no rank named: %s", out);
	cr_assert_not_null(strstr(out, "ranks 0 and 1 disagree: two ranks have no majority, a golden "
	                               "or a clean run decides which is wrong"), "%s", out);
	read_verdicts(db, &v);
	cr_assert_eq(v.expected_fail, 1);
	cr_assert_eq(v.rank[0], -1, "stored as rank %d", v.rank[0]);
	strcat(args, " --set check.caught.rank=1");
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "pair.ini:14: check 'caught': ranks_agree on 2 ranks names no "
	                               "single rank"), "%s", out);
	unlink(path);
	remove_db(db);
	rmdir(dir);
}

/* close on a tensor statistic against a run that a planted NaN fills with NaN: it fails
   (it was "unsupported", and the command exited 0), first where the NaN appears among the
   tensors the filter names, however loose the tolerance. */
Test(fault, close_on_tensor_stats_catches_a_nan_run, .timeout = 120)
{
	static const char text[] =
		"[case]\nsteps = 4\nworld_size = 2\n"
		"[model]\nvocab = 64\nhidden = 16\nffn = 32\nlayers = 2\nseq = 8\nbatch = 1\n"
		"[run clean]\nrecipe = fp8_rowwise\n"
		"[run poisoned]\nrecipe = fp8_rowwise\n"
		"inject = nan step=2 rank=1 tensor=blocks.1.mlp.down.weight.grad element=3\n"
		/* loose on purpose: the runs are bit for bit equal before the NaN, so any tolerance
		   passes there; what must fail is the NaN */
		"[check grads]\nkind = close\na = poisoned\nb = clean\nmetric = l2\n"
		"tensors = *.weight.grad\nrtol = 0.5\natol = 1\n"
		"[check amax]\nkind = close\na = poisoned\nb = clean\nmetric = amax\nrtol = 1e6\n";
	char dir[] = "/tmp/lks_fault_close_XXXXXX", path[600], db[600], args[2000], out[16384];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/nan_close.ini", dir);
	snprintf(db, sizeof(db), "%s/c.db", dir);
	write_file(path, text);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "grads                      close       FAIL: step 2, tensor "
	                               "'blocks.1.mlp.down.weight.grad' (backward), rank 1: l2 "
	                               "poisoned=nan clean="), "%s", out);
	cr_assert_not_null(strstr(out, "amax                       close       FAIL: step 2, tensor "
	                               "'blocks.1.mlp.down.weight.grad' (backward), rank 1: amax "
	                               "poisoned=nan clean="), "%s", out);
	cr_assert_not_null(strstr(out, "2 checks: 0 passed, 2 failed"), "%s", out);
	unlink(path);
	remove_db(db);
	rmdir(dir);
}

/* No false alarm: the clean nightly cases pass three reruns into one database. */
Test(fault, clean_cases_pass_three_reruns, .timeout = 600)
{
	char dir[] = "/tmp/lks_fault_clean_XXXXXX", db[600], args[1600], out[16384];
	struct verdicts v;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/c.db", dir);
	snprintf(args, sizeof(args), "run '%s/cases' --db '%s' --quiet --golden '%s/golden'",
	         LKS_SRC, db, LKS_SRC);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "rerun %d: %s", i + 1, out);
	read_verdicts(db, &v);
	cr_assert_eq(v.expected_fail, 0);
	cr_assert_gt(v.pass, 3 * 40, "every check of three suites, %d", v.pass);
	remove_db(db);
	rmdir(dir);
}

/* The detection table: what each check catches on the same faulty and clean runs. The
   rows follow from what each fault does: a flipped mantissa bit moves no loss by 5% and
   makes no NaN (nor does one in a weight on rank 0, which only the comparison with a clean
   run and of the replicas see); a NaN in a weight gradient is what a NaN check of collective inputs sees,
   and the loss only turns NaN a step later; a rank that skips the all-reduce is a replica
   that drifts, while the all-reduced gradient of that step is still right (sqnr misses
   it); stale backward scales leave the recompute equal to the forward. */
Test(fault, detection_table, .timeout = 300)
{
	static const char *const rows[] = {
		"| bitflip | step 3 | - | - | - | - | n/a | - |",
		"| faulty_rank0 | step 2 | - | - | - | step 2 | n/a | - |",
		"| nan | step 2 | step 3 | step 2 | step 2 | - | n/a | step 2 |",
		"| nan_step1 | step 1 | step 2 | step 1 | step 1 | - | n/a | step 1 |",
		"| scale_round_up | step 0 | - | step 0 | - | - | n/a | - |",
		"| skip_allreduce | step 3 | - | - | - | step 3 | n/a | - |",
		"| stale_bwd_scale | step 1 | - | step 1 | - | - | - | - |",
	};
	char args[1200], out[16384];

	snprintf(args, sizeof(args), "bench detect '%s/cases/faults'", LKS_SRC);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "| fault | bitwise/golden | loss rtol 5% | sqnr 20 dB | finite | "
	                               "ranks_agree | recompute | NaN collective |"), "%s", out);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		cr_assert_not_null(strstr(out, rows[i]), "missing row %s in\n%s", rows[i], out);
	cr_assert_not_null(strstr(out, "bitflip          bitwise/golden  step 3, rank 1, "
	                               "blocks.0.mlp.up.out"), "%s", out);
	/* a faulty rank 0 is blamed on rank 0 by the comparison of replicas too */
	cr_assert_not_null(strstr(out, "faulty_rank0     ranks_agree     step 2, rank 0, "
	                               "blocks.1.mlp.down.weight"), "%s", out);
}

/* The SQNR of a gradient: b the reference, a = b (1 + e) everywhere gives -20 log10 |e|. */
Test(fault, sqnr_db_of_a_known_error)
{
	float a[257], b[257];

	for (int i = 0; i < 257; i++) {
		b[i] = (float)(i - 128) / 64.0f;
		a[i] = b[i] * (1.0f + 0x1p-7f);  /* exact: b has few significant bits */
	}
	cr_assert_float_eq(lks_sqnr_db(a, b, 257), -20.0 * log10(0x1p-7), 1e-9);
	cr_assert(isinf(lks_sqnr_db(b, b, 257)) && lks_sqnr_db(b, b, 257) > 0, "equal: +inf");
	memset(b, 0, sizeof(b));
	cr_assert(isinf(lks_sqnr_db(a, b, 257)) && lks_sqnr_db(a, b, 257) < 0, "zero reference");
}
