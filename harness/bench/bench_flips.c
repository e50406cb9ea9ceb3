/*
 * bench_flips.c: 'lockstep bench detect --flips N': how many single-bit flips the screen's
 * comparison catches, and where it says they are (issue 34). A case of data-parallel runs
 * (default the screen's quick case, cases/screen/screen_quick.ini), its traces of the
 * optimizer state on, is trained once clean per run: the known answer. Its runs keep their
 * ranks; a case of 1 rank (the screen's) is trained on 2, so that it has an all-reduce.
 * Then N runs of the case's runs at random, each with one bit flipped at a random step,
 * rank (of the run's), element (of the tensor as a rank of the run holds it) and bit, a
 * fifth each in:
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
 *
 * A case the flips cannot be drawn in is refused before any run (bad input): a run that
 * shards its tensors over ranks (fsdp, tp), one resumed from another's state, none of 2
 * ranks or more for the all-reduce's flips.
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
	int loaded;               /* c is loaded */
	lks_model m;
	const char *dir;
	int steps;
	int wide[64], nwide;      /* the runs of 2 ranks or more: the all-reduce's flips */
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

/* A random flip of kind k into f, in run r (its ranks, and its tensors as a rank holds
   them: a data-parallel run's whole), the tensor where it must show into want. */
static void lks_flip_pick(struct lks_flips *b, const lks_run_cfg *r, int k, lks_fault *f,
                          char *want, size_t n)
{
	const lks_ptensor *p = &b->m.t[lks_rand(b, (unsigned)b->m.nt)];
	long long tokens = lks_case_run_tokens(&b->c, r);
	size_t size = 0;

	memset(f, 0, sizeof(*f));
	f->kind = LKS_FAULT_BITFLIP;
	f->step = (int)lks_rand(b, (unsigned)b->steps);
	f->rank = (int)lks_rand(b, (unsigned)r->world_size);
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

		if (k >= LKS_FLIP_SENT && b->c.runs[j].world_size < 2)  /* no all-reduce there */
			j = b->wide[lks_rand(b, (unsigned)b->nwide)];
		lks_flip_pick(b, &b->c.runs[j], k, &f, want, sizeof(want));
		if (lks_run_fault_fits(&b->c, &b->c.runs[j], &f)) {  /* a flip drawn amiss */
			lks_err("run '%s' cannot take flip %d (%s at step %d, rank %d): %s",
			        b->c.runs[j].name, i, lks_fault_kind_name(f.kind), f.step, f.rank,
			        lks_errmsg());
			return LKS_E_BAD_INPUT;
		}
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
	if (flips)  /* --repeats alone: the false alarms only */
		printf("\n| planted in | flips | caught | at its step and tensor | missed (masked) |\n"
		       "|---|---|---|---|---|\n");
	for (int k = 0; flips && k < LKS_FLIP_KINDS; k++)
		printf("| %s | %d | %d | %d | %d |\n", lks_flip_titles[k], b->tally[k][0],
		       b->tally[k][1], b->tally[k][2], b->tally[k][0] - b->tally[k][1]);
	printf("\nclean repeats: %d, false alarms: %d (%.0f s in all)\n", repeats, alarms,
	       lks_now() - t0);
	return alarms ? 1 : 0;
}

/* Whether the flips can be drawn in case c as its file has it: runs of clean training
   from step 0 (a run's own fault or log would be in its reference: every flip in it
   "caught"), their tensors whole on each rank; an error (lks_err, file:line) where not. */
static int lks_flips_drawable(const lks_case *c)
{
	if (c->nruns > 64)
		return lks_err("%s: %d runs: the flips take a case of 64 at most", c->path, c->nruns);
	for (int j = 0; j < c->nruns; j++) {
		const lks_run_cfg *r = &c->runs[j];

		if (r->inject.kind != LKS_FAULT_NONE || r->import_fmt[0])
			return lks_err("%s:%d: run '%s' %s: flips are planted in a case of clean "
			               "trained runs", c->path, r->line, r->name, r->import_fmt[0]
			               ? "is imported" : "has a fault of its own (inject)");
		if (r->fsdp > 1 || r->tp > 1)
			return lks_err("%s:%d: run '%s' shards its tensors over its ranks (%s = %d): "
			               "flips are drawn in the whole tensors of data-parallel runs",
			               c->path, r->line, r->name, r->fsdp > 1 ? "fsdp" : "tp",
			               r->fsdp > 1 ? r->fsdp : r->tp);
		if (r->resume_from[0])
			return lks_err("%s:%d: run '%s' resumes from run '%s': flips are planted in "
			               "runs trained from step 0", c->path, r->line, r->name,
			               r->resume_from);
	}
	return 0;
}

/* The case as the flips train it: its runs' traces of the optimizer state on, a case of 1
   rank on 2 (the screen's: it would have no all-reduce); the runs of 2 ranks or more. */
static int lks_flips_load(struct lks_flips *b, const char *case_path, char *ranks, size_t n)
{
	const char *sets[] = { "run.*.trace_optimizer=on", "case.world_size=2" };
	lks_case plain;
	int nsets = 1, rc;

	if (lks_case_load(case_path, NULL, 0, &plain))
		return LKS_E_BAD_INPUT;  /* a case missing or bad: the user's input (exit 2) */
	rc = lks_flips_drawable(&plain);
	nsets += plain.world_size == 1;
	lks_case_release(&plain);
	if (rc)
		return LKS_E_BAD_INPUT;
	if (lks_case_load(case_path, sets, nsets, &b->c)) {
		char why[1024];

		snprintf(why, sizeof(why), "%s", lks_errmsg());
		return lks_err("bench detect --flips trains it with %s%s: %s", sets[0],
		               nsets > 1 ? " and case.world_size=2 (its 1 rank has no all-reduce)"
		               : "", why), LKS_E_BAD_INPUT;
	}
	b->loaded = 1;
	for (int j = 0; j < b->c.nruns; j++) {
		const lks_run_cfg *r = &b->c.runs[j];
		size_t len = strlen(ranks);

		if (r->world_size > 1)
			b->wide[b->nwide++] = j;
		snprintf(ranks + len, n - len, "%s%s on %d", j ? ", " : "", r->name, r->world_size);
	}
	if (nsets > 1)
		snprintf(ranks + strlen(ranks), n - strlen(ranks), " (the case's 1 rank made 2, "
		         "for an all-reduce)");
	if (!b->nwide)
		return lks_err("%s: no run of 2 ranks or more (each sets world_size = 1): the "
		               "all-reduce's flips need one", case_path), LKS_E_BAD_INPUT;
	return 0;
}

int lks_bench_flips(const char *case_path, const char *dir, int flips, int repeats,
                    unsigned seed)
{
	struct lks_flips *b = calloc(1, sizeof(*b));
	char ranks[2048] = "";
	int rc = -1, model = 0;

	if (!b)
		return lks_err("out of memory");
	for (int j = 0; j < 64; j++)
		lks_stored_run_init(&b->ref[j]);
	b->dir = dir;
	b->seed = seed;
	if ((rc = lks_flips_load(b, case_path, ranks, sizeof(ranks))) != 0)
		goto out;
	rc = -1;
	if (lks_model_init(&b->m, &b->c.model)) {
		lks_err("%s: its model cannot be made", case_path);
		goto out;
	}
	model = 1;
	b->steps = b->c.steps;
	printf("bench detect --flips: %s, %d steps, %d runs, ranks: %s; %d flips, %d clean "
	       "repeats, seed %u\n", case_path, b->steps, b->c.nruns, ranks, flips, repeats,
	       seed);
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
	if (b->loaded)
		lks_case_release(&b->c);
	free(b);
	return rc;
}
