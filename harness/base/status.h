/*
 * status.h: the one namespace of status codes every room returns, and the exit codes of the
 * program they map to (DESIGN.md, Interfaces). A function that can fail returns 0 or a
 * negative lks_status, its message in lks_err; only the command turns it into an exit code
 * (lks_exit_code), so a module never invents a -2 of its own.
 */
#ifndef LKS_HARNESS_STATUS_H
#define LKS_HARNESS_STATUS_H

/* What a function says of its failure; the message is in lks_err. */
enum lks_status {
	LKS_OK = 0,
	/* not the input's fault: memory, the disk, a library, another rank: exit 3 */
	LKS_E_INFRA = -1,
	/* bad input, named with its file (and line) where it has one: a case, golden, combos
	   or tolerances file, a log, a database that is not lockstep's, a suite or a report
	   folder that cannot be used: exit 2, nothing already stored lost */
	LKS_E_BAD_INPUT = -2,
	/* what was asked for is not there: a file, a golden file never made. Not bad input by
	   itself: the caller decides (a missing golden is a check's verdict) */
	LKS_E_MISSING = -3,
};

/* The exit codes: 0 pass, 1 a check failed, 2 bad usage or input, 3 infrastructure
   failure; 'lockstep check' 125 when it cannot test (git bisect run skips the commit). */
enum { LKS_EXIT_OK = 0, LKS_EXIT_FAIL = 1, LKS_EXIT_USAGE = 2, LKS_EXIT_INFRA = 3,
       LKS_EXIT_CANNOT_TEST = 125 };

/* The exit code of a failure's status: 0 for LKS_OK, 2 for bad input or a missing file a
   user named, 3 for anything else. */
static inline int lks_exit_code(int status)
{
	return status == LKS_OK ? LKS_EXIT_OK
	       : status == LKS_E_BAD_INPUT || status == LKS_E_MISSING ? LKS_EXIT_USAGE
	       : LKS_EXIT_INFRA;
}

#endif
