/*
 * suite.c: one suite, case by case and run by run (suite.h): the runs chosen, each
 * backend's fingerprint, every run trained (or imported) and stored with its GPU health,
 * the checks evaluated, night over night, and one exit code agreed by every process.
 */
#include "harness/suite/suite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/case.h"
#include "harness/engine/runner.h"
#include "harness/store/fingerprint.h"
#include "harness/store/golden.h"
#include "harness/store/gpu_health.h"
#include "harness/import/import.h"
#include "harness/store/trace_store.h"
#include "harness/suite/job.h"
#include "harness/verify/nightly.h"
#include "harness/verify/sqnr.h"
#include "kernels/err.h"

static int lks_listed(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

/* --run names the runs; else --check names them through the checks kept; else all run. */
static int lks_selected(const lks_suite_opts *a, const lks_case *c, const char *run)
{
	if (a->only.n)
		return lks_listed(a->only.v, a->only.n, run);
	for (int i = 0; a->checks.n && i < c->nchecks; i++)
		if (!strcmp(c->checks[i].a, run) || !strcmp(c->checks[i].b, run))
			return 1;
	return a->checks.n == 0;
}

/* Keeps the checks --check names (all without it); a case left with none is dropped. A
   --check or --run name that no (kept) case has is bad usage: it selects nothing, and the
   verdict asked for would be a silent pass. */
static int lks_keep_checks(const lks_suite_opts *a, lks_case *cases, int *ncases)
{
	const char *unknown;
	int n = 0;

	if ((unknown = lks_cases_unknown(cases, *ncases, a->checks.v, a->checks.n, 1)))
		return lks_usage("run: no case has a check named %s", unknown);
	for (int i = 0; a->checks.n && i < *ncases; i++) {
		lks_case *c = &cases[i];
		int m = 0;

		for (int j = 0; j < c->nchecks; j++)
			if (lks_listed(a->checks.v, a->checks.n, c->checks[j].name))
				c->checks[m++] = c->checks[j];
		c->nchecks = m;
		if (m)
			cases[n++] = *c;
		else
			lks_case_release(c);
	}
	*ncases = a->checks.n ? n : *ncases;
	if ((unknown = lks_cases_unknown(cases, *ncases, a->only.v, a->only.n, 0)))
		return lks_usage("run: no case%s has a run named %s",
		                 a->checks.n ? " that --check kept" : "", unknown);
	return 0;
}

/* A planted fault at a step that --steps leaves out would pass unseen: say so, and count
   it (check: a version whose fault never acted was not tested). */
static void lks_warn_unplanted(const lks_suite_opts *a, const lks_case *cases, int ncases,
                               lks_check_tally *t)
{
	for (int i = 0; a->steps && i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			const lks_run_cfg *r = &cases[i].runs[j];

			if (r->inject.kind != LKS_FAULT_NONE && r->inject.step >= a->steps
			    && lks_selected(a, &cases[i], r->name)) {
				fprintf(stderr, "lockstep: warning: %s / %s: the fault at step %d will not "
				        "be planted: --steps %d stops before it\n", cases[i].name, r->name,
				        r->inject.step, a->steps);
				t->unplanted++;
			}
		}
}

/* What --steps N leaves a case: a warmup it wrote that is longer (the whole run warmed
   up), a resume_from after step N - 1 (nothing to train, found when the run began, after
   earlier ones were stored). Said before anything is trained. */
static int lks_steps_fit(const lks_suite_opts *a, const lks_case *cases, int ncases)
{
	for (int i = 0; a->steps && i < ncases; i++) {
		const lks_case *c = &cases[i];

		if (lks_case_warmup(c, a->steps) > a->steps)
			return lks_usage("run: %s: warmup %d is longer than --steps %d", c->path,
			                 c->optim.warmup, a->steps);
		for (int j = 0; j < c->nruns; j++)
			if (c->runs[j].resume_from[0] && c->runs[j].resume_step + 1 >= a->steps
			    && lks_selected(a, c, c->runs[j].name))
				return lks_usage("run: %s: run '%s' resumes after step %d, and --steps %d "
				                 "leaves it no step to train", c->path, c->runs[j].name,
				                 c->runs[j].resume_step, a->steps);
	}
	if (a->resume_run && a->steps && a->resume_step + 1 >= a->steps)
		return lks_usage("run: --resume-from after step %d, and --steps %d leaves no step to "
		                 "train", a->resume_step, a->steps);
	return 0;
}

/* A backend's describe() key as "backend.KEY" (its name is stored with the run). */
static void lks_fingerprint_put(void *arg, const char *key, const char *value)
{
	char k[40];

	if (!strcmp(key, "backend"))
		return;
	snprintf(k, sizeof(k), "backend.%s", key);
	lks_fingerprint_add(arg, k, "%s", value);
}

/* The fingerprint with the job's processes and what a backend other than the default says
   of itself (describe: a GPU's name, UUID, SM count, compute capability, ...), into *json
   (collective: every process calls it; NULL but on the root, or when out of memory). A
   backend that cannot be opened gives -1, its reason in lks_err, and no fingerprint. */
static int lks_fingerprint_json(const lks_job *job, const lks_backend *be, char **json)
{
	lks_fingerprint fp;
	size_t len = 0;
	void *ctx;
	FILE *f;
	int rc = 0;

	*json = NULL;
	lks_fingerprint_collect(&fp);
	if (be != lks_backend_default() && job->root) {
		if ((rc = lks_be_open(be, 1, &ctx)) == 0) {
			lks_be_describe(be, ctx, lks_fingerprint_put, &fp);
			lks_be_close(be, ctx);
		}
	}
	if (lks_job_fingerprint(job, &fp) || !job->root || rc || !(f = open_memstream(json, &len)))
		return rc;
	lks_fingerprint_print(&fp, f, 1);
	fclose(f);
	return 0;
}

/* The backend run r trains on: its own (backend = NAME), else the invocation's. */
static const lks_backend *lks_run_backend(const lks_suite_opts *a, const lks_run_cfg *r)
{
	const lks_backend *be = *r->backend ? lks_backend_find(r->backend) : NULL;

	return be ? be : a->backend ? a->backend : lks_backend_default();
}

/* A backend the selected runs use: its fingerprint, stored with each of its runs, or why
   it cannot be opened here (a cuda run on a machine without a GPU). */
struct lks_be_use {
	const lks_backend *be;
	char *fingerprint;        /* NULL but on the root */
	int unavailable;          /* it did not open (on any process): its runs are left out */
	char why[512];            /* the driver's reason (the root's) */
};

/* the registry has a handful; more distinct backends than this cannot be asked for */
#define LKS_MAX_BACKENDS 8

/* The use of backend be among uses[0..n), or NULL. */
static struct lks_be_use *lks_be_use_of(struct lks_be_use *uses, int n, const lks_backend *be)
{
	for (int i = 0; i < n; i++)
		if (uses[i].be == be)
			return &uses[i];
	return NULL;
}

/* Every backend the selected runs use, in the order they are first met (collective: the
   same on every process), each opened once on the root for its describe() keys. A
   backend that does not open is no error here: its runs are left out, and the command
   ends with exit 3 after the others have run and been checked. */
static int lks_backends_used(const lks_suite_opts *a, const lks_job *job,
                             const lks_case *cases, int ncases, struct lks_be_use *uses,
                             int *nuses)
{
	int v[LKS_MAX_BACKENDS] = { 0 }, oom = 0;

	*nuses = 0;
	for (int i = 0; i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			const lks_backend *be = lks_run_backend(a, &cases[i].runs[j]);
			struct lks_be_use *u;

			if (!lks_selected(a, &cases[i], cases[i].runs[j].name)
			    || lks_be_use_of(uses, *nuses, be) || *nuses == LKS_MAX_BACKENDS)
				continue;
			u = &uses[(*nuses)++];
			u->be = be;
			if (lks_fingerprint_json(job, be, &u->fingerprint)) {
				v[u - uses] = 1;
				snprintf(u->why, sizeof(u->why), "%s", lks_errmsg());
			} else {
				oom |= job->root && !u->fingerprint;
			}
		}
	/* every process agrees, also when the root is out of memory */
	if (lks_job_agree(job, v, *nuses))
		return -1;
	if (oom)
		return lks_err("out of memory");
	for (int i = 0; i < *nuses; i++)
		uses[i].unavailable = v[i];
	return 0;
}

/* --gemm set in the trained runs that name no gemm; then a selected run that asks for what
   its backend does not have (lks_run_backend_fits: the library's GEMM or NCCL's all-reduce
   on cpu) is bad usage, named by its file and line, before anything runs. */
static int lks_gemm_settle(const lks_suite_opts *a, lks_case *cases, int ncases)
{
	for (int i = 0; i < ncases; i++)  /* --gemm: the runs that name none */
		for (int j = 0; a->gemm >= 0 && j < cases[i].nruns; j++)
			if (!cases[i].runs[j].gemm_given && !cases[i].runs[j].import_fmt[0])
				cases[i].runs[j].gemm = a->gemm;
	for (int i = 0; i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			const lks_run_cfg *r = &cases[i].runs[j];

			if (!lks_selected(a, &cases[i], r->name)
			    || !lks_run_backend_fits(r, lks_run_backend(a, r)))
				continue;
			return lks_usage("run: %s:%d: %s", cases[i].path, r->line, lks_errmsg());
		}
	return 0;
}

/* Every selected imported run's log is there (a file, or a folder of them): one that is not
   is bad input, said before the database is made rather than after earlier runs were
   stored. Only the root reads logs. */
static int lks_imports_there(const lks_suite_opts *a, const lks_case *cases, int ncases)
{
	char path[1024];

	for (int i = 0; i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			const lks_run_cfg *r = &cases[i].runs[j];

			if (!r->import_fmt[0] || !lks_selected(a, &cases[i], r->name))
				continue;
			if (lks_case_import_path(&cases[i], r, path, sizeof(path)))
				return lks_usage("run: %s", lks_errmsg());
			if (access(path, F_OK))
				return lks_usage("run: %s:%d: run '%s': cannot open '%s': %s",
				                 cases[i].path, r->line, r->name, path, strerror(errno));
		}
	return 0;
}

/* The exit code and the verdicts as process 0 has them, given to every process of the job
   (a process that failed on its own makes it 3), so that mpirun or srun gets one status. */
static int lks_agree(const lks_job *job, int rc, lks_check_tally *t)
{
	int v[] = { rc, t->total, t->passed, t->failed, t->expected_fail, t->unsupported,
	            t->skipped, t->bad_input, t->unplanted };

	if (lks_job_agree(job, v, (int)(sizeof(v) / sizeof(v[0])))) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		return LKS_EXIT_INFRA;
	}
	*t = (lks_check_tally){ v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8] };
	return v[0];
}

/* The root's last words: night over night, the verdicts counted, the observer's, the exit
   code (the others, tally NULL: 0, they wait for the root's). */
static int lks_suite_summary(const lks_suite_opts *a, const lks_suite_observer *obs,
                             lks_store *store, int64_t suite_id, const lks_check_tally *tally)
{
	FILE *out = obs->verdicts;
	lks_nightly_tally night;

	if (!tally)
		return LKS_EXIT_OK;
	if (lks_nightly_compare(store, suite_id, a->db, out, &night)) {
		fprintf(stderr, "lockstep: night over night: %s\n", lks_errmsg());
		return LKS_EXIT_INFRA;
	}
	fprintf(out, "%d checks: %d passed, %d failed, %d expected failures, %d unsupported",
	        tally->total, tally->passed, tally->failed, tally->expected_fail,
	        tally->unsupported);
	if (tally->skipped)
		fprintf(out, ", %d skipped", tally->skipped);
	fprintf(out, "\nsuite %lld stored in '%s'\n", (long long)suite_id, a->db);
	fflush(out);
	if (obs->on_stored && obs->on_stored(obs->arg, store, suite_id, 0)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		return LKS_EXIT_INFRA;
	}
	if (tally->bad_input) {
		fprintf(stderr, "lockstep: %d check%s had bad input: a golden file or the check's "
		        "keys (see above)\n", tally->bad_input, tally->bad_input > 1 ? "s" : "");
		return LKS_EXIT_USAGE;
	}
	if (night.silent && !a->same_fp_warn)
		fprintf(stderr, "lockstep: %d run%s changed since the earlier suite with the same "
		        "fingerprint (see ALARM above; --same-fingerprint-change warn to not fail)\n",
		        night.silent, night.silent > 1 ? "s" : "");
	return tally->failed || (night.silent && !a->same_fp_warn) ? LKS_EXIT_FAIL : LKS_EXIT_OK;
}

/* GPU health around a run, in every process: its GPUs read before and after (gpu_health.h) */
struct lks_health_watch {
	lks_nvml *nvml;           /* this process's NVML, present or absent */
	lks_gpu_health *mine;     /* what this process read of the run's GPUs */
};

/* The runner's on_devices: this process's ranks' GPUs, named, and read before the first
   step (the runner does not call it where the backend names no device: cpu) */
static void lks_health_on_devices(void *arg, const lks_rank_device *d, int n)
{
	struct lks_health_watch *w = arg;

	for (int i = 0; i < n; i++)
		if (lks_gpu_health_use(w->mine, d[i].uuid, d[i].ordinal, d[i].rank, d[i].host))
			fprintf(stderr, "lockstep: warning: %s\n", lks_errmsg());
	lks_gpu_health_before(w->nvml, w->mine);
}

/* After the run, in every process (collective): its GPUs read again and sent to process
   0, which stores what every process read with run_id; what rose into buf ("" elsewhere). */
static int lks_health_end(const lks_job *job, struct lks_health_watch *w, lks_store *store,
                          int64_t run_id, char *buf, size_t size)
{
	lks_gpu_health *all = NULL;
	int n = 0, rc;

	*buf = '\0';
	lks_gpu_health_after(w->nvml, w->mine);
	rc = lks_gpu_health_gather(job->comm, w->mine, &all, &n);
	if (rc == 0 && job->root)
		rc = lks_gpu_health_store(store, run_id, all, n, buf, size);
	free(all);
	return rc;
}

/* Run r of case c is imported (import = FMT:PATH), not trained: its log stored as one run
   of the suite in one transaction (import/import.h). 0, or the exit code: a bad log is bad
   input (exit 2, nothing of it stored). */
static int lks_suite_import(const lks_case *c, const lks_run_cfg *r, lks_store *store,
                            int64_t suite_id, const lks_suite_observer *obs, int64_t *run_id)
{
	lks_import_opts o = { lks_import_format_find(r->import_fmt), c->name, r->name, suite_id,
	                      c->path, c->text, r->import_ranks[0] ? r->import_ranks : NULL,
	                      NULL };
	lks_import_tag_map *map = NULL;
	lks_import_result res;
	char path[1024], dir[1024], note[2048];
	const char *paths[1] = { path }, *slash = strrchr(c->path, '/');
	int rc;

	/* a map's @FILE, as the log's PATH, relative to the case file's folder */
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - c->path) : 0, c->path);
	if (lks_case_import_path(c, r, path, sizeof(path)))
		rc = LKS_E_BAD_INPUT;
	else if (!o.fmt)  /* the case's validation lets none through */
		rc = -1;
	else if (!r->import_tag_map[0]
	         || !(rc = lks_import_tag_map_parse(r->import_tag_map, slash ? dir : NULL, &map))) {
		o.tag_map = map;
		rc = lks_import_files(store, &o, paths, 1, &res);
	}
	lks_import_tag_map_free(map);
	if (rc) {
		fprintf(stderr, "lockstep: %s / %s: import: %s; nothing stored\n", c->name, r->name,
		        lks_errmsg());
		return lks_exit_code(rc);
	}
	if (lks_import_unread_note(&res, note, sizeof(note)))
		fprintf(stderr, "lockstep: %s / %s: import: %s\n", c->name, r->name, note);
	if (obs->on_run)
		obs->on_run(obs->arg, &(lks_suite_line){ .case_name = c->name, .run_name = r->name,
		                                        .what = o.fmt->name,
		                                        .imported = o.fmt->tensor_parse ? 2 : 1,
		                                        .world_size = res.world_size,
		                                        .steps = res.steps,
		                                        .records = res.counts.records,
		                                        .ignored = res.counts.ignored });
	*run_id = res.run_id;
	return 0;
}

/* A suite under way: what every case and run shares. */
struct lks_suite {
	const lks_suite_opts *a;
	const lks_suite_observer *obs;
	lks_job job;
	lks_store *store;         /* NULL but on the root */
	int64_t suite_id;
	struct lks_be_use uses[LKS_MAX_BACKENDS];
	int nuses;
	struct lks_health_watch watch;
	lks_check_opts copts;
	lks_check_tally tally;
	int left_out;             /* runs whose backend cannot be opened here */
	int failed;               /* runs that failed (out of memory, ...) in a process alone */
	const char *at;           /* the case being run */
};

/* Where run j of case c starts (resume_from: the state its run of the case kept, whose
   id is in run_ids) and the steps whose state it keeps (those the selected runs after it
   resume from: up to cap) into o. */
static void lks_suite_states(const lks_case *c, int j, const int *selected,
                             const int64_t *run_ids, lks_runner_opts *o, int *at, int cap)
{
	const lks_run_cfg *run = &c->runs[j];

	for (int k = 0; run->resume_from[0] && k < j; k++)
		if (!strcmp(c->runs[k].name, run->resume_from)) {
			o->resume_run = run_ids[k];
			o->resume_step = run->resume_step;
			o->resume_name = run->resume_from;
		}
	for (int k = j + 1; k < c->nruns && o->nstate_at < cap; k++)
		if (selected[k] && !strcmp(c->runs[k].resume_from, run->name))
			at[o->nstate_at++] = c->runs[k].resume_step;
	o->state_at = at;
}

/* Run j of case c trained (or imported) and stored, its id into run_ids[j] (root). 0, or
   the exit code. */
static int lks_suite_one(struct lks_suite *s, const lks_case *c, int j, lks_sqnr_pairs *pairs,
                         const int *selected, int64_t *run_ids)
{
	int64_t *run_id = &run_ids[j];
	const lks_suite_opts *a = s->a;
	const lks_run_cfg *run = &c->runs[j];
	const lks_backend *be = lks_run_backend(a, run);
	const struct lks_be_use *use = lks_be_use_of(s->uses, s->nuses, be);
	lks_runner_opts o = {
		.steps = a->steps, .threads = a->threads, .suite_id = s->suite_id,
		.progress = s->job.root ? s->obs->progress : NULL,
		.progress_tty = s->obs->progress_tty,
		.fingerprint = use ? use->fingerprint : NULL, .sets = a->sets.v,
		.nsets = a->sets.n,
		.combo = a->combo, .job = s->job.comm,
		/* the process's place on its host (its ranks' devices) and the bound of every
		   wait on another rank's device collective */
		.local_rank = s->job.launch.local_rank, .timeout_s = a->timeout,
		/* the default on the runner's own threads */
		.backend = be == lks_backend_default() ? NULL : be,
		.on_devices = lks_health_on_devices, .on_devices_arg = &s->watch,
	};
	lks_run_result res;
	char health[2048];
	int at[64];  /* the steps kept: runs of a case resume from few */
	int rc;

	lks_suite_states(c, j, selected, run_ids, &o, at, 64);
	o.state_every = a->state_every;
	if (a->resume_run) {  /* --resume-from: the one run selected */
		o.resume_run = a->resume_run;
		o.resume_step = a->resume_step;
		o.resume_name = NULL;
	}
	if (run->resume_from[0] && !o.resume_run) {  /* the run it resumes from was not stored */
		if (s->job.root)
			fprintf(stderr, "lockstep: %s / %s: left out: run '%s' it resumes from was not "
			        "trained here\n", c->name, run->name, run->resume_from);
		return 0;
	}
	if (run->import_fmt[0])
		return s->job.root ? lks_suite_import(c, run, s->store, s->suite_id, s->obs, run_id)
		                   : 0;
	if (!use || use->unavailable) {  /* stored failed, untrained: its checks say so; exit 3 */
		const char *why = use ? use->why : "too many backends";
		int64_t id;  /* not *run_id: its checks are skipped, as a failed run's */

		s->left_out++;
		if (!s->job.root)
			return 0;
		fprintf(stderr, "lockstep: %s / %s: left out: backend '%s' cannot be opened: %s\n",
		        c->name, run->name, be->name, why);
		return lks_run_store_left_out(c, run, s->store, &o, be->name, why, &id)
		       ? LKS_EXIT_INFRA : 0;
	}
	lks_sqnr_hook(pairs, j, &o);
	lks_gpu_health_reset(s->watch.mine);
	if ((rc = lks_run(c, run, s->store, &o, &res)) != 0
	    || lks_health_end(&s->job, &s->watch, s->store, res.run_id, health, sizeof(health))
	    || lks_sqnr_end_run(pairs, j, res.run_id, s->store)) {
		fprintf(stderr, "lockstep: %s / %s: %s\n", c->name, run->name, lks_errmsg());
		/* a process alone goes on with the other runs, as for a backend that cannot be
		   opened: their verdicts and the JUnit file are what a night needs; this one's
		   checks are skipped and the exit is 3. In a job of processes one may be gone or
		   wedged in a collective, so the job ends (bad input ends it everywhere). */
		if (s->job.comm || (rc && lks_exit_code(rc) == LKS_EXIT_USAGE))
			return rc ? lks_exit_code(rc) : LKS_EXIT_INFRA;
		lks_sqnr_drop_run(pairs, j);  /* its partner compares with nothing */
		s->failed++;
		return 0;
	}
	if (!s->job.root) {  /* it trained its ranks; process 0 stores and says */
		*run_id = -1;     /* trained, its id process 0's (a run resuming from it) */
		return 0;
	}
	if (s->obs->on_run)
		s->obs->on_run(s->obs->arg, &(lks_suite_line){
			.case_name = c->name, .run_name = run->name, .what = lks_recipe_name(run->recipe),
			.world_size = run->world_size, .steps = res.steps, .first_step = res.first_step,
			.first_loss = res.first_loss,
			.last_loss = res.last_loss, .seconds = res.seconds,
			.nonfinite_events = res.nonfinite_events });
	*run_id = res.run_id;
	if (*health)
		fprintf(stderr, "lockstep: %s / %s: GPU health:\n%s", c->name, run->name, health);
	return 0;
}

/* Case c's selected runs, then its checks (root). 0, or the exit code. */
static int lks_suite_case(struct lks_suite *s, const lks_case *c)
{
	int64_t *run_ids = calloc((size_t)c->nruns + 1, sizeof(*run_ids));
	int *selected = calloc((size_t)c->nruns + 1, sizeof(*selected));
	lks_sqnr_pairs *pairs = NULL;
	int rc = LKS_EXIT_INFRA;

	if (!run_ids || !selected) {
		fprintf(stderr, "lockstep: out of memory\n");
		goto out;
	}
	for (int j = c->nruns - 1; j >= 0; j--) {  /* and the runs the selected resume from */
		selected[j] |= lks_selected(s->a, c, c->runs[j].name);
		for (int k = 0; selected[j] && k < j; k++)
			selected[k] |= !strcmp(c->runs[k].name, c->runs[j].resume_from);
	}
	if (s->job.root && lks_sqnr_begin(c, selected, &pairs)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		goto out;
	}
	for (int j = 0; j < c->nruns; j++)
		if (selected[j] && (rc = lks_suite_one(s, c, j, pairs, selected, run_ids)) != 0)
			goto out;
	rc = LKS_EXIT_INFRA;
	if (s->job.root && lks_check_case(s->store, s->suite_id, c, run_ids, &s->copts,
	                                  s->obs->verdicts, &s->tally)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		goto out;
	}
	rc = 0;
out:
	free(run_ids);
	free(selected);
	lks_sqnr_free(pairs);
	return rc;
}

/* --resume-from starts one run: the selection must be one (--run NAME, one case), its
   fault one that acts in the steps it trains. */
static int lks_resume_one(const lks_suite_opts *a, const lks_case *cases, int ncases)
{
	const lks_run_cfg *one = NULL;
	int n = 0;

	for (int i = 0; a->resume_run && i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++)
			if (lks_selected(a, &cases[i], cases[i].runs[j].name)
			    && !cases[i].runs[j].import_fmt[0]) {
				one = &cases[i].runs[j];
				n++;
			}
	if (a->resume_run && n != 1)
		return lks_usage("run: --resume-from starts one run, and %d are selected: choose it "
		                 "with --run NAME (and one case)", n);
	if (one && lks_fault_fits_resumed(&one->inject, a->resume_step))
		return lks_usage("run: --resume-from %lld@%d: run '%s': %s", (long long)a->resume_run,
		                 a->resume_step, one->name, lks_errmsg());
	return 0;
}

/* Every process: the cases loaded and settled, the database opened and the suite begun
   (root), NVML opened; 0 or the exit code, agreed. */
static int lks_suite_begin(struct lks_suite *s, lks_case **cases, int *ncases)
{
	const lks_suite_opts *a = s->a;
	lks_nvml *nvml = NULL;
	int rc = 0, open_rc = 0;

	/* every case is valid before anything is written; every process loads them, process
	   0 says what is wrong (the job agrees on the exit below) */
	lks_usage_quiet(!s->job.root);
	if (lks_cases_load(a->inputs.v, a->inputs.n, a->sets.v, a->sets.n, cases, ncases)) {
		if (s->job.root)
			fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		rc = LKS_EXIT_USAGE;
	} else if (lks_keep_checks(a, *cases, ncases) || lks_gemm_settle(a, *cases, *ncases)
	           || lks_resume_one(a, *cases, *ncases) || lks_steps_fit(a, *cases, *ncases)) {
		rc = LKS_EXIT_USAGE;
	} else if (s->job.root && lks_imports_there(a, *cases, *ncases)) {
		rc = LKS_EXIT_USAGE;
	} else if (s->job.root) {
		lks_warn_unplanted(a, *cases, *ncases, &s->tally);
		if ((open_rc = lks_store_open(a->db, &s->store)) != 0
		    || lks_store_begin_suite(s->store, a->command, &s->suite_id)) {
			fprintf(stderr, "lockstep: %s\n", lks_errmsg());
			/* a file that is not ours: bad input */
			rc = open_rc == LKS_E_BAD_INPUT ? LKS_EXIT_USAGE : LKS_EXIT_INFRA;
		}
	}
	/* every process reads its own GPUs; absent is no error */
	if (rc == 0 && (lks_nvml_open(NULL, &nvml)
	                || !(s->watch.mine = malloc(sizeof(*s->watch.mine))))) {
		fprintf(stderr, "lockstep: out of memory\n");
		rc = LKS_EXIT_INFRA;
	}
	s->watch.nvml = nvml;
	/* all go on, or none */
	return lks_agree(&s->job, rc, &s->tally);
}

int lks_suite_run(const lks_suite_opts *a, const lks_suite_observer *obs, lks_check_tally *t)
{
	struct lks_suite s = { .a = a, .obs = obs, .job = { .root = 1 } };
	lks_case *cases = NULL;
	int ncases = 0, rc, ended = 0;

	memset(t, 0, sizeof(*t));
	s.copts = (lks_check_opts){ .golden_dir = lks_golden_dir(a->golden), .db = a->db };
	if ((rc = lks_job_start(a->timeout, &s.job)) != 0
	    || (rc = lks_suite_begin(&s, &cases, &ncases)) != 0)
		goto out;
	rc = LKS_EXIT_INFRA;
	if (lks_backends_used(a, &s.job, cases, ncases, s.uses, &s.nuses)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		goto out;
	}
	for (int i = 0; i < ncases; i++)
		if (s.at = cases[i].name, (rc = lks_suite_case(&s, &cases[i])) != 0)
			goto out;
	rc = lks_suite_summary(a, obs, s.store, s.suite_id, s.job.root ? &s.tally : NULL);
	if (s.left_out) {
		if (s.job.root)
			fprintf(stderr, "lockstep: %d run%s left out: %s backend cannot be opened here "
			        "(see above); the other runs and their checks are stored\n", s.left_out,
			        s.left_out > 1 ? "s were" : " was", s.left_out > 1 ? "their" : "its");
		rc = LKS_EXIT_INFRA;
	}
	if (s.failed) {
		fprintf(stderr, "lockstep: %d run%s failed (see above); the other runs and their "
		        "checks are stored\n", s.failed, s.failed > 1 ? "s" : "");
		rc = LKS_EXIT_INFRA;
	}
	rc = lks_agree(&s.job, rc, &s.tally);
	ended = 1;
out:
	/* whatever the verdict, the suite is no longer written: prune may take it. Where
	   this fails (a full disk), prune waits a day, as for a writer killed. A suite that
	   stopped before its end (bad input in a case, an import that failed) says so, and
	   the JUnit file holds what it stored and that it stopped. */
	if (s.store && s.suite_id) {
		lks_store_end_suite(s.store, s.suite_id, ended ? 0 : rc ? rc : LKS_EXIT_INFRA);
		if (!ended && s.job.root)
			lks_suite_say_stopped(obs, s.store, s.suite_id, rc ? rc : LKS_EXIT_INFRA,
			                      s.at, s.failed, a->db);
	}
	*t = s.tally;
	lks_job_end(&s.job);
	lks_cases_release(cases, ncases);
	lks_store_close(s.store);
	lks_nvml_close(s.watch.nvml);
	free(s.watch.mine);
	for (int i = 0; i < s.nuses; i++)
		free(s.uses[i].fingerprint);
	return rc;
}
