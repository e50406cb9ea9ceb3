/*
 * test_import_check.c: the checks on imported runs (issue 15, Build 3): bitwise, close,
 * finite, ranks_agree and golden (class import) on runs imported from the fixtures in
 * tests/import/data/ (written after Megatron-LM's golden-values files and training logs and
 * torchtitan's logs), through the one walker; and a case whose runs are 'import =
 * FMT:PATH', under 'lockstep run' and 'lockstep check' (bisect's probe). Every test works
 * in its own mkdtemp folder (store_fixture.h).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "fault_fixture.h"
#include "import_fixture.h"
#include "run_bin.h"
#include "store_fixture.h"
#include "tb_events.h"
#include "tiny_model.h"
#include "harness/engine/check_kind.h"
#include "harness/store/golden.h"
#include "harness/import/import.h"
#include "harness/verify/check.h"
#include "kernels/err.h"

int64_t import_run(lks_store *s, const char *fmt, const char *file, const char *name)
{
	char path[512];
	const char *files[] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find(fmt), .case_name = "c",
	                      .run_name = name };
	lks_import_result res;

	snprintf(path, sizeof(path), "%s/%s", LKS_IMPORT_DIR, file);
	cr_assert_eq(lks_import_files(s, &o, files, 1, &res), 0, "%s", lks_errmsg());
	return res.run_id;
}

static lks_store *open_db(void)
{
	char db[512];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "ic.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	return s;
}

/* A check of kind on runs a and b (b 0: one run), metric and tolerances as given. */
static void eval(lks_store *s, lks_check_kind kind, int64_t a, int64_t b, const char *metric,
                 double rtol, lks_check_result *r)
{
	lks_check_cfg k = { .name = "k", .kind = kind, .a = "a", .b = "b", .rtol = rtol,
	                    .exp_step = -1, .exp_rank = -1 };

	snprintf(k.metric, sizeof(k.metric), "%s", metric ? metric : "");
	cr_assert_eq(lks_check_eval(s, &k, NULL, a, b, r), 0, "%s", lks_errmsg());
}

Test(import_check, megatron_goldens_one_value_apart_part_at_that_step_and_metric)
{
	lks_store *s = open_db();
	int64_t a = import_run(s, "megatron-golden", "mcore_golden_a.json", "a");
	int64_t b = import_run(s, "megatron-golden", "mcore_golden_b.json", "b");
	int64_t slow = import_run(s, "megatron-golden", "mcore_golden_slow.json", "slow");
	lks_check_result r;

	/* b: num-zeros 1512 for 1511 at step 31, and every iteration time 7% longer */
	eval(s, LKS_CHECK_BITWISE, a, b, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 31);
	cr_assert_str_eq(r.metric, "num_zeros");
	cr_assert_eq(r.rank, 0);
	cr_assert_eq(r.a, 1511.0);
	cr_assert_eq(r.b, 1512.0);
	cr_assert_not_null(strstr(r.message, "step 31, metric 'num_zeros', rank 0"), "%s", r.message);
	/* the other way round, the same place */
	eval(s, LKS_CHECK_BITWISE, b, a, NULL, 0, &r);
	cr_assert_eq(r.step, 31);
	cr_assert_str_eq(r.metric, "num_zeros");
	/* iteration times alone differ: performance never enters a bitwise verdict ... */
	eval(s, LKS_CHECK_BITWISE, a, slow, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	/* ... but close may hold it to a tolerance: 30% slower, rtol 0.25 fails at step 1 */
	eval(s, LKS_CHECK_CLOSE, slow, a, "iteration_time_s", 0.25, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 1);
	cr_assert_str_eq(r.metric, "iteration_time_s");
	/* 0.35 > 0.30 of the fixture */
	eval(s, LKS_CHECK_CLOSE, slow, a, "iteration_time_s", 0.35, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	/* close on the loss, which both have equal */
	eval(s, LKS_CHECK_CLOSE, a, b, "loss", 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	/* a metric neither run reported is bad input, not a pass */
	eval(s, LKS_CHECK_CLOSE, a, b, "tps", 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.bad_input, LKS_BAD_CASE);
	cr_assert_null(strstr(r.message, "seconds"), "%s", r.message);
	/* a golden file's iteration time is iteration_time_s (seconds): two golden runs named
	   by iteration_time compare it, as iteration_time_s gave above */
	eval(s, LKS_CHECK_CLOSE, slow, a, "iteration_time", 0.25, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.bad_input, 0, "%s", r.message);
	cr_assert_eq(r.step, 1);
	cr_assert_str_eq(r.metric, "iteration_time_s");
	eval(s, LKS_CHECK_CLOSE, slow, a, "iteration_time", 0.35, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	lks_store_close(s);
	rm_tmp();

	/* a log's iteration time (ms) against a golden file's (s): not one unit, so the golden
	   run has no value of it at the first step, and the message says what it holds */
	s = open_db();
	a = import_run(s, "megatron-golden", "mcore_golden_a.json", "a");
	b = import_run(s, "megatron-log", "megatron.log", "log");
	eval(s, LKS_CHECK_CLOSE, b, a, "iteration_time", 0.1, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%d %d %s", r.verdict, r.failed, r.message);
	cr_assert_not_null(strstr(r.message, "no value in b; run 'b' holds 'iteration_time_s', "
	                          "in seconds: not one unit"), "%s", r.message);
	lks_store_close(s);
	rm_tmp();
}

/* Megatron-LM's golden values hold "nan" (or "+nan", "-NaN": its checker takes them) for
   an iteration that logged nothing (the first iteration's time, which nobody measures;
   the steps before a resume): nothing is stored there, so two files that both lack it
   agree (its checker matches "nan" with "nan"), for a performance metric and for the loss
   alike, and finite passes them (the Megatron-LM nightly of cases/README.md failed on
   every real golden file at step 1). */
Test(import_check, a_golden_nan_is_a_step_not_logged)
{
	lks_store *s = open_db();
	int64_t a = import_run(s, "megatron-golden", "mcore_golden_first_time_nan.json", "a");
	int64_t b = import_run(s, "megatron-golden", "mcore_golden_first_time_nan.json", "b");
	lks_check_result r;

	eval(s, LKS_CHECK_CLOSE, a, b, "iteration_time_s", 0.1, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	eval(s, LKS_CHECK_CLOSE, a, b, "mem_allocated", 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	eval(s, LKS_CHECK_CLOSE, a, b, "loss", 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	eval(s, LKS_CHECK_BITWISE, a, b, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	eval(s, LKS_CHECK_FINITE, a, -1, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	lks_store_close(s);
	rm_tmp();
}

/* The same golden values in Megatron-LM's list layout (mcore_golden_legacy.json, as its
   older files were) and in the map layout its commit 9238a5e converted them to
   (mcore_golden_legacy_map.json: list[i] is map[start_step + i step_interval + 1], list[0]
   map["1"]) import the same: bitwise passes (test_import.c holds both to the values at
   iterations 1, 31 and 46). */
Test(import_check, a_golden_list_and_its_map_import_the_same)
{
	lks_store *s = open_db();
	int64_t a = import_run(s, "megatron-golden", "mcore_golden_legacy.json", "list");
	int64_t b = import_run(s, "megatron-golden", "mcore_golden_legacy_map.json", "map");
	lks_check_result r;

	eval(s, LKS_CHECK_BITWISE, a, b, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	lks_store_close(s);
	rm_tmp();
}

/* Three logs of fmt: the first two apart only in performance metrics are the same bit for
   bit; the third, against log[vs], is not, first at step, on metric. */
static void bitwise_apart_in_performance(const char *fmt, const char *const log[3], int vs,
                                         int step, const char *metric)
{
	static const char *const run[3] = { "a", "b", "c" };
	lks_store *s = open_db();
	int64_t id[3];
	lks_check_result r;

	for (int k = 0; k < 3; k++)
		id[k] = import_run(s, fmt, log[k], run[k]);
	eval(s, LKS_CHECK_BITWISE, id[0], id[1], NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	eval(s, LKS_CHECK_BITWISE, id[vs], id[2], NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, step);
	cr_assert_str_eq(r.metric, metric);
	lks_store_close(s);
	rm_tmp();
}

/* Two Megatron-DeepSpeed logs apart only in their timings and throughput (elapsed time,
   samples per second, TFLOPs: performance) are the same bit for bit; a loss apart is not. */
Test(import_check, megatron_deepspeed_throughput_is_no_part_of_bitwise)
{
	static const char *const log[3] = { "megatron_deepspeed.log", "megatron_deepspeed_b.log",
	                                    "megatron_deepspeed_c.log" };

	bitwise_apart_in_performance("megatron-log", log, 0, 5427, "loss");
}

/* Megatron-DeepSpeed as BigScience ran it writes its iteration time in seconds ("elapsed
   time per iteration (s)", iteration_time_s): performance, as the ms of Megatron-LM are;
   two logs apart in it and in their throughput are the same bit for bit, a loss apart at
   iteration 30 is not. */
Test(import_check, megatron_deepspeed_seconds_are_no_part_of_bitwise)
{
	static const char *const log[3] = { "megatron_deepspeed_s.log", "megatron_deepspeed_s_b.log",
	                                    "megatron_deepspeed_s_c.log" };

	bitwise_apart_in_performance("megatron-log", log, 0, 30, "loss");
}

/* A name the table lacks is performance where its words say time, speed or memory
   ("step_time_ms", "tokens_per_sec", "data_loading_time_s", "peak_mem_gb", a rate "/s"): a
   framework's own jsonl apart in those is the same bit for bit; its "aux_loss" apart at
   step 3 is not (numerics, as "num_tokens"). */
Test(import_check, a_name_of_time_speed_or_memory_is_no_part_of_bitwise)
{
	static const char *const log[3] = { "own_timings.jsonl", "own_timings_b.jsonl",
	                                    "own_timings_c.jsonl" };

	bitwise_apart_in_performance("jsonl", log, 1, 3, "aux_loss");
}

/* Megatron-LM of 2026 apart in energy, power, throughput (N/A at one step) and RL's token
   rates: the same bit for bit; a MoE loss apart at iteration 30 is not (a name the table
   lacks is numerics). */
Test(import_check, megatron_energy_and_power_are_no_part_of_bitwise)
{
	static const char *const log[3] = { "megatron_energy.log", "megatron_energy_b.log",
	                                    "megatron_energy_c.log" };

	bitwise_apart_in_performance("megatron-log", log, 1, 30, "load_balancing_loss");
}

Test(import_check, megatron_grad_norm_nan_fails_finite_at_its_step)
{
	lks_store *s = open_db();
	int64_t run = import_run(s, "megatron-log", "megatron.log", "a");
	int64_t clean = import_run(s, "megatron-golden", "mcore_golden_a.json", "b");
	lks_check_result r;

	/* iteration 20: 'grad norm: nan' (its lm loss is finite) */
	eval(s, LKS_CHECK_FINITE, run, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 20);
	cr_assert_str_eq(r.metric, "grad_norm");
	cr_assert(isnan(r.a));
	eval(s, LKS_CHECK_FINITE, clean, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	lks_store_close(s);
	rm_tmp();
}

Test(import_check, torchtitan_ranks_with_another_loss_fail_ranks_agree_at_that_step)
{
	lks_store *s = open_db();
	int64_t bad = import_run(s, "torchtitan", "titan_ranks_disagree.log", "a");
	int64_t good = import_run(s, "torchtitan", "titan_2ranks.log", "b");
	lks_check_result r;

	/* rank 1 logs loss 6.5013 at step 3, rank 0 6.5012 */
	eval(s, LKS_CHECK_RANKS_AGREE, bad, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 3);
	cr_assert_str_eq(r.metric, "loss");
	cr_assert_eq(r.rank, -1, "two ranks name no single one");
	cr_assert_eq(r.a, 6.5012);
	cr_assert_eq(r.b, 6.5013);
	/* the same loss on both ranks, tps and memory apart: they agree */
	eval(s, LKS_CHECK_RANKS_AGREE, good, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	/* a log of one rank compared nothing: it passed; unsupported */
	eval(s, LKS_CHECK_RANKS_AGREE, import_run(s, "jsonl", "own_timings.jsonl", "c"), 0, NULL, 0,
	     &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_UNSUPPORTED, "%s", r.message);
	lks_store_close(s);
	rm_tmp();
}

/* A step that one rank logged alone (torchtitan PR #1884's log: step 10 of rank 2 only;
   a log cut off when the job died looks the same): nothing disagrees there, so ranks_agree
   passes and says how many ranks lacked the loss where; where two of three ranks logged a
   step, apart, it is they that disagree, with no majority between two. */
Test(import_check, ranks_agree_compares_the_ranks_that_logged_the_step)
{
	lks_store *s = open_db();
	char log[512], cmd[1400];
	const char *files[] = { log };
	lks_import_opts o = { .fmt = lks_import_format_find("torchtitan"), .case_name = "c",
	                      .run_name = "b" };
	lks_import_result res;
	lks_check_result r;

	eval(s, LKS_CHECK_RANKS_AGREE, import_run(s, "torchtitan", "titan_sole_rank.log", "a"), 0,
	     NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	cr_assert_not_null(strstr(r.note, "at 1 step some ranks logged no loss (first step 4: 2 of "
	                                  "3 ranks)"), "%s", r.note);
	/* rank 1 logs step 4 too, with another loss: ranks 1 and 2 disagree, rank 0 is not
	   counted with either */
	path_in_tmp(log, sizeof(log), "two.log");
	snprintf(cmd, sizeof(cmd), "sed -e '$p' -e '$s/rank2/rank1/;$s/loss: 5.9870/loss: 5.9871/' "
	         "'%s/titan_sole_rank.log' > '%s'", LKS_IMPORT_DIR, log);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(lks_import_files(s, &o, files, 1, &res), 0, "%s", lks_errmsg());
	eval(s, LKS_CHECK_RANKS_AGREE, res.run_id, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.note);
	cr_assert_eq(r.step, 4);
	cr_assert_eq(r.rank, -1);
	cr_assert_not_null(strstr(r.note, "ranks 1 and 2 report different losses with no majority "
	                                  "among 2 ranks"), "%s", r.note);
	lks_store_close(s);
	rm_tmp();
}

/* A log of ranks 0 and 8 (local rank 0 of each of two nodes): ranks_agree compares the
   ranks it holds, not ranks 1 to 7 it never had; rank 8 logging another loss at step 2 is
   found there, between ranks 0 and 8. */
Test(import_check, ranks_agree_on_a_log_of_some_ranks_compares_those)
{
	lks_store *s = open_db();
	char log[512], cmd[1400];
	const char *files[] = { log };
	lks_import_opts o = { .fmt = lks_import_format_find("torchtitan"), .case_name = "c",
	                      .run_name = "a", .ranks = "0,8" };
	lks_import_result res;
	lks_check_result r;

	snprintf(log, sizeof(log), "%s/titan_two_nodes.log", LKS_IMPORT_DIR);
	cr_assert_eq(lks_import_files(s, &o, files, 1, &res), 0, "%s", lks_errmsg());
	eval(s, LKS_CHECK_RANKS_AGREE, res.run_id, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	path_in_tmp(log, sizeof(log), "apart.log");
	snprintf(cmd, sizeof(cmd), "sed '/rank8.*step:  2/s/loss: 11.3508/loss: 11.3509/' "
	         "'%s/titan_two_nodes.log' > '%s'", LKS_IMPORT_DIR, log);
	cr_assert_eq(system(cmd), 0);
	o.run_name = "b";
	cr_assert_eq(lks_import_files(s, &o, files, 1, &res), 0, "%s", lks_errmsg());
	eval(s, LKS_CHECK_RANKS_AGREE, res.run_id, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 2);
	cr_assert_str_eq(r.metric, "loss");
	cr_assert_eq(r.rank, -1, "two ranks name no single one");
	cr_assert_eq(r.a, 11.3508);
	cr_assert_eq(r.b, 11.3509);
	cr_assert_not_null(strstr(r.note, "ranks 0 and 8 report different losses"), "%s", r.note);
	lks_store_close(s);
	rm_tmp();
}

/* The command line: a log of some ranks is refused with how it imports, imports with
   --ranks, and a golden file of a rank it never held is refused. */
Test(import_check, import_ranks_on_the_command_line)
{
	char db[512], args[2048], out[8192];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "cli.db");
	snprintf(args, sizeof(args), "import --format torchtitan '%s/titan_two_nodes.log' --case c "
	         "--run r --db '%s'", LKS_IMPORT_DIR, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "rank 1 has no steps (ranks up to 8 do); a log of some ranks "
	                          "only imports with the ranks it holds given (--ranks 0,8)"), "%s",
	                   out);
	snprintf(args, sizeof(args), "import --format torchtitan '%s/titan_two_nodes.log' --case c "
	         "--run r --db '%s' --ranks ''", LKS_IMPORT_DIR, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "--ranks wants the ranks the log holds"), "%s", out);
	/* a rank given twice is a slip of the user's, not a list to take as its set */
	snprintf(args, sizeof(args), "import --format torchtitan '%s/titan_two_nodes.log' --case c "
	         "--run r --db '%s' --ranks 0,8,0-1", LKS_IMPORT_DIR, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "bad ranks '0,8,0-1': want ranks and ranges from 0 to"), "%s",
	                   out);
	cr_assert_not_null(strstr(out, "each rank once"), "%s", out);
	snprintf(args, sizeof(args), "import --format torchtitan '%s/titan_two_nodes.log' --case c "
	         "--run r --db '%s' --ranks 0,8", LKS_IMPORT_DIR, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "steps up to 3, 9 ranks, 6 metric lines"), "%s", out);
	snprintf(args, sizeof(args), "export --format megatron-golden c/r --rank 3 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "holds no values of rank 3"), "%s", out);
	snprintf(args, sizeof(args), "export --format megatron-golden c/r --rank 8 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "11.3508"), "%s", out);
	rm_tmp();
}

Test(import_check, golden_of_class_import_round_trips_and_names_the_metric)
{
	lks_store *s = open_db();
	int64_t a = import_run(s, "megatron-golden", "mcore_golden_a.json", "a");
	int64_t b = import_run(s, "megatron-golden", "mcore_golden_b.json", "a");
	lks_stored_run run, gold;
	lks_check_result r;
	char dir[512], path[1024], cls[16], sed[2200];

	cr_assert_eq(lks_stored_run_load(s, a, LKS_LOAD_WHOLE, &run), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_golden_class_of(&run, cls, sizeof(cls)), 0);
	cr_assert_str_eq(cls, "import");
	path_in_tmp(dir, sizeof(dir), "golden");
	cr_assert_eq(lks_golden_path(dir, cls, "c", "a", path, sizeof(path)), 0);
	cr_assert_eq(lks_golden_write(&run, path), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_golden_read(path, &gold), 0, "%s", lks_errmsg());
	cr_assert_eq(gold.nmrows, run.nmrows);
	cr_assert_eq(gold.nm, run.nm);
	lks_stored_run_release(&run);
	lks_stored_run_release(&gold);

	/* the run it was written from meets it; b, one num-zeros apart, does not */
	{
		lks_check_cfg k = { .name = "g", .kind = LKS_CHECK_GOLDEN, .a = "a", .exp_step = -1,
		                    .exp_rank = -1 };
		lks_check_opts o = { .golden_dir = dir };

		cr_assert_eq(lks_check_eval(s, &k, &o, a, 0, &r), 0, "%s", lks_errmsg());
		cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
		cr_assert_eq(lks_check_eval(s, &k, &o, b, 0, &r), 0, "%s", lks_errmsg());
		cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
		cr_assert_eq(r.step, 31);
		cr_assert_str_eq(r.metric, "num_zeros");
		/* a bad value in the file: bad input at its line */
		snprintf(sed, sizeof(sed), "sed -i 's/^31\\t0\\tloss\\t.*/31\\t0\\tloss\\tten/' '%s'", path);
		cr_assert_eq(system(sed), 0);
		cr_assert_eq(lks_check_eval(s, &k, &o, a, 0, &r), 0, "%s", lks_errmsg());
		cr_assert_eq(r.bad_input, LKS_BAD_GOLDEN, "%s", r.message);
		cr_assert_not_null(strstr(r.message, "bad number 'ten' in column 'value'"), "%s",
		                   r.message);
	}
	lks_store_close(s);
	rm_tmp();
}

/* A case of imported runs under 'lockstep run' and 'lockstep check' (bisect's probe). */
Test(import_check, case_with_import_runs_under_run_and_check)
{
	char db[512], args[2048], out[8192], ini[512];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "cli.db");
	snprintf(args, sizeof(args), "run --db '%s' '%s/golden_pair.ini' '%s/nightly_megatron.ini' "
	         "'%s/nightly_torchtitan.ini' '%s/two_nodes.ini' '%s/nightly_hf.ini' "
	         "'%s/nightly_tensorboard.ini'", db, LKS_IMPORT_DIR, LKS_IMPORT_DIR, LKS_IMPORT_DIR,
	         LKS_IMPORT_DIR, LKS_IMPORT_DIR, LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "ws 9  steps up to 3  imported, 6 metric lines"), "%s", out);
	cr_assert_not_null(strstr(out, "expected failure: step 31, metric 'num_zeros', rank 0"),
	                   "%s", out);
	cr_assert_not_null(strstr(out, "expected failure: step 20, metric 'grad_norm', rank 0: "
	                          "value NaN"), "%s", out);
	cr_assert_not_null(strstr(out, "expected failure: step 3, metric 'loss'"), "%s", out);
	/* the Hugging Face and TensorBoard nightlies of cases/README.md */
	cr_assert_not_null(strstr(out, "nightly_tensorboard  numerics                   bitwise     "
	                               "pass"), "%s", out);
	cr_assert_not_null(strstr(out, "nightly_hf           numerics                   bitwise     "
	                               "pass"), "%s", out);
	/* list shows the logs, not a model */
	snprintf(args, sizeof(args), "list '%s/golden_pair.ini'", LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "every run imported from a log"), "%s", out);
	cr_assert_not_null(strstr(out, "imported: megatron-golden:mcore_golden_b.json"), "%s", out);
	cr_assert_null(strstr(out, "model:"), "%s", out);
	snprintf(args, sizeof(args), "list '%s/two_nodes.ini'", LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "imported: torchtitan:titan_two_nodes.log (ranks 0,8)"), "%s",
	                   out);
	/* the probe: exit 0 good, 1 bad (a check that fails unexpectedly) */
	snprintf(args, sizeof(args), "check --db '%s' '%s/golden_pair.ini'", db, LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	path_in_tmp(ini, sizeof(ini), "bad.ini");
	snprintf(args, sizeof(args), "sed '/^expect\\|^step\\|^tensor/d; s|golden:|golden:%s/|' "
	         "'%s/golden_pair.ini' > '%s'", LKS_IMPORT_DIR, LKS_IMPORT_DIR, ini);
	cr_assert_eq(system(args), 0);
	snprintf(args, sizeof(args), "check --db '%s' '%s'", db, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "FAIL: step 31, metric 'num_zeros'"), "%s", out);
	rm_tmp();
}

/* A run a case imports is stored with the case file and its text, as a trained run: the
   golden check's "create it with" command names the file (it named the case, 'lockstep
   golden update g', which cannot open 'g'), and that command writes the golden. */
Test(import_check, imported_run_keeps_its_case_file_for_golden_update)
{
	char db[512], ini[512], log[512], args[4096], out[8192], want[1024];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "g.db");
	path_in_tmp(log, sizeof(log), "log.jsonl");
	write_file(log, "{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2, \"loss\": 2.25}\n");
	path_in_tmp(ini, sizeof(ini), "g.ini");
	write_file(ini, "[case]\n[run r]\nimport = jsonl:log.jsonl\n[check gold]\nkind = golden\n"
	           "a = r\n");
	path_in_tmp(want, sizeof(want), "gold");
	snprintf(args, sizeof(args), "run --db '%s' --golden '%s' '%s'", db, want, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	snprintf(want, sizeof(want), "create it with: lockstep golden update %s --run r", ini);
	cr_assert_not_null(strstr(out, want), "%s", out);
	path_in_tmp(want, sizeof(want), "gold");
	snprintf(args, sizeof(args), "golden update '%s' --run r --golden '%s' --db '%s'", ini, want,
	         db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "run --db '%s' --golden '%s' '%s'", db, want, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	rm_tmp();
}

/* diff and report of imported runs: numerics compared, performance in its own section. */
Test(import_check, diff_and_report_show_numerics_and_performance_apart)
{
	char db[512], args[2048], out[8192], md[512], *perf, *num;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "d.db");
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s/golden_pair.ini'", db,
	         LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "diff --db '%s' golden_pair/a golden_pair/b", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "first divergence: step 31, metric 'num_zeros', rank 0: "
	                          "value a=1511 b=1512"), "%s", out);
	num = strstr(out, "\nnumerics");
	perf = strstr(out, "\nperformance (never in a verdict");
	cr_assert(num && perf && num < perf, "%s", out);
	/* num-zeros: 10 values, 1 differs, first at step 31; iteration time only below */
	cr_assert_not_null(strstr(num, "num_zeros                    10        1  31"), "%s", out);
	cr_assert_null(strstr(perf, "num_zeros"), "%s", out);
	cr_assert(strstr(perf, "iteration_time") && strstr(num, "iteration_time") == strstr(perf,
	          "iteration_time"), "%s", out);
	cr_assert_not_null(strstr(perf, "1.07"), "b is 7%% slower: %s", out);
	/* a run against itself: identical */
	snprintf(args, sizeof(args), "diff --db '%s' golden_pair/a golden_pair/a", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);

	path_in_tmp(md, sizeof(md), "rep");
	snprintf(args, sizeof(args), "report --db '%s' -o '%s'", db, md);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	path_in_tmp(md, sizeof(md), "rep/report.md");
	snprintf(args, sizeof(args), "sed -n '/imported metrics: numerics/,/GPU health/p' '%s'", md);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 0);
	num = strstr(out, "imported metrics: numerics");
	perf = strstr(out, "imported metrics: performance (never in a verdict)");
	cr_assert(num && perf && num < perf, "%s", out);
	cr_assert_not_null(strstr(num, "| a | num\\_zeros | 10 | 0 |  | 1389 |"), "%s", out);
	cr_assert_not_null(strstr(perf, "| b | iteration\\_time\\_s | s | 10 | 0 | 1.865 | 0.546 | "
	                                "13.696 |"), "%s", out);
	cr_assert_null(strstr(perf, "num\\_zeros"), "%s", out);
	rm_tmp();
}

/* An FP8 run's torchtitan log says "mfu: N/A" where the BF16 run's has a number: the same
   numerics (exit 0), and diff shows mfu measured in one run only ("-"), not a mean of nothing. */
Test(import_check, diff_shows_a_metric_measured_in_one_run_only)
{
	char db[512], args[2048], out[8192], *perf;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "d.db");
	snprintf(args, sizeof(args), "import --quiet --format torchtitan --case t --run bf16 --db '%s' "
	         "'%s/titan_bf16_mfu.log'", db, LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "import --quiet --format torchtitan --case t --run fp8 --db '%s' "
	         "'%s/titan_fp8_mfu_na.log'", db, LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "diff --db '%s' t/bf16 t/fp8", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	perf = strstr(out, "\nperformance (never in a verdict");
	cr_assert_not_null(perf, "%s", out);
	cr_assert_not_null(strstr(perf, "\n  mfu                    31.02          -              -\n"),
	                   "%s", out);
	cr_assert_not_null(strstr(perf, "\n  tflops                 307.23         307.23         1\n"),
	                   "%s", out);
	cr_assert_null(strstr(out, "nan"), "%s", out);
	rm_tmp();
}

/* nanoGPT's own log (data/nanogpt_real.log: its train.py at karpathy/nanoGPT 3adf61e on
   the CPU, 2026-11-29, 13 iterations of a 2-layer model on random tokens; the one path in a
   warning's line made relative): its iterations and evaluations read, the performance
   table has no ratio where the means are 0 (mfu "0.00%"), and no nan. */
Test(import_check, nanogpts_own_log_diffs_without_a_ratio_of_zeros)
{
	char db[512], args[2048], out[8192], *perf;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "d.db");
	for (int i = 0; i < 2; i++) {
		snprintf(args, sizeof(args), "import --quiet --format nanogpt --case n --run %c "
		         "--db '%s' '%s/nanogpt_real.log'", "ab"[i], db, LKS_IMPORT_DIR);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	}
	snprintf(args, sizeof(args), "diff --db '%s' n/a n/b", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "loss                         13        0"), "%s", out);
	perf = strstr(out, "\nperformance (never in a verdict");
	cr_assert_not_null(perf, "%s", out);
	cr_assert_not_null(strstr(perf, "\n  mfu                    0              0              -\n"),
	                   "%s", out);
	cr_assert_null(strstr(perf, "nan"), "%s", out);
	rm_tmp();
}

/* Hugging Face's own run (data/hf_real/): its event files against its trainer_state.json.
   The loss is a float32 in both (a tensor's .item()): equal. The learning rate is a
   Python float the event file keeps as float32, its JSON as the double with up to 6
   decimals (0.000875): they agree to those. A double printed whole (9.1666666666666665e-4,
   as a schedule makes one) beside its float32 differs at every decimal it has: diff says
   that rounded to float32 they agree, rather than leave the difference unexplained. */
Test(import_check, an_event_files_float32_beside_the_double_it_was_made_of)
{
	char db[512], args[2048], out[8192], tb[512], js[512];
	struct tb_scalar lr[] = { { 1, "train/learning_rate", 0.0009166666666666666f },
	                          { 2, "train/learning_rate", 0.0008333333333333334f } };
	FILE *f;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "d.db");
	snprintf(args, sizeof(args), "import --quiet --format tensorboard --case hf --run tb "
	         "--db '%s' '%s/hf_real/output'", db, LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "import --quiet --format hf-trainer --case hf --run state "
	         "--db '%s' '%s/hf_real/output/checkpoint-8/trainer_state.json'", db,
	         LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "diff --db '%s' hf/tb hf/state", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "first divergence: step 1, metric 'lr'"), "%s", out);
	cr_assert_not_null(strstr(out, "loss                          8        0"), "%s", out);
	cr_assert_not_null(strstr(out, "lr: the runs agree to the printed precision (3 to 6 "
	                           "decimals)"), "%s", out);

	path_in_tmp(tb, sizeof(tb), "events.out.tfevents.1.lr");
	tb_write(tb, lr, 2);
	path_in_tmp(js, sizeof(js), "lr.jsonl");
	cr_assert_not_null(f = fopen(js, "w"));
	fputs("{\"step\": 1, \"lr\": 0.0009166666666666666}\n"
	      "{\"step\": 2, \"lr\": 0.0008333333333333334}\n", f);
	fclose(f);
	snprintf(args, sizeof(args), "import --quiet --format tensorboard --case lr --run tb "
	         "--db '%s' '%s'", db, tb);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "import --quiet --format jsonl --case lr --run js --db '%s' "
	         "'%s'", db, js);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "diff --db '%s' lr/tb lr/js", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "lr: 2 of 2 values differ; rounded to float32, as an event "
	                           "file keeps a value, all agree"), "%s", out);
	rm_tmp();
}

Test(import_check, import_key_refused_where_bad_at_its_line)
{
	static const struct { const char *run, *says; } bad[] = {
		{ "import = megatron-golden\n", ":3: bad value 'megatron-golden' for 'import' in "
		  "[run a]: want FORMAT:PATH" },
		{ "import = nosuch:x.log\n", ":3: 'import' in [run a]: unknown import format 'nosuch'" },
		{ "import = jsonl:x.jsonl\nrecipe = bf16\n", ":2: run 'a' is imported (import = "
		  "jsonl:...): 'recipe' is for a run lockstep trains" },
		{ "import = jsonl:x.jsonl\nimport_ranks = 0,,8\n", ":4: bad value '0,,8' for "
		  "'import_ranks' in [run a]: want ranks and ranges from 0 to 65535" },
	};
	char ini[512], text[512], args[1200], out[4096], db[512];

	mkdir_tmp();
	path_in_tmp(ini, sizeof(ini), "k.ini");
	path_in_tmp(db, sizeof(db), "k.db");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(ini, "w");

		cr_assert_not_null(f);
		snprintf(text, sizeof(text), "[case]\n[run a]\n%s[check f]\nkind = finite\na = a\n",
		         bad[i].run);
		fputs(text, f);
		fclose(f);
		snprintf(args, sizeof(args), "run --db '%s' '%s'", db, ini);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
		cr_assert_not_null(strstr(out, bad[i].says), "%s: %s", bad[i].says, out);
	}
	/* the ranks of a log on a run lockstep trains: refused at the run's line */
	{
		FILE *f = fopen(ini, "w");

		cr_assert_not_null(f);
		fputs("[case]\nsteps = 1\n" LKS_TINY_MODEL "[run a]\nrecipe = bf16\nimport_ranks = 0,8\n"
		      "[check f]\nkind = finite\na = a\n", f);
		fclose(f);
		snprintf(args, sizeof(args), "run --db '%s' '%s'", db, ini);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
		cr_assert_not_null(strstr(out, ":10: run 'a': 'import_ranks' goes with 'import'"), "%s",
		                   out);
	}
	/* a log that is not there: bad input naming it, nothing stored */
	{
		FILE *f = fopen(ini, "w");

		cr_assert_not_null(f);
		fputs("[case]\n[run a]\nimport = jsonl:missing.jsonl\n[check f]\nkind = finite\n"
		      "a = a\n", f);
		fclose(f);
		snprintf(args, sizeof(args), "run --db '%s' '%s'", db, ini);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
		cr_assert_not_null(strstr(out, ":2: run 'a': cannot open '"), "%s", out);
		cr_assert_not_null(strstr(out, "missing.jsonl': No such file or directory"), "%s", out);
		cr_assert_neq(access(db, F_OK), 0, "the database was made: %s", out);
	}
	rm_tmp();
}

/* A case that holds a log against a run it trains: the trained run's loss, grad_norm and
   lr per step and rank compare with the log's by name (the log here is the trained run's
   own export, so equal bit for bit), and a value planted in the log is found at its step,
   metric and rank; diff says the same. */
Test(import_check, imported_run_against_a_trained_run_compares_loss_grad_norm_lr)
{
	static const char model[] = "[case]\nsteps = 3\nworld_size = 2\n[model]\nvocab = 64\n"
	                            "hidden = 32\nffn = 64\nlayers = 1\nseq = 8\nbatch = 2\n"
	                            "[run t]\nrecipe = bf16\n";
	char db[512], ini[512], log[512], args[2048], out[8192], text[1024];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "mix.db");
	path_in_tmp(ini, sizeof(ini), "train.ini");
	write_file(ini, model);
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s'", db, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	path_in_tmp(log, sizeof(log), "t.jsonl");
	snprintf(args, sizeof(args), "export --db '%s' --format jsonl 1 -o '%s'", db, log);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(text, sizeof(text), "%s[run back]\nimport = jsonl:t.jsonl\n[check bits]\n"
	         "kind = bitwise\na = back\nb = t\n[check loss]\nkind = close\na = t\nb = back\n"
	         "metric = loss\nrtol = 0\n", model);
	path_in_tmp(ini, sizeof(ini), "mix.ini");
	write_file(ini, text);
	snprintf(args, sizeof(args), "run --db '%s' '%s'", db, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "2 checks: 2 passed"), "%s", out);
	snprintf(args, sizeof(args), "diff --db '%s' mix/back mix/t", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "identical: bit for bit"), "%s", out);
	/* the grad norm of rank 1 at step 2 written otherwise in the log */
	snprintf(args, sizeof(args), "sed -i '/\"step\":2,\"rank\":1,/s/\"grad_norm\":[^,]*/"
	         "\"grad_norm\":0.5/' '%s'", log);
	cr_assert_eq(system(args), 0);
	snprintf(args, sizeof(args), "run --db '%s' '%s'", db, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "bitwise     FAIL: step 2, metric 'grad_norm', rank 1: "
	                          "value back=0.5"), "%s", out);
	cr_assert_not_null(strstr(out, "close       pass"), "the loss is untouched: %s", out);
	snprintf(args, sizeof(args), "diff --db '%s' mix/back mix/t", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "first divergence: step 2, metric 'grad_norm', rank 1"),
	                   "%s", out);
	rm_tmp();
}

/* Metrics logged at some steps and ranks only, and one in b alone: diff walks each step's
   logged values only and makes its table in one pass over the rows (a run of 60,000 names,
   30 new a step for 2,000 steps, took 7.3 s and takes 0.3 s), with what a walk of every
   step, metric and rank gave: the first divergence in that order (step 3: y before z by
   name, then rank) and per metric the values both hold. */
Test(import_check, diff_of_sparse_metrics_walks_what_was_logged)
{
	static const char a[] =
		"{\"step\": 1, \"rank\": 0, \"loss\": 2.0, \"x\": 1.0}\n"
		"{\"step\": 1, \"rank\": 1, \"loss\": 2.0}\n"
		"{\"step\": 2, \"rank\": 0, \"loss\": 1.5, \"y\": 3.0}\n"
		"{\"step\": 2, \"rank\": 1, \"loss\": 1.5, \"x\": 4.0}\n"
		"{\"step\": 3, \"rank\": 0, \"loss\": 1.25}\n"
		"{\"step\": 3, \"rank\": 1, \"loss\": 1.25, \"y\": 5.0}\n";
	static const char b[] =
		"{\"step\": 1, \"rank\": 0, \"loss\": 2.0, \"x\": 1.0}\n"
		"{\"step\": 1, \"rank\": 1, \"loss\": 2.0}\n"
		"{\"step\": 2, \"rank\": 0, \"loss\": 1.5, \"y\": 3.0}\n"
		"{\"step\": 2, \"rank\": 1, \"loss\": 1.5, \"x\": 4.0}\n"
		"{\"step\": 3, \"rank\": 0, \"loss\": 1.25, \"z\": 7.0}\n"
		"{\"step\": 3, \"rank\": 1, \"loss\": 1.25, \"y\": 5.5}\n";
	/* printed a, b: "1.5", "1.25" printed to 1 and 2 decimals; whole numbers are full */
	static const char *const rows[] = {
		"\n  loss                          6        0  -          0          1-2,full  1-2,full  0\n",
		"\n  x                             2        0  -          0          full      full      -\n",
		"\n  y                             2        1  3          0.0909     full      1,full    1\n",
		"\n  z                             0        0  -          0          -         -         -\n",
	};
	char db[512], log[512], args[4096], out[8192];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "s.db");
	for (int k = 0; k < 2; k++) {
		path_in_tmp(log, sizeof(log), k ? "b.jsonl" : "a.jsonl");
		write_file(log, k ? b : a);
		snprintf(args, sizeof(args), "import --quiet --format jsonl --case s --run %s --db '%s' "
		         "'%s'", k ? "b" : "a", db, log);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	}
	snprintf(args, sizeof(args), "diff --db '%s' s/a s/b", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "first divergence: step 3, metric 'y', rank 1: value a=5 "
	                          "b=5.5"), "%s", out);
	for (int k = 0; k < 4; k++)
		cr_assert_not_null(strstr(out, rows[k]), "%s\n%s", rows[k], out);
	snprintf(args, sizeof(args), "diff --db '%s' s/a s/a", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\n  y                             2        0  -          0          "
	                          "full      full      -\n"), "%s", out);
	rm_tmp();
}
