/* cmd_env.c: 'lockstep env': print the environment fingerprint. */
#include <stdio.h>
#include <string.h>

#include "build_info.h"
#include "harness/cli/cmd.h"
#include "harness/store/fingerprint.h"

static const char lks_env_help[] =
	"usage: lockstep env [--json] [--version]\n"
	"\n"
	"Prints the fingerprint every run stores: lockstep version and git commit, compiler and\n"
	"flags, CPU model, the ISA path the CPU kernels take (LKS_ISA forces one), library\n"
	"versions, CUDA runtime/driver/cuBLASLt and GPU when built with CUDA, and environment\n"
	"variables that change numerics (NCCL_ALGO, ...). Two results that differ in bits should\n"
	"first be compared by their fingerprints.\n"
	"\n"
	"  --json      one JSON object instead of aligned text\n"
	"  --version   only 'lockstep <version> (<commit>)'\n";

int cmd_env(int argc, char **argv)
{
	lks_fingerprint fp;
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("lockstep %s (%s)\n", LKS_VERSION, LKS_GIT_COMMIT);
			return LKS_EXIT_OK;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(lks_env_help, stdout);
			return LKS_EXIT_OK;
		} else {
			lks_usage("env: unknown option '%s'", argv[i]);
			fputs(lks_env_help, stderr);
			return LKS_EXIT_USAGE;
		}
	}
	lks_fingerprint_collect(&fp);
	lks_fingerprint_print(&fp, stdout, json);
	return LKS_EXIT_OK;
}
