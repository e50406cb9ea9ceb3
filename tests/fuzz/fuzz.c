/*
 * fuzz.c: the fuzz driver of every parser of lockstep's input files (ci/fuzz runs AFL++ on
 * it): 'lks_fuzz TARGET FILE' parses FILE as TARGET says and exits 0 when the parser
 * accepts it, 2 when it rejects it as bad input (the message on stderr), 3 on any other
 * failure; a crash or a hang is the parser's bug. 'lks_fuzz --list' prints the targets, one
 * line each: the name, then the name the input file must have (a case takes its name from
 * its file's), for ci/fuzz to read.
 *
 * A later parser is one row in lks_fuzz_targets and a folder of seeds,
 * tests/fuzz/seeds/<target>/, whose files named ok_* the parser must accept and bad_* reject
 * (test_fuzz checks that with this driver built by the ordinary compiler).
 *
 * Built by afl-clang-fast (the LOCKSTEP_FUZZ build), the parser runs in AFL++'s persistent
 * mode: one process parses thousands of inputs, each written by afl-fuzz to the same FILE.
 * So a parser must leave no state behind; what it leaks is found by ci/fuzz replaying the
 * corpus one input per process with LeakSanitizer. Built otherwise, it parses FILE once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/cli/cmd.h"
#include "harness/probe/combo.h"
#include "harness/store/golden.h"
#include "harness/import/import.h"
#include "kernels/err.h"
#include "../import/titan_twice.h"

/* Each returns an exit code: LKS_EXIT_OK accepted, LKS_EXIT_USAGE rejected, else failed. */

static int lks_fuzz_case(const char *path)
{
	lks_case c;
	int rc = lks_case_load(path, NULL, 0, &c);

	if (rc == 0)
		lks_case_release(&c);
	return rc ? LKS_EXIT_USAGE : LKS_EXIT_OK;
}

static int lks_fuzz_combo(const char *path)
{
	lks_combos cs;
	int rc = lks_combos_load(path, &cs);

	if (rc == 0)
		lks_combos_release(&cs);
	return rc ? LKS_EXIT_USAGE : LKS_EXIT_OK;
}

static int lks_fuzz_golden(const char *path)
{
	lks_stored_run g;
	int rc = lks_golden_read(path, &g);

	lks_stored_run_release(&g);  /* also after an error: a half-read file is freed the same way */
	return rc == 0 ? LKS_EXIT_OK : lks_exit_code(rc);
}

/* A golden class's tolerances.ini, read for two recipes (a section found or not). */
static int lks_fuzz_tolerances(const char *path)
{
	static const char *const recipes[] = { "bf16", "fp8_rowwise" };
	double rtol, atol;

	for (size_t i = 0; i < sizeof(recipes) / sizeof(recipes[0]); i++) {
		int rc = lks_golden_tolerance_file(path, recipes[i], &rtol, &atol);

		if (rc == LKS_E_BAD_INPUT)
			return LKS_EXIT_USAGE;
		if (rc != 0 && rc != LKS_E_MISSING)
			return LKS_EXIT_INFRA;
		if (rc == 0 && !(rtol >= 0 && atol >= 0))
			abort();  /* the parser lets no negative or NaN tolerance through */
	}
	return LKS_EXIT_OK;
}

/* An import format's parser and the driver's checks, with no store. */
static int lks_fuzz_import(const char *fmt, const char *path)
{
	lks_import_opts o = { .fmt = lks_import_format_find(fmt), .case_name = "c",
	                      .run_name = "r" };
	lks_import_result res;
	int rc = lks_import_files(NULL, &o, &path, 1, &res);

	return rc == 0 ? LKS_EXIT_OK : lks_exit_code(rc);
}

/* torchtitan's, and its common lines read at once held to the whole way's reading of
   them (../titan_twice.h): a difference aborts, a crash to the fuzzer. */
static int lks_fuzz_torchtitan(const char *path)
{
	static char text[1 << 20];
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(text, 1, sizeof(text), f) : 0;
	char why[1200];

	if (f)
		fclose(f);
	if (lks_titan_twice(text, n, why, sizeof(why))) {
		fprintf(stderr, "lks_fuzz: torchtitan read two ways differs: %s\n", why);
		abort();
	}
	return lks_fuzz_import("torchtitan", path);
}
static int lks_fuzz_megatron_log(const char *path)
{
	return lks_fuzz_import("megatron-log", path);
}
static int lks_fuzz_megatron_golden(const char *path)
{
	return lks_fuzz_import("megatron-golden", path);
}
static int lks_fuzz_jsonl(const char *path) { return lks_fuzz_import("jsonl", path); }
static int lks_fuzz_nanogpt(const char *path) { return lks_fuzz_import("nanogpt", path); }
static int lks_fuzz_maxtext(const char *path) { return lks_fuzz_import("maxtext", path); }
static int lks_fuzz_nemo(const char *path) { return lks_fuzz_import("nemo", path); }
static int lks_fuzz_composer(const char *path) { return lks_fuzz_import("composer", path); }
static int lks_fuzz_hf(const char *path) { return lks_fuzz_import("hf-trainer", path); }
static int lks_fuzz_tb(const char *path) { return lks_fuzz_import("tensorboard", path); }
/* a --tag-map file (import_tag_map.c): its pairs and their errors, under the sanitizers */
static int lks_fuzz_tag_map(const char *path)
{
	char arg[4200];
	lks_import_tag_map *m = NULL;
	int rc;

	snprintf(arg, sizeof(arg), "@%s", path);
	rc = lks_import_tag_map_parse(arg, NULL, &m);
	lks_import_tag_map_free(m);
	return rc == 0 ? LKS_EXIT_OK : lks_exit_code(rc);
}
static int lks_fuzz_titan_losses(const char *path)
{
	return lks_fuzz_import("torchtitan-losses", path);
}

static int lks_fuzz_tensor_jsonl(const char *path)
{
	return lks_fuzz_import("tensor-jsonl", path);
}

static int lks_fuzz_titan_numerics(const char *path)
{
	return lks_fuzz_import("titan-numerics", path);
}

static int lks_fuzz_megatron_tensors(const char *path)
{
	return lks_fuzz_import("megatron-tensors", path);
}

static int lks_fuzz_debugmode(const char *path)
{
	return lks_fuzz_import("debugmode", path);
}

static int lks_fuzz_te_debug(const char *path)
{
	return lks_fuzz_import("te-debug", path);
}

static const struct lks_fuzz_target {
	const char *name;
	const char *file;       /* the input's file name: a case file's is its case name */
	int (*parse)(const char *path);
} lks_fuzz_targets[] = {
	{ "case", "fuzz.ini", lks_fuzz_case },        /* harness/engine/case.c */
	{ "combo", "combos.ini", lks_fuzz_combo },    /* harness/probe/combo.c */
	{ "golden", "run.tsv", lks_fuzz_golden },     /* harness/store/golden.c */
	{ "tolerances", "tolerances.ini", lks_fuzz_tolerances },  /* harness/store/golden_class.c */
	{ "torchtitan", "train.log", lks_fuzz_torchtitan },        /* harness/import/import_torchtitan.c */
	{ "megatron-log", "train.log", lks_fuzz_megatron_log },
	{ "megatron-golden", "golden.json", lks_fuzz_megatron_golden },  /* import_megatron_golden.c */
	{ "jsonl", "metrics.jsonl", lks_fuzz_jsonl },
	{ "nanogpt", "train.log", lks_fuzz_nanogpt },  /* harness/import/import_nanogpt.c */
	{ "maxtext", "train.log", lks_fuzz_maxtext },  /* harness/import/import_maxtext.c */
	{ "torchtitan-losses", "losses.txt", lks_fuzz_titan_losses },  /* import_titan_losses.c */
	{ "nemo", "train.log", lks_fuzz_nemo },        /* harness/import/import_nemo.c */
	{ "composer", "train.log", lks_fuzz_composer },  /* harness/import/import_composer.c */
	{ "hf-trainer", "trainer_state.json", lks_fuzz_hf },  /* import_hf_trainer.c */
	{ "tensorboard", "events.out.tfevents.0", lks_fuzz_tb },  /* import_tensorboard.c */
	{ "tag-map", "tags.map", lks_fuzz_tag_map },  /* harness/import/import_tag_map.c */
	{ "tensor-jsonl", "trace.jsonl", lks_fuzz_tensor_jsonl },  /* import_tensor_jsonl.c */
	{ "te-debug", "nvdlfw_inspect_globalrank-0.log", lks_fuzz_te_debug },  /* import_te_debug.c */
	{ "debugmode", "rank_0.txt", lks_fuzz_debugmode },  /* import_debugmode{,_json}.c */
	{ "titan-numerics", "rank_0_activations.log", lks_fuzz_titan_numerics },
	                                              /* import_titan_numerics.c */
	{ "megatron-tensors", "rank0.jsonl", lks_fuzz_megatron_tensors },
	                                              /* import_megatron_tensors.c */
};

#define LKS_FUZZ_NTARGETS (sizeof(lks_fuzz_targets) / sizeof(lks_fuzz_targets[0]))

int main(int argc, char **argv)
{
	const struct lks_fuzz_target *t = NULL;
	int rc = LKS_EXIT_INFRA;

	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < LKS_FUZZ_NTARGETS; i++)
			printf("%s %s\n", lks_fuzz_targets[i].name, lks_fuzz_targets[i].file);
		return LKS_EXIT_OK;
	}
	for (size_t i = 0; argc == 3 && i < LKS_FUZZ_NTARGETS; i++)
		if (!strcmp(argv[1], lks_fuzz_targets[i].name))
			t = &lks_fuzz_targets[i];
	if (!t) {
		fprintf(stderr, "usage: lks_fuzz TARGET FILE | lks_fuzz --list\n");
		return LKS_EXIT_USAGE;
	}
#ifdef __AFL_HAVE_MANUAL_CONTROL
	__AFL_INIT();
	while (__AFL_LOOP(10000))
#endif
		rc = t->parse(argv[2]);
	if (rc != LKS_EXIT_OK)
		fprintf(stderr, "lks_fuzz: %s: %s\n", t->name, lks_errmsg());
	return rc;
}
