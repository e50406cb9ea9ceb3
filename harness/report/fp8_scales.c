/*
 * fp8_scales.c: the amax and scale history of an FP8 run: rank 0's amax and scale of every
 * quantized tensor per step, read from the stored run step by step (run.h), a tensor that
 * repeats an earlier one drawn once, long runs binned, and the plot's caption saying what
 * is drawn and what is not.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/report/report_impl.h"
#include "kernels/err.h"

/* ---- FP8 amax and scale history ---- */

/* Lines in one amax/scale plot at most: the key beside the panels holds about 32 names at
   8 points, and 8 colours times 4 dash types tell 32 lines apart. */
#define LKS_REPORT_MAX_LINES 32
/* Points a line at most: 64 lines of 200 points are about 150 KB of SVG inline in the page;
   a longer run's steps are binned, keeping each bin's extremes (largest amax, smallest
   scale: the side where a cast saturates). */
#define LKS_REPORT_MAX_POINTS 120

/* A run whose GEMM operands are quantized: every recipe but the two without FP8. */
static int lks_is_fp8(const char *recipe)
{
	/* an imported run ("import": a log's metrics, or a tensor trace) has no recipe */
	return strcmp(recipe, "bf16") != 0 && strcmp(recipe, "fp32") != 0
	       && strcmp(recipe, "import") != 0;
}

/* Rank 0's amax and scale of every tensor of a run per step. */
struct lks_scales {
	lks_stored_run *t;        /* the run, one of the suite's */
	float *amax, *scale;      /* (nt, nsteps) NaN where no row was stored */
	int *same;                /* (nt) the earlier tensor drawn in its place; -1: drawn
	                             itself; -2: no scale at any step, not drawn */
	int xbin;                 /* steps a point */
};

static void lks_scales_release(struct lks_scales *x)
{
	free(x->amax);
	free(x->scale);
	free(x->same);
}

/* A tensor whose amax and scale are the bits of an earlier one's at every step is drawn
   once: with tensorwise scales the weight of dgrad is the forward's weight, and a
   recompute reuses the forward's scales, so half the lines would hide the other half. */
static void lks_scales_dedupe(struct lks_scales *x)
{
	size_t ns = (size_t)x->t->nsteps;

	for (int i = 0; i < x->t->nt; i++) {
		const float *sc = x->scale + i * ns, *am = x->amax + i * ns;

		x->same[i] = -2;
		for (size_t s = 0; s < ns && x->same[i] == -2; s++)
			if (!isnan(sc[s]))
				x->same[i] = -1;
		for (int j = 0; j < i && x->same[i] == -1; j++)
			if (x->same[j] == -1 && !memcmp(x->scale + j * ns, sc, ns * sizeof(float))
			    && !memcmp(x->amax + j * ns, am, ns * sizeof(float)))
				x->same[i] = j;
	}
}

static int lks_scales_load(lks_stored_run *t, struct lks_scales *x)
{
	size_t n = (size_t)t->nt * t->nsteps + 1;

	x->t = t;
	x->amax = malloc(n * sizeof(float));
	x->scale = malloc(n * sizeof(float));
	x->same = malloc(((size_t)t->nt + 1) * sizeof(int));
	if (!x->amax || !x->scale || !x->same)
		return lks_err("out of memory");
	for (int step = 0; step < t->nsteps; step++) {
		if (lks_stored_run_step(t, step))
			return -1;
		for (int i = 0; i < t->nt; i++) {
			const lks_stat_row *row = lks_stored_run_row(t, 0, i);
			size_t at = (size_t)i * t->nsteps + step;

			x->amax[at] = row ? row->amax : NAN;
			x->scale[at] = row ? row->scale : NAN;
		}
	}
	lks_scales_dedupe(x);
	x->xbin = (t->nsteps + LKS_REPORT_MAX_POINTS - 1) / LKS_REPORT_MAX_POINTS;
	return 0;
}

/* A tensor's name as a word of the key: as it is, but for what would end a word or a
   gnuplot string (blanks, quotes, backslash) and bytes outside printable ASCII (an SVG is
   UTF-8), each a '_'; a recomputed activation has the forward's name. A label, not a key:
   two may look alike. */
void lks_tensor_word(char *out, size_t size, const lks_stored_run *t, int i)
{
	char word[128];
	size_t n = 0;

	for (const char *p = t->names[i]; *p && n + 1 < sizeof(word); p++)
		word[n++] = *p > ' ' && *p < 0x7f && !strchr("'\"\\`", *p) ? *p : '_';
	word[n] = 0;
	snprintf(out, size, "%s%s", word, t->phases[i] == LKS_PHASE_RECOMPUTE ? "-recompute" : "");
}

/* Log scale: a value that is not positive is drawn as missing. */
static void lks_log_value(FILE *f, float v)
{
	if (v > 0 && isfinite(v))
		fprintf(f, " %.9g", v);
	else
		fputs(" NaN", f);
}

/* Tensor i's points: step (the middle of its bin), amax (the bin's largest), scale (the
   bin's smallest). */
static void lks_scales_line(const struct lks_scales *x, int i, FILE *data)
{
	int ns = x->t->nsteps;
	const float *am = x->amax + (size_t)i * ns, *sc = x->scale + (size_t)i * ns;

	for (int s0 = 0; s0 < ns; s0 += x->xbin) {
		int s1 = s0 + x->xbin < ns ? s0 + x->xbin : ns;
		float a = NAN, c = NAN;

		for (int s = s0; s < s1; s++) {
			a = fmaxf(a, am[s]);  /* a NaN (no row) gives way to a value */
			c = fminf(c, sc[s]);
		}
		fprintf(data, "%g", (s0 + s1 - 1) / 2.0);
		lks_log_value(data, a);
		lks_log_value(data, c);
		fputc('\n', data);
	}
}

/* The data (one block per drawn tensor: step, amax, scale) and their names; counts the
   tensors with a scale, those drawn and those left out past LKS_REPORT_MAX_LINES; the
   tensors drawn in another's place are listed in same ("a as b, ..."). */
static void lks_scales_data(const struct lks_scales *x, FILE *data, FILE *names, FILE *same,
                            int *nscaled, int *ndrawn, int *nmore)
{
	const lks_stored_run *t = x->t;
	int nsame = 0;

	*nscaled = *ndrawn = *nmore = 0;
	for (int i = 0; i < t->nt; i++) {
		char w[160], v[160];

		if (x->same[i] == -2)
			continue;
		(*nscaled)++;
		lks_tensor_word(w, sizeof(w), t, i);
		if (x->same[i] >= 0) {
			lks_tensor_word(v, sizeof(v), t, x->same[i]);
			fprintf(same, "%s%s as %s", nsame++ ? ", " : "", w, v);
			continue;
		}
		if (*ndrawn == LKS_REPORT_MAX_LINES) {
			(*nmore)++;
			continue;
		}
		fprintf(names, "%s%s", (*ndrawn)++ ? " " : "", w);
		fprintf(data, "# %s\n", w);
		lks_scales_line(x, i, data);
		fputs("\n\n", data);
	}
}

/* What the plot shows, in words: the reader needs to know what amax means for a
   quantized tensor and which lines are missing, and why. */
static void lks_scales_caption(FILE *f, const lks_stored_run *run, const struct lks_scales *x,
                               int nscaled, int ndrawn, int nmore, const char *same)
{
	fprintf(f, "Run '%s' (%s), rank 0: amax (top) and FP8 scale (bottom) per step of the %d "
	        "tensors with a scale, of %d traced. The amax of a quantized tensor is that of its "
	        "codes, in scaled units: at the format's largest value (dashed) the range is used to "
	        "its top; an axiswise scale is drawn as its smallest.", run->run_name, run->recipe,
	        nscaled, x->t->nt);
	if (*same)
		fprintf(f, " Drawn once, as their amax and scale equal an earlier tensor's at every "
		        "step: %s.", same);
	if (nmore)
		fprintf(f, " Only the first %d in execution order are drawn; %d more are not.", ndrawn,
		        nmore);
	if (x->xbin > 1)
		fprintf(f, " Downsampled to keep the plot small: a point is %d steps, the largest amax "
		        "and the smallest scale among them.", x->xbin);
}

static int lks_fp8_plot(struct lks_report *r, lks_stored_run *run)
{
	struct lks_scales x = { 0 };
	struct lks_text data = { 0 }, names = { 0 }, same = { 0 }, caption = { 0 }, vars = { 0 };
	const char *nm, *sm, *cap, *vs, *dat;
	char title[300], tcase[128];
	int nscaled, ndrawn, nmore, rc;

	snprintf(title, sizeof(title), "FP8 amax and scale of run '%s' (rank 0)", run->run_name);
	/* a pruned run has no stat rows: it would seem to have recorded no scale */
	if ((rc = lks_pruned_note(r, title, (const lks_stored_run *const[]){ run }, 1)) != 0)
		return rc < 0 ? -1 : 0;
	rc = -1;
	if (lks_text_open(&data) || lks_text_open(&names) || lks_text_open(&same)
	    || lks_text_open(&caption) || lks_text_open(&vars) || lks_scales_load(run, &x))
		goto out;
	lks_scales_data(&x, data.f, names.f, same.f, &nscaled, &ndrawn, &nmore);
	if (!(nm = lks_text_done(&names)) || !(sm = lks_text_done(&same)))
		goto oom;
	lks_scales_caption(caption.f, run, &x, nscaled, ndrawn, nmore, sm);
	lks_safe_name(tcase, sizeof(tcase), run->case_name);
	fprintf(vars.f, "n = %d\nnames = \"%s\"\ntitle_text = '%s: %s (%s), rank 0'\n", ndrawn, nm,
	        tcase, run->run_name, run->recipe);
	if (!(cap = lks_text_done(&caption)) || !(vs = lks_text_done(&vars))
	    || !(dat = lks_text_done(&data)))
		goto oom;
	if (ndrawn) {
		struct lks_plot_spec spec = { .kind = "fp8scale", .tag = run->run_name, .title = title,
		                              .caption = cap, .height = 640 };

		rc = lks_plot(r, run->case_name, &spec, dat, vs);
	} else {
		snprintf(title, sizeof(title), "FP8 run '%s' (%s) recorded no FP8 scale: no amax and "
		         "scale plot", run->run_name, run->recipe);
		lks_para(r, 1, title);
		rc = 0;
	}
	goto out;
oom:
	lks_err("out of memory");
out:
	lks_text_free(&data);
	lks_text_free(&names);
	lks_text_free(&same);
	lks_text_free(&caption);
	lks_text_free(&vars);
	lks_scales_release(&x);
	return rc;
}

/* Each FP8 run of the case: its amax and scale history. A case without one has none. */
int lks_case_fp8_plots(struct lks_report *r, const char *case_name)
{
	for (int i = 0; i < r->nruns; i++) {
		lks_stored_run *run = &r->runs[i];

		if (!strcmp(run->case_name, case_name) && run->nsteps && lks_is_fp8(run->recipe)
		    && lks_fp8_plot(r, run))
			return -1;
	}
	return 0;
}
