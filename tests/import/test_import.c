/*
 * test_import.c: lockstep import (harness/import/import.h) on the fixtures in tests/import/data/,
 * written after each format's public documentation and logs: every value stored exactly as
 * written (a double compared with the same literal), NaN as NaN, each metric with its kind;
 * ranks and repeated lines; and hostile logs refused at their file:line with nothing
 * stored. Every test works in its own mkdtemp folder (store_fixture.h).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store_fixture.h"
#include "tb_events.h"
#include "harness/base/file.h"
#include "harness/import/import.h"
#include "harness/store/import_block.h"
#include "harness/store/report_query.h"
#include "kernels/err.h"

#define MAXROWS 64
#define LEN(a) (sizeof(a) / sizeof((a)[0]))

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

/* The stored row of (step, rank, name); NULL without one. */
static const lks_metric_row *find(const struct seen *s, int step, int rank, const char *name)
{
	for (int i = 0; i < s->n && i < MAXROWS; i++)
		if (s->row[i].step == step && s->row[i].rank == rank && !strcmp(s->row[i].name, name))
			return &s->row[i];
	return NULL;
}

/* The stored row of (step, rank, name); fails the test without one. */
static const lks_metric_row *at(const struct seen *s, int step, int rank, const char *name)
{
	const lks_metric_row *r = find(s, step, rank, name);

	cr_assert(r, "no metric %s at step %d rank %d", name, step, rank);
	return r;
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
	cr_assert(o.fmt, "%s: %s", names[0], lks_errmsg());
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
	cr_assert(rc || (res->commit_s > 0 && res->commit_s < 60), "%s: commit %g s", names[0],
	          res->commit_s);
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

/* ---- the imports of one shape: a fixture, its summary and some of its stored values ---- */

/* A number of an import's summary (lks_import_result) or of what it stored. */
enum count_of { COUNT_END, STEPS, WORLD_SIZE, RECORDS, IGNORED, REPEATED, ROWS };

static const char *const count_name[] = { [STEPS] = "steps", [WORLD_SIZE] = "world_size",
                                          [RECORDS] = "counts.records",
                                          [IGNORED] = "counts.ignored",
                                          [REPEATED] = "counts.repeated",
                                          [ROWS] = "metric rows" };

struct count {
	enum count_of of;
	long want;
};

/* What a stored value is checked for: its value (NAN: a NaN; any other, an infinity
   included, compared with ==), its kind, or that no metric of its name is at its step. */
enum { WANT_VALUE = 1, WANT_KIND = 2, WANT_ABSENT = 4 };
#define ANY_STEP (-1)  /* with WANT_ABSENT: at no step */

struct want {
	int step, rank;
	const char *name;
	unsigned check;
	double value;
	lks_metric_kind kind;
	const char *text;  /* the value is what strtod reads in this text (NULL: value) */
};

#define VALUE(step, rank, name, v) { step, rank, name, WANT_VALUE, v, 0, NULL }
#define KIND(step, rank, name, k) { step, rank, name, WANT_KIND, 0, LKS_METRIC_##k, NULL }
#define BOTH(step, rank, name, v, k) \
	{ step, rank, name, WANT_VALUE | WANT_KIND, v, LKS_METRIC_##k, NULL }
#define STRTOD(step, rank, name, t) { step, rank, name, WANT_VALUE, 0, 0, t }
#define ABSENT(step, name) { step, -1, name, WANT_ABSENT, 0, 0, NULL }

/* One fixture imported alone as a run of its own: the summary numbers it must give (the
   others unchecked) and values it must have stored. */
struct fixture {
	const char *fmt, *file;
	const char *ranks;        /* lks_import_opts.ranks (NULL: every rank from 0) */
	struct count count[6];    /* up to the first COUNT_END, if any */
	struct want want[16];     /* up to the first without a name, if any */
};

static const struct fixture fixtures[] = {
	{ "torchtitan", "titan_2ranks.log", NULL,
	  /* ignored: the "Starting job", "Synchronizing" and "Training completed" lines; rows:
	     loss, grad_norm, memory, memory_pct, tps, tflops, mfu per (step, rank) */
	  { { STEPS, 2 }, { WORLD_SIZE, 2 }, { IGNORED, 4 }, { ROWS, 2 * 2 * 7 } },
	  { VALUE(1, 0, "loss", 8.1661), VALUE(1, 1, "memory", 2.48),
	    VALUE(1, 1, "memory_pct", 3.13), VALUE(2, 0, "tps", 177138.0),
	    VALUE(2, 1, "mfu", 9.71), VALUE(2, 1, "grad_norm", NAN),
	    KIND(1, 0, "grad_norm", NUMERICS), KIND(1, 0, "tflops", PERFORMANCE) } },
	/* torchrun --tee prefixes each piece of a line that a carriage return ended (a
	   progress bar's) and writes it without a newline, so a record may follow a bar, and
	   another process's prefix, on its line: each record is the rank of the prefix just
	   before it (rank 1's step 2 after rank 0's bar), also where the carriage return was
	   kept (rank 1's step 1: its prefix before the bar) */
	{ "torchtitan", "titan_torchrun_bar.log", NULL,
	  { { STEPS, 3 }, { WORLD_SIZE, 2 }, { RECORDS, 6 }, { IGNORED, 0 } },
	  { VALUE(1, 0, "loss", 10.8), VALUE(1, 1, "loss", 10.7), VALUE(2, 0, "loss", 10.5),
	    VALUE(2, 1, "loss", 10.4), VALUE(3, 1, "loss", 10.2), VALUE(3, 0, "loss", 10.3) } },
	/* torchtitan before tps was called so logged "wps" (words, i.e. tokens, per second): a
	   throughput, performance, never numerics (where a bitwise verdict would fail on it). */
	{ "torchtitan", "titan_wps.log", NULL, { { COUNT_END } },
	  { BOTH(2, 0, "wps", 41077.0, PERFORMANCE), VALUE(2, 0, "loss", 10.7406) } },
	/* torchtitan of 2025 and after: a 24-bit colour code, TFLOP/s past a thousand written
	   with a separator (FP8 on an H100: "1,094.23"), and a validation line ("validate step:
	   2 ...") after a training step, which is no training record: counted as ignored (with
	   the start line), its loss not taken for the step's. */
	{ "torchtitan", "titan_validate.log", NULL,
	  { { STEPS, 3 }, { RECORDS, 3 }, { IGNORED, 2 }, { ROWS, 3 * 7 } },
	  { VALUE(2, 0, "loss", 9.0283), VALUE(1, 0, "tflops", 1094.23),
	    VALUE(2, 0, "memory", 62.47), VALUE(3, 0, "grad_norm", 0.9876) } },
	/* A wrapper's own logger before torchtitan's record (AMD Primus: colours, its rank, the
	   source line, then " : "): the record starts at "step:" after that mark; its validation
	   line is still no training step (ignored, with the start line). */
	{ "torchtitan", "titan_primus.log", NULL,
	  { { STEPS, 20 }, { RECORDS, 2 }, { IGNORED, 2 }, { ROWS, 2 * 7 } },
	  { VALUE(10, 0, "loss", 7.8123), VALUE(20, 0, "mfu", 42.10),
	    VALUE(20, 0, "tps", 7301.0) } },
	/* A torchtitan line repeated by the ranks is one row per step and rank. */
	{ "torchtitan", "titan_repeated.log", NULL,
	  { { REPEATED, 3 }, { WORLD_SIZE, 1 }, { ROWS, 2 * 7 } },
	  { VALUE(2, 0, "loss", 9.0001), VALUE(1, 0, "tps", 1024.0) } },
	{ "megatron-log", "megatron.log", NULL, { { STEPS, 30 }, { IGNORED, 3 } },
	  { VALUE(10, 0, "loss", 1.234567E+00), VALUE(10, 0, "lr", 1.000000E-04),
	    VALUE(10, 0, "loss_scale", 65536.0), VALUE(10, 0, "consumed_samples", 640.0),
	    BOTH(10, 0, "iteration_time", 812.3, PERFORMANCE),
	    VALUE(20, 0, "grad_norm", NAN), VALUE(20, 0, "nan_iterations", 1.0),
	    KIND(20, 0, "skipped_iterations", NUMERICS), VALUE(30, 0, "tflops", 123.4),
	    VALUE(30, 0, "num_zeros", 12.0), VALUE(30, 0, "loss", 9.876543E-01) } },
	/* Forks of Megatron-LM's line: Megatron-DeepSpeed's "samples per second" and "TFLOPs"
	   (performance, the latter tflops), its "consumed tokens" and "actual seqlen"
	   (numerics, as every name the table lacks); AMD Primus's tokens per GPU (tps), a time
	   or throughput followed by its running average, "X/Y" or "X (avg Y)", and its memory
	   used/free/total/share, numbers with units: X, the first, is stored (hip_mem_used: the
	   used memory, first). A numerics value in that form is still a bad value, and so is a
	   bad average (the refusals below). */
	{ "megatron-log", "megatron_deepspeed.log", NULL, { { COUNT_END } },
	  { BOTH(5426, 0, "tflops", 78.36, PERFORMANCE),
	    BOTH(5427, 0, "samples_per_second", 1.893, PERFORMANCE),
	    BOTH(5427, 0, "consumed_tokens", 88915968.0, NUMERICS),
	    KIND(5426, 0, "actual_seqlen", NUMERICS), VALUE(5427, 0, "grad_norm", NAN) } },
	{ "megatron-log", "megatron_primus.log", NULL, { { COUNT_END } },
	  { VALUE(2, 0, "tps", 2011.2), VALUE(3, 0, "iteration_time", 654.5),
	    VALUE(3, 0, "tflops", 1290.3), VALUE(3, 0, "tps", 25032.8),
	    VALUE(4, 0, "tflops", 615.5), KIND(4, 0, "tps", PERFORMANCE),
	    VALUE(4, 0, "loss", 1.051008E+01), BOTH(5, 0, "hip_mem_used", 12.34, PERFORMANCE),
	    VALUE(5, 0, "tflops", 617.2) } },
	/* torchtitan since March 2026 prints "mfu: N/A" where FP8 or MX quantization makes MFU
	   misleading (metrics.py, pull request 2451): a performance value not measured, so no
	   mfu is stored at that step (rows: loss, grad_norm, memory, memory_pct, tps, tflops; no
	   mfu); its loss has 5 decimals. (A numerics metric "N/A" is still a bad value: the
	   refusals below.) */
	{ "torchtitan", "titan_fp8_mfu_na.log", NULL,
	  { { WORLD_SIZE, 2 }, { RECORDS, 6 }, { ROWS, 6 * 6 } },
	  { ABSENT(ANY_STEP, "mfu"), VALUE(3, 1, "loss", 10.93305), VALUE(2, 1, "tps", 5301.0),
	    VALUE(1, 0, "tflops", 306.74) } },
	/* TTP's fork writes est_tflops and est_mfu, which are tflops and mfu; est_mfu's -1: not
	   estimated. */
	{ "torchtitan", "titan_est.log", NULL, { { COUNT_END } },
	  { BOTH(10, 0, "tflops", 94.23, PERFORMANCE), BOTH(10, 0, "mfu", -1.0, PERFORMANCE) } },
	/* A jsonl writer's null for a performance metric is "not measured": nothing stored
	   there, as torchtitan's "mfu: N/A" (rows: step 1, 3 values and 3 nulls; step 2, 6
	   values); a numerics null is a bad value (the refusals below). */
	{ "jsonl", "jsonl_null.jsonl", NULL, { { ROWS, 3 + 6 } },
	  { VALUE(1, 0, "tflops", 311.2), VALUE(2, 1, "mfu", 31.5), ABSENT(1, "mfu") } },
	/* Megatron-Bridge's golden values (its scripts/performance/utils/evaluate.py): step ->
	   {label: value} with 0-based steps (key N is iteration N + 1, as its log says), the
	   log's labels, "GPU utilization" its model TFLOP/s per GPU (tflops), null not measured
	   (rows: one null), and numbers and strings of the whole run beside the steps, ignored
	   (alloc, max_alloc, job_id). iteration_time in ms, as the log's. */
	{ "megatron-golden", "bridge_golden.json", NULL,
	  { { STEPS, 4 }, { RECORDS, 4 }, { IGNORED, 3 }, { ROWS, 4 * 3 - 1 } },
	  { VALUE(1, 0, "loss", 11.89415), BOTH(2, 0, "tflops", 252.8, PERFORMANCE),
	    VALUE(3, 0, "iteration_time", 233.1), VALUE(4, 0, "loss", NAN),
	    ABSENT(3, "tflops") } },
	/* A name the table lacks takes its kind from its words: time, speed, memory, power (any
	   case, a word between other characters) or a rate "/s" make it performance; anything
	   else, a word that only starts so ("timestep", "memo_hits", "msgs") included, is
	   numerics. */
	{ "jsonl", "kinds_by_name.jsonl", NULL, { { COUNT_END } },
	  { KIND(1, 0, "step_time_ms", PERFORMANCE), KIND(1, 0, "Tokens_s", PERFORMANCE),
	    KIND(1, 0, "peak_mem_gb", PERFORMANCE), KIND(1, 0, "gpu_util", PERFORMANCE),
	    KIND(1, 0, "Latency__ms_", PERFORMANCE), KIND(1, 0, "tflops_est", PERFORMANCE),
	    KIND(1, 0, "aux_loss", NUMERICS), KIND(1, 0, "num_tokens", NUMERICS),
	    KIND(1, 0, "timestep", NUMERICS), KIND(1, 0, "memo_hits", NUMERICS),
	    KIND(1, 0, "msgs", NUMERICS), KIND(1, 0, "mtp_1_loss", NUMERICS),
	    KIND(1, 0, "fwd_timing", PERFORMANCE), KIND(1, 0, "train_runtime", PERFORMANCE) } },
	/* Megatron-DeepSpeed's seconds are the table's iteration_time_s, not a name of their
	   own. */
	{ "megatron-log", "megatron_deepspeed_s.log", NULL, { { COUNT_END } },
	  { BOTH(10, 0, "iteration_time_s", 7.2310, PERFORMANCE) } },
	/* Megatron-LM of 2026 (training.py): a timestamp to the microsecond, energy and power
	   per GPU (--log-energy), a MoE's losses, and RL's token rates and packing share after
	   the nan iterations; the energy, power, rates and share are performance, the MoE loss
	   numerics (a name the table lacks). */
	{ "megatron-log", "megatron_energy.log", NULL, { { COUNT_END } },
	  { VALUE(10, 0, "energy", 1003.4), VALUE(20, 0, "power", 699.4),
	    BOTH(30, 0, "packing_eff", 87.5, PERFORMANCE), BOTH(30, 0, "tps", 45763.0, PERFORMANCE),
	    KIND(30, 0, "energy", PERFORMANCE), KIND(30, 0, "power", PERFORMANCE),
	    KIND(30, 0, "tokens_per_second", PERFORMANCE),
	    KIND(30, 0, "actual_tokens_per_second", PERFORMANCE),
	    KIND(30, 0, "actual_tps", PERFORMANCE),
	    BOTH(30, 0, "load_balancing_loss", 1.01, NUMERICS) } },
	/* A performance value "N/A" is not measured, as in torchtitan: no tflops at step 20. */
	{ "megatron-log", "megatron_energy_b.log", NULL, { { COUNT_END } },
	  { VALUE(10, 0, "tflops", 412.6), ABSENT(20, "tflops") } },
	/* Megatron-LM prints its iteration line from the last rank only (print_rank_last):
	   under 'torchrun --tee' every line has that rank's "[rank7]:" prefix. The line is the
	   job's (its loss already averaged over data-parallel ranks): stored as rank 0 of a
	   one-rank run, where rank 7 of eight, ranks 0 to 6 without steps, was refused. */
	{ "megatron-log", "megatron_rank_prefix.log", NULL, { { WORLD_SIZE, 1 }, { STEPS, 30 } },
	  { VALUE(10, 0, "loss", 1.234567E+00), VALUE(30, 0, "loss", 9.876543E-01) } },
	/* Megatron golden values as a list (values[i]: iteration start_step + i step_interval
	   + 1, Megatron-LM's checker's slice) and as a map; "nan" is an iteration not logged:
	   nothing stored there. */
	{ "megatron-golden", "golden_list.json", NULL, { { STEPS, 9 }, { ROWS, 8 } },
	  { VALUE(1, 0, "loss", 10.84), VALUE(5, 0, "loss", 10.25), ABSENT(9, "loss"),
	    VALUE(9, 0, "num_zeros", 7.0), KIND(1, 0, "iteration_time_s", PERFORMANCE) } },
	{ "megatron-golden", "golden_map.json", NULL, { { ROWS, 5 } },
	  { VALUE(2, 0, "loss", 10.25), ABSENT(3, "loss"),
	    VALUE(3, 0, "mem_allocated", 1073741824.0) } },
	/* Megatron's extractor writes a NaN it logged bare (json.dump, round(nan, 5) is nan):
	   a NaN at that step, where "nan" is a step not logged; Infinity too. It was refused
	   as not JSON. */
	{ "megatron-golden", "golden_bare_nan.json", NULL, { { STEPS, 3 }, { ROWS, 5 } },
	  { VALUE(1, 0, "loss", 10.84), VALUE(2, 0, "loss", NAN), ABSENT(3, "loss"),
	    VALUE(2, 0, "grad_norm", INFINITY), VALUE(3, 0, "grad_norm", -INFINITY) } },
	/* jsonl: ranks and a metric of any name (ignored: the blank line). */
	{ "jsonl", "run.jsonl", NULL, { { WORLD_SIZE, 2 }, { IGNORED, 1 } },
	  { VALUE(1, 1, "tps", 1190.0), BOTH(2, 0, "my_metric", -1e-300, NUMERICS),
	    VALUE(2, 1, "my_metric", -INFINITY), VALUE(2, 1, "grad_norm", NAN) } },
	/* Python's json module (json.dumps, allow_nan by default) writes NaN, Infinity and
	   -Infinity bare, which JSON lacks; a file written '\n'.join(lines) has no newline
	   after its last line (step 3's), which JSON Lines allows. python.jsonl is both; its
	   NaN_count is a name, not a value. */
	{ "jsonl", "python.jsonl", NULL, { { STEPS, 3 } },
	  { VALUE(2, 0, "loss", NAN), VALUE(2, 0, "grad_norm", INFINITY),
	    VALUE(2, 0, "lr", -INFINITY), VALUE(2, 0, "NaN_count", 3.0),
	    VALUE(3, 0, "loss", 9.75) } },
	/* Megatron-LM's older golden files (written by its
	   get_test_results_from_tensorboard_logs) end with "iteration_timing_avg": a number, the
	   run's mean, no step's: counted and left, the metrics beside it read. */
	{ "megatron-golden", "mcore_golden_legacy.json", NULL,
	  { { STEPS, 46 }, { IGNORED, 1 }, { ROWS, 20 } },
	  { VALUE(1, 0, "loss", 10.85752), VALUE(46, 0, "loss", 9.55467),
	    VALUE(31, 0, "num_zeros", 1788.0) } },
	/* nanoGPT (train.py's line): iter N the step; mfu -100.00% is not measured yet (its
	   running mean starts at -1.0); the evaluation lines, before the same iteration's,
	   are left (one step, one record) */
	{ "nanogpt", "nanogpt.log", NULL,
	  { { STEPS, 250 }, { RECORDS, 4 }, { IGNORED, 5 }, { ROWS, 2 + 2 + 3 + 3 } },
	  { BOTH(0, 0, "loss", 4.2654, NUMERICS), BOTH(0, 0, "iteration_time", 29657.12, PERFORMANCE),
	    ABSENT(10, "mfu"), BOTH(20, 0, "mfu", 26.71, PERFORMANCE), VALUE(250, 0, "loss", 2.0321),
	    ABSENT(250, "val_loss") } },
	/* MaxText (metric_logger.py's line), after max_logging's prefix; its multi-token
	   prediction losses where it logs them; the evaluation line left */
	{ "maxtext", "maxtext.log", NULL,
	  { { STEPS, 2 }, { RECORDS, 3 }, { IGNORED, 3 }, { ROWS, 5 + 7 + 5 } },
	  { BOTH(0, 0, "loss", 10.877, NUMERICS), BOTH(0, 0, "iteration_time_s", 12.153, PERFORMANCE),
	    BOTH(1, 0, "tflops", 4.796, PERFORMANCE), BOTH(1, 0, "tps", 26253.18, PERFORMANCE),
	    BOTH(1, 0, "mtp_loss", 0.212, NUMERICS), BOTH(2, 0, "total_weights", 8192.0, NUMERICS),
	    VALUE(2, 0, "loss", 9.905) } },
	/* MaxText at e591f30: a ramp-up step (no throughput), a profiler's step (no time),
	   lm_loss and perplexity, a NaN loss as f"{loss:.3f}" prints it, a repr's 17 digits,
	   and its new evaluation line, left */
	{ "maxtext", "maxtext_e591f30.log", NULL,
	  { { STEPS, 3 }, { RECORDS, 4 }, { IGNORED, 2 }, { ROWS, 5 + 7 + 4 + 9 } },
	  { BOTH(0, 0, "iteration_time_s", 12.153, PERFORMANCE), ABSENT(0, "tflops"),
	    BOTH(0, 0, "perplexity", 52939.881, NUMERICS), VALUE(2, 0, "loss", 10.1),
	    ABSENT(2, "iteration_time_s"), VALUE(3, 0, "loss", NAN), VALUE(3, 0, "lm_loss", NAN),
	    VALUE(3, 0, "indexer_loss", 0.12345678901234568), VALUE(3, 0, "live_slice_count", 2) } },
	/* A NaN (and an infinity) in a line, as Python's format prints it: a value, stored as
	   NaN, in every line format */
	{ "nanogpt", "nanogpt_nan.log", NULL, { { STEPS, 10 }, { RECORDS, 2 } },
	  { VALUE(0, 0, "loss", 4.2654), VALUE(10, 0, "loss", NAN) } },
	{ "nemo", "nemo_nan.log", NULL, { { STEPS, 1 }, { RECORDS, 2 } },
	  { VALUE(0, 0, "loss", 11.02), VALUE(1, 0, "loss", NAN), VALUE(1, 0, "lr", 0.00012) } },
	{ "composer", "composer_nan.log", NULL, { { STEPS, 2 }, { RECORDS, 2 } },
	  { VALUE(1, 0, "loss", 11.6525), VALUE(2, 0, "loss", NAN),
	    VALUE(2, 0, "metrics_train_LanguageCrossEntropy", INFINITY) } },
	/* NeMo 2 (ProgressPrinter's line): the iteration the step, '|' between the fields, a
	   value in 4 significant digits ("1.103e+01" too), its validation lines left */
	{ "nemo", "nemo.log", NULL, { { STEPS, 2 }, { RECORDS, 3 }, { IGNORED, 2 }, { ROWS, 16 } },
	  { BOTH(0, 0, "loss", 11.02, NUMERICS), VALUE(0, 0, "lr", 6e-05),
	    BOTH(1, 0, "iteration_time_s", 0.5124, PERFORMANCE), VALUE(2, 0, "loss", 11.03),
	    BOTH(2, 0, "val_loss", 10.95, NUMERICS), VALUE(2, 0, "global_step", 2.0) } },
	/* Composer (console_logger.py): a progress line, then its "\t Train NAME: VALUE"
	   lines; an epoch's batches count on from the epochs before; eval, strings left */
	{ "composer", "composer.log", NULL, { { STEPS, 3 }, { RECORDS, 3 }, { ROWS, 5 + 3 + 1 } },
	  { BOTH(1, 0, "loss", 11.6525, NUMERICS), VALUE(2, 0, "loss", 11.341),
	    BOTH(1, 0, "metrics_train_LanguageCrossEntropy", 11.6525, NUMERICS),
	    VALUE(3, 0, "loss", 10.9921), ABSENT(3, "trace") } },
	{ "composer", "composer_epochs.log", NULL, { { STEPS, 101 }, { RECORDS, 2 } },
	  { VALUE(99, 0, "loss", 2.5), VALUE(101, 0, "loss", 2.4) } },
	/* Composer 0.32.1's own console (composer_real.log: a ComposerClassifier trained 12
	   batches on the CPU, console_log_interval 1ba, progress_bar off, 2026-11-29; torch
	   2.7.0): its time/ counters,
	   microbatch size and accuracy beside the loss */
	{ "composer", "composer_real.log", NULL, { { STEPS, 12 }, { RECORDS, 12 } },
	  { BOTH(1, 0, "loss", 1.3381, NUMERICS), VALUE(2, 0, "loss", 1.3936),
	    BOTH(1, 0, "metrics_train_MulticlassAccuracy", 0.5, NUMERICS) } },
	/* the same run with Composer's progress bar (its default): each [batch=N/M]: after the
	   bar, a carriage return and a cursor moved up on its line, read as a terminal shows it */
	{ "composer", "composer_real_bar.log", NULL, { { STEPS, 12 }, { RECORDS, 12 } },
	  { BOTH(1, 0, "loss", 1.3381, NUMERICS), VALUE(2, 0, "loss", 1.3936),
	    VALUE(3, 0, "loss", 1.3793) } },
	/* TensorBoard: an event file tensorboardX 2.6.5 wrote (float32 values whose bits
	   numpy printed: step 1's loss is 0x410e6ae7 = 8.90109920501709), every value the
	   float32 logged, exactly; tensorboardX made the tag "lm loss" "lm_loss"; the
	   file_version event left */
	{ "tensorboard", "tb_tensorboardx.tfevents", NULL,
	  { { STEPS, 5 }, { RECORDS, 5 }, { IGNORED, 1 }, { ROWS, 15 } },
	  { BOTH(1, 0, "loss", 8.90109920501709, NUMERICS), VALUE(5, 0, "loss", 1.9518072605133057),
	    VALUE(3, 0, "grad_norm", 1.9999998807907104),
	    BOTH(1, 0, "iteration_time_s", 0.25099998712539673, PERFORMANCE) } },
	/* Hugging Face Trainer: trainer_state.json's log_history, a step's training, evaluation
	   and summary entries one record; its console's dicts, the n-th with a loss step n */
	{ "hf-trainer", "hf_trainer_state.json", NULL, { { STEPS, 30 }, { RECORDS, 3 },
	  { ROWS, 4 + 7 + 8 } },
	  { BOTH(10, 0, "loss", 10.5949, NUMERICS), VALUE(10, 0, "lr", 5e-05),
	    VALUE(20, 0, "eval_loss", 8.51953125), VALUE(20, 0, "epoch", 0.02),
	    VALUE(30, 0, "train_loss", 9.108800000000001), ABSENT(10, "eval_loss"),
	    /* the Trainer's runtimes are seconds of a clock: never in a bitwise verdict */
	    KIND(20, 0, "eval_runtime", PERFORMANCE), KIND(30, 0, "train_runtime", PERFORMANCE),
	    KIND(30, 0, "total_flos", NUMERICS) } },
	/* a NaN loss, which Python's json writes bare: a NaN, read */
	{ "hf-trainer", "hf_trainer_state_nan.json", NULL, { { STEPS, 30 }, { ROWS, 4 + 7 + 8 } },
	  { VALUE(30, 0, "loss", NAN), VALUE(20, 0, "loss", 8.8213) } },
	{ "hf-trainer", "hf_console.log", NULL,
	  { { STEPS, 3 }, { RECORDS, 3 }, { IGNORED, 3 }, { ROWS, 12 } },
	  { VALUE(1, 0, "loss", 10.5949), VALUE(1, 0, "grad_norm", 188.2812957763672),
	    VALUE(3, 0, "grad_norm", 12.125), ABSENT(2, "eval_loss") } },
	/* torchtitan's expected losses (tests/assets/losses): step and loss rows, or columns
	   named by a "# step ..." comment; float32 values written in full, stored exactly */
	{ "torchtitan-losses", "titan_losses.txt", NULL, { { STEPS, 5 }, { ROWS, 5 } },
	  { BOTH(1, 0, "loss", 8.048324584960938, NUMERICS), VALUE(5, 0, "loss", 5.193394184112549) } },
	{ "torchtitan-losses", "titan_losses_grad.txt", NULL,
	  { { STEPS, 3 }, { IGNORED, 3 }, { ROWS, 6 } },
	  { VALUE(1, 0, "loss", 8.023969650268555), BOTH(3, 0, "grad_norm", 1.8775051832199097,
	                                                  NUMERICS) } },
	/* ... and the same values in the map layout Megatron-LM converted such files to */
	{ "megatron-golden", "mcore_golden_legacy_map.json", NULL, { { STEPS, 46 }, { ROWS, 20 } },
	  { VALUE(1, 0, "loss", 10.85752), VALUE(46, 0, "loss", 9.55467),
	    VALUE(31, 0, "num_zeros", 1788.0), ABSENT(30, "num_zeros") } },
	/* Ranks that print without a "[rankN]:" prefix (as in torchtitan's pull request 2389, 8
	   GPUs): each step's line comes once per rank, the job's loss and grad norm the same,
	   each rank's tps and tflops its own. One record a step, the first line's; the tps and
	   tflops checked here are not the first line's. (A rank that prints another loss at a
	   step is bad input with a hint, and a line that names its rank must repeat itself
	   exactly: the refusals below.) */
	{ "torchtitan", "titan_ranks_unnamed.log", NULL,
	  { { RECORDS, 12 }, { REPEATED, 9 }, { WORLD_SIZE, 1 }, { STEPS, 5 }, { ROWS, 3 * 7 } },
	  { VALUE(4, 0, "loss", 7.62585), VALUE(4, 0, "grad_norm", 26.625),
	    VALUE(3, 0, "tps", 10012.0), VALUE(4, 0, "tflops", 314.71),
	    VALUE(5, 0, "tflops", 313.36) } },
	/* A UTF-8 byte order mark, at the start of a log (a Windows tool's) or of a file
	   appended to it with cat, is no part of the line it starts: the rank prefix after it
	   counts, and a jsonl object or a golden file after it reads. (A compressed file is
	   named as such: the refusals below.) */
	{ "torchtitan", "titan_bom.log", NULL,
	  { { WORLD_SIZE, 2 }, { RECORDS, 4 }, { IGNORED, 4 }, { ROWS, 2 * 2 * 7 } },
	  { VALUE(1, 0, "loss", 8.1661), VALUE(1, 1, "memory", 2.48) } },
	{ "jsonl", "bom.jsonl", NULL, { { COUNT_END } }, { { 0 } } },
	{ "megatron-golden", "golden_bom.json", NULL, { { STEPS, 9 } }, { { 0 } } },
	/* The prefixes launchers put before a line: torchrun without --role writes
	   "[defaultN]:" (the role's name, then the rank), srun --label the task's number ("N: ",
	   padded with blanks to the widest); each gives the line's rank. */
	{ "torchtitan", "titan_torchrun_default.log", NULL,
	  { { WORLD_SIZE, 2 }, { RECORDS, 6 }, { REPEATED, 0 }, { ROWS, 6 * 7 } },
	  { VALUE(3, 1, "tps", 57706.0), VALUE(3, 0, "grad_norm", 1.1021) } },
	{ "torchtitan", "titan_srun_label.log", "0,1,10", { { WORLD_SIZE, 11 }, { RECORDS, 6 } },
	  { VALUE(2, 10, "tflops", 78.22), VALUE(1, 1, "grad_norm", 1.1008) } },
	/* What a log collector puts before torchrun's prefix (kubectl logs --prefix, a
	   container runtime's "TIME stdout F ", --timestamps): the prefix still names the rank,
	   where the ranks' lines were taken for one unnamed rank's repeats. */
	{ "torchtitan", "titan_collector_prefix.log", NULL,
	  { { WORLD_SIZE, 2 }, { RECORDS, 6 }, { REPEATED, 0 } },
	  { VALUE(14, 1, "tps", 7291.0), VALUE(15, 0, "tps", 7334.0),
	    VALUE(16, 0, "tps", 7320.0), VALUE(16, 1, "loss", 3.05047) } },
	/* An integer beyond 64 bits (a token count) is a value like any other, rounded to the
	   nearest double as strtod rounds its text, on a line with a bare NaN too; an integer
	   that fits stays exact as far as a double holds it (2^53 + 1 rounds to 2^53, as
	   strtod). */
	{ "jsonl", "bigint.jsonl", NULL, { { STEPS, 3 } },
	  { STRTOD(1, 0, "tokens", "123456789012345678901234567890"),
	    STRTOD(2, 0, "tokens", "-18446744073709551617"), VALUE(2, 0, "loss", NAN),
	    VALUE(3, 0, "tokens", 9007199254740992.0) } },
};

static long count_got(enum count_of of, const lks_import_result *res, const struct seen *m)
{
	switch (of) {
	case STEPS:      return res->steps;
	case WORLD_SIZE: return res->world_size;
	case RECORDS:    return res->counts.records;
	case IGNORED:    return res->counts.ignored;
	case REPEATED:   return res->counts.repeated;
	case ROWS:       return m->n;
	default:         cr_assert_fail("count %d", (int)of);
	}
	return -1;
}

/* Checks one want of fixture f against the rows it stored; a failure names the fixture. */
static void expect_want(const struct fixture *f, const struct want *w, const struct seen *m)
{
	const lks_metric_row *r;
	double want;

	if (w->check & WANT_ABSENT) {
		for (int i = 0; i < m->n && i < MAXROWS; i++)
			cr_expect(strcmp(m->name[i], w->name) ||
			          (w->step != ANY_STEP && m->row[i].step != w->step),
			          "%s %s: %s stored at step %d rank %d", f->fmt, f->file, w->name,
			          m->row[i].step, m->row[i].rank);
		return;
	}
	r = find(m, w->step, w->rank, w->name);
	cr_assert(r, "%s %s: no metric %s at step %d rank %d", f->fmt, f->file, w->name, w->step,
	          w->rank);
	want = w->text ? strtod(w->text, NULL) : w->value;
	if ((w->check & WANT_VALUE) && isnan(want))
		cr_expect(isnan(r->value), "%s %s: %s at step %d rank %d is %.17g, not a NaN",
		          f->fmt, f->file, w->name, w->step, w->rank, r->value);
	else if (w->check & WANT_VALUE)
		cr_expect_eq(r->value, want, "%s %s: %s at step %d rank %d is %.17g, want %.17g",
		             f->fmt, f->file, w->name, w->step, w->rank, r->value, want);
	if (w->check & WANT_KIND)
		cr_expect_eq(r->kind, w->kind, "%s %s: %s at step %d rank %d is %s, want %s",
		             f->fmt, f->file, w->name, w->step, w->rank,
		             lks_metric_kind_name(r->kind), lks_metric_kind_name(w->kind));
}

#define INDICES_MAX 64

/* The parameters 0 to n - 1: indices into a table. Criterion copies each parameter into
   a process of its own, the binary started anew (BoxFort), where the table's strings lie
   at other addresses (a struct of pointers handed over crashed there); an index finds
   that process's own copy of the table. */
static struct criterion_test_params indices(size_t n)
{
	static size_t index[INDICES_MAX];

	for (size_t i = 0; i < n; i++)
		index[i] = i;
	return cr_make_param_array(size_t, index, n);
}

_Static_assert(LEN(fixtures) <= INDICES_MAX, "too many fixtures");

ParameterizedTestParameters(import, fixtures_store_their_values_as_written)
{
	return indices(LEN(fixtures));
}

/* Each fixture of the table imported into a new database: its summary numbers and the
   values, kinds and absences it lists. */
ParameterizedTest(const size_t *i, import, fixtures_store_their_values_as_written)
{
	const struct fixture *f = &fixtures[*i];
	lks_import_result res;
	struct seen m;
	lks_store *s;

	ranks_given = f->ranks;
	cr_assert_eq(import(f->fmt, f->file, &s, &res), 0, "%s %s: %s", f->fmt, f->file,
	             lks_errmsg());
	ranks_given = NULL;
	metrics_of(s, res.run_id, &m);
	for (size_t k = 0; k < LEN(f->count) && f->count[k].of != COUNT_END; k++) {
		const struct count *c = &f->count[k];
		long got = count_got(c->of, &res, &m);

		cr_expect_eq(got, c->want, "%s %s: %s %ld, want %ld", f->fmt, f->file,
		             count_name[c->of], got, c->want);
	}
	for (size_t k = 0; k < LEN(f->want) && f->want[k].name; k++)
		expect_want(f, &f->want[k], &m);
	lks_store_close(s);
	rm_tmp();
}

/* The steps rows that list, diff and report read, of titan_2ranks.log (its values: the
   table above), and its run's row. */
Test(import, torchtitan_steps_rows_as_list_diff_and_report_read)
{
	lks_import_result res;
	lks_step_row steps[8];
	lks_store *s;
	int n;

	cr_assert_eq(import("torchtitan", "titan_2ranks.log", &s, &res), 0, "%s", lks_errmsg());
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

	cr_assert_eq(rc, LKS_E_BAD_INPUT, "%s %s: rc %d (%s)", fmt, file, rc, lks_errmsg());
	cr_assert(strstr(lks_errmsg(), where), "%s %s: '%s' lacks '%s'", fmt, file, lks_errmsg(),
	          where);
	cr_assert_eq(sql_int(s, "SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM steps)"),
	             0, "%s %s: something stored", fmt, file);
	/* the import turns foreign keys off for its transaction only */
	cr_assert_eq(sql_int(s, "PRAGMA foreign_keys"), 1, "%s %s: foreign keys left off", fmt,
	             file);
	lks_store_close(s);
	rm_tmp();
}

/* Hostile logs: each bad input at its file:line, with nothing stored. */
static const struct refusal {
	const char *fmt, *file, *where;
} refusals[] = {
	{ "torchtitan", "titan_backwards.log",
	  "titan_backwards.log':3: step 1 of rank 0 goes backwards" },
	{ "torchtitan", "titan_truncated.log", "titan_truncated.log':2:" },
	{ "torchtitan", "titan_cut_value.log", "titan_cut_value.log':2: truncated" },
	{ "torchtitan", "titan_rank_gap.log", "rank 1 has no steps" },
	/* a numerics value "N/A" is a bad value, where a performance one is not measured */
	{ "torchtitan", "titan_loss_na.log", "titan_loss_na.log':3: bad value 'N/A' of 'loss'" },
	{ "megatron-log", "megatron_bad_number.log",
	  "megatron_bad_number.log':2: bad value '1.1000O0E+00'" },
	{ "megatron-log", "megatron_truncated.log", "megatron_truncated.log':2: truncated" },
	{ "nanogpt", "nanogpt_bad_number.log", "nanogpt_bad_number.log':2: bad value '3.24l7'" },
	{ "nemo", "nemo_no_value.log", "nemo_no_value.log':2: field 'global_step' has no value" },
	/* an event file with a byte changed in a record's data or length, or cut short: the
	   record's byte offset (its CRC, its length) */
	{ "tensorboard", "tb_corrupt_data.tfevents",
	  "tb_corrupt_data.tfevents': byte 85: bad CRC of the record's 31 bytes of data" },
	{ "tensorboard", "tb_corrupt_len.tfevents",
	  "tb_corrupt_len.tfevents': byte 132: bad CRC of the record's length" },
	/* a text log is no event file */
	{ "tensorboard", "nanogpt.log", "nanogpt.log': byte 0: bad CRC of the record's length" },
	{ "hf-trainer", "hf_console_bad.log", "hf_console_bad.log':2: bad value '8.82l3' of 'loss'" },
	{ "composer", "composer_bad_number.log",
	  "composer_bad_number.log':4: bad value '11.34l0' of 'loss/train/total'" },
	{ "torchtitan-losses", "titan_losses_short.txt",
	  "titan_losses_short.txt':3: step 2 has no grad_norm" },
	{ "maxtext", "maxtext_no_value.log", "maxtext_no_value.log':2: bad value '' of 'loss'" },
	/* Primus's forms (the fixtures above): a numerics value in the form "X/Y" is still a
	   bad value, and so are a bad average and a bad memory used/free/total/share */
	{ "megatron-log", "megatron_running_bad.log",
	  "megatron_running_bad.log':1: bad value '1.101008E+01/1.2' of 'lm loss'" },
	{ "megatron-log", "megatron_running_bad_avg.log",
	  "megatron_running_bad_avg.log':1: bad value '615.5 (avg 6x5.5)'" },
	{ "megatron-log", "megatron_memory_bad.log",
	  "megatron_memory_bad.log':1: bad value '12.34GB/free/192.00GB/6.43%'" },
	{ "megatron-golden", "bridge_golden_bad.json",
	  "bridge_golden_bad.json': \"1\".\"lm loss\": want a number" },
	{ "megatron-golden", "bridge_golden_step.json",
	  "bridge_golden_step.json': \"1\": want a step" },
	/* a jsonl numerics null, where a performance one is not measured */
	{ "jsonl", "jsonl_null_loss.jsonl", "jsonl_null_loss.jsonl':2: bad value of \"loss\"" },
	{ "jsonl", "jsonl_bad_number.jsonl", "jsonl_bad_number.jsonl':2: bad value of \"loss\"" },
	/* a line's prefix and its object naming other ranks (a local rank logged under srun):
	   the object's won, and nodes merged */
	{ "jsonl", "jsonl_rank_prefix.jsonl",
	  "jsonl_rank_prefix.jsonl':1: \"rank\": 0, but the line's prefix says rank 1" },
	/* a folder is bad input, not a failure to read (exit 3) */
	{ "torchtitan", ".", "data/.' is a folder, not a log" },
	/* a torchtitan log read as megatron: no metric lines */
	{ "megatron-log", "titan_repeated.log", "no metric lines" },
	/* ranks without a "[rankN]:" prefix: one that prints another loss at a step is bad
	   input with a hint, and a line that names its rank must repeat itself exactly */
	{ "torchtitan", "titan_ranks_unnamed_loss_apart.log",
	  "titan_ranks_unnamed_loss_apart.log':8: step 4 again with other values (line 6), and "
	  "the lines name no rank" },
	{ "torchtitan", "titan_rank_again.log",
	  "titan_rank_again.log':3: step 3 of rank 0 again with other values (line 2)" },
	/* a compressed file is named as such, with the command that gives it decompressed */
	{ "torchtitan", "titan_2ranks.log.gz",
	  "titan_2ranks.log.gz':1: compressed, not a log: give it decompressed ('zcat " },
	{ "megatron-golden", "golden_list.json.gz",
	  "golden_list.json.gz': compressed, not JSON: give it decompressed ('zcat " },
};

_Static_assert(LEN(refusals) <= INDICES_MAX, "too many refusals");

ParameterizedTestParameters(import, hostile_logs_fail_at_file_line_and_store_nothing)
{
	return indices(LEN(refusals));
}

ParameterizedTest(const size_t *i, import, hostile_logs_fail_at_file_line_and_store_nothing)
{
	refused(refusals[*i].fmt, refusals[*i].file, refusals[*i].where);
}

/* A golden file (and hf-trainer's input) is read whole, so within a golden file's limit
   (LKS_GOLDEN_FILE_MAX), from a file or a pipe: /dev/zero, which never ends, is refused at
   once by its name (it grew to 3.2 GB); a file over the limit before a byte is read; a pipe
   at the first byte over it. Bad input, and nothing stored. */
Test(import, a_golden_file_is_read_within_its_limit, .timeout = 120)
{
	char dir[64], big[128], fifo[128], want[128];
	pid_t pid;
	int fd, st;

	refused("megatron-golden", "/dev/zero", "'/dev/zero' is not a regular file or a pipe "
	        "(a device)");
	/* Hugging Face's trainer_state.json is read whole the same way */
	refused("hf-trainer", "/dev/zero", "'/dev/zero' is not a regular file or a pipe "
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
		                                                      : LKS_METRIC_NUMERICS, v[i], 0 };
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
		lks_metric_row rows[2] = { { 0, 0, "loss", LKS_METRIC_NUMERICS, 10.0 - step, 0 },
		                           { 0, 0, "iteration_time", LKS_METRIC_PERFORMANCE, 500, 0 } };

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

/* An event file that ends within a record (tb_cut.tfevents: its last record's data cut at
   byte 184, as a writer killed while writing leaves it) is read up to that record, and
   counted with its offset; it was refused whole, and with it the run a restart had
   followed. */
Test(import, an_event_file_cut_within_its_last_record_reads_the_records_before)
{
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_eq(import("tensorboard", LKS_IMPORT_DIR "/tb_cut.tfevents", &s, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.counts.cut, 1);
	cr_assert(strstr(res.counts.cut_first, "tb_cut.tfevents' at byte 184"), "%s",
	          res.counts.cut_first);
	metrics_of(s, res.run_id, &m);
	cr_assert_gt(m.n, 0);
	lks_store_close(s);
	rm_tmp();
}

/* A TensorBoard run's folder: its event files in name order, each a file of its own, so a
   restart's file (a later launch, begun after the first's last event, logging the same
   steps again) takes the run back to its first step and its values stand; a folder
   without event files is bad input; a folder given to a text format is still refused. */
Test(import, a_tensorboard_folder_reads_its_event_files_in_order)
{
	static const char *tags[] = { "lm loss", "grad-norm", "iteration-time" };
	char dir[] = "/tmp/lks-tb-folder-XXXXXX", cmd[1400], empty[600];
	struct tb_scalar again[15];
	double wall[15];
	lks_import_result res;
	struct seen m;
	lks_store *s;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp '%s/tb_tensorboardx.tfevents' '%s/events.out.tfevents.1764000000.a' "
	         "&& echo not-an-event > '%s/notes.txt'", LKS_IMPORT_DIR, dir, dir);
	cr_assert_eq(system(cmd), 0);
	for (int i = 0; i < 15; i++) {  /* steps 1..5 again, in 2033: after the first's events */
		again[i] = (struct tb_scalar){ 1 + i / 3, tags[i % 3], 0.5f + (float)i };
		wall[i] = 2e9 + i;
	}
	snprintf(cmd, sizeof(cmd), "%s/events.out.tfevents.2000000000.a", dir);
	tb_write_at(cmd, again, wall, 15);
	cr_assert_eq(import("tensorboard", dir, &s, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 5);
	cr_assert_eq(res.counts.records, 10, "5 steps of each file");
	cr_assert_eq(res.counts.restarts, 1, "the second file went back to step 1");
	metrics_of(s, res.run_id, &m);
	cr_assert_eq(m.n, 15, "5 steps of 3 scalars, the restart's");
	cr_assert_eq(at(&m, 1, 0, "loss")->value, 0.5, "the restart's");
	lks_store_close(s);
	rm_tmp();
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	cr_assert_eq(mkdir(empty, 0700), 0);
	cr_assert_eq(import("tensorboard", empty, &s, &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "holds no events.out.tfevents.* file"), "%s", lks_errmsg());
	lks_store_close(s);
	rm_tmp();
	cr_assert_eq(import("torchtitan", dir, &s, &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "is a folder, not a log"), "%s", lks_errmsg());
	lks_store_close(s);
	rm_tmp();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
