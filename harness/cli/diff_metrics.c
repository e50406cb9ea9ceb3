/*
 * diff_metrics.c: 'lockstep diff' of imported runs (cmd_diff.c), whose traces are named
 * metrics per (step, rank) rather than tensors (run.h). Two sections, one per kind of
 * metric: numerics (the verdict is theirs, found by the walker as for any run) with per
 * metric the values compared, how many differ, the first step that differs and the largest
 * relative error, each side's precision as printed and how many differ at it (a text log
 * against its run's event file: printed.h); and performance (never in a verdict) with per metric the mean of each
 * run and their ratio.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/diff_metrics.h"
#include "harness/import/import.h"
#include "harness/verify/printed.h"
#include "kernels/err.h"

struct lks_diff_pair {
	const lks_stored_run *a, *b;
	struct lks_mstat *st;     /* by slot (lks_mstats) */
	int *slot_b;              /* (b->nm) b's metric index to its slot */
};

/* The precision of one side's values of a metric (lks_metric_row.printed): the fewest
   and most decimals printed, and how many were at full precision. */
struct lks_mprec {
	int dmin, dmax;           /* dmax -1: none printed */
	long nfull;
};

/* What one metric name gives over both runs. */
struct lks_mstat {
	long n, ndiff;            /* (step, rank) values both have; of them, not the same bits */
	long ndiff_printed;       /* of those, how many differ at the coarser side's decimals too
	                             (printed.h) */
	long ndiff_f32;           /* of the values that differ, how many round to one float32: a
	                             float32 (an event file's) beside the double it was made of */
	int first;                /* the first step that differs; -1: none */
	double rel_max;           /* the largest |a - b| / |b| (NaN against a number: inf) */
	double sum_a, sum_b;      /* of the finite values each run has, for the means */
	long n_a, n_b;
	struct lks_mprec prec_a, prec_b;  /* of the values both have */
};

static void lks_mprec_add(struct lks_mprec *p, int printed)
{
	if (!printed) {
		p->nfull++;
		return;
	}
	if (p->dmax < 0 || printed - 1 < p->dmin)
		p->dmin = printed - 1;
	if (printed - 1 > p->dmax)
		p->dmax = printed - 1;
}

/* One (step, rank)'s values of a metric into its stats, as a walk of every (step, rank) in
   order takes them: va, vb NULL where a run logged none; pa, pb their printed. */
static void lks_mstat_add(struct lks_mstat *st, int step, const double *va, int pa,
                          const double *vb, int pb)
{
	double rel;

	if (va && isfinite(*va)) {
		st->sum_a += *va;
		st->n_a++;
	}
	if (vb && isfinite(*vb)) {
		st->sum_b += *vb;
		st->n_b++;
	}
	if (!va || !vb)
		return;
	st->n++;
	lks_mprec_add(&st->prec_a, pa);
	lks_mprec_add(&st->prec_b, pb);
	if (memcmp(va, vb, sizeof(*va)) == 0 || (isnan(*va) && isnan(*vb)))
		return;
	st->ndiff++;
	st->ndiff_printed += !lks_printed_agree(*va, pa, *vb, pb);
	st->ndiff_f32 += isfinite(*va) && isfinite(*vb) && (float)*va == (float)*vb;
	if (st->first < 0)
		st->first = step;
	rel = isnan(*va) || isnan(*vb) ? INFINITY : *va == *vb ? 0.0 : fabs(*va - *vb) / fabs(*vb);
	if (rel > st->rel_max || isnan(st->rel_max))
		st->rel_max = rel;
}

/* Every metric's stats in one pass over the rows, (step, rank) in order, each metric's
   first value of a (step, rank) taken: a's metric m in slot m, b's in the slot of its name
   in a, else after a's (slot_b). 0, or -1 out of memory. */
static int lks_mstats(struct lks_diff_pair *p)
{
	const lks_stored_run *a = p->a, *b = p->b;
	int nsteps = a->nsteps > b->nsteps ? a->nsteps : b->nsteps, W = a->W > b->W ? a->W : b->W;
	const double **va, **vb;
	int *touched, nslots = a->nm;

	p->slot_b = malloc(((size_t)b->nm + 1) * sizeof(int));
	for (int m = 0; p->slot_b && m < b->nm; m++) {
		int ma = lks_stored_run_metric_find(a, b->mnames[m]);

		p->slot_b[m] = ma >= 0 ? ma : nslots++;
	}
	p->st = calloc((size_t)nslots + 1, sizeof(*p->st));
	va = calloc((size_t)nslots + 1, sizeof(*va));
	vb = calloc((size_t)nslots + 1, sizeof(*vb));
	touched = malloc(((size_t)nslots + 1) * sizeof(int));
	if (!p->slot_b || !p->st || !va || !vb || !touched) {
		free(va); free(vb); free(touched);
		return -1;
	}
	for (int k = 0; k < nslots; k++) {
		p->st[k].first = -1;
		p->st[k].prec_a.dmax = p->st[k].prec_b.dmax = -1;
	}
	for (int step = 0; step < nsteps; step++)
		for (int r = 0; r < W; r++) {
			const struct lks_mrow *ra, *rb;
			size_t na = lks_stored_run_metric_rows(a, step, r, &ra);
			size_t nb = lks_stored_run_metric_rows(b, step, r, &rb);
			int nt = 0;

			for (size_t k = 0; k < na; k++)
				if (!va[ra[k].m]) {
					va[ra[k].m] = &ra[k].value;
					touched[nt++] = ra[k].m;
				}
			for (size_t k = 0; k < nb; k++) {
				int s = p->slot_b[rb[k].m];

				if (vb[s])
					continue;
				vb[s] = &rb[k].value;
				if (!va[s])
					touched[nt++] = s;
			}
			for (int k = 0; k < nt; k++) {
				const double *xa = va[touched[k]], *xb = vb[touched[k]];

				lks_mstat_add(&p->st[touched[k]], step, xa, xa ? lks_stored_run_printed(a, xa) : 0,
				              xb, xb ? lks_stored_run_printed(b, xb) : 0);
				va[touched[k]] = vb[touched[k]] = NULL;
			}
		}
	free(va);
	free(vb);
	free(touched);
	return 0;
}

/* the stats of a metric name (of a, or of b) */
static const struct lks_mstat *lks_mstat_of(const struct lks_diff_pair *p, const char *name)
{
	int ma = lks_stored_run_metric_find(p->a, name);

	return &p->st[ma >= 0 ? ma : p->slot_b[lks_stored_run_metric_find(p->b, name)]];
}

/* Calls fn for each metric name of a, then of b not in a, whose kind is kind. */
static void lks_each_metric(const lks_stored_run *a, const lks_stored_run *b,
                            lks_metric_kind kind, void (*fn)(void *arg, const char *name),
                            void *arg)
{
	for (int side = 0; side < 2; side++) {
		const lks_stored_run *r = side ? b : a;

		for (int i = 0; i < r->nm; i++)
			if (r->mkinds[i] == kind && !(side && lks_stored_run_metric_find(a, r->mnames[i]) >= 0))
				fn(arg, r->mnames[i]);
	}
}


/* A side's precision as a cell: "-" (no values), "full", "4", "4-6", "4,full". */
static const char *lks_mprec_cell(const struct lks_mprec *p, char *buf, size_t size)
{
	if (p->dmax < 0)
		return p->nfull ? "full" : "-";
	if (p->dmin == p->dmax)
		snprintf(buf, size, "%d%s", p->dmin, p->nfull ? ",full" : "");
	else
		snprintf(buf, size, "%d-%d%s", p->dmin, p->dmax, p->nfull ? ",full" : "");
	return buf;
}

static void lks_print_numerics(void *arg, const char *name)
{
	const struct lks_mstat *st = lks_mstat_of(arg, name);
	char first[16] = "-", ca[32], cb[32], at[24] = "-";

	if (st->first >= 0)
		snprintf(first, sizeof(first), "%d", st->first);
	if (st->prec_a.dmax >= 0 || st->prec_b.dmax >= 0)
		snprintf(at, sizeof(at), "%ld", st->ndiff_printed);
	printf("  %-22s %8ld %8ld  %-10s %-10.3g %-9s %-9s %s\n", name, st->n, st->ndiff, first,
	       st->rel_max, lks_mprec_cell(&st->prec_a, ca, sizeof(ca)),
	       lks_mprec_cell(&st->prec_b, cb, sizeof(cb)), at);
}

/* The side that holds more digits of a metric than the other, where one does: 'a' or 'b'
   (full against printed, or more decimals at least and fewer at most), else 0. */
static int lks_mprec_finer(const struct lks_mprec *a, const struct lks_mprec *b)
{
	int fa = a->dmax < 0, fb = b->dmax < 0;  /* all full */

	if (fa != fb)
		return fa ? 'a' : 'b';
	if (fa || a->nfull || b->nfull)
		return 0;
	return a->dmin > b->dmax ? 'a' : b->dmin > a->dmax ? 'b' : 0;
}

/* Per metric printed on a side: whether the runs agree to the printed precision, and
   which holds more (a text log against the event file of its run). */
static void lks_print_precision(void *arg, const char *name)
{
	const struct lks_mstat *st = lks_mstat_of(arg, name);
	const struct lks_mprec *pa = &st->prec_a, *pb = &st->prec_b;
	int finer = lks_mprec_finer(pa, pb), dmin, dmax;
	char w[32], fw[32];
	const char *f32 = "; rounded to float32, as an event file keeps a value, all agree";

	if (st->n && pa->dmax < 0 && pb->dmax < 0 && st->ndiff && st->ndiff_f32 == st->ndiff)
		printf("  %s: %ld of %ld values differ%s\n", name, st->ndiff, st->n, f32);
	if (!st->n || (pa->dmax < 0 && pb->dmax < 0))
		return;
	/* the decimals compared at: the coarser side's, or both sides' where they overlap */
	dmin = pa->dmax < 0 ? pb->dmin : pb->dmax < 0 ? pa->dmin
	       : pa->dmin < pb->dmin ? pa->dmin : pb->dmin;
	dmax = finer == 'a' ? pb->dmax : finer == 'b' ? pa->dmax
	       : pa->dmax > pb->dmax ? pa->dmax : pb->dmax;
	lks_printed_words(w, sizeof(w), dmin, dmax);
	if (st->ndiff_printed)
		printf("  %s: %ld of %ld values differ at the printed precision (%s)%s", name,
		       st->ndiff_printed, st->n, w, st->ndiff_f32 == st->ndiff ? f32 : "");
	else
		printf("  %s: %s to the printed precision (%s)", name,
		       st->ndiff ? "the runs agree" : "equal", w);
	if (finer) {
		const struct lks_mprec *f = finer == 'a' ? pa : pb;

		if (f->dmax < 0)
			snprintf(fw, sizeof(fw), "full precision");
		else
			lks_printed_words(fw, sizeof(fw), f->dmin, f->dmax);
		printf("; %c holds more: %s", finer, fw);
	}
	putchar('\n');
}

/* A mean of n values (sum), or "-" where the run has none finite (not measured: torchtitan's
   "mfu: N/A", or a metric the other run's log alone has). */
static const char *lks_mean_cell(double sum, long n, char *buf, size_t size)
{
	if (!n)
		return "-";
	snprintf(buf, size, "%.6g", sum / (double)n);
	return buf;
}

static void lks_print_performance(void *arg, const char *name)
{
	const struct lks_mstat *st = lks_mstat_of(arg, name);
	char ca[32], cb[32], cr[32] = "-";

	if (st->n_a && st->n_b && st->sum_a != 0)  /* a's mean 0 (nanoGPT's mfu): no ratio */
		snprintf(cr, sizeof(cr), "%.4g",
		         (st->sum_b / (double)st->n_b) / (st->sum_a / (double)st->n_a));
	printf("  %-22s %-14s %-14s %s\n", name, lks_mean_cell(st->sum_a, st->n_a, ca, sizeof(ca)),
	       lks_mean_cell(st->sum_b, st->n_b, cb, sizeof(cb)), cr);
}

int lks_diff_metrics(const lks_stored_run *a, const lks_stored_run *b)
{
	struct lks_diff_pair p = { a, b, NULL, NULL };

	if (lks_mstats(&p)) {
		free(p.st);
		free(p.slot_b);
		return lks_err("out of memory for the metrics' table");
	}
	printf("\nnumerics (the verdict; bit for bit, as the logs wrote them; rel = |a - b| / |b|;\n"
	       "printed a, b: the decimals a log's text wrote them with, 'full' a binary value or\n"
	       "full precision; at printed: of those that differ, how many differ still at the\n"
	       "coarser side's decimals):\n"
	       "  %-22s %8s %8s  %-10s %-10s %-9s %-9s %s\n", "metric", "values", "differ", "first",
	       "rel max", "printed a", "printed b", "at printed");
	lks_each_metric(a, b, LKS_METRIC_NUMERICS, lks_print_numerics, &p);
	lks_each_metric(a, b, LKS_METRIC_NUMERICS, lks_print_precision, &p);
	printf("\nperformance (never in a verdict; means of the finite values, '-' none):\n"
	       "  %-22s %-14s %-14s %s\n", "metric", "a", "b", "b / a");
	lks_each_metric(a, b, LKS_METRIC_PERFORMANCE, lks_print_performance, &p);
	free(p.st);
	free(p.slot_b);
	return 0;
}
