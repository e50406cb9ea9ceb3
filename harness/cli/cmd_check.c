/*
 * cmd_check.c: 'lockstep check': 'lockstep run' with the exit codes 'git bisect run'
 * understands: 0 every check passes (good), 1 a check failed (bad), 125 the commit
 * cannot be tested (bad usage or input, infrastructure failure), so bisect skips it.
 */
#include <stdio.h>
#include <string.h>

#include "harness/verify/check.h"
#include "harness/cli/cmd.h"

static const char lks_check_help[] =
	"usage: lockstep check [run options] CASE|DIR...\n"
	"\n"
	"Runs the cases and evaluates their checks exactly as 'lockstep run' does (same options,\n"
	"see 'lockstep run --help'), and exits for 'git bisect run':\n"
	"  0    every check passed (or failed where it was expected to)\n"
	"  1    a check failed: this version is bad\n"
	"  125  this version cannot be tested (bad usage such as a --run or --check name no\n"
	"       case has, a bad case file, bad database, a failure of the machine, or no check\n"
	"       evaluated: all skipped or unsupported, or a planted fault --steps stops\n"
	"       before): bisect skips it; never 0, which bisect would take for good\n"
	"\n"
	"example:\n"
	"  git bisect run sh -c 'ci/setup >/dev/null && build/lockstep check cases/fp8_recipes.ini \\\n"
	"      --db /tmp/bisect.db --quiet'\n";

int cmd_check(int argc, char **argv)
{
	lks_check_tally t;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(lks_check_help, stdout);
			return LKS_EXIT_OK;
		}
	}
	rc = lks_run_cases(argc, argv, &t);
	/* a planted fault --steps stopped before never acted: its checks say nothing, good or
	   bad (an expected failure not found) */
	if ((rc == LKS_EXIT_OK || rc == LKS_EXIT_FAIL) && t.unplanted) {
		fprintf(stderr, "lockstep: check: %d planted fault%s never acted (--steps stops "
		        "before %s): this version is not tested\n", t.unplanted,
		        t.unplanted == 1 ? "" : "s", t.unplanted == 1 ? "it" : "them");
		return LKS_EXIT_CANNOT_TEST;
	}
	/* every check skipped (--run left out their runs) or unsupported: nothing was tested */
	if (rc == LKS_EXIT_OK && t.passed + t.expected_fail == 0) {
		fprintf(stderr, "lockstep: check: no check was evaluated (%d skipped, %d unsupported): "
		        "this version is not tested\n", t.skipped, t.unsupported);
		return LKS_EXIT_CANNOT_TEST;
	}
	return rc == LKS_EXIT_OK || rc == LKS_EXIT_FAIL ? rc : LKS_EXIT_CANNOT_TEST;
}
