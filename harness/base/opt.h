/*
 * opt.h: what every command line shares: the parsing of option values, with messages that
 * name who asked (the exit codes are status.h's).
 */
#ifndef LKS_HARNESS_OPT_H
#define LKS_HARNESS_OPT_H

#include "harness/base/status.h"

/* Prints "lockstep: <msg>" to stderr and returns LKS_EXIT_USAGE, for 'return lks_usage(...)'. */
int lks_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Option values for subcommands; on bad input they print a usage message naming who
   ("bench gemm") and the option, and return LKS_EXIT_USAGE. */
int lks_opt_int(const char *who, const char *opt, const char *val, int lo, int hi, int *out);
int lks_opt_double(const char *who, const char *opt, const char *val, double lo, double hi,
                   double *out);
/* A path option's value (a file, a folder) as *out; an empty one is bad usage: it names
   nothing, and what it reaches would take it for something ("" opens a temporary SQLite
   database, stands for the default folder, or fails as a write). */
int lks_opt_path(const char *who, const char *opt, const char *val, const char **out);
/* Parses an ISA path name and forces it (LKS_ISA's effect, for one command). */
int lks_opt_isa(const char *who, const char *val);

#endif
