/*
 * report.h: the report of a suite (DESIGN.md, Interfaces): a folder with index.html, one
 * self-contained page (inline CSS, inline SVG plots, no script, nothing fetched), and
 * report.md with the same tables and the plots as SVG files beside it.
 *
 * The summary gives each case a verdict: fail, incomplete (a run not complete, or checks
 * declared and none stored: the suite stopped) or pass.
 * After the summary, when the suite holds checks that prove planted faults (expect = fail,
 * cases/faults), a table of each: where it was planted, where it was found, caught or not.
 * Per case of the suite: its runs; the verdict of every check with its divergence (step,
 * rank, tensor, field, values, errors); plots made by gnuplot from the scripts in
 * reports/ (loss of every run, relative loss difference against the case's reference
 * run with the rtol of the close checks against it, grad norm; for each FP8 run the amax
 * and scale of its quantized tensors per step on rank 0; for each pair of runs a check
 * compares, a step x tensor heatmap of the relative L2 difference with the first
 * divergence circled); the fingerprint keys that differ between its runs; and a trend of
 * final loss and step time over recent suites. After the summary, the node's screen of
 * that night, where 'lockstep screen --db' kept one (screen.c).
 * Without gnuplot the tables are still written and the report says the plots need it.
 */
#ifndef LKS_HARNESS_REPORT_H
#define LKS_HARNESS_REPORT_H

#include <stdint.h>

#include "harness/store/trace_store.h"

typedef struct lks_report_opts {
	const char *templates;    /* the folder of report.html and the *.gp scripts */
	const char *gnuplot;      /* the gnuplot program; NULL: "gnuplot" from PATH */
	int trend_suites;         /* how many suites the trend goes back; 0: 5 */
} lks_report_opts;

/* What a report holds, for the caller to print. */
typedef struct lks_report_info {
	int ncases, nchecks, nfailed;
	int nincomplete;          /* cases with a run not complete, or declared checks and no
	                             verdict stored (the suite stopped before them) */
	int stopped;              /* the exit code the suite's command stopped with before its
	                             end (bad input in a case, an import that failed); 0 */
	int ngpu_findings;        /* GPU health findings during the suite's runs (gpu.c) */
	int nplanted, ncaught;    /* checks proving a planted fault (expect = fail) that were
	                             evaluated; caught exactly where planted */
	int nplanted_unchecked;   /* such checks skipped or unsupported (in neither count) */
	int nplots;               /* plots made */
	int have_gnuplot;         /* 0: none made, the report says why */
	int64_t screen_id;        /* the node's screen shown ('lockstep screen --db'); 0: none */
	int screen_devices;       /* its devices */
	int screen_not_passed;    /* those that did not pass; -1: its document is bad */
} lks_report_info;

/* which: "latest" (the highest suite id; 0 when the database holds none) or a suite id;
   LKS_E_BAD_INPUT when there is no such suite, -1 when the store cannot be read. */
int lks_report_suite(lks_store *s, const char *which, int64_t *suite_id);

/* Writes index.html, report.md and the plots' SVG files into a new folder beside dir and
   swaps it in whole (harness/base/atomic_file.h): dir holds the previous report or the new
   one at every instant. dir may be missing (its parent must exist), empty, or hold a
   report: anything else is LKS_E_BAD_INPUT. Fails (-1, lks_err) when the store cannot
   be read, a template is missing, or the folder cannot be written, leaving dir as it was;
   a failing plot is reported in the page, not an error. */
/* suite_id 0: the page of the latest screen alone (LKS_E_BAD_INPUT when there is none). */
int lks_report_write(lks_store *s, int64_t suite_id, const char *dir,
                     const lks_report_opts *o, lks_report_info *info);

#endif
