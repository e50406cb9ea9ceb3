/*
 * test_import.c: lockstep import (harness/import/import.h) on the fixtures in tests/import/data/,
 * written after each format's public documentation and logs: every value stored exactly as
 * written (a double compared with the same literal), NaN as NaN, each metric with its kind;
 * ranks and repeated lines; and hostile logs refused at their file:line with nothing
 * stored. Every test works in its own mkdtemp folder (store_fixture.h).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store_fixture.h"
#include "harness/base/file.h"
#include "harness/import/import.h"
#include "harness/store/import_block.h"
#include "harness/store/report_query.h"
#include "kernels/err.h"

#define MAXROWS 64

struct seen {
	int n;
	lks_metric_row row[MAXROWS];
	char name[MAXROWS][LKS_IMPORT_NAME_MAX];
};

static int see(void *arg, const lks_metric_row *r)
{
	struct seen *s = arg;

	if (s->n < MAXROWS) {
		s->row[s->n] = *r;
		snprintf(s->name[s->n], sizeof(s->name[0]), "%s", r->name);
		s->row[s->n].name = s->name[s->n];
	}
	s->n++;
	return 0;
}

/* The stored row of (step, rank, name); fails the test without one. */
static const lks_metric_row *at(const struct seen *s, int step, int rank, const char *name)
{
	for (int i = 0; i < s->n && i < MAXROWS; i++)
		if (s->row[i].step == step && s->row[i].rank == rank && !strcmp(s->row[i].name, name))
			return &s->row[i];
	cr_assert_fail("no metric %s at step %d rank %d", name, step, rank);
	return NULL;
}

/* The ranks a log of some ranks only holds (lks_import_opts.ranks) for the next imports;
   NULL: every rank from 0. */
static const char *ranks_given;

/* Imports the fixtures names[0..n) (at most 4, in order; an absolute path is taken as it
   is) as run "r" of case "c" into a new database; the store stays open. */
static int import_files(const char *fmt, const char *const *names, int n, lks_store **s,
                        lks_import_result *res)
{
	char paths[4][512], db[512];
	const char *files[4];
	lks_import_opts o = { .case_name = "c", .run_name = "r", .ranks = ranks_given };
	int rc;

	o.fmt = lks_import_format_find(fmt);
	cr_assert(o.fmt, "%s", lks_errmsg());
	cr_assert_leq(n, 4);
	for (int i = 0; i < n; i++) {
		if (names[i][0] == '/')  /* a file of the test's own, not a fixture */
			snprintf(paths[i], sizeof(paths[i]), "%s", names[i]);
		else
			snprintf(paths[i], sizeof(paths[i]), "%s/%s", LKS_IMPORT_DIR, names[i]);
		files[i] = paths[i];
	}
	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "import.db");
	cr_assert_eq(lks_store_open(db, s), 0, "%s", lks_errmsg());
	rc = lks_import_files(*s, &o, files, n, res);
	/* the commit, timed within the import (bench import's "durable commit") */
	cr_assert(rc || (res->commit_s > 0 && res->commit_s < 60), "commit %g s", res->commit_s);
	return rc;
}

static int import(const char *fmt, const char *file, lks_store **s, lks_import_result *res)
{
	return import_files(fmt, &file, 1, s, res);
}

static void metrics_of(lks_store *s, int64_t run, struct seen *seen)
{
	memset(seen, 0, sizeof(*seen));
	cr_assert_eq(lks_store_get_metrics(s, run, NULL, see, seen), 0, "%s", lks_errmsg());
}

Test(import, torchtitan_values_ranks_and_kinds_as_written)
{
	lks_import_result res;
	struct seen m;
	lks_step_row steps[8];
	lks_store *s;
	int n;

	cr_assert_eq(import("torchtitan", "titan_2ranks.log", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 2);
	cr_assert_eq(res.world_size, 2);
	/* the "Starting job", "Synchronizing" and "Training completed" lines */
	cr_assert_eq(res.counts.ignored, 4);
	metrics_of(s, res.run_id, &m);
	/* loss, grad_norm, memory, memory_pct, tps, tflops, mfu per (step, rank) */
	cr_assert_eq(m.n, 2 * 2 * 7);
	cr_assert_eq(at(&m, 1, 0, "loss")->value, 8.1661);
	cr_assert_eq(at(&m, 1, 1, "memory")->value, 2.48);
	cr_assert_eq(at(&m, 1, 1, "memory_pct")->value, 3.13);
	cr_assert_eq(at(&m, 2, 0, "tps")->value, 177138.0);
	cr_assert_eq(at(&m, 2, 1, "mfu")->value, 9.71);
	cr_assert(isnan(at(&m, 2, 1, "grad_norm")->value));
	cr_assert_eq(at(&m, 1, 0, "grad_norm")->kind, LKS_METRIC_NUMERICS);
	cr_assert_eq(at(&m, 1, 0, "tflops")->kind, LKS_METRIC_PERFORMANCE);
	/* the steps rows that list, diff and report read */
	cr_assert_eq(lks_store_get_steps(s, res.run_id, -1, steps, 8, &n), 0, "%s", lks_errmsg());
	cr_assert_eq(n, 4);
	cr_assert_eq(steps[0].loss, 8.1661);
	cr_assert_eq(steps[0].nonfinite, 0);
	cr_assert_eq(steps[3].step, 2);
	cr_assert_eq(steps[3].rank, 1);
	cr_assert(isnan(steps[3].grad_norm));
	cr_assert_eq(steps[3].nonfinite, 1);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs WHERE status = 'complete' AND "
	                        "backend = 'import:torchtitan' AND world_size = 2 AND steps = 2"), 1);
	lks_store_close(s);
	rm_tmp();
}

/* torchtitan before tps was called so logged "wps" (words, i.e. tokens, per second): a
   throughput, performance, never numerics (where a bitwise verdict would fail on it). */
Test(import, older_torchtitan_wps_is_performance)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("torchtitan", "titan_wps.log", &s, &res), 0, "%s", lks_errmsg());
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 2, 0, "wps")->value, 41077.0);
	cr_assert_eq(at(&m, 2, 0, "wps")->kind, LKS_METRIC_PERFORMANCE);
	cr_assert_eq(at(&m, 2, 0, "loss")->value, 10.7406);
	lks_store_close(s);
	rm_tmp();
}

/* torchtitan of 2025 and after: a 24-bit colour code, TFLOP/s past a thousand written with
   a separator (FP8 on an H100: "1,094.23"), and a validation line ("validate step:  2 ...")
   after a training step, which is no training record: counted as ignored, its loss not
   taken for the step's. */
Test(import, torchtitan_validation_lines_are_ignored_and_tflops_may_hold_commas)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("torchtitan", "titan_validate.log", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 3);
	cr_assert_eq(res.counts.records, 3);
	cr_assert_eq(res.counts.ignored, 2, "the start line and the validation line");
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 3 * 7);
	cr_assert_eq(at(&m, 2, 0, "loss")->value, 9.0283);
	cr_assert_eq(at(&m, 1, 0, "tflops")->value, 1094.23);
	cr_assert_eq(at(&m, 2, 0, "memory")->value, 62.47);
	cr_assert_eq(at(&m, 3, 0, "grad_norm")->value, 0.9876);
	lks_store_close(s);
	rm_tmp();
}

/* A wrapper's own logger before torchtitan's record (AMD Primus: colours, its rank, the
   source line, then " : "): the record starts at "step:" after that mark; its validation
   line is still no training step. */
Test(import, torchtitan_record_after_a_wrappers_prefix)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("torchtitan", "titan_primus.log", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 20);
	cr_assert_eq(res.counts.records, 2);
	cr_assert_eq(res.counts.ignored, 2, "the start line and the validation line");
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 2 * 7);
	cr_assert_eq(at(&m, 10, 0, "loss")->value, 7.8123);
	cr_assert_eq(at(&m, 20, 0, "mfu")->value, 42.10);
	cr_assert_eq(at(&m, 20, 0, "tps")->value, 7301.0);
	lks_store_close(s);
	rm_tmp();
}

Test(import, torchtitan_line_repeated_by_ranks_is_one_row_per_step_and_rank)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("torchtitan", "titan_repeated.log", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.counts.repeated, 3);
	cr_assert_eq(res.world_size, 1);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 2 * 7);
	cr_assert_eq(at(&m, 2, 0, "loss")->value, 9.0001);
	cr_assert_eq(at(&m, 1, 0, "tps")->value, 1024.0);
	lks_store_close(s);
	rm_tmp();
}

Test(import, megatron_log_values_as_written)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("megatron-log", "megatron.log", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 30);
	cr_assert_eq(res.counts.ignored, 3);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 10, 0, "loss")->value, 1.234567E+00);
	cr_assert_eq(at(&m, 10, 0, "lr")->value, 1.000000E-04);
	cr_assert_eq(at(&m, 10, 0, "loss_scale")->value, 65536.0);
	cr_assert_eq(at(&m, 10, 0, "consumed_samples")->value, 640.0);
	cr_assert_eq(at(&m, 10, 0, "iteration_time")->value, 812.3);
	cr_assert_eq(at(&m, 10, 0, "iteration_time")->kind, LKS_METRIC_PERFORMANCE);
	cr_assert(isnan(at(&m, 20, 0, "grad_norm")->value));
	cr_assert_eq(at(&m, 20, 0, "nan_iterations")->value, 1.0);
	cr_assert_eq(at(&m, 20, 0, "skipped_iterations")->kind, LKS_METRIC_NUMERICS);
	cr_assert_eq(at(&m, 30, 0, "tflops")->value, 123.4);
	cr_assert_eq(at(&m, 30, 0, "num_zeros")->value, 12.0);
	cr_assert_eq(at(&m, 30, 0, "loss")->value, 9.876543E-01);
	lks_store_close(s);
	rm_tmp();
}

/* Forks of Megatron-LM's line: Megatron-DeepSpeed's "samples per second" and "TFLOPs"
   (performance, the latter tflops), its "consumed tokens" and "actual seqlen" (numerics, as
   every name the table lacks); AMD Primus's tokens per GPU (tps), a time or throughput
   followed by its running average, "X/Y" or "X (avg Y)", and its memory used/free/total/
   share, numbers with units: X, the first, is stored. A numerics value in
   that form is still a bad value, and so is a bad average. */
Test(import, megatron_forks_label_their_throughput_and_averages)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("megatron-log", "megatron_deepspeed.log", &s, &res), 0, "%s",
	             lks_errmsg());
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 5426, 0, "tflops")->value, 78.36);
	cr_assert_eq(at(&m, 5426, 0, "tflops")->kind, LKS_METRIC_PERFORMANCE);
	cr_assert_eq(at(&m, 5427, 0, "samples_per_second")->value, 1.893);
	cr_assert_eq(at(&m, 5427, 0, "samples_per_second")->kind, LKS_METRIC_PERFORMANCE);
	cr_assert_eq(at(&m, 5427, 0, "consumed_tokens")->value, 88915968.0);
	cr_assert_eq(at(&m, 5427, 0, "consumed_tokens")->kind, LKS_METRIC_NUMERICS);
	cr_assert_eq(at(&m, 5426, 0, "actual_seqlen")->kind, LKS_METRIC_NUMERICS);
	cr_assert(isnan(at(&m, 5427, 0, "grad_norm")->value));
	lks_store_close(s);
	rm_tmp();

	cr_assert_eq(import("megatron-log", "megatron_primus.log", &s, &res), 0, "%s",
	             lks_errmsg());
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 2, 0, "tps")->value, 2011.2);
	cr_assert_eq(at(&m, 3, 0, "iteration_time")->value, 654.5);
	cr_assert_eq(at(&m, 3, 0, "tflops")->value, 1290.3);
	cr_assert_eq(at(&m, 3, 0, "tps")->value, 25032.8);
	cr_assert_eq(at(&m, 4, 0, "tflops")->value, 615.5);
	cr_assert_eq(at(&m, 4, 0, "tps")->kind, LKS_METRIC_PERFORMANCE);
	cr_assert_eq(at(&m, 4, 0, "loss")->value, 1.051008E+01);
	cr_assert_eq(at(&m, 5, 0, "hip_mem_used")->value, 12.34, "the used memory, first");
	cr_assert_eq(at(&m, 5, 0, "hip_mem_used")->kind, LKS_METRIC_PERFORMANCE);
	cr_assert_eq(at(&m, 5, 0, "tflops")->value, 617.2);
	lks_store_close(s);
	rm_tmp();
}

/* torchtitan since March 2026 prints "mfu: N/A" where FP8 or MX quantization makes MFU
   misleading (metrics.py, pull request 2451): a performance value not measured, so no mfu
   is stored at that step; its loss has 5 decimals. TTP's fork writes est_tflops and
   est_mfu, which are tflops and mfu. (A numerics metric "N/A" is still a bad value: the
   hostile logs below.) */
Test(import, torchtitan_mfu_not_measured_is_absent)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("torchtitan", "titan_fp8_mfu_na.log", &s, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.world_size, 2);
	cr_assert_eq(res.counts.records, 6);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 6 * 6, "loss, grad_norm, memory, memory_pct, tps, tflops; no mfu");
	for (int i = 0; i < m.n && i < MAXROWS; i++)
		cr_assert_str_neq(m.name[i], "mfu");
	cr_assert_eq(at(&m, 3, 1, "loss")->value, 10.93305);
	cr_assert_eq(at(&m, 2, 1, "tps")->value, 5301.0);
	cr_assert_eq(at(&m, 1, 0, "tflops")->value, 306.74);
	lks_store_close(s);
	rm_tmp();

	cr_assert_eq(import("torchtitan", "titan_est.log", &s, &res), 0, "%s", lks_errmsg());
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 10, 0, "tflops")->value, 94.23);
	cr_assert_eq(at(&m, 10, 0, "tflops")->kind, LKS_METRIC_PERFORMANCE);
	cr_assert_eq(at(&m, 10, 0, "mfu")->value, -1.0, "est_mfu's -1: not estimated");
	cr_assert_eq(at(&m, 10, 0, "mfu")->kind, LKS_METRIC_PERFORMANCE);
	lks_store_close(s);
	rm_tmp();
}

/* A jsonl writer's null for a performance metric is "not measured": nothing stored there,
   as torchtitan's "mfu: N/A"; a numerics null is a bad value (the hostile logs below). */
Test(import, jsonl_null_performance_is_not_measured)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("jsonl", "jsonl_null.jsonl", &s, &res), 0, "%s", lks_errmsg());
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 3 + 6, "step 1: 3 values and 3 nulls; step 2: 6 values");
	cr_assert_eq(at(&m, 1, 0, "tflops")->value, 311.2);
	cr_assert_eq(at(&m, 2, 1, "mfu")->value, 31.5);
	for (int i = 0; i < m.n && i < MAXROWS; i++)
		cr_assert(m.row[i].step != 1 || strcmp(m.name[i], "mfu"), "a null stored");
	lks_store_close(s);
	rm_tmp();
}

/* Megatron-Bridge's golden values (its scripts/performance/utils/evaluate.py): step ->
   {label: value} with 0-based steps (key N is iteration N + 1, as its log says), the log's
   labels, "GPU utilization" its model TFLOP/s per GPU (tflops), null not measured, and
   numbers and strings of the whole run beside the steps, ignored. */
Test(import, megatron_bridge_golden_by_step)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("megatron-golden", "bridge_golden.json", &s, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.steps, 4);
	cr_assert_eq(res.counts.records, 4);
	cr_assert_eq(res.counts.ignored, 3, "alloc, max_alloc, job_id");
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 4 * 3 - 1, "one null");
	cr_assert_eq(at(&m, 1, 0, "loss")->value, 11.89415);
	cr_assert_eq(at(&m, 2, 0, "tflops")->value, 252.8);
	cr_assert_eq(at(&m, 2, 0, "tflops")->kind, LKS_METRIC_PERFORMANCE);
	cr_assert_eq(at(&m, 3, 0, "iteration_time")->value, 233.1, "ms, as the log's");
	cr_assert(isnan(at(&m, 4, 0, "loss")->value));
	for (int i = 0; i < m.n && i < MAXROWS; i++)
		cr_assert(m.row[i].step != 3 || strcmp(m.name[i], "tflops"), "the null stored");
	lks_store_close(s);
	rm_tmp();
}

/* A name the table lacks takes its kind from its words: time, speed, memory, power (any
   case, a word between other characters) or a rate "/s" make it performance; anything else,
   a word that only starts so ("timestep", "memo_hits", "msgs") included, is numerics. */
Test(import, a_name_the_table_lacks_is_performance_by_its_words)
{
	static const char *const perf[] = { "step_time_ms", "Tokens_s", "peak_mem_gb", "gpu_util",
	                                    "Latency__ms_", "tflops_est" };
	static const char *const num[] = { "aux_loss", "num_tokens", "timestep", "memo_hits", "msgs",
	                                   "mtp_1_loss" };
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("jsonl", "kinds_by_name.jsonl", &s, &res), 0, "%s", lks_errmsg());
	metrics_of(s, res.run_id, &m);
	for (size_t i = 0; i < sizeof(perf) / sizeof(perf[0]); i++)
		cr_expect_eq(at(&m, 1, 0, perf[i])->kind, LKS_METRIC_PERFORMANCE, "%s", perf[i]);
	for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++)
		cr_expect_eq(at(&m, 1, 0, num[i])->kind, LKS_METRIC_NUMERICS, "%s", num[i]);
	lks_store_close(s);
	rm_tmp();

	/* Megatron-DeepSpeed's seconds are the table's iteration_time_s, not a name of their own */
	cr_assert_eq(import("megatron-log", "megatron_deepspeed_s.log", &s, &res), 0, "%s",
	             lks_errmsg());
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 10, 0, "iteration_time_s")->value, 7.2310);
	cr_assert_eq(at(&m, 10, 0, "iteration_time_s")->kind, LKS_METRIC_PERFORMANCE);
	lks_store_close(s);
	rm_tmp();
}

/* Megatron-LM of 2026 (training.py): a timestamp to the microsecond, energy and power per
   GPU (--log-energy), a MoE's losses, and RL's token rates and packing share after the nan
   iterations; the energy, power, rates and share are performance, the MoE loss numerics (a
   name the table lacks). A performance value "N/A" is not measured, as in torchtitan. */
Test(import, megatron_energy_power_and_rl_rates_are_performance)
{
	static const char *const perf[] = { "energy", "power", "tokens_per_second", "tps",
	                                    "actual_tokens_per_second", "actual_tps",
	                                    "packing_eff" };
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("megatron-log", "megatron_energy.log", &s, &res), 0, "%s",
	             lks_errmsg());
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 10, 0, "energy")->value, 1003.4);
	cr_assert_eq(at(&m, 20, 0, "power")->value, 699.4);
	cr_assert_eq(at(&m, 30, 0, "packing_eff")->value, 87.5);
	cr_assert_eq(at(&m, 30, 0, "tps")->value, 45763.0);
	for (size_t i = 0; i < sizeof(perf) / sizeof(perf[0]); i++)
		cr_assert_eq(at(&m, 30, 0, perf[i])->kind, LKS_METRIC_PERFORMANCE, "%s", perf[i]);
	cr_assert_eq(at(&m, 30, 0, "load_balancing_loss")->value, 1.01);
	cr_assert_eq(at(&m, 30, 0, "load_balancing_loss")->kind, LKS_METRIC_NUMERICS);
	lks_store_close(s);
	rm_tmp();

	cr_assert_eq(import("megatron-log", "megatron_energy_b.log", &s, &res), 0, "%s",
	             lks_errmsg());
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 10, 0, "tflops")->value, 412.6);
	for (int i = 0; i < m.n && i < MAXROWS; i++)
		cr_assert(m.row[i].step != 20 || strcmp(m.name[i], "tflops"), "N/A stored");
	lks_store_close(s);
	rm_tmp();
}

/* Megatron-LM prints its iteration line from the last rank only (print_rank_last): under
   'torchrun --tee' every line has that rank's "[rank7]:" prefix. The line is the job's (its
   loss already averaged over data-parallel ranks): stored as rank 0 of a one-rank run, where
   rank 7 of eight, ranks 0 to 6 without steps, was refused. */
Test(import, megatron_log_with_the_last_ranks_prefix_is_the_jobs)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("megatron-log", "megatron_rank_prefix.log", &s, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.world_size, 1);
	cr_assert_eq(res.steps, 30);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 10, 0, "loss")->value, 1.234567E+00);
	cr_assert_eq(at(&m, 30, 0, "loss")->value, 9.876543E-01);
	lks_store_close(s);
	rm_tmp();
}

Test(import, megatron_golden_list_and_map)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("megatron-golden", "golden_list.json", &s, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.steps, 9);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 9);
	cr_assert_eq(at(&m, 5, 0, "loss")->value, 10.25);
	cr_assert(isnan(at(&m, 9, 0, "loss")->value));
	cr_assert_eq(at(&m, 5, 0, "num_zeros")->value, 12.0);
	cr_assert_eq(at(&m, 1, 0, "iteration_time_s")->kind, LKS_METRIC_PERFORMANCE);
	lks_store_close(s);
	rm_tmp();

	cr_assert_eq(import("megatron-golden", "golden_map.json", &s, &res), 0, "%s",
	             lks_errmsg());
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 6);
	cr_assert_eq(at(&m, 2, 0, "loss")->value, 10.25);
	cr_assert(isnan(at(&m, 3, 0, "loss")->value));
	cr_assert_eq(at(&m, 3, 0, "mem_allocated")->value, 1073741824.0);
	lks_store_close(s);
	rm_tmp();
}

Test(import, jsonl_ranks_and_any_named_metric)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("jsonl", "run.jsonl", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.world_size, 2);
	cr_assert_eq(res.counts.ignored, 1);  /* the blank line */
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 1, 1, "tps")->value, 1190.0);
	cr_assert_eq(at(&m, 2, 0, "my_metric")->value, -1e-300);
	cr_assert_eq(at(&m, 2, 0, "my_metric")->kind, LKS_METRIC_NUMERICS);
	cr_assert(isinf(at(&m, 2, 1, "my_metric")->value) && at(&m, 2, 1, "my_metric")->value < 0);
	cr_assert(isnan(at(&m, 2, 1, "grad_norm")->value));
	lks_store_close(s);
	rm_tmp();
}

/* A run restarted from a checkpoint goes on in the next file: where a later file logs a
   rank's step again, the earlier files' rows from that step on are dropped and the later
   file's values stand; within one file the same step with other values is still refused.
   restart_a logs steps 1-4, restart_b (the restart, which died again) steps 3 only,
   restart_c (the restart after it) steps 3-5. */
Test(import, a_restart_in_the_next_file_replaces_the_steps_logged_again)
{
	static const char *const ac[] = { "restart_a.jsonl", "restart_c.jsonl" };
	static const char *const ab[] = { "restart_a.jsonl", "restart_b.jsonl" };
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import_files("jsonl", ac, 2, &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 5);
	cr_assert_eq(res.counts.restarts, 2, "both ranks went back to step 3");
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 10, "steps 1-2 of the first file, 3-5 of the second, 2 ranks");
	cr_assert_eq(at(&m, 2, 1, "loss")->value, 2.75);    /* the first file's */
	cr_assert_eq(at(&m, 3, 0, "loss")->value, 2.5);     /* the restart's, not 2.25 */
	cr_assert_eq(at(&m, 4, 1, "loss")->value, 2.25);    /* not 2.125 */
	cr_assert_eq(at(&m, 5, 1, "loss")->value, 2.09375);
	lks_store_close(s);
	rm_tmp();

	/* a restart that died before it passed the first file: the run ends at its last step */
	cr_assert_eq(import_files("jsonl", ab, 2, &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 3);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 6);
	cr_assert_eq(at(&m, 3, 1, "loss")->value, 2.625);
	lks_store_close(s);
	rm_tmp();
}

/* Python's json module (json.dumps, allow_nan by default) writes NaN, Infinity and
   -Infinity bare, which JSON lacks; a file written '\n'.join(lines) has no newline after
   its last line, which JSON Lines allows. tests/import/data/python.jsonl is both. */
Test(import, jsonl_as_python_writes_it)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("jsonl", "python.jsonl", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 3);
	metrics_of(s, res.run_id, &m);
	cr_assert(isnan(at(&m, 2, 0, "loss")->value));
	cr_assert(isinf(at(&m, 2, 0, "grad_norm")->value) && at(&m, 2, 0, "grad_norm")->value > 0);
	cr_assert(isinf(at(&m, 2, 0, "lr")->value) && at(&m, 2, 0, "lr")->value < 0);
	cr_assert_eq(at(&m, 2, 0, "NaN_count")->value, 3.0);  /* a name, not a value */
	cr_assert_eq(at(&m, 3, 0, "loss")->value, 9.75);      /* the line without a newline */
	lks_store_close(s);
	rm_tmp();
}

/* Megatron-LM's older golden files (written by its get_test_results_from_tensorboard_logs)
   end with "iteration_timing_avg": a number, the run's mean, no step's: counted and left,
   the metrics beside it read. */
Test(import, megatron_golden_legacy_summary_number_left)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("megatron-golden", "mcore_golden_legacy.json", &s, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.steps, 45);
	cr_assert_eq(res.counts.ignored, 1);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 20);
	cr_assert_eq(at(&m, 45, 0, "loss")->value, 9.55467);
	cr_assert_eq(at(&m, 30, 0, "num_zeros")->value, 1788.0);
	lks_store_close(s);
	rm_tmp();
}

/* A progress bar (tqdm redraws its line with '\r', never '\n') between metric lines: one
   line far longer than any metric line, counted as ignored, where it refused the log. */
Test(import, a_line_longer_than_any_metric_line_is_ignored)
{
	char path[512], db[512];
	const char *files[] = { path };
	lks_import_opts o = { .case_name = "c", .run_name = "r" };
	lks_import_result res;
	struct seen m;
	lks_store *s;
	FILE *f;

	o.fmt = lks_import_format_find("torchtitan");
	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "bar.log");
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("[titan] 2026-01-05 10:00:01,000 - root - INFO - step:  1  loss:  9.5\n", f);
	for (int i = 0; i < 2000; i++)  /* 2000 redraws of ~70 bytes: 140 KB */
		fprintf(f, "\rMap: %3d%%|#####| %4d/2000 [00:01<00:00, 1234.56 examples/s]", i / 20, i);
	fputs("\n[titan] 2026-01-05 10:00:02,000 - root - INFO - step:  2  loss:  9.25\n", f);
	fclose(f);
	path_in_tmp(db, sizeof(db), "import.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(s, &o, files, 1, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 2);
	cr_assert_eq(res.counts.ignored, 1);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 2, 0, "loss")->value, 9.25);
	/* every jsonl line is a record: one that long is bad input, not skipped */
	o.fmt = lks_import_format_find("jsonl");
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("{\"step\": 1, \"loss\": 1.5, \"note\": \"", f);
	for (int i = 0; i < 70000; i++)
		fputc('x', f);
	fputs("\"}\n", f);
	fclose(f);
	cr_assert_eq(lks_import_files(s, &o, files, 1, &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "bar.log':1: line longer than"), "%s", lks_errmsg());
	lks_store_close(s);
	rm_tmp();
}

/* A hostile log: bad input at its file:line, and nothing at all stored. */
static void refused(const char *fmt, const char *file, const char *where)
{
	lks_import_result res;
	lks_store *s;
	int rc = import(fmt, file, &s, &res);

	cr_assert_eq(rc, LKS_E_BAD_INPUT, "%s: rc %d (%s)", file, rc, lks_errmsg());
	cr_assert(strstr(lks_errmsg(), where), "%s: '%s' lacks '%s'", file, lks_errmsg(), where);
	cr_assert_eq(sql_int(s, "SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM steps)"),
	             0, "%s: something stored", file);
	/* the import turns foreign keys off for its transaction only */
	cr_assert_eq(sql_int(s, "PRAGMA foreign_keys"), 1, "%s: foreign keys left off", file);
	lks_store_close(s);
	rm_tmp();
}

Test(import, hostile_logs_fail_at_file_line_and_store_nothing)
{
	refused("torchtitan", "titan_backwards.log", "titan_backwards.log':3: step 1 of rank 0 "
	        "goes backwards");
	refused("torchtitan", "titan_truncated.log", "titan_truncated.log':2:");
	refused("torchtitan", "titan_cut_value.log", "titan_cut_value.log':2: truncated");
	refused("torchtitan", "titan_rank_gap.log", "rank 1 has no steps");
	refused("torchtitan", "titan_loss_na.log", "titan_loss_na.log':3: bad value 'N/A' of "
	        "'loss'");
	refused("megatron-log", "megatron_bad_number.log", "megatron_bad_number.log':2: bad value "
	        "'1.1000O0E+00'");
	refused("megatron-log", "megatron_truncated.log", "megatron_truncated.log':2: truncated");
	refused("megatron-log", "megatron_running_bad.log", "megatron_running_bad.log':1: bad value "
	        "'1.101008E+01/1.2' of 'lm loss'");
	refused("megatron-log", "megatron_running_bad_avg.log", "megatron_running_bad_avg.log':1: "
	        "bad value '615.5 (avg 6x5.5)'");
	refused("megatron-log", "megatron_memory_bad.log", "megatron_memory_bad.log':1: bad value "
	        "'12.34GB/free/192.00GB/6.43%'");
	refused("megatron-golden", "bridge_golden_bad.json", "bridge_golden_bad.json': \"1\".\"lm "
	        "loss\": want a number");
	refused("megatron-golden", "bridge_golden_step.json", "bridge_golden_step.json': \"1\": "
	        "want a step");
	refused("jsonl", "jsonl_null_loss.jsonl", "jsonl_null_loss.jsonl':2: bad value of \"loss\"");
	refused("jsonl", "jsonl_bad_number.jsonl", "jsonl_bad_number.jsonl':2: bad value of "
	        "\"loss\"");
	/* a folder is bad input, not a failure to read (exit 3) */
	refused("torchtitan", ".", "data/.' is a folder, not a log");
	/* a torchtitan log read as megatron: no metric lines */
	refused("megatron-log", "titan_repeated.log", "no metric lines");
}

/* Ranks that print without a "[rankN]:" prefix (as in torchtitan's pull request 2389, 8
   GPUs): each step's line comes once per rank, the job's loss and grad norm the same, each
   rank's tps and tflops its own. One record a step, the first line's; a rank that prints
   another loss at a step is bad input with a hint, and a line that names its rank must
   repeat itself exactly. */
Test(import, unnamed_ranks_print_each_step_with_their_own_timings)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("torchtitan", "titan_ranks_unnamed.log", &s, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.counts.records, 12);
	cr_assert_eq(res.counts.repeated, 9);
	cr_assert_eq(res.world_size, 1);
	cr_assert_eq(res.steps, 5);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 3 * 7);
	cr_assert_eq(at(&m, 4, 0, "loss")->value, 7.62585);
	cr_assert_eq(at(&m, 4, 0, "grad_norm")->value, 26.625);
	cr_assert_eq(at(&m, 3, 0, "tps")->value, 10012.0, "not the first line's");
	cr_assert_eq(at(&m, 4, 0, "tflops")->value, 314.71, "not the first line's");
	cr_assert_eq(at(&m, 5, 0, "tflops")->value, 313.36, "not the first line's");
	lks_store_close(s);
	rm_tmp();
	refused("torchtitan", "titan_ranks_unnamed_loss_apart.log", "titan_ranks_unnamed_loss_apart"
	        ".log':8: step 4 again with other values (line 6), and the lines name no rank");
	refused("torchtitan", "titan_rank_again.log", "titan_rank_again.log':3: step 3 of rank 0 "
	        "again with other values (line 2)");
}

/* A UTF-8 byte order mark, at the start of a log (a Windows tool's) or of a file appended
   to it with cat, is no part of the line it starts: the rank prefix after it counts, and a
   jsonl object or a golden file after it reads. A compressed file is named as such, with
   the command that gives it decompressed. */
Test(import, byte_order_marks_dropped_and_compressed_files_named)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("torchtitan", "titan_bom.log", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.world_size, 2);
	cr_assert_eq(res.counts.records, 4);
	cr_assert_eq(res.counts.ignored, 4);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 2 * 2 * 7);
	cr_assert_eq(at(&m, 1, 0, "loss")->value, 8.1661);
	cr_assert_eq(at(&m, 1, 1, "memory")->value, 2.48);
	lks_store_close(s);
	rm_tmp();
	cr_assert_eq(import("jsonl", "bom.jsonl", &s, &res), 0, "%s", lks_errmsg());
	lks_store_close(s);
	rm_tmp();
	cr_assert_eq(import("megatron-golden", "golden_bom.json", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 9);
	lks_store_close(s);
	rm_tmp();
	refused("torchtitan", "titan_2ranks.log.gz", "titan_2ranks.log.gz':1: compressed, not a "
	        "log: give it decompressed ('zcat ");
	refused("megatron-golden", "golden_list.json.gz", "golden_list.json.gz': compressed, not "
	        "JSON: give it decompressed ('zcat ");
}

/* A golden file is read whole, so within a golden file's limit (LKS_GOLDEN_FILE_MAX), from a
   file or a pipe: /dev/zero, which never ends, is refused at once by its name (it grew to
   3.2 GB); a file over the limit before a byte is read; a pipe at the first byte over it.
   Bad input, and nothing stored. */
Test(import, a_golden_file_is_read_within_its_limit, .timeout = 120)
{
	char dir[64], big[128], fifo[128], want[128];
	pid_t pid;
	int fd, st;

	refused("megatron-golden", "/dev/zero", "'/dev/zero' is not a regular file or a pipe "
	        "(a device)");
	snprintf(dir, sizeof(dir), "/tmp/lks-test-limit-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(big, sizeof(big), "%s/big.json", dir);
	cr_assert_geq(fd = open(big, O_WRONLY | O_CREAT, 0644), 0);
	cr_assert_eq(ftruncate(fd, (off_t)LKS_GOLDEN_FILE_MAX + 1), 0);  /* sparse */
	close(fd);
	snprintf(want, sizeof(want), "over the limit of %zu bytes for a golden file",
	         LKS_GOLDEN_FILE_MAX);
	refused("megatron-golden", big, want);
	/* blanks, which JSON allows, 64 KiB more than the limit, through a FIFO */
	snprintf(fifo, sizeof(fifo), "%s/pipe.json", dir);
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		static char blanks[1 << 16];
		size_t left = LKS_GOLDEN_FILE_MAX + sizeof(blanks);
		int w = open(fifo, O_WRONLY);
		ssize_t put = 1;

		signal(SIGPIPE, SIG_IGN);  /* the reader closes the pipe when it has enough */
		memset(blanks, ' ', sizeof(blanks));
		for (; w >= 0 && left && put > 0; left -= (size_t)put)
			put = write(w, blanks, left < sizeof(blanks) ? left : sizeof(blanks));
		_exit(0);
	}
	snprintf(want, sizeof(want), "pipe.json' holds more than the limit of %zu bytes",
	         LKS_GOLDEN_FILE_MAX);
	refused("megatron-golden", fifo, want);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	unlink(big);
	unlink(fifo);
	rmdir(dir);
}

/* Two nodes of 8 GPUs, torchrun --local-ranks-filter 0 on each: the log holds ranks 0
   and 8. By default a rank gap is a rank without steps, and the error says how such a log
   imports; with the ranks given, they import under their own numbers (world size 9), a
   rank given without steps or a rank not given is bad input, and nothing is stored. */
Test(import, a_log_of_some_ranks_imports_with_the_ranks_given)
{
	static const char *const bad[] = { "", "0,", ",8", "0,,8", "-1", "8-0", "0-", "+3",
	                                   " 0", "0 ,8", "65536", "99999999999999999999", "0;8",
	                                   "0x8" };
	lks_import_result res;
	struct seen m;
	lks_store *s;

	refused("torchtitan", "titan_two_nodes.log", "rank 1 has no steps (ranks up to 8 do); a "
	        "log of some ranks only imports with the ranks it holds given (--ranks 0,8)");
	ranks_given = "0,8";
	cr_assert_eq(import("torchtitan", "titan_two_nodes.log", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.world_size, 9);
	cr_assert_eq(res.steps, 3);
	cr_assert_eq(res.counts.records, 6);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 2 * 3 * 7, "ranks 0 and 8 only");
	cr_assert_eq(at(&m, 2, 8, "loss")->value, 11.3508);
	cr_assert_eq(at(&m, 3, 8, "tps")->value, 6129.0);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs WHERE world_size = 9 AND fingerprint "
	                        "LIKE '%\"ranks\":\"0,8\"%'"), 1);
	lks_store_close(s);
	rm_tmp();
	ranks_given = "0-1,8";  /* a range */
	refused("torchtitan", "titan_two_nodes.log", "rank 1 has no steps (the ranks given: 0-1,8)");
	ranks_given = "0";
	refused("torchtitan", "titan_two_nodes.log", "titan_two_nodes.log':4: rank 8 is not one of "
	        "the ranks given (0)");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ranks_given = bad[i];
		cr_assert_eq(lks_import_ranks_valid(bad[i]), *bad[i] ? LKS_E_BAD_INPUT : 0, "'%s'",
		             bad[i]);
	}
	cr_assert_eq(lks_import_ranks_valid("0-7,8,16-23"), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_ranks_valid("65535"), 0, "%s", lks_errmsg());
	ranks_given = NULL;
}

/* The prefixes launchers put before a line: torchrun without --role writes "[defaultN]:"
   (the role's name, then the rank), srun --label the task's number ("N: ", padded with
   blanks to the widest); each gives the line's rank. */
Test(import, torchrun_and_srun_prefixes_give_the_rank)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("torchtitan", "titan_torchrun_default.log", &s, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.world_size, 2);
	cr_assert_eq(res.counts.records, 6);
	cr_assert_eq(res.counts.repeated, 0);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 6 * 7);
	cr_assert_eq(at(&m, 3, 1, "tps")->value, 57706.0);
	cr_assert_eq(at(&m, 3, 0, "grad_norm")->value, 1.1021);
	lks_store_close(s);
	rm_tmp();

	ranks_given = "0,1,10";
	cr_assert_eq(import("torchtitan", "titan_srun_label.log", &s, &res), 0, "%s", lks_errmsg());
	ranks_given = NULL;
	cr_assert_eq(res.world_size, 11);
	cr_assert_eq(res.counts.records, 6);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 2, 10, "tflops")->value, 78.22);
	cr_assert_eq(at(&m, 1, 1, "grad_norm")->value, 1.1008);
	lks_store_close(s);
	rm_tmp();

	/* what a log collector puts before torchrun's prefix (kubectl logs --prefix, a container
	   runtime's "TIME stdout F ", --timestamps): the prefix still names the rank, where the
	   ranks' lines were taken for one unnamed rank's repeats */
	cr_assert_eq(import("torchtitan", "titan_collector_prefix.log", &s, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.world_size, 2);
	cr_assert_eq(res.counts.records, 6);
	cr_assert_eq(res.counts.repeated, 0);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 14, 1, "tps")->value, 7291.0);
	cr_assert_eq(at(&m, 15, 0, "tps")->value, 7334.0);
	cr_assert_eq(at(&m, 16, 0, "tps")->value, 7320.0);
	cr_assert_eq(at(&m, 16, 1, "loss")->value, 3.05047);
	lks_store_close(s);
	rm_tmp();
}

Test(import, numbers_as_logs_write_them)
{
	double x;

	cr_assert_eq(lks_import_number("1.234E+00", 9, 0, &x), 0);
	cr_assert_eq(x, 1.234);
	cr_assert_eq(lks_import_number("177,138", 7, 1, &x), 0);
	cr_assert_eq(x, 177138.0);
	cr_assert_eq(lks_import_number("NaN", 3, 0, &x), 0);
	cr_assert(isnan(x));
	cr_assert_neq(lks_import_number("177,138", 7, 0, &x), 0);
	cr_assert_neq(lks_import_number("1,", 2, 1, &x), 0);
	cr_assert_neq(lks_import_number("0x10", 4, 0, &x), 0);
	cr_assert_neq(lks_import_number(" 1", 2, 0, &x), 0);
	cr_assert_neq(lks_import_number("1e999", 5, 0, &x), 0);
	cr_assert_eq(lks_import_number("-0", 2, 0, &x), 0);
	cr_assert(x == 0 && signbit(x), "%a", x);
	cr_assert_neq(lks_import_number("1e", 2, 0, &x), 0);
	cr_assert_neq(lks_import_number("-", 1, 0, &x), 0);
}

/* Short decimals take a fast path of one rounding (import_metric.c); every number, short
   or not, must read as strtod reads it, bit for bit: decimals of 1 to 17 digits around the
   path's edges (15 digits, 10^+-22), as logs print them (%g, %e, %f, %E). */
Test(import, numbers_read_as_strtod_reads_them)
{
	static const char *const fmt[] = { "%.*g", "%.*e", "%.*f", "%.*E" };
	uint64_t r = 0x9e3779b97f4a7c15u;
	int fast = 0;

	for (int i = 0; i < 200000; i++) {
		char buf[128];
		double v, got, want;
		int p;

		r = r * 6364136223846793005u + 1442695040888963407u;
		p = (int)(r >> 59) % 18;  /* 0 to 17 digits */
		v = (double)(r >> 11) / 9007199254740992.0 * pow(10.0, (int)((r >> 3) % 61) - 30);
		if (r & 4)
			v = -v;
		snprintf(buf, sizeof(buf), fmt[i % 4], p, v);
		want = strtod(buf, NULL);
		cr_assert_eq(lks_import_number(buf, strlen(buf), 0, &got), 0, "'%s'", buf);
		cr_assert(memcmp(&got, &want, sizeof(got)) == 0, "'%s': %a, strtod %a", buf, got, want);
		fast += strlen(buf) < 12 && !strchr(buf, 'e') && !strchr(buf, 'E');
	}
	cr_assert_gt(fast, 10000, "the short decimals were not tried");  /* the fast path's */
}

/* Rows of one (step, rank) stored in a block read back bit for bit, by name, with their
   kinds: signed zero, both infinities, a NaN (every NaN reads as one), the extremes, a
   subnormal, a short decimal, a name of the longest length. */
Test(import, block_metrics_read_back_bit_for_bit_by_name)
{
	static const double v[] = { -0.0, INFINITY, -INFINITY, -NAN, DBL_MAX, 4.9406564584124654e-324,
	                            0.1, -1.234567890123456789e-300 };
	char longest[LKS_METRIC_NAME_MAX];
	const char *names[] = { "z", "loss", "a b", "tps", "grad_norm", "x1", "x0", longest };
	lks_metric_row rows[8];
	lks_run_info info = { .case_name = "c", .run_name = "r", .recipe = "import",
	                      .backend = "import:jsonl" };
	lks_block *b = lks_block_new();
	struct seen m;
	lks_store *s;
	char db[512];
	int64_t run;

	memset(longest, 'm', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = 0;
	for (int i = 0; i < 8; i++)
		rows[i] = (lks_metric_row){ 3, 1, names[i], i % 3 == 1 ? LKS_METRIC_PERFORMANCE
		                                                      : LKS_METRIC_NUMERICS, v[i] };
	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "packed.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_import_begin(s, &info, &run), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_block_add(b, 3, 1, rows, 8), 0, "%s", lks_errmsg());
	/* a name given twice is refused */
	rows[1].name = "z";
	cr_assert_eq(lks_block_add(b, 4, 1, rows, 8), -1);
	rows[1].name = names[1];
	cr_assert_eq(lks_store_import_block(s, run, 1, b), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_block_records(b), 0, "the block was not emptied");
	cr_assert_eq(lks_store_import_end(s, run, 3, 2, 1), 0, "%s", lks_errmsg());
	lks_block_free(b);
	metrics_of(s, run, &m);
	cr_assert_eq(m.n, 8);
	for (int i = 1; i < 8; i++)
		cr_assert_lt(strcmp(m.row[i - 1].name, m.row[i].name), 0, "not by name");
	for (int i = 0; i < 8; i++) {
		const lks_metric_row *r = at(&m, 3, 1, names[i]);

		cr_assert(isnan(v[i]) ? isnan(r->value) : memcmp(&r->value, &v[i], 8) == 0,
		          "%s: %a read back as %a", names[i], v[i], r->value);
		cr_assert_eq(r->kind, rows[i].kind, "%s", names[i]);
	}
	/* one name alone */
	memset(&m, 0, sizeof(m));
	cr_assert_eq(lks_store_get_metrics(s, run, "grad_norm", see, &m), 0, "%s", lks_errmsg());
	cr_assert_eq(m.n, 1);
	cr_assert_eq(m.row[0].value, DBL_MAX);
	cr_assert_eq(sql_int(s, "PRAGMA foreign_keys"), 1);
	lks_store_close(s);
	rm_tmp();
}

/* A store's blocks, by hand: rank 0's steps 1-2 in one block, its steps 3-4 in the next. */
static void two_blocks(lks_store *s, int64_t run)
{
	lks_block *b = lks_block_new();

	for (int step = 1; step <= 4; step++) {
		lks_metric_row rows[2] = { { 0, 0, "loss", LKS_METRIC_NUMERICS, 10.0 - step },
		                           { 0, 0, "iteration_time", LKS_METRIC_PERFORMANCE, 500 } };

		cr_assert_eq(lks_block_add(b, step, 0, rows, 2), 0, "%s", lks_errmsg());
		if (step % 2 == 0)
			cr_assert_eq(lks_store_import_block(s, run, step / 2, b), 0, "%s", lks_errmsg());
	}
	lks_block_free(b);
}

/* A rank's records dropped from a step on: a block left with none is deleted, one left with
   some is written again with them alone, one before the step is left as it was; the step
   rows and their count follow. */
Test(import, a_restart_drops_records_in_stored_blocks)
{
	lks_run_info info = { .case_name = "c", .run_name = "r", .recipe = "import",
	                      .backend = "import:jsonl" };
	lks_step_row steps[4];
	struct seen m;
	lks_store *s;
	char db[512], text[64];
	int64_t run, n;
	int got;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "restart.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_import_begin(s, &info, &run), 0, "%s", lks_errmsg());
	two_blocks(s, run);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM import_blocks"), 2);
	cr_assert_eq(lks_store_import_restart(s, run, 1, 1, INT64_MAX), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT sum(records) FROM import_blocks"), 4, "no rank 1 there");
	/* blocks from seq 2 on are another reader's: left alone */
	cr_assert_eq(lks_store_import_restart(s, run, 0, 3, 2), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT sum(records) FROM import_blocks"), 4, "block 2 changed");
	cr_assert_eq(lks_store_import_restart(s, run, 0, 3, INT64_MAX), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM import_blocks"), 1, "the block of 3-4 stays");
	cr_assert_eq(lks_store_import_restart(s, run, 0, 2, INT64_MAX), 0, "%s", lks_errmsg());
	sql_text(s, "SELECT first_step || '-' || last_step || ':' || records FROM import_blocks",
	         text, sizeof(text));
	cr_assert_str_eq(text, "1-1:1", "not rewritten to step 1 alone");
	cr_assert_eq(lks_store_import_end(s, run, 1, 1, 1), 0, "%s", lks_errmsg());
	metrics_of(s, run, &m);
	cr_assert_eq(m.n, 2);
	cr_assert_eq(at(&m, 1, 0, "loss")->value, 9.0);
	cr_assert_eq(lks_store_count(s, run, LKS_TABLE_STEPS, &n), 0, "%s", lks_errmsg());
	cr_assert_eq(n, 1);
	cr_assert_eq(lks_store_get_steps(s, run, -1, steps, 4, &got), 0, "%s", lks_errmsg());
	cr_assert_eq(got, 1);
	cr_assert_eq(steps[0].loss, 9.0);
	cr_assert_eq(steps[0].step_time, 0.5);
	lks_store_close(s);
	rm_tmp();
}

struct trend_seen {
	int n, nsteps;
	double final_loss, step_time;
};

static int see_trend(void *arg, const lks_trend_rec *r)
{
	struct trend_seen *t = arg;

	t->n++;
	t->nsteps = r->nsteps;
	t->final_loss = r->final_loss;
	t->step_time = r->step_time;
	return 0;
}

/* The report's trend of an imported run, whose steps are records in blocks: its steps, the
   mean loss of its last step over the ranks, its mean step time, as SQL gives a trained
   run's. titan_2ranks.log: steps 1-2 of 2 ranks. */
Test(import, the_trend_of_an_imported_run_reads_its_records)
{
	char path[512], db[512];
	const char *file = path;
	lks_import_opts o = { .fmt = lks_import_format_find("torchtitan"), .case_name = "c",
	                      .run_name = "r" };
	lks_import_result res;
	struct trend_seen t = { 0 };
	lks_step_row steps[4];
	lks_store *s;
	int n;

	snprintf(path, sizeof(path), "%s/titan_2ranks.log", LKS_IMPORT_DIR);
	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "trend.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_suite(s, "lockstep run", &o.suite_id), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(s, &o, &file, 1, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_steps(s, res.run_id, 2, steps, 4, &n), 0, "%s", lks_errmsg());
	cr_assert_eq(n, 2);
	cr_assert_eq(lks_store_get_trend(s, "c", o.suite_id, 5, see_trend, &t), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(t.n, 1);
	cr_assert_eq(t.nsteps, 3, "steps 0 to 2, as max(step) + 1");
	cr_assert_eq(t.final_loss, (steps[0].loss + steps[1].loss) / 2);
	cr_assert(isnan(t.step_time), "torchtitan logs no iteration time");
	lks_store_close(s);
	rm_tmp();
}

/* The thread storing blocks fails (a trigger planted in import_blocks refuses them): the
   import fails with its message, whether the block was handed over half way (40000 lines:
   the first full block) or at the end (3 lines), and nothing is stored. */
Test(import, a_failing_block_writer_fails_the_import_and_stores_nothing)
{
	static const int lines[] = { 40000, 3 };

	for (int t = 0; t < 2; t++) {
		char log[512], db[512];
		const char *file = log;
		lks_import_opts o = { .fmt = lks_import_format_find("jsonl"), .case_name = "c",
		                      .run_name = "r" };
		lks_import_result res;
		lks_store *s;
		FILE *f;

		mkdir_tmp();
		path_in_tmp(log, sizeof(log), "big.jsonl");
		path_in_tmp(db, sizeof(db), "fail.db");
		cr_assert(f = fopen(log, "w"));
		for (int i = 1; i <= lines[t]; i++)
			fprintf(f, "{\"step\": %d, \"loss\": %.4f}\n", i, 10.0 / i);
		cr_assert_eq(fclose(f), 0);
		cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
		cr_assert_eq(sqlite3_exec(lks_store_db(s), "CREATE TRIGGER planted BEFORE INSERT ON "
		                          "import_blocks BEGIN SELECT RAISE(ABORT, 'planted'); END",
		                          NULL, NULL, NULL), SQLITE_OK);
		cr_assert_neq(lks_import_files(s, &o, &file, 1, &res), 0, "%d lines", lines[t]);
		cr_assert(strstr(lks_errmsg(), "planted"), "%s", lks_errmsg());
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 0, "a run was stored");
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM import_blocks"), 0);
		lks_store_close(s);
		rm_tmp();
	}
}

/* ---- a log big enough to be read in two halves at once (8 MiB and more) ---- */

#define BIG_LINES 90000  /* of about 110 bytes: 9.5 MiB */

/* A torchtitan log of 2 ranks, BIG_LINES lines; line bad_at (1-based, 0: none) holds a bad
   loss, and line twice_at is followed by 8 copies of itself (0: none). Its size in *size. */
static void write_big(const char *path, long bad_at, long twice_at, long *size)
{
	FILE *f = fopen(path, "w");
	char line[256];

	cr_assert(f);
	for (long i = 1; i <= BIG_LINES; i++) {
		snprintf(line, sizeof(line), "[rank%ld]:[titan] 2026-01-05 10:00:00,000 - root - INFO - "
		         "step: %ld  loss: %s  grad_norm: %.4f\n", (i - 1) % 2, (i + 1) / 2,
		         i == bad_at ? "1.2.3" : "7.0625", 1.0 + (double)(i % 97) / 64);
		fputs(line, f);
		for (int k = 0; i == twice_at && k < 8; k++)
			fputs(line, f);
	}
	*size = ftell(f);
	cr_assert_eq(fclose(f), 0);
}

/* The lines before where import.c's part k of n of the file (size bytes) starts: up to the
   first newline from byte size / n * k on. */
static long lines_before_cut(const char *path, long size, int k, int n)
{
	FILE *f = fopen(path, "r");
	long lines = 0, at = 0;
	int ch;

	cr_assert(f);
	while ((ch = getc(f)) != EOF && !(at++ >= size / n * k && ch == '\n'))
		lines += ch == '\n';
	fclose(f);
	return lines + 1;
}

/* Every row read back, in order, folded into one number. */
struct digest {
	long n;
	uint64_t h;
};

static int fold(void *arg, const lks_metric_row *r)
{
	struct digest *d = arg;
	uint64_t bits;

	memcpy(&bits, &r->value, sizeof(bits));
	d->h = (d->h ^ ((uint64_t)r->step << 20 ^ (uint64_t)r->rank)) * 0x100000001b3u;
	d->h = (d->h ^ bits) * 0x100000001b3u;
	d->n++;
	return 0;
}

/* What one reader stores (LKS_IMPORT_SPLIT_MIN above the file's size) against what the file
   read in parts stores: the same rows and counts. parts: 0, the parts of the default split
   on this machine; else that many parts (LKS_IMPORT_PARTS, every file split). */
static void import_big_both_ways(const char *log, int parts, struct digest *one,
                                 struct digest *two, lks_import_result *r1,
                                 lks_import_result *r2)
{
	lks_import_opts o = { .fmt = lks_import_format_find("torchtitan"), .case_name = "c",
	                      .run_name = "r" };
	char db[512], n[16];
	lks_store *s;

	for (int way = 0; way < 2; way++) {
		struct digest *m = way ? two : one;
		lks_import_result *res = way ? r2 : r1;

		unsetenv("LKS_IMPORT_SPLIT_MIN");
		unsetenv("LKS_IMPORT_PARTS");
		if (!way) {
			setenv("LKS_IMPORT_SPLIT_MIN", "1000000000", 1);
		} else if (parts) {
			snprintf(n, sizeof(n), "%d", parts);
			setenv("LKS_IMPORT_PARTS", n, 1);
			setenv("LKS_IMPORT_SPLIT_MIN", "1", 1);
		}
		path_in_tmp(db, sizeof(db), way ? "two.db" : "one.db");
		cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
		cr_assert_eq(lks_import_files(s, &o, &log, 1, res), 0, "%s", lks_errmsg());
		*m = (struct digest){ 0, 0xcbf29ce484222325u };
		cr_assert_eq(lks_store_get_metrics(s, res->run_id, NULL, fold, m), 0, "%s",
		             lks_errmsg());
		lks_store_close(s);
	}
	unsetenv("LKS_IMPORT_SPLIT_MIN");
	unsetenv("LKS_IMPORT_PARTS");
}

static void expect_same_import(const struct digest *one, const struct digest *two,
                               const lks_import_result *r1, const lks_import_result *r2)
{
	cr_assert_eq(r1->counts.lines, r2->counts.lines);
	cr_assert_eq(r1->counts.records, r2->counts.records);
	cr_assert_eq(r1->counts.repeated, r2->counts.repeated);
	cr_assert_eq(r1->steps, r2->steps);
	cr_assert_eq(r1->world_size, r2->world_size);
	cr_assert_eq(one->n, two->n);
	cr_assert_eq(one->h, two->h, "other rows or values");
}

/* Read in 2 to 5 parts (2: by default, a 9.5 MiB file in halves), with 8 copies of a line
   where each part would start in turn: that part then starts among the copies (its start
   moves by some of them), so its first record repeats the last of the part before, and
   it is read again after that part with those after it: 8 repeated, stored once. The
   parts before it join. What is stored and counted is one reader's every time. */
Test(import, a_big_log_in_parts_stores_what_one_reader_does)
{
	struct digest one, two;
	lks_import_result r1, r2;
	char log[512];
	long size;

	mkdir_tmp();
	path_in_tmp(log, sizeof(log), "big.log");
	for (int parts = 2; parts <= 5; parts++) {
		int set = parts == 2 ? 0 : parts;  /* 0: the default split */

		write_big(log, 0, 0, &size);
		cr_assert_gt(size, 8L << 20, "not big enough to be read in halves");
		import_big_both_ways(log, set, &one, &two, &r1, &r2);
		cr_assert_eq(r2.counts.lines, BIG_LINES);
		cr_assert_eq(r2.steps, BIG_LINES / 2);
		cr_assert_eq(two.n, 2L * BIG_LINES, "loss and grad_norm of every line");
		expect_same_import(&one, &two, &r1, &r2);
		for (int k = 1; k < parts; k++) {
			write_big(log, 0, 0, &size);
			write_big(log, 0, lines_before_cut(log, size, k, parts), &size);
			import_big_both_ways(log, set, &one, &two, &r1, &r2);
			cr_assert_eq(r1.counts.repeated, 8, "%d parts, at part %d", parts, k);
			expect_same_import(&one, &two, &r1, &r2);
		}
	}
	rm_tmp();
}

/* A bad number in a later part is bad input at its own line, as one reader says: in the
   second of two halves, and in each part of four (the parts before it joined). */
Test(import, a_bad_line_in_a_later_part_names_its_line)
{
	lks_import_opts o = { .fmt = lks_import_format_find("torchtitan"), .case_name = "c",
	                      .run_name = "r" };
	lks_import_result res;
	char log[512], want[600];
	const char *file = log;
	long size, bad[5] = { BIG_LINES - 7 };

	mkdir_tmp();
	path_in_tmp(log, sizeof(log), "bad.log");
	write_big(log, 0, 0, &size);
	for (int k = 1; k < 4; k++)  /* a few lines into part k of 4 */
		bad[k] = lines_before_cut(log, size, k, 4) + 3;
	bad[4] = BIG_LINES / 8;  /* in the first part */
	for (int t = 0; t < 5; t++) {
		if (t)
			setenv("LKS_IMPORT_PARTS", "4", 1), setenv("LKS_IMPORT_SPLIT_MIN", "1", 1);
		write_big(log, bad[t], 0, &size);
		cr_assert_neq(lks_import_files(NULL, &o, &file, 1, &res), 0);
		snprintf(want, sizeof(want), "'%s':%ld: bad value '1.2.3'", log, bad[t]);
		cr_assert(strstr(lks_errmsg(), want), "%s", lks_errmsg());
	}
	unsetenv("LKS_IMPORT_PARTS");
	unsetenv("LKS_IMPORT_SPLIT_MIN");
	rm_tmp();
}

/* An integer beyond 64 bits (a token count) is a value like any other, rounded to the
   nearest double as strtod rounds its text, on a line with a bare NaN too; an integer
   that fits stays exact as far as a double holds it (2^53 + 1 rounds to 2^53, as strtod). */
Test(import, jsonl_integers_beyond_64_bits_are_values)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("jsonl", "bigint.jsonl", &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 3);
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(at(&m, 1, 0, "tokens")->value, strtod("123456789012345678901234567890", NULL));
	cr_assert_eq(at(&m, 2, 0, "tokens")->value, strtod("-18446744073709551617", NULL));
	cr_assert(isnan(at(&m, 2, 0, "loss")->value));
	cr_assert_eq(at(&m, 3, 0, "tokens")->value, 9007199254740992.0);
	lks_store_close(s);
	rm_tmp();
}
