/*
 * case_fixture.h: what the case files' tests (test_case.c, test_case_limits.c) share: a
 * fresh mkdtemp folder per test (.init = setup, .fini = teardown), case texts written into
 * it, loaded or refused with the message expected, and the pieces of a case whose line
 * numbers the expected messages count on.
 */
#ifndef LKS_TESTS_CASE_FIXTURE_H
#define LKS_TESTS_CASE_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/stat.h>

#include "harness/engine/case.h"
#include "kernels/err.h"
#include "tmp_tree.h"

static char tmpdir[] = "/tmp/lks_test_case_XXXXXX";

static inline void setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp");
}

static inline void teardown(void)
{
	lks_test_rmtree(tmpdir);
}

/* Writes text to tmpdir/name; returns the path (valid until the next call). */
static inline const char *put(const char *name, const char *text)
{
	static char path[4][512];
	static int next;
	char *p = path[next++ % 4];
	FILE *f;

	snprintf(p, sizeof(path[0]), "%s/%s", tmpdir, name);
	f = fopen(p, "wb");
	cr_assert_not_null(f, "cannot write '%s'", p);
	fputs(text, f);
	fclose(f);
	return p;
}

static inline void load_ok(const char *text, lks_case *c)
{
	const char *path = put("ok.ini", text);

	cr_assert_eq(lks_case_load(path, NULL, 0, c), 0, "%s\n--- case:\n%s", lks_errmsg(), text);
}

/* The case must fail to load with the message "<path><where>". */
static inline void load_err(const char *text, const char *const *sets, int nsets, const char *where)
{
	const char *path = put("bad.ini", text);
	char want[1024];
	lks_case c;

	snprintf(want, sizeof(want), "%s%s", path, where);
	cr_assert_neq(lks_case_load(path, sets, nsets, &c), 0, "loaded, but want '%s'\n--- case:\n%s",
		      want, text);
	cr_assert_str_eq(lks_errmsg(), want, "--- case:\n%s", text);
}

/* lines 1-3, 4-10, 11-14: errors below are placed by these line numbers */
#define CASE_HDR "[case]\nsteps = 10\nworld_size = 2\n"
#define MODEL "[model]\nvocab = 256\nhidden = 64\nffn = 128\nlayers = 2\nseq = 16\nbatch = 2\n"
#define RUNS "[run a]\nrecipe = bf16\n[run b]\nrecipe = fp8_rowwise\n"
#define BASE CASE_HDR MODEL RUNS

#endif
