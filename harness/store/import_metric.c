/*
 * import_metric.c: the one table of imported metrics (import.h): canonical name, kind,
 * unit and each format's label. A metric's kind is this table's; a name the table lacks is
 * performance where its words say time, speed, memory or power (lks_label_sounds_performance:
 * two runs' clocks are never equal, so a bitwise verdict on them is a false failure), else
 * numerics (it then enters a bitwise verdict, the safe side).
 * Also what every parser shares: a record's metrics, numbers as logs write them, and
 * lines read a block at a time.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/store/import.h"
#include "kernels/err.h"

#define NUM LKS_METRIC_NUMERICS
#define PERF LKS_METRIC_PERFORMANCE

/* labels: torchtitan, megatron-log, megatron-golden, jsonl (the canonical name) */
static const lks_import_metric lks_import_metrics[] = {
	{ "loss", NUM, "", { "loss", "lm loss", "lm loss", "loss" }, "training loss" },
	{ "grad_norm", NUM, "", { "grad_norm", "grad norm", "grad-norm", "grad_norm" },
	  "global gradient norm (before clipping)" },
	{ "lr", NUM, "", { "lr", "learning rate", "lr", "lr" }, "learning rate" },
	{ "loss_scale", NUM, "", { NULL, "loss scale", "loss-scale", "loss_scale" },
	  "loss scale of mixed precision" },
	{ "num_zeros", NUM, "", { NULL, "num zeros", "num-zeros", "num_zeros" },
	  "zeros in the gradients" },
	{ "params_norm", NUM, "", { NULL, "params norm", "params-norm", "params_norm" },
	  "norm of the parameters" },
	{ "skipped_iterations", NUM, "", { NULL, "number of skipped iterations", NULL,
	  "skipped_iterations" }, "iterations skipped (loss scale)" },
	{ "nan_iterations", NUM, "", { NULL, "number of nan iterations", NULL, "nan_iterations" },
	  "iterations with a NaN" },
	{ "consumed_samples", NUM, "samples", { NULL, "consumed samples", "consumed-samples",
	  "consumed_samples" }, "samples consumed so far" },
	{ "global_batch_size", NUM, "samples", { NULL, "global batch size", NULL,
	  "global_batch_size" }, "samples per iteration" },
	{ "iteration_time", PERF, "ms", { NULL, "elapsed time per iteration (ms)", NULL,
	  "iteration_time" }, "time of one iteration" },
	/* Megatron-LM writes its golden values' iteration-time from what it gives TensorBoard,
	   in seconds, where its log prints ms: a name of its own, so that no check or diff
	   compares the two as one */
	{ "iteration_time_s", PERF, "s", { NULL, "elapsed time per iteration (s)", "iteration-time",
	  "iteration_time_s" }, "time of one iteration, in seconds (Megatron-LM's golden values, "
	  "Megatron-DeepSpeed's log)" },
	{ "tps", PERF, "tokens/s", { "tps", NULL, NULL, "tps" }, "tokens per second per rank" },
	{ "wps", PERF, "tokens/s", { "wps", NULL, NULL, "wps" },
	  "tokens per second per rank, as torchtitan of early 2024 logged it" },
	{ "tflops", PERF, "TFLOP/s", { "tflops", "throughput per GPU (TFLOP/s/GPU)", NULL,
	  "tflops" }, "model TFLOP/s per GPU" },
	{ "mfu", PERF, "%", { "mfu", NULL, NULL, "mfu" }, "model FLOPs utilization" },
	{ "samples_per_second", PERF, "samples/s", { NULL, "samples per second", NULL,
	  "samples_per_second" }, "samples per second (Megatron-DeepSpeed)" },
	{ "mem_usage", PERF, "", { NULL, "mem usages", NULL, "mem_usage" },
	  "device memory in use, a fraction of the device's" },
	{ "hip_mem_used", PERF, "GB", { NULL, "hip mem usage/free/total/usage_ratio", NULL,
	  "hip_mem_used" }, "device memory in use (AMD Primus, of used/free/total/share)" },
	{ "energy", PERF, "J", { NULL, "energy per GPU (J/iter/GPU)", NULL, "energy" },
	  "energy of one iteration per GPU" },
	{ "power", PERF, "W", { NULL, "power per GPU (W/GPU)", NULL, "power" },
	  "power per GPU" },
	{ "tokens_per_second", PERF, "tokens/s", { NULL, "toks/s", NULL, "tokens_per_second" },
	  "tokens per second of the job (Megatron-LM's RL)" },
	{ "compute_tps", PERF, "tokens/s", { NULL, "compute_toks/s/gpu", NULL, "compute_tps" },
	  "tokens computed per second per GPU, padding of packed sequences included" },
	{ "compute_tokens_per_second", PERF, "tokens/s", { NULL, "compute_toks/s", NULL,
	  "compute_tokens_per_second" }, "tokens computed per second of the job" },
	{ "actual_tps", PERF, "tokens/s", { NULL, "actual_toks/s/gpu", NULL, "actual_tps" },
	  "tokens of the data per second per GPU (packed sequences)" },
	{ "actual_tokens_per_second", PERF, "tokens/s", { NULL, "actual_toks/s", NULL,
	  "actual_tokens_per_second" }, "tokens of the data per second of the job" },
	{ "packing_eff", PERF, "%", { NULL, "packing_eff", NULL, "packing_eff" },
	  "share of packed bins that holds data (Megatron-LM's RL)" },
	{ "memory", PERF, "GiB", { "memory", NULL, NULL, "memory" }, "peak device memory" },
	{ "memory_pct", PERF, "%", { "memory_pct", NULL, NULL, "memory_pct" },
	  "peak device memory, of the device's" },
	{ "mem_allocated", PERF, "bytes", { NULL, NULL, "mem-allocated-bytes", "mem_allocated" },
	  "device memory allocated" },
	{ "mem_max_allocated", PERF, "bytes", { NULL, NULL, "mem-max-allocated-bytes",
	  "mem_max_allocated" }, "peak device memory allocated" },
};

#define LKS_NMETRICS ((int)(sizeof(lks_import_metrics) / sizeof(lks_import_metrics[0])))

/* Other labels of the table's metrics, as forks and versions of a format write them; a
   row's own label (above) is the one an export writes. */
static const struct {
	lks_import_fmt fmt;
	const char *label, *name;
} lks_import_aliases[] = {
	/* Megatron-DeepSpeed */
	{ LKS_IMPORT_MEGATRON_LOG, "TFLOPs", "tflops" },
	{ LKS_IMPORT_MEGATRON_LOG, "tokens per gpu per second (tgs)", "tps" },
	{ LKS_IMPORT_MEGATRON_LOG, "TGS", "tps" },
	/* Megatron-LM's tokens per GPU, and AMD Primus's spellings of it and of TFLOP/s */
	{ LKS_IMPORT_MEGATRON_LOG, "tokens per GPU (tokens/s/GPU)", "tps" },
	{ LKS_IMPORT_MEGATRON_LOG, "Tokens per second per GPU (Tok/s/GPU)", "tps" },
	{ LKS_IMPORT_MEGATRON_LOG, "tokens/s/GPU inst/harmonic mean", "tps" },
	{ LKS_IMPORT_MEGATRON_LOG, "compute per GPU (TFLOP/s/GPU)", "tflops" },
	/* Megatron-Bridge's model TFLOP/s per GPU, as its golden values name it */
	{ LKS_IMPORT_MEGATRON_LOG, "GPU utilization", "tflops" },
	/* Megatron-LM's RL: tokens per second per GPU */
	{ LKS_IMPORT_MEGATRON_LOG, "toks/s/gpu", "tps" },
	/* torchtitan forks that estimate the FLOPs (TTP's metrics processor) */
	{ LKS_IMPORT_TORCHTITAN, "est_tflops", "tflops" },
	{ LKS_IMPORT_TORCHTITAN, "est_mfu", "mfu" },
};

const lks_import_metric *lks_import_metric_at(int i)
{
	return i >= 0 && i < LKS_NMETRICS ? &lks_import_metrics[i] : NULL;
}

const lks_import_metric *lks_import_metric_find(const char *name)
{
	for (int i = 0; i < LKS_NMETRICS; i++)
		if (!strcmp(lks_import_metrics[i].name, name))
			return &lks_import_metrics[i];
	return NULL;
}

const lks_import_metric *lks_import_metric_label(lks_import_fmt fmt, const char *label,
                                                 size_t len)
{
	for (int i = 0; i < LKS_NMETRICS && (unsigned)fmt < LKS_IMPORT_NFMT; i++) {
		const char *l = lks_import_metrics[i].label[fmt];

		/* the first byte first: a label not remembered (lks_import_rec_add) comes here */
		if (l && len && l[0] == label[0] && strlen(l) == len && !memcmp(l, label, len))
			return &lks_import_metrics[i];
	}
	for (size_t i = 0; i < sizeof(lks_import_aliases) / sizeof(lks_import_aliases[0]); i++) {
		const char *l = lks_import_aliases[i].label;

		if (lks_import_aliases[i].fmt == fmt && strlen(l) == len && !memcmp(l, label, len))
			return lks_import_metric_find(lks_import_aliases[i].name);
	}
	return NULL;
}

int lks_import_label_performance(lks_import_fmt fmt, const char *label, size_t len)
{
	const lks_import_metric *m = lks_import_metric_label(fmt, label, len);

	return m && m->kind == LKS_METRIC_PERFORMANCE;
}

/* The labels a format's lines gave lately, by their place in the line: a log writes the
   same labels in the same order on every line, so a label is one compare away from its
   name. An entry is written when its label was added to a record whose earlier metrics
   were the entries before it, none of the same name; a change to an entry clears those
   after it. So a record whose every metric so far was its place's entry (the chain) takes
   the next entry without looking for its name twice. Per thread: imports may run on
   several. */
static _Thread_local lks_import_label lks_label_memos[LKS_IMPORT_NFMT][LKS_IMPORT_MAX_METRICS];
static _Thread_local struct {
	const lks_import_rec *rec;  /* NULL: no chain */
	long line;
	int n;                    /* the record's metrics, every one its place's entry */
} lks_label_chain;

/* The entries' state, a number no other state of any thread's entries has had: taken
   from a count of the process's at each change (0: none learnt yet). */
static atomic_uint_least64_t lks_label_states;
static _Thread_local uint64_t lks_label_changes;

const lks_import_label *lks_import_labels(lks_import_fmt fmt, const uint64_t **changes)
{
	*changes = &lks_label_changes;
	return lks_label_memos[(unsigned)fmt < LKS_IMPORT_NFMT ? fmt : 0];
}

/* Whether the n bytes at a and b are the same: names and labels are short, so from 4 to
   16 bytes it is two loads of each, the first and the last bytes (they may overlap), and
   a byte at a time only below 4 or past 16. */
static int lks_same(const char *a, const char *b, size_t n)
{
	if (n >= 8 && n <= 16) {
		uint64_t a0, b0, a1, b1;

		memcpy(&a0, a, 8), memcpy(&b0, b, 8);
		memcpy(&a1, a + n - 8, 8), memcpy(&b1, b + n - 8, 8);
		return a0 == b0 && a1 == b1;
	}
	if (n >= 4 && n < 8) {
		uint32_t a0, b0, a1, b1;

		memcpy(&a0, a, 4), memcpy(&b0, b, 4);
		memcpy(&a1, a + n - 4, 4), memcpy(&b1, b + n - 4, 4);
		return a0 == b0 && a1 == b1;
	}
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* The words of time, speed, memory and power (import.h) */
const char *const lks_import_perf_words[] = {
	"time", "elapsed", "latency", "duration", "throughput", "speed", "flops", "tflops", "mfu",
	"tps", "tgs", "wps", "memory", "mem", "ms", "sec", "secs", "second", "seconds", "util",
	"utilization", "power", "energy", NULL,
};

/* Whether a label the table lacks names a time, a speed, a device's memory or its power, by
   its words (runs of letters and digits, any case) or a rate "/s": such a metric is
   performance, any other numerics. A framework's own "step_time_ms", "tokens_per_sec" or
   "peak_mem_gb" then stays out of a bitwise verdict (two runs' clocks are never equal), and
   its "aux_loss" or "num_tokens" is in it. */
static int lks_label_sounds_performance(const char *label, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t j = i;
		char w[16];

		while (j < len && isalnum((unsigned char)label[j]))
			j++;
		if (j - i < sizeof(w)) {
			for (size_t c = 0; c < j - i; c++)
				w[c] = (char)tolower((unsigned char)label[i + c]);
			w[j - i] = 0;
			for (size_t k = 0; lks_import_perf_words[k]; k++)
				if (!strcmp(w, lks_import_perf_words[k]))
					return 1;
		}
		if (j + 1 < len && label[j] == '/' && (label[j + 1] | 0x20) == 's'
		    && (j + 2 == len || !isalnum((unsigned char)label[j + 2])))
			return 1;
		i = j + 1;
	}
	return 0;
}

/* The name and kind of label (len bytes) in fmt: the table's, or the label made a name. */
static int lks_label_name(const lks_import_rec *rec, lks_import_fmt fmt, const char *label,
                          size_t len, lks_import_label *e, const char *path)
{
	const lks_import_metric *m = lks_import_metric_label(fmt, label, len);

	memset(e, 0, sizeof(*e));
	e->kind = m ? m->kind
	        : lks_label_sounds_performance(label, len) ? LKS_METRIC_PERFORMANCE
	                                                   : LKS_METRIC_NUMERICS;
	if (m) {
		e->nlen = strlen(m->name);  /* the table's names are short */
		memcpy(e->name, m->name, e->nlen);
		return 0;
	}
	/* the label made a name: "mtp_1 loss" -> mtp_1_loss */
	if (len == 0 || len >= sizeof(e->name))
		return lks_err("'%s':%ld: metric name of %zu characters (want 1 to %d)", path,
		               rec->line, len, LKS_IMPORT_NAME_MAX - 1), LKS_IMPORT_BAD;
	for (; e->nlen < len; e->nlen++)
		e->name[e->nlen] = isalnum((unsigned char)label[e->nlen]) ? label[e->nlen] : '_';
	return 0;
}

/* lks_import_rec_add past its common case: a label new to its place, or a record off the
   chain. */
static __attribute__((noinline)) int lks_rec_add_slow(lks_import_rec *rec, lks_import_fmt fmt,
                                                      const char *label, size_t len,
                                                      double value, int64_t dec,
                                                      const char *path)
{
	lks_import_label *e = NULL, fresh;
	const lks_import_label *w = &fresh;
	int place = rec->n, rc, hit = 0;
	int chain = place == 0 || (lks_label_chain.rec == rec && lks_label_chain.line == rec->line
	                           && lks_label_chain.n == place);

	if ((unsigned)fmt < LKS_IMPORT_NFMT && place < LKS_IMPORT_MAX_METRICS) {
		e = &lks_label_memos[fmt][place];
		if ((hit = len && e->len == len && lks_same(e->label, label, len)))
			w = e;
	}
	lks_label_chain.rec = NULL;
	if (!hit && (rc = lks_label_name(rec, fmt, label, len, &fresh, path)))
		return rc;
	for (int i = 0; !(hit && chain) && i < rec->n; i++)
		if (rec->m[i].name[0] == w->name[0] && lks_same(rec->m[i].name, w->name, w->nlen + 1))
			return lks_err("'%s':%ld: metric '%s' given twice", path, rec->line, w->name),
			       LKS_IMPORT_BAD;
	if (rec->n == LKS_IMPORT_MAX_METRICS)
		return lks_err("'%s':%ld: more than %d metrics", path, rec->line,
		               LKS_IMPORT_MAX_METRICS), LKS_IMPORT_BAD;
	lks_import_rec_put(rec, place, w, value, dec);
	if (!hit && e && chain && len <= sizeof(e->label)) {
		/* this place's entry changes: the entries after it were checked against it */
		for (int i = place + 1; i < LKS_IMPORT_MAX_METRICS && lks_label_memos[fmt][i].len; i++)
			lks_label_memos[fmt][i].len = 0;
		lks_label_changes = atomic_fetch_add_explicit(&lks_label_states, 1,
		                                              memory_order_relaxed) + 1;
		*e = fresh;
		memcpy(e->label, label, len);
		e->len = len;
		hit = 1;
	}
	if (hit && chain) {
		lks_label_chain.rec = rec;
		lks_label_chain.line = rec->line;
		lks_label_chain.n = rec->n;
	}
	return 0;
}

int lks_import_rec_add(lks_import_rec *rec, lks_import_fmt fmt, const char *label, size_t len,
                       double value, const char *path)
{
	return lks_import_rec_add_dec(rec, fmt, label, len, value, LKS_IMPORT_NO_DEC, path);
}

int lks_import_rec_add_dec(lks_import_rec *rec, lks_import_fmt fmt, const char *label,
                           size_t len, double value, int64_t dec, const char *path)
{
	int place = rec->n;

	/* the common case, in a frame of its own: the label is its place's entry, and the
	   record's metrics before it were theirs (the chain) */
	if ((unsigned)fmt < LKS_IMPORT_NFMT && place < LKS_IMPORT_MAX_METRICS) {
		const lks_import_label *e = &lks_label_memos[fmt][place];

		if (len && e->len == len && lks_same(e->label, label, len)
		    && (place == 0 || (lks_label_chain.rec == rec && lks_label_chain.line == rec->line
		                       && lks_label_chain.n == place))) {
			lks_import_rec_put(rec, place, e, value, dec);
			lks_label_chain.rec = rec;
			lks_label_chain.line = rec->line;
			lks_label_chain.n = place + 1;
			return 0;
		}
	}
	return lks_rec_add_slow(rec, fmt, label, len, value, dec, path);
}

const double lks_import_pow10[23] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                                    1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
                                    1e20, 1e21, 1e22 };

size_t lks_import_number_prefix(const char *s, size_t n, int commas, double *out)
{
	int64_t dec;

	return lks_import_decimal_prefix(s, n, commas, out, &dec);
}

size_t lks_import_decimal_prefix(const char *s, size_t n, int commas, double *out,
                                 int64_t *dec)
{
	uint64_t m = 0;
	int e = 0, digits = 0, ex = 0, exneg = 0;
	size_t i = n > 0 && s[0] == '-';

#if FLT_EVAL_METHOD != 0
	return 0;  /* the product or quotient might be rounded twice */
#endif
	for (; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d < 10) {
			m = m * 10 + d;
			digits++;
		} else if (!(commas && s[i] == ',' && digits && i + 1 < n
		             && (unsigned)(s[i + 1] - '0') < 10)) {
			break;
		}
	}
	if (i < n && s[i] == '.')
		for (i++; i < n && (unsigned)(s[i] - '0') < 10; i++, digits++, e--)
			m = m * 10 + (uint64_t)(s[i] - '0');
	if (digits == 0 || digits > 15)  /* 15 digits: m < 10^15 < 2^53 */
		return 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t d;

		if (++i < n && (s[i] == '+' || s[i] == '-'))
			exneg = s[i++] == '-';
		for (d = i; i < n && (unsigned)(s[i] - '0') < 10 && ex < 1000; i++)
			ex = ex * 10 + (s[i] - '0');
		if (i == d)
			return 0;
		e += exneg ? -ex : ex;
	}
	if (e < -22 || e > 22)
		return 0;
	*out = e < 0 ? (double)m / lks_import_pow10[-e] : (double)m * lks_import_pow10[e];
	/* the layout's m / 10^d is this one division (d 0: m itself); -m / 10^d is exactly
	   its negation, rounding to nearest being symmetric */
	*dec = e <= 0 && e >= -14 && !(m == 0 && s[0] == '-')
	       ? (int64_t)((uint64_t)(s[0] == '-' ? -(int64_t)m : (int64_t)m) << 4) | -e
	       : LKS_IMPORT_NO_DEC;
	if (s[0] == '-')
		*out = -*out;
	return i;
}

int lks_import_number(const char *s, size_t len, int commas, double *out)
{
	int64_t dec;

	return lks_import_number_dec(s, len, commas, out, &dec);
}

int lks_import_number_dec(const char *s, size_t len, int commas, double *out, int64_t *dec)
{
	char small[128], *buf = small, *end;  /* a number of any length: jsonl's are */
	size_t n = 0;
	int rc = -1;

	*dec = LKS_IMPORT_NO_DEC;
	if (len == 0)
		return -1;
	if (lks_import_decimal_prefix(s, len, commas, out, dec) == len)
		return 0;
	*dec = LKS_IMPORT_NO_DEC;
	if (len >= sizeof(small) && !(buf = malloc(len + 1)))
		return -1;
	for (size_t i = 0; i < len; i++) {
		/* a separator only between digits: 3,502 but not ,3 or 3, */
		if (commas && s[i] == ',' && i > 0 && i + 1 < len && isdigit((unsigned char)s[i - 1])
		    && isdigit((unsigned char)s[i + 1]))
			continue;
		buf[n++] = s[i];
	}
	buf[n] = 0;
	/* strtod also takes hex floats and leading blanks; neither is a log's number */
	if (isspace((unsigned char)buf[0]) || strchr(buf, 'x') || strchr(buf, 'X'))
		goto out;
	errno = 0;
	*out = strtod(buf, &end);
	if (end != buf + n)
		goto out;
	/* ERANGE: an overflow (+-inf) or an underflow to 0 is refused (import.h); an underflow
	   to a subnormal is a double's value as its shortest form prints it ("5e-324") */
	rc = errno != ERANGE ? 0 : *out > 1 || *out < -1 ? LKS_IMPORT_NUMBER_OVER
	     : *out == 0 ? LKS_IMPORT_NUMBER_UNDER : 0;
out:
	if (buf != small)
		free(buf);
	return rc;
}

const char *lks_import_number_why(int answer)
{
	if (answer == LKS_IMPORT_NUMBER_OVER)
		return ": over the largest double (1.8e+308), it would read as an infinity, which a "
		       "logged double prints as 'inf'";
	if (answer == LKS_IMPORT_NUMBER_UNDER)
		return ": not 0 but nearer 0 than the least double (4.9e-324), it would read as 0, "
		       "which a logged double prints as '0'";
	return "";
}

int lks_import_step(const char *s, size_t len, int *step)
{
	int64_t v = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return -1;
	for (size_t i = 0; i < len; i++)
		if ((v = v * 10 + (s[i] - '0')) > LKS_IMPORT_MAX_STEP)
			return LKS_IMPORT_NUMBER_OVER;  /* no further: v stays under 2^35 */
	*step = (int)v;
	return 0;
}

/* A block: a read of a big file takes this much (the kernel copies it at memory speed, and
   a syscall per block costs nothing); a line must fit in it whole. */
#define LKS_IMPORT_BLOCK (1 << 20)

const char *lks_import_compressed(const char *s, size_t n)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *cat;
	} kinds[] = { { "\x1f\x8b", 2, "zcat" }, { "\x28\xb5\x2f\xfd", 4, "zstdcat" },
	              { "\xfd" "7zXZ\0", 6, "xzcat" }, { "BZh", 3, "bzcat" } };

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (n >= kinds[i].len && !memcmp(s, kinds[i].magic, kinds[i].len))
			return kinds[i].cat;
	return NULL;
}

static atomic_uint_least64_t lks_bytes_read;

uint64_t lks_import_bytes_read(void)
{
	return atomic_load_explicit(&lks_bytes_read, memory_order_relaxed);
}

int lks_import_reader_open(lks_import_reader *r, const char *path, FILE *f, size_t chunk)
{
	/* a line must fit whole: LKS_IMPORT_LINE_MAX at least */
	*r = (lks_import_reader){ .path = path, .f = f, .fd = fileno(f),
	                          .cap = chunk ? LKS_IMPORT_LINE_MAX : LKS_IMPORT_BLOCK,
	                          .chunk = chunk ? chunk : LKS_IMPORT_BLOCK, .nul = SIZE_MAX,
	                          .limit = UINT64_MAX };
	/* + 1: a last line's NUL; the slack set once, so that what is read there is defined */
	if (!(r->buf = calloc(r->cap + 1 + LKS_IMPORT_SLACK, 1)))
		return lks_err("out of memory");
	return 0;
}

void lks_import_reader_close(lks_import_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* r->nul after [beg, end) has changed: the first NUL byte from from on (a file has none:
   one memchr per block, not one per line). */
static void lks_reader_nul(lks_import_reader *r, size_t from)
{
	const char *z;

	if (r->nul != SIZE_MAX && r->nul >= r->beg && r->nul < r->end)
		return;
	if (from < r->beg)
		from = r->beg;
	z = from < r->end ? memchr(r->buf + from, 0, r->end - from) : NULL;
	r->nul = z ? (size_t)(z - r->buf) : SIZE_MAX;
}

/* Appends what the next read gives to [beg, end), up to chunk bytes and the buffer's end
   (room is left: see lks_import_reader_next): 1, 0 at the end of the file, -1 a read error. */
static int lks_reader_fill(lks_import_reader *r)
{
	size_t room = r->cap - r->end < r->chunk ? r->cap - r->end : r->chunk, n = 0;
	int ch;

	if (r->fd >= 0) {
		ssize_t got;

		if (room > r->limit)
			room = (size_t)r->limit;
		do
			got = room ? read(r->fd, r->buf + r->end, room) : 0;
		while (got < 0 && errno == EINTR);
		if (got < 0)
			return lks_err("cannot read '%s' after line %ld", r->path, r->line);
		n = (size_t)got;
		r->limit -= r->limit == UINT64_MAX ? 0 : n;
		atomic_fetch_add_explicit(&lks_bytes_read, n, memory_order_relaxed);
	} else {
		/* a stream whose reads may wait (--follow): no further than the line's end */
		while (n < room && (ch = getc(r->f)) != EOF)
			if ((r->buf[r->end + n++] = (char)ch) == '\n')
				break;
		if (ferror(r->f))
			return lks_err("cannot read '%s' after line %ld", r->path, r->line);
	}
	r->end += n;
	r->eof = n == 0;
	lks_reader_nul(r, r->end - n);
	return n > 0;
}

/* Reads past the rest of a line too long to hold metrics, up to its newline. 3, or -1. */
static int lks_reader_skip(lks_import_reader *r)
{
	r->beg = r->end = 0;
	r->nul = SIZE_MAX;
	for (;;) {
		const char *nl;
		int rc = lks_reader_fill(r);

		if (rc <= 0)
			return rc < 0 ? -1 : 3;
		if ((nl = memchr(r->buf, '\n', r->end))) {
			r->beg = (size_t)(nl + 1 - r->buf);
			lks_reader_nul(r, r->beg);
			return 3;
		}
		r->end = 0;
		r->nul = SIZE_MAX;
	}
}

int lks_import_reader_next(lks_import_reader *r, char **s, size_t *len)
{
	size_t scan = r->beg, n;  /* [beg, scan) holds no newline */
	char *b, *nl;

	for (;;) {
		b = r->buf + r->beg;
		nl = memchr(r->buf + scan, '\n', r->end - scan);
		if (nl || r->end - r->beg >= LKS_IMPORT_LINE_MAX - 1 || (r->eof && r->end > r->beg))
			break;
		if (r->eof)
			return 0;
		if (r->end == r->cap) {  /* the line's start to the front: it is shorter than a block */
			memmove(r->buf, b, r->end - r->beg);
			r->end -= r->beg;
			if (r->nul != SIZE_MAX)
				r->nul -= r->beg;
			r->beg = 0;
		}
		scan = r->end;
		if (lks_reader_fill(r) < 0)
			return -1;
	}
	n = nl ? (size_t)(nl - b) : r->end - r->beg;
	r->line++;
	/* a NUL would end the line early for the parsers: bad input, as far as a line is read */
	if (r->nul - r->beg < (n < LKS_IMPORT_LINE_MAX - 1 ? n : LKS_IMPORT_LINE_MAX - 1)) {
		const char *cat = lks_import_compressed(b, r->end - r->beg);

		if (cat)
			return lks_err("'%s':%ld: compressed, not a log: give it decompressed ('%s %s | "
			               "lockstep import ... -')", r->path, r->line, cat, r->path),
			       LKS_IMPORT_BAD;
		return lks_err("'%s':%ld: a NUL byte in the line", r->path, r->line), LKS_IMPORT_BAD;
	}
	if (n >= LKS_IMPORT_LINE_MAX - 1) {
		/* longer than any metric line (a progress bar redrawn with '\r'): read past */
		*s = NULL;
		*len = 0;
		if (nl) {
			r->beg = (size_t)(nl + 1 - r->buf);
			lks_reader_nul(r, r->beg);  /* the line's NUL, past its first bytes, is read past */
			return 3;
		}
		return lks_reader_skip(r);
	}
	*s = b;
	b[n] = 0;
	if (!nl) {
		r->beg = r->end;
		*len = n;
		return 2;
	}
	r->beg += n + 1;
	if (n && b[n - 1] == '\r')
		b[--n] = 0;
	*len = n;
	return 1;
}
