/*
 * import_fixture.h: what the sources of test_import_check share (test_import_check.c
 * defines it).
 */
#ifndef LKS_TESTS_IMPORT_FIXTURE_H
#define LKS_TESTS_IMPORT_FIXTURE_H

#include <stdint.h>

#include "harness/store/trace_store.h"

/* Imports fixture file (tests/import/data/, format fmt) as run name of case c into s;
   its run id. */
int64_t import_run(lks_store *s, const char *fmt, const char *file, const char *name);

#endif
