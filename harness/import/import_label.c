/*
 * import_label.c: a format's labels (its row's lists, in its own file) for the metrics of
 * the one table (import_rec.h, store/import_metric.c), and a record's metrics added by
 * label (import.h). A label the format lacks is stored as a name of its own, performance
 * where its words say time, speed, memory or power (lks_label_sounds_performance: two runs'
 * clocks are never equal, so a bitwise verdict on them is a false failure), else numerics
 * (it then enters a bitwise verdict, the safe side). A user's tag map (import_tag_map.c),
 * this thread's while an import parses, comes before all of these.
 */
#include <ctype.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"
#include "harness/import/import_run_impl.h"
#include "kernels/err.h"

/* The tag map of the import this thread parses (lks_import_tag_map_use); NULL: none. */
static _Thread_local const lks_import_tag_map *lks_label_map;

/* The row of label in a format's list (NULL ended), or NULL. */
static const lks_import_metric *lks_label_in(const lks_import_label_row *row, const char *label,
                                             size_t len)
{
	for (; row && row->label; row++) {
		const char *l = row->label;

		/* the first byte first: a label not remembered (lks_import_rec_add) comes here */
		if (len && l[0] == label[0] && strlen(l) == len && !memcmp(l, label, len))
			return lks_import_metric_find(row->name);
	}
	return NULL;
}

/* import_impl.h */
int lks_import_label_mapped(const char *label, size_t len)
{
	return lks_label_map && lks_import_tag_map_find(lks_label_map, label, len);
}

const lks_import_metric *lks_import_metric_label(lks_import_fmt fmt, const char *label,
                                                 size_t len)
{
	const lks_import_format *f = lks_import_format_at(fmt);
	const lks_import_metric *m;

	if (!f)
		return NULL;
	if (lks_label_map && (m = lks_import_tag_map_find(lks_label_map, label, len)))
		return m;
	if (!f->labels)
		return lks_import_metric_find_n(label, len);
	if ((m = lks_label_in(f->labels, label, len)))
		return m;
	return lks_label_in(f->aliases, label, len);
}

const char *lks_import_label_of(lks_import_fmt fmt, const char *name)
{
	const lks_import_format *f = lks_import_format_at(fmt);
	const lks_import_metric *m;

	if (!f)
		return NULL;
	if (!f->labels)
		return (m = lks_import_metric_find(name)) ? m->name : NULL;
	for (const lks_import_label_row *row = f->labels; row->label; row++)
		if (!strcmp(row->name, name))
			return row->label;
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

/* The map the entries were learnt under, by its number (0: none). An entry holds the name
   its label was read as, so under another map it may be wrong: all go, and the state
   changes, so that a quick reader (lks_titan_fast) forgets what it learnt of them too. */
static _Thread_local uint64_t lks_label_map_id;

void lks_import_tag_map_use(const lks_import_tag_map *m)
{
	uint64_t id = lks_import_tag_map_id(m);

	lks_label_map = m;
	if (id == lks_label_map_id)
		return;
	lks_label_map_id = id;
	memset(lks_label_memos, 0, sizeof(lks_label_memos));
	lks_label_chain.rec = NULL;
	lks_label_changes = atomic_fetch_add_explicit(&lks_label_states, 1,
	                                              memory_order_relaxed) + 1;
}

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
	"time", "timing", "runtime", "walltime", "wallclock", "elapsed", "latency", "duration",
	"throughput", "speed", "flops", "tflops", "mfu", "tps", "tgs", "wps", "memory", "mem", "ms",
	"sec", "secs", "second", "seconds", "util", "utilization", "power", "energy", NULL,
};

/* Whether a label the table lacks names a time, a speed, a device's memory or its power, by
   its words (runs of letters and digits, any case) or a rate "/s": such a metric is
   performance, any other numerics. A framework's own "step_time_ms", "tokens_per_sec" or
   "peak_mem_gb" then stays out of a bitwise verdict (two runs' clocks are never equal), and
   its "aux_loss" or "num_tokens" is in it. */
int lks_import_sounds_performance(const char *label, size_t len)
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
	        : lks_import_sounds_performance(label, len) ? LKS_METRIC_PERFORMANCE
	                                                   : LKS_METRIC_NUMERICS;
	if (m) {
		e->nlen = strlen(m->name);  /* the table's names are short */
		memcpy(e->name, m->name, e->nlen);
		return 0;
	}
	/* the label made a name: "mtp_1 loss" -> mtp_1_loss */
	if (len == 0 || len >= sizeof(e->name))
		return lks_err("'%s':%ld: metric name of %zu characters (want 1 to %d)", path,
		               rec->line, len, LKS_IMPORT_NAME_MAX - 1), LKS_E_BAD_INPUT;
	for (; e->nlen < len; e->nlen++)
		e->name[e->nlen] = isalnum((unsigned char)label[e->nlen]) ? label[e->nlen] : '_';
	if (lks_import_name_reserved(e->name, e->nlen))
		return lks_err("'%s':%ld: '%.*s' would be a metric named '%.*s', which names the "
		               "step and rank of every record (and their keys in an export): name it "
		               "with --tag-map '%.*s=logged_%.*s'", path, rec->line, (int)len, label,
		               (int)len, e->name, (int)len, label, (int)len, e->name),
		       LKS_E_BAD_INPUT;
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
			       LKS_E_BAD_INPUT;
	if (rec->n == LKS_IMPORT_MAX_METRICS)
		return lks_err("'%s':%ld: more than %d metrics", path, rec->line,
		               LKS_IMPORT_MAX_METRICS), LKS_E_BAD_INPUT;
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
	return lks_import_rec_add_dec(rec, fmt, label, len, value, lks_import_shortest_dec(value),
	                              path);
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
