/*
 * report.c: 'lockstep report' writes index.html and report.md of one suite (report.h).
 *
 * Everything is read back from the store: the runs of the suite and their per-step rows,
 * the check verdicts, per-tensor stats for the FP8 and heatmap plots (through run_trace,
 * as the checks read them), and for the trend the runs of earlier suites. Plots: for each
 * one a data file and a script (terminal, output and variables, then the template from
 * reports/) go to a scratch folder, gnuplot runs as a child process with terminal svg,
 * and the SVG is inlined in the page and kept beside report.md.
 *
 * The whole report is written into a new folder beside the one asked for, with the scratch
 * folder inside it, and swapped in when complete (harness/base/atomic_file.h): the report path
 * holds the previous report or the new one at every instant, and a killed writer's folder
 * is removed by the next report of that path. Only a folder that holds a report and
 * nothing else is replaced.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "harness/base/atomic_file.h"
#include "harness/store/fingerprint.h"
#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "harness/report/report.h"
#include "harness/store/run_trace.h"
#include "kernels/err.h"

/* Room for the scratch folder's path, and for a path of a file in it or beside it (the
   folder's, a name of up to 300 bytes). */
#define LKS_REPORT_DIR_MAX 1200
#define LKS_REPORT_PATH 1600

/* A run of the suite with its per-step means over ranks (loss, grad norm, step time). */
struct lks_rrun {
	int64_t id;
	char *case_name, *run_name, *recipe, *options, *status, *fingerprint, *case_text;
	int world_size;
	int nsteps;
	double *loss, *gnorm, *time;
};

struct lks_rcheck {
	lks_check_rec rec;        /* strings owned */
	double rtol;              /* from the case text; NaN: unknown or not a close check */
	char metric[64];
	int expect_fail;          /* from the case text: a planted fault's check */
	char planted[200];        /* where the case says it must fail, in words */
};

struct lks_report {
	lks_store *s;
	int64_t suite;
	const char *dir;          /* the new report folder, swapped in when complete */
	const lks_report_opts *o;
	char tmp[LKS_REPORT_DIR_MAX];  /* scratch: data, scripts, gnuplot's output; inside dir */
	FILE *html, *md;
	struct lks_rrun *runs;
	int nruns;
	struct lks_rcheck *checks;
	int nchecks;
	lks_report_info *info;
};

static char *lks_dup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* A text built with stdio (open_memstream), read once it is done. */
struct lks_text {
	char *buf;
	size_t len;
	FILE *f;
};

static int lks_text_open(struct lks_text *t)
{
	t->buf = NULL;
	t->f = open_memstream(&t->buf, &t->len);
	return t->f ? 0 : lks_err("out of memory");
}

/* The text; NULL when it could not be kept (out of memory). */
static const char *lks_text_done(struct lks_text *t)
{
	int bad = t->f && fclose(t->f) != 0;

	t->f = NULL;
	return bad || !t->buf ? NULL : t->buf;
}

static void lks_text_free(struct lks_text *t)
{
	if (t->f)
		fclose(t->f);
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

/* ---- escaping ---- */

static void lks_html(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* Text as Markdown (CommonMark, GitHub's tables) that a viewer shows as this text and
   nothing else: what would start HTML or an entity as an entity; after a backslash, what
   has a meaning inline (code, emphasis, links, strikethrough, the end of a table cell or
   a heading) and, in text that starts a block (block: a paragraph), what would make it a
   list or a setext line; line breaks and other control characters as spaces. */
static void lks_md(FILE *f, const char *s, int block)
{
	int digits = block;       /* only digits so far: "1." would start a list */

	for (const char *p = s; p && *p; p++) {
		char c = *p;

		if (c == '<' || c == '>' || c == '&')
			fputs(c == '<' ? "&lt;" : c == '>' ? "&gt;" : "&amp;", f);
		else if ((unsigned char)c < 0x20 || c == 0x7f)
			fputc(' ', f);
		else if (strchr("\\`*_[]|~#", c) || (block && p == s && strchr("-+=", c))
		         || (digits && p > s && (c == '.' || c == ')')))
			fprintf(f, "\\%c", c);
		else
			fputc(c, f);
		digits = digits && c >= '0' && c <= '9';
	}
}

/* A name safe in a file name and inside a gnuplot string: other characters become '_'. */
static void lks_safe_name(char *out, size_t size, const char *s)
{
	size_t i = 0;

	for (; s && *s && i + 1 < size; s++)
		out[i++] = (strchr("-_.", *s) || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z')
		            || (*s >= 'A' && *s <= 'Z')) ? *s : '_';
	out[i] = 0;
}

/* One row of a table in both outputs: cells[0..n), cls: a CSS class per cell or NULL. */
static void lks_row(struct lks_report *r, const char *tr_class, const char *const *cells,
                    const char *const *cls, int n)
{
	fprintf(r->html, tr_class ? "<tr class=\"%s\">" : "<tr>", tr_class);
	fputs("|", r->md);
	for (int i = 0; i < n; i++) {
		if (cls && cls[i])
			fprintf(r->html, "<td class=\"%s\">", cls[i]);
		else
			fputs("<td>", r->html);
		lks_html(r->html, cells[i]);
		fputs("</td>", r->html);
		fputc(' ', r->md);
		lks_md(r->md, cells[i], 0);
		fputs(" |", r->md);
	}
	fputs("</tr>\n", r->html);
	fputs("\n", r->md);
}

static void lks_table_head(struct lks_report *r, const char *const *heads, int n)
{
	fputs("<table>\n<tr>", r->html);
	fputs("\n|", r->md);
	for (int i = 0; i < n; i++) {
		fputs("<th>", r->html);
		lks_html(r->html, heads[i]);
		fputs("</th>", r->html);
		fputc(' ', r->md);
		lks_md(r->md, heads[i], 0);
		fputs(" |", r->md);
	}
	fputs("</tr>\n", r->html);
	fputs("\n|", r->md);
	for (int i = 0; i < n; i++)
		fputs("---|", r->md);
	fputs("\n", r->md);
}

static void lks_table_end(struct lks_report *r)
{
	fputs("</table>\n", r->html);
	fputs("\n", r->md);
}

static void lks_heading(struct lks_report *r, int level, const char *text)
{
	fprintf(r->html, "<h%d>", level);
	lks_html(r->html, text);
	fprintf(r->html, "</h%d>\n", level);
	fprintf(r->md, "\n%.*s ", level, "####");
	lks_md(r->md, text, 0);
	fputs("\n\n", r->md);
}

/* A paragraph in both outputs; note: in the muted style. */
static void lks_para(struct lks_report *r, int note, const char *text)
{
	fputs(note ? "<p class=\"note\">" : "<p>", r->html);
	lks_html(r->html, text);
	fputs("</p>\n", r->html);
	fputs(note ? "_" : "", r->md);
	lks_md(r->md, text, 1);
	fputs(note ? "_\n\n" : "\n\n", r->md);
}

/* ---- reading the suite ---- */

static int lks_collect_run(void *arg, const lks_run_rec *rec)
{
	struct lks_report *r = arg;
	struct lks_rrun *run, *more;

	if (rec->info.suite_id != r->suite)
		return 0;
	if (!(more = realloc(r->runs, (size_t)(r->nruns + 1) * sizeof(*more))))
		return lks_err("out of memory");
	r->runs = more;
	run = &r->runs[r->nruns++];
	memset(run, 0, sizeof(*run));
	run->id = rec->run_id;
	run->world_size = rec->info.world_size;
	run->case_name = lks_dup(rec->info.case_name);
	run->run_name = lks_dup(rec->info.run_name);
	run->recipe = lks_dup(rec->info.recipe);
	run->options = lks_dup(rec->info.options);
	run->status = lks_dup(rec->status);
	run->fingerprint = lks_dup(rec->info.fingerprint);
	run->case_text = lks_dup(rec->info.case_text);
	if (!run->case_name || !run->run_name || !run->recipe || !run->status)
		return lks_err("out of memory");
	return 0;
}

/* The run's loss and step time as means over its ranks, its grad norm the lowest rank's
   (it is global: the same on every rank), per step; NaN where a step has no row. */
static int lks_load_steps(struct lks_report *r, struct lks_rrun *run)
{
	lks_step_row *rows = NULL;
	int n = 0, cap, *cnt = NULL, rc = -1;

	if (lks_store_get_steps(r->s, run->id, -1, NULL, 0, &n))
		return -1;
	cap = n;
	if (n == 0)
		return 0;
	if (!(rows = malloc((size_t)cap * sizeof(*rows))))
		return lks_err("out of memory");
	if (lks_store_get_steps(r->s, run->id, -1, rows, cap, &n))
		goto out;
	run->nsteps = rows[n - 1].step + 1;  /* rows come by (step, rank) */
	run->loss = calloc((size_t)run->nsteps, sizeof(double));
	run->gnorm = calloc((size_t)run->nsteps, sizeof(double));
	run->time = calloc((size_t)run->nsteps, sizeof(double));
	cnt = calloc((size_t)run->nsteps, sizeof(int));
	if (!run->loss || !run->gnorm || !run->time || !cnt) {
		lks_err("out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		int s = rows[i].step;

		if (s < 0 || s >= run->nsteps)
			continue;
		if (cnt[s]++ == 0)
			run->gnorm[s] = rows[i].grad_norm;
		run->loss[s] += rows[i].loss;
		run->time[s] += rows[i].step_time;
	}
	for (int s = 0; s < run->nsteps; s++) {
		if (cnt[s]) {
			run->loss[s] /= cnt[s];
			run->time[s] /= cnt[s];
		} else {
			run->loss[s] = run->gnorm[s] = run->time[s] = NAN;
		}
	}
	rc = 0;
out:
	free(rows);
	free(cnt);
	return rc;
}

static int lks_collect_check(void *arg, const lks_check_rec *rec)
{
	struct lks_report *r = arg;
	struct lks_rcheck *c, *more;

	if (!(more = realloc(r->checks, (size_t)(r->nchecks + 1) * sizeof(*more))))
		return lks_err("out of memory");
	r->checks = more;
	c = &r->checks[r->nchecks++];
	memset(c, 0, sizeof(*c));
	c->rec = *rec;
	c->rec.case_name = lks_dup(rec->case_name);
	c->rec.check_name = lks_dup(rec->check_name);
	c->rec.kind = lks_dup(rec->kind);
	c->rec.verdict = lks_dup(rec->verdict);
	c->rec.tensor = lks_dup(rec->tensor);
	c->rec.field = lks_dup(rec->field);
	c->rec.message = lks_dup(rec->message);
	c->rtol = NAN;
	if (!c->rec.case_name || !c->rec.check_name || !c->rec.kind || !c->rec.verdict)
		return lks_err("out of memory");
	return 0;
}

/* A place (step, rank, tensor; -1 or NULL: not given) in words, "" when none is given. */
static void lks_place(char *buf, size_t size, int step, int rank, const char *tensor)
{
	int n = 0;

	buf[0] = 0;
	if (step >= 0)
		n += snprintf(buf + n, size - (size_t)n, "step %d", step);
	if (rank >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, "%srank %d", n ? ", " : "", rank);
	if (tensor && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "%s%s", n ? ", " : "", tensor);
}

/* The --set overrides a run was made with, from its stored options (the runner appends
   " set: " and the overrides joined by blanks). A value may hold blanks ("inject=bitflip
   step=3 ..."), so the text is cut only at a blank followed by a section's name ("run.",
   "check.", ...); a value with such a word in it cannot be told apart. Cuts *text (owned by
   the caller) into sets[0..*n), at most max (later ones are left out). */
static void lks_stored_sets(char *text, const char **sets, int max, int *n)
{
	static const char *const sections[] = { "case.", "model.", "optim.", "run.", "check." };
	char *p = strstr(text, " set: ");

	*n = 0;
	if (!p)
		return;
	for (p += 6; *p && *n < max;) {
		char *cut = p;

		sets[(*n)++] = p;
		for (cut = strchr(p, ' '); cut; cut = strchr(cut + 1, ' ')) {
			size_t i = 0;

			while (i < sizeof(sections) / sizeof(sections[0])
			       && strncmp(cut + 1, sections[i], strlen(sections[i])))
				i++;
			if (i < sizeof(sections) / sizeof(sections[0]))
				break;
		}
		if (!cut)
			break;
		*cut = 0;
		p = cut + 1;
	}
}

/* The rtol and metric of the case's close checks, and which checks prove a planted fault:
   the checks table keeps verdicts; the tolerances and expectations are in the case text
   stored with every run, with the --set overrides it was run with. A text that no longer
   parses (an older case format) leaves them unknown: the band is then not drawn. */
static void lks_check_tolerances(struct lks_report *r, const struct lks_rrun *run)
{
	char safe[128], path[LKS_REPORT_PATH], *options;
	const char *sets[64];
	int nsets = 0;
	lks_case c;
	FILE *f;

	if (!run->case_text)
		return;
	lks_safe_name(safe, sizeof(safe), run->case_name);
	snprintf(path, sizeof(path), "%s/%s.ini", r->tmp, safe);
	if (!(f = fopen(path, "w")))
		return;
	fputs(run->case_text, f);
	fclose(f);
	options = lks_dup(run->options);
	if (options)
		lks_stored_sets(options, sets, 64, &nsets);
	if (lks_case_load(path, sets, nsets, &c) == 0) {
		for (int i = 0; i < r->nchecks; i++) {
			struct lks_rcheck *k = &r->checks[i];

			if (strcmp(k->rec.case_name, run->case_name) != 0)
				continue;
			for (int j = 0; j < c.nchecks; j++) {
				const lks_check_cfg *cc = &c.checks[j];

				if (strcmp(cc->name, k->rec.check_name) != 0)
					continue;
				if (cc->kind == LKS_CHECK_CLOSE) {
					k->rtol = cc->rtol;
					snprintf(k->metric, sizeof(k->metric), "%s", cc->metric);
				}
				if (cc->expect_fail) {
					k->expect_fail = 1;
					lks_place(k->planted, sizeof(k->planted), cc->exp_step, cc->exp_rank,
					          cc->exp_tensor[0] ? cc->exp_tensor : NULL);
				}
			}
		}
		lks_case_release(&c);
	}
	free(options);
	unlink(path);
}

/* ---- gnuplot ---- */

/* Runs the gnuplot program with args; its output goes to tmp/gnuplot.log. The exit
   status, 127 when it could not be started, -1 when fork failed. On Linux gnuplot dies
   with this process, so that a killed report leaves nobody writing into its folder. */
static int lks_gnuplot(struct lks_report *r, const char *arg)
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

/* The first line of gnuplot's output with a message, for the page. */
static void lks_gnuplot_error(struct lks_report *r, char *buf, size_t size)
{
	char log[LKS_REPORT_PATH], line[256];
	FILE *f;

	snprintf(buf, size, "gnuplot failed");
	snprintf(log, sizeof(log), "%s/gnuplot.log", r->tmp);
	if (!(f = fopen(log, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strstr(line, "rror") || strstr(line, "line ")) {
			snprintf(buf, size, "gnuplot: %s", line);
			break;
		}
	}
	fclose(f);
}

static char *lks_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0
	    && (buf = malloc((size_t)n + 1))) {
		*len = fread(buf, 1, (size_t)n, f);
		buf[*len] = 0;
	}
	fclose(f);
	return buf;
}

static int lks_write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return lks_err("cannot write '%s': %s", path, strerror(errno));
	ok = fwrite(data, 1, len, f) == len;
	ok &= fclose(f) == 0;
	return ok ? 0 : lks_err("cannot write '%s'", path);
}

/* What one plot is: its template, where it goes, and the words around it. */
struct lks_plot_spec {
	const char *kind;         /* the template reports/<kind>.gp */
	const char *tag;          /* NULL, or what tells plots of one kind in a case apart */
	const char *title;        /* the heading above the plot */
	const char *caption;      /* NULL, or a paragraph below it (a line in report.md) */
	int height;               /* of the SVG in pixels; 0: 380 */
};

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

/* The plot's heading in both outputs and its anchor, plot-<case>-<kind>[-<tag>], by which
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
	return fclose(f) == 0 ? 0 : lks_err("cannot write '%s'", gp);
}

/*
 * One plot: data (blocks of lines, one per series) and vars (gnuplot assignments) for the
 * template p->kind; the SVG goes inline into the page and to dir/<name>.svg for report.md,
 * name being <case>_<kind>[_<tag>]. A plot that fails is said in the page.
 */
static int lks_plot(struct lks_report *r, const char *case_name, const struct lks_plot_spec *p,
                    const char *data, const char *vars)
{
	char safe[128], tag[128], name[300], err[300];
	char dat[LKS_REPORT_PATH], gp[LKS_REPORT_PATH], svg[LKS_REPORT_PATH], out[LKS_REPORT_PATH];
	char *text = NULL, *sharp = NULL;
	size_t len = 0;
	int st;

	lks_safe_name(safe, sizeof(safe), case_name);
	lks_safe_name(tag, sizeof(tag), p->tag);
	snprintf(name, sizeof(name), "%s_%s%s%s", safe, p->kind, p->tag ? "_" : "", tag);
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

/* ---- one case ---- */

static const char *lks_fmt(char *buf, size_t size, const char *fmt, double v)
{
	if (isnan(v))
		return "";
	snprintf(buf, size, fmt, v);
	return buf;
}

static void lks_case_runs(struct lks_report *r, const char *case_name)
{
	static const char *const heads[] = { "run", "recipe", "options", "ranks", "steps",
	                                     "status", "first loss", "final loss" };
	static const char *const cls[] = { NULL, NULL, NULL, "num", "num", NULL, "num", "num" };

	lks_table_head(r, heads, 8);
	for (int i = 0; i < r->nruns; i++) {
		const struct lks_rrun *run = &r->runs[i];
		char ws[16], ns[16], l0[32], l1[32];
		const char *cells[8];

		if (strcmp(run->case_name, case_name) != 0)
			continue;
		snprintf(ws, sizeof(ws), "%d", run->world_size);
		snprintf(ns, sizeof(ns), "%d", run->nsteps);
		cells[0] = run->run_name;
		cells[1] = run->recipe;
		cells[2] = run->options ? run->options : "";
		cells[3] = ws;
		cells[4] = ns;
		cells[5] = run->status;
		cells[6] = run->nsteps ? lks_fmt(l0, sizeof(l0), "%.6f", run->loss[0]) : "";
		cells[7] = run->nsteps ? lks_fmt(l1, sizeof(l1), "%.6f", run->loss[run->nsteps - 1]) : "";
		lks_row(r, NULL, cells, cls, 8);
	}
	lks_table_end(r);
}

static const struct lks_rrun *lks_run_by_id(const struct lks_report *r, int64_t id)
{
	for (int i = 0; i < r->nruns; i++)
		if (r->runs[i].id == id)
			return &r->runs[i];
	return NULL;
}

static const char *lks_run_name(const struct lks_report *r, int64_t id)
{
	const struct lks_rrun *run = lks_run_by_id(r, id);

	return run ? run->run_name : "";
}

static void lks_value(char *buf, size_t size, const lks_check_rec *c, int b)
{
	buf[0] = 0;
	if (c->type == LKS_VALUE_REAL)
		snprintf(buf, size, "%.9g", b ? c->value_b : c->value_a);
	else if (c->type == LKS_VALUE_INT && c->field && !strcmp(c->field, "hash"))
		snprintf(buf, size, "%016llx", (unsigned long long)(b ? c->ivalue_b : c->ivalue_a));
	else if (c->type == LKS_VALUE_INT)
		snprintf(buf, size, "%lld", (long long)(b ? c->ivalue_b : c->ivalue_a));
}

static void lks_case_checks(struct lks_report *r, const char *case_name)
{
	static const char *const heads[] = { "check", "kind", "runs", "verdict", "step", "rank",
	                                     "tensor", "field", "a", "b", "abs err", "rel err",
	                                     "ulp", "message" };
	static const char *const cls[] = { NULL, NULL, NULL, NULL, "num", "num", "mono", NULL,
	                                   "num", "num", "num", "num", "num", NULL };
	int any = 0;

	for (int i = 0; i < r->nchecks; i++) {
		const lks_check_rec *c = &r->checks[i].rec;
		char runs[160], step[16], rank[16], va[48], vb[48], ae[32], re[32], ulp[24];
		const char *cells[14], *vcls[14];
		int bad = !strcmp(c->verdict, "fail") || !strcmp(c->verdict, "unexpected_pass");

		if (strcmp(c->case_name, case_name) != 0)
			continue;
		if (!any++)
			lks_table_head(r, heads, 14);
		snprintf(runs, sizeof(runs), "%s%s%s", lks_run_name(r, c->run_a), c->run_b ? " vs " : "",
		         c->run_b ? lks_run_name(r, c->run_b) : "");
		snprintf(step, sizeof(step), c->step >= 0 ? "%d" : "", c->step);
		snprintf(rank, sizeof(rank), c->rank >= 0 ? "%d" : "", c->rank);
		lks_value(va, sizeof(va), c, 0);
		lks_value(vb, sizeof(vb), c, 1);
		snprintf(ulp, sizeof(ulp), c->ulp >= 0 ? "%lld" : "", (long long)c->ulp);
		cells[0] = c->check_name;
		cells[1] = c->kind;
		cells[2] = runs;
		cells[3] = c->verdict;
		cells[4] = step;
		cells[5] = rank;
		cells[6] = c->tensor ? c->tensor : "";
		cells[7] = c->field ? c->field : "";
		cells[8] = va;
		cells[9] = vb;
		cells[10] = lks_fmt(ae, sizeof(ae), "%.3g", c->abs_err);
		cells[11] = lks_fmt(re, sizeof(re), "%.3g", c->rel_err);
		cells[12] = ulp;
		cells[13] = !strcmp(c->verdict, "pass") ? "" : c->message ? c->message : "";
		memcpy(vcls, cls, sizeof(vcls));
		vcls[3] = c->verdict;  /* the verdict's colour */
		lks_row(r, bad ? "bad" : NULL, cells, vcls, 14);
	}
	if (any)
		lks_table_end(r);
	else
		lks_para(r, 1, "no check verdicts stored for this case");
}

/* The reference of the relative-difference plot: the first bf16 run, else the first. */
static int lks_reference(const struct lks_report *r, const char *case_name)
{
	int first = -1;

	for (int i = 0; i < r->nruns; i++) {
		if (strcmp(r->runs[i].case_name, case_name) != 0)
			continue;
		if (!strcmp(r->runs[i].recipe, "bf16"))
			return i;
		if (first < 0)
			first = i;
	}
	return first;
}

/* Adds the series of one run to data and its name to names. */
static void lks_series(FILE *data, FILE *names, const struct lks_rrun *run, const double *v,
                       int n, int *nseries)
{
	char safe[128];

	lks_safe_name(safe, sizeof(safe), run->run_name);
	fprintf(names, "%s%s", *nseries ? " " : "", safe);
	fprintf(data, "# %s\n", safe);
	for (int s = 0; s < n; s++) {
		if (isfinite(v[s]))
			fprintf(data, "%d %.17g\n", s, v[s]);
		else
			fprintf(data, "%d NaN\n", s);
	}
	fputs("\n\n", data);  /* two blank lines: the next gnuplot index */
	(*nseries)++;
}

/* Where an exact agreement is drawn on the log scale, which has no 0; far below any
   tolerance a check uses and above the double rounding of a loss near 1 (1e-16). */
#define LKS_REPORT_FLOOR 1e-12

static int lks_case_plots(struct lks_report *r, const char *case_name)
{
	char *bufs[2][2] = { { 0 } };
	size_t lens[2][2];
	int ref = lks_reference(r, case_name), rc = 0;
	const char *kinds[] = { "loss", "gradnorm" };
	const char *captions[] = { "loss per step (mean over ranks)", "grad norm per step" };

	/* (1) loss and (3) grad norm: every run */
	for (int p = 0; p < 2 && rc == 0; p++) {
		FILE *data = open_memstream(&bufs[0][0], &lens[0][0]);
		FILE *names = open_memstream(&bufs[0][1], &lens[0][1]);
		char vars[4096], title[300];
		int n = 0;

		if (!data || !names)
			return lks_err("out of memory");
		for (int i = 0; i < r->nruns; i++)
			if (!strcmp(r->runs[i].case_name, case_name) && r->runs[i].nsteps)
				lks_series(data, names, &r->runs[i], p ? r->runs[i].gnorm : r->runs[i].loss,
				           r->runs[i].nsteps, &n);
		fclose(data);
		fclose(names);
		lks_safe_name(title, sizeof(title), case_name);
		snprintf(vars, sizeof(vars), "n = %d\nnames = \"%s\"\ntitle_text = '%s: %s'\n", n,
		         bufs[0][1], title, captions[p]);
		if (n) {
			struct lks_plot_spec spec = { .kind = kinds[p], .title = captions[p] };

			rc = lks_plot(r, case_name, &spec, bufs[0][0], vars);
		}
		free(bufs[0][0]);
		free(bufs[0][1]);
		bufs[0][0] = bufs[0][1] = NULL;
		if (p == 0 && rc == 0 && ref >= 0) {
			/* (2) relative loss difference against the reference */
			const struct lks_rrun *b = &r->runs[ref];
			FILE *d = open_memstream(&bufs[1][0], &lens[1][0]);
			FILE *nm = open_memstream(&bufs[1][1], &lens[1][1]);
			char tols[256] = "", caption[300], tcase[128];
			int ntol = 0, m = 0;

			if (!d || !nm)
				return lks_err("out of memory");
			for (int i = 0; i < r->nruns; i++) {
				const struct lks_rrun *a = &r->runs[i];
				int ns = a->nsteps < b->nsteps ? a->nsteps : b->nsteps;
				double *rel;

				if (i == ref || strcmp(a->case_name, case_name) != 0 || ns == 0)
					continue;
				if (!(rel = malloc((size_t)ns * sizeof(double))))
					return lks_err("out of memory");
				for (int s = 0; s < ns; s++) {
					rel[s] = fabs(a->loss[s] - b->loss[s]) / fabs(b->loss[s]);
					if (rel[s] < LKS_REPORT_FLOOR)
						rel[s] = LKS_REPORT_FLOOR;
				}
				lks_series(d, nm, a, rel, ns, &m);
				free(rel);
			}
			fclose(d);
			fclose(nm);
			/* the rtol of the close checks on the loss against the reference, each once */
			for (int i = 0; i < r->nchecks; i++) {
				const struct lks_rcheck *k = &r->checks[i];
				char t[32];

				if (strcmp(k->rec.case_name, case_name) || !(k->rtol > 0)
				    || strcmp(k->metric, "loss")
				    || (k->rec.run_a != b->id && k->rec.run_b != b->id))
					continue;
				snprintf(t, sizeof(t), "%.17g", k->rtol);
				if (!strstr(tols, t) && strlen(tols) + strlen(t) + 2 < sizeof(tols)) {
					if (ntol++)
						strcat(tols, ", ");
					strcat(tols, t);
				}
			}
			snprintf(caption, sizeof(caption),
			         "relative loss difference against '%s' (an exact agreement is drawn at %g)",
			         b->run_name, LKS_REPORT_FLOOR);
			lks_safe_name(tcase, sizeof(tcase), case_name);
			snprintf(vars, sizeof(vars), "n = %d\nnames = \"%s\"\nntol = %d\n%s%d] = [%s]\n"
			         "title_text = '%s: |loss - loss(%s)| / |loss(%s)|'\n", m, bufs[1][1], ntol,
			         ntol ? "array tols[" : "# tols[", ntol, tols, tcase, b->run_name, b->run_name);
			if (m) {
				struct lks_plot_spec spec = { .kind = "reldiff", .title = caption };

				rc = lks_plot(r, case_name, &spec, bufs[1][0], vars);
			} else {
				lks_para(r, 1, "one run only: no relative difference to plot");
			}
			free(bufs[1][0]);
			free(bufs[1][1]);
			bufs[1][0] = bufs[1][1] = NULL;
		}
	}
	return rc;
}

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
	return strcmp(recipe, "bf16") != 0 && strcmp(recipe, "fp32") != 0;
}

/* Rank 0's amax and scale of every tensor of a run per step. */
struct lks_scales {
	lks_run_trace t;
	float *amax, *scale;      /* (nt, nsteps) NaN where no row was stored */
	int *same;                /* (nt) the earlier tensor drawn in its place; -1: drawn
	                             itself; -2: no scale at any step, not drawn */
	int xbin;                 /* steps a point */
};

static void lks_scales_release(struct lks_scales *x)
{
	lks_run_trace_release(&x->t);
	free(x->amax);
	free(x->scale);
	free(x->same);
}

/* A tensor whose amax and scale are the bits of an earlier one's at every step is drawn
   once: with tensorwise scales the weight of dgrad is the forward's weight, and a
   recompute reuses the forward's scales, so half the lines would hide the other half. */
static void lks_scales_dedupe(struct lks_scales *x)
{
	size_t ns = (size_t)x->t.nsteps;

	for (int i = 0; i < x->t.nt; i++) {
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

static int lks_scales_load(lks_store *s, int64_t run_id, struct lks_scales *x)
{
	lks_run_trace *t = &x->t;
	size_t n;

	if (lks_run_trace_load(s, run_id, t))
		return -1;
	n = (size_t)t->nt * t->nsteps + 1;
	x->amax = malloc(n * sizeof(float));
	x->scale = malloc(n * sizeof(float));
	x->same = malloc(((size_t)t->nt + 1) * sizeof(int));
	if (!x->amax || !x->scale || !x->same)
		return lks_err("out of memory");
	for (int step = 0; step < t->nsteps; step++) {
		if (lks_run_trace_step(s, t, step))
			return -1;
		for (int i = 0; i < t->nt; i++) {
			const lks_stat_row *row = lks_run_trace_row(t, 0, i);
			size_t at = (size_t)i * t->nsteps + step;

			x->amax[at] = row ? row->amax : NAN;
			x->scale[at] = row ? row->scale : NAN;
		}
	}
	lks_scales_dedupe(x);
	x->xbin = (t->nsteps + LKS_REPORT_MAX_POINTS - 1) / LKS_REPORT_MAX_POINTS;
	return 0;
}

/* A tensor's name as a word of the key; a recomputed activation has the forward's name. */
static void lks_tensor_word(char *out, size_t size, const lks_run_trace *t, int i)
{
	char safe[128];

	lks_safe_name(safe, sizeof(safe), t->names[i]);
	snprintf(out, size, "%s%s", safe, t->phases[i] == LKS_PHASE_RECOMPUTE ? "-recompute" : "");
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
	int ns = x->t.nsteps;
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
	const lks_run_trace *t = &x->t;
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
static void lks_scales_caption(FILE *f, const struct lks_rrun *run, const struct lks_scales *x,
                               int nscaled, int ndrawn, int nmore, const char *same)
{
	fprintf(f, "Run '%s' (%s), rank 0: amax (top) and FP8 scale (bottom) per step of the %d "
	        "tensors with a scale, of %d traced. The amax of a quantized tensor is that of its "
	        "codes, in scaled units: at the format's largest value (dashed) the range is used to "
	        "its top; an axiswise scale is drawn as its smallest.", run->run_name, run->recipe,
	        nscaled, x->t.nt);
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

static int lks_fp8_plot(struct lks_report *r, const struct lks_rrun *run)
{
	struct lks_scales x = { 0 };
	struct lks_text data = { 0 }, names = { 0 }, same = { 0 }, caption = { 0 }, vars = { 0 };
	const char *nm, *sm, *cap, *vs, *dat;
	char title[300], tcase[128];
	int nscaled, ndrawn, nmore, rc = -1;

	if (lks_text_open(&data) || lks_text_open(&names) || lks_text_open(&same)
	    || lks_text_open(&caption) || lks_text_open(&vars) || lks_scales_load(r->s, run->id, &x))
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

		snprintf(title, sizeof(title), "FP8 amax and scale of run '%s' (rank 0)", run->run_name);
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
static int lks_case_fp8_plots(struct lks_report *r, const char *case_name)
{
	for (int i = 0; i < r->nruns; i++) {
		const struct lks_rrun *run = &r->runs[i];

		if (!strcmp(run->case_name, case_name) && run->nsteps && lks_is_fp8(run->recipe)
		    && lks_fp8_plot(r, run))
			return -1;
	}
	return 0;
}

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
	lks_run_trace a, b;
	int *map;                 /* (a.nt) the seq in b of a's tensor (name, phase,
	                             occurrence); -1: b has none */
	int *rows;                /* (nrows) the seqs in a of the tensors both trace */
	int nrows, nsteps, W;     /* W: the ranks both runs have, compared rank by rank */
	int ybin, xbin, ny, nx;   /* tensors per row, steps per column; rows, columns */
	double *v;                /* (ny, nx) log10 relative difference, or a band */
	int div_step, div_row, div_rank;  /* the first divergence; div_step -1: none */
	const char *div_field;
};

static void lks_heat_release(struct lks_heat *h)
{
	lks_run_trace_release(&h->a);
	lks_run_trace_release(&h->b);
	free(h->map);
	free(h->rows);
	free(h->v);
}

static int lks_ceil_div(int a, int b)
{
	return (a + b - 1) / b;
}

/* The tensors both runs trace, paired as the bitwise check pairs them, and the grid. */
static int lks_heat_load(lks_store *s, int64_t run_a, int64_t run_b, struct lks_heat *h)
{
	lks_run_trace *a = &h->a;

	h->div_step = -1;
	if (lks_run_trace_load(s, run_a, a) || lks_run_trace_load(s, run_b, &h->b))
		return -1;
	h->map = malloc(((size_t)a->nt + 1) * sizeof(int));
	h->rows = malloc(((size_t)a->nt + 1) * sizeof(int));
	if (!h->map || !h->rows)
		return lks_err("out of memory");
	for (int i = 0; i < a->nt; i++)
		if ((h->map[i] = lks_run_trace_find(&h->b, a->names[i], a->phases[i], a->occ[i])) >= 0)
			h->rows[h->nrows++] = i;
	h->nsteps = a->nsteps < h->b.nsteps ? a->nsteps : h->b.nsteps;
	h->W = a->W < h->b.W ? a->W : h->b.W;
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
   divergence. */
static void lks_heat_cell(struct lks_heat *h, int step, int k)
{
	double *cell = &h->v[(size_t)(k / h->ybin) * h->nx + step / h->xbin];
	int i = h->rows[k];
	lks_check_result res;

	lks_check_result_init(&res);
	for (int r = 0; r < h->W; r++) {
		const lks_stat_row *ra = lks_run_trace_row(&h->a, r, i);
		const lks_stat_row *rb = lks_run_trace_row(&h->b, r, h->map[i]);
		double v;

		if (ra && rb && !lks_check_row_diff(ra, rb, &res))
			continue;
		v = ra && rb ? lks_heat_error(ra->l2, rb->l2) : LKS_HEAT_NO_ROW;
		*cell = v > *cell ? v : *cell;
		if (h->div_step < 0) {
			h->div_step = step;
			h->div_row = k;
			h->div_rank = r;
			h->div_field = ra && rb ? res.field : "row";
		}
	}
}

static int lks_heat_fill(lks_store *s, struct lks_heat *h)
{
	for (int step = 0; step < h->nsteps; step++) {
		if (lks_run_trace_step(s, &h->a, step) || lks_run_trace_step(s, &h->b, step))
			return -1;
		for (int k = 0; k < h->nrows; k++)
			lks_heat_cell(h, step, k);
	}
	return 0;
}

/* The name of a tensor of a, for a label. */
static void lks_heat_name(char *out, size_t size, const struct lks_heat *h, int k)
{
	lks_tensor_word(out, size, &h->a, h->rows[k]);
}

/* The cells ('x y value', x the middle of the column's steps) and the variables of
   heatmap.gp: grid, row names, and where the divergence is circled. */
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
	fprintf(vars, "mark = %d\n", h->div_step >= 0);
	if (h->div_step < 0)
		return;
	lks_heat_name(name, sizeof(name), h, h->div_row);
	fprintf(vars, "mark_x = %.1f\nmark_y = %d\n"
	        "mark_text = 'first divergence: step %d, %s, rank %d (%s)'\n",
	        (h->div_step / h->xbin) * h->xbin + (h->xbin - 1) / 2.0, h->div_row / h->ybin,
	        h->div_step, name, h->div_rank, h->div_field);
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
	if (h->a.W != h->b.W)
		fprintf(f, " The runs have %d and %d ranks: rank against rank, the first %d; a rank's "
		        "activations and gradients cover other samples in each.", h->a.W, h->b.W, h->W);
	if (h->ybin > 1 || h->xbin > 1)
		fprintf(f, " Downsampled to stay legible: %d tensors share a row, %d steps a column, "
		        "each cell the largest error among them.", h->ybin, h->xbin);
	if (h->div_step >= 0) {
		lks_heat_name(name, sizeof(name), h, h->div_row);
		fprintf(f, " First divergence (circled; step, then tensor in execution order, then "
		        "rank, as the bitwise check finds it): step %d, tensor %s, rank %d, field %s.",
		        h->div_step, name, h->div_rank, h->div_field);
	} else {
		fprintf(f, " No divergence: the runs agree in every traced value of the tensors they "
		        "share.");
	}
	if (*checks)
		fprintf(f, " Checks of this pair: %s.", checks);
}

static int lks_heat_plot(struct lks_report *r, const struct lks_rrun *a, const struct lks_rrun *b,
                         const char *checks)
{
	struct lks_heat h = { 0 };
	struct lks_text data = { 0 }, vars = { 0 }, caption = { 0 };
	struct lks_plot_spec spec = { .kind = "heatmap" };
	const char *dat, *vs;
	char title[300], tag[300], tcase[128];
	int rc = -1;

	if (lks_heat_load(r->s, a->id, b->id, &h) || lks_heat_fill(r->s, &h))
		goto out;
	snprintf(title, sizeof(title), "tensor error heatmap: '%s' vs '%s'", a->run_name, b->run_name);
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
	snprintf(tag, sizeof(tag), "%s-vs-%s", a->run_name, b->run_name);
	spec.tag = tag;
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
static int lks_case_heatmaps(struct lks_report *r, const char *case_name)
{
	int ref = lks_reference(r, case_name), npairs = 0;
	char checks[1024];

	for (int i = 0; i < r->nchecks; i++) {
		const lks_check_rec *c = &r->checks[i].rec;
		const struct lks_rrun *a = lks_run_by_id(r, c->run_a), *b = lks_run_by_id(r, c->run_b);
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

/* ---- fingerprints: flat JSON objects of string values ---- */

static void lks_case_fingerprints(struct lks_report *r, const char *case_name)
{
	static const char *const heads[] = { "key", "run", "value" };
	const struct lks_rrun *first = NULL;
	int any = 0;

	/* keys of every run, compared with the first run's value of the same key */
	for (int i = 0; i < r->nruns; i++) {
		const struct lks_rrun *run = &r->runs[i];
		const char *p = run->fingerprint;
		char key[128], val[512], other[512];

		if (strcmp(run->case_name, case_name) || !run->fingerprint)
			continue;
		if (!first) {
			first = run;
			continue;
		}
		while (p && lks_fingerprint_json_next(&p, key, sizeof(key), val, sizeof(val))) {
			int has = lks_fingerprint_json_get(first->fingerprint, key, other, sizeof(other));
			const char *cells[3];

			if (has && !strcmp(val, other))
				continue;
			if (!any++)
				lks_table_head(r, heads, 3);
			cells[0] = key;
			cells[1] = first->run_name;
			cells[2] = has ? other : "(absent)";
			lks_row(r, NULL, cells, NULL, 3);
			cells[1] = run->run_name;
			cells[2] = val;
			lks_row(r, "bad", cells, NULL, 3);
		}
	}
	if (any)
		lks_table_end(r);
	else
		lks_para(r, 1, first ? "every run of this case has the same fingerprint"
		                     : "no fingerprint stored");
}

/* ---- trend: final loss and mean step time of each run name over recent suites ---- */

static const char lks_trend_sql[] =
	"SELECT r.run_name, r.suite_id, r.status,"
	" (SELECT avg(s.loss) FROM steps s WHERE s.run_id = r.run_id"
	"   AND s.step = (SELECT max(step) FROM steps WHERE run_id = r.run_id)),"
	" (SELECT max(step) + 1 FROM steps WHERE run_id = r.run_id),"
	" (SELECT avg(step_time) FROM steps WHERE run_id = r.run_id)"
	" FROM runs r WHERE r.case_name = ?1 AND r.suite_id IN"
	" (SELECT DISTINCT suite_id FROM runs WHERE case_name = ?1 AND suite_id <= ?2"
	"  ORDER BY suite_id DESC LIMIT ?3)"
	" ORDER BY r.run_name, r.suite_id, r.run_id";

static int lks_case_trend(struct lks_report *r, const char *case_name)
{
	static const char *const heads[] = { "run", "suite", "status", "steps", "final loss",
	                                     "mean step time (ms)" };
	static const char *const cls[] = { NULL, "num", NULL, "num", "num", "num" };
	sqlite3 *db = lks_store_db(r->s);
	sqlite3_stmt *st = NULL;
	int rc, any = 0;

	if (sqlite3_prepare_v2(db, lks_trend_sql, -1, &st, NULL) != SQLITE_OK)
		return lks_err("cannot read the trend: %s", sqlite3_errmsg(db));
	sqlite3_bind_text(st, 1, case_name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, r->suite);
	sqlite3_bind_int(st, 3, r->o->trend_suites > 0 ? r->o->trend_suites : 5);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char suite[24], steps[16], loss[32], ms[32];
		const char *cells[6];

		if (!any++)
			lks_table_head(r, heads, 6);
		snprintf(suite, sizeof(suite), "%lld", (long long)sqlite3_column_int64(st, 1));
		snprintf(steps, sizeof(steps), "%d", sqlite3_column_int(st, 4));
		cells[0] = (const char *)sqlite3_column_text(st, 0);
		cells[1] = suite;
		cells[2] = (const char *)sqlite3_column_text(st, 2);
		cells[3] = steps;
		cells[4] = sqlite3_column_type(st, 3) == SQLITE_NULL ? "NaN"
		           : lks_fmt(loss, sizeof(loss), "%.6f", sqlite3_column_double(st, 3));
		cells[5] = sqlite3_column_type(st, 5) == SQLITE_NULL ? ""
		           : lks_fmt(ms, sizeof(ms), "%.2f", 1e3 * sqlite3_column_double(st, 5));
		lks_row(r, NULL, cells, cls, 6);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return lks_err("cannot read the trend: %s", sqlite3_errmsg(db));
	if (any)
		lks_table_end(r);
	return 0;
}

static int lks_case_section(struct lks_report *r, const char *case_name, int have_gnuplot)
{
	char title[200];

	snprintf(title, sizeof(title), "case %s", case_name);
	fprintf(r->html, "<section id=\"case-");
	lks_html(r->html, case_name);
	fprintf(r->html, "\">\n");
	lks_heading(r, 2, title);
	lks_heading(r, 3, "runs");
	lks_case_runs(r, case_name);
	lks_heading(r, 3, "checks");
	lks_case_checks(r, case_name);
	if (have_gnuplot) {
		if (lks_case_plots(r, case_name))
			return -1;
	} else {
		lks_para(r, 1, "plots need gnuplot, which was not found (Debian: apt-get install "
		               "gnuplot-nox); the tables are complete without it");
	}
	if (have_gnuplot && (lks_case_fp8_plots(r, case_name) || lks_case_heatmaps(r, case_name)))
		return -1;
	lks_heading(r, 3, "fingerprint keys that differ between runs");
	lks_case_fingerprints(r, case_name);
	lks_heading(r, 3, "trend over recent suites");
	if (lks_case_trend(r, case_name))
		return -1;
	fputs("</section>\n", r->html);
	return 0;
}

/* ---- the page ---- */

/* The HTML template before (tail 0) or after (tail 1) its line @BODY@, with @TITLE@
   replaced by the escaped title. */
static int lks_template(struct lks_report *r, const char *title, int tail)
{
	char path[LKS_REPORT_PATH];
	size_t len;
	char *t, *body, *mark;

	snprintf(path, sizeof(path), "%s/report.html", r->o->templates);
	if (!(t = lks_slurp(path, &len)))
		return lks_err("cannot read the template '%s'", path);
	/* the marker alone on its line, so that a comment may name it */
	if (!(body = strstr(t, "\n@BODY@\n"))) {
		free(t);
		return lks_err("'%s' has no line '@BODY@'", path);
	}
	body[1] = 0;
	if (tail) {
		fputs(body + strlen("\n@BODY@\n"), r->html);
	} else {
		char *p = t;

		while ((mark = strstr(p, "@TITLE@"))) {
			fwrite(p, 1, (size_t)(mark - p), r->html);
			lks_html(r->html, title);
			p = mark + strlen("@TITLE@");
		}
		fputs(p, r->html);
	}
	free(t);
	return 0;
}

static int lks_suite_header(struct lks_report *r, char *title, size_t size)
{
	sqlite3 *db = lks_store_db(r->s);
	sqlite3_stmt *st = NULL;
	char cmd[1024] = "", started[64] = "", line[1200];

	if (sqlite3_prepare_v2(db, "SELECT command, started FROM suites WHERE suite_id = ?1", -1,
	                       &st, NULL) != SQLITE_OK)
		return lks_err("cannot read suite %lld: %s", (long long)r->suite, sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, r->suite);
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(cmd, sizeof(cmd), "%s", (const char *)sqlite3_column_text(st, 0));
		snprintf(started, sizeof(started), "%s", (const char *)sqlite3_column_text(st, 1));
	}
	sqlite3_finalize(st);
	snprintf(title, size, "lockstep report: suite %lld", (long long)r->suite);
	if (lks_template(r, title, 0))
		return -1;
	fputs("# ", r->md);
	lks_md(r->md, title, 0);
	fputs("\n\n", r->md);
	fputs("<h1>", r->html);
	lks_html(r->html, title);
	fputs("</h1>\n", r->html);
	snprintf(line, sizeof(line), "command: %s — started %s", cmd, started);
	lks_para(r, 0, line);
	return 0;
}

/* The cases of the suite, in the order their first run or check was stored. */
static int lks_case_names(struct lks_report *r, const char ***out, int *n)
{
	const char **names = calloc((size_t)(r->nruns + r->nchecks + 1), sizeof(char *));

	*n = 0;
	if (!names)
		return lks_err("out of memory");
	for (int i = 0; i < r->nruns + r->nchecks; i++) {
		const char *c = i < r->nruns ? r->runs[i].case_name : r->checks[i - r->nruns].rec.case_name;
		int seen = 0;

		for (int j = 0; j < *n && !seen; j++)
			seen = !strcmp(names[j], c);
		if (!seen)
			names[(*n)++] = c;
	}
	*out = names;
	return 0;
}

static void lks_overview(struct lks_report *r, const char **cases, int ncases)
{
	static const char *const heads[] = { "case", "runs", "checks", "failed", "verdict" };
	static const char *const cls[] = { NULL, "num", "num", "num", NULL };

	lks_heading(r, 2, "summary");
	lks_table_head(r, heads, 5);
	for (int c = 0; c < ncases; c++) {
		int nr = 0, nk = 0, nf = 0;
		char a[16], b[16], f[16];
		const char *cells[5], *vcls[5];

		for (int i = 0; i < r->nruns; i++)
			nr += !strcmp(r->runs[i].case_name, cases[c]);
		for (int i = 0; i < r->nchecks; i++) {
			const char *v = r->checks[i].rec.verdict;

			if (strcmp(r->checks[i].rec.case_name, cases[c]))
				continue;
			nk++;
			nf += !strcmp(v, "fail") || !strcmp(v, "unexpected_pass");
		}
		r->info->nchecks += nk;
		r->info->nfailed += nf;
		snprintf(a, sizeof(a), "%d", nr);
		snprintf(b, sizeof(b), "%d", nk);
		snprintf(f, sizeof(f), "%d", nf);
		cells[0] = cases[c];
		cells[1] = a;
		cells[2] = b;
		cells[3] = f;
		cells[4] = nf ? "fail" : "pass";
		memcpy(vcls, cls, sizeof(vcls));
		vcls[4] = cells[4];
		lks_row(r, nf ? "bad" : NULL, cells, vcls, 5);
	}
	lks_table_end(r);
}

/* Whether detection still works on this runner: every check that proves a planted fault
   (expect = fail), where the case planted it and where the check found it. A fault found
   elsewhere, or not found, is a failed check like any other; this table puts them side by
   side so that a reader sees the suite's power next to its verdicts. */
static void lks_planted(struct lks_report *r)
{
	static const char *const heads[] = { "case", "check", "kind", "planted at", "found at",
	                                     "verdict" };
	static const char *const cls[] = { NULL, NULL, NULL, "mono", "mono", NULL };
	char line[160];
	int n = 0, caught = 0;

	for (int i = 0; i < r->nchecks; i++) {
		n += r->checks[i].expect_fail;
		caught += r->checks[i].expect_fail && !strcmp(r->checks[i].rec.verdict, "expected_fail");
	}
	if (!n)
		return;
	r->info->nplanted = n;
	r->info->ncaught = caught;
	lks_heading(r, 2, "planted faults: detection on this runner");
	snprintf(line, sizeof(line), "%d of %d planted faults caught exactly where planted", caught, n);
	lks_para(r, 0, line);
	lks_table_head(r, heads, 6);
	for (int i = 0; i < r->nchecks; i++) {
		const struct lks_rcheck *k = &r->checks[i];
		const char *v = k->rec.verdict, *cells[6], *vcls[6];
		int ok = !strcmp(v, "expected_fail");
		char found[200];

		if (!k->expect_fail)
			continue;
		lks_place(found, sizeof(found), k->rec.step, k->rec.rank, k->rec.tensor);
		cells[0] = k->rec.case_name;
		cells[1] = k->rec.check_name;
		cells[2] = k->rec.kind;
		cells[3] = k->planted[0] ? k->planted : "anywhere";
		cells[4] = found[0] ? found : "not found";
		cells[5] = ok ? "caught" : !strcmp(v, "unexpected_pass") ? "missed"
		         : !strcmp(v, "fail") ? "found elsewhere" : v;
		memcpy(vcls, cls, sizeof(vcls));
		vcls[5] = ok ? "pass" : "fail";
		lks_row(r, ok ? NULL : "bad", cells, vcls, 6);
	}
	lks_table_end(r);
}

int lks_report_suite(lks_store *s, const char *which, int64_t *suite_id)
{
	sqlite3 *db = lks_store_db(s);
	sqlite3_stmt *st = NULL;
	int64_t want = 0;
	int rc;

	if (strcmp(which, "latest") != 0) {
		char *end;
		long long v = strtoll(which, &end, 10);

		if (end == which || *end || v <= 0) {
			lks_err("suite '%s' is neither 'latest' nor a suite id", which);
			return LKS_REPORT_NO_SUITE;
		}
		want = v;
	}
	if (sqlite3_prepare_v2(db, want ? "SELECT suite_id FROM suites WHERE suite_id = ?1"
	                                : "SELECT max(suite_id) FROM suites", -1, &st, NULL) != SQLITE_OK)
		return lks_err("cannot read the suites: %s", sqlite3_errmsg(db));
	if (want)
		sqlite3_bind_int64(st, 1, want);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*suite_id = sqlite3_column_int64(st, 0);
		rc = 0;
	} else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
		rc = want ? lks_err("no suite %lld", (long long)want)
		          : lks_err("no suite");
		rc = LKS_REPORT_NO_SUITE;
	} else {
		rc = lks_err("cannot read the suites: %s", sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	return rc;
}

static int lks_report_body(struct lks_report *r, int have_gnuplot)
{
	const char **cases = NULL;
	char title[1200];
	int ncases = 0, rc = -1;

	if (lks_store_get_runs(r->s, lks_collect_run, r)
	    || lks_store_get_checks(r->s, r->suite, lks_collect_check, r))
		return -1;
	for (int i = 0; i < r->nruns; i++) {
		if (lks_load_steps(r, &r->runs[i]))
			return -1;
		/* one parse per case: the tolerances of its close checks */
		if (i == 0 || strcmp(r->runs[i].case_name, r->runs[i - 1].case_name) != 0)
			lks_check_tolerances(r, &r->runs[i]);
	}
	if (lks_case_names(r, &cases, &ncases) || lks_suite_header(r, title, sizeof(title)))
		goto out;
	r->info->ncases = ncases;
	if (!have_gnuplot)
		lks_para(r, 1, "plots need gnuplot, which was not found: this report has the tables only");
	lks_overview(r, cases, ncases);
	lks_planted(r);
	for (int c = 0; c < ncases; c++)
		if (lks_case_section(r, cases[c], have_gnuplot))
			goto out;
	rc = lks_template(r, title, 1);
out:
	free(cases);
	return rc;
}

static void lks_report_free(struct lks_report *r)
{
	for (int i = 0; i < r->nruns; i++) {
		struct lks_rrun *run = &r->runs[i];

		free(run->case_name);
		free(run->run_name);
		free(run->recipe);
		free(run->options);
		free(run->status);
		free(run->fingerprint);
		free(run->case_text);
		free(run->loss);
		free(run->gnorm);
		free(run->time);
	}
	free(r->runs);
	for (int i = 0; i < r->nchecks; i++) {
		lks_check_rec *c = &r->checks[i].rec;

		free((char *)c->case_name);
		free((char *)c->check_name);
		free((char *)c->kind);
		free((char *)c->verdict);
		free((char *)c->tensor);
		free((char *)c->field);
		free((char *)c->message);
	}
	free(r->checks);
}

/* A file a report folder holds: index.html, report.md, a plot's SVG. */
static int lks_report_file(const char *name)
{
	size_t n = strlen(name);

	return !strcmp(name, "index.html") || !strcmp(name, "report.md")
	       || (n > 4 && !strcmp(name + n - 4, ".svg") && name[0] != '.');
}

/* Where the report goes: dir, or where it leads when it exists (a symlink, "."); refuses
   (LKS_REPORT_BAD_DIR) what is not a folder or holds more than a report, as replacing it
   would lose that. */
static int lks_report_target(const char *dir, char *out, size_t size)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (stat(dir, &st) != 0) {
		if (errno != ENOENT)
			return lks_err("cannot write the report to '%s': %s", dir, strerror(errno));
		if ((size_t)snprintf(out, size, "%s", dir) >= size)
			return lks_err("path too long: '%s'", dir);
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return lks_err("'%s' is not a folder: the report goes into a folder of its own",
		               dir), LKS_REPORT_BAD_DIR;
	if (size < PATH_MAX || !realpath(dir, out))
		return lks_err("cannot write the report to '%s': %s", dir, strerror(errno));
	if (!(d = opendir(out)))
		return lks_err("cannot read the folder '%s': %s", dir, strerror(errno));
	while (rc == 0 && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !lks_report_file(e->d_name)) {
			lks_err("'%s' holds '%s', which no report writes: a report replaces its folder "
			        "whole, so it goes into an empty folder or one holding a report", dir,
			        e->d_name);
			rc = LKS_REPORT_BAD_DIR;
		}
	closedir(d);
	return rc;
}

int lks_report_write(lks_store *s, int64_t suite_id, const char *dir,
                     const lks_report_opts *o, lks_report_info *info)
{
	struct lks_report r = { .s = s, .suite = suite_id, .o = o, .info = info };
	char target[PATH_MAX], path[LKS_REPORT_PATH];
	lks_atomic a;
	int have, rc;

	memset(info, 0, sizeof(*info));
	if ((rc = lks_report_target(dir, target, sizeof(target))) != 0
	    || (rc = lks_atomic_dir_open(&a, target)) != 0)
		return rc;
	rc = -1;
	r.dir = a.tmp;
	snprintf(r.tmp, sizeof(r.tmp), "%s/.scratch", a.tmp);
	if (mkdir(r.tmp, 0777) != 0) {
		lks_err("cannot make the folder '%s': %s", r.tmp, strerror(errno));
		goto out;
	}
	/* 'gnuplot --version' exits 0 where gnuplot is; 127: it could not be started */
	have = lks_gnuplot(&r, "--version") == 0;
	info->have_gnuplot = have;
	snprintf(path, sizeof(path), "%s/index.html", r.dir);
	if (!(r.html = fopen(path, "w"))) {
		lks_err("cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/report.md", r.dir);
	if (!(r.md = fopen(path, "w"))) {
		lks_err("cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	rc = lks_report_body(&r, have);
out:
	if (r.html && fclose(r.html) != 0 && rc == 0)
		rc = lks_err("cannot write '%s/index.html'", dir);
	if (r.md && fclose(r.md) != 0 && rc == 0)
		rc = lks_err("cannot write '%s/report.md'", dir);
	lks_atomic_remove(r.tmp);
	lks_report_free(&r);
	if (rc == 0)
		return lks_atomic_dir_commit(&a);
	lks_atomic_dir_abort(&a);
	return rc;
}
