/*
 * test_import_progress.c: 'lockstep import' shows its progress on standard error when it
 * takes long (LKS_PROGRESS_MS makes "long" short here): megabytes read of the files' total,
 * never more than it and never going back, then the summary; of standard input the bytes
 * alone; nothing with --quiet, and nothing for an import shorter than a second.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "run_bin.h"
#include "store_fixture.h"
#include "kernels/err.h"

/* A torchtitan log of lines steps of one rank (about 65 bytes a line); its size in bytes. */
static long write_log(const char *path, int lines)
{
	FILE *f = fopen(path, "w");
	struct stat st;

	cr_assert_not_null(f);
	for (int i = 1; i <= lines; i++)
		fprintf(f, "[titan] 2026-01-05 10:00:01,001 - root - INFO - step: %d  loss: %.4f  "
		        "tps: 1,234\n", i, 10.0 / i);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(stat(path, &st), 0);
	return (long)st.st_size;
}

/* The progress lines in out, checked: each "read" amount at most total (in MB as printed;
   0: no total printed) and none below the one before. Their number. */
static int progress_lines(const char *out, double total)
{
	double last = -1;
	int n = 0;

	for (const char *p = out; (p = strstr(p, "lockstep: import: ")); n++) {
		double got, of;
		int pct;

		p += strlen("lockstep: import: ");
		if (total > 0) {
			cr_assert_eq(sscanf(p, "%lf of %lf MB read (%d%%)", &got, &of, &pct), 3,
			             "a progress line without its total: %.60s", p);
			cr_assert_eq(of, total, "the total: %.60s", p);
			cr_assert(got <= of && pct >= 0 && pct <= 100, "past the total: %.60s", p);
		} else {
			cr_assert_eq(sscanf(p, "%lf MB read, ", &got), 1, "%.60s", p);
			cr_assert_null(strstr(p, " of "), "a total for standard input");
		}
		cr_assert_geq(got, last, "the bytes read went back: %.60s", p);
		last = got;
	}
	return n;
}

Test(import_progress, a_long_import_shows_megabytes_read_then_the_summary)
{
	static char out[1 << 18];
	char log[512], db[512], args[2048], total_text[32];
	double total;
	long size;

	mkdir_tmp();
	path_in_tmp(log, sizeof(log), "titan.log");
	path_in_tmp(db, sizeof(db), "p.db");
	size = write_log(log, 200000);
	snprintf(total_text, sizeof(total_text), "%.1f", (double)size / 1e6);
	total = atof(total_text);

	/* a tick every 5 ms: the import of 13 MB takes several, more under a sanitizer */
	snprintf(args, sizeof(args), "import --format torchtitan '%s' --case c --run a --db '%s'",
	         log, db);
	cr_assert_eq(lks_run_bin("LKS_PROGRESS_MS=5", args, out, sizeof(out)), 0, "%s", out);
	cr_assert_geq(progress_lines(out, total), 1, "no progress shown: %s", out);
	cr_assert_not_null(strstr(out, "\nimported c/a (run 1, torchtitan): steps up to 200000"),
	                   "the summary is not on a line of its own after the progress: %s", out);

	/* --quiet: none */
	snprintf(args, sizeof(args), "import --quiet --format torchtitan '%s' --case c --run b "
	         "--db '%s'", log, db);
	cr_assert_eq(lks_run_bin("LKS_PROGRESS_MS=5", args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(progress_lines(out, total), 0, "%s", out);
	cr_assert_eq(strncmp(out, "imported c/b (run 2", 19), 0, "%s", out);

	/* standard input, slowed: the bytes read, no total */
	snprintf(args, sizeof(args), "sh -c \"(head -n 100000 '%s'; sleep 0.5; tail -n +100001 "
	         "'%s') | LKS_PROGRESS_MS=100 '%s' import --format torchtitan - --case c --run s "
	         "--db '%s'\" 2>&1", log, log, LKS_BIN, db);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_geq(progress_lines(out, 0), 2, "%s", out);
	cr_assert_not_null(strstr(out, "imported c/s (run 3"), "%s", out);
	rm_tmp();
}

/* By default an import shorter than a second (1000 lines) says its summary alone. */
Test(import_progress, a_short_import_says_only_its_summary)
{
	char log[512], db[512], args[2048], out[4096];

	mkdir_tmp();
	path_in_tmp(log, sizeof(log), "titan.log");
	path_in_tmp(db, sizeof(db), "p.db");
	write_log(log, 1000);
	snprintf(args, sizeof(args), "import --format torchtitan '%s' --case c --run a --db '%s'",
	         log, db);
	cr_assert_eq(lks_run_bin("env -u LKS_PROGRESS_MS", args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(strncmp(out, "imported c/a (run 1", 19), 0, "%s", out);
	cr_assert_eq(strchr(out, '\n') - out + 1, (long)strlen(out), "more than one line: %s", out);
	rm_tmp();
}
