/*
 * main.c: the 'lockstep' program: global options, the table of subcommands, and the only
 * place that turns results into an exit status.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cmd.h"
#include "harness/engine/launch.h"
#include "kernels/cpu/isa.h"
#include "kernels/err.h"

struct lks_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

#define LKS_COMMAND_ROW(name, summary) { #name, cmd_##name, summary },
static const struct lks_cmd lks_cmds[] = { LKS_COMMANDS(LKS_COMMAND_ROW) };
#undef LKS_COMMAND_ROW

static const char lks_help[] =
	"usage: lockstep [--version] [--help] <command> [<args>]\n"
	"\n"
	"lockstep trains a small model several times side by side (BF16 reference, FP8 recipes,\n"
	"activation checkpointing, many ranks), records traces in SQLite and says where numerics\n"
	"first went wrong. See README.md, and cases/README.md for the case files.\n"
	"\n"
	"commands:\n";

static const char lks_help_tail[] =
	"\n"
	"'lockstep <command> --help' explains a command.\n"
	"\n"
	"environment:\n"
	"  LKS_ISA=scalar|avx2|avx512   force the CPU kernels' instruction-set path; every path\n"
	"                               gives the same bits, only the speed differs\n"
	"  LKS_GOLDEN_DIR=DIR           where golden files are (default: golden)\n"
	"\n"
	"exit codes: 0 all checks pass, 1 a check failed, 2 bad usage or input,\n"
	"            3 infrastructure failure\n";

static void lks_print_help(FILE *out)
{
	fputs(lks_help, out);
	for (size_t i = 0; i < sizeof(lks_cmds) / sizeof(lks_cmds[0]); i++)
		fprintf(out, "  %-8s %s\n", lks_cmds[i].name, lks_cmds[i].summary);
	fputs(lks_help_tail, out);
}

int main(int argc, char **argv)
{
	const char *isa_env = getenv("LKS_ISA");
	lks_launch launch;
	lks_isa isa;

	if (argc < 2) {
		lks_print_help(stderr);
		return LKS_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0
	    || strcmp(argv[1], "help") == 0) {
		lks_print_help(stdout);
		return LKS_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		char *env_argv[] = { "env", "--version", NULL };

		return cmd_env(2, env_argv);
	}
	/* a bad LKS_ISA is bad input, not something to ignore silently; to 'check' it is a
	   version that cannot be tested here (125), which 'git bisect run' must not take for
	   bad, nor a probe of matrix or bisect for a crash */
	if (isa_env && *isa_env
	    && (lks_isa_parse(isa_env, &isa) != 0 || lks_isa_force(isa) != 0)) {
		lks_usage("LKS_ISA: %s", lks_errmsg());
		return strcmp(argv[1], "check") ? LKS_EXIT_USAGE : LKS_EXIT_CANNOT_TEST;
	}
	/* several processes of one launch would each write the same files */
	if (strcmp(argv[1], "run") && strcmp(argv[1], "check")
	    && lks_launch_detect(getenv, &launch) == 0 && launch.size > 1)
		return lks_usage("'lockstep %s' runs as one process: only run and check run as the "
		                 "%d processes %s started", argv[1], launch.size, launch.launcher);
	for (size_t i = 0; i < sizeof(lks_cmds) / sizeof(lks_cmds[0]); i++)
		if (strcmp(argv[1], lks_cmds[i].name) == 0)
			return lks_cmds[i].fn(argc - 1, argv + 1);
	lks_usage("'%s' is not a lockstep command", argv[1]);
	lks_print_help(stderr);
	return LKS_EXIT_USAGE;
}
