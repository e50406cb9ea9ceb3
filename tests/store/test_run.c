/*
 * test_run.c: one stored run in memory (harness/store/run.h). Rows are written into a store
 * in a temporary folder by hand (no training), then read back as a stored run: what the run
 * was (and the fingerprint's fields people read, escapes undone), the tensors with their
 * occurrences, the step rows, and the stat rows step by step and whole, which must agree
 * row for row; a step that was not stored has no rows, a run that is not there fails. Rows
 * captured as the runner hands them (lks_stored_run_add_step) are read alike.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/store/run.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

enum { W = 2, NT = 3, STEPS = 3 };
static const char *const names[NT] = { "h", "h", "h.grad" };
static const lks_phase phases[NT] = { LKS_PHASE_FORWARD, LKS_PHASE_FORWARD, LKS_PHASE_BACKWARD };

static lks_stat_row stat_row(int step, int rank, int seq)
{
	return (lks_stat_row){ .step = step, .rank = rank, .seq = seq,
	                       .l2 = 1.0 + step + 0.25 * rank + 0.0625 * seq,
	                       .amax = (float)(seq + 1), .scale = 2.0f,
	                       .hash = 0x9e3779b97f4a7c15ull * (uint64_t)(1 + 100 * step + 10 * rank + seq) };
}

/* One step of every rank, as the runner hands it over: step rows by rank, stat rows by
   (rank, seq). */
static void step_rows(int step, lks_step_row *steps, lks_stat_row *stats)
{
	for (int r = 0; r < W; r++) {
		steps[r] = (lks_step_row){ .step = step, .rank = r, .loss = 4.0 - step, .grad_norm = 1.0,
		                           .lr = 1e-3, .step_time = 0.5 };
		for (int i = 0; i < NT; i++)
			stats[r * NT + i] = stat_row(step, r, i);
	}
}

struct fx {
	char dir[64], path[128];
	lks_store *s;
	int64_t id;
};

static void fx_setup(struct fx *f)
{
	lks_run_info info = {
		.case_name = "c", .case_path = "cases/c.ini", .case_text = "[case]\n", .run_name = "r",
		.recipe = "bf16", .options = "checkpoint=none", .backend = "cpu", .world_size = W,
		.steps = STEPS, .seed = 42,
		.fingerprint = "{\"lockstep.version\": \"0.1.0\", \"lockstep.commit\": \"abc\", "
		               "\"compiler\": \"GNU \\\"12\\\"\", \"isa.active\": \"avx2\"}",
	};
	lks_step_row steps[W];
	lks_stat_row stats[W * NT];

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/lks-test-run-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/t.db", f->dir);
	cr_assert_eq(lks_store_open(f->path, &f->s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(f->s, &info, &f->id), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_tensors(f->s, f->id, (const char *const *)names, phases, NT), 0);
	for (int s = 0; s < STEPS; s++) {
		step_rows(s, steps, stats);
		cr_assert_eq(lks_store_step(f->s, f->id, steps, W, stats, W * NT), 0, "%s", lks_errmsg());
	}
	cr_assert_eq(lks_store_end_run(f->s, f->id, "complete"), 0);
}

static void fx_teardown(struct fx *f)
{
	char cmd[128];

	lks_store_close(f->s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	cr_assert_eq(system(cmd), 0);
}

/* Every stat row of r at every step is the row written. */
static void expect_rows(lks_stored_run *r)
{
	for (int s = 0; s < STEPS; s++) {
		cr_assert_eq(lks_stored_run_step(r, s), 0, "%s", lks_errmsg());
		for (int k = 0; k < W; k++)
			for (int i = 0; i < NT; i++) {
				const lks_stat_row *row = lks_stored_run_row(r, k, i);
				lks_stat_row want = stat_row(s, k, i);

				cr_assert_not_null(row, "no row %d/%d/%d", s, k, i);
				cr_assert(row->step == s && row->rank == k && row->seq == i);
				cr_assert(row->l2 == want.l2 && row->hash == want.hash);
			}
		cr_assert_null(lks_stored_run_row(r, W, 0), "a rank the run does not have");
		cr_assert_null(lks_stored_run_row(r, 0, NT), "a tensor the run does not have");
	}
}

Test(run, from_the_store)
{
	struct fx f;
	lks_stored_run r;

	fx_setup(&f);
	cr_assert_eq(lks_stored_run_load(f.s, f.id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert(r.id == f.id && r.W == W && r.steps == STEPS && r.seed == 42);
	cr_assert_str_eq(r.case_name, "c");
	cr_assert_str_eq(r.case_path, "cases/c.ini");
	cr_assert_str_eq(r.run_name, "r");
	cr_assert_str_eq(r.options, "checkpoint=none");
	cr_assert_str_eq(r.status, "complete");
	cr_assert_str_eq(r.combo, "", "no combo: empty, not NULL");
	cr_assert_str_eq(r.version, "0.1.0 abc");
	cr_assert_str_eq(r.compiler, "GNU \"12\"", "escapes undone for people");
	cr_assert_str_eq(r.isa, "avx2");
	cr_assert_eq(r.nt, NT);
	cr_assert(r.occ[0] == 0 && r.occ[1] == 1 && r.occ[2] == 0, "the second h is occurrence 1");
	cr_assert_eq(lks_stored_run_find(&r, "h", LKS_PHASE_FORWARD, 1), 1);
	cr_assert_eq(lks_stored_run_find(&r, "h", LKS_PHASE_BACKWARD, 0), -1);
	cr_assert_eq(r.nsteps, STEPS);
	cr_assert_eq(r.nsteprows, STEPS * W);
	cr_assert_eq(r.nstats, 0, "stat rows are read step by step");
	cr_assert_eq(lks_stored_run_step_row(&r, 2, 1)->loss, 2.0);
	cr_assert_eq(lks_stored_run_step_row(&r, 2, 1)->step_time, 0.5);
	cr_assert_null(lks_stored_run_step_row(&r, STEPS, 0));
	expect_rows(&r);
	/* back to an earlier step, and to one that was never stored */
	expect_rows(&r);
	cr_assert_eq(lks_stored_run_step(&r, STEPS), 0);
	cr_assert_null(lks_stored_run_row(&r, 0, 0));
	lks_stored_run_release(&r);

	cr_assert_eq(lks_stored_run_load(f.s, f.id, LKS_LOAD_INFO, &r), 0);
	cr_assert(r.nt == 0 && r.nsteprows == 0 && !strcmp(r.run_name, "r"));
	lks_stored_run_release(&r);
	cr_assert_neq(lks_stored_run_load(f.s, f.id + 1, LKS_LOAD_TRACE, &r), 0);
	lks_stored_run_release(&r);
	fx_teardown(&f);
}

/* Whole: the same rows, all at once, by (step, rank, seq); the store can then close. */
Test(run, whole_agrees_with_step_by_step)
{
	struct fx f;
	lks_stored_run r;
	const lks_stat_row *rows;
	size_t n;

	fx_setup(&f);
	cr_assert_eq(lks_stored_run_load(f.s, f.id, LKS_LOAD_WHOLE, &r), 0, "%s", lks_errmsg());
	lks_store_close(f.s);
	f.s = NULL;
	cr_assert_eq(r.nstats, (size_t)(STEPS * W * NT));
	for (size_t i = 1; i < r.nstats; i++) {
		const lks_stat_row *p = &r.stats[i - 1], *q = &r.stats[i];

		cr_assert(p->step < q->step || (p->step == q->step && (p->rank < q->rank
		          || (p->rank == q->rank && p->seq < q->seq))), "row %zu out of order", i);
	}
	cr_assert_eq(lks_stored_run_stats(&r, 1, &rows, &n), 0);
	cr_assert(n == W * NT && rows[0].step == 1 && rows[n - 1].step == 1);
	expect_rows(&r);
	lks_stored_run_release(&r);
	fx_teardown(&f);
}

/* Rows captured from on_step read as rows from the store do. */
Test(run, captured_steps)
{
	lks_stored_run r;
	lks_step_row steps[W];
	lks_stat_row stats[W * NT];

	lks_stored_run_init(&r);
	r.W = W;
	for (int i = 0; i < NT; i++)
		cr_assert_eq(lks_stored_run_add_tensor(&r, i, names[i], phases[i]), 0);
	cr_assert_eq(lks_stored_run_add_tensor(&r, 1, "h", LKS_PHASE_FORWARD), 0, "known: no change");
	cr_assert_eq(lks_stored_run_add_tensor(&r, 1, "g", LKS_PHASE_FORWARD), 1, "another name");
	cr_assert_eq(r.nt, NT);
	for (int s = 0; s < STEPS; s++) {
		step_rows(s, steps, stats);
		cr_assert_eq(lks_stored_run_add_step(&r, steps, W, stats, W * NT), 0);
	}
	cr_assert(r.nsteps == STEPS && r.nsteprows == STEPS * W);
	cr_assert_eq(lks_stored_run_step_row(&r, 1, 1)->loss, 3.0);
	expect_rows(&r);
	lks_stored_run_release(&r);
	cr_assert(r.nt == 0 && r.stats == NULL && r.cur == -1, "released: empty again");
}
