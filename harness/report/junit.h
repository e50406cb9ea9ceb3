/*
 * junit.h: the verdicts of a suite as JUnit XML, for CI systems that show test results:
 * one <testcase> per check (classname = case, name = check), a <failure> whose message is
 * the divergence for fail and unexpected_pass, <skipped> for skipped and unsupported.
 */
#ifndef LKS_HARNESS_JUNIT_H
#define LKS_HARNESS_JUNIT_H

#include <stdint.h>

#include "harness/store/trace_store.h"

/* Writes the checks of suite suite_id to path (through a temporary file and a rename: harness/base/atomic_file.h). */
int lks_junit_write(lks_store *s, int64_t suite_id, const char *path);

#endif
