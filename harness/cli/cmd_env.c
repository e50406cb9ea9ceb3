/* cmd_env.c: 'lockstep env': print the environment fingerprint. */
#include <stdio.h>
#include <string.h>

#include "build_info.h"
#include "harness/cli/cmd.h"
#include "harness/store/fingerprint.h"
#include "kernels/err.h"
#include "kernels/nvml/nvml.h"

static const char lks_env_usage[] =
	"usage: lockstep env [--json] [--version]\n"
	"\n"
	"Prints the fingerprint every run stores: lockstep version and git commit, compiler and\n"
	"flags, CPU model, the ISA path the CPU kernels take (LKS_ISA forces one), library\n"
	"versions, CUDA runtime/driver/cuBLASLt and GPU when built with CUDA, and environment\n"
	"variables that change numerics (NCCL_ALGO, ...). Two results that differ in bits should\n"
	"first be compared by their fingerprints. And whether NVML is there (GPU health, read\n"
	"before and after each run; LKS_NVML_LIB names the library), and if not, why.\n"
	"\n";

int cmd_env(int argc, char **argv)
{
	lks_fingerprint fp;
	lks_nvml *nvml;
	int json = 0, version = 0, rc;
	const lks_option opts[] = {
		LKS_OPT_FLAG("--json", &json, "one JSON object instead of aligned text"),
		LKS_OPT_FLAG("--version", &version, "only 'lockstep <version> (<commit>)'"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "env", .usage = lks_env_usage, .tail = NULL, .width = 11 };

	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, NULL)) != 0)
		return lks_opt_exit(rc);
	if (version) {
		printf("lockstep %s (%s)\n", LKS_VERSION, LKS_GIT_COMMIT);
		return LKS_EXIT_OK;
	}
	lks_fingerprint_collect(&fp);
	if (lks_nvml_open(NULL, &nvml)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		return LKS_EXIT_INFRA;
	}
	if (lks_nvml_present(nvml))
		lks_fingerprint_add(&fp, "nvml", "present: %d GPU%s (%s)", lks_nvml_present(nvml),
		                    lks_nvml_present(nvml) > 1 ? "s" : "", lks_nvml_path(nvml));
	else
		lks_fingerprint_add(&fp, "nvml", "absent: %s", lks_nvml_reason(nvml));
	lks_nvml_close(nvml);
	lks_fingerprint_print(&fp, stdout, json);
	return LKS_EXIT_OK;
}
