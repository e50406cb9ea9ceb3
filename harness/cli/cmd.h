/*
 * cmd.h: the subcommands of 'lockstep', one file each (harness/cmd_<name>.c), dispatched
 * from the table in main.c. Each returns the process exit code (DESIGN.md, Interfaces):
 * 0 pass, 1 a check failed, 2 bad usage or input, 3 infrastructure failure.
 */
#ifndef LKS_HARNESS_CMD_H
#define LKS_HARNESS_CMD_H

#include <stdio.h>

#include "harness/base/opt.h"
#include "harness/engine/case.h"

/*
 * The subcommands, in the order 'lockstep --help' lists them: X(name, summary) for each, with
 * its function int cmd_<name>(int argc, char **argv) in cmd_<name>.c (argv[0] is the
 * subcommand's name). Adding a subcommand is a row here and its file (and the file in
 * CMakeLists.txt's list).
 */
#define LKS_COMMANDS(X) \
	X(run, "train every run of cases step by step and store the traces") \
	X(check, "run, with exit codes for git bisect run (0 good, 1 bad, 125 skip)") \
	X(env, "print the environment fingerprint stored with every run") \
	X(bench, "measure against a peer in the same run (gemm, quant, store, step, import, detect)") \
	X(list, "show cases with their runs and checks") \
	X(golden, "write golden files from stored runs; measure a class's tolerances") \
	X(report, "write the HTML and Markdown report of a suite") \
	X(import, "store a run of another framework read from its logs") \
	X(export, "write a stored run as jsonl or Megatron-LM golden values") \
	X(diff, "first divergence and per-step maximum errors of two stored runs") \
	X(prune, "keep the latest suites whole, older ones without their per-tensor stats") \
	X(matrix, "every case under every combo of a combos file: a table of verdicts") \
	X(bisect, "the first bad combo of an ordered list, by binary search") \
	X(reduce, "the fewest differences between a good and a bad combo that fail") \
	X(screen, "a known-answer canary of every GPU of a node, a faulty one replayed and named")

#define LKS_COMMAND_DECL(name, summary) int cmd_##name(int argc, char **argv);
LKS_COMMANDS(LKS_COMMAND_DECL)
#undef LKS_COMMAND_DECL

/* The ranges of 'lockstep run --steps N' and '--threads N', which matrix, bisect and
   reduce check before they give them to every probe. */
#define LKS_RUN_STEPS_MAX LKS_CASE_STEPS_MAX
#define LKS_RUN_THREADS_MAX 1024

/* 'lockstep run' with the verdicts counted into *tally (also after a failure: what was
   counted so far). */
struct lks_check_tally;
int lks_run_cases(int argc, char **argv, struct lks_check_tally *tally);

/* 'lockstep import --follow' (import_follow.c): what it is compared with and when it
   stops. */
typedef struct lks_follow_args {
	long long reference_run;  /* a stored run's id; 0: reference_file instead */
	const char *reference_file;  /* "FORMAT:PATH"; NULL: golden_file or reference_run */
	const char *golden_file;  /* a golden file of class import; NULL: one of the others */
	double rtol, atol;        /* both 0: bit for bit */
	double idle_s;            /* a followed file that has not grown this long has ended */
	int end_step;             /* -1: none */
} lks_follow_args;
struct lks_store;
struct lks_import_opts;
int lks_import_follow_cmd(struct lks_store *store, const struct lks_import_opts *o,
                          const char *path, const lks_follow_args *a);

/* 'lockstep golden measure' (cmd_golden_measure.c): argv[0] is "measure". */
int lks_golden_measure(int argc, char **argv);

/* ---- what matrix, bisect and reduce share (cmd_probe.c; harness/probe/probe.h) ---- */
struct lks_probe_cfg;
struct lks_probe_session;

/* What a probe is, for their --help. */
#define LKS_PROBE_HELP_PROBE \
	"A probe is a child process 'lockstep check CASE... --db DB --combo NAME [--set ...]'\n" \
	"(no shell) in lockstep's environment with the combo's applied, in a process group of\n" \
	"its own, with a timeout; its outcome is good (exit 0), bad (1), skip (125: it could\n" \
	"not test), crash (a signal or another exit code) or timeout. Every probe is stored in\n" \
	"the probes table of the database, and its runs carry the combo's name.\n"

/* Their start: options into cfg (init'ed here; release with lks_probe_cfg_release) by the
   common table and the command's own rows (extra, LKS_OPT_END-ended, may be NULL: a STRING
   row is required, any other keeps its default), CASE|DIR arguments, with --combos and a
   case required; usage and tail around the options make its --help; then the session of
   kind who opened in ps. Returns 0 to go on, else 1 with the exit code in *rc (0 after
   --help). */
int lks_probe_start(const char *who, int argc, char **argv, const char *usage, const char *tail,
                    const lks_option *extra, struct lks_probe_cfg *cfg,
                    struct lks_probe_session *ps, int *rc);
/* The exit code for a failure of a probe command: 2 bad input, 3 otherwise; prints why. */
int lks_probe_fail(int rc);

#endif
