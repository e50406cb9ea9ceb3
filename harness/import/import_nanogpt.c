/*
 * import_nanogpt.c: nanoGPT's training log (import.h), read after the line that writes it,
 * train.py of karpathy/nanoGPT at e222131:
 *
 *   print(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%")
 *
 *   iter 36298: loss 5.8465, time 148.74ms, mfu 0.01%
 *
 * one line an iteration, its iter_num the step (from 0), through the loop of the line
 * formats (import_lines.c). loss is the last micro-batch's loss times the gradient
 * accumulation steps, with 4 decimals; time the iteration's milliseconds; mfu a running
 * mean, -100.00% (running_mfu's -1.0) until the fifth iteration of the process: not
 * measured, left out. Forks print lr too ("lr 6.00e-04"), read as any field. Its
 * evaluation lines ("step {iter_num}: train loss X, val loss Y", printed before the same
 * iteration's line) are counted as ignored, as torchtitan's validation lines are: one step
 * is one record.
 */
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

static const lks_import_label_row lks_nanogpt_labels[] = {
	{ "loss", "loss" },
	{ "time", "iteration_time" },
	{ "mfu", "mfu" },
	{ "lr", "lr" },
	{ NULL, NULL },
};

static int lks_nanogpt_line(const char *s, size_t len, lks_import_rec *rec, const char *path)
{
	const char *end = s + len;

	while (s < end && *s == ' ')
		s++;
	if (end - s < 7 || memcmp(s, "iter ", 5))
		return 0;
	return lks_import_step_fields(rec, LKS_IMPORT_NANOGPT, s + 5, end, ':', ',', ' ', "iter",
	                              path);
}

const lks_import_format lks_import_nanogpt_format = {
	.id = LKS_IMPORT_NANOGPT,
	.name = "nanogpt",
	.what = "nanoGPT's training log ('iter 36298: loss 5.8465, time 148.74ms, mfu 0.01%')",
	.line = lks_nanogpt_line,
	.labels = lks_nanogpt_labels,
};
