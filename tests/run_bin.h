/*
 * run_bin.h: the tests that run the built program as a user would (LKS_BIN, set by
 * tests/CMakeLists.txt) share this one way to do it, and the way to show that a command
 * reads a folder without writing to it.
 */
#ifndef LKS_TESTS_RUN_BIN_H
#define LKS_TESTS_RUN_BIN_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the shell command cmd (its stderr joined to stdout by the caller or not); returns
   the exit code and, if out is not NULL, the first n-1 bytes of what it printed. A command
   killed by a signal fails the test. */
static inline int lks_run_sh(const char *cmd, char *out, size_t n)
{
	FILE *p = popen(cmd, "r");
	size_t len = 0;
	int status;

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

/* Runs 'env LKS_BIN args' through the shell (env: assignments such as "LKS_ISA=scalar",
   or NULL); returns the exit code and, if out is not NULL, the first n-1 bytes of stdout
   and stderr together. A program killed by a signal fails the test. */
static inline int lks_run_bin(const char *env, const char *args, char *out, size_t n)
{
	char cmd[4096];

	if ((size_t)snprintf(cmd, sizeof(cmd), "%s '%s' %s 2>&1", env ? env : "", LKS_BIN, args)
	    >= sizeof(cmd))
		cr_assert_fail("command longer than %zu bytes", sizeof(cmd));
	return lks_run_sh(cmd, out, n);
}

/* Makes the folder dir and what it holds read-only (chmod a-w, readable by all) and
   returns what to put before a command line (lks_run_bin's env) so that it cannot write
   there: nothing for a user other than root; for root, whom file modes do not stop, setpriv
   to run it as nobody. Skips the test where that cannot be had (no setpriv, or nobody
   cannot run LKS_BIN); 'chmod -R u+w dir' undoes it. */
static inline const char *lks_read_only(const char *dir)
{
	const char *who = geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups" : "";
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "chmod -R a-w,a+rX '%s'", dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(cmd, sizeof(cmd), "%s sh -c \"! touch '%s/.probe' 2>/dev/null && '%s' --help "
	         ">/dev/null\"", who, dir, LKS_BIN);
	if (system(cmd) != 0)
		cr_skip_test("cannot run the program where '%s' is read-only to it (%s)", dir,
		             *who ? "as nobody, through setpriv" : "after chmod a-w");
	return who;
}

/* The names, sizes and SHA-256 of what the folder dir holds (malloc'd): equal before and
   after a command that must neither change a file nor make one. */
static inline char *lks_dir_state(const char *dir)
{
	char cmd[1024], *out = calloc(1, 65536);
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "cd '%s' && ls -Al --time-style=+ | sed 1d && find . -type f "
	         "-exec sha256sum {} + | sort", dir);
	cr_assert_not_null(out);
	cr_assert_not_null(p = popen(cmd, "r"));
	n = fread(out, 1, 65535, p);
	out[n] = 0;
	cr_assert_eq(pclose(p), 0, "%s", cmd);
	return out;
}

#endif
