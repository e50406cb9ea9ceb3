/*
 * heatmap.c: two runs compared step by step and tensor by tensor, paired and compared row
 * by row by the divergence walker as the bitwise check pairs and compares them (walk.h),
 * rank against rank: the relative L2 difference per cell, downsampled to stay legible, and
 * the first divergence in the order of the bitwise check, circled.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/report/report_impl.h"
#include "harness/verify/walk.h"
#include "kernels/err.h"

/* ---- step x tensor heatmap of two runs ---- */

/* The most cells a heatmap draws: 96 tensor rows keep their names legible (8 points, 10
   pixels a row), 400 step columns keep the PNG gnuplot embeds at a few tens of KB. Beyond,
   consecutive tensors (steps) share a cell, which shows the largest error among them. */
#define LKS_HEAT_MAX_ROWS 96
#define LKS_HEAT_MAX_COLS 400
/* The values of the palette's two bands below 1e-12 (heatmap.gp): 'equal' below 'no row'
   below any difference, so that the largest value is what a shared cell shows. */
#define LKS_HEAT_EQUAL (-13.5)
#define LKS_HEAT_NO_ROW (-12.5)

/* Two runs' stats compared per step and tensor. */
struct lks_heat {
	lks_stored_run *a, *b;    /* two of the suite's runs */
	int *map;                 /* (a.nt) the seq in b of a's tensor (name, phase,
	                             occurrence), for tensor traces its row; -1: none */
	int *rows;                /* (nrows) the seqs in a of the tensors both trace */
	int nrows, nsteps, W;     /* W: the ranks both runs have, compared rank by rank */
	int ybin, xbin, ny, nx;   /* tensors per row, steps per column; rows, columns */
	double *v;                /* (ny, nx) log10 relative difference, or a band */
	unsigned char *paired;    /* tensor traces: (a.nt) a's tensor paired with one of b at
	                             the step being drawn */
	int div_step, div_row, div_rank;  /* the first divergence; div_step -1: none; div_row
	                                     -1: at no row drawn */
	char div_field[64];
	char div_tensor[128];     /* the divergence's tensor as the check names it; "": none */
	int div_phase;            /* its lks_phase; -1: none */
};

/* The bitwise check's comparison: every field of the stat rows, bit for bit. */
static const lks_walk_opts lks_heat_opts = { .exact = 1 };

static void lks_heat_release(struct lks_heat *h)
{
	free(h->map);
	free(h->rows);
	free(h->v);
	free(h->paired);
}

static int lks_ceil_div(int a, int b)
{
	return (a + b - 1) / b;
}

/* A pair of tensor traces' tensors: a's tensor seq paired at this step. */
static int lks_heat_seen(void *arg, int rank, int pos, int seq, int differs, double l2_a,
                         double l2_b)
{
	(void)rank, (void)pos, (void)differs, (void)l2_a, (void)l2_b;
	((unsigned char *)arg)[seq] = 1;
	return 0;
}

/* Tensor traces: a's tensors that the walk pairs with one of b's at some step and rank
   (walk.h, lks_walk_tensor_step_pairs), each a row; one b never traces is none, as the
   bitwise check never compares it. */
static int lks_heat_load_traces(struct lks_heat *h, int nsteps)
{
	lks_tensor_step_diff d;

	if (!(h->paired = calloc((size_t)h->a->nt + 1, 1)))
		return lks_err("out of memory");
	for (int step = 0; step < nsteps; step++)
		if (lks_walk_tensor_step_pairs(h->a, h->b, step, lks_heat_seen, h->paired, &d))
			return -1;
	for (int i = 0; i < h->a->nt; i++) {
		h->map[i] = h->paired[i] ? h->nrows : -1;  /* a's tensor's row */
		if (h->paired[i])
			h->rows[h->nrows++] = i;
	}
	return 0;
}

/* The tensors both runs trace, paired as the bitwise check pairs them, and the grid. */
static int lks_heat_load(lks_stored_run *a, lks_stored_run *b, struct lks_heat *h)
{
	lks_walk_count cnt;

	h->a = a;
	h->b = b;
	h->div_step = -1;
	h->map = malloc(((size_t)a->nt + 1) * sizeof(int));
	h->rows = malloc(((size_t)a->nt + 1) * sizeof(int));
	if (!h->map || !h->rows)
		return lks_err("out of memory");
	if (a->tt && b->tt) {
		if (lks_heat_load_traces(h, a->nsteps < b->nsteps ? a->nsteps : b->nsteps))
			return -1;
	} else {
		lks_walk_pairs(&lks_heat_opts, a, b, h->map, &cnt);
		for (int i = 0; i < a->nt; i++)
			if (h->map[i] >= 0)
				h->rows[h->nrows++] = i;
	}
	h->nsteps = a->nsteps < b->nsteps ? a->nsteps : b->nsteps;
	h->W = a->W < b->W ? a->W : b->W;
	if (h->nrows == 0 || h->nsteps == 0)
		return 0;
	h->ybin = lks_ceil_div(h->nrows, LKS_HEAT_MAX_ROWS);
	h->xbin = lks_ceil_div(h->nsteps, LKS_HEAT_MAX_COLS);
	h->ny = lks_ceil_div(h->nrows, h->ybin);
	h->nx = lks_ceil_div(h->nsteps, h->xbin);
	if (!(h->v = malloc((size_t)h->ny * h->nx * sizeof(double))))
		return lks_err("out of memory");
	for (size_t i = 0; i < (size_t)h->ny * h->nx; i++)
		h->v[i] = LKS_HEAT_EQUAL;
	return 0;
}

/* log10 of |a - b| / max(|a|, |b|) of two L2 norms that belong to rows that differ: at
   least the floor (rows may differ in another field only, or below it), 1 where one side is
   not finite and the other is or they are NaN. */
static double lks_heat_error(double a, double b)
{
	double m = fmax(fabs(a), fabs(b)), d;

	if (!isfinite(a) || !isfinite(b))
		d = a == b ? LKS_REPORT_FLOOR : 1.0;
	else
		d = m > 0 ? fabs(a - b) / m : 0.0;
	return log10(d > LKS_REPORT_FLOOR ? d : LKS_REPORT_FLOOR);
}

/* One tensor (row k) at the loaded step: the largest difference over ranks into its cell;
   the first (step, tensor, rank) that differs, in the order of the bitwise check, is the
   divergence: a row one run stored and the other did not is one, a row neither stored is
   not (the walk passes it, lks_walk_pair), but is drawn as 'no row' too: the cell shows
   that the pair is not compared there. */
static void lks_heat_cell(struct lks_heat *h, int step, int k)
{
	double *cell = &h->v[(size_t)(k / h->ybin) * h->nx + step / h->xbin];
	int i = h->rows[k];
	lks_check_result res;

	lks_check_result_init(&res);
	for (int r = 0; r < h->W; r++) {
		const lks_stat_row *ra = lks_stored_run_row(h->a, r, i);
		const lks_stat_row *rb = lks_stored_run_row(h->b, r, h->map[i]);
		int differs = lks_walk_pair(&lks_heat_opts, h->a, ra, rb, step, r, i, &res);
		double v;

		if (ra && rb && !differs)
			continue;
		v = ra && rb ? lks_heat_error(ra->l2, rb->l2) : LKS_HEAT_NO_ROW;
		*cell = v > *cell ? v : *cell;
		if (differs && h->div_step < 0) {
			h->div_step = step;
			h->div_row = k;
			h->div_rank = r;
			snprintf(h->div_field, sizeof(h->div_field), "%s", ra && rb ? res.field : "row");
			snprintf(h->div_tensor, sizeof(h->div_tensor), "%s", h->a->names[i]);
			h->div_phase = (int)h->a->phases[i];
		}
	}
}

/* A pair of tensor traces' tensors (walk.h, lks_walk_tensor_step_pairs) into the cell of
   its row at the step (arg). */
struct lks_heat_at {
	struct lks_heat *h;
	int step;
};

static int lks_heat_pair(void *arg, int rank, int pos, int seq, int differs, double l2_a,
                         double l2_b)
{
	struct lks_heat_at *at = arg;
	struct lks_heat *h = at->h;
	double *cell = &h->v[(size_t)(h->map[seq] / h->ybin) * h->nx + at->step / h->xbin], v;

	(void)rank, (void)pos;
	h->paired[seq] = 1;
	if (!differs)
		return 0;
	/* a pair that differs in another statistic or the hash alone: the floor */
	v = isnan(l2_a) && isnan(l2_b) ? log10(LKS_REPORT_FLOOR) : lks_heat_error(l2_a, l2_b);
	*cell = v > *cell ? v : *cell;
	return 0;
}

/* Tensor traces: the cells step by step, a row not paired at a step 'no row' there; the
   first divergence as the bitwise check finds it, by its walk (its field: the statistic's
   name where the format has its own, as the check stores it). */
static int lks_heat_fill_traces(struct lks_heat *h)
{
	lks_check_result res;

	for (int step = 0; step < h->nsteps; step++) {
		struct lks_heat_at at = { h, step };
		lks_tensor_step_diff d;

		memset(h->paired, 0, (size_t)h->a->nt);
		if (lks_walk_tensor_step_pairs(h->a, h->b, step, lks_heat_pair, &at, &d))
			return -1;
		for (int k = 0; k < h->nrows; k++) {
			double *cell = &h->v[(size_t)(k / h->ybin) * h->nx + step / h->xbin];

			if (!h->paired[h->rows[k]] && *cell < LKS_HEAT_NO_ROW)
				*cell = LKS_HEAT_NO_ROW;
		}
	}
	lks_check_result_init(&res);
	if (lks_walk(&lks_heat_opts, h->a, h->b, &res, NULL))
		return -1;
	if (!res.failed)
		return 0;
	h->div_step = res.step;
	h->div_rank = res.rank;
	h->div_row = -1;
	snprintf(h->div_field, sizeof(h->div_field), "%s", lks_check_result_field(&res));
	snprintf(h->div_tensor, sizeof(h->div_tensor), "%s", res.tensor);
	h->div_phase = res.tensor[0] ? res.phase : -1;
	for (int k = 0; k < h->nrows && h->div_row < 0; k++)
		if (!strcmp(h->a->names[h->rows[k]], res.tensor)
		    && (int)h->a->phases[h->rows[k]] == res.phase)
			h->div_row = k;
	return 0;
}

static int lks_heat_fill(struct lks_heat *h)
{
	if (h->a->tt && h->b->tt)
		return lks_heat_fill_traces(h);
	for (int step = 0; step < h->nsteps; step++) {
		if (lks_stored_run_step(h->a, step) || lks_stored_run_step(h->b, step))
			return -1;
		for (int k = 0; k < h->nrows; k++)
			lks_heat_cell(h, step, k);
	}
	return 0;
}

/* The name of a tensor of a, for a label. */
static void lks_heat_name(char *out, size_t size, const struct lks_heat *h, int k)
{
	lks_tensor_word(out, size, h->a, h->rows[k]);
}

/* The divergence's tensor as the check names it, its phase said where it is not the
   tensor's only one (a recomputed activation); "(none)" at a rank or steps one run lacks. */
static void lks_heat_div_tensor(char *out, size_t size, const struct lks_heat *h)
{
	snprintf(out, size, "%s%s", h->div_tensor[0] ? h->div_tensor : "(none)",
	         h->div_phase == LKS_PHASE_RECOMPUTE ? " (recompute)" : "");
}

/* The cells ('x y value', x the middle of the column's steps) and the variables of
   heatmap.gp: grid, row names, and where the divergence is circled (at no cell: said). */
static void lks_heat_data(const struct lks_heat *h, FILE *data, FILE *vars)
{
	char name[160];

	for (int y = 0; y < h->ny; y++) {
		for (int x = 0; x < h->nx; x++)
			fprintf(data, "%.1f %d %.4f\n", x * h->xbin + (h->xbin - 1) / 2.0, y,
			        h->v[(size_t)y * h->nx + x]);
		fputc('\n', data);
	}
	fprintf(vars, "nx = %d\nny = %d\nxbin = %d\narray ylab[%d]\n", h->nx, h->ny, h->xbin, h->ny);
	for (int y = 0; y < h->ny; y++) {
		int n = h->nrows - y * h->ybin < h->ybin ? h->nrows - y * h->ybin : h->ybin;

		lks_heat_name(name, sizeof(name), h, y * h->ybin);
		fprintf(vars, n > 1 ? "ylab[%d] = '%s +%d'\n" : "ylab[%d] = '%s'\n", y + 1, name, n - 1);
	}
	fprintf(vars, "mark = %d\n", h->div_step < 0 ? 0 : h->div_row < 0 ? 2 : 1);
	if (h->div_step < 0)
		return;
	if (h->div_row >= 0)
		lks_heat_name(name, sizeof(name), h, h->div_row);
	else
		snprintf(name, sizeof(name), "no tensor");
	fprintf(vars, "mark_x = %.1f\nmark_y = %d\n"
	        "mark_text = 'first divergence: step %d, %s, rank %d (%s)'\n",
	        (h->div_step / h->xbin) * h->xbin + (h->xbin - 1) / 2.0,
	        h->div_row < 0 ? 0 : h->div_row / h->ybin, h->div_step, name, h->div_rank,
	        h->div_field);
}

/* What the heatmap shows, in words, and the first divergence as the checks word it. */
static void lks_heat_caption(FILE *f, const struct lks_heat *h, const char *name_a,
                             const char *name_b, const char *checks)
{
	char name[160], ranks[64] = "on rank 0";

	if (h->W > 1)
		snprintf(ranks, sizeof(ranks), "the largest over ranks 0 to %d", h->W - 1);
	fprintf(f, "Step (x) against tensor (y: the %d tensors both runs trace, in the execution "
	        "order of '%s'); colour: log10 of |L2 a - L2 b| / max(L2 a, L2 b) of '%s' (a) and "
	        "'%s' (b), %s. 'equal': every traced value, hash included, is the same on every "
	        "rank; rows that differ with L2 norms closer than %g are drawn at %g; 'no row': a "
	        "run stored no stats there.", h->nrows, name_a, name_a, name_b, ranks,
	        LKS_REPORT_FLOOR, LKS_REPORT_FLOOR);
	if (h->a->W != h->b->W)
		fprintf(f, " The runs have %d and %d ranks: rank against rank, the first %d; a rank's "
		        "activations and gradients cover other samples in each.", h->a->W, h->b->W,
		        h->W);
	if (h->ybin > 1 || h->xbin > 1)
		fprintf(f, " Downsampled to stay legible: %d tensors share a row, %d steps a column, "
		        "each cell the largest error among them.", h->ybin, h->xbin);
	if (h->div_step >= 0) {
		lks_heat_div_tensor(name, sizeof(name), h);
		fprintf(f, " First divergence (%sstep, then tensor in execution order, then rank, as "
		        "the bitwise check finds it): step %d, tensor %s, rank %d, field %s.",
		        h->div_row >= 0 ? "circled; " : "", h->div_step, name, h->div_rank,
		        h->div_field);
	} else {
		fprintf(f, " No divergence: the runs agree in every traced value of the tensors they "
		        "share.");
	}
	if (*checks)
		fprintf(f, " Checks of this pair: %s.", checks);
}

static int lks_heat_plot(struct lks_report *r, lks_stored_run *a, lks_stored_run *b,
                         const char *checks)
{
	struct lks_heat h = { 0 };
	struct lks_text data = { 0 }, vars = { 0 }, caption = { 0 };
	struct lks_plot_spec spec = { .kind = "heatmap" };
	const lks_stored_run *pair[2] = { a, b };
	const char *dat, *vs;
	char title[300], tcase[128];
	int rc = -1;

	snprintf(title, sizeof(title), "tensor error heatmap: '%s' vs '%s'", a->run_name, b->run_name);
	/* a pruned run has no stat rows: every cell would be 'no row' */
	if ((rc = lks_pruned_note(r, title, pair, 2)) != 0)
		return rc < 0 ? -1 : 0;
	rc = -1;
	if (lks_heat_load(a, b, &h) || lks_heat_fill(&h))
		goto out;
	if (h.nrows == 0 || h.nsteps == 0) {
		snprintf(title, sizeof(title), "'%s' and '%s' share no traced tensor and step: no "
		         "heatmap", a->run_name, b->run_name);
		lks_para(r, 1, title);
		rc = 0;
		goto out;
	}
	if (lks_text_open(&data) || lks_text_open(&vars) || lks_text_open(&caption))
		goto out;
	lks_heat_data(&h, data.f, vars.f);
	lks_safe_name(tcase, sizeof(tcase), a->case_name);
	fprintf(vars.f, "title_text = '%s: %s vs %s, relative L2 difference per step and tensor'\n",
	        tcase, a->run_name, b->run_name);
	lks_heat_caption(caption.f, &h, a->run_name, b->run_name, checks);
	if (!(dat = lks_text_done(&data)) || !(vs = lks_text_done(&vars))
	    || !(spec.caption = lks_text_done(&caption))) {
		lks_err("out of memory");
		goto out;
	}
	spec.tag = a->run_name;
	spec.tag_b = b->run_name;
	spec.title = title;
	/* 10 pixels a row of tensor names, and room for title, axis and colour box */
	spec.height = 140 + 10 * h.ny < 320 ? 320 : 140 + 10 * h.ny;
	rc = lks_plot(r, a->case_name, &spec, dat, vs);
out:
	lks_text_free(&data);
	lks_text_free(&vars);
	lks_text_free(&caption);
	lks_heat_release(&h);
	return rc;
}

/* The checks of the case that compare runs a and b (either way round) as "name (kind),
   ..." into out, and the index of the first of them into first_at. */
static void lks_pair_checks(const struct lks_report *r, const char *case_name, int64_t a,
                            int64_t b, char *out, size_t size, int *first_at)
{
	size_t n = 0;

	out[0] = 0;
	*first_at = -1;
	for (int i = 0; i < r->nchecks; i++) {
		const lks_check_rec *c = &r->checks[i].rec;

		if (strcmp(c->case_name, case_name) || !((c->run_a == a && c->run_b == b)
		                                         || (c->run_a == b && c->run_b == a)))
			continue;
		if (*first_at < 0)
			*first_at = i;
		if (n < size)
			n += (size_t)snprintf(out + n, size - n, "%s%s (%s)", n ? ", " : "", c->check_name,
			                      c->kind);
	}
}

/* A heatmap for each pair of runs a check of the case compares (once per pair, in the
   order of the checks); a case whose checks compare no two runs gets one of each run
   against the reference run instead. */
int lks_case_heatmaps(struct lks_report *r, const char *case_name)
{
	int ref = lks_reference(r, case_name), npairs = 0;
	char checks[1024];

	for (int i = 0; i < r->nchecks; i++) {
		const lks_check_rec *c = &r->checks[i].rec;
		lks_stored_run *a = lks_run_by_id(r, c->run_a), *b = lks_run_by_id(r, c->run_b);
		int first;

		if (strcmp(c->case_name, case_name) || !a || !b || a == b)
			continue;
		lks_pair_checks(r, case_name, c->run_a, c->run_b, checks, sizeof(checks), &first);
		if (first != i)
			continue;  /* the pair was drawn at its first check */
		npairs++;
		if (lks_heat_plot(r, a, b, checks))
			return -1;
	}
	for (int i = 0; i < r->nruns && npairs == 0 && ref >= 0; i++) {
		if (i == ref || strcmp(r->runs[i].case_name, case_name))
			continue;
		if (lks_heat_plot(r, &r->runs[i], &r->runs[ref], ""))
			return -1;
	}
	return 0;
}
