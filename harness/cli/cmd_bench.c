/*
 * cmd_bench.c: 'lockstep bench <subject>': benchmarks measured as ratios against a peer in
 * the same run. One row per subject; each subject lives in harness/bench_<subject>.c.
 */
#include <stdio.h>
#include <string.h>

#include "harness/bench/bench.h"
#include "harness/cli/cmd.h"

struct lks_bench_subject {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct lks_bench_subject lks_bench_subjects[] = {
	{ "gemm", lks_bench_gemm, "FP8 (E4M3, rowwise scales) and BF16 GEMM vs OpenBLAS sgemm" },
	{ "quant", lks_bench_quant, "rowwise amax + scale + FP8 cast vs memcpy of the same bytes" },
	{ "store", lks_bench_store, "SQLite ingest of tensor-stat rows (target >= 1M rows/s)" },
	{ "step", lks_bench_step, "training step: tracing cost, GEMM share, FP8 vs BF16 loss gap" },
	{ "import", lks_bench_import, "lockstep import of a torchtitan log vs wc -l (target >= 0.25x)" },
	{ "tensors", lks_bench_tensors, "two tensor traces imported and compared (target < 10 s)" },
	{ "trace", lks_bench_trace, "lockstep-trace on a 64 MiB tensor vs memcpy (target <= 1.2x)" },
	{ "detect", lks_bench_detect, "which checks catch each planted fault, and at which step" },
};

static void lks_bench_help(FILE *out)
{
	fputs("usage: lockstep bench <subject> [<options>]\n"
	      "\n"
	      "Measures a lockstep kernel and a peer on the same shapes in the same run and prints\n"
	      "the ratio, so the number means the same on any machine. Results are bit-exact on\n"
	      "every ISA path; set LKS_ISA to compare paths.\n"
	      "\n"
	      "subjects:\n", out);
	for (size_t i = 0; i < sizeof(lks_bench_subjects) / sizeof(lks_bench_subjects[0]); i++)
		fprintf(out, "  %-6s %s\n", lks_bench_subjects[i].name, lks_bench_subjects[i].summary);
	fputs("\n'lockstep bench <subject> --help' lists its options.\n", out);
}

int cmd_bench(int argc, char **argv)
{
	if (argc < 2) {
		lks_usage("bench: which subject?");
		lks_bench_help(stderr);
		return LKS_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		lks_bench_help(stdout);
		return LKS_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(lks_bench_subjects) / sizeof(lks_bench_subjects[0]); i++)
		if (strcmp(argv[1], lks_bench_subjects[i].name) == 0)
			return lks_bench_subjects[i].fn(argc - 1, argv + 1);
	lks_usage("bench: unknown subject '%s'", argv[1]);
	lks_bench_help(stderr);
	return LKS_EXIT_USAGE;
}
