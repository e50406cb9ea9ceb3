/*
 * screen_coll.c: the screen's run across the node's GPUs (screen.h, lks_screen_coll): run 0
 * of the screen's case on n ranks, rank i on GPU i, its gradients all-reduced on the
 * backend's device communicator in the CPU's rank order (allreduce = ordered), and the same
 * run on the CPU's threads, the known answer: in reference mode the two are bit for bit the
 * same, so the first rank where they part names a GPU (or its link).
 */
#include "harness/probe/screen_impl.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernels/err.h"

/* The case and run 0 on n ranks (the global batch grows with them: a rank's batch stays
   the case's), with the plant where it fits there. */
static void lks_coll_cfg(const struct lks_screen_ctx *x, lks_case *c, lks_run_cfg *run)
{
	*c = x->c;
	c->world_size = x->n;
	*run = x->c.runs[0];
	run->world_size = x->n;
	run->gemm = LKS_GEMM_REFERENCE;
	run->allreduce = LKS_ALLREDUCE_ORDERED;
	run->backend[0] = 0;
	run->inject = (lks_fault){ .kind = LKS_FAULT_NONE };
}

int lks_screen_coll_fits(const struct lks_screen_ctx *x)
{
	lks_case c;
	lks_run_cfg run;

	if (!x->o->collective || x->n < 2 || x->devs[0].standin)  /* lks_coll_can: not run */
		return 0;
	lks_coll_cfg(x, &c, &run);
	return lks_run_fault_fits(&c, &run, &x->plan.f) == 0;
}

/* Whether the run can be made: GPUs, not stand-ins; 0 to n - 1 (rank i takes slot i); the
   reference mode, whose bits the CPU has. */
static int lks_coll_can(struct lks_screen_ctx *x, lks_screen_coll *r)
{
	const char *why = NULL;

	if (x->n < 2)
		why = "one GPU: no collective to exercise";
	else if (x->devs[0].standin)
		why = "stand-ins share the CPU: no device communicator";
	else if (x->o->gemm != LKS_GEMM_REFERENCE)
		why = "production mode has no CPU answer for it";
	for (int i = 0; !why && i < x->n; i++)
		if (x->devs[i].index != i)
			why = "it takes GPUs 0 to n - 1 (--gpus all)";
	if (why)
		snprintf(r->note, sizeof(r->note), "not run: %s", why);
	return why == NULL;
}

int lks_screen_collective(struct lks_screen_ctx *x)
{
	lks_screen_coll *r = x->o->coll;
	lks_runner_opts go = { .threads = 1, .backend = x->o->be, .local_rank = -1 };
	lks_runner_opts co = { .threads = 1 };
	lks_stored_run g, cpu;
	lks_run_result res;
	lks_run_cfg run;
	lks_case c;
	lks_store *s;
	char path[700];
	int64_t gid, cid;
	int rc = -1;

	if (!r || !x->o->collective)
		return 0;
	memset(r, 0, sizeof(*r));
	r->gpu = -1;
	if (!lks_coll_can(x, r))
		return 0;
	snprintf(path, sizeof(path), "%s/collective.db", x->o->workdir);
	unlink(path);
	if (lks_store_open(path, &s)) {
		snprintf(r->note, sizeof(r->note), "could not be made: %s", lks_errmsg());
		r->error = 1;
		return 0;
	}
	lks_coll_cfg(x, &c, &run);
	if (x->planted && lks_screen_coll_fits(x))
		run.inject = x->plan.f;
	if (lks_run(&c, &run, s, &go, &res))
		goto out;
	gid = res.run_id;
	run.inject = (lks_fault){ .kind = LKS_FAULT_NONE };
	if (lks_run(&c, &run, s, &co, &res))
		goto out;
	cid = res.run_id;
	if (lks_stored_run_load(s, gid, LKS_LOAD_TRACE, &g))
		goto out;
	if (lks_stored_run_load(s, cid, LKS_LOAD_TRACE, &cpu) == 0) {
		if ((rc = lks_screen_same(&g, &cpu, 0, 0, &r->div)) >= 0) {
			r->ran = 1;
			r->failed = rc == 0;
			r->gpu = r->failed && r->div.rank >= 0 ? x->devs[r->div.rank].index : -1;
			if (r->gpu >= 0 && x->devs[r->div.rank].verdict == LKS_SCREEN_PASS) {
				lks_screen_dev *d = &x->devs[r->div.rank];  /* alone it passed */

				d->verdict = LKS_SCREEN_FAIL;
				d->div = r->div;
				snprintf(d->run, sizeof(d->run), "%.40s across the GPUs", run.name);
				snprintf(d->replay, sizeof(d->replay), "not replayed: its rank of the run "
				         "across the GPUs departs first, alone it gave the known answer "
				         "(its link, or a collective's buffer)");
			}
			snprintf(r->note, sizeof(r->note), "run '%s' on %d GPUs, a rank each, against "
			         "the CPU's", run.name, x->n);
			rc = 0;
		}
		lks_stored_run_release(&cpu);
	}
	lks_stored_run_release(&g);
out:
	if (rc) {  /* the GPUs' own verdicts stand: this one says it could not be made */
		snprintf(r->note, sizeof(r->note), "could not be made: %s", lks_errmsg());
		r->error = 1;
	}
	lks_store_close(s);
	return 0;
}
