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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
/* An add_scalars series file (import_folder.c pairs it, import_tensorboard.c merges it):
   the input is copied into a run's folder made for it, as the series file of the launch
   of the folder's one event file (scalars of "lm loss" at steps 1 to 3, written here), and
   the folder is imported, then removed (a process killed between leaves one folder). */
static void lks_fuzz_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> 8 * i);
}

/* The run's event file at path: 0, or -1. */
static int lks_fuzz_run_file(const char *path)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -1;
	for (int step = 1; step <= 3; step++) {
		/* Event { step = 2: step, summary = 5: { value = 1: { tag = 1: "lm loss",
		   simple_value = 2: step / 2 } } } in a TFRecord */
		unsigned char ev[32] = { 0x10, (unsigned char)step, 0x2a, 16, 0x0a, 14, 0x0a, 7,
		                         'l', 'm', ' ', 'l', 'o', 's', 's', 0x15 };
		unsigned char head[12], tail[4];
		float v = step / 2.0f;
		uint32_t bits;

		memcpy(&bits, &v, 4);
		lks_fuzz_le(ev + 16, bits, 4);
		lks_fuzz_le(head, 20, 8);
		lks_fuzz_le(head + 8, lks_tfrecord_crc(head, 8), 4);
		lks_fuzz_le(tail, lks_tfrecord_crc(ev, 20), 4);
		if (fwrite(head, 1, 12, f) != 12 || fwrite(ev, 1, 20, f) != 20
		    || fwrite(tail, 1, 4, f) != 4)
			break;
	}
	return fclose(f) ? -1 : 0;
}

static int lks_fuzz_tb_series(const char *path)
{
	static char text[1 << 20];
	char run[64] = "/tmp/lks-fuzz-run-XXXXXX", dir[96], file[160], series[192];
	const char *runs[] = { run };
	lks_import_opts o = { .fmt = lks_import_format_find("tensorboard"), .case_name = "c",
	                      .run_name = "r" };
	lks_import_result res;
	FILE *in = fopen(path, "rb"), *out = NULL;
	size_t n = in ? fread(text, 1, sizeof(text), in) : 0;
	int rc = LKS_EXIT_INFRA;

	if (in)
		fclose(in);
	if (!mkdtemp(run))
		return LKS_EXIT_INFRA;
	snprintf(dir, sizeof(dir), "%s/Loss_train", run);
	snprintf(file, sizeof(file), "%s/events.out.tfevents.1767600000.h.7.0", run);
	snprintf(series, sizeof(series), "%s/events.out.tfevents.1767600001.h.7.1", dir);
	if (!mkdir(dir, 0700) && !lks_fuzz_run_file(file) && (out = fopen(series, "wb"))
	    && fwrite(text, 1, n, out) == n && !fclose(out)) {
		out = NULL;
		rc = lks_import_files(NULL, &o, runs, 1, &res);
		if (rc == 0 && res.unread)
			abort();  /* the file is of the run's launch: read, or refused */
		rc = rc == 0 ? LKS_EXIT_OK : lks_exit_code(rc);
	}
	if (out)
		fclose(out);
	unlink(series);
	unlink(file);
	rmdir(dir);
	rmdir(run);
	return rc;
}

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
	{ "tb-series", "events.out.tfevents.1", lks_fuzz_tb_series },  /* import_folder.c */
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
