/*
 * fault_fixture.h: what the planted faults' tests (test_fault.c, test_fault_cli.c) share:
 * the case files they write.
 */
#ifndef LKS_TESTS_FAULT_FIXTURE_H
#define LKS_TESTS_FAULT_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>

static inline void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

#endif
