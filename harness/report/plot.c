/*
 * plot.c: one plot of the report: a data file and a script (terminal, output and variables,
 * then the template from reports/) go to the scratch folder, gnuplot runs as a child process
 * with terminal svg, and the SVG is inlined in the page and kept beside report.md. And the
 * plots of every case: loss, relative loss difference against the reference run (one that
 * stored a loss) with the rtol of the close checks against it, grad norm; a plot with no
 * value to draw is a line saying so. The templates are checked whole before the page is
 * written: one missing is the installation's fault (exit 3), not a plot's error.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "harness/report/report_impl.h"
#include "kernels/err.h"

/* ---- gnuplot ---- */

/* Runs the gnuplot program with args; its output goes to tmp/gnuplot.log. The exit
   status, 127 when it could not be started, -1 when fork failed. On Linux gnuplot dies
   with this process, so that a killed report leaves nobody writing into its folder. */
int lks_gnuplot(struct lks_report *r, const char *arg)
{
	const char *prog = r->o->gnuplot ? r->o->gnuplot : "gnuplot";
	char log[LKS_REPORT_PATH];
	pid_t pid, parent = getpid();
	int st;

	snprintf(log, sizeof(log), "%s/gnuplot.log", r->tmp);
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

#ifdef __linux__
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(127);
#endif
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp(prog, prog, arg, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The templates a report reads from their folder: the page's, then the gnuplot scripts
   of every plot kind (lks_plot_spec.kind) and those they load. */
static const char *const lks_templates[] = {
	"report.html", "common.gp", "loss.gp", "reldiff.gp", "gradnorm.gp", "fp8scale.gp",
	"heatmap.gp", "trend_common.gp", "trend_loss.gp", "trend_reldiff.gp", "trend_time.gp",
};

int lks_templates_check(const struct lks_report *r, int have_gnuplot)
{
	size_t n = have_gnuplot ? sizeof(lks_templates) / sizeof(lks_templates[0]) : 1;

	for (size_t i = 0; i < n; i++) {
		char path[LKS_REPORT_PATH];
		const char *why = NULL;
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", r->o->templates, lks_templates[i]);
		if (stat(path, &st) != 0 || access(path, R_OK) != 0)
			why = strerror(errno);
		else if (!S_ISREG(st.st_mode))  /* a FIFO would block its reader for ever */
			why = S_ISDIR(st.st_mode) ? "a directory, not a file"
			    : S_ISFIFO(st.st_mode) ? "a FIFO, not a regular file"
			    : "not a regular file";
		if (why)
			return lks_err("cannot read the report template '%s': %s (--templates DIR, else "
			               "$LKS_REPORT_DIR, names a folder that holds every file of "
			               "lockstep's reports/ folder)", path, why);
	}
	return 0;
}

/* s without "dir/" wherever it is in it. */
static void lks_strip_dir(char *s, const char *dir)
{
	size_t n = strlen(dir);
	char *p = s;

	while (n && (p = strstr(p, dir)))
		if (p[n] == '/')
			memmove(p, p + n + 1, strlen(p + n + 1) + 1);
		else
			p += n;
}

/* gnuplot's error for the page: its first line that says one, else the first that names
   a line of a script (a warning); the folders of this machine left out of it (gnuplot
   names its template and the scratch folder's files by their paths), the file's name
   kept. */
static void lks_gnuplot_error(struct lks_report *r, char *buf, size_t size)
{
	char log[LKS_REPORT_PATH], line[256], first[256] = "";
	FILE *f;

	snprintf(buf, size, "gnuplot failed");
	snprintf(log, sizeof(log), "%s/gnuplot.log", r->tmp);
	if (!(f = fopen(log, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strstr(line, "rror")) {
			snprintf(first, sizeof(first), "%s", line);
			break;
		}
		if (!first[0] && strstr(line, "line "))
			snprintf(first, sizeof(first), "%s", line);
	}
	fclose(f);
	if (!first[0])
		return;
	lks_strip_dir(first, r->tmp);
	lks_strip_dir(first, r->o->templates);
	snprintf(buf, size, "gnuplot: %s", first);
}

static int lks_write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return lks_err("cannot write '%s': %s", path, strerror(errno));
	ok = fwrite(data, 1, len, f) == len;
	ok &= fclose(f) == 0;
	return ok ? 0 : lks_err("cannot write '%s': %s", path, strerror(errno));
}

/* gnuplot's SVG terminal embeds 'with image' as a PNG of one pixel per cell, which a
   viewer scaling it smooths into a blur: the cells of a heatmap must stay sharp, in the
   page and in the SVG files beside report.md. */
static char *lks_svg_sharp(const char *svg)
{
	static const char attr[] = "<image style='image-rendering:pixelated' ";
	const char *p = svg, *q;
	size_t n = 0;
	char *out, *o;

	for (q = svg; (q = strstr(q, "<image ")); q++)
		n++;
	if (!(out = o = malloc(strlen(svg) + n * sizeof(attr) + 1)))
		return NULL;
	while ((q = strstr(p, "<image "))) {
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		memcpy(o, attr, sizeof(attr) - 1);
		o += sizeof(attr) - 1;
		p = q + strlen("<image ");
	}
	strcpy(o, p);
	return out;
}

/* The plot's heading in both outputs and its anchor, plot-<name> (lks_plot), by which
   a reader (or a test) finds it. */
static void lks_plot_head(struct lks_report *r, const char *name, const struct lks_plot_spec *p)
{
	fprintf(r->html, "<div class=\"plot\" id=\"plot-%s\">\n<h3>", name);
	lks_html(r->html, p->title);
	fprintf(r->html, "</h3>\n");
	fputs("\n**", r->md);
	lks_md(r->md, p->title, 0);
	fputs("**\n\n", r->md);
}

static void lks_plot_tail(struct lks_report *r, const struct lks_plot_spec *p)
{
	if (p->caption) {
		fputs("<p class=\"caption\">", r->html);
		lks_html(r->html, p->caption);
		fputs("</p>\n", r->html);
		lks_md(r->md, p->caption, 1);
		fputs("\n\n", r->md);
	}
	fputs("</div>\n", r->html);
}

/* A line "what 'path'": a path in a gnuplot string, in which a quote is written twice. */
static void lks_gp_string(FILE *f, const char *what, const char *path)
{
	fprintf(f, "%s'", what);
	for (; *path; path++) {
		if (*path == '\'')
			fputc('\'', f);
		fputc(*path, f);
	}
	fputs("'\n", f);
}

/* The script: terminal, output and variables, then the template. */
static int lks_plot_script(struct lks_report *r, const char *gp, const char *svg,
                           const char *dat, const struct lks_plot_spec *p, const char *vars)
{
	char tmpl[LKS_REPORT_PATH], common[LKS_REPORT_PATH];
	FILE *f;

	snprintf(tmpl, sizeof(tmpl), "%s/%s.gp", r->o->templates, p->kind);
	snprintf(common, sizeof(common), "%s/common.gp", r->o->templates);
	if (!(f = fopen(gp, "w")))
		return lks_err("cannot write '%s': %s", gp, strerror(errno));
	/* noenhanced: run names such as fp8_ac are text, not subscripts */
	fprintf(f, "set terminal svg size 900,%d dynamic noenhanced font 'sans,12' "
	           "background rgb 'white'\n", p->height > 0 ? p->height : 380);
	lks_gp_string(f, "set output ", svg);
	lks_gp_string(f, "datafile = ", dat);
	lks_gp_string(f, "common_gp = ", common);
	fputs(vars, f);
	lks_gp_string(f, "load ", tmpl);
	return fclose(f) == 0 ? 0 : lks_err("cannot write '%s': %s", gp, strerror(errno));
}

/*
 * One plot: data (blocks of lines, one per series) and vars (gnuplot assignments) for the
 * template p->kind; the SVG goes inline into the page and to dir/<name>.svg for report.md,
 * name being <case>=<kind>[=<tag>[=<tag_b>]], each name safe (lks_safe_name), which has no
 * '=': two plots never share a name; case_name NULL: a plot of the suite, nightly_<kind>.
 * A plot that fails is said in the page.
 */
int lks_plot(struct lks_report *r, const char *case_name, const struct lks_plot_spec *p,
             const char *data, const char *vars)
{
	char safe[80], tag[80], tag_b[80], name[300], err[300];
	char dat[LKS_REPORT_PATH], gp[LKS_REPORT_PATH], svg[LKS_REPORT_PATH], out[LKS_REPORT_PATH];
	char *text = NULL, *sharp = NULL;
	size_t len = 0;
	int st;

	lks_safe_name(safe, sizeof(safe), case_name);
	lks_safe_name(tag, sizeof(tag), p->tag);
	lks_safe_name(tag_b, sizeof(tag_b), p->tag_b);
	snprintf(name, sizeof(name), "%s%s%s%s%s%s%s", case_name ? safe : "nightly",
	         case_name ? "=" : "_", p->kind, p->tag ? "=" : "", tag, p->tag_b ? "=" : "", tag_b);
	snprintf(dat, sizeof(dat), "%s/%s.dat", r->tmp, name);
	snprintf(gp, sizeof(gp), "%s/%s.gp", r->tmp, name);
	snprintf(svg, sizeof(svg), "%s/%s.svg", r->tmp, name);
	snprintf(out, sizeof(out), "%s/%s.svg", r->dir, name);
	if (lks_write_file(dat, data, strlen(data)) || lks_plot_script(r, gp, svg, dat, p, vars))
		return -1;

	lks_plot_head(r, name, p);
	if ((st = lks_gnuplot(r, gp)) != 0 || !(text = lks_slurp(svg, &len))
	    || !strstr(text, "<svg")) {
		lks_gnuplot_error(r, err, sizeof(err));
		lks_para(r, 1, err);
		lks_plot_tail(r, p);
		free(text);
		return 0;
	}
	if (!(sharp = lks_svg_sharp(text))) {
		free(text);
		return lks_err("out of memory");
	}
	/* the XML prolog and DOCTYPE belong to a file, not to an element inside HTML */
	fputs(strstr(sharp, "<svg"), r->html);
	fputs("![", r->md);
	lks_md(r->md, p->title, 0);
	fprintf(r->md, "](%s.svg)\n\n", name);
	lks_plot_tail(r, p);
	st = lks_write_file(out, sharp, strlen(sharp));
	free(sharp);
	free(text);
	if (st == 0)
		r->info->nplots++;
	return st;
}

/* ---- the plots of every case: loss, relative loss difference, grad norm ---- */

/* A series of more steps than LKS_PLOT_STEPS is drawn in LKS_PLOT_BUCKETS runs of steps,
   each as its lowest and highest value (lks_bucket): 4000 points, about as many as a plot
   of 1000 pixels can tell apart, and a few hundred KB of SVG. */
#define LKS_PLOT_STEPS 4000
#define LKS_PLOT_BUCKETS 2000
#define LKS_PLOT_BUCKETED "as the lowest and highest value of each of 2000 runs of steps"

/* What a series shows per step. */
enum lks_series_kind { LKS_SERIES_LOSS, LKS_SERIES_GRAD_NORM, LKS_SERIES_RELDIFF };

/* The value of run's series at step s; LKS_SERIES_RELDIFF: |loss - loss(ref)| /
   |loss(ref)|, an exact agreement drawn at the floor of the log scale. */
static double lks_series_value(enum lks_series_kind kind, const lks_stored_run *run,
                               const lks_stored_run *ref, int s)
{
	double v, b;

	if (kind == LKS_SERIES_GRAD_NORM)
		return lks_run_grad_norm(run, s);
	v = lks_run_loss(run, s);
	if (kind == LKS_SERIES_LOSS)
		return v;
	b = lks_run_loss(ref, s);
	v = fabs(v - b) / fabs(b);
	return v < LKS_REPORT_FLOOR ? LKS_REPORT_FLOOR : v;
}

/* Whether run's series has a finite value in its first n steps: one that has none (a
   tensor trace stores no loss) draws nothing, and a plot of such series alone fails. */
static int lks_series_drawn(enum lks_series_kind kind, const lks_stored_run *run,
                            const lks_stored_run *ref, int n)
{
	for (int s = 0; s < n; s++)
		if (isfinite(lks_series_value(kind, run, ref, s)))
			return 1;
	return 0;
}

static void lks_point(FILE *data, int s, double v)
{
	if (isfinite(v))
		fprintf(data, "%d %.17g\n", s, v);
	else
		fprintf(data, "%d NaN\n", s);
}

struct lks_pt {
	int s;
	double v;
};

/* Steps [s0, s1) of a long series as what a plot of LKS_PLOT_BUCKETS columns can show of
   them: the lowest and the highest value, each at its own step and in step order, so that
   a spike stays drawn; the first value that is not finite as a gap at its step. */
static void lks_bucket(FILE *data, enum lks_series_kind kind, const lks_stored_run *run,
                       const lks_stored_run *ref, int s0, int s1)
{
	int lo = -1, hi = -1, bad = -1;
	double vlo = 0, vhi = 0;

	for (int s = s0; s < s1; s++) {
		double v = lks_series_value(kind, run, ref, s);

		if (!isfinite(v)) {
			bad = bad < 0 ? s : bad;
			continue;
		}
		if (lo < 0 || v < vlo)
			lo = s, vlo = v;
		if (hi < 0 || v > vhi)
			hi = s, vhi = v;
	}
	struct lks_pt p[3];
	int np = 0;

	if (lo >= 0)
		p[np++] = (struct lks_pt){ lo, vlo };
	if (hi >= 0 && hi != lo)
		p[np++] = (struct lks_pt){ hi, vhi };
	if (bad >= 0)
		p[np++] = (struct lks_pt){ bad, NAN };  /* the line breaks there */
	for (int i = 1; i < np; i++)  /* in step order: three at most */
		for (int j = i; j > 0 && p[j - 1].s > p[j].s; j--) {
			struct lks_pt t = p[j];

			p[j] = p[j - 1];
			p[j - 1] = t;
		}
	for (int i = 0; i < np; i++)
		lks_point(data, p[i].s, p[i].v);
}

/* Adds the series of one run over its first n steps to data and its name to names: every
   step, or past LKS_PLOT_STEPS steps (a long imported run: an SVG of a million points is
   tens of MB a plot) each of LKS_PLOT_BUCKETS runs of steps as its lowest and highest
   value; *bucketed then set. */
static void lks_series(FILE *data, FILE *names, enum lks_series_kind kind,
                       const lks_stored_run *run, const lks_stored_run *ref, int n, int *nseries,
                       int *bucketed)
{
	char safe[128];

	lks_safe_name(safe, sizeof(safe), run->run_name);
	fprintf(names, "%s%s", *nseries ? " " : "", safe);
	fprintf(data, "# %s\n", safe);
	if (n <= LKS_PLOT_STEPS) {
		for (int s = 0; s < n; s++)
			lks_point(data, s, lks_series_value(kind, run, ref, s));
	} else {
		for (int b = 0; b < LKS_PLOT_BUCKETS; b++)
			lks_bucket(data, kind, run, ref, (int)((int64_t)n * b / LKS_PLOT_BUCKETS),
			           (int)((int64_t)n * (b + 1) / LKS_PLOT_BUCKETS));
		*bucketed = 1;
	}
	fputs("\n\n", data);  /* two blank lines: the next gnuplot index */
	(*nseries)++;
}

/* The rtol of the close checks on the loss against run ref, each once, as a gnuplot list
   ("a, b"); their number into *ntol. */
static void lks_loss_tols(const struct lks_report *r, const char *case_name,
                          const lks_stored_run *ref, char *tols, size_t size, int *ntol)
{
	tols[0] = 0;
	*ntol = 0;
	for (int i = 0; i < r->nchecks; i++) {
		const struct lks_rcheck *k = &r->checks[i];
		char t[32];

		if (strcmp(k->rec.case_name, case_name) || !(k->rtol > 0) || strcmp(k->metric, "loss")
		    || (k->rec.run_a != ref->id && k->rec.run_b != ref->id))
			continue;
		snprintf(t, sizeof(t), "%.17g", k->rtol);
		if (!strstr(tols, t) && strlen(tols) + strlen(t) + 2 < size) {
			if ((*ntol)++)
				strcat(tols, ", ");
			strcat(tols, t);
		}
	}
}

/* The loss or the grad norm of every run of the case, or (LKS_SERIES_RELDIFF) the relative
   loss difference of every other run against the reference run ref, with the rtol of the
   close checks against it. */
static int lks_case_plot(struct lks_report *r, const char *case_name, enum lks_series_kind kind,
                         int ref)
{
	static const char *const kinds[] = { "loss", "gradnorm", "reldiff" };
	static const char *const captions[] = { "loss per step (mean over ranks)",
	                                        "grad norm per step" };
	static const char *const none[] = { "no loss to plot: no run of this case stored one",
	                                    "no grad norm to plot: no run of this case stored one" };
	const lks_stored_run *b = ref >= 0 ? &r->runs[ref] : NULL;
	struct lks_text data = { 0 }, names = { 0 };
	struct lks_plot_spec spec = { .kind = kinds[kind] };
	char vars[4096], tcase[128], tols[256], caption[400];
	const char *dat, *nm;
	int n = 0, ntol, rc = 0, bucketed = 0;

	if (lks_text_open(&data) || lks_text_open(&names))
		goto oom;
	for (int i = 0; i < r->nruns; i++) {
		const lks_stored_run *a = &r->runs[i];
		int ns = !b ? a->nsteps : a->nsteps < b->nsteps ? a->nsteps : b->nsteps;

		if (strcmp(a->case_name, case_name) == 0 && ns && (!b || i != ref)
		    && lks_series_drawn(kind, a, b, ns))
			lks_series(data.f, names.f, kind, a, b, ns, &n, &bucketed);
	}
	if (!(dat = lks_text_done(&data)) || !(nm = lks_text_done(&names)))
		goto oom;
	lks_safe_name(tcase, sizeof(tcase), case_name);
	if (kind != LKS_SERIES_RELDIFF) {
		snprintf(caption, sizeof(caption), "%s%s", captions[kind], bucketed ? ", drawn "
		         LKS_PLOT_BUCKETED : "");
		spec.title = caption;
		snprintf(vars, sizeof(vars), "n = %d\nnames = \"%s\"\ntitle_text = '%s: %s'\n", n, nm,
		         tcase, captions[kind]);
		if (!n)
			lks_para(r, 1, none[kind]);
	} else {
		lks_loss_tols(r, case_name, b, tols, sizeof(tols), &ntol);
		snprintf(caption, sizeof(caption),
		         "relative loss difference against '%s' (an exact agreement is drawn at %g)%s",
		         b->run_name, LKS_REPORT_FLOOR, bucketed ? ", drawn " LKS_PLOT_BUCKETED : "");
		spec.title = caption;
		snprintf(vars, sizeof(vars), "n = %d\nnames = \"%s\"\nntol = %d\n%s%d] = [%s]\n"
		         "title_text = '%s: |loss - loss(%s)| / |loss(%s)|'\n", n, nm, ntol,
		         ntol ? "array tols[" : "# tols[", ntol, tols, tcase, b->run_name, b->run_name);
		if (!n) {
			snprintf(caption, sizeof(caption), "no relative loss difference to plot: no run "
			         "but '%s' stored a loss", b->run_name);
			lks_para(r, 1, caption);
		}
	}
	if (n)
		rc = lks_plot(r, case_name, &spec, dat, vars);
	goto out;
oom:
	rc = lks_err("out of memory");
out:
	lks_text_free(&data);
	lks_text_free(&names);
	return rc;
}

/* The reference of the relative loss difference: the first bf16 run that stored a loss,
   else the first run that did (a tensor trace stores none: against it every difference
   was NaN); -1: no run of the case did. */
static int lks_loss_reference(const struct lks_report *r, const char *case_name)
{
	int first = -1;

	for (int i = 0; i < r->nruns; i++) {
		const lks_stored_run *run = &r->runs[i];

		if (strcmp(run->case_name, case_name) != 0
		    || !lks_series_drawn(LKS_SERIES_LOSS, run, NULL, run->nsteps))
			continue;
		if (!strcmp(run->recipe, "bf16"))
			return i;
		if (first < 0)
			first = i;
	}
	return first;
}

/* The plots of every case: loss, relative loss difference against the reference run (when
   some run stored a loss), grad norm. */
int lks_case_plots(struct lks_report *r, const char *case_name)
{
	int ref = lks_loss_reference(r, case_name);

	if (lks_case_plot(r, case_name, LKS_SERIES_LOSS, -1)
	    || (ref >= 0 && lks_case_plot(r, case_name, LKS_SERIES_RELDIFF, ref)))
		return -1;
	return lks_case_plot(r, case_name, LKS_SERIES_GRAD_NORM, -1);
}
