/*
 * probe.h: probes, what 'lockstep matrix', 'bisect' and 'reduce' are made of. A probe is
 * one child process 'lockstep check CASE... --db DB --quiet --combo NAME [--set S.K=V]...'
 * started with fork and execve (an argument vector, never a shell) in the environment of a
 * combo (harness/probe/combo.h), in a process group of its own, with a timeout: at the timeout
 * the group gets SIGTERM, and SIGKILL LKS_PROBE_GRACE seconds later; on Linux it is killed
 * when lockstep is (PR_SET_PDEATHSIG). Its outcome:
 *
 *   good     exit 0: every check passed
 *   bad      exit 1: a check failed
 *   skip     exit 125: it could not test (an infrastructure failure in the child)
 *   crash    killed by a signal, or any other exit code (127: the loader could not start
 *            it, e.g. a library missing from the combo's library_path)
 *   timeout  it was still running at the timeout, and was killed
 *
 * so a probe that crashes or hangs is recorded as such, never as a pass. Every probe is
 * stored in the probes table of the database, in a session (one command), with the end of
 * what it printed; the runs it stored carry the combo's name.
 */
#ifndef LKS_HARNESS_PROBE_H
#define LKS_HARNESS_PROBE_H

#include <stdint.h>
#include <stdio.h>

#include "harness/probe/combo.h"
#include "harness/probe/search.h"
#include "harness/store/trace_store.h"

typedef enum lks_outcome {
	LKS_OUTCOME_GOOD = 0,
	LKS_OUTCOME_BAD,
	LKS_OUTCOME_SKIP,
	LKS_OUTCOME_CRASH,
	LKS_OUTCOME_TIMEOUT,
	LKS_OUTCOME_COUNT
} lks_outcome;

/* "good", "bad", "skip", "crash", "timeout" */
const char *lks_outcome_name(lks_outcome o);

/* Bytes kept of a probe's output (stdout and stderr together): its last lines say why it
   failed, crashed or could not test. */
#define LKS_PROBE_TAIL 4096

/* Ten minutes: the nightly suite takes seconds on a CPU and minutes on a GPU runner, so a
   probe still running then hangs; --timeout sets another. */
#define LKS_PROBE_TIMEOUT 600.0

/* Seconds from SIGTERM to SIGKILL: enough for a process that handles SIGTERM to end;
   lockstep itself ends at once, and the database is consistent either way (a killed run
   stays 'incomplete'). */
#define LKS_PROBE_GRACE 2.0

typedef struct lks_probe_result {
	lks_outcome outcome;
	int exit_code;            /* -1: none (a signal ended it) */
	int signal;               /* the signal that ended it; 0: none */
	double seconds;
	char started[32];         /* ISO 8601 UTC */
	char output[LKS_PROBE_TAIL];  /* the end of what it printed */
	int interrupted;          /* the signal that stopped lockstep (lks_probe_exec failed,
	                             the probe killed: a crash of SIGKILL, its output says why) */
} lks_probe_result;

/* Runs exe with argv and envp as a probe (above) and waits for it, copying its output to
   echo as it comes (NULL: not). Fails (-1, lks_err) only when it cannot be started, or when
   this process is interrupted (SIGINT, SIGTERM, SIGHUP): the probe is then killed. */
int lks_probe_exec(const char *exe, char *const *argv, char *const *envp, double timeout,
                   FILE *echo, lks_probe_result *res);

/* ---- what matrix, bisect and reduce share ---- */

/* Their common options (harness/cli/cmd_probe.c parses them); arrays hold argc entries. */
typedef struct lks_probe_cfg {
	const char *combos_path, *db;
	double timeout;
	int on_crash_bad;         /* --on-crash bad: crash and timeout count as bad, not skip */
	int verbose;              /* each probe's output to stderr as it comes */
	const char **cases;       /* CASE|DIR arguments */
	const char **checks;      /* --check NAME */
	const char **pass;        /* --steps N, --run NAME, --threads N, --golden DIR, given on */
	int ncases, nchecks, npass;
} lks_probe_cfg;

int lks_probe_cfg_init(lks_probe_cfg *cfg, int argc);
void lks_probe_cfg_release(lks_probe_cfg *cfg);
/* good, bad and skip as they are; crash and timeout: skip, or bad with --on-crash bad. */
lks_mark lks_probe_mark(const lks_probe_cfg *cfg, lks_outcome o);

typedef struct lks_probe_session {
	const lks_probe_cfg *cfg;
	lks_combos combos;
	lks_store *store;
	int64_t session_id;
	char exe[4096];           /* lockstep itself */
	int nprobes;
	FILE *out;                /* a line per probe */
} lks_probe_session;

/* Loads the combos file, finds this program, opens the database and begins a session of
   kind ("matrix", "bisect", "reduce") for the command argv (stored as its command line).
   Fails with LKS_E_BAD_INPUT for a bad combos file or database, else -1. */
int lks_probe_session_open(lks_probe_session *ps, const lks_probe_cfg *cfg, const char *kind,
                           int argc, char **argv, FILE *out);
/* Every case loads under c's overrides, and each --check names a check of some case:
   else LKS_E_BAD_INPUT naming the combo's file:line. */
int lks_probe_session_validate(lks_probe_session *ps, const lks_combo *c);
/* Probes cases (NULL: the configured ones) under c, stores the probe and prints its line;
   *suite_id (may be NULL): the suite it stored, 0 if none. */
int lks_probe_session_run(lks_probe_session *ps, const lks_combo *c, const char *const *cases,
                          int ncases, lks_probe_result *res, int64_t *suite_id);
/* Ends the session with its result in words (NULL: the command failed, and the result is
   "stopped: " and the error message). */
void lks_probe_session_close(lks_probe_session *ps, const char *result);

#endif
