/*
 * import_nemo.c: NeMo 2's training log (import.h), read after the line that prints it,
 * nemo/lightning/pytorch/callbacks/progress_printer.py of NVIDIA/NeMo at 8e2ee3d
 * (ProgressPrinter.on_train_batch_end and format_string; the same at aed13ee, 2025):
 *
 *   n = trainer.strategy.current_epoch_step
 *   prefix = "Training" + f" epoch {trainer.current_epoch}, iteration {n-1}/{self.total-1}"
 *   log_string += f' | {metric}: {val}'      (a float that is a whole number, as an int)
 *   log_string += f' | {metric}: {val:.4}'   (else: 4 significant digits)
 *
 *   Training epoch 0, iteration 0/9 | lr: 0.0006 | global_step: 0 | consumed_samples: 8 |
 *   reduced_train_loss: 11.02 | train_step_timing in s: 2.349
 *
 * one line a logged iteration, through the loop of the line formats (import_lines.c); a
 * value is the mean over the log interval (global_step the latest: skip_accumulate_metrics).
 * The step is global_step where the line prints it (from 0: MegatronStrategy.training_step
 * logs trainer.global_step, strategies/megatron_strategy.py at aed13ee), else the
 * iteration. The iteration counts from 0 again each epoch: current_epoch_step (the same
 * file) is the optimizer steps completed in the epoch loop's progress, which Lightning
 * resets as each epoch starts. Nor does "/N" give the epoch's length: the
 * printer's total is trainer.max_steps where that is set (the whole run's), else
 * num_training_batches. So a line of epoch 1 or later that prints no global_step has no
 * step that can be told, and is bad input.
 * With 4 significant digits the loss is coarse: import the TensorBoard events for more.
 * Its validation lines ("Validation: iteration 1/2") hold no metrics and are ignored. A
 * validation's metric (val_loss) is what Lightning's progress bar holds: the last
 * validation's value, printed on every line after it until the next one; the event files
 * hold it once, at the step it was made (seen with the printer itself, tests/import/data/
 * nemo_real/).
 */
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

static const lks_import_label_row lks_nemo_labels[] = {
	{ "reduced_train_loss", "loss" },
	{ "lr", "lr" },
	{ "grad_norm", "grad_norm" },
	{ "consumed_samples", "consumed_samples" },
	{ "train_step_timing in s", "iteration_time_s" },
	{ NULL, NULL },
};

/* The value of the field "global_step" among the fields p .. end ('|' before each) as
   the step: 1 where the line prints it, 0 where not, or bad input. */
static int lks_nemo_global_step(const char *p, const char *end, lks_import_rec *rec,
                                const char *path)
{
	static const char key[] = "global_step:";
	const char *v, *ve;

	for (; (p = memchr(p, '|', (size_t)(end - p))); p++) {
		for (v = p + 1; v < end && *v == ' '; v++)
			;
		if ((size_t)(end - v) < sizeof(key) - 1 || memcmp(v, key, sizeof(key) - 1))
			continue;
		for (v += sizeof(key) - 1; v < end && *v == ' '; v++)
			;
		for (ve = v; ve < end && *ve != '|'; ve++)
			;
		while (ve > v && ve[-1] == ' ')
			ve--;
		if (lks_import_step(v, (size_t)(ve - v), &rec->step))
			return lks_import_bad_step(path, rec->line, "global_step", v, (size_t)(ve - v));
		return 1;
	}
	return 0;
}

static int lks_nemo_line(const char *s, size_t len, lks_import_rec *rec, const char *path)
{
	static const char mark[] = "Training epoch ", it[] = ", iteration ";
	const char *end = s + len, *p = s, *q, *e;
	int epoch, rc;

	while ((p = memchr(p, 'T', (size_t)(end - p))) && (size_t)(end - p) >= sizeof(mark) - 1
	       && memcmp(p, mark, sizeof(mark) - 1))
		p++;
	if (!p || (size_t)(end - p) < sizeof(mark) - 1)
		return 0;
	for (q = e = p + sizeof(mark) - 1; q < end && lks_digit(*q); q++)
		;
	if ((size_t)(end - q) < sizeof(it) - 1 || memcmp(q, it, sizeof(it) - 1))
		return 0;
	if (lks_import_step(e, (size_t)(q - e), &epoch))
		return lks_import_bad_step(path, rec->line, "epoch", e, (size_t)(q - e));
	q += sizeof(it) - 1;
	/* the iteration, then "/total" and the fields from the first '|' */
	p = q;
	while (q < end && lks_digit(*q))
		q++;
	if (q == p || q == end || *q != '/')
		return 0;
	if (lks_import_step(p, (size_t)(q - p), &rec->step))
		return lks_import_bad_step(path, rec->line, "iteration", p, (size_t)(q - p));
	if (!(p = memchr(q, '|', (size_t)(end - q))))
		return 0;
	if ((rc = lks_import_fields(rec, LKS_IMPORT_NEMO, p + 1, end, '|', ':', path)) != 1)
		return rc;
	/* '{val:.4}' drops the zeros after: "11.5" is 11.50, 4 digits printed */
	for (int i = 0; i < rec->n; i++)
		rec->m[i].dec = lks_import_dec_sig(rec->m[i].dec, rec->m[i].value, 4);
	if ((rc = lks_nemo_global_step(p, end, rec, path)))  /* 1: the step it printed */
		return rc;
	if (epoch > 0)
		return lks_err("'%s':%ld: epoch %d counts its iterations from 0 again and the line "
		               "prints no global_step: its step cannot be told (log global_step, or "
		               "import the run's event files)", path, rec->line, epoch),
		       LKS_E_BAD_INPUT;
	return 1;
}

const lks_import_format lks_import_nemo_format = {
	.id = LKS_IMPORT_NEMO,
	.name = "nemo",
	.what = "NeMo 2's training log ('Training epoch 0, iteration 0/9 | lr: 0.0006 | ... | "
	        "reduced_train_loss: 11.02'; the step its global_step, else epoch 0's iteration)",
	.line = lks_nemo_line,
	.labels = lks_nemo_labels,
};
