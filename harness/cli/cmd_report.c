/*
 * cmd_report.c: 'lockstep report': write the HTML and Markdown report of a suite
 * (harness/report/report.h). Reads the database only, opened read-only: a missing file or one
 * that is not a lockstep database is bad input, and nothing is created in its place.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cmd.h"
#include "harness/report/report.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* Where the gnuplot scripts and the HTML template are when neither --templates nor
   LKS_REPORT_DIR says: the source tree this program was built from. */
#ifndef LKS_REPORTS_DIR
#define LKS_REPORTS_DIR "reports"
#endif

static const char lks_report_usage[] =
	"usage: lockstep report [--db FILE] [--suite latest|ID] -o DIR\n"
	"\n"
	"Writes the report of one suite (one 'lockstep run') into DIR: index.html, a single\n"
	"self-contained page (inline CSS and SVG plots, no script, nothing fetched), and\n"
	"report.md with the same tables and the plots as SVG files beside it. The summary's\n"
	"verdict of a case is fail (a check failed), incomplete (a run killed or failed, or\n"
	"no verdict stored of the checks it declares) or pass. Per case:\n"
	"  - its runs, and every check's verdict; a failure with its divergence: step, rank,\n"
	"    tensor, field, the values of both runs, absolute and relative error, ULPs\n"
	"  - plots (gnuplot): the loss of every run per step (mean over ranks); the relative\n"
	"    loss difference of each run against the reference run (the first bf16 run that\n"
	"    stored a loss, else the first that did), log scale, with the rtol of the close\n"
	"    checks against it as a dashed line; grad norm (a line saying so where no run\n"
	"    stored a value to draw); for each FP8 run, the amax and scale of its quantized\n"
	"    tensors per step (rank 0); for each pair of runs a check compares (else each run\n"
	"    against the first bf16 run, else the first), a heatmap of step x tensor, colour\n"
	"    the relative L2 difference, with the first divergence (step, tensor, rank)\n"
	"    circled\n"
	"  - the environment fingerprint keys that differ between its runs\n"
	"  - a trend: final loss and mean step time of each run over the last suites\n"
	"After the summary, the node's screen ('lockstep screen --db'): the latest kept before\n"
	"the next suite started. A database with screens and no suite: that screen alone.\n"
	"Without gnuplot (Debian: gnuplot-nox) the tables are written, and the trend's\n"
	"numbers (nightly_trend.tsv), and the page says the plots need it.\n"
	"\n"
	"options:\n";

static const char lks_report_tail[] =
	"\n"
	"example:\n"
	"  lockstep run cases/ --db nightly.db\n"
	"  lockstep report --db nightly.db -o report && chromium report/index.html\n"
	"\n"
	"exit codes: 0 written (whatever the verdicts in it),\n"
	"            2 bad usage, an unknown suite (or neither a suite nor a screen), a missing\n"
	"              file or not a lockstep database,\n"
	"              an -o DIR that holds more than a report\n"
	"            3 infrastructure failure (cannot read the database, write DIR, templates)\n";

int cmd_report(int argc, char **argv)
{
	const char *db = "lockstep.db", *suite = "latest", *out = NULL;
	lks_report_opts o = { .templates = getenv("LKS_REPORT_DIR") };
	lks_report_info info;
	lks_store *store = NULL;
	int64_t suite_id = 0;
	int rc;

	const lks_option opts[] = {
		LKS_OPT_PATH("--db", "FILE", &db, "the database (default lockstep.db), opened read-only"),
		LKS_OPT_STRING("--suite", "latest|ID", &suite,
		               "which suite (default latest: the highest id; 'lockstep run'\n"
		               "prints the id of the suite it stored)"),
		LKS_OPT_PATH("-o, --out", "DIR", &out,
		             "the report folder: missing, empty or holding a report; the\n"
		             "report is written beside it and swapped in whole when done"),
		LKS_OPT_INT("--trend", "N", &o.trend_suites, 1, 1000,
		            "suites in the trend tables and plots (default 5)"),
		LKS_OPT_PATH("--templates", "DIR", &o.templates,
		             "the gnuplot scripts and report.html (default: $LKS_REPORT_DIR,\n"
		             "else the reports/ folder of the source tree); one missing\n"
		             "(a script: where gnuplot is) is exit 3, naming it"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "report", .usage = lks_report_usage,
	                          .tail = lks_report_tail, .width = 18 };

	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, NULL)) != 0)
		return lks_opt_exit(rc);
	if (!out)
		return lks_usage("report: where to? (-o DIR)");
	if (!o.templates || !*o.templates)
		o.templates = LKS_REPORTS_DIR;
	if ((rc = lks_store_open_readonly(db, &store)) != 0) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		return lks_exit_code(rc);
	}
	if ((rc = lks_report_suite(store, suite, &suite_id)) != 0) {
		fprintf(stderr, "lockstep: report: %s in '%s'\n", lks_errmsg(), db);
		rc = lks_exit_code(rc);
	} else if ((rc = lks_report_write(store, suite_id, out, &o, &info)) != 0) {
		fprintf(stderr, "lockstep: report: %s\n", lks_errmsg());
		rc = lks_exit_code(rc);
	} else {
		if (suite_id)
			printf("suite %lld: %d cases, %d checks, %d failed; %d plots%s\n",
			       (long long)suite_id, info.ncases, info.nchecks, info.nfailed,
			       info.nplots, info.have_gnuplot ? "" : " (gnuplot not found: tables only)");
		if (info.nincomplete)
			printf("incomplete: %d case%s with a run not complete or no check verdict "
			       "stored (see the report's summary)\n", info.nincomplete,
			       info.nincomplete > 1 ? "s" : "");
		if (info.stopped)
			printf("incomplete: the command stopped before the suite's end (exit %d): the "
			       "cases after it were not run\n", info.stopped);
		if (info.screen_id && info.screen_not_passed >= 0)
			printf("node screen %lld: %d of %d devices did not pass\n",
			       (long long)info.screen_id, info.screen_not_passed, info.screen_devices);
		else if (info.screen_id)
			printf("node screen %lld: its document cannot be read (see the report)\n",
			       (long long)info.screen_id);
		if (info.ngpu_findings)
			printf("GPU health: %d findings during the runs (see the report)\n",
			       info.ngpu_findings);
		if (info.nplanted || info.nplanted_unchecked) {
			printf("planted faults: %d of %d caught exactly where planted", info.ncaught,
			       info.nplanted);
			if (info.nplanted_unchecked)
				printf("; %d not checked (skipped or unsupported), not counted",
				       info.nplanted_unchecked);
			putchar('\n');
		}
		printf("wrote '%s/index.html' and '%s/report.md'\n", out, out);
		rc = LKS_EXIT_OK;
	}
	lks_store_close(store);
	return rc;
}
