/*
 * fault_fixture.h: what the planted faults' tests (test_fault.c, test_fault_cli.c) and the
 * tests that write whole cases (test_mesh.c, test_resume.c) share: the case files they
 * write, and a case's text made piece by piece.
 */
#ifndef LKS_TESTS_FAULT_FIXTURE_H
#define LKS_TESTS_FAULT_FIXTURE_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>

static inline void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

/* Appends to buf (size) at *len, as snprintf does; the text must fit. */
static inline void case_add(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline void case_add(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*len += (size_t)vsnprintf(buf + *len, *len < size ? size - *len : 0, fmt, ap);
	va_end(ap);
	cr_assert_lt(*len, size, "the case text is too long");
}

#endif
