/*
 * import_metric.c: the one table of imported metrics (import_rec.h): canonical name, kind,
 * unit and what it is. A metric's kind is this table's, wherever it was read (each format's
 * labels for these names are the import room's, harness/import/import_label.c); a name the
 * table lacks takes its kind from its words there. The golden files of imported runs, the
 * walker and the report read kinds and order from here.
 */
#include <string.h>

#include "harness/store/import_rec.h"

#define NUM LKS_METRIC_NUMERICS
#define PERF LKS_METRIC_PERFORMANCE

static const lks_import_metric lks_import_metrics[] = {
	{ "loss", NUM, "", "training loss" },
	{ "grad_norm", NUM, "", "global gradient norm (before clipping)" },
	{ "lr", NUM, "", "learning rate" },
	{ "loss_scale", NUM, "", "loss scale of mixed precision" },
	{ "num_zeros", NUM, "", "zeros in the gradients" },
	{ "params_norm", NUM, "", "norm of the parameters" },
	{ "skipped_iterations", NUM, "", "iterations skipped (loss scale)" },
	{ "nan_iterations", NUM, "", "iterations with a NaN" },
	{ "consumed_samples", NUM, "samples", "samples consumed so far" },
	{ "global_batch_size", NUM, "samples", "samples per iteration" },
	{ "epoch", NUM, "epochs", "passes over the training data so far (Hugging Face's Trainer)" },
	{ "iteration_time", PERF, "ms", "time of one iteration" },
	/* Megatron-LM writes its golden values' iteration-time from what it gives TensorBoard,
	   in seconds, where its log prints ms: a name of its own, so that no check or diff
	   compares the two as one */
	{ "iteration_time_s", PERF, "s", "time of one iteration, in seconds (Megatron-LM's "
	  "golden values, Megatron-DeepSpeed's log)" },
	{ "tps", PERF, "tokens/s", "tokens per second per rank" },
	{ "wps", PERF, "tokens/s",
	  "tokens per second per rank, as torchtitan of early 2024 logged it" },
	{ "tflops", PERF, "TFLOP/s", "model TFLOP/s per GPU" },
	{ "mfu", PERF, "%", "model FLOPs utilization" },
	{ "samples_per_second", PERF, "samples/s", "samples per second (Megatron-DeepSpeed)" },
	{ "mem_usage", PERF, "", "device memory in use, a fraction of the device's" },
	{ "hip_mem_used", PERF, "GB",
	  "device memory in use (AMD Primus, of used/free/total/share)" },
	{ "energy", PERF, "J", "energy of one iteration per GPU" },
	{ "power", PERF, "W", "power per GPU" },
	{ "tokens_per_second", PERF, "tokens/s",
	  "tokens per second of the job (Megatron-LM's RL)" },
	{ "compute_tps", PERF, "tokens/s",
	  "tokens computed per second per GPU, padding of packed sequences included" },
	{ "compute_tokens_per_second", PERF, "tokens/s",
	  "tokens computed per second of the job" },
	{ "actual_tps", PERF, "tokens/s",
	  "tokens of the data per second per GPU (packed sequences)" },
	{ "actual_tokens_per_second", PERF, "tokens/s",
	  "tokens of the data per second of the job" },
	{ "packing_eff", PERF, "%", "share of packed bins that holds data (Megatron-LM's RL)" },
	{ "memory", PERF, "GiB", "peak device memory" },
	{ "memory_pct", PERF, "%", "peak device memory, of the device's" },
	{ "mem_allocated", PERF, "bytes", "device memory allocated" },
	{ "mem_max_allocated", PERF, "bytes", "peak device memory allocated" },
};

#define LKS_NMETRICS ((int)(sizeof(lks_import_metrics) / sizeof(lks_import_metrics[0])))

const lks_import_metric *lks_import_metric_at(int i)
{
	return i >= 0 && i < LKS_NMETRICS ? &lks_import_metrics[i] : NULL;
}

const lks_import_metric *lks_import_metric_find_n(const char *name, size_t len)
{
	for (int i = 0; i < LKS_NMETRICS; i++) {
		const char *n = lks_import_metrics[i].name;

		/* the first byte first: a label not remembered (lks_import_rec_add) comes here */
		if (len && n[0] == name[0] && strlen(n) == len && !memcmp(n, name, len))
			return &lks_import_metrics[i];
	}
	return NULL;
}

const lks_import_metric *lks_import_metric_find(const char *name)
{
	return lks_import_metric_find_n(name, strlen(name));
}

const double lks_import_pow10[23] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                                    1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
                                    1e20, 1e21, 1e22 };
