/*
 * cmd_run.c: 'lockstep run': run every run of each case, store the traces, then evaluate
 * the case's checks on them and store their verdicts (harness/verify/check.h).
 *
 * All case files are parsed and validated before the database is opened, so a bad case
 * file stops the command (exit 2, file:line) with nothing written. A failing check is a
 * verdict: the command goes on with the next case and exits 1 at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "harness/base/strbuf.h"
#include "harness/cli/cmd.h"
#include "harness/cli/job.h"
#include "harness/store/fingerprint.h"
#include "harness/report/junit.h"
#include "harness/store/golden.h"
#include "harness/store/gpu_health.h"
#include "harness/import/import.h"
#include "harness/engine/runner.h"
#include "harness/verify/nightly.h"
#include "harness/verify/sqnr.h"
#include "harness/store/trace_store.h"
#include "kernels/backend.h"
#include "kernels/err.h"

static const char lks_run_usage[] =
	"usage: lockstep run [options] CASE|DIR...\n"
	"\n"
	"Trains every run of each case (a DIR means all its *.ini) step by step and stores\n"
	"loss, gradient norm, learning rate and per-tensor statistics and hashes of every step\n"
	"and rank in an SQLite database. A run is stored as 'incomplete' until its last step is\n"
	"in, so an interrupted run never passes for a finished one. After the runs of a case,\n"
	"its checks are evaluated and their verdicts stored; a failure names the first step,\n"
	"tensor and rank where the runs diverge. A check whose runs were left out by --run is\n"
	"skipped; an sqnr check compares the gradients of its two runs while both are made. A golden\n"
	"check compares a run with its golden file, GOLDEN/<class>/<case>/<run>.tsv, made by\n"
	"'lockstep golden update'; a corrupt golden file is bad input (exit 2).\n"
	"\n"
	"options:\n";

static const char lks_run_tail[] =
	"\n"
	"example:\n"
	"  lockstep run cases/ --db nightly.db\n"
	"  lockstep run cases/ac_neutral.ini --steps 5 --set model.layers=1\n"
	"  mpirun -np 2 lockstep run cases/    (or srun -n 2 ...)\n"
	"\n"
	"processes: started by mpirun or srun (recognised from the environment), lockstep runs\n"
	"  as a job of processes: a run of world size W has its ranks laid out over them in\n"
	"  blocks, as threads of each (2 processes x 2 threads is world size 4), with the same\n"
	"  bits as threads alone. Process 0 owns the database and prints; the others only\n"
	"  train. A process that dies or hangs ends the job (exit 3, the run 'incomplete').\n"
	"\n"
	"night over night: when the database holds an earlier suite, each run is compared\n"
	"  with the same case and run of the latest earlier suite made with the same settings\n"
	"  (recipe, options and --set overrides, backend, world size, steps, seed, combo):\n"
	"  unchanged (bit for bit), changed (the first divergence), new or gone, with the\n"
	"  fingerprint keys that differ; the verdicts are stored and printed, changes with an\n"
	"  equal fingerprint first\n"
	"\n"
	"environment: LOCKSTEP_INJECT='SPEC' plants a fault in the runs it fits, as a run's\n"
	"  'inject = SPEC' does (cases/README.md, Faults), e.g.\n"
	"  LOCKSTEP_INJECT='nan step=2 rank=0 tensor=blocks.0.mlp.up.out run=fp8'\n"
	"\n"
	"exit codes: 0 every run finished and every check passed (or failed as expected),\n"
	"            1 a check failed (or passed where it was expected to fail),\n"
	"            2 bad usage or a bad case file (nothing is written), or a bad golden\n"
	"              file (the runs and verdicts are stored),\n"
	"            3 infrastructure failure (database, memory), or a run's backend cannot be\n"
	"              opened here (a cuda run without a GPU): that run is left out, nothing\n"
	"              of it stored, its checks skipped; the other runs and checks go on\n";

struct lks_run_args {
	const char *db, *junit, *combo;
	const char *golden;       /* --golden DIR; NULL: not given */
	const lks_backend *backend;  /* --backend NAME; NULL: the default */
	int gemm;                 /* --gemm: an lks_gemm_impl; -1: not given */
	int steps, threads, quiet, timeout;
	int same_fp_warn;         /* --same-fingerprint-change warn */
	lks_opt_list sets, only, inputs, checks;
};

/* --backend NAME: the registry names the ones this build has */
static int lks_run_backend_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                               const char *arg)
{
	struct lks_run_args *a = cmd->ctx;

	(void)o; (void)name;
	if (!(a->backend = lks_backend_find(arg)))
		return lks_usage("run: %s", lks_errmsg());
	return 0;
}

static const char *const lks_gemm_choices[] = { "reference", "cublaslt", NULL };
static const char *const lks_fail_warn[] = { "fail", "warn", NULL };

/* 0: go on; LKS_OPT_HELP: help was printed; else an exit code */
static int lks_run_parse(int argc, char **argv, struct lks_run_args *a)
{
	int gemm = -1, rc;
	const lks_option opts[] = {
		LKS_OPT_PATH("--db", "FILE", &a->db,
		             "the database (default lockstep.db; created if missing)"),
		LKS_OPT_CALL("--backend", "NAME", lks_run_backend_opt,
		             "where to run: cpu, the bit-exact reference (default), or cuda (a\n"
		             "build with the CUDA Toolkit, on a GPU: the CPU's bits with the\n"
		             "reference GEMM, cuBLASLt's with a run's gemm = cublaslt); a run\n"
		             "with its own 'backend = NAME' runs there whatever this says"),
		LKS_OPT_CHOICE("--gemm", "IMPL", &gemm, lks_gemm_choices,
		               "the GEMM of every trained run without its own 'gemm =': reference\n"
		               "(default) or cublaslt, production mode on --backend cuda; unlike\n"
		               "--set, the runs stay the case's (golden update takes them)"),
		LKS_OPT_INT("--steps", "N", &a->steps, 1, 1 << 30, "override the case's steps"),
		LKS_OPT_LIST("--set", "S.K=V", &a->sets,
		             "override a case key, e.g. --set model.hidden=512,\n"
		             "--set run.fp8.recipe=fp8_tensorwise (repeatable); run.*.K sets\n"
		             "it in every run, e.g. --set 'run.*.gemm=cublaslt'"),
		LKS_OPT_LIST("--run", "NAME", &a->only,
		             "only the runs with this name (repeatable; a name no case has\n"
		             "is bad usage)"),
		LKS_OPT_LIST("--check", "NAME", &a->checks,
		             "only the checks with this name (repeatable): a case without one\n"
		             "is left out, and without --run only the runs they compare train"),
		LKS_OPT_STRING("--combo", "NAME", &a->combo,
		               "store the runs under this combo name (matrix, bisect and reduce\n"
		               "give it to each probe)"),
		LKS_OPT_INT("--threads", "N", &a->threads, 1, 1024,
		            "GEMM threads of single-rank runs (default: all cores)"),
		LKS_OPT_INT("--timeout", "S", &a->timeout, 1, 1 << 30,
		            "how long a rank waits for the others (under mpirun or srun, and\n"
		            "in every GPU collective: joining NCCL, each all-reduce) before\n"
		            "it ends the run and the job, exit 3 (default 600 seconds)"),
		LKS_OPT_PATH("--golden", "DIR", &a->golden,
		             "where golden files are (default: $LKS_GOLDEN_DIR, else golden)"),
		LKS_OPT_PATH("--junit", "FILE", &a->junit,
		             "also write the verdicts as JUnit XML (a testcase per check, and\n"
		             "one per run compared night over night)"),
		LKS_OPT_CHOICE("--same-fingerprint-change", "fail|warn", &a->same_fp_warn, lks_fail_warn,
		               "\na run whose bits changed since the latest earlier suite while its\n"
		               "fingerprint did not (hardware, or non-determinism): exit 1 (fail,\n"
		               "the default) or only say so (warn)"),
		LKS_OPT_FLAG("--quiet", &a->quiet, "no progress"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "run", .usage = lks_run_usage, .tail = lks_run_tail,
	                          .width = 16, .ctx = a };

	a->db = "lockstep.db";
	a->timeout = 600;
	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, &a->inputs)) != 0)
		return rc;
	a->gemm = gemm < 0 ? -1 : gemm == 1 ? LKS_GEMM_LIBRARY : LKS_GEMM_REFERENCE;
	if (a->inputs.n == 0)
		return lks_usage("run: which cases? (a case file or a directory of them)");
	return 0;
}

static int lks_listed(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

/* --run names the runs; else --check names them through the checks kept; else all run. */
static int lks_selected(const struct lks_run_args *a, const lks_case *c, const char *run)
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
static int lks_keep_checks(const struct lks_run_args *a, lks_case *cases, int *ncases)
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

/* A planted fault at a step that --steps leaves out would pass unseen: say so. */
static void lks_warn_unplanted(const struct lks_run_args *a, const lks_case *cases, int ncases)
{
	for (int i = 0; a->steps && i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			const lks_run_cfg *r = &cases[i].runs[j];

			if (r->inject.kind != LKS_FAULT_NONE && r->inject.step >= a->steps
			    && lks_selected(a, &cases[i], r->name))
				fprintf(stderr, "lockstep: warning: %s / %s: the fault at step %d will not "
				        "be planted: --steps %d stops before it\n", cases[i].name, r->name,
				        r->inject.step, a->steps);
		}
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
static const lks_backend *lks_run_backend(const struct lks_run_args *a, const lks_run_cfg *r)
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
static int lks_backends_used(const struct lks_run_args *a, const lks_job *job,
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

/* The strings joined by spaces, after prefix. */
static char *lks_join_after(const char *prefix, const char *const *v, int n)
{
	lks_strbuf sb = LKS_STRBUF_INIT;

	lks_strbuf_adds(&sb, prefix);
	if (*prefix && n)
		lks_strbuf_adds(&sb, " ");
	lks_strbuf_join(&sb, v, n, " ");
	return lks_strbuf_detach(&sb);
}

/* --gemm set in the trained runs that name no gemm; then, as the default backend (cpu) has
   only the reference GEMM and the host's communicators, a selected run on it that asks for
   the library's GEMM or NCCL's all-reduce is bad usage, named by its file and line, before
   anything runs. */
static int lks_gemm_settle(const struct lks_run_args *a, lks_case *cases, int ncases)
{
	for (int i = 0; i < ncases; i++)  /* --gemm: the runs that name none */
		for (int j = 0; a->gemm >= 0 && j < cases[i].nruns; j++)
			if (!cases[i].runs[j].gemm_given && !cases[i].runs[j].import_fmt[0])
				cases[i].runs[j].gemm = a->gemm;
	for (int i = 0; i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			const lks_run_cfg *r = &cases[i].runs[j];

			if (!lks_selected(a, &cases[i], r->name)
			    || lks_run_backend(a, r) != lks_backend_default())
				continue;
			if (r->gemm == LKS_GEMM_LIBRARY)
				return lks_usage("run: %s:%d: run '%s' asks for gemm = cublaslt%s, which "
				                 "needs backend cuda (--backend cuda, or backend = cuda in "
				                 "the run; the cpu backend has only the reference GEMM)",
				                 cases[i].path, r->line, r->name,
				                 r->gemm_given ? "" : " (--gemm cublaslt)");
			if (r->allreduce == LKS_ALLREDUCE_NCCL)
				return lks_usage("run: %s:%d: run '%s' asks for allreduce = nccl, which "
				                 "needs backend cuda (--backend cuda, or backend = cuda in "
				                 "the run; the cpu backend sums in rank order on the host)",
				                 cases[i].path, r->line, r->name);
		}
	return 0;
}

static char *lks_command_line(int argc, char **argv)
{
	return lks_join_after("lockstep", (const char *const *)argv, argc);
}

static char *lks_join(const char **v, int n)
{
	return lks_join_after("", v, n);
}

/* The exit code and the verdicts as process 0 has them, given to every process of the job
   (a process that failed on its own makes it 3), so that mpirun or srun gets one status. */
static int lks_agree(const lks_job *job, int rc, lks_check_tally *t)
{
	int v[] = { rc, t->total, t->passed, t->failed, t->expected_fail, t->unsupported,
	            t->skipped, t->bad_input };

	if (lks_job_agree(job, v, (int)(sizeof(v) / sizeof(v[0])))) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		return LKS_EXIT_INFRA;
	}
	*t = (lks_check_tally){ v[1], v[2], v[3], v[4], v[5], v[6], v[7] };
	return v[0];
}

/* The root's last words: the verdicts counted, the JUnit file, the exit code (the others,
   tally NULL: 0, they wait for the root's). */
static int lks_run_summary(const struct lks_run_args *a, lks_store *store, int64_t suite_id,
                           const lks_check_tally *tally)
{
	lks_nightly_tally night;

	if (!tally)
		return LKS_EXIT_OK;
	if (lks_nightly_compare(store, suite_id, a->db, stdout, &night)) {
		fprintf(stderr, "lockstep: night over night: %s\n", lks_errmsg());
		return LKS_EXIT_INFRA;
	}
	printf("%d checks: %d passed, %d failed, %d expected failures, %d unsupported",
	       tally->total, tally->passed, tally->failed, tally->expected_fail, tally->unsupported);
	if (tally->skipped)
		printf(", %d skipped", tally->skipped);
	printf("\nsuite %lld stored in '%s'\n", (long long)suite_id, a->db);
	if (a->junit && lks_junit_write(store, suite_id, a->junit, !a->same_fp_warn)) {
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
   of the suite in one transaction (store/import.h). 0, or the exit code: a bad log is bad
   input (exit 2, nothing of it stored). */
static int lks_run_import(const lks_case *c, const lks_run_cfg *r, lks_store *store,
                          int64_t suite_id, int64_t *run_id)
{
	lks_import_opts o = { lks_import_format_find(r->import_fmt), c->name, r->name, suite_id,
	                      c->path, c->text, r->import_ranks[0] ? r->import_ranks : NULL };
	lks_import_result res;
	char path[1024];
	const char *paths[1] = { path };
	int rc;

	if (lks_case_import_path(c, r, path, sizeof(path)))
		rc = LKS_E_BAD_INPUT;
	else if (!o.fmt)  /* the case's validation lets none through */
		rc = -1;
	else
		rc = lks_import_files(store, &o, paths, 1, &res);
	if (rc) {
		fprintf(stderr, "lockstep: %s / %s: import: %s; nothing stored\n", c->name, r->name,
		        lks_errmsg());
		return lks_exit_code(rc);
	}
	printf("%-20s %-16s %-18s ws %d  steps up to %d  imported, %ld metric lines, %ld other "
	       "lines ignored\n", c->name, r->name, o.fmt->name, res.world_size, res.steps,
	       res.counts.records, res.counts.ignored);
	fflush(stdout);
	*run_id = res.run_id;
	return 0;
}

int lks_run_cases(int argc, char **argv, lks_check_tally *t)
{
	struct lks_run_args a = { 0 };
	lks_job job = { .root = 1 };
	char *command = NULL, *overrides = NULL;
	int ncases = 0, rc, open_rc = 0, nuses = 0, left_out = 0;
	struct lks_be_use uses[LKS_MAX_BACKENDS] = { 0 };
	lks_case *cases = NULL;
	lks_store *store = NULL;
	int64_t suite_id = 0, *run_ids = NULL;
	int *selected = NULL;
	lks_sqnr_pairs *pairs = NULL;
	lks_check_tally tally = { 0 };
	lks_check_opts copts;
	lks_nvml *nvml = NULL;         /* GPU health around each run (every process's own) */
	struct lks_health_watch watch = { 0 };

	memset(t, 0, sizeof(*t));
	if ((rc = lks_run_parse(argc, argv, &a)) != 0) {
		rc = lks_opt_exit(rc);
		goto out;
	}
	if ((rc = lks_job_start(a.timeout, &job)) != 0)
		goto out;
	copts = (lks_check_opts){ .golden_dir = lks_golden_dir(a.golden) };
	/* every case is valid before anything is written; every process loads them */
	if (lks_cases_load(a.inputs.v, a.inputs.n, a.sets.v, a.sets.n, &cases, &ncases)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		rc = LKS_EXIT_USAGE;
	} else if (lks_keep_checks(&a, cases, &ncases) || lks_gemm_settle(&a, cases, ncases)) {
		rc = LKS_EXIT_USAGE;
	} else if (job.root) {
		lks_warn_unplanted(&a, cases, ncases);
		command = lks_command_line(argc, argv);
		if (!command) {
			fprintf(stderr, "lockstep: out of memory\n");
			rc = LKS_EXIT_INFRA;
		} else if ((open_rc = lks_store_open(a.db, &store)) != 0
		           || lks_store_begin_suite(store, command, &suite_id)) {
			fprintf(stderr, "lockstep: %s\n", lks_errmsg());
			/* a file that is not ours: bad input */
			rc = open_rc == LKS_E_BAD_INPUT ? LKS_EXIT_USAGE : LKS_EXIT_INFRA;
		}
	}
	/* every process reads its own GPUs; absent is no error */
	if (rc == 0 && (lks_nvml_open(NULL, &nvml) || !(watch.mine = malloc(sizeof(*watch.mine))))) {
		fprintf(stderr, "lockstep: out of memory\n");
		rc = LKS_EXIT_INFRA;
	}
	watch.nvml = nvml;
	/* all go on, or none */
	if ((rc = lks_agree(&job, rc, &tally)) != 0)
		goto out;
	rc = LKS_EXIT_INFRA;
	if (lks_backends_used(&a, &job, cases, ncases, uses, &nuses)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		goto out;
	}
	overrides = lks_join(a.sets.v, a.sets.n);
	for (int i = 0; i < ncases; i++) {
		free(run_ids);
		free(selected);
		lks_sqnr_free(pairs);
		pairs = NULL;
		run_ids = calloc((size_t)cases[i].nruns + 1, sizeof(*run_ids));
		selected = calloc((size_t)cases[i].nruns + 1, sizeof(*selected));
		if (!run_ids || !selected) {
			fprintf(stderr, "lockstep: out of memory\n");
			goto out;
		}
		for (int j = 0; j < cases[i].nruns; j++)
			selected[j] = lks_selected(&a, &cases[i], cases[i].runs[j].name);
		if (job.root && lks_sqnr_begin(&cases[i], selected, &pairs)) {
			fprintf(stderr, "lockstep: %s\n", lks_errmsg());
			goto out;
		}
		for (int j = 0; j < cases[i].nruns; j++) {
			const lks_run_cfg *run = &cases[i].runs[j];
			const lks_backend *be = lks_run_backend(&a, run);
			const struct lks_be_use *use = lks_be_use_of(uses, nuses, be);
			lks_runner_opts o = {
				.steps = a.steps, .threads = a.threads, .suite_id = suite_id,
				.progress = a.quiet || !job.root ? NULL : stderr, .progress_tty = isatty(2),
				.fingerprint = use ? use->fingerprint : NULL, .overrides = overrides,
				.combo = a.combo, .job = job.comm,
				/* the process's place on its host (its ranks' devices) and the bound of
				   every wait on another rank's device collective */
				.local_rank = job.launch.local_rank, .timeout_s = a.timeout,
				/* the default on the runner's own threads */
				.backend = be == lks_backend_default() ? NULL : be,
				.on_devices = lks_health_on_devices, .on_devices_arg = &watch,
			};
			lks_run_result res;
			char health[2048];

			if (!selected[j])
				continue;
			if (run->import_fmt[0]) {
				int irc = job.root ? lks_run_import(&cases[i], run, store, suite_id,
				                                    &run_ids[j]) : 0;

				if (irc) {
					rc = irc;
					goto out;
				}
				continue;
			}
			if (!use || use->unavailable) {
				/* nothing of it is stored; its checks are skipped; exit 3 at the end */
				left_out++;
				if (job.root)
					fprintf(stderr, "lockstep: %s / %s: left out: backend '%s' cannot be "
					        "opened: %s\n", cases[i].name, run->name, be->name,
					        use ? use->why : "too many backends");
				continue;
			}
			lks_sqnr_hook(pairs, j, &o);
			lks_gpu_health_reset(watch.mine);
			if (lks_run(&cases[i], run, store, &o, &res)
			    || lks_health_end(&job, &watch, store, res.run_id, health, sizeof(health))
			    || lks_sqnr_end_run(pairs, j, res.run_id, store)) {
				fprintf(stderr, "lockstep: %s / %s: %s\n", cases[i].name, run->name, lks_errmsg());
				goto out;
			}
			if (!job.root)  /* it trained its ranks; process 0 stores and says */
				continue;
			printf("%-20s %-16s %-18s ws %d  %4d steps  loss %.4f -> %.4f  %6.2fs%s\n",
			       cases[i].name, run->name, lks_recipe_name(run->recipe), run->world_size,
			       res.steps, res.first_loss, res.last_loss, res.seconds,
			       res.nonfinite_events ? "  NON-FINITE gradients (see events)" : "");
			fflush(stdout);
			run_ids[j] = res.run_id;
			if (*health)
				fprintf(stderr, "lockstep: %s / %s: GPU health:\n%s", cases[i].name,
				        run->name, health);
		}
		if (job.root
		    && lks_check_case(store, suite_id, &cases[i], run_ids, &copts, stdout, &tally)) {
			fprintf(stderr, "lockstep: %s\n", lks_errmsg());
			goto out;
		}
	}
	rc = lks_run_summary(&a, store, suite_id, job.root ? &tally : NULL);
	if (left_out) {
		if (job.root)
			fprintf(stderr, "lockstep: %d run%s left out: %s backend cannot be opened here "
			        "(see above); the other runs and their checks are stored\n", left_out,
			        left_out > 1 ? "s were" : " was", left_out > 1 ? "their" : "its");
		rc = LKS_EXIT_INFRA;
	}
	rc = lks_agree(&job, rc, &tally);
out:
	*t = tally;
	lks_job_end(&job);
	lks_cases_release(cases, ncases);
	lks_store_close(store);
	lks_nvml_close(nvml);
	free(watch.mine);
	free(run_ids);
	free(selected);
	lks_sqnr_free(pairs);
	for (int i = 0; i < nuses; i++)
		free(uses[i].fingerprint);
	free(command);
	free(overrides);
	free(a.sets.v);
	free(a.only.v);
	free(a.inputs.v);
	free(a.checks.v);
	return rc;
}

int cmd_run(int argc, char **argv)
{
	lks_check_tally t;

	return lks_run_cases(argc, argv, &t);
}
