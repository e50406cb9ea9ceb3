/*
 * import_maxtext.c: MaxText's training log (import.h), read after the lines that write it,
 * MaxText/metric_logger.py of AI-Hypercomputer/maxtext at ee55389 (log_metrics):
 *
 *   f"completed step: {step}, seconds: {...step_time_seconds:.3f}, "
 *   f"TFLOP/s/device: {...:.3f}, Tokens/s/device: {...:.3f}, "
 *   f"total_weights: {...learning/total_weights}, loss: {loss:.3f}"
 *   (and with multi-token prediction ", main_model_loss: X, mtp_loss: Y")
 *
 *   completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, Tokens/s/device: 2891.453,
 *   total_weights: 16384, loss: 10.374
 *
 * and as src/maxtext/common/metric_logger.py writes them at e591f30 (_log_training_metrics):
 * ", lm_loss: X, perplexity: Y" after the loss; a step of the batch size's ramp up
 * "[Rampup Batch Size Phase], completed step: N, seconds: S, total_weights: ..." (no
 * throughput); a step where the profiler starts or stops "completed profiler
 * activation/deactivation step: N, total_weights: ..., loss: X, ..." (its time hidden, its
 * loss not); and "nan" for a NaN loss, as f"{loss:.3f}" prints it.
 *
 * one line a step (from 0), after max_logging's prefix, through the loop of the line
 * formats (import_lines.c). The loss has 3 decimals: import the TensorBoard events for
 * more. Its evaluation lines ("eval metrics after step: N, loss=X, ...", at e591f30
 * "Completed eval after train step N, loss=X, ...") are counted as ignored: one step is one
 * record.
 */
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

static const lks_import_label_row lks_maxtext_labels[] = {
	{ "loss", "loss" },
	{ "seconds", "iteration_time_s" },
	{ "TFLOP/s/device", "tflops" },
	{ "Tokens/s/device", "tps" },
	{ NULL, NULL },
};

/* Where the step's digits begin after "completed step: " (or the profiler's form of it) at
   p, else NULL. */
static const char *lks_maxtext_step(const char *p, const char *end)
{
	static const char step[] = "step: ", hidden[] = "profiler activation/deactivation step: ";

	if ((size_t)(end - p) > sizeof(step) - 1 && !memcmp(p, step, sizeof(step) - 1))
		return p + sizeof(step) - 1;
	if ((size_t)(end - p) > sizeof(hidden) - 1 && !memcmp(p, hidden, sizeof(hidden) - 1))
		return p + sizeof(hidden) - 1;
	return NULL;
}

static int lks_maxtext_line(const char *s, size_t len, lks_import_rec *rec, const char *path)
{
	static const char mark[] = "completed ";
	const char *end = s + len, *d = NULL;

	for (const char *p = s; !d && (p = memchr(p, 'c', (size_t)(end - p)))
	                        && (size_t)(end - p) >= sizeof(mark) - 1; p++)
		if (!memcmp(p, mark, sizeof(mark) - 1) && !(p > s && lks_alpha(p[-1])))
			d = lks_maxtext_step(p + sizeof(mark) - 1, end);
	if (!d)
		return 0;
	return lks_import_step_fields(rec, LKS_IMPORT_MAXTEXT, d, end, ',', ',', ':',
	                              "completed step", path);
}

const lks_import_format lks_import_maxtext_format = {
	.id = LKS_IMPORT_MAXTEXT,
	.name = "maxtext",
	.what = "MaxText's training log ('completed step: 9, seconds: 5.667, ..., loss: 10.374')",
	.line = lks_maxtext_line,
	.labels = lks_maxtext_labels,
};
