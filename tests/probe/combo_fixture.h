/*
 * combo_fixture.h: what the combos' tests (test_combo.c, test_combo_cli.c) share: a mkdtemp
 * folder per test and the files written into it.
 */
#ifndef LKS_TESTS_COMBO_FIXTURE_H
#define LKS_TESTS_COMBO_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

static char tmpdir[256];

static inline void mkdir_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lks-test-combo-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static inline void rm_tmp(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

/* Writes text to tmpdir/name; the path into path. */
static inline void put_file(const char *name, const char *text, char *path, size_t n)
{
	FILE *f;

	snprintf(path, n, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f, "cannot write '%s'", path);
	fputs(text, f);
	fclose(f);
}

#endif
