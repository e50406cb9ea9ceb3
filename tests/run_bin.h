/*
 * run_bin.h: the tests that run the built program as a user would (LKS_BIN, set by
 * tests/CMakeLists.txt) share this one way to do it.
 */
#ifndef LKS_TESTS_RUN_BIN_H
#define LKS_TESTS_RUN_BIN_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

/* Runs 'env LKS_BIN args' through the shell (env: assignments such as "LKS_ISA=scalar",
   or NULL); returns the exit code and, if out is not NULL, the first n-1 bytes of stdout
   and stderr together. A program killed by a signal fails the test. */
static inline int lks_run_bin(const char *env, const char *args, char *out, size_t n)
{
	char cmd[4096];
	FILE *p;
	size_t len = 0;
	int status;

	if ((size_t)snprintf(cmd, sizeof(cmd), "%s '%s' %s 2>&1", env ? env : "", LKS_BIN, args)
	    >= sizeof(cmd))
		cr_assert_fail("command longer than %zu bytes", sizeof(cmd));
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	if (out) {
		while (len + 1 < n && fgets(out + len, (int)(n - len), p))
			len = strlen(out);
		out[len] = 0;
	}
	while (fgetc(p) != EOF)
		;
	status = pclose(p);
	cr_assert(WIFEXITED(status), "'%s' did not exit normally", cmd);
	return WEXITSTATUS(status);
}

#endif
