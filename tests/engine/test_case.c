/*
 * test_case.c: case files (harness/engine/case.c): every key read into its field, the defaults,
 * each mistake reported with its file and line, --set overrides, the expansion of
 * directories, the example of DESIGN.md, and the nightly cases in cases/. (The one name rule,
 * the limits on what a case may ask for and escaped messages: test_case_limits.c.)
 * Case texts are written to files under a fresh mkdtemp directory per test (case_fixture.h).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "case_fixture.h"
#include "harness/engine/case.h"
#include "kernels/backend.h"
#include "kernels/err.h"

static const char full_text[] =
	"; every key, none at its default\n"              /* 1 */
	"# a comment of the other kind\n"
	"[case]\n"
	"description = every key set   ; inline comment\n"
	"steps = 40\n"                                     /* 5 */
	"seed = 0xdeadbeef\n"
	"world_size = 4\n"
	"\n"
	"[model]\n"
	"vocab = 512\n"                                    /* 10 */
	"hidden = 96\n"
	"ffn = 384\n"
	"layers = 3\n"
	"seq = 24\n"
	"batch = 3\n"                                      /* 15 */
	"\n"
	"[optim]\n"
	"lr = 1e-3\n"
	"min_lr = 1e-5\n"
	"warmup = 7\n"                                     /* 20 */
	"beta1 = 0.8\n"
	"beta2 = 0.99\n"
	"eps = 1e-6\n"
	"weight_decay = 0.01\n"
	"clip = 0\n"                                       /* 25 */
	"\n"
	"[run ref]\n"
	"recipe = bf16\n"
	"world_size = 1\n"
	"\n"                                               /* 30 */
	"[run fp8d]\n"
	"\trecipe = fp8_delayed\n"
	"  checkpoint = blocks\n"
	"  world_size = 2\n"
	"  amax_history = 32\n"                            /* 35 */
	"  amax_algo = most_recent\n"
	"  margin = 1\n"
	"\n"
	"[check planted]\n"
	"kind = close\n"                                   /* 40 */
	"a = fp8d\n"
	"b = ref\n"
	"metric = grad_norm\n"
	"rtol = 0.25\n"
	"atol = 1e-4\n"                                    /* 45 */
	"; floor_db: a key of sqnr, in [check floor]\n"
	"expect = fail\n"
	"step = 12\n"
	"rank = 1\n"
	"tensor = blocks.0.mlp.up.weight.grad\n"           /* 50 */
	"\n"
	"[check floor]\n"
	"kind = sqnr\n"
	"a = fp8d\n"
	"b = ref\n"                                        /* 55 */
	"floor_db = -18.5\n";

Test(case, every_key_read, .init = setup, .fini = teardown)
{
	const char *path = put("full.ini", full_text);
	const lks_run_cfg *r;
	const lks_check_cfg *k;
	lks_case c;

	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	cr_assert_str_eq(c.path, path);
	cr_assert_str_eq(c.name, "full");
	cr_assert_str_eq(c.text, full_text, "the text is kept whole, comments included");
	cr_assert_str_eq(c.description, "every key set");
	cr_assert_eq(c.steps, 40);
	cr_assert_eq(c.seed, 0xdeadbeefull);
	cr_assert_eq(c.world_size, 4);
	cr_assert_eq(c.model.vocab, 512);
	cr_assert_eq(c.model.hidden, 96);
	cr_assert_eq(c.model.ffn, 384);
	cr_assert_eq(c.model.layers, 3);
	cr_assert_eq(c.model.seq, 24);
	cr_assert_eq(c.model.batch, 3);
	cr_assert_eq(c.optim.lr, 1e-3f);
	cr_assert_eq(c.optim.min_lr, 1e-5f);
	cr_assert_eq(c.optim.warmup, 7);
	cr_assert_eq(c.optim.beta1, 0.8f);
	cr_assert_eq(c.optim.beta2, 0.99f);
	cr_assert_eq(c.optim.eps, 1e-6f);
	cr_assert_eq(c.optim.weight_decay, 0.01f);
	cr_assert_eq(c.optim.clip, 0.0f);

	cr_assert_eq(c.nruns, 2);
	r = &c.runs[0];
	cr_assert_str_eq(r->name, "ref");
	cr_assert_eq(r->recipe, LKS_RECIPE_BF16);
	cr_assert_eq(r->world_size, 1);
	cr_assert_eq(r->checkpoint, 0);
	cr_assert_eq(r->line, 27);
	r = lks_case_run(&c, "fp8d");
	cr_assert_eq(r, &c.runs[1]);
	cr_assert_eq(r->recipe, LKS_RECIPE_FP8_DELAYED);
	cr_assert_eq(r->checkpoint, 1);
	cr_assert_eq(r->world_size, 2);
	cr_assert_eq(r->amax_history, 32);
	cr_assert_eq(r->amax_most_recent, 1);
	cr_assert_eq(r->margin, 1);
	cr_assert_eq(r->line, 31);
	cr_assert_null(lks_case_run(&c, "nope"));

	cr_assert_eq(c.nchecks, 2);
	k = &c.checks[0];
	cr_assert_str_eq(k->name, "planted");
	cr_assert_eq(k->kind, LKS_CHECK_CLOSE);
	cr_assert_str_eq(k->a, "fp8d");
	cr_assert_str_eq(k->b, "ref");
	cr_assert_str_eq(k->metric, "grad_norm");
	cr_assert_eq(k->rtol, 0.25);
	cr_assert_eq(k->atol, 1e-4);
	cr_assert_eq(k->expect_fail, 1);
	cr_assert_eq(k->exp_step, 12);
	cr_assert_eq(k->exp_rank, 1);
	cr_assert_str_eq(k->exp_tensor, "blocks.0.mlp.up.weight.grad");
	cr_assert_eq(k->line, 39);
	k = &c.checks[1];
	cr_assert_eq(k->kind, LKS_CHECK_SQNR);
	cr_assert_eq(k->floor_db, -18.5);
	cr_assert_eq(k->line, 52);
	lks_case_release(&c);
	cr_assert_null(c.text);
	cr_assert_null(c.runs);
}

Test(case, defaults, .init = setup, .fini = teardown)
{
	lks_case c;

	load_ok("[case]\nsteps = 40\n" MODEL "[run a]\nrecipe = fp8_delayed\n"
		"[check f]\nkind = finite\na = a\n[check near]\nkind = close\na = a\nb = b\n"
		"[run b]\nrecipe = bf16\n", &c);
	cr_assert_str_eq(c.description, "");
	cr_assert_eq(c.seed, 1234);
	cr_assert_eq(c.world_size, 1);
	cr_assert_eq(c.optim.lr, 3e-3f);
	cr_assert_eq(c.optim.min_lr, 3e-4f);
	cr_assert_eq(c.optim.warmup, 2, "5%% of 40 steps");
	cr_assert_eq(c.optim.beta1, 0.9f);
	cr_assert_eq(c.optim.beta2, 0.95f);
	cr_assert_eq(c.optim.eps, 1e-8f);
	cr_assert_eq(c.optim.weight_decay, 0.1f);
	cr_assert_eq(c.optim.clip, 1.0f);
	cr_assert_eq(c.runs[0].world_size, 1);
	cr_assert_eq(c.runs[0].checkpoint, 0);
	cr_assert_eq(c.runs[0].amax_history, 16);
	cr_assert_eq(c.runs[0].amax_most_recent, 0);
	cr_assert_eq(c.runs[0].margin, 0);
	cr_assert_eq(c.checks[0].rtol, 0.0);
	cr_assert_eq(c.checks[0].atol, 0.0);
	cr_assert_eq(c.checks[0].floor_db, 0.0);
	cr_assert_eq(c.checks[0].expect_fail, 0);
	cr_assert_eq(c.checks[0].exp_step, -1);
	cr_assert_eq(c.checks[0].exp_rank, -1);
	cr_assert_str_eq(c.checks[0].exp_tensor, "");
	cr_assert_str_eq(c.checks[0].b, "");
	cr_assert_str_eq(c.checks[0].metric, "", "only close checks default to a metric");
	cr_assert_str_eq(c.checks[1].metric, "loss");
	lks_case_release(&c);

	/* a run's world size defaults to the case's */
	load_ok(BASE "[run c]\nrecipe = bf16\nworld_size = 1\n", &c);
	cr_assert_eq(c.runs[0].world_size, 2);
	cr_assert_eq(c.runs[2].world_size, 1);
	lks_case_release(&c);
}

Test(case, warmup_default, .init = setup, .fini = teardown)
{
	static const struct { const char *steps; int warmup; } t[] = {
		{ "1", 0 }, { "2", 1 }, { "19", 1 }, { "30", 1 }, { "40", 2 }, { "100", 5 },
		{ "1000", 50 },
	};
	char text[512];
	lks_case c;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "[case]\nsteps = %s\n" MODEL RUNS, t[i].steps);
		load_ok(text, &c);
		cr_assert_eq(c.optim.warmup, t[i].warmup, "steps %s", t[i].steps);
		lks_case_release(&c);
	}
	/* given, it is kept, even 0 */
	load_ok(BASE "[optim]\nwarmup = 0\n", &c);
	cr_assert_eq(c.optim.warmup, 0);
	lks_case_release(&c);
}

Test(case, comments_blanks_crlf_bom, .init = setup, .fini = teardown)
{
	lks_case c;

	load_ok("\xEF\xBB\xBF[case]\r\n"
		"; comment\r\n"
		"# comment\r\n"
		"   steps = 12    ; trailing\r\n"
		"description=no spaces\r\n"
		"[model]   ; a comment after a header\r\n"
		"vocab = 256\r\nhidden = 64\r\nffn = 128\r\nlayers = 2\r\nseq = 16\r\nbatch = 2\r\n"
		"\r\n"
		"[run   x]\r\n"
		"\trecipe = fp8_rowwise_gw_hp\r\n"
		"    checkpoint = none", &c);
	cr_assert_eq(c.steps, 12);
	cr_assert_str_eq(c.description, "no spaces");
	cr_assert_str_eq(c.runs[0].name, "x");
	cr_assert_eq(c.runs[0].recipe, LKS_RECIPE_FP8_ROWWISE_GW_HP);
	lks_case_release(&c);
	/* line numbers still count with CRLF */
	load_err("[case]\r\nsteps = 1\r\nsteeps = 2\r\n", NULL, 0, ":3: unknown key 'steeps' in [case]");
	/* a lone CR (a classic Mac editor's) ends a line too: what follows it is read, not
	   dropped with a header's comment, and counted */
	load_ok(BASE "[optim]\rlr = 0.5\rwarmup = 3\rclip = 0\n", &c);
	cr_assert(c.optim.lr == 0.5f && c.optim.warmup == 3 && c.optim.clip == 0.0f,
	          "lr %g warmup %d clip %g", c.optim.lr, c.optim.warmup, c.optim.clip);
	lks_case_release(&c);
	load_err("[case]\rsteps = 1\rsteeps = 2\r", NULL, 0, ":3: unknown key 'steeps' in [case]");
}

/* an imported run (line 2) with a key of a run lockstep trains */
#define IMPORTED(line, key) \
	{ "[case]\n[run a]\nimport = jsonl:a.jsonl\n" line "\n", ":2: run 'a' is imported (import = " \
	  "jsonl:...): '" key "' is for a run lockstep trains" }

Test(case, errors_name_file_and_line, .init = setup, .fini = teardown)
{
	static const struct { const char *text, *where; } t[] = {
		/* keys and sections */
		{ CASE_HDR MODEL "hiden = 3\n" RUNS, ":11: unknown key 'hiden' in [model]" },
		{ BASE "[optim]\nlrr = 1\n", ":16: unknown key 'lrr' in [optim]" },
		{ BASE "[check c]\nkind = finite\na = a\nwhat = 1\n", ":18: unknown key 'what' in [check c]" },
		{ BASE "Recipe = bf16\n", ":15: unknown key 'Recipe' in [run b]" },
		{ BASE "[runs x]\n",
		  ":15: unknown section [runs x] (case, model, optim, run NAME, check NAME)" },
		{ BASE "[Model]\n",
		  ":15: unknown section [Model] (case, model, optim, run NAME, check NAME)" },
		{ BASE "[run a]\nrecipe = bf16\n", ":15: duplicate run 'a' (first at line 11)" },
		{ BASE "[run A]\nrecipe = bf16\n", ":15: run 'A' differs from run 'a' (line 11) only in "
		  "case: their golden files would be one on a case-insensitive file system" },
		{ "[case]\n[run a]\nimport = jsonl:a.jsonl\nimport_ranks =\n", ":4: bad value '' for "
		  "'import_ranks' in [run a]: want ranks and ranges from 0 to 65535, comma separated "
		  "(0,8 or 0-3,8)" },
		{ BASE "[check c]\nkind = finite\na = a\n[check c]\nkind = finite\na = b\n",
		  ":18: duplicate check 'c' (first at line 15)" },
		{ BASE "[run c]\nrecipe = bf16\nrecipe = bf16\n", ":17: duplicate key 'recipe' in [run c]" },
		{ BASE "[model]\n", ":15: duplicate section [model] (first at line 4)" },
		{ "steps = 1\n" BASE, ":1: key 'steps' before any section" },
		{ BASE "this is not ini\n",
		  ":15: cannot parse the line: want 'key = value', '[section]' or a comment" },
		{ BASE "[run c\n", ":15: section header without ']'" },
		{ BASE "[run c] x\n", ":15: text after the section header" },
		{ BASE "[run]\n", ":15: [run] needs a name: [run NAME]" },
		{ BASE "[check]\n", ":15: [check] needs a name: [check NAME]" },
		{ BASE "[run a b]\n", ":15: section [run a b] has more than one name" },
		{ BASE "[run a/b]\n",
		  ":15: bad run name 'a/b': want 1 to 63 letters, digits, '_', '-', '.' or '+', "
		  "starting with a letter, a digit or '_'" },
		{ BASE "[case x]\n", ":15: [case] takes no name, not 'x'" },
		{ BASE "[]\n", ":15: empty section header []" },
		/* numbers */
		{ "[case]\nsteps = 10x\n" MODEL RUNS,
		  ":2: bad value '10x' for 'steps' in [case]: want an integer in [1, 10000000]" },
		{ "[case]\nsteps = 0\n" MODEL RUNS,
		  ":2: bad value '0' for 'steps' in [case]: want an integer in [1, 10000000]" },
		{ "[case]\nsteps = 10 # ten\n" MODEL RUNS,
		  ":2: bad value '10 # ten' for 'steps' in [case]: want an integer in [1, 10000000]" },
		{ "[case]\nsteps =\n" MODEL RUNS,
		  ":2: bad value '' for 'steps' in [case]: want an integer in [1, 10000000]" },
		{ "[case]\nsteps = 99999999999999999999\n" MODEL RUNS,
		  ":2: bad value '99999999999999999999' for 'steps' in [case]: want an integer in [1, 10000000]" },
		{ "[case]\nsteps = 1\nworld_size = 0\n" MODEL RUNS,
		  ":3: bad value '0' for 'world_size' in [case]: want an integer in [1, 1024]" },
		{ "[case]\nsteps = 1\nseed = -1\n" MODEL RUNS,
		  ":3: bad value '-1' for 'seed' in [case]: want an unsigned 64-bit integer" },
		{ "[case]\nsteps = 1\nseed = 18446744073709551616\n" MODEL RUNS,
		  ":3: bad value '18446744073709551616' for 'seed' in [case]: want an unsigned 64-bit integer" },
		{ CASE_HDR "[model]\nvocab = 256\nhidden = -1\n",
		  ":6: bad value '-1' for 'hidden' in [model]: want an integer in [1, 1048576]" },
		{ CASE_HDR "[model]\nvocab = 256\nhidden = 2.5\n",
		  ":6: bad value '2.5' for 'hidden' in [model]: want an integer in [1, 1048576]" },
		{ CASE_HDR "[model]\nbatch = 0\n",
		  ":5: bad value '0' for 'batch' in [model]: want an integer in [1, 1048576]" },
		{ BASE "[optim]\nlr = abc\n", ":16: bad value 'abc' for 'lr' in [optim]: want a number > 0" },
		{ BASE "[optim]\nlr = 0\n", ":16: bad value '0' for 'lr' in [optim]: want a number > 0" },
		{ BASE "[optim]\nlr = nan\n", ":16: bad value 'nan' for 'lr' in [optim]: want a number > 0" },
		{ BASE "[optim]\nlr = 1e39\n", ":16: bad value '1e39' for 'lr' in [optim]: want a "
		  "number > 0 and at most 3.40282e+38" },
		{ BASE "[optim]\nclip = 1e39\n", ":16: bad value '1e39' for 'clip' in [optim]: want a "
		  "number >= 0 and at most 3.40282e+38" },
		{ BASE "[optim]\nbeta2 = 1\n",
		  ":16: bad value '1' for 'beta2' in [optim]: want a number in [0, 1)" },
		{ BASE "[optim]\neps = 1e-50\n", ":16: bad value '1e-50' for 'eps' in [optim]: want a number > 0" },
		{ BASE "[optim]\nclip = -1\n", ":16: bad value '-1' for 'clip' in [optim]: want a number >= 0" },
		{ BASE "[run c]\nrecipe = bf16\nworld_size = 0\n",
		  ":17: bad value '0' for 'world_size' in [run c]: want an integer in [1, 1024]" },
		{ BASE "[run c]\nrecipe = bf16\namax_history = 0\n",
		  ":17: bad value '0' for 'amax_history' in [run c]: want an integer in [1, 65536]" },
		{ BASE "[check c]\nkind = close\na = a\nb = b\nrtol = -0.1\n",
		  ":19: bad value '-0.1' for 'rtol' in [check c]: want a number >= 0" },
		{ BASE "[check c]\nkind = close\na = a\nb = b\natol = 1e999\n",
		  ":19: bad value '1e999' for 'atol' in [check c]: want a number >= 0" },
		{ BASE "[check c]\nkind = sqnr\na = a\nb = b\nfloor_db = x\n",
		  ":19: bad value 'x' for 'floor_db' in [check c]: want a number" },
		/* names of things */
		{ BASE "[run c]\nrecipe = fp9\n",
		  ":16: unknown recipe 'fp9' in [run c] (bf16, fp8_tensorwise, fp8_rowwise, "
		  "fp8_rowwise_gw_hp, fp8_delayed, fp32)" },
		{ BASE "[check c]\nkind = near\n",
		  ":16: unknown check kind 'near' in [check c] (bitwise, close, sqnr, golden, finite, "
		  "ranks_agree, recompute, resume)" },
		{ BASE "[run c]\nrecipe = bf16\ncheckpoint = all\n",
		  ":17: bad value 'all' for 'checkpoint' in [run c]: want none, blocks" },
		{ BASE "[run c]\nrecipe = bf16\namax_algo = mean\n",
		  ":17: bad value 'mean' for 'amax_algo' in [run c]: want max, most_recent" },
		{ BASE "[check c]\nkind = finite\na = a\nexpect = maybe\n",
		  ":18: bad value 'maybe' for 'expect' in [check c]: want pass, fail" },
		/* checks and runs */
		{ BASE "[check c]\nkind = close\na = a\nb = nope\n",
		  ":15: check 'c' names run 'nope', which the case does not have" },
		{ BASE "[check c]\nkind = finite\na = nope\n",
		  ":15: check 'c' names run 'nope', which the case does not have" },
		{ BASE "[check c]\nkind = bitwise\na = a\n",
		  ":15: check 'c' (bitwise) compares two runs: b = NAME is missing" },
		{ BASE "[check c]\nkind = close\na = a\n",
		  ":15: check 'c' (close) compares two runs: b = NAME is missing" },
		{ BASE "[check c]\nkind = sqnr\nb = a\n", ":15: check 'c' (sqnr) needs a run: a = NAME" },
		/* a key the kind does not read would be ignored without a word */
		{ BASE "[check c]\nkind = bitwise\na = a\nb = b\nrtol = 0.1\n",
		  ":15: check 'c': kind bitwise does not read 'rtol'" },
		{ BASE "[check c]\nkind = close\na = a\nb = b\nfloor_db = 20\n",
		  ":15: check 'c': kind close does not read 'floor_db'" },
		{ BASE "[check c]\nkind = finite\na = a\nmetric = loss\n",
		  ":15: check 'c': kind finite does not read 'metric'" },
		{ BASE "[check c]\nkind = finite\n", ":15: check 'c' (finite) needs a run: a = NAME" },
		{ BASE "[check c]\nkind = ranks_agree\na = a\nb = b\n",
		  ":15: check 'c' (ranks_agree) takes one run (a), not b = b" },
		{ BASE "[check c]\nkind = bitwise\na = a\nb = a\n",
		  ":15: check 'c' compares run 'a' with itself" },
		{ BASE "[check c]\nkind = recompute\na = a\n",
		  ":15: check 'c' (recompute) needs a run with checkpoint = blocks; run 'a' has none" },
		{ BASE "[check c]\nkind = finite\na = a\nstep = 3\n",
		  ":15: check 'c': step, rank and tensor name an expected divergence and need expect = fail" },
		{ BASE "[check c]\nkind = finite\na = a\nexpect = fail\nstep = 11\n",
		  ":15: check 'c': step 11 is past the case's 10 steps (from 0)" },
		{ BASE "[check c]\nkind = finite\na = a\nexpect = fail\nstep = 10\n",
		  ":15: check 'c': step 10 is past the case's 10 steps (from 0)" },
		{ BASE "[check c]\nkind = finite\na = a\nexpect = fail\nrank = 2\n",
		  ":15: check 'c': rank 2 is past the run's 2 ranks" },
		{ BASE "[run c]\nrecipe = bf16\nworld_size = 3\n",
		  ":15: run 'c': world_size 3 does not divide the global batch of 4 sequences "
		  "(model.batch 2 x case world_size 2)" },
		{ BASE "[optim]\nwarmup = 11\n", ":16: warmup 11 is longer than the case's 10 steps" },
		{ BASE "[optim]\nlr = 1e-3\nmin_lr = 1e-2\n", ":17: min_lr 0.01 is above lr 0.001" },
		{ BASE "[optim]\nlr = 1e-4\n", ":16: min_lr 0.0003 is above lr 0.0001" },
		/* a kind that reads what only a training has never holds of a log */
		{ "[case]\n[run a]\nimport = jsonl:a.jsonl\n[run b]\nimport = jsonl:b.jsonl\n"
		  "[check c]\nkind = sqnr\na = a\nb = b\n",
		  ":6: check 'c' (sqnr) needs runs lockstep trains, and run 'a' is imported (on "
		  "imported runs: bitwise, close, golden, finite, ranks_agree)" },
		{ BASE "[run i]\nimport = jsonl:i.jsonl\n[check c]\nkind = sqnr\na = a\nb = i\n",
		  ":17: check 'c' (sqnr) needs runs lockstep trains, and run 'i' is imported (on "
		  "imported runs: bitwise, close, golden, finite, ranks_agree)" },
		/* a key a run would not read: delayed scaling's on another recipe, training's on a
		   log, a model or optimizer in a case of logs alone */
		{ BASE "[run c]\nrecipe = fp8_tensorwise\nmargin = 8\n",
		  ":15: run 'c': 'margin' is for recipe fp8_delayed (its amax history), and "
		  "fp8_tensorwise would ignore it" },
		{ BASE "[run c]\nrecipe = bf16\namax_history = 4\n",
		  ":15: run 'c': 'amax_history' is for recipe fp8_delayed (its amax history), and bf16 "
		  "would ignore it" },
		{ BASE "[run c]\nrecipe = fp8_rowwise\namax_algo = max\n",
		  ":15: run 'c': 'amax_algo' is for recipe fp8_delayed (its amax history), and "
		  "fp8_rowwise would ignore it" },
		IMPORTED("tp = 2", "tp"),
		IMPORTED("sequence_parallel = on", "sequence_parallel"),
		IMPORTED("trace = shards", "trace"),
		IMPORTED("trace_optimizer = on", "trace_optimizer"),
		IMPORTED("reshard_after_forward = on", "reshard_after_forward"),
		IMPORTED("fp8_all_gather = on", "fp8_all_gather"),
		IMPORTED("allreduce = nccl", "allreduce"),
		IMPORTED("resume_from = b@0", "resume_from"),
		{ "[case]\n[model]\nvocab = 2\n[run a]\nimport = jsonl:a.jsonl\n",
		  ":2: every run of the case is imported: it trains nothing, so [model] would be "
		  "ignored" },
		{ "[case]\n[run a]\nimport = jsonl:a.jsonl\n[optim]\n",
		  ":4: every run of the case is imported: it trains nothing, so [optim] would be "
		  "ignored" },
		/* a run's mesh */
		{ BASE "[run c]\nrecipe = bf16\nfsdp = 3\n",
		  ":15: run 'c': fsdp 3 does not divide its world size 2" },
		{ BASE "[run c]\nrecipe = bf16\nfsdp = 2\ninject = skip_allreduce step=1 rank=0\n",
		  ":15: run 'c': inject: skip_allreduce needs fsdp = 1 (an FSDP run reduce-scatters "
		  "its gradients)" },
		{ BASE "[run c]\nrecipe = bf16\nfsdp = 0\n",
		  ":17: bad value '0' for 'fsdp' in [run c]: want an integer in [1, 1024]" },
		{ BASE "[run c]\nrecipe = fp8_tensorwise\nfp8_all_gather = on\n",
		  ":15: run 'c': fp8_all_gather = on needs fsdp > 1 (it gathers the FSDP shards of "
		  "the weights as FP8)" },
		{ BASE "[run c]\nrecipe = fp8_rowwise\nfsdp = 2\nfp8_all_gather = on\n",
		  ":15: run 'c': fp8_all_gather = on needs a recipe that scales the forward's weight "
		  "per tensor in FP8 (fp8_tensorwise, fp8_delayed), as torchao's float8 all-gather "
		  "does; fp8_rowwise does not" },
		{ BASE "[run c]\nrecipe = bf16\nreshard_after_forward = on\n",
		  ":15: run 'c': reshard_after_forward = on needs fsdp > 1 (it drops the parameters "
		  "to the FSDP shard between forward and backward)" },
		{ BASE "[run c]\nrecipe = bf16\ntrace = shards\n",
		  ":15: run 'c': trace = shards needs tp > 1 (without it every tensor is whole on its "
		  "rank)" },
		{ BASE "[run c]\nrecipe = bf16\nsequence_parallel = on\n",
		  ":15: run 'c': sequence_parallel = on needs tp > 1 (it shards the sequence over the "
		  "tp group)" },
		{ BASE "[run c]\nrecipe = bf16\ntp = 3\n",
		  ":15: run 'c': tp 3 does not divide its world size 2" },
		{ BASE "[run c]\nrecipe = bf16\ntp = 2\nfsdp = 2\n",
		  ":15: run 'c': fsdp 2 x tp 2 does not divide its world size 2" },
		{ BASE "[run c]\nrecipe = fp8_rowwise\ntp = 2\nfsdp = 2\nworld_size = 4\n"
		  "fp8_all_gather = on\n",
		  ":15: run 'c': fp8_all_gather = on needs a recipe that scales the forward's weight "
		  "per tensor in FP8 (fp8_tensorwise, fp8_delayed), as torchao's float8 all-gather "
		  "does; fp8_rowwise does not" },
		{ CASE_HDR "[model]\nvocab = 256\nhidden = 64\nffn = 127\nlayers = 2\nseq = 16\n"
		  "batch = 2\n" RUNS "[run c]\nrecipe = bf16\ntp = 2\nworld_size = 2\n",
		  ":15: run 'c': tp 2 does not divide the model's ffn (127)" },
		{ CASE_HDR "[model]\nvocab = 256\nhidden = 64\nffn = 128\nlayers = 2\nseq = 16\n"
		  "batch = 2\nattention = causal\nheads = 1\n" RUNS "[run c]\nrecipe = bf16\ntp = 2\n",
		  ":17: run 'c': tp 2 does not divide the model's heads (1)" },
		{ BASE "[run c]\nrecipe = fp8_tensorwise\ntp = 2\ninject = skip_allreduce step=1 "
		  "rank=0\n",
		  ":15: run 'c': inject: skip_allreduce is not built for tensor-parallel runs yet (tp "
		  "= 1; every other kind is)" },
		{ BASE "[run c]\nrecipe = fp8_tensorwise\ninject = amax_local "
		  "tensor=blocks.0.mlp.up.fwd.w\n",
		  ":15: run 'c': inject: amax_local acts where a tensor-parallel group reduces an FP8 "
		  "operand's amax: it needs tp > 1" },
		{ BASE "[run c]\nrecipe = fp8_tensorwise\ntp = 2\ninject = amax_local "
		  "tensor=blocks.0.mlp.up.out\n",
		  ":15: run 'c': inject: 'blocks.0.mlp.up.out' is not an FP8 operand of the model: "
		  "amax_local acts on one, named as the trace names it (blocks.0.mlp.up.fwd.w: layer, "
		  "GEMM, operand x, w or dy; blocks 0 to 1)" },
		{ BASE "[run c]\nrecipe = fp8_rowwise\ntp = 2\ninject = amax_group "
		  "tensor=blocks.0.mlp.down.fwd.x\n",
		  ":15: run 'c': inject: amax_group reduces an amax over the dp group: it needs "
		  "world_size > tp (2)" },
		{ BASE "[run c]\nrecipe = bf16\ntp = 2\ninject = amax_local "
		  "tensor=blocks.0.mlp.up.fwd.w\n",
		  ":15: run 'c': inject: amax_local needs a recipe whose FP8 scales come from the step's "
		  "amax (fp8_tensorwise, fp8_rowwise, fp8_rowwise_gw_hp)" },
		/* the attention's keys, placed at the key at fault */
		{ CASE_HDR MODEL "attention = full\n" RUNS,
		  ":11: bad value 'full' for 'attention' in [model]: want none, causal" },
		{ CASE_HDR MODEL "attention = causal\n" RUNS,
		  ":11: attention = causal needs heads, the number of attention heads" },
		{ CASE_HDR MODEL "heads = 4\n" RUNS,
		  ":11: heads given, but attention = none: a block without attention has no heads "
		  "(attention = causal adds them)" },
		{ CASE_HDR MODEL "head_dim = 4\n" RUNS,
		  ":11: head_dim given, but attention = none: a block without attention has no heads "
		  "(attention = causal adds them)" },
		{ CASE_HDR MODEL "attention = causal\nheads = 3\n" RUNS,
		  ":12: heads 3 does not divide hidden 64: give head_dim" },
		{ CASE_HDR MODEL "attention = causal\nheads = 2\nhead_dim = 7\n" RUNS,
		  ":13: head_dim 7 is odd: RoPE turns pairs of columns" },
		{ CASE_HDR MODEL "attention = causal\nheads = 64\n" RUNS,
		  ":12: head_dim 1 is odd: RoPE turns pairs of columns" },
		{ CASE_HDR MODEL "attention = causal\nheads = 4096\nhead_dim = 1000\n" RUNS,
		  ":12: heads x head_dim = 4096000 is over the 349525 columns a projection may have" },
		{ CASE_HDR MODEL "attention = causal\nheads = 0\n" RUNS,
		  ":12: bad value '0' for 'heads' in [model]: want an integer in [1, 4096]" },
		/* what is missing */
		{ CASE_HDR MODEL, ": no runs: a case needs at least one [run NAME]" },
		{ CASE_HDR RUNS, ": missing section [model]" },
		{ MODEL RUNS, ": missing section [case]" },
		{ "[case]\nseed = 1\n" MODEL RUNS, ":1: missing key 'steps' in [case]" },
		{ CASE_HDR "[model]\nvocab = 256\nffn = 1\nlayers = 1\nseq = 1\nbatch = 1\n" RUNS,
		  ":4: missing key 'hidden' in [model]" },
		{ CASE_HDR "[model]\nvocab = 256\nhidden = 1\nffn = 1\nlayers = 1\nseq = 1\n" RUNS,
		  ":4: missing key 'batch' in [model]" },
		{ BASE "[run c]\nworld_size = 1\n", ":15: missing key 'recipe' in [run c]" },
		{ BASE "[run c]\n", ":15: missing key 'recipe' in [run c]" },
		{ BASE "[check c]\na = a\n", ":15: missing key 'kind' in [check c]" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		load_err(t[i].text, NULL, 0, t[i].where);
}

#undef IMPORTED

Test(case, long_line, .init = setup, .fini = teardown)
{
	char text[1024];

	static const char *const ends[] = { "\n", "\r\n", "\r" };
	lks_case c;

	snprintf(text, sizeof(text), "[case]\ndescription = %0200d\n" MODEL RUNS, 0);
	load_err(text, NULL, 0, ":2: line longer than 197 characters");
	/* 197 characters, however the line ends; 198 refused also on a last line without an end */
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		snprintf(text, sizeof(text), "[case]%sdescription = %0183d%ssteps = 10%s" MODEL RUNS,
		         ends[i], 0, ends[i], ends[i]);
		load_ok(text, &c);
		cr_assert_eq(strlen(c.description), 183);
		lks_case_release(&c);
	}
	snprintf(text, sizeof(text), BASE ";%0196d", 0);
	load_ok(text, &c);
	lks_case_release(&c);
	snprintf(text, sizeof(text), BASE ";%0197d", 0);
	load_err(text, NULL, 0, ":15: line longer than 197 characters");
}

Test(case, missing_file, .init = setup, .fini = teardown)
{
	char path[600], want[700];
	lks_case c;

	snprintf(path, sizeof(path), "%s/nope.ini", tmpdir);
	snprintf(want, sizeof(want), "cannot open '%s': No such file or directory", path);
	cr_assert_neq(lks_case_load(path, NULL, 0, &c), 0);
	cr_assert_str_eq(lks_errmsg(), want);
}

Test(case, overrides, .init = setup, .fini = teardown)
{
	const char *path = put("o.ini", BASE "[check c]\nkind = close\na = b\nb = a\nrtol = 0.1\n");
	const char *sets[] = {
		"model.hidden=512", "run.b.recipe=fp8_tensorwise", "case.steps=100",
		"check.c.rtol=0.5", "case.world_size=4", " model.seq = 8 ", "model.ffn=10",
		"model.ffn=20", "run.a.checkpoint=blocks", "optim.lr=1e-2",
	};
	lks_case c;

	cr_assert_eq(lks_case_load(path, sets, sizeof(sets) / sizeof(sets[0]), &c), 0, "%s",
		     lks_errmsg());
	cr_assert_eq(c.model.hidden, 512);
	cr_assert_eq(c.runs[1].recipe, LKS_RECIPE_FP8_TENSORWISE);
	cr_assert_eq(c.steps, 100);
	cr_assert_eq(c.optim.warmup, 5, "the warmup default follows the new steps");
	cr_assert_eq(c.checks[0].rtol, 0.5);
	cr_assert_eq(c.world_size, 4);
	cr_assert_eq(c.runs[0].world_size, 4, "a run's world size follows the case's");
	cr_assert_eq(c.model.seq, 8);
	cr_assert_eq(c.model.ffn, 20, "the last --set wins");
	cr_assert_eq(c.runs[0].checkpoint, 1);
	cr_assert_eq(c.optim.lr, 1e-2f);
	cr_assert_eq(c.model.vocab, 256, "keys not set keep the file's value");
	lks_case_release(&c);
}

/* run.*.key sets the key of every run (and check.*.key of every check); a bad value is
   refused as for one run. */
Test(case, overrides_of_every_run, .init = setup, .fini = teardown)
{
	const char *path = put("o.ini", BASE "[check c]\nkind = close\na = b\nb = a\nrtol = 0.1\n");
	const char *sets[] = { "run.*.gemm=cublaslt", "check.*.rtol=0.25", "run.a.gemm=reference" };
	const char *bad[] = { "run.*.gemm=fast" };
	lks_case c;

	cr_assert_eq(lks_case_load(path, sets, 3, &c), 0, "%s", lks_errmsg());
	cr_assert_gt(c.nruns, 1);
	cr_expect_eq(c.runs[0].gemm, LKS_GEMM_REFERENCE, "run a, set after");
	for (int i = 1; i < c.nruns; i++)
		cr_expect_eq(c.runs[i].gemm, LKS_GEMM_LIBRARY, "run %s", c.runs[i].name);
	cr_expect_eq(c.checks[0].rtol, 0.25);
	lks_case_release(&c);
	cr_assert_neq(lks_case_load(path, bad, 1, &c), 0);
	cr_expect(strstr(lks_errmsg(), "fast"), "%s", lks_errmsg());
}

/* backend = NAME: a run's own backend, a name of the registry; not given, "" (the
   invocation's --backend); a name the build lacks is refused at its line, with the names
   it has; --set sets it like any key. */
Test(case, backend_per_run, .init = setup, .fini = teardown)
{
	const char *path = put("be.ini", BASE "[run c]\nrecipe = bf16\nbackend = cpu\n");
	const char *sets[] = { "run.a.backend=cpu" }, *bad[] = { "run.b.backend=tpu" };
	char where[256], names[128];
	lks_case c;

	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	cr_expect_str_eq(c.runs[0].backend, "", "not given: the invocation's");
	cr_expect_str_eq(c.runs[2].backend, "cpu");
	lks_case_release(&c);
	cr_assert_eq(lks_case_load(path, sets, 1, &c), 0, "%s", lks_errmsg());
	cr_expect_str_eq(c.runs[0].backend, "cpu");
	cr_expect_str_eq(c.runs[1].backend, "");
	lks_case_release(&c);
	cr_assert_neq(lks_case_load(path, bad, 1, &c), 0);
	cr_expect(strstr(lks_errmsg(), "'tpu'"), "%s", lks_errmsg());
	snprintf(where, sizeof(where), ":17: bad value 'tpu' for 'backend' in [run c]: backend "
	         "'tpu' is not available (this build has: %s)", lks_backend_names(names,
	         sizeof(names)));
	load_err(BASE "[run c]\nrecipe = bf16\nbackend = tpu\n", NULL, 0, where);
	/* names are matched exactly, as --backend matches them */
	snprintf(where, sizeof(where), ":17: bad value 'CPU' for 'backend' in [run c]: backend "
	         "'CPU' is not available (this build has: %s)", names);
	load_err(BASE "[run c]\nrecipe = bf16\nbackend = CPU\n", NULL, 0, where);
	/* what a run on cpu cannot have is refused when the case is read (list as run), not
	   only when it would run; left to --backend, the suite's (test_cli.c) */
	load_err(BASE "[run c]\nrecipe = bf16\nbackend = cpu\ngemm = cublaslt\n", NULL, 0,
	         ":15: run 'c' asks for gemm = cublaslt, which needs backend cuda (--backend cuda, "
	         "or backend = cuda in the run; the cpu backend has only the reference GEMM)");
	load_err(BASE "[run c]\nrecipe = bf16\nbackend = cpu\nallreduce = nccl\n", NULL, 0,
	         ":15: run 'c' asks for allreduce = nccl, which needs backend cuda (--backend cuda, "
	         "or backend = cuda in the run; the cpu backend sums in rank order on the host)");
	load_ok(BASE "[run c]\nrecipe = bf16\ngemm = cublaslt\nallreduce = nccl\n", &c);
	lks_case_release(&c);
}

/* A run's all-reduce: ordered by default, nccl when asked; any other value is bad input
   at its line, naming the choices. */
Test(case, allreduce_key, .init = setup, .fini = teardown)
{
	lks_case c;

	load_ok(BASE "allreduce = nccl\n", &c);
	cr_expect_eq(c.runs[0].allreduce, LKS_ALLREDUCE_ORDERED, "run a: the default");
	cr_expect_eq(c.runs[1].allreduce, LKS_ALLREDUCE_NCCL, "run b");
	lks_case_release(&c);
	load_ok(BASE "allreduce = ordered\n", &c);
	cr_expect_eq(c.runs[1].allreduce, LKS_ALLREDUCE_ORDERED);
	lks_case_release(&c);
	load_err(BASE "allreduce = ring\n", NULL, 0,
	         ":15: bad value 'ring' for 'allreduce' in [run b]: want ordered, nccl");
	/* a sharded run's groups sum on the device communicator too */
	load_ok(BASE "allreduce = nccl\ntp = 2\n[run c]\nrecipe = bf16\nfsdp = 2\n"
	        "allreduce = nccl\n", &c);
	cr_expect_eq(c.runs[1].allreduce, LKS_ALLREDUCE_NCCL);
	cr_expect_eq(c.runs[2].allreduce, LKS_ALLREDUCE_NCCL);
	lks_case_release(&c);
}

Test(case, bad_overrides, .init = setup, .fini = teardown)
{
	static const struct { const char *set, *want; } t[] = {
		{ "model.hiden=3", "%s: --set 'model.hiden=3': unknown key 'hiden' in [model]" },
		{ "model.hidden=abc", "%s: --set 'model.hidden=abc': bad value 'abc' for 'hidden' in "
		  "[model]: want an integer in [1, 1048576]" },
		{ "run.b.recipe=fp9", "%s: --set 'run.b.recipe=fp9': unknown recipe 'fp9' in [run b] "
		  "(bf16, fp8_tensorwise, fp8_rowwise, fp8_rowwise_gw_hp, fp8_delayed, fp32)" },
		{ "modelhidden=3", "%s: --set 'modelhidden=3': want section.key=value (model.hidden=512, "
		  "run.NAME.recipe=bf16)" },
		{ "model.hidden", "%s: --set 'model.hidden': want section.key=value (model.hidden=512, "
		  "run.NAME.recipe=bf16)" },
		{ "foo.bar=1", "%s: --set 'foo.bar=1': unknown section 'foo' (case, model, optim, run.NAME, "
		  "check.NAME)" },
		{ "run.a=bf16", "%s: --set 'run.a=bf16': want run.NAME.key=value" },
		{ "check.zz.rtol=1", "%s: --set 'check.zz.rtol=1': no check 'zz' in '%s'" },
		{ "run.nope.recipe=bf16", "%s: --set 'run.nope.recipe=bf16': no run 'nope' in '%s'" },
		/* valid alone, but the case it leaves is not */
		{ "run.a.world_size=3", "%s:11: run 'a': world_size 3 does not divide the global "
		  "batch of 4 sequences (model.batch 2 x case world_size 2) (after --set)" },
		{ "optim.warmup=20", "%s: warmup 20 is longer than the case's 10 steps (after --set)" },
		{ "run.a.margin=2", "%s:11: run 'a': 'margin' is for recipe fp8_delayed (its amax "
		  "history), and bf16 would ignore it (after --set)" },
	};
	const char *path = put("o.ini", BASE);
	char want[1024];
	lks_case c;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(want, sizeof(want), t[i].want, path, path);
		cr_assert_neq(lks_case_load(path, &t[i].set, 1, &c), 0, "%s", t[i].set);
		cr_assert_str_eq(lks_errmsg(), want);
	}
	/* and the file alone still loads */
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	lks_case_release(&c);
	/* a case of logs alone trains nothing: a model or optimizer set would be ignored */
	for (int i = 0; i < 2; i++) {
		const char *set = i ? "optim.lr=5" : "model.hidden=64";

		load_err("[case]\n[run a]\nimport = jsonl:a.jsonl\n", &set, 1, i
		         ? ": every run of the case is imported: it trains nothing, so [optim] would "
		           "be ignored (after --set)"
		         : ": every run of the case is imported: it trains nothing, so [model] would "
		           "be ignored (after --set)");
	}
}

Test(case, names, .init = setup, .fini = teardown)
{
	lks_recipe r;
	lks_check_kind k;

	for (int i = 0; i < LKS_RECIPE_COUNT; i++) {
		cr_assert_eq(lks_recipe_parse(lks_recipe_name((lks_recipe)i), &r), 0);
		cr_assert_eq(r, (lks_recipe)i);
	}
	for (int i = 0; i < LKS_CHECK_COUNT; i++) {
		cr_assert_eq(lks_check_kind_parse(lks_check_kind_name((lks_check_kind)i), &k), 0);
		cr_assert_eq(k, (lks_check_kind)i);
	}
	cr_assert_str_eq(lks_recipe_name(LKS_RECIPE_FP8_ROWWISE_GW_HP), "fp8_rowwise_gw_hp");
	cr_assert_str_eq(lks_check_kind_name(LKS_CHECK_RANKS_AGREE), "ranks_agree");
	cr_assert_neq(lks_recipe_parse("FP8_rowwise", &r), 0, "names are case-sensitive");
	cr_assert_neq(lks_check_kind_parse("exact", &k), 0);
	cr_assert_eq(lks_check_kind_nruns(LKS_CHECK_BITWISE), 2);
	cr_assert_eq(lks_check_kind_nruns(LKS_CHECK_CLOSE), 2);
	cr_assert_eq(lks_check_kind_nruns(LKS_CHECK_SQNR), 2);
	cr_assert_eq(lks_check_kind_nruns(LKS_CHECK_FINITE), 1);
	cr_assert_eq(lks_check_kind_nruns(LKS_CHECK_RECOMPUTE), 1);
}

Test(case, paths, .init = setup, .fini = teardown)
{
	char dir[600], sub[700], want[6][800];
	char **paths;
	int n;

	snprintf(dir, sizeof(dir), "%s/cases", tmpdir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	/* made in name order: tmpfs lists a directory newest first, so the result is
	   sorted only if the code sorts */
	put("cases/a.ini", BASE);
	put("cases/a10.ini", BASE);
	put("cases/a2.ini", BASE);
	put("cases/b.ini", BASE);
	put("cases/c.ini.txt", BASE);
	put("cases/.hidden.ini", BASE);
	put("cases/notes.md", "");
	snprintf(sub, sizeof(sub), "%s/sub.ini", dir);
	/* kept, so that loading it says it is no case file (test_case_limits.c) */
	cr_assert_eq(mkdir(sub, 0700), 0);

	const char *args[] = { put("z.ini", BASE), dir };
	snprintf(want[0], sizeof(want[0]), "%s/z.ini", tmpdir);
	snprintf(want[1], sizeof(want[1]), "%s/a.ini", dir);
	snprintf(want[2], sizeof(want[2]), "%s/a10.ini", dir);
	snprintf(want[3], sizeof(want[3]), "%s/a2.ini", dir);
	snprintf(want[4], sizeof(want[4]), "%s/b.ini", dir);
	snprintf(want[5], sizeof(want[5]), "%s", sub);
	cr_assert_eq(lks_case_paths(args, 2, &paths, &n), 0, "%s", lks_errmsg());
	cr_assert_eq(n, 6);
	for (int i = 0; i < 6; i++)
		cr_assert_str_eq(paths[i], want[i], "the arguments' order, then each directory's by name");
	lks_case_paths_free(paths, n);

	/* "dir/" gives "dir/a.ini", not "dir//a.ini" */
	strcat(dir, "/");
	args[0] = dir;
	cr_assert_eq(lks_case_paths(args, 1, &paths, &n), 0, "%s", lks_errmsg());
	cr_assert_eq(n, 5);
	cr_assert_str_eq(paths[0], want[1]);
	lks_case_paths_free(paths, n);

	snprintf(want[3], sizeof(want[3]), "cannot open '%s/none': No such file or directory", tmpdir);
	snprintf(dir, sizeof(dir), "%s/none", tmpdir);
	args[0] = dir;
	cr_assert_neq(lks_case_paths(args, 1, &paths, &n), 0);
	cr_assert_str_eq(lks_errmsg(), want[3]);
	cr_assert_null(paths);
	cr_assert_eq(n, 0);

	args[0] = sub;
	snprintf(want[3], sizeof(want[3]), "no case files (*.ini) in '%s'", sub);
	cr_assert_neq(lks_case_paths(args, 1, &paths, &n), 0);
	cr_assert_str_eq(lks_errmsg(), want[3]);
}

/* The example of DESIGN.md, "A case file", as it is written there. */
Test(case, design_example, .init = setup, .fini = teardown)
{
	lks_case c;

	load_ok("[case]\n"
		"description = FP8 rowwise with checkpointing must equal FP8 rowwise bit for bit and track BF16\n"
		"steps = 60\n"
		"seed = 1234\n"
		"world_size = 4\n"
		"\n"
		"[model]\n"
		"vocab = 512\n"
		"hidden = 256\n"
		"ffn = 1024\n"
		"layers = 4\n"
		"seq = 64\n"
		"batch = 4        ; per rank\n"
		"\n"
		"[run bf16]\n"
		"recipe = bf16\n"
		"\n"
		"[run fp8]\n"
		"recipe = fp8_rowwise\n"
		"\n"
		"[run fp8_ac]\n"
		"recipe = fp8_rowwise\n"
		"checkpoint = blocks\n"
		"\n"
		"[check ac_neutral]\n"
		"kind = bitwise\n"
		"a = fp8_ac\n"
		"b = fp8\n"
		"\n"
		"[check tracks_bf16]\n"
		"kind = close\n"
		"a = fp8\n"
		"b = bf16\n"
		"metric = loss\n"
		"rtol = 0.02\n", &c);
	cr_assert_eq(c.steps, 60);
	cr_assert_eq(c.world_size, 4);
	cr_assert_eq(c.model.batch, 4);
	cr_assert_eq(c.nruns, 3);
	cr_assert_eq(c.runs[2].checkpoint, 1);
	cr_assert_eq(c.runs[2].recipe, LKS_RECIPE_FP8_ROWWISE);
	cr_assert_eq(c.runs[2].world_size, 4);
	cr_assert_eq(c.nchecks, 2);
	cr_assert_eq(c.checks[0].kind, LKS_CHECK_BITWISE);
	cr_assert_eq(c.checks[1].kind, LKS_CHECK_CLOSE);
	cr_assert_str_eq(c.checks[1].metric, "loss");
	cr_assert_eq(c.checks[1].rtol, 0.02);
	lks_case_release(&c);
}

/* The nightly suite in cases/ parses; the source tree is found from this file's path. */
Test(case, nightly_cases_parse)
{
	char root[1024], dir[1100];
	const char *slash;
	const char *args[1] = { dir };
	char **paths;
	int n;
	lks_case c;

	cr_assert(__FILE__[0] == '/', "needs an absolute __FILE__, not '%s'", __FILE__);
	slash = strstr(__FILE__, "/tests/engine/test_case.c");
	cr_assert_not_null(slash);
	snprintf(root, sizeof(root), "%.*s", (int)(slash - __FILE__), __FILE__);
	snprintf(dir, sizeof(dir), "%s/cases", root);
	cr_assert_eq(lks_case_paths(args, 1, &paths, &n), 0, "%s", lks_errmsg());
	cr_assert_geq(n, 4);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(lks_case_load(paths[i], NULL, 0, &c), 0, "%s", lks_errmsg());
		cr_assert_neq(c.description[0], 0, "%s has no description", paths[i]);
		cr_assert_geq(c.nchecks, 1, "%s checks nothing", paths[i]);
		lks_case_release(&c);
	}
	lks_case_paths_free(paths, n);
}
