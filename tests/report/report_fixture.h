/*
 * report_fixture.h: what the report's tests (test_report.c, test_report_swap.c,
 * test_report_query.c) share: the two cases and the temporary folder they are run into
 * (one suite, exit 1: a check fails on purpose), a shell command's exit status, and a
 * file's text and size. LKS_BIN is the built program (tests/report/CMakeLists.txt).
 */
#ifndef LKS_TESTS_REPORT_FIXTURE_H
#define LKS_TESTS_REPORT_FIXTURE_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char case_text[] =
	"[case]\nsteps = 3\nseed = 7\nworld_size = 2\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
	"[run bf16]\nrecipe = bf16\n"
	"[run fp8]\nrecipe = fp8_rowwise\n"
	"[run fp8_ac]\nrecipe = fp8_rowwise\ncheckpoint = blocks\n"
	"[check tracks]\nkind = close\na = fp8\nb = bf16\nmetric = loss\n"
	"rtol = 0              ; fails on purpose: FP8 never equals BF16 exactly\n"
	"[check ac_neutral]\nkind = bitwise\na = fp8_ac\nb = fp8\n";

/* A second case of the same suite: one BF16 run, so no FP8 plot and no pair to compare. */
static const char plain_text[] =
	"[case]\nsteps = 2\nseed = 7\nworld_size = 1\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
	"[run bf16]\nrecipe = bf16\n";

/* The exit status of a shell command line. */
static inline int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert_not_null(f, "cannot open '%s'", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	cr_assert_not_null(buf = calloc((size_t)n + 1, 1));
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static inline long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static inline int have(const char *prog)
{
	return sh("command -v %s >/dev/null 2>&1", prog) == 0;
}

static inline void write_text(const char *dir, const char *name, const char *text)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* A temporary folder with both cases run into t.db, one suite (exit 1: the rtol 0 check
   fails). */
static inline void setup(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/lks-test-report-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	write_text(dir, "tiny.ini", case_text);
	write_text(dir, "plain.ini", plain_text);
	cr_assert_eq(sh("'%s' run '%s/tiny.ini' '%s/plain.ini' --db '%s/t.db' --quiet --threads 1 "
	                ">/dev/null", LKS_BIN, dir, dir, dir), 1, "the run must store a failing check");
}

static inline void teardown(const char *dir)
{
	sh("rm -rf '%s'", dir);
}

#endif
