/*
 * run_arg.h: a stored run as the user names it on a command line ('lockstep diff',
 * 'lockstep export'): its id, as 'lockstep run', 'list' and the report show it, or
 * CASE/RUN, the latest stored run of that case and run name.
 */
#ifndef LKS_HARNESS_CLI_RUN_ARG_H
#define LKS_HARNESS_CLI_RUN_ARG_H

#include <stdint.h>

#include "harness/store/trace_store.h"

/* The run arg names in store s (file db, for messages): 0 found (*id); LKS_EXIT_USAGE,
   the message printed with cmd before it, when arg is malformed or names no run; -1 the
   store cannot be read (lks_err). */
int lks_run_arg_resolve(lks_store *s, const char *cmd, const char *db, const char *arg,
                        int64_t *id);

#endif
