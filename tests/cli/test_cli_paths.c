/*
 * test_cli_paths.c: an empty path given to any subcommand's option that takes one is bad
 * usage, exit 2 (125 for 'lockstep check', which bisect skips), said as such before any
 * work, and nothing is made: "" would otherwise open a temporary SQLite database (run,
 * import: exit 3), stand for the default folder (run --golden, golden update --golden,
 * report --templates), write under / (bench --dir), or fail as a write only after the run
 * (report -o, export -o, run --junit: exit 3). One table over every such option, each
 * given with everything else it needs, so that the empty path is what is refused.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_bin.h"

/* %1$s: the folder of cases, for the rows that run one */
#define CASE "'%1$s/fp8_recipes.ini'"
#define FAULT "'%1$s/faults/bitflip.ini'"

static const struct {
	const char *args;
	int code;
	const char *says;
} lks_empty_paths[] = {
	{ "report --db ok.db -o ''", 2, "report: -o wants a path, not ''" },
	{ "report --db ok.db --out ''", 2, "report: --out wants a path, not ''" },
	{ "report --db ok.db --templates '' -o r", 2, "report: --templates wants a path" },
	{ "report --db '' -o r", 2, "report: --db wants a path" },
	{ "run --steps 1 --quiet --db '' " CASE, 2, "run: --db wants a path" },
	{ "run --steps 1 --quiet --db j.db --junit '' " CASE, 2, "run: --junit wants a path" },
	{ "run --steps 1 --quiet --db g.db --golden '' " CASE, 2, "run: --golden wants a path" },
	{ "check --steps 1 --quiet --db '' " CASE, 125, "--db wants a path" },
	{ "export --format jsonl 1 --db ''", 2, "export: --db wants a path" },
	{ "export --format jsonl 1 --db ok.db -o ''", 2, "export: -o wants a path" },
	{ "diff --db '' 1 2", 2, "diff: --db wants a path" },
	{ "golden update --db '' " CASE, 2, "golden update: --db wants a path" },
	{ "golden update --db ok.db --golden '' " CASE, 2, "golden update: --golden wants a path" },
	{ "golden measure --db ''", 2, "golden measure: --db wants a path" },
	{ "golden measure --db ok.db --golden ''", 2, "golden measure: --golden wants a path" },
	{ "import --format jsonl a.jsonl --case c --run r --db ''", 2, "import: --db wants a path" },
	{ "import --follow --format jsonl a.jsonl --case c --run f --db ok.db --golden ''", 2,
	  "import: --golden wants a path" },
	{ "import --follow --format jsonl a.jsonl --case c --run f --db ok.db --reference-file ''",
	  2, "import: --reference-file wants a path" },
	{ "prune --db '' --keep 1", 2, "prune: no database ''" },
	{ "matrix --combos '' --db m.db --steps 1 " CASE, 2, "matrix: --combos wants a path" },
	{ "matrix --combos combos.ini --db '' --steps 1 " CASE, 2, "matrix: --db wants a path" },
	{ "matrix --combos combos.ini --db m.db --golden '' --steps 1 " CASE, 2,
	  "matrix: --golden wants a path" },
	{ "bisect --combos combos.ini --db '' --steps 1 " CASE, 2, "bisect: --db wants a path" },
	{ "reduce --good a --bad b --combos combos.ini --db '' --steps 1 " CASE, 2,
	  "reduce: --db wants a path" },
	{ "bench step --case '' --steps 2 --reps 1", 2, "bench step: --case wants a path" },
	{ "bench step --case " CASE " --dir '' --steps 2 --reps 1", 2, "bench step: --dir wants" },
	{ "bench import --dir '' --lines 100 --reps 1", 2, "bench import: --dir wants a path" },
	{ "bench store --dir '' --steps 2 --tensors 2 --reps 1", 2, "bench store: --dir wants" },
	{ "bench detect --dir '' " FAULT, 2, "bench detect: --dir wants a path" },
	/* an empty file or case named as an argument, not an option's value */
	{ "run --quiet --db p.db ''", 2, "cannot open ''" },
	{ "golden update --db ok.db ''", 2, "cannot open ''" },
	{ "import --format jsonl '' --case c --run r --db ok.db", 2, "cannot open ''" },
	{ "list ''", 2, "cannot open ''" },
};

/* The names in dir but the database the test made (its journal files come and go). */
static void names_in(const char *dir, char *out, size_t n)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "cd '%s' && ls -A | grep -v '^ok\\.db' | tr '\\n' ' '", dir);
	lks_run_sh(cmd, out, n);
}

Test(cli_paths, an_empty_path_is_bad_usage_for_every_option_that_takes_one, .timeout = 300)
{
	char dir[] = "/tmp/lks_test_cli_paths_XXXXXX", cases[600], env[700], args[2048], out[8192];
	char before[4096], after[4096];
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cases, sizeof(cases), "%s/cases", LKS_SRC);
	snprintf(env, sizeof(env), "cd '%s' &&", dir);
	/* a database with a suite and a run, a log, and combos: all but the empty path given */
	snprintf(args, sizeof(args), "run --steps 1 --quiet --db ok.db '%s/fp8_recipes.ini'", cases);
	cr_assert_leq(lks_run_bin(env, args, out, sizeof(out)), 1, "%s", out);
	snprintf(args, sizeof(args), "%s/a.jsonl", dir);
	cr_assert_not_null(f = fopen(args, "w"));
	fputs("{\"step\": 1, \"loss\": 2.5}\n", f);
	fclose(f);
	snprintf(args, sizeof(args), "%s/combos.ini", dir);
	cr_assert_not_null(f = fopen(args, "w"));
	fputs("[combo a]\nenv.LKS_X = 1\n[combo b]\nenv.LKS_X = 2\n", f);
	fclose(f);
	names_in(dir, before, sizeof(before));

	for (size_t i = 0; i < sizeof(lks_empty_paths) / sizeof(lks_empty_paths[0]); i++) {
		int code;

		snprintf(args, sizeof(args), lks_empty_paths[i].args, cases);
		code = lks_run_bin(env, args, out, sizeof(out));
		cr_expect_eq(code, lks_empty_paths[i].code, "'lockstep %s': exit %d: %s", args, code,
		             out);
		cr_expect(strstr(out, lks_empty_paths[i].says), "'lockstep %s': '%s' lacks '%s'", args,
		          out, lks_empty_paths[i].says);
	}
	names_in(dir, after, sizeof(after));
	cr_expect_str_eq(after, before, "made: '%s', before: '%s'", after, before);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}
