/*
 * test_case_limits.c: what a case file may be and ask for: the one name rule for cases,
 * runs and checks (and the golden paths made of them), only regular files up to 1 MiB
 * (a folder's *.ini that is none named),
 * control characters escaped in messages, the stated limits on ranks and tokens, and a run
 * larger than memory refused when read, by an estimate that is what a run allocates.
 * Case texts are written to files under a fresh mkdtemp directory per test (case_fixture.h).
 */
#include <criterion/criterion.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "case_fixture.h"
#include "harness/engine/case.h"
#include "harness/store/golden.h"
#include "harness/engine/runner.h"
#include "kernels/err.h"

/* ---- names, limits, input files ---- */

/* The case file name must fail to load with "<path>: bad case name '<shown>': want ..."
   (the path as the message shows it, escaped like the name). */
static void case_name_bad(const char *file, const char *shown)
{
	const char *path = put(file, BASE), *msg;
	char want[1024];
	lks_case c;

	snprintf(want, sizeof(want), ": bad case name '%s': want 1 to 63 letters, digits, '_', '-', "
	         "'.' or '+', starting with a letter, a digit or '_'", shown);
	cr_assert_neq(lks_case_load(path, NULL, 0, &c), 0, "'%s' loaded", file);
	msg = lks_errmsg();
	cr_assert(strlen(msg) > strlen(want) && !strcmp(msg + strlen(msg) - strlen(want), want),
	          "'%s' does not end in '%s'", msg, want);
	cr_assert_eq(strncmp(msg, tmpdir, strlen(tmpdir)), 0, "%s", msg);
}

Test(case, one_name_rule_for_cases_runs_and_checks, .init = setup, .fini = teardown)
{
	lks_case c;

	/* "...ini" would write its golden to golden/cpu/../, one folder above cpu/ */
	case_name_bad("...ini", "..");
	case_name_bad(".ini", ".ini");
	case_name_bad(".hidden.ini", ".hidden");
	case_name_bad("-rf.ini", "-rf");
	case_name_bad("a\nb.ini", "a\\x0ab");  /* shown escaped: the message stays one line */
	case_name_bad("a b.ini", "a b");
	case_name_bad("x234567890123456789012345678901234567890123456789012345678901234.ini",
	              "x234567890123456789012345678901234567890123456789012345678901234");
	/* what combos have always allowed, a case, a run and a check allow too */
	cr_assert_eq(lks_case_load(put("cuda-12.4+lto.ini", BASE "[run fp8.w2]\nrecipe = bf16\n"
	                               "[check gcc+lto-1.2]\nkind = finite\na = fp8.w2\n"), NULL, 0,
	                           &c), 0, "%s", lks_errmsg());
	cr_assert_str_eq(c.name, "cuda-12.4+lto");
	cr_assert_str_eq(c.runs[2].name, "fp8.w2");
	cr_assert_str_eq(c.checks[0].name, "gcc+lto-1.2");
	lks_case_release(&c);
	load_err(BASE "[run .x]\n", NULL, 0, ":15: bad run name '.x': want 1 to 63 letters, "
	         "digits, '_', '-', '.' or '+', starting with a letter, a digit or '_'");
	load_err(BASE "[check ..]\n", NULL, 0, ":15: bad check name '..': want 1 to 63 letters, "
	         "digits, '_', '-', '.' or '+', starting with a letter, a digit or '_'");
}

/* Names read back from a database become paths only when they keep the rule. */
Test(case, golden_paths_keep_the_name_rule)
{
	char path[256];

	cr_assert_eq(lks_golden_path("golden", "cpu", "fp8.w2", "a", path, sizeof(path)), 0);
	cr_assert_str_eq(path, "golden/cpu/fp8.w2/a.tsv");
	cr_assert_neq(lks_golden_path("golden", "cpu", "..", "a", path, sizeof(path)), 0,
	              "golden/cpu/../a.tsv");
	cr_assert_not_null(strstr(lks_errmsg(), "bad case name '..'"), "%s", lks_errmsg());
	cr_assert_neq(lks_golden_path("golden", "cpu", "x", "../../etc/a", path, sizeof(path)), 0);
	cr_assert_neq(lks_golden_path("golden", "../x", "x", "a", path, sizeof(path)), 0);
}

/* Writes a case of exactly size bytes: BASE, then comment lines. */
static const char *put_sized(const char *name, size_t size)
{
	char *text = malloc(size + 1);
	size_t n = strlen(BASE);
	const char *path;

	cr_assert_not_null(text);
	memcpy(text, BASE, n);
	while (n < size) {
		size_t line = size - n < 100 ? size - n : 100;

		memset(text + n, line > 1 ? '#' : '\n', line);
		text[n + line - 1] = '\n';
		n += line;
	}
	text[size] = 0;
	path = put(name, text);
	free(text);
	return path;
}

Test(case, only_regular_files_up_to_the_limit, .init = setup, .fini = teardown, .timeout = 30)
{
	char fifo[600], want[1024];
	const char *path;
	lks_case c;

	/* a FIFO would block the read forever: refused without waiting for a writer */
	snprintf(fifo, sizeof(fifo), "%s/pipe.ini", tmpdir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_neq(lks_case_load(fifo, NULL, 0, &c), 0);
	snprintf(want, sizeof(want), "'%s' is not a regular file (a FIFO): want a case file", fifo);
	cr_assert_str_eq(lks_errmsg(), want);
	/* 1 MiB loads; one byte more does not */
	path = put_sized("limit.ini", (size_t)1 << 20);
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	lks_case_release(&c);
	path = put_sized("over.ini", ((size_t)1 << 20) + 1);
	cr_assert_neq(lks_case_load(path, NULL, 0, &c), 0);
	snprintf(want, sizeof(want), "'%s' is 1048577 bytes, over the limit of 1048576 bytes for a "
	         "case file", path);
	cr_assert_str_eq(lks_errmsg(), want);
}

/* Two cases whose names differ only in case would share their golden folder on a
   case-insensitive file system: refused as two of one name. */
Test(case, two_cases_named_alike_but_for_case_are_refused, .init = setup, .fini = teardown)
{
	const char *args[2];
	char a[700], b[700];
	lks_case *cases;
	int n;

	snprintf(a, sizeof(a), "%s", put("Base.ini", BASE));
	snprintf(b, sizeof(b), "%s", put("base.ini", BASE));
	args[0] = a;
	args[1] = b;
	cr_assert_neq(lks_cases_load(args, 2, NULL, 0, &cases, &n), 0, "both loaded");
	cr_assert_not_null(strstr(lks_errmsg(), "two cases named 'base'"), "%s", lks_errmsg());
	lks_cases_release(cases, n);
}

/* In a suite's folder, a *.ini that is no case file (a case moved away from its symlink, a
   folder, a loop of links) is named, as it is when given alone: skipped, its checks would
   pass unseen. */
Test(case, a_folders_ini_that_is_no_file_is_named, .init = setup, .fini = teardown)
{
	static const struct { const char *link, *to, *why; } bad[] = {
		{ "b_moved.ini", "../moved/b_moved.ini", "cannot open '%s': No such file or directory" },
		{ "c_dir.ini", NULL, "'%s' is not a regular file (a directory): want a case file" },
		{ "d_loop.ini", "d_loop.ini", "cannot open '%s': Too many levels of symbolic links" },
	};
	char dir[600], rel[64], path[700], want[1024];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[1] = { dir };
		lks_case *cases;
		int n;

		snprintf(dir, sizeof(dir), "%s/suite%zu", tmpdir, i);
		cr_assert_eq(mkdir(dir, 0700), 0);
		snprintf(rel, sizeof(rel), "suite%zu/a_good.ini", i);
		put(rel, BASE);
		snprintf(path, sizeof(path), "%s/%s", dir, bad[i].link);
		cr_assert_eq(bad[i].to ? symlink(bad[i].to, path) : mkdir(path, 0700), 0, "%s", path);
		cr_assert_neq(lks_cases_load(args, 1, NULL, 0, &cases, &n), 0, "%s was skipped",
		              bad[i].link);
		snprintf(want, sizeof(want), bad[i].why, path);
		cr_assert_str_eq(lks_errmsg(), want);
		lks_cases_release(cases, n);
	}
}

Test(case, control_characters_in_messages_are_escaped, .init = setup, .fini = teardown)
{
	const char *msg;

	load_err(BASE "re\x1b[2Jcipe = bf16\n", NULL, 0,
	         ":15: unknown key 're\\x1b[2Jcipe' in [run b]");
	load_err(BASE "[run c]\nrecipe = bf\x07\x7f\n", NULL, 0,
	         ":16: unknown recipe 'bf\\x07\\x7f' in [run c] (bf16, fp8_tensorwise, "
	         "fp8_rowwise, fp8_rowwise_gw_hp, fp8_delayed, fp32)");
	msg = lks_errmsg();
	for (const char *p = msg; *p; p++)
		cr_assert(!((unsigned char)*p < 0x20 || *p == 0x7f), "raw control byte in '%s'", msg);
}

Test(case, ranks_and_tokens_have_stated_limits, .init = setup, .fini = teardown)
{
	/* ranks are threads: 65536 of them cannot start; 1024 is the stated limit */
	load_err("[case]\nsteps = 1\nworld_size = 65536\n" MODEL RUNS, NULL, 0,
	         ":3: bad value '65536' for 'world_size' in [case]: want an integer in [1, 1024]");
	load_err(BASE "[run c]\nrecipe = bf16\nworld_size = 2048\n", NULL, 0,
	         ":17: bad value '2048' for 'world_size' in [run c]: want an integer in [1, 1024]");
	/* 2^20 sequences of 4096 tokens: 2^32 tokens a step, past the runner's int counts */
	load_err("[case]\nsteps = 1\n[model]\nvocab = 16\nhidden = 8\nffn = 8\nlayers = 1\n"
	         "seq = 4096\nbatch = 1048576\n[run a]\nrecipe = bf16\n", NULL, 0,
	         ":3: the global batch of 4294967296 tokens (model.batch x world_size x seq) is over "
	         "the 2147483647 a step can take");
}

Test(case, a_run_larger_than_memory_is_refused_when_read, .init = setup, .fini = teardown)
{
	const char *path = put("big.ini", "[case]\nsteps = 1\n[model]\nvocab = 1048576\n"
	                       "hidden = 1048576\nffn = 8\nlayers = 1\nseq = 4\nbatch = 1\n"
	                       "[run small]\nrecipe = bf16\n");
	char want[700];
	lks_case c;

	/* the embedding alone is 2^40 floats, 4 TiB: more than any machine this runs on */
	cr_assert_neq(lks_case_load(path, NULL, 0, &c), 0, "a 4 TiB model loaded");
	snprintf(want, sizeof(want), "%s:10: run 'small' needs about ", path);
	cr_assert_eq(strncmp(lks_errmsg(), want, strlen(want)), 0, "%s", lks_errmsg());
	cr_assert_not_null(strstr(lks_errmsg(), " GiB of memory (1 rank, estimated from the "
	                          "model's sizes, the recipe and checkpointing), more than the "),
	                   "%s", lks_errmsg());
	/* a small model made large by --set: the check follows overrides */
	const char *sets[] = { "model.vocab=1048576", "model.hidden=1048576" };
	path = put("small.ini", BASE);
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	lks_case_release(&c);
	cr_assert_neq(lks_case_load(path, sets, 2, &c), 0, "a 4 TiB model loaded");
	cr_assert_not_null(strstr(lks_errmsg(), ":11: run 'a' needs about "), "%s", lks_errmsg());
	cr_assert_not_null(strstr(lks_errmsg(), "(after --set)"), "%s", lks_errmsg());
}

struct heap_peak {
	size_t base, peak;
};

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void heap_on_step(void *arg, const lks_step_row *steps, int nsteps,
                         const lks_stat_row *stats, size_t nstats, char *const *names, int nnames)
{
	struct heap_peak *h = arg;
	size_t now = heap_in_use() - h->base;

	(void)steps, (void)nsteps, (void)stats, (void)nstats, (void)names, (void)nnames;
	h->peak = now > h->peak ? now : h->peak;
}

/* The estimate behind the memory check is what a run really holds while it trains,
   measured by malloc's own count, for one rank (GEMM threads, traced FP8 operands) and for
   four ranks, with and without checkpointing. */
Test(case, memory_estimate_is_what_a_run_allocates, .init = setup, .fini = teardown)
{
	static const char *const runs[] = {
		"[run a]\nrecipe = fp8_rowwise\nworld_size = 1\n",
		"[run a]\nrecipe = bf16\nworld_size = 4\ncheckpoint = blocks\n",
		"[run a]\nrecipe = fp8_delayed\nworld_size = 2\n",
	};

#if defined(__SANITIZE_ADDRESS__)
	/* its malloc keeps no count that mallinfo2 reads, and its redzones would be counted */
	cr_skip_test("AddressSanitizer replaces malloc: nothing to measure against");
#endif
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char text[1024];
		struct heap_peak h = { 0 };
		lks_runner_opts o = { .steps = 1, .threads = 2, .on_step = heap_on_step,
		                      .on_step_arg = &h };
		lks_run_result res;
		lks_case c;
		double est;

		snprintf(text, sizeof(text), "[case]\nsteps = 2\nworld_size = 4\n[model]\n"
		         "vocab = 256\nhidden = 128\nffn = 256\nlayers = 8\nseq = 128\nbatch = 2\n%s",
		         runs[i]);
		load_ok(text, &c);
		est = lks_run_bytes(&c, &c.runs[0]);
		h.base = heap_in_use();
		cr_assert_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
		/* 2%: the estimate leaves out only what does not grow with the model's depth: the
		   GEMM threads' packing panels (1.3% of the single rank here), thread pools and a
		   step's bookkeeping (the multi-rank runs match to 0.1%); the smallest buffer set
		   it could forget or count twice, a replica's parameters, is 2.2% */
		cr_assert(est >= 0.98 * (double)h.peak && est <= 1.02 * (double)h.peak,
		          "%s: estimated %.0f bytes, a step held %zu", runs[i], est, h.peak);
		lks_case_release(&c);
	}
}
