/*
 * runner.c: ranks as threads, or processes x threads, in lockstep (see runner.h).
 *
 * A step: every rank takes its slice of the global batch, runs forward and backward
 * (model.c) with its own trace; then each rank checks its gradient buffer for NaN/Inf (the
 * first offending tensor in execution order becomes an event, the run goes on, traced or
 * not) and all-reduces it in place through the communicator (kernels/comm.h): summed
 * element by element in rank order 0, 1, ..., W-1 (fixed, so the sum is the same bits every
 * time). Each rank clips its sum by the global norm and applies AdamW to its own replica.
 * Replicas must stay bitwise equal: the update rows of the trace show it. A rank's whole
 * step runs in its own thread with its own optimizer state (lks_rank_task), and every
 * exchange between ranks (the gradients, delayed scaling's amax, the step and trace rows
 * gathered to rank 0, an abort when a rank fails) goes through the communicator. The
 * caller then stores what rank 0 gathered: the events, the rows.
 * A rank's tensors and optimizer state are in its backend's memory; the runner reaches them
 * only through the backend (the NaN/Inf count, the clip, AdamW), and the host reads the loss
 * and the trace rows. A planted fault wraps the seams of the rank it strikes, its backend
 * or its communicator end (lks_fault_plant_rank): the step knows nothing of it. A backend
 * other than the default, given no context, gets one per rank (lks_be_open_rank: a GPU
 * each); where its memory is not the host's it may offer a communicator on that memory
 * (lks_be_comm: NCCL), which then sums the gradients where they are; else they are staged
 * through the host.
 *
 * Ranks = processes x threads: with a job (opts->job, one end per process, as MPI gives),
 * the run's ranks are laid out over the job's processes (lks_comm_group) and this process
 * runs its own block [first, first + L) as threads; without one, all W ranks are threads
 * here. Arrays of ranks are this process's (index i: rank first + i), except what rank 0
 * gathers (every rank's). The process of rank 0 owns the store; the others have none.
 *
 * A single rank keeps its GEMM threads busy only inside GEMMs and casts; in the gaps an
 * idle-priority thread (bg.h) measures the traced tensors (trace.h, kept tensors) and
 * writes the last step's rows to SQLite, so that tracing costs the step little wall time.
 * Rows are collected before they are read; the next write waits for the last, so steps
 * land in order. The ranks are made and released in runner_setup.c; a rank's update is
 * runner_update.c's, an FSDP run's collectives runner_fsdp.c's.
 */
#include "harness/engine/runner.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/base/strbuf.h"
#include "harness/engine/runner_impl.h"
#include "harness/engine/state.h"
#include "harness/store/fingerprint.h"
#include "kernels/element/ops.h"
#include "kernels/err.h"
#include "kernels/mathf.h"
#include "kernels/clock.h"

/* NaN/Inf in the gradient buffer of rank index r before the all-reduce, traced or not,
   counted by the backend: the first tensor with any in the backward's execution order,
   which is the parameters' reversed (head, final norm, blocks from the last: down, up,
   norm; the embedding). The whole buffer is counted first, one readback: only where it
   holds any is each tensor counted. */
static int lks_scan_grads(struct lks_runner *R, lks_rank *k)
{
	int64_t all;

	if (k->nan_seen)
		return 0;
	if (lks_be_nonfinite(k->be, k->bectx, k->grads, R->m.nparams, &all))
		return -1;
	for (int i = R->m.nt - 1; all && i >= 0 && !k->nan_seen; i--) {
		int64_t n;

		if (lks_be_nonfinite(k->be, k->bectx, k->grads + R->m.t[i].off, R->m.t[i].n, &n))
			return -1;
		if (n) {
			k->nan_tensor = i;
			k->nan_count = n;
			k->nan_seen = 1;  /* a rank's first event only */
			return 0;
		}
	}
	return 0;
}

/* A rank's own failure (own 1) or a collective's that another rank's abort ended (2): the
   message is this thread's (err.h), kept; its own failure aborts the others' collectives. */
static void lks_rank_fail(lks_rank *k, int own)
{
	k->failed = own ? 1 : 2;
	snprintf(k->err, sizeof(k->err), "%s", lks_errmsg());
	if (own)
		lks_comm_abort(k->comm, k->err);
}

/* Every failed rank's error becomes the caller's, with its rank ("rank 1: ..."); ranks in a
   row with the same message share it ("ranks 0-3: ..."). A rank that failed only because
   another aborted shows when no rank failed itself. */
static int lks_rank_errors(const struct lks_runner *R)
{
	char msg[1024] = "", who[32];
	size_t len = 0;

	for (int own = 1; own <= 2 && !len; own++)
	for (int r = 0, last = 0; r < R->L; r = last + 1) {
		last = r;
		if (R->ranks[r].failed != own || len >= sizeof(msg))
			continue;
		while (last + 1 < R->L && R->ranks[last + 1].failed == own
		       && strcmp(R->ranks[last + 1].err, R->ranks[r].err) == 0)
			last++;
		if (last > r)
			snprintf(who, sizeof(who), "ranks %d-%d", R->first + r, R->first + last);
		else
			snprintf(who, sizeof(who), "rank %d", R->first + r);
		len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s%s: %s", len ? "; " : "", who,
		                        R->ranks[r].err);
	}
	return len ? lks_err("%s", msg) : 0;
}

/* A rank's step after its update: the update's trace rows, delayed scaling, and the step's
   rows gathered to rank 0 (R->gathered, R->outs). */
static int lks_rank_finish(struct lks_runner *R, lks_rank *r, double gnorm)
{
	lks_tracer *tr = &r->tr;
	int root = r->rank == LKS_COMM_ROOT;
	struct lks_rank_out out;
	void *rows = NULL, *outs = NULL;
	int64_t bad = 0;

	for (int i = 0; i < R->m.nt; i++) {
		const lks_ptensor *p = &R->m.t[i];

		lks_trace_f32_kept(tr, LKS_PHASE_UPDATE, r->params + p->off, p->n, "%s", p->name);
		if (R->run->trace_optim) {  /* the moments the next step's update reads */
			lks_trace_f32_kept(tr, LKS_PHASE_UPDATE, r->m1 + p->off, p->n, "%s.adam_m",
			                   p->name);
			lks_trace_f32_kept(tr, LKS_PHASE_UPDATE, r->m2 + p->off, p->n, "%s.adam_v",
			                   p->name);
		}
	}
	lks_tracer_sync(tr);
	for (size_t i = 0; i < tr->nrows; i++)
		bad += tr->rows[i].nonfinite;
	out = (struct lks_rank_out){
		.row = { R->step, r->rank, r->loss / r->T, gnorm, R->lr, r->time, bad,
		         lks_be_mem_peak(r->be, r->bectx) },
		.loss = r->loss, .nan_tensor = r->nan_tensor, .nan_count = r->nan_count,
		.nan_act_count = r->nan_act_count,
	};
	memcpy(out.nan_act, r->nan_act, sizeof(out.nan_act));
	if (lks_step_delayed(R, r)
	    || lks_comm_gather(r->comm, tr->rows, tr->nrows * sizeof(*tr->rows),
	                       root ? &rows : NULL, root ? R->counts : NULL)
	    || lks_comm_gather(r->comm, &out, sizeof(out), root ? &outs : NULL,
	                       root ? R->counts + R->W : NULL)) {
		free(rows);
		return -1;
	}
	if (root) {
		R->gathered = rows;
		R->ngathered = 0;
		for (int q = 0; q < R->W; q++)
			R->ngathered += R->counts[q] / sizeof(lks_stat_row);
		memcpy(R->outs, outs, sizeof(*R->outs) * (size_t)R->W);
		free(outs);
	}
	return 0;
}

/* The all-reduce of rank r's gradient, and the sum to on_grads (rank 0); a host
   communicator works on host buffers, so a backend whose memory is not the host's is
   staged through r->staged: download, all-reduce, upload (the same bits: lockstep
   reduces on the host either way). A device communicator (R->devcomm) sums the gradient
   where it is; on_grads then gets a host copy. A run of one rank sums nothing: the sum
   over one rank is its gradient, bit for bit (no add), so it stays where it is. */
static int lks_rank_allreduce(struct lks_runner *R, lks_rank *r)
{
	size_t bytes = R->m.nparams * sizeof(float);
	int alone = R->W == 1;
	int staged = r->staged && !R->devcomm && !alone;
	/* a tp group's gradient is whole on each of its ranks (model_tp.c): its first rank's
	   is summed, the others give -0.0, which adds nothing (host memory: no devcomm) */
	int mute = r->tp > 1 && r->tpr != 0;
	float *g = staged ? r->staged : r->grads;
	/* where the -0.0 are written: the host's g, or through r->staged into device memory */
	float *z = staged || !r->staged ? g : r->staged;

	if (r->fsdp) {  /* reduce-scattered, reduced over dp, gathered: on the host */
		if (lks_fsdp_grads(R, r))
			return -1;
		if (r->rank == 0 && R->o->on_grads)
			R->o->on_grads(R->o->on_grads_arg, R->step, lks_fsdp_gathered(r), &R->m);
		return 0;
	}

	if (staged && !mute && lks_be_download(r->be, r->bectx, g, r->grads, bytes))
		return -1;
	for (size_t i = 0; mute && i < R->m.nparams; i++)
		z[i] = -0.0f;
	if (mute && z != g && lks_be_upload(r->be, r->bectx, g, z, bytes))
		return -1;
	if (!alone && lks_comm_allreduce_sum(r->comm, g, R->m.nparams))
		return -1;
	if (staged && lks_be_upload(r->be, r->bectx, r->grads, g, bytes))
		return -1;
	if (r->rank == 0 && R->o->on_grads) {
		int copy = r->staged && !staged;  /* device memory, not downloaded above */

		if (copy && lks_be_download(r->be, r->bectx, r->staged, r->grads, bytes))
			return -1;
		R->o->on_grads(R->o->on_grads_arg, R->step, copy ? r->staged : g, &R->m);
	}
	return 0;
}

/* One rank's step, in its own thread, with its own replica and optimizer state: its slice
   of the batch, forward and backward, the NaN/Inf check, the all-reduce, the clip and the
   update, the trace of the update, delayed scaling; what rank 0 stores comes to it through
   the communicator. task: the rank's index here. */
static void lks_rank_task(void *arg, int task, int thread)
{
	struct lks_runner *R = arg;
	lks_rank *r = &R->ranks[task];
	int B = R->batch, S = R->m.cfg.seq, tp = R->run->tp > 1 ? R->run->tp : 1;
	size_t T = (size_t)B * S;
	int32_t *tok = r->host_tok, *tgt = tok + T;
	double t0, gnorm;

	/* the rank's sequences, made on the host and uploaded: its replica's (a tp group's
	   ranks see the same) */
	for (int b = 0; b < B; b++)
		lks_data_sequence(&R->data, (uint64_t)R->step * B * (R->W / tp)
		                  + (uint64_t)(r->rank / tp) * B + b,
		                  tok + (size_t)b * S, tgt + (size_t)b * S);
	lks_tracer_begin_step(&r->tr, R->step);
	r->failed = 0;
	r->nan_tensor = -1;
	r->nan_act[0] = 0;
	/* the mesh's groups are split from comm seen from the host (a device's staged) */
	if (!r->hcomm && (R->devcomm && (tp > 1 || R->run->fsdp > 1)
	                  ? lks_comm_staged(r->comm, r->be, r->bectx, 0, &r->hcomm)
	                  : (r->hcomm = r->comm) == NULL)) {
		lks_rank_fail(r, 1);
		return;
	}
	if (R->run->fsdp > 1 && !r->fsdp && lks_fsdp_setup(R, r)) {  /* its first step */
		lks_rank_fail(r, 1);
		return;
	}
	/* its tp group, at its first step (a split is a collective); its dp group where the
	   run's fault reduces an amax over it (every rank takes part) */
	if (tp > 1 && !r->tpc && ((tp == R->W ? (r->tpc = r->hcomm) == NULL
	                           : lks_comm_split(r->hcomm, R->W / tp, r->rank / tp, &r->tpc)
	                             || lks_fault_group(&R->run->inject, R->run, r->rank, &R->step,
	                                                0, &r->tpc))
	                          || (R->run->inject.kind == LKS_FAULT_AMAX_GROUP
	                              && lks_comm_split(r->hcomm, tp, r->rank % tp, &r->dpc)))) {
		lks_rank_fail(r, 1);
		return;
	}
	r->amax_fault = r->dpc ? &R->run->inject : NULL;
	t0 = lks_now();
	if (lks_be_upload(r->be, r->bectx, r->tok, tok, T * sizeof(int32_t))
	    || lks_be_upload(r->be, r->bectx, r->tgt, tgt, T * sizeof(int32_t))
	    || lks_rank_step(r)) {
		r->time = lks_now() - t0;
		lks_rank_fail(r, 1);
		return;
	}
	r->time = lks_now() - t0;
	lks_tracer_sync(&r->tr);  /* kept gradients are measured before the sum replaces them */
	if (lks_scan_grads(R, r)) {
		lks_rank_fail(r, 1);
		return;
	}
	if (lks_rank_allreduce(R, r)) {
		lks_rank_fail(r, 0);
		return;
	}
	for (int i = 0; R->run->trace_optim && i < R->m.nt; i++)  /* the sum the update reads */
		lks_trace_f32(&r->tr, LKS_PHASE_UPDATE, r->grads + R->m.t[i].off, R->m.t[i].n,
		              "%s.grad_sum", R->m.t[i].name);
	if (lks_rank_update(R, r, &gnorm)) {
		lks_rank_fail(r, 1);
		return;
	}
	if (r->fsdp && lks_fsdp_params(R, r)) {  /* the shards, gathered for the next step */
		lks_rank_fail(r, 0);
		return;
	}
	if (lks_rank_finish(R, r, gnorm))
		lks_rank_fail(r, 0);
}

static void lks_store_job_run(void *arg)
{
	struct lks_store_job *j = arg;

	if ((j->rc = lks_store_step(j->store, j->run_id, j->rows, j->nrows, j->stats, j->nstats)))
		snprintf(j->err, sizeof(j->err), "%s", lks_errmsg());
}

/* Waits for the last step's write; its error, if any, becomes this thread's. */
int lks_runner_store_wait(struct lks_runner *R)
{
	struct lks_store_job *j = &R->sj;

	lks_bg_wait(R->bg, &R->store_jobs);
	free(j->stats);
	j->stats = NULL;
	if (j->rc) {
		j->rc = 0;
		return lks_err("%s", j->err);
	}
	return 0;
}

/* Writes a step's rows (taking stats): on the background thread if there is one, where the
   transaction overlaps the next step (one step at a time, so steps land in order and the
   connection is never used by two threads at once), else at once. */
static int lks_store_post(struct lks_runner *R, lks_store *store, int64_t run_id,
                          lks_stat_row *stats, size_t nstats)
{
	struct lks_store_job *j = &R->sj;

	if (lks_runner_store_wait(R)) {
		free(stats);
		return -1;
	}
	*j = (struct lks_store_job){ store, run_id, j->rows, R->W, stats, nstats, 0, "" };
	memcpy(j->rows, R->rows, sizeof(*j->rows) * (size_t)R->W);
	lks_bg_post(R->bg, &R->store_jobs, lks_store_job_run, j);
	return R->bg ? 0 : lks_runner_store_wait(R);
}

/* Warmup then cosine from lr to min_lr; step counts from 0. */
static float lks_schedule(const lks_optim_cfg *o, int warmup, int step, int steps)
{
	double p;

	if (step < warmup)
		return (float)((double)o->lr * (step + 1) / warmup);
	p = steps - warmup > 1 ? (double)(step - warmup) / (steps - warmup - 1) : 1.0;
	return (float)(o->min_lr + 0.5 * ((double)o->lr - o->min_lr) * (1.0 + lks_cospi(p)));
}

/* The ranks' NaN/Inf found before this step's all-reduce (lks_scan_grads, a rank's first
   only), and before a tp group's sum of partials in the step (model_tp.c, a rank's first
   only), as rank 0 gathered them: an event each, in rank order, a rank's partial first (it
   came first in the step). */
static void lks_check_grads(struct lks_runner *R, lks_store *store, int64_t run_id, int step,
                            lks_run_result *res)
{
	for (int r = 0; r < R->W; r++) {
		const struct lks_rank_out *out = &R->outs[r];
		char name[64], msg[160];

		if (out->nan_act[0]) {
			res->nonfinite_events++;
			snprintf(msg, sizeof(msg), "%lld non-finite values in rank %d's share (a partial "
			         "sum, a shard to gather, or an FP8 operand's amax) before the tp group's "
			         "collective",
			         (long long)out->nan_act_count, r);
			if (store)
				lks_store_event(store, run_id, step, r, out->nan_act, "nonfinite_tp", msg);
		}

		if (out->nan_tensor < 0 || out->nan_tensor >= R->m.nt)
			continue;
		res->nonfinite_events++;
		if (!store)
			continue;
		snprintf(name, sizeof(name), "%s.grad", R->m.t[out->nan_tensor].name);
		snprintf(msg, sizeof(msg), "%lld non-finite values before the all-reduce",
		         (long long)out->nan_count);
		lks_store_event(store, run_id, step, r, name, "nonfinite_grad", msg);
	}
}

static void lks_progress(const lks_runner_opts *o, const struct lks_runner *R, int step,
                         double loss, double t_start)
{
	double el = lks_now() - t_start, eta = el / (step + 1 - R->step0) * (R->steps - step - 1);

	if (!o->progress)
		return;
	if (o->progress_tty)
		fprintf(o->progress, "\r\033[K%s / %s: step %d/%d loss %.4f ETA %.0fs", R->c->name,
		        R->run->name, step + 1, R->steps, loss, eta);
	else if (step == R->step0 || (step + 1) % 10 == 0 || step + 1 == R->steps)
		fprintf(o->progress, "%s / %s: step %d/%d loss %.4f (%.1fs)\n", R->c->name, R->run->name,
		        step + 1, R->steps, loss, el);
	fflush(o->progress);
}

static int lks_run_step(struct lks_runner *R, int step, lks_store *store, int64_t run_id,
                        const lks_runner_opts *o, lks_run_result *res, double *loss)
{
	const lks_optim_cfg *opt = &R->c->optim;
	lks_step_row *rows = R->rows;
	lks_stat_row *stats = NULL;
	size_t nstats = 0;
	double lsum = 0.0;
	int rc = -1;

	R->step = step;
	R->o = o;
	R->lr = lks_schedule(opt, R->warmup, step, R->steps);
	R->b1pow *= opt->beta1;
	R->b2pow *= opt->beta2;
	R->bc1 = 1.0f - R->b1pow;
	R->bc2 = 1.0f - R->b2pow;
	lks_pool_run(R->rank_pool, R->L, lks_rank_task, R);
	for (int r = 0; r < R->L; r++)
		lks_tracer_sync(&R->ranks[r].tr);  /* a failed rank's jobs end before it goes */
	if (lks_rank_errors(R))
		return -1;
	if (R->first != LKS_COMM_ROOT)  /* rank 0's process stores the step */
		return 0;
	if (lks_runner_store_wait(R))  /* the last step is written: the store is free for events */
		return -1;
	lks_check_grads(R, store, run_id, step, res);
	stats = R->gathered;  /* taken; the rows of every rank, from rank 0 on */
	nstats = R->ngathered;
	R->gathered = NULL;
	for (int r = 0; r < R->W; r++) {
		rows[r] = R->outs[r].row;
		lsum += R->outs[r].loss;
	}
	*loss = lsum / ((double)R->W * R->ranks[0].T);
	if (step == R->step0 && store
	    && lks_store_tensors(store, run_id, (const char *const *)R->ranks[0].tr.names,
	                         R->ranks[0].tr.phases, R->ranks[0].tr.nnames))
		goto out;
	if (o->on_step)
		o->on_step(o->on_step_arg, rows, R->W, stats, nstats, R->ranks[0].tr.names,
		           R->ranks[0].tr.nnames);
	if (store) {
		rc = lks_store_post(R, store, run_id, stats, nstats);
		stats = NULL;
	} else {
		rc = 0;
	}
out:
	free(stats);
	return rc;
}

/* What the run was asked to be, as it stores it (options, nightly.h's settings): its keys,
   a planted fault, a resumed start, and the --set overrides that reach it (one of a check
   or of another run changes nothing it trains, and would make it another run's settings). */
static char *lks_run_options(const lks_run_cfg *run, const lks_runner_opts *o)
{
	lks_strbuf sets = LKS_STRBUF_INIT;
	char *s, fault[640] = "", fsdp[128] = "";
	size_t n;

	for (int i = 0; i < o->nsets; i++)
		if (lks_case_set_reaches(o->sets[i], run->name))
			lks_strbuf_addf(&sets, "%s%s", sets.len ? " " : "", o->sets[i]);
	if (o->mark)
		lks_strbuf_addf(&sets, "%s%s", sets.len ? " " : "", o->mark);
	n = 840 + sets.len;
	if (sets.oom || !(s = malloc(n))) {
		lks_strbuf_release(&sets);
		return NULL;
	}

	if (run->fsdp > 1)
		snprintf(fsdp, sizeof(fsdp), " fsdp=%d%s%s", run->fsdp,
		         run->fp8_all_gather ? " fp8_all_gather=on" : "",
		         run->reshard ? " reshard_after_forward=on" : "");
	if (run->tp > 1)
		snprintf(fsdp + strlen(fsdp), sizeof(fsdp) - strlen(fsdp), " tp=%d%s%s", run->tp,
		         run->sp ? " sequence_parallel=on" : "",
		         run->trace_shards ? " trace=shards" : "");
	if (run->trace_optim)
		strcat(fsdp, " trace_optimizer=on");
	if (run->inject.kind != LKS_FAULT_NONE) {
		strcpy(fault, " inject: ");
		lks_fault_format(&run->inject, fault + strlen(fault), sizeof(fault) - strlen(fault));
	}
	if (o->resume_run && o->resume_name)  /* its steps from there on: a run of its own kind */
		snprintf(fault + strlen(fault), sizeof(fault) - strlen(fault),
		         " resume_from=%.64s@%d", o->resume_name, o->resume_step);
	else if (o->resume_run)
		snprintf(fault + strlen(fault), sizeof(fault) - strlen(fault),
		         " resume_from=run %lld@%d", (long long)o->resume_run, o->resume_step);
	snprintf(s, n, "checkpoint=%s%s%s%s amax_history=%d amax_algo=%s margin=%d%s%s%s",
	         run->checkpoint ? "blocks" : "none",
	         run->gemm == LKS_GEMM_LIBRARY ? " gemm=cublaslt" : "",
	         run->allreduce == LKS_ALLREDUCE_NCCL ? " allreduce=nccl" : "", fsdp,
	         run->amax_history,
	         run->amax_most_recent ? "most_recent" : "max", run->margin, fault,
	         sets.len ? " set: " : "", sets.buf);
	lks_strbuf_release(&sets);
	return s;
}

/* A planted fault that could not act where it was aimed (lks_fault_plant_check), on a
   rank of this process. */
static int lks_fault_missed(const struct lks_runner *R)
{
	for (int r = 0; r < R->L; r++)
		if (lks_fault_plant_check(R->ranks[r].plant))
			return lks_err("run '%s': %s", R->run->name, lks_errmsg());
	return 0;
}

double lks_run_bytes(const lks_case *c, const lks_run_cfg *run)
{
	double W = run->world_size, T, np, bytes;
	/* tensors a rank traces in a step, at most: per block 5 forward, 7 backward and 3
	   recomputed float tensors, 3 parameters, 14 FP8 operands; with attention 5 forward
	   and recomputed, 4 backward, 3 parameters and 16 FP8 operands more; 11 outside the
	   blocks */
	double rows = (c->model.attention ? 65.0 : 32.0) * c->model.layers + 11;
	lks_model m;

	T = (double)lks_case_run_tokens(c, run);
	if (lks_model_init(&m, &c->model))
		return -1;
	np = (double)m.nparams;
	/* the ranks (one traces its FP8 operands for the background thread); AdamW's two
	   moments per replica (the sum is all-reduced in place) and what a planted fault's
	   wrappers keep (skip_allreduce: a gradient); a step's trace rows in the tracers, the
	   runner's copy and the step being stored, and the tensors' names; the host's copy of
	   each rank's tokens and targets */
	bytes = W * lks_rank_bytes(&m, run, (long long)T, run->world_size == 1)
	      + 2 * W * np * sizeof(float) + lks_fault_bytes(&run->inject, (size_t)np)
	      + W * rows * (3 * sizeof(lks_stat_row) + 64) + W * 2 * T * sizeof(int32_t)
	      + W * sizeof(lks_rank) + (double)c->model.vocab * sizeof(int32_t);
	lks_model_release(&m);
	return bytes;
}

struct lks_plan_list {
	lks_gemm_algo *v;   /* NULL: only counting */
	int n, cap;
};

static int lks_plan_add(void *arg, const lks_gemm_algo *plan)
{
	struct lks_plan_list *l = arg;

	for (int i = 0; l->v && i < l->n; i++)
		if (lks_gemm_algo_eq(&l->v[i], plan)) {
			l->v[i].gemms += plan->gemms;
			return 0;
		}
	if (l->v && l->n < l->cap)
		l->v[l->n] = *plan;
	l->n++;
	return 0;
}

/* Each of this process's rank contexts (those the ranks share once) hands its plans to l. */
static int lks_plans_walk(struct lks_runner *R, struct lks_plan_list *l)
{
	int rc = 0;

	for (int r = 0; !rc && r < R->L; r++) {
		int seen = 0;

		for (int q = 0; q < r; q++)
			seen |= R->ranks[q].bectx == R->ranks[r].bectx;
		if (!seen)
			rc = lks_be_gemm_plans(R->be, R->ranks[r].bectx, lks_plan_add, l);
	}
	return rc;
}

/* How the backend's GEMM library ran this process's GEMMs (none on the cpu), stored with
   the run at its end, a failed run's too: counted, then copied, the plans of every rank's
   context in one list, those that differ only in their count as one (their counts summed). */
static int lks_store_plans(struct lks_runner *R, lks_store *store, int64_t run_id)
{
	struct lks_plan_list l = { 0 };
	int rc;

	if ((rc = lks_plans_walk(R, &l)) || l.n == 0)
		return rc;
	if (!(l.v = malloc((size_t)l.n * sizeof(*l.v))))
		return lks_err("out of memory for the gemm plans");
	l.cap = l.n;
	l.n = 0;
	rc = lks_plans_walk(R, &l);
	if (!rc)
		rc = lks_store_gemm_plans(store, run_id, l.v, l.n < l.cap ? l.n : l.cap);
	free(l.v);
	return rc;
}

/* The run's row: begun 'incomplete' with the run's fingerprint (and its ranks' devices,
   where the backend names them; NULL: none) */
static int lks_run_begin(const char *devices, const lks_case *c, const lks_run_cfg *run,
                         lks_store *store, const lks_runner_opts *o, char **options,
                         int64_t *run_id)
{
	const char *fp = o->fingerprint ? o->fingerprint : "{}";
	char *with = devices ? lks_fingerprint_json_add(fp, "devices", devices) : NULL;
	lks_run_info info = {
		.suite_id = o->suite_id, .case_name = c->name, .case_path = c->path,
		.case_text = c->text, .run_name = run->name, .recipe = lks_recipe_name(run->recipe),
		.options = *options = lks_run_options(run, o),
		.backend = (o->backend ? o->backend : lks_backend_default())->name,
		.world_size = run->world_size, .steps = o->steps > 0 ? o->steps : c->steps,
		.seed = c->seed, .combo = o->combo, .fingerprint = with ? with : fp,
	};
	int rc;

	if (devices && !with)
		return lks_err("out of memory");
	rc = lks_store_begin_run(store, &info, run_id);
	free(with);
	return rc;
}

int lks_run_store_left_out(const lks_case *c, const lks_run_cfg *run, lks_store *store,
                           const lks_runner_opts *o, const char *backend, const char *why,
                           int64_t *run_id)
{
	char *options = NULL, msg[600];
	int rc;

	snprintf(msg, sizeof(msg), "backend '%s' cannot be opened here: %s", backend, why);
	rc = lks_run_begin(NULL, c, run, store, o, &options, run_id)  /* no device was opened */
	     || lks_store_fail_run(store, *run_id, msg);
	free(options);
	return rc ? -1 : 0;
}

int lks_run(const lks_case *c, const lks_run_cfg *run, lks_store *store,
            const lks_runner_opts *o, lks_run_result *res)
{
	struct lks_runner R;
	int64_t run_id = 0;
	char *options = NULL;
	double t_start = lks_now(), loss = 0.0;
	int rc = -1, step, end;

	memset(res, 0, sizeof(*res));
	if (lks_runner_init(&R, c, run, o)) {
		/* a run that could not start (its devices, their communicator) is stored failed,
		   its error kept for the caller */
		char why[512];

		snprintf(why, sizeof(why), "%s", lks_errmsg());
		if (store && lks_run_begin(R.devices, c, run, store, o, &options, &run_id) == 0)
			lks_store_fail_run(store, run_id, why);
		lks_err("%s", why);
		res->run_id = run_id;
		goto out;
	}
	if (R.L == 0) {  /* a process of the job that hosts none of this run's ranks */
		rc = lks_state_idle(&R, o);
		goto out;
	}
	if ((rc = lks_state_start(&R, store, o)) != 0)  /* bad input: nothing stored */
		goto out;
	rc = -1;
	if (store && lks_run_begin(R.devices, c, run, store, o, &options, &run_id))
		goto out;
	res->run_id = run_id;
	res->first_step = R.step0;
	end = o->stop_at > 0 && o->stop_at < R.steps ? o->stop_at : R.steps;
	for (step = R.step0; step < end; step++) {
		if (lks_run_step(&R, step, store, run_id, o, res, &loss)
		    || (lks_state_wanted(o, step)  /* every process: a job gathers them */
		        && (lks_runner_store_wait(&R) || lks_state_keep(&R, store, run_id, step))))
			break;
		if (step == R.step0)
			res->first_loss = loss;
		res->last_loss = loss;
		res->steps = step + 1;
		lks_progress(o, &R, step, loss, t_start);
	}
	if (o->progress && o->progress_tty)
		fputc('\n', o->progress);
	/* the last step's rows land before the run's status does */
	if (lks_runner_store_wait(&R) || (store && lks_store_plans(&R, store, run_id)) || step < end
	    || lks_fault_missed(&R)) {
		if (store)
			lks_store_fail_run(store, run_id, lks_errmsg());
		goto out;
	}
	if (store && lks_store_end_run(store, run_id, "complete"))
		goto out;
	rc = 0;
out:
	/* the other processes of a job would wait for this one's next collective: end them */
	if (rc && o->job && o->job->size > 1)
		lks_comm_abort(o->job, lks_errmsg());
	/* nor may a device communicator's close wait for a rank that is gone */
	for (int r = 0; rc && R.devcomm && r < R.L; r++)
		lks_comm_abort(R.ranks[r].comm, "the run failed");
	res->seconds = lks_now() - t_start;
	free(options);
	lks_runner_release(&R);
	return rc;
}
