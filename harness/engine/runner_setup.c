/*
 * runner_setup.c: a run's ranks made and released (runner_impl.h): the model, data and
 * optimizer state of each rank of this process, their backend contexts (one per rank where
 * the runner opens them) and their ends of the communicator (the host's, or a device's
 * the backend offers: lks_be_comm), the threads and the background thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/launch.h"
#include "harness/engine/runner_impl.h"
#include "harness/store/fingerprint.h"
#include "kernels/err.h"
#include "kernels/pool.h"

/* A rank's ends: its mesh groups' (split from hcomm), hcomm's view, then comm */
static void lks_rank_comms_close(lks_rank *k)
{
	lks_fsdp_close_groups(k);
	if (k->tpc && k->tpc != k->hcomm)
		lks_comm_close(k->tpc);
	if (k->dpc)
		lks_comm_close(k->dpc);
	if (k->hcomm && k->hcomm != k->comm)
		lks_comm_close(k->hcomm);
	k->tpc = k->dpc = k->hcomm = NULL;
	lks_comm_close(k->comm);
	k->comm = NULL;
}

static void lks_comm_close_task(void *arg, int task, int thread)
{
	struct lks_runner *R = arg;

	(void)thread;
	lks_rank_comms_close(&R->ranks[task]);
}

void lks_runner_release(struct lks_runner *R)
{
	lks_runner_store_wait(R);  /* a failed run's last write still lands */
	free(R->sj.rows);
	/* first, and before the contexts (a device communicator works on their devices): a
	   device communicator's ends, its sub-groups' before its own, closed at once, each in
	   its rank's thread, since NCCL's finalize waits for every rank's (one by one here, the
	   first rank's would wait for the second's, not yet called) */
	if (R->ranks && R->devcomm)
		lks_pool_run(R->rank_pool, R->L, lks_comm_close_task, R);
	for (int r = 0; R->ranks && r < R->L; r++) {
		lks_rank *k = &R->ranks[r];

		if (k->be) {
			lks_be_free(k->be, k->bectx, k->m1);
			lks_be_free(k->be, k->bectx, k->m2);
			lks_be_free(k->be, k->bectx, k->damax);
		}
		if (!R->devcomm)  /* a device communicator's: above, every rank's at once */
			lks_rank_comms_close(k);
		lks_fsdp_release(k);
		lks_rank_release(k);
		lks_fault_unplant(k->plant);  /* the backend wrapper, after the rank's last use */
		k->plant = NULL;
		free(k->staged);
		free(k->host_tok);
		free(k->amax);
	}
	free(R->devices);
	for (int r = 0; r < R->opened; r++)
		lks_be_close(R->be, R->ranks[r].bectx);
	free(R->ranks);
	lks_bg_free(R->bg);
	lks_pool_free(R->rank_pool);
	lks_pool_free(R->gemm_pool);
	free(R->counts);
	free(R->gathered);
	free(R->outs);
	free(R->rows);
	free(R->parts);
	lks_data_release(&R->data);
	lks_model_release(&R->m);
}

/* The state of rank index r in its backend's memory: the initial parameters (made on the
   host once, into *init, and uploaded) and AdamW's moments, zero. */
static int lks_runner_optim_init(struct lks_runner *R, int r, float **init)
{
	lks_rank *k = &R->ranks[r];
	size_t bytes = R->m.nparams * sizeof(float);

	if (!*init) {
		if (!(*init = malloc(bytes)))
			return lks_err("out of memory");
		lks_model_init_params(&R->m, R->c->seed, *init);
	}
	if (!lks_be_host_memory(k->be) && !(k->staged = malloc(bytes)))
		return lks_err("out of memory");
	if (lks_be_upload(k->be, k->bectx, k->params, *init, bytes)
	    || lks_be_alloc(k->be, k->bectx, bytes, (void **)&k->m1)
	    || lks_be_zero(k->be, k->bectx, k->m1, bytes)
	    || lks_be_alloc(k->be, k->bectx, bytes, (void **)&k->m2)
	    || lks_be_zero(k->be, k->bectx, k->m2, bytes))
		return -1;
	return 0;
}

/* The ranks' backend contexts: the default backend's is the runner's GEMM pool, shared;
   another's is the caller's (o->backend_ctx), shared where the backend's memory is the
   host's or the process has one rank, or else one per rank opened here (lks_be_open_rank:
   rank i of this process on its own device, its own stream and scratch), with the threads
   of a rank. A device's context is never shared between ranks: its stream and scratch
   would be. */
static int lks_runner_contexts(struct lks_runner *R, const lks_runner_opts *o, int threads)
{
	int share;

	R->be = o->backend ? o->backend : lks_backend_default();
	share = o->backend_ctx && (R->L == 1 || lks_be_host_memory(R->be));
	for (int r = 0; r < R->L; r++) {
		if (!o->backend || share) {
			R->ranks[r].bectx = o->backend ? o->backend_ctx : R->gemm_pool;
			continue;
		}
		/* the process's ranks on its host's devices in rank order (launch.h) */
		int slot = lks_launch_rank_slot(R->W, o->job ? o->job->size : 1,
		                                o->job ? o->job->rank : 0, o->local_rank, r);

		if (lks_be_open_rank(R->be, R->W == 1 ? threads : 1, slot, &R->ranks[r].bectx))
			return -1;
		R->opened = r + 1;
	}
	return 0;
}

/* describe()'s keys of one rank's context, as much as its device record takes */
static void lks_device_put(void *arg, const char *key, const char *value)
{
	lks_rank_device *d = arg;

	if (!strcmp(key, "uuid"))
		snprintf(d->uuid, sizeof(d->uuid), "%s", value);
	else if (!strcmp(key, "device"))
		snprintf(d->name, sizeof(d->name), "%s", value);
	else if (!strcmp(key, "compute_capability"))
		snprintf(d->cc, sizeof(d->cc), "%s", value);
	else if (!strcmp(key, "ordinal"))
		d->ordinal = atoi(value);
}

int lks_devices_check(const lks_rank_device *d, int W, char *why, size_t n)
{
	for (int r = 0; r < W; r++)
		for (int q = 0; q < r; q++) {
			if (d[q].first != d[r].first && *d[r].uuid && !strcmp(d[q].uuid, d[r].uuid)) {
				snprintf(why, n, "ranks %d and %d, of two processes on host '%s', would share "
				         "GPU %d (%s): one GPU per process (a process may drive several); "
				         "start fewer processes per host, or give each its own GPU "
				         "(CUDA_VISIBLE_DEVICES)", d[q].rank, d[r].rank, d[r].host,
				         d[r].ordinal, d[r].uuid);
				return -1;
			}
			if (strcmp(d[q].cc, d[r].cc)) {
				snprintf(why, n, "rank %d has a %s (compute capability %s) and rank %d a %s "
				         "(%s): a run's ranks must be of one GPU class, the class of its "
				         "goldens", d[q].rank, d[q].name, d[q].cc, d[r].rank, d[r].name,
				         d[r].cc);
				return -1;
			}
		}
	return 0;
}

struct lks_gather_job {
	struct lks_runner *R;
	const lks_rank_device *mine;  /* (L) */
	lks_rank_device *all;         /* (W) */
	atomic_int failed;
	char err[512];
};

static void lks_gather_task(void *arg, int task, int thread)
{
	struct lks_gather_job *j = arg;

	(void)thread;
	/* every rank's record to every rank: all ranks of the process write the same bytes */
	if (lks_comm_allgather_bytes(j->R->ranks[task].comm, &j->mine[task], sizeof(*j->mine),
	                             (unsigned char *)(j->all + (size_t)j->R->W * task))
	    && atomic_exchange(&j->failed, 1) == 0) {
		snprintf(j->err, sizeof(j->err), "%s", lks_errmsg());
		lks_comm_abort(j->R->ranks[task].comm, j->err);
	}
}

/* Every rank's device record into all (W), through each rank's host end at once */
static int lks_runner_all_ranks(struct lks_runner *R, const lks_rank_device *mine,
                                lks_rank_device *all)
{
	struct lks_gather_job j = { .R = R, .mine = mine };
	int rc = 0;

	/* one row of W records per rank of this process: rank i's thread writes its own */
	if (!(j.all = calloc((size_t)R->W * (size_t)R->L, sizeof(*all))))
		return lks_err("out of memory");
	atomic_init(&j.failed, 0);
	lks_pool_run(R->rank_pool, R->L, lks_gather_task, &j);
	if (atomic_load(&j.failed))
		rc = lks_err("%s", j.err);
	else
		memcpy(all, j.all, (size_t)R->W * sizeof(*all));
	free(j.all);
	return rc;
}

/* The "devices" fingerprint key of the run: each rank's device, in rank order */
static char *lks_devices_text(const lks_rank_device *d, int W)
{
	size_t len = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	for (int r = 0; r < W; r++)
		fprintf(f, "%srank %d: gpu %d %s on %s", r ? "; " : "", d[r].rank, d[r].ordinal,
		        d[r].uuid, d[r].host);
	fclose(f);
	return s;
}

/* Each rank's device, where the backend names one (describe's uuid): every rank learns
   every rank's (one all-gather over the host ends, before any device communicator), and
   all alike refuse two processes on one GPU (NCCL would fail or hang on it; ranks of one
   process may share a GPU: it declines) or ranks of two GPU classes. The root keeps the
   list for the run's fingerprint (R->devices); on_devices gets this process's. */
static int lks_runner_devices(struct lks_runner *R)
{
	lks_rank_device *all = NULL, *mine = NULL;
	char host[sizeof(all->host)] = "", why[512];
	int named = 0, rc = -1;

	if (R->L == 0 || !R->opened)
		return 0;
	all = calloc((size_t)R->W, sizeof(*all));
	mine = calloc((size_t)R->L, sizeof(*mine));
	if (!all || !mine) {
		lks_err("out of memory");
		goto out;
	}
	gethostname(host, sizeof(host) - 1);
	for (int r = 0; r < R->L; r++) {
		mine[r] = (lks_rank_device){ .rank = R->first + r, .first = R->first, .ordinal = -1 };
		snprintf(mine[r].host, sizeof(mine[r].host), "%s", host);
		lks_be_describe(R->be, R->ranks[r].bectx, lks_device_put, &mine[r]);
		named += *mine[r].uuid != 0;
	}
	/* the same backend on every process: all name devices, or none does */
	if (!named) {
		rc = 0;
		goto out;
	}
	rc = lks_runner_all_ranks(R, mine, all);
	if (rc == 0 && lks_devices_check(all, R->W, why, sizeof(why)))
		rc = lks_err("%s", why);
	if (rc == 0 && R->first == 0)
		R->devices = lks_devices_text(all, R->W);
	if (rc == 0 && R->o->on_devices)
		R->o->on_devices(R->o->on_devices_arg, mine, R->L);
out:
	free(all);
	free(mine);
	return rc;
}

struct lks_devcomm_job {
	struct lks_runner *R;
	lks_comm **ends;        /* (L) the device ends made, or NULL where declined */
	int *rc;                /* (L) */
	char (*err)[512];       /* (L) */
	atomic_int first;       /* the rank index that failed first: the cause, where the
	                           others' failures are the abort it set off; -1: none */
};

static void lks_devcomm_task(void *arg, int task, int thread)
{
	struct lks_devcomm_job *j = arg;
	struct lks_runner *R = j->R;

	lks_devcomm_opts o = { .nlocal = R->L, .mode = R->run->allreduce,
	                       .timeout_s = R->o->timeout_s > 0 ? R->o->timeout_s
	                                                        : LKS_RUN_TIMEOUT_S };

	(void)thread;
	if ((j->rc[task] = lks_be_comm(R->be, R->ranks[task].bectx, R->ranks[task].comm, &o,
	                                &j->ends[task]))) {
		int none = -1;

		snprintf(j->err[task], sizeof(j->err[task]), "%s", lks_errmsg());
		atomic_compare_exchange_strong(&j->first, &none, task);
		/* the other ranks may wait for this one in a collective of the host's */
		lks_comm_abort(j->ends[task] ? j->ends[task] : R->ranks[task].comm, j->err[task]);
	}
}

/* Room for each rank's amax slots in its backend's memory (lks_amax_allreduce) */
static int lks_devcomm_amax(struct lks_runner *R)
{
	size_t bytes = 3 * (size_t)R->m.nlin * sizeof(float);

	for (int r = 0; r < R->L; r++)
		if (lks_be_alloc(R->ranks[r].be, R->ranks[r].bectx, bytes, (void **)&R->ranks[r].damax))
			return -1;
	return 0;
}

/* Where the ranks' memory is not the host's, the backend may offer a communicator on it
   (lks_be_comm: NCCL on the cuda backend), made by every rank at once in its own thread;
   the ranks then all-reduce their gradients where they are, else through the host
   (a rank's staged). allreduce = nccl needs one. An FSDP or tp run's groups are its
   sub-groups, seen from the host buffers of runner_fsdp.c and model_tp.c (lks_rank's
   hcomm). A planted fault whose communicator works on host memory (skip_allreduce: it
   keeps a rank's own gradient there; rs_drop_tail, ag_stale) keeps the host's ends; so do
   ranks that share a host-memory backend's context, on every process alike (a device
   backend's ranks never share one: lks_runner_contexts). */
static int lks_runner_devcomm(struct lks_runner *R)
{
	struct lks_devcomm_job j = { R, NULL, NULL, NULL, -1 };
	int nccl = R->run->allreduce == LKS_ALLREDUCE_NCCL, rc = -1;

	/* a process of the job with no rank takes no part; a run of one rank sums nothing
	   (lks_rank_allreduce), so it needs no device communicator, nor a working NCCL */
	if (R->L == 0 || R->W == 1)
		return 0;
	if (lks_be_host_memory(R->be) || lks_fault_host_comm(&R->run->inject)
	    || R->opened != R->L)
		return nccl ? lks_err("run '%s': allreduce = nccl needs a backend whose memory is a "
		                      "device's, a context per rank, and no planted fault in the "
		                      "communicator",
		                      R->run->name) : 0;
	j.ends = calloc((size_t)R->L, sizeof(*j.ends));
	j.rc = calloc((size_t)R->L, sizeof(*j.rc));
	j.err = calloc((size_t)R->L, sizeof(*j.err));
	if (!j.ends || !j.rc || !j.err) {
		lks_err("out of memory");
		goto out;
	}
	lks_pool_run(R->rank_pool, R->L, lks_devcomm_task, &j);
	for (int r = 0; r < R->L; r++)
		if (j.ends[r])
			R->ranks[r].comm = j.ends[r];  /* it took the host's end over (closed with it) */
	if (atomic_load(&j.first) >= 0) {
		int r = atomic_load(&j.first);

		lks_err("rank %d: %s", R->first + r, j.err[r]);
		goto out;
	}
	R->devcomm = j.ends[0] != NULL;
	if (R->devcomm && lks_devcomm_amax(R))
		goto out;
	if (nccl && !R->devcomm) {
		lks_err("run '%s': allreduce = nccl: backend '%s' offers no device communicator "
		        "here (one GPU per rank, built with NCCL)", R->run->name, R->be->name);
		goto out;
	}
	rc = 0;
out:
	free(j.ends);
	free(j.rc);
	free(j.err);
	return rc;
}

/* The run's ranks of this process (R->L of them, from R->first), each with its end of the
   communicator: every process of a job lays the run out, even one that hosts none. */
static int lks_runner_ranks(struct lks_runner *R, const lks_runner_opts *o)
{
	lks_comm **ends = calloc((size_t)R->W, sizeof(*ends));
	int rc = -1;

	if (!ends)
		return lks_err("out of memory");
	if (o->job ? lks_comm_group(o->job, R->W, &R->first, &R->L, ends)
	           : lks_comm_threads(R->L = R->W, ends))
		goto out;
	if (!(R->ranks = calloc((size_t)R->L + 1, sizeof(*R->ranks)))) {
		for (int r = 0; r < R->L; r++)
			lks_comm_close(ends[r]);
		R->L = 0;
		lks_err("out of memory");
		goto out;
	}
	for (int r = 0; r < R->L; r++)
		R->ranks[r].comm = ends[r];
	rc = 0;
out:
	free(ends);
	return rc;
}

static int lks_part_cmp(const void *a, const void *b)
{
	const lks_update_part *x = a, *y = b;

	return (x->off > y->off) - (x->off < y->off);
}

/* AdamW's parts of the parameters, one per tensor, sorted by offset: what a backend's
   update takes (the weight decay where the tensor has it) */
static int lks_runner_parts(struct lks_runner *R)
{
	const lks_optim_cfg *o = &R->c->optim;

	if (!(R->parts = calloc((size_t)R->m.nt + 1, sizeof(*R->parts))))
		return lks_err("out of memory");
	for (int i = 0; i < R->m.nt; i++)
		R->parts[i] = (lks_update_part){ R->m.t[i].off, R->m.t[i].n,
		                                 R->m.t[i].decay ? o->weight_decay : 0.0f };
	qsort(R->parts, (size_t)R->m.nt, sizeof(*R->parts), lks_part_cmp);
	return 0;
}

int lks_runner_init(struct lks_runner *R, const lks_case *c, const lks_run_cfg *run,
                    const lks_runner_opts *o)
{
	int global = c->model.batch * c->world_size;
	int threads = o->threads > 0 ? o->threads : lks_pool_cpus();
	float *init = NULL;  /* the initial parameters, on the host */

	memset(R, 0, sizeof(*R));
	R->o = o;
	R->c = c;
	R->run = run;
	R->W = run->world_size;
	/* the replicas split the batch: a tp group's ranks share theirs */
	int reps = run->tp > 1 ? R->W / run->tp : R->W;

	R->batch = global / reps;
	R->steps = o->steps > 0 ? o->steps : c->steps;
	R->warmup = lks_case_warmup(c, R->steps);
	if (global % reps)
		return lks_err("run '%s': %d replicas do not divide the global batch %d",
		               run->name, reps, global);
	if (lks_model_init(&R->m, &c->model)
	    || lks_data_init(&R->data, c->seed, c->model.vocab, c->model.seq)
	    || lks_runner_parts(R))
		return -1;
	if (lks_runner_ranks(R, o))
		return -1;
	if ((R->L > 1 && lks_pool_create(R->L, &R->rank_pool))
	    || (R->W == 1 && threads > 1 && lks_pool_create(threads, &R->gemm_pool)))
		return -1;
	R->counts = calloc(2 * (size_t)R->W, sizeof(size_t));
	R->outs = calloc((size_t)R->W, sizeof(*R->outs));
	R->rows = calloc((size_t)R->W, sizeof(*R->rows));
	R->sj.rows = calloc((size_t)R->W, sizeof(*R->rows));
	if (!R->counts || !R->outs || !R->rows || !R->sj.rows)
		return lks_err("out of memory");
	for (int r = 0; r < R->L; r++) {
		lks_rank *k = &R->ranks[r];

		k->R = R;
		k->own0 = 0;
		k->own1 = R->m.nparams;
		atomic_init(&k->task_failed, 0);
		k->host_tok = calloc(2 * (size_t)R->batch * (size_t)c->model.seq + 1, sizeof(int32_t));
		k->amax = calloc(3 * (size_t)R->m.nlin + 1, sizeof(float));
		if (!k->host_tok || !k->amax)
			return lks_err("out of memory");
	}
	if (lks_runner_contexts(R, o, threads) || lks_runner_devices(R))
		return -1;
	for (int r = 0; r < R->L; r++) {
		lks_rank *k = &R->ranks[r];
		const lks_backend *be = R->be;
		/* a planted fault wraps the seams of the rank it strikes: its backend, its end */
		int rc = lks_fault_plant_rank(&run->inject, R->first + r, &R->step, &be, &k->comm,
		                         &k->plant);

		/* ranks run as threads, each with a single-threaded GEMM: L threads in all */
		if (rc == 0)
			rc = lks_rank_init(k, R->first + r, &R->m, run, R->batch * c->model.seq,
			                   global * c->model.seq, be, k->bectx);

		if (rc == 0)
			R->ranks[r].tr.off = o->no_trace;
		if (rc || lks_runner_optim_init(R, r, &init)) {
			free(init);
			return -1;
		}
	}
	free(init);
	if (lks_runner_devcomm(R))
		return -1;
	/* one rank: an idle-priority thread measures kept tensors and writes the store in the
	   gaps the GEMM threads leave; many ranks keep every core busy already, each tracing
	   in its own thread */
	if (R->W == 1 && R->L == 1) {
		R->pool1 = o->backend ? o->pool : R->gemm_pool;
		if (threads > 1 && lks_bg_create(&R->bg))
			return -1;
	}
	if (R->bg && !o->no_trace && lks_rank_trace_on(&R->ranks[0], R->bg))
		return -1;
	R->b1pow = R->b2pow = 1.0f;
	return 0;
}

