/*
 * report_impl.h: what the files of the report room share, and nothing outside the room
 * includes: the report being written, its suite as read back, and what each file offers
 * the others.
 *   report.c      the sections of the page (summary, planted faults, a case's tables) and
 *                 the report folder swapped in whole (report.h)
 *   report_dir.c  whether the folder asked for is empty or a report's, which alone is
 *                 replaced
 *   suite.c       the suite read back through the store: its runs as stored runs
 *                 (store/run.h) with their per-step values as the checks compare them
 *                 (verify/walk.h), its check verdicts with their stored parameters, its cases
 *                 in order
 *   page.c        the page in HTML and Markdown: all escaping, tables, headings, the template
 *   plot.c        a plot: data and script to a scratch folder, gnuplot as a child, the SVG
 *                 into the page; the loss, relative loss difference and grad norm plots
 *   fp8_scales.c  the amax and scale history of an FP8 run's quantized tensors
 *   heatmap.c     the step x tensor heatmap of two runs and their first divergence
 *   since.c       the opening section: night-over-night verdicts since the earlier suite
 *   trend_plots.c  the trend plots over recent suites (since last night)
 *   imported.c    the metrics of imported runs: numerics, and performance apart
 *   screen.c      the node's screen beside the suite (or alone), from its kept document
 *   gpu.c         GPU health findings and readings of a case's runs, and the algorithms
 *                 cuBLASLt ran their GEMMs with
 */
#ifndef LKS_HARNESS_REPORT_REPORT_IMPL_H
#define LKS_HARNESS_REPORT_REPORT_IMPL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/report/report.h"
#include "harness/store/run.h"
#include "harness/store/trace_store.h"

/* Room for the scratch folder's path, and for a path of a file in it or beside it (the
   folder's, a name of up to 300 bytes). */
#define LKS_REPORT_DIR_MAX 1200
#define LKS_REPORT_PATH 1600
/* What every page's title begins with; report.md opens with it (report_dir.c knows a
   report's folder by it). */
#define LKS_REPORT_TITLE "lockstep report"

/* Where an exact agreement is drawn on the log scale, which has no 0; far below any
   tolerance a check uses and above the double rounding of a loss near 1 (1e-16). */
#define LKS_REPORT_FLOOR 1e-12
/* The ceiling of the trend's relative loss difference: where one side is NaN (the
   difference is infinite), and any difference above it, drawn there, not left out */
#define LKS_REPORT_CEILING 1e6

struct lks_rcheck {
	lks_check_rec rec;        /* strings owned */
	double rtol;              /* stored with the check; NaN: unknown or no metric compared */
	char metric[64];
	int expect_fail;          /* stored with the check: a planted fault's check */
	char planted[200];        /* where the check expects it to fail, in words */
	int plant_step, plant_rank;  /* where its run's fault was planted (its inject spec);
	                                -1: every step, rank */
	char plant_tensor[128];   /* "": none named */
	int plant_known;          /* 0: no run of the check stored or declares a fault */
	char name_a[64], name_b[64];  /* the runs' names in the case, stored with the check
	                                 ("": not stored), also where a run was not run */
};

struct lks_report {
	lks_store *s;
	int64_t suite;
	const char *dir;          /* the new report folder, swapped in when complete */
	const lks_report_opts *o;
	char tmp[LKS_REPORT_DIR_MAX];  /* scratch: data, scripts, gnuplot's output; inside dir */
	FILE *html, *md;
	lks_stored_run *runs;     /* (nruns) the suite's runs by id, with their tensors and
	                             step rows; stat rows read step by step (run.h) */
	int nruns;
	struct lks_rcheck *checks;
	int nchecks;
	lks_report_info *info;
};

/* ---- report_dir.c ---- */

/* Where the report goes: dir, or where it leads when it exists (a symlink, "."; out holds
   PATH_MAX); refuses (LKS_E_BAD_INPUT) what is not a folder or holds more than a report
   (only its pages, the trend's numbers and the plots its report.md shows), as replacing
   it would lose that. */
int lks_report_target(const char *dir, char *out, size_t size);

/* ---- suite.c ---- */

/* The runs of r->suite with their steps, and its checks with their parameters. */
int lks_suite_load(struct lks_report *r);
void lks_suite_release(struct lks_report *r);
/* The run of the suite with that id, NULL when none is. */
lks_stored_run *lks_run_by_id(const struct lks_report *r, int64_t id);
/* Where the faults the suite's checks prove were planted: each check's plant_*, from the
   inject spec its run stored, or its case's text declares (a run not run). */
void lks_suite_planted(struct lks_report *r);
/* The run's name, "" when the suite has no run id. */
const char *lks_run_name(const struct lks_report *r, int64_t id);
/* The reference of the heatmaps of a case whose checks compare no pair: the first bf16
   run, else the first; -1: the case has no run. (The relative loss difference's is the
   first of those that stored a loss: plot.c.) */
int lks_reference(const struct lks_report *r, const char *case_name);
/* The cases of the suite, in the order their first run or check was stored (*out: free it;
   the names belong to r). */
int lks_case_names(struct lks_report *r, const char ***out, int *n);
/* Whether 'lockstep prune' took the per-tensor stats of one of runs[0..n) (as diff and
   night over night decide it, check.h): then 1, and a note in place of the plot what
   (its title) says so; a plot of them would show every row missing. -1: the store cannot
   be read (lks_err). */
int lks_pruned_note(struct lks_report *r, const char *what, const lks_stored_run *const *runs,
                    int n);
/* Whether the case's runs and checks are not all there (a run not complete, a case that
   declares checks and has none of its nstored): 1 and why in words, else 0 and "". A run
   killed or failed stops the suite before the case's checks are stored, so the verdicts
   stored alone would look like a pass. */
int lks_case_incomplete(const struct lks_report *r, const char *case_name, int nstored,
                        char *why, size_t size);
/* The run's loss at step, the mean over the ranks that stored it; NaN when none did. */
double lks_run_loss(const lks_stored_run *run, int step);
/* The run's grad norm at step (the lowest rank's: it is the same on every rank); NaN when
   no rank stored it. */
double lks_run_grad_norm(const lks_stored_run *run, int step);

/* ---- page.c ---- */

/* A text built with stdio (open_memstream), read once it is done. */
struct lks_text {
	char *buf;
	size_t len;
	FILE *f;
};

int lks_text_open(struct lks_text *t);
/* The text; NULL when it could not be kept (out of memory). */
const char *lks_text_done(struct lks_text *t);
void lks_text_free(struct lks_text *t);

/* s as HTML text. */
void lks_html(FILE *f, const char *s);
/* s as Markdown text; block: s starts a paragraph. */
void lks_md(FILE *f, const char *s, int block);
/* A name safe in a file name, a link, an HTML id and a gnuplot string, one to one: a name
   of the name rule as it is, another byte as '~' and two hex digits. */
void lks_safe_name(char *out, size_t size, const char *s);

void lks_row(struct lks_report *r, const char *tr_class, const char *const *cells,
             const char *const *cls, int n);
void lks_table_head(struct lks_report *r, const char *const *heads, int n);
void lks_table_end(struct lks_report *r);
void lks_heading(struct lks_report *r, int level, const char *text);
void lks_para(struct lks_report *r, int note, const char *text);
/* The HTML template before (tail 0) or after (tail 1) its line @BODY@. */
int lks_template(struct lks_report *r, const char *title, int tail);
/* The template up to the body, and the page's title as its first heading. */
int lks_page_title(struct lks_report *r, const char *title);

/* v formatted into buf, "" when v is NaN. */
const char *lks_fmt(char *buf, size_t size, const char *fmt, double v);
/* A stored value formatted into buf: "" when there is none (!stored), "NaN" when it is a
   NaN (a loss gone NaN is a value, not a gap). */
const char *lks_fmt_stored(char *buf, size_t size, const char *fmt, double v, int stored);
/* A run's steps in words, as the runs and trend tables both say them: nsteps is its last
   step stored + 1 (0: none stored); steps_last: an import's or a traced run's, whose steps
   are its log's, "up to N" (the last); else the steps stored, "N of M" where fewer than
   the M it declared (killed, failed). "none" where none is stored. */
void lks_steps_text(char *buf, size_t size, int nsteps, int steps_last, int declared);
/* A place (step, rank, tensor; -1 or NULL: not given) in words, "" when none is given. */
void lks_place(char *buf, size_t size, int step, int rank, const char *tensor);
/* The file whole (malloc'd, NUL-terminated), NULL when it cannot be read: a file the
   report made (gnuplot's SVG); what a user names is read by lks_file_read (file.h). */
char *lks_slurp(const char *path, size_t *len);

/* ---- since.c ---- */

/* "since last night": the suite's night-over-night verdicts counted, and its changed runs
   (alarms first) with their divergence and the fingerprint keys that differ; then the
   trend over the latest suites: nightly_trend.tsv, and with gnuplot its plots
   (trend_plots.c). */
int lks_since_section(struct lks_report *r, int have_gnuplot);

/* ---- plot.c ---- */

/* What one plot is: its template, where it goes, and the words around it. */
struct lks_plot_spec {
	const char *kind;         /* the template reports/<kind>.gp */
	const char *tag;          /* NULL, or the name that tells plots of one kind in a case
	                             apart (a run) */
	const char *tag_b;        /* NULL, or a second name (the other run of a pair) */
	const char *title;        /* the heading above the plot */
	const char *caption;      /* NULL, or a paragraph below it (a line in report.md) */
	int height;               /* of the SVG in pixels; 0: 380 */
};

/* Whether the templates' folder holds report.html and (have_gnuplot) every gnuplot script
   as a readable file: one missing is the installation's fault, said before anything is
   written (lks_err naming it; each of its plots read gnuplot's error naming the scratch
   folder, and the report exit 0). */
int lks_templates_check(const struct lks_report *r, int have_gnuplot);
/* The gnuplot program run with arg: its exit status, 127 when it could not be started. */
int lks_gnuplot(struct lks_report *r, const char *arg);
/* A plot of the case (NULL: of the suite) into the page and a file beside report.md named
   <case>=<kind>[=<tag>[=<tag_b>]] (nightly_<kind> for the suite's): one name per plot. */
int lks_plot(struct lks_report *r, const char *case_name, const struct lks_plot_spec *p,
             const char *data, const char *vars);
/* The loss, relative loss difference and grad norm plots of a case. */
int lks_case_plots(struct lks_report *r, const char *case_name);

/* ---- trend_plots.c ---- */

/* The trend plots over the nsuites latest suites up to r->suite, for the "since last
   night" section: final loss, largest relative loss difference against the same run of
   the suite before, and mean step time, per case/run; suites where a fingerprint changed
   marked on the x axis. A paragraph instead when there is one suite only, or no gnuplot
   (!have_gnuplot); their numbers in nightly_trend.tsv beside report.md either way. */
int lks_trend_plots(struct lks_report *r, int nsuites, int have_gnuplot);

/* ---- fp8_scales.c ---- */

int lks_case_fp8_plots(struct lks_report *r, const char *case_name);
/* Tensor i of t as a word of a key or label. */
void lks_tensor_word(char *out, size_t size, const lks_stored_run *t, int i);

/* ---- heatmap.c ---- */

int lks_case_heatmaps(struct lks_report *r, const char *case_name);

/* ---- imported.c ---- */

/* The metrics of the case's imported runs: numerics, then performance in its own table
   (never in a verdict); nothing when the case has no imported run. */
void lks_case_imported(struct lks_report *r, const char *case_name);

/* ---- gpu.c ---- */

/* *n <- the run's GPU health findings (events of kind gpu_health). */
int lks_gpu_findings(struct lks_report *r, const lks_stored_run *run, int *n);
/* The findings of the case's runs (rows marked bad), the readings before and after each
   run, and why NVML was absent where it was. */
int lks_case_gpu_health(struct lks_report *r, const char *case_name);
/* The algorithms cuBLASLt ran the case's GEMMs with, under a heading, where any run has
   them. */
int lks_case_gemm_algos(struct lks_report *r, const char *case_name);

/* ---- screen.c ---- */

/* The section of the latest screen kept before 'before' (ISO 8601; NULL: of all), none
   when the database kept none; sets info's screen_id and screen_not_passed. */
int lks_screen_section(struct lks_report *r, const char *before);

#endif
