/*
 * junit.h: the verdicts of a suite as JUnit XML, for CI systems that show test results:
 * first one <testcase> per run that did not complete (classname = "run." case, name = run,
 * an <error> with its status and, where the run stored it, why (LKS_EVENT_RUN_FAILED): its
 * checks are skipped below), then one <testcase> per check (classname = case, name =
 * check), a <failure> whose message is the divergence for fail and unexpected_pass,
 * <skipped> for skipped and unsupported.
 * Then one <testcase> per run compared night over night (harness/verify/nightly.h;
 * classname = "nightly." case, name = run): a <failure> for a change with an equal
 * fingerprint (when same_fp_fails), <skipped> for a gone run, and the verdict (with the
 * divergence and the fingerprint keys that differ) as <system-out> otherwise.
 */
#ifndef LKS_HARNESS_JUNIT_H
#define LKS_HARNESS_JUNIT_H

#include <stdint.h>
#include <stdio.h>

#include "harness/store/trace_store.h"

/* Writes the checks and night-over-night verdicts of suite suite_id to path (through a
   temporary file and a rename: harness/base/atomic_file.h); a suite that stopped before its
   end (stopped: its exit code, or the store's record of it) an <error> first. */
int lks_junit_write(lks_store *s, int64_t suite_id, const char *path, int same_fp_fails,
                    int stopped);

/* s as XML text or attribute value: the five specials escaped, control characters other
   than tab and newline (not allowed in XML 1.0) a blank, bytes that are not UTF-8 and the
   characters XML does not allow (U+FFFE, U+FFFF) U+FFFD: the file always parses. */
void lks_xml_text(FILE *f, const char *s);

#endif
