/*
 * cmd.h: the subcommands of 'lockstep', one file each (harness/cmd_<name>.c), dispatched
 * from the table in main.c. Each returns the process exit code (DESIGN.md, Interfaces):
 * 0 pass, 1 a check failed, 2 bad usage or input, 3 infrastructure failure.
 */
#ifndef LKS_HARNESS_CMD_H
#define LKS_HARNESS_CMD_H

#include <stdio.h>

enum { LKS_EXIT_OK = 0, LKS_EXIT_FAIL = 1, LKS_EXIT_USAGE = 2, LKS_EXIT_INFRA = 3,
       LKS_EXIT_CANNOT_TEST = 125 /* 'lockstep check': git bisect skips the commit */ };

/* argv[0] is the subcommand's name. */
int cmd_env(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_golden(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* Prints "lockstep: <msg>" to stderr and returns LKS_EXIT_USAGE, for 'return lks_usage(...)'. */
int lks_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Option values for subcommands; on bad input they print a usage message naming who
   ("bench gemm") and the option, and return LKS_EXIT_USAGE. */
int lks_opt_int(const char *who, const char *opt, const char *val, int lo, int hi, int *out);
/* Parses an ISA path name and forces it (LKS_ISA's effect, for one command). */
int lks_opt_isa(const char *who, const char *val);

#endif
