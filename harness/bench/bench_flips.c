/*
 * bench_flips.c: 'lockstep bench detect --flips N': how many single-bit flips the screen's
 * comparison catches, and where it says they are (issue 34). The screen's quick case
 * (cases/screen/screen_quick.ini, its traces of the optimizer state on) is trained on 2
 * ranks, so that it has an all-reduce, once clean per run: the known answer. Then N runs,
 * each with one bit flipped at a random step, rank, element and bit, a fifth each in:
 *   - a GEMM's output (attention's qkv and projection, the MLP's up and down, the head's
 *     logits) as the forward makes it;
 *   - a weight, after the step's update;
 *   - AdamW's state (a moment, m or v) after the update, as the next step will read it;
 *   - the gradient buffer a rank sends into the all-reduce (bitflip_allreduce);
 *   - the sum a rank receives from it (bitflip_allreduce_out).
 * Each is compared bit for bit with the known answer as the screen compares (every traced
 * value and hash of every step): caught or missed, and whether the first divergence is the
 * planted step and tensor (for the all-reduce: the summed gradient of the parameter the
 * element belongs to, "<param>.grad_sum"). Then M clean runs, compared the same way: a
 * false alarm is any that differs. The trace holds every tensor a step hands the next
 * (weights, moments), so a missed flip changed no bit of the training state: it was masked
 * (a low bit lost in a rounding) and would never have shown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/bench/bench.h"
#include "harness/engine/case.h"
#include "harness/engine/model.h"
#include "harness/engine/runner.h"
#include "harness/store/run.h"
#include "harness/verify/walk.h"
#include "kernels/err.h"

enum { LKS_FLIP_GEMM, LKS_FLIP_WEIGHT, LKS_FLIP_OPTIM, LKS_FLIP_SENT, LKS_FLIP_SUM,
       LKS_FLIP_KINDS };

static const char *const lks_flip_titles[LKS_FLIP_KINDS] = {
	"GEMM outputs", "weights", "optimizer state (m, v)", "all-reduce: the buffer sent",
	"all-reduce: the sum received",
};

/* What a GEMM writes, by block: the float tensors the trace names */
static const char *const lks_gemm_outs[] = { "attn.qkv.out", "attn.proj.out", "mlp.up.out",
                                             "mlp.down.out" };

struct lks_flips {
	lks_case c;
	lks_model m;
	const char *dir;
	int W, steps;
	unsigned seed;
	lks_store *refs;          /* the clean runs, one per run of the case */
	int64_t ref_id[64];
	lks_stored_run ref[64];
	int tally[LKS_FLIP_KINDS][3];  /* flips, caught, located */
};

static unsigned lks_rand(struct lks_flips *b, unsigned n)
{
	return (unsigned)rand_r(&b->seed) % n;
}

/* A random flip of kind k into f, the tensor where it must show into want. */
static void lks_flip_pick(struct lks_flips *b, int k, lks_fault *f, char *want, size_t n)
{
	const lks_ptensor *p = &b->m.t[lks_rand(b, (unsigned)b->m.nt)];
	long long tokens = (long long)b->c.model.batch * b->c.model.seq;
	size_t size = 0;

	memset(f, 0, sizeof(*f));
	f->kind = LKS_FAULT_BITFLIP;
	f->step = (int)lks_rand(b, (unsigned)b->steps);
	f->rank = (int)lks_rand(b, (unsigned)b->W);
	f->bit = (int)lks_rand(b, 32);
	switch (k) {
	case LKS_FLIP_GEMM:
		do {  /* one the model has (attention's only with attention) */
			unsigned g = lks_rand(b, 5);

			if (g == 4)
				snprintf(f->tensor, sizeof(f->tensor), "head.logits");
			else
				snprintf(f->tensor, sizeof(f->tensor), "blocks.%u.%s",
				         lks_rand(b, (unsigned)b->c.model.layers), lks_gemm_outs[g]);
		} while (lks_model_tensor(&b->c.model, tokens, f->tensor, &size) != LKS_TENSOR_FLOAT);
		break;
	case LKS_FLIP_WEIGHT:
		snprintf(f->tensor, sizeof(f->tensor), "%s", p->name);
		size = p->n;
		break;
	case LKS_FLIP_OPTIM:
		snprintf(f->tensor, sizeof(f->tensor), "%s.%s", p->name,
		         lks_rand(b, 2) ? "adam_v" : "adam_m");
		size = p->n;
		break;
	default:  /* a parameter's place in the whole gradient, not the padding between
		     tensors (refused: no parameter's); it shows in its parameter's sum */
		f->kind = k == LKS_FLIP_SENT ? LKS_FAULT_BITFLIP_ALLREDUCE
		                             : LKS_FAULT_BITFLIP_ALLREDUCE_OUT;
		for (int i = 0; i < b->m.nt; i++)
			size += b->m.t[i].n;
		size = lks_rand(b, (unsigned)size);
		for (p = b->m.t; size >= p->n; p++)
			size -= p->n;
		f->element = (int64_t)(p->off + size);
		snprintf(want, n, "%s.grad_sum", p->name);
		return;
	}
	f->element = (int64_t)lks_rand(b, (unsigned)(size ? size : 1));
	snprintf(want, n, "%s", f->tensor);
}

/* Run j of the case with fault f (kind NONE: clean) into a database of its own, compared
   with the clean run bit for bit: *caught, and the divergence into res. */
static int lks_flip_run(struct lks_flips *b, int j, const lks_fault *f, int *caught,
                        lks_check_result *res)
{
	lks_run_cfg run = b->c.runs[j];
	lks_runner_opts o = { .threads = 1 };
	lks_walk_opts w = { .exact = 1, .step_fields = LKS_WALK_LOSS | LKS_WALK_GRAD_NORM
	                                                | LKS_WALK_LR };
	lks_run_result rr;
	lks_stored_run got;
	lks_store *s;
	char path[600];
	int rc = -1;

	snprintf(path, sizeof(path), "%s/flip.db", b->dir);
	unlink(path);
	run.inject = *f;
	if (lks_store_open(path, &s))
		return -1;
	if (lks_run(&b->c, &run, s, &o, &rr) == 0
	    && lks_stored_run_load(s, rr.run_id, LKS_LOAD_TRACE, &got) == 0) {
		lks_check_result_init(res);
		rc = lks_walk(&w, &got, &b->ref[j], res, NULL);
		*caught = res->failed;
		lks_stored_run_release(&got);
	}
	lks_store_close(s);
	return rc;
}

static int lks_flips_refs(struct lks_flips *b)
{
	char path[600];
	lks_runner_opts o = { .threads = 1 };
	lks_run_result rr;

	snprintf(path, sizeof(path), "%s/refs.db", b->dir);
	if (lks_store_open(path, &b->refs))
		return -1;
	for (int j = 0; j < b->c.nruns; j++)
		if (lks_run(&b->c, &b->c.runs[j], b->refs, &o, &rr)
		    || lks_stored_run_load(b->refs, rr.run_id, LKS_LOAD_TRACE, &b->ref[j]))
			return -1;
	return 0;
}

/* The flips, then the clean repeats; the table. */
static int lks_flips_go(struct lks_flips *b, int flips, int repeats)
{
	int alarms = 0, caught;
	lks_check_result res;
	double t0 = lks_now();

	for (int i = 0; i < flips; i++) {
		int k = i % LKS_FLIP_KINDS, j = (int)lks_rand(b, (unsigned)b->c.nruns);
		char want[160] = "";
		lks_fault f;

		lks_flip_pick(b, k, &f, want, sizeof(want));
		if (lks_run_fault_fits(&b->c, &b->c.runs[j], &f))
			return -1;
		if (lks_flip_run(b, j, &f, &caught, &res))
			return -1;
		b->tally[k][0]++;
		b->tally[k][1] += caught;
		b->tally[k][2] += caught && res.step == f.step && !strcmp(res.tensor, want);
		if (caught && !(res.step == f.step && !strcmp(res.tensor, want)))
			printf("flip %d (%s, run %s): found at step %d '%s', planted at step %d '%s'\n",
			       i, lks_flip_titles[k], b->c.runs[j].name, res.step, res.tensor, f.step,
			       want);
	}
	for (int i = 0; i < repeats; i++) {
		lks_fault none = { .kind = LKS_FAULT_NONE };

		if (lks_flip_run(b, (int)lks_rand(b, (unsigned)b->c.nruns), &none, &caught, &res))
			return -1;
		alarms += caught;
	}
	printf("\n| planted in | flips | caught | at its step and tensor | missed (masked) |\n"
	       "|---|---|---|---|---|\n");
	for (int k = 0; k < LKS_FLIP_KINDS; k++)
		printf("| %s | %d | %d | %d | %d |\n", lks_flip_titles[k], b->tally[k][0],
		       b->tally[k][1], b->tally[k][2], b->tally[k][0] - b->tally[k][1]);
	printf("\nclean repeats: %d, false alarms: %d (%.0f s in all)\n", repeats, alarms,
	       lks_now() - t0);
	return alarms ? 1 : 0;
}

int lks_bench_flips(const char *case_path, const char *dir, int flips, int repeats,
                    unsigned seed)
{
	static const char *const sets[] = { "case.world_size=2", "run.*.trace_optimizer=on" };
	struct lks_flips *b = calloc(1, sizeof(*b));
	int rc = -1, loaded = 0, model = 0;

	if (!b)
		return lks_err("out of memory");
	for (int j = 0; j < 64; j++)
		lks_stored_run_init(&b->ref[j]);
	b->dir = dir;
	b->seed = seed;
	if (lks_case_load(case_path, sets, 2, &b->c)) {
		rc = LKS_E_BAD_INPUT;  /* a case missing or bad: the user's input (exit 2) */
		goto out;
	}
	loaded = 1;
	/* a run's own fault or log would be in its reference: every flip in it "caught" */
	for (int j = 0; j < b->c.nruns; j++)
		if (b->c.runs[j].inject.kind != LKS_FAULT_NONE || b->c.runs[j].import_fmt[0]) {
			lks_err("%s: run '%s' %s: flips are planted in a case of clean trained runs",
			        case_path, b->c.runs[j].name, b->c.runs[j].import_fmt[0]
			        ? "is imported" : "has a fault of its own (inject)");
			rc = LKS_E_BAD_INPUT;
			goto out;
		}
	if (b->c.nruns > 64 || lks_model_init(&b->m, &b->c.model)) {
		lks_err("%s: more than 64 runs, or its model cannot be made", case_path);
		goto out;
	}
	model = 1;
	b->W = 2;
	b->steps = b->c.steps;
	printf("bench detect --flips: %s on %d ranks, %d steps, %d runs; %d flips, %d clean "
	       "repeats, seed %u\n", case_path, b->W, b->steps, b->c.nruns, flips, repeats, seed);
	fflush(stdout);
	if (lks_flips_refs(b))
		goto out;
	rc = lks_flips_go(b, flips, repeats);
out:
	for (int j = 0; j < 64; j++)
		lks_stored_run_release(&b->ref[j]);
	if (b->refs)
		lks_store_close(b->refs);
	if (model)
		lks_model_release(&b->m);
	if (loaded)
		lks_case_release(&b->c);
	free(b);
	return rc;
}
