/*
 * since.c: the report's opening section, "since last night": the night-over-night
 * verdicts of the suite (harness/verify/nightly.h, read back from the nightly table):
 * how many runs are unchanged, changed with an equal fingerprint (the alarm), changed
 * with a fingerprint difference, new and gone; then a row per changed run, alarms first,
 * with its divergence, the keys that differ and the run it was compared with. Trend plots
 * across suites are another file's.
 */
#include "harness/report/report_impl.h"
#include "harness/store/report_query.h"
#include "kernels/err.h"

enum { LKS_SINCE_MAX = 64 };  /* rows of the changed-run table; the counts say the rest */

/* One changed run as its row shows it. */
struct lks_since_row {
	int fp_equal;
	char run[160], before[64], div[600], keys[512];
};

struct lks_since {
	struct lks_report *r;
	int unchanged, silent, explained, added, gone, rows;
	struct lks_since_row *row;  /* (LKS_SINCE_MAX) in the order stored: alarms first */
};

static void lks_since_row(struct lks_since *x, const lks_nightly_rec *rec)
{
	struct lks_since_row *w = &x->row[x->rows];
	char where[300];

	w->fp_equal = rec->fp_equal;
	snprintf(w->run, sizeof(w->run), "%s/%s (run %lld)", rec->case_name, rec->run_name,
	         (long long)rec->run_id);
	snprintf(w->before, sizeof(w->before), "run %lld of suite %lld",
	         (long long)rec->prev_run_id, (long long)rec->prev_suite_id);
	lks_place(where, sizeof(where), rec->step, rec->rank, rec->tensor);
	snprintf(w->div, sizeof(w->div), "%s", rec->message ? rec->message : where);
	snprintf(w->keys, sizeof(w->keys), "%s",
	         rec->fp_equal ? "none: the same software gave different bits" : rec->fp_keys);
}

static int lks_since_take(void *arg, const lks_nightly_rec *rec)
{
	struct lks_since *x = arg;
	const char *v = rec->verdict;

	if (!strcmp(v, "unchanged"))
		x->unchanged++;
	else if (!strcmp(v, "new"))
		x->added++;
	else if (!strcmp(v, "gone"))
		x->gone++;
	else if (!strcmp(v, "changed")) {
		if (rec->fp_equal)
			x->silent++;
		else
			x->explained++;
		if (x->rows < LKS_SINCE_MAX)
			lks_since_row(x, rec);
		x->rows++;
	}
	return 0;
}

static void lks_since_counts(struct lks_since *x)
{
	static const char *const heads[] = { "verdict", "runs" };
	static const char *const cls[] = { NULL, "num" };
	const char *names[] = { "changed, same fingerprint (hardware or non-determinism)",
	                        "changed, fingerprint differs", "unchanged (bit for bit)", "new",
	                        "gone" };
	int n[] = { x->silent, x->explained, x->unchanged, x->added, x->gone };

	lks_table_head(x->r, heads, 2);
	for (int i = 0; i < 5; i++) {
		char num[16];
		const char *cells[2] = { names[i], num };

		snprintf(num, sizeof(num), "%d", n[i]);
		lks_row(x->r, i == 0 && n[i] ? "bad" : NULL, cells, cls, 2);
	}
	lks_table_end(x->r);
}

static void lks_since_changed(struct lks_since *x)
{
	static const char *const heads[] = { "run", "verdict", "first divergence",
	                                     "fingerprint keys that differ", "compared with" };

	lks_table_head(x->r, heads, 5);
	for (int i = 0; i < x->rows && i < LKS_SINCE_MAX; i++) {
		const struct lks_since_row *w = &x->row[i];
		const char *cells[5] = { w->run, w->fp_equal ? "changed, same fingerprint" : "changed",
		                         w->div, w->keys, w->before };

		lks_row(x->r, w->fp_equal ? "bad" : NULL, cells, NULL, 5);
	}
	lks_table_end(x->r);
	if (x->rows > LKS_SINCE_MAX) {
		char more[96];

		snprintf(more, sizeof(more), "%d more changed runs are not listed",
		         x->rows - LKS_SINCE_MAX);
		lks_para(x->r, 1, more);
	}
}

int lks_since_section(struct lks_report *r, int have_gnuplot)
{
	struct lks_since x = { .r = r };
	int64_t before = 0;

	if (!(x.row = calloc(LKS_SINCE_MAX, sizeof(*x.row))))
		return lks_err("out of memory");
	if (lks_store_get_nightly(r->s, r->suite, lks_since_take, &x)
	    || lks_store_suites_before(r->s, r->suite, &before)) {
		free(x.row);
		return -1;
	}
	fputs("<section id=\"since-last-night\">\n", r->html);
	lks_heading(r, 2, "since last night");
	if (x.unchanged + x.rows + x.added + x.gone == 0 && !before) {
		lks_para(r, 1, "no earlier suite in this database to compare with");
	} else if (x.unchanged + x.rows + x.added + x.gone == 0) {
		lks_para(r, 1, "no run of this suite was compared with an earlier one: none of its "
		               "runs completed (a run killed or failed is passed over), or it was "
		               "stored before night-over-night comparison existed");
	} else {
		lks_para(r, 0, "each run against the same case and run of the latest earlier suite "
		               "made with the same settings (recipe, options, backend, world size, "
		               "steps, seed, combo), bit for bit");
		lks_since_counts(&x);
		if (x.rows)
			lks_since_changed(&x);
	}
	lks_heading(r, 3, "trends over recent suites");
	if (lks_trend_plots(r, r->o->trend_suites > 0 ? r->o->trend_suites : 5, have_gnuplot)) {
		free(x.row);
		return -1;
	}
	fputs("</section>\n", r->html);
	free(x.row);
	return 0;
}
