/*
 * import_megatron_log.c: Megatron-LM's training log (import.h), one line an iteration,
 * scanned by hand, no regex:
 *
 *   [2025-01-01 00:00:00] iteration       10/     100 | consumed samples: 640 | elapsed
 *   time per iteration (ms): 812.3 | learning rate: 1.000000E-04 | global batch size:
 *   64 | lm loss: 1.234567E+00 | loss scale: 1.0 | grad norm: 0.123 | number of skipped
 *   iterations:   0 | number of nan iterations:   0 |
 *
 * (one line), through the loop of the line formats (import_lines.c). A line is the job's,
 * rank 0 whoever printed it. A line without "iteration N/M |" is not a metric line; one
 * with it must be whole: a field without its value, a bad number, or a line not ended by
 * '|' is bad input at its file:line. Its labels are also those of Megatron-Bridge's golden
 * values (import_megatron_golden.c).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "kernels/err.h"

static const lks_import_label_row lks_megatron_log_labels[] = {
	{ "lm loss", "loss" },
	{ "grad norm", "grad_norm" },
	{ "learning rate", "lr" },
	{ "loss scale", "loss_scale" },
	{ "num zeros", "num_zeros" },
	{ "params norm", "params_norm" },
	{ "number of skipped iterations", "skipped_iterations" },
	{ "number of nan iterations", "nan_iterations" },
	{ "consumed samples", "consumed_samples" },
	{ "global batch size", "global_batch_size" },
	{ "elapsed time per iteration (ms)", "iteration_time" },
	{ "elapsed time per iteration (s)", "iteration_time_s" },
	{ "throughput per GPU (TFLOP/s/GPU)", "tflops" },
	{ "samples per second", "samples_per_second" },
	{ "mem usages", "mem_usage" },
	{ "hip mem usage/free/total/usage_ratio", "hip_mem_used" },
	{ "energy per GPU (J/iter/GPU)", "energy" },
	{ "power per GPU (W/GPU)", "power" },
	{ "toks/s", "tokens_per_second" },
	{ "compute_toks/s/gpu", "compute_tps" },
	{ "compute_toks/s", "compute_tokens_per_second" },
	{ "actual_toks/s/gpu", "actual_tps" },
	{ "actual_toks/s", "actual_tokens_per_second" },
	{ "packing_eff", "packing_eff" },
	{ NULL, NULL },
};

/* Other spellings, as forks and versions write them */
static const lks_import_label_row lks_megatron_log_aliases[] = {
	/* Megatron-DeepSpeed */
	{ "TFLOPs", "tflops" },
	{ "tokens per gpu per second (tgs)", "tps" },
	{ "TGS", "tps" },
	/* Megatron-LM's tokens per GPU, and AMD Primus's spellings of it and of TFLOP/s */
	{ "tokens per GPU (tokens/s/GPU)", "tps" },
	{ "Tokens per second per GPU (Tok/s/GPU)", "tps" },
	{ "tokens/s/GPU inst/harmonic mean", "tps" },
	{ "compute per GPU (TFLOP/s/GPU)", "tflops" },
	/* Megatron-Bridge's model TFLOP/s per GPU, as its golden values name it */
	{ "GPU utilization", "tflops" },
	/* Megatron-LM's RL: tokens per second per GPU */
	{ "toks/s/gpu", "tps" },
	{ NULL, NULL },
};

/* " iteration N/M |": where the fields start (after that '|'), or NULL; *n, *nlen: N's
   digits, a step however many (the caller reads them: one too big is bad input). */
static const char *lks_mega_start(const char *s, const char **n, size_t *nlen)
{
	for (const char *p = s; (p = strstr(p, "iteration ")); p++) {
		const char *q = p + 10, *d;

		while (*q == ' ')
			q++;
		for (d = q; isdigit((unsigned char)*q); q++)
			;
		if (q == d || *q != '/')
			continue;
		*n = d;
		*nlen = (size_t)(q - d);
		for (q++; *q == ' '; q++)
			;
		while (isdigit((unsigned char)*q))
			q++;
		while (*q == ' ')
			q++;
		if (*q == '|')
			return q + 1;
	}
	return NULL;
}

/* After a number at p (up to ve): its unit, letters or '%', as long as it goes. */
static const char *lks_mega_unit(const char *p, const char *ve)
{
	while (p < ve && (isalpha((unsigned char)*p) || *p == '%'))
		p++;
	return p;
}

/* A performance metric's value of several numbers, as AMD Primus's Megatron writes them: a
   time or throughput and its running average, "X/Y" or "X (avg Y)", or memory as
   "12.3GB/50.1GB/64.0GB/19.2%" (used, free, total, used share); each number may carry a
   unit. X, the first, into *x: it is the step's own (the average is made of the X of the
   lines before; the rest of the memory is the device's). 0, or -1 where v..ve is no such
   value, or the metric is not performance (a numerics value is one number). */
static int lks_mega_several(const char *l, size_t llen, const char *v, const char *ve,
                            double *x)
{
	const lks_import_metric *m = lks_import_metric_label(LKS_IMPORT_MEGATRON_LOG, l, llen);
	size_t k = m && m->kind == LKS_METRIC_PERFORMANCE
	           ? lks_import_number_prefix(v, (size_t)(ve - v), 0, x) : 0;
	const char *p = lks_mega_unit(v + k, ve);
	double more;

	if (!k)
		return -1;
	while (p < ve && *p == '/') {
		if (!(k = lks_import_number_prefix(p + 1, (size_t)(ve - p - 1), 0, &more)))
			return -1;
		p = lks_mega_unit(p + 1 + k, ve);
	}
	if (p < ve && (ve - p < 8 || memcmp(p, " (avg ", 6) || ve[-1] != ')'
	               || lks_import_number(p + 6, (size_t)(ve - 1 - (p + 6)), 0, &more)))
		return -1;
	return 0;
}

int lks_import_mega_line(const char *s, size_t len, lks_import_rec *rec, const char *path)
{
	size_t nlen;
	const char *n, *p = lks_mega_start(s, &n, &nlen), *end;
	int rc;

	if (!p)
		return 0;
	if (lks_import_step(n, nlen, &rec->step))
		return lks_import_bad_step(path, rec->line, "iteration", n, nlen);
	/* the job's line, printed by its last rank alone (print_rank_last): a "[rank7]:"
	   prefix names the printer, not a rank of its own values */
	rec->rank = 0;
	rec->ranked = 0;
	end = s + len;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	if (end > p && end[-1] != '|')
		return lks_err("'%s':%ld: truncated iteration line (not ended by '|')", path,
		               rec->line), LKS_E_BAD_INPUT;
	while (p < end) {
		const char *bar = memchr(p, '|', (size_t)(end - p)), *colon = NULL, *l, *v, *le, *ve;

		for (const char *q = bar; !colon && q > p;)  /* the last ':': from the short value's end */
			if (*--q == ':')
				colon = q;
		for (l = p; l < bar && *l == ' '; l++)
			;
		p = bar + 1;
		if (l == bar)
			continue;
		if (!colon)
			return lks_err("'%s':%ld: field '%.*s' has no value", path, rec->line,
			               (int)(bar - l), l), LKS_E_BAD_INPUT;
		for (le = colon; le > l && le[-1] == ' '; le--)
			;
		for (v = colon + 1; v < bar && *v == ' '; v++)
			;
		for (ve = bar; ve > v && ve[-1] == ' '; ve--)
			;
		double x;
		int64_t dec;

		if (lks_import_unmeasured(LKS_IMPORT_MEGATRON_LOG, l, (size_t)(le - l), v, (size_t)(ve - v)))
			continue;
		if ((rc = lks_import_number_dec(v, (size_t)(ve - v), 0, &x, &dec))
		    && lks_mega_several(l, (size_t)(le - l), v, ve, &x))
			return lks_import_bad_value(path, rec->line, l, (size_t)(le - l), v, (size_t)(ve - v),
			                     rc);
		if ((rc = lks_import_rec_add_dec(rec, LKS_IMPORT_MEGATRON_LOG, l, (size_t)(le - l), x,
		                                 dec, path)))
			return rc;
	}
	return 1;
}

const lks_import_format lks_import_megatron_log_format = {
	.id = LKS_IMPORT_MEGATRON_LOG,
	.name = "megatron-log",
	.what = "Megatron-LM's training log ('iteration 10/ 100 | ... | lm loss: 1.2E+00 | ...')",
	.line = lks_import_mega_line,
	.labels = lks_megatron_log_labels,
	.aliases = lks_megatron_log_aliases,
};
