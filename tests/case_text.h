/*
 * case_text.h: a case loaded from its text, through a temporary file, as lks_case_load
 * reads one (with --set overrides sets, nsets); the test fails if it does not load.
 */
#ifndef LKS_TESTS_CASE_TEXT_H
#define LKS_TESTS_CASE_TEXT_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness/engine/case.h"
#include "kernels/err.h"

static inline void load_case(const char *text, const char *const *sets, int nsets, lks_case *c)
{
	char path[] = "/tmp/lks_test_case_XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(lks_case_load(path, sets, nsets, c), 0, "%s", lks_errmsg());
	unlink(path);
}

#endif
