/*
 * cmd_run.c: 'lockstep run': its options, then the suite (harness/suite/suite.h), which
 * trains every run of each case, stores the traces and evaluates the case's checks;
 * what it says goes to the terminal, and the verdicts to a JUnit file when asked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/strbuf.h"
#include "harness/base/name.h"
#include "harness/cli/cmd.h"
#include "harness/engine/case.h"
#include "harness/report/junit.h"
#include "harness/suite/suite.h"
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
	"  lockstep run cases/rowwise_checkpoint.ini --steps 5 --set model.layers=1\n"
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
	"            3 infrastructure failure: a run failed (out of memory, the database)\n"
	"              and was stored 'failed', or its backend cannot be opened here (a cuda\n"
	"              run without a GPU) and it was left out; its checks are skipped, the\n"
	"              other runs and checks go on (in a job of processes a failed run ends\n"
	"              the job)\n";

/* The suite as the options give it, and what this command does with its output. */
struct lks_run_args {
	lks_suite_opts s;
	const char *junit;        /* --junit FILE; NULL: none */
	int quiet;                /* --quiet: no progress */
};

/* --backend NAME: the registry names the ones this build has */
static int lks_run_backend_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                               const char *arg)
{
	struct lks_run_args *a = cmd->ctx;

	(void)o; (void)name;
	if (!(a->s.backend = lks_backend_find(arg)))
		return lks_usage("run: %s", lks_errmsg());
	return 0;
}

/* --resume-from RUN@STEP: a stored run's id and a step it kept its state after */
static int lks_run_resume_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                              const char *arg)
{
	struct lks_run_args *a = cmd->ctx;
	char *end;
	long long run;
	long step;

	(void)o;
	errno = 0;
	run = strtoll(arg, &end, 10);
	if (errno || run <= 0 || *end != '@')
		return lks_usage("run: %s %s: want RUN@STEP, a run id of the database and a step "
		                 "it kept its state after (--keep-state), e.g. 12@99", name, arg);
	arg = end + 1;
	step = strtol(arg, &end, 10);
	if (errno || end == arg || *end || step < 0 || step >= 1 << 30)
		return lks_usage("run: %s: STEP '%s' must be a step number from 0", name, arg);
	a->s.resume_run = run;
	a->s.resume_step = (int)step;
	return 0;
}

static const char *const lks_gemm_choices[] = { "reference", "cublaslt", NULL };
static const char *const lks_fail_warn[] = { "fail", "warn", NULL };

/* 0: go on; LKS_OPT_HELP: help was printed; else an exit code */
/* --combo NAME: a combos file's name (base/name.h), or one that reduce makes of it for a
   subset of keys, NAME+{KEY,KEY}: stored and compared as the runs' combo, printed in
   commands; a blank, a quote or an empty name would be stored as written. */
static int lks_run_combo_check(const char *name)
{
	const char *brace = strchr(name, '{');
	size_t len = brace ? (size_t)(brace - name) : strlen(name);

	if (brace && (len < 2 || name[len - 1] != '+' || name[strlen(name) - 1] != '}'
	              || strspn(brace + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	                                   "0123456789_-.+,*") != strlen(brace + 1) - 1))
		return lks_err("bad combo name '%s': want a combo's name, or NAME+{KEY,...} as "
		               "reduce makes them", name);
	return lks_name_check("combo", name, brace ? len - 1 : len);
}

static int lks_run_parse(int argc, char **argv, struct lks_run_args *a)
{
	int gemm = -1, rc;
	const lks_option opts[] = {
		LKS_OPT_PATH("--db", "FILE", &a->s.db,
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
		LKS_OPT_INT("--steps", "N", &a->s.steps, 1, LKS_RUN_STEPS_MAX,
		            "override the case's steps (as --set case.steps=N)"),
		LKS_OPT_LIST("--set", "S.K=V", &a->s.sets,
		             "override a case key, e.g. --set model.hidden=512,\n"
		             "--set run.fp8.recipe=fp8_tensorwise (repeatable); run.*.K sets\n"
		             "it in every run, e.g. --set 'run.*.gemm=cublaslt'"),
		LKS_OPT_LIST("--run", "NAME", &a->s.only,
		             "only the runs with this name (repeatable; a name no case has\n"
		             "is bad usage)"),
		LKS_OPT_LIST("--check", "NAME", &a->s.checks,
		             "only the checks with this name (repeatable): a case without one\n"
		             "is left out, and without --run only the runs they compare train"),
		LKS_OPT_STRING("--combo", "NAME", &a->s.combo,
		               "store the runs under this combo name (matrix, bisect and reduce\n"
		               "give it to each probe)"),
		LKS_OPT_INT("--threads", "N", &a->s.threads, 1, LKS_RUN_THREADS_MAX,
		            "GEMM threads of single-rank runs (default: all cores)"),
		LKS_OPT_INT("--timeout", "S", &a->s.timeout, 1, 1 << 30,
		            "how long a rank waits for the others (under mpirun or srun, and\n"
		            "in every GPU collective: joining NCCL, each all-reduce) before\n"
		            "it ends the run and the job, exit 3 (default 600 seconds); keep\n"
		            "it above 60 where other commands write the database: process 0\n"
		            "waits up to 60 s for another writer"),
		LKS_OPT_PATH("--golden", "DIR", &a->s.golden,
		             "where golden files are (default: $LKS_GOLDEN_DIR, else golden)"),
		LKS_OPT_PATH("--junit", "FILE", &a->junit,
		             "also write the verdicts as JUnit XML (a testcase per check, and\n"
		             "one per run compared night over night)"),
		LKS_OPT_CHOICE("--same-fingerprint-change", "fail|warn", &a->s.same_fp_warn,
		               lks_fail_warn,
		               "\na run whose bits changed since the latest earlier suite while its\n"
		               "fingerprint did not (hardware, or non-determinism): exit 1 (fail,\n"
		               "the default) or only say so (warn)"),
		LKS_OPT_INT("--keep-state", "N", &a->s.state_every, 1, 1 << 30,
		            "keep each run's training state (parameters, optimizer state, amax\n"
		            "histories) after every N-th step (steps N - 1, 2N - 1, ... counted\n"
		            "from 0), to resume from"),
		LKS_OPT_CALL("--resume-from", "RUN@STEP", lks_run_resume_opt,
		             "train the one run selected (--run NAME) from the state stored run\n"
		             "RUN (its id in the database) kept after STEP: the steps after it\n"
		             "come out bit for bit as RUN's did (a 'resume' check holds them);\n"
		             "RUN trained the same (model, data, optimizer, steps, recipe), in\n"
		             "any layout, with or without checkpointing, or it is refused"),
		LKS_OPT_FLAG("--quiet", &a->quiet, "no progress"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "run", .usage = lks_run_usage, .tail = lks_run_tail,
	                          .width = 16, .ctx = a };

	a->s.db = "lockstep.db";
	a->s.timeout = 600;
	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, &a->s.inputs)) != 0)
		return rc;
	a->s.gemm = gemm < 0 ? -1 : gemm == 1 ? LKS_GEMM_LIBRARY : LKS_GEMM_REFERENCE;
	if (a->s.inputs.n == 0)
		return lks_usage("run: which cases? (a case file or a directory of them)");
	if (a->s.combo && lks_run_combo_check(a->s.combo))
		return lks_usage("run: --combo: %s", lks_errmsg());
	return 0;
}

/* The terminal's: run lines and verdicts on stdout, progress on stderr. */
static void lks_run_line(void *arg, const lks_suite_line *run)
{
	(void)arg;
	lks_suite_print_run(stdout, run);
}

/* --junit FILE: the verdicts as JUnit XML, once the suite is stored or has stopped */
static int lks_run_junit(void *arg, lks_store *store, int64_t suite_id, int stopped)
{
	const struct lks_run_args *a = arg;

	return a->junit ? lks_junit_write(store, suite_id, a->junit, !a->s.same_fp_warn, stopped)
	                : 0;
}

int lks_run_cases(int argc, char **argv, lks_check_tally *t)
{
	struct lks_run_args a = { 0 };
	lks_strbuf command = LKS_STRBUF_INIT;
	lks_suite_observer obs = {
		.arg = &a, .verdicts = stdout, .on_run = lks_run_line, .on_stored = lks_run_junit,
	};
	int rc;

	memset(t, 0, sizeof(*t));
	lks_strbuf_adds(&command, "lockstep");
	for (int i = 0; i < argc; i++)
		lks_strbuf_addf(&command, " %s", argv[i]);
	if ((rc = lks_run_parse(argc, argv, &a)) != 0) {
		rc = lks_opt_exit(rc);
	} else if (!(a.s.command = command.oom ? NULL : command.buf)) {
		fprintf(stderr, "lockstep: out of memory\n");
		rc = LKS_EXIT_INFRA;
	} else {
		obs.progress = a.quiet ? NULL : stderr;
		obs.progress_tty = isatty(2);
		rc = lks_suite_run(&a.s, &obs, t);
	}
	lks_strbuf_release(&command);
	free(a.s.sets.v);
	free(a.s.only.v);
	free(a.s.inputs.v);
	free(a.s.checks.v);
	return rc;
}

int cmd_run(int argc, char **argv)
{
	lks_check_tally t;

	return lks_run_cases(argc, argv, &t);
}
