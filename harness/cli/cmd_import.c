/*
 * cmd_import.c: 'lockstep import': a run of another training framework, read from its
 * logs, stored as one run of a case (harness/store/import.h). One transaction: a bad line
 * stores nothing.
 */
#include <stdio.h>
#include <string.h>

#include "harness/base/name.h"
#include "harness/cli/cmd.h"
#include "harness/store/import.h"
#include "kernels/err.h"

static const char lks_import_help[] =
	"usage: lockstep import --format FORMAT FILE... --case NAME --run NAME [--db FILE]\n"
	"\n"
	"Reads the training logs FILE... of one run (in order: a run restarted from a\n"
	"checkpoint goes on in the next file) and stores it in the database (default\n"
	"lockstep.db) as run NAME of case NAME: per step and rank, named metrics. Lines that\n"
	"hold no metrics are counted and ignored. A line that holds metrics but is cut short or\n"
	"has a bad number, a step that goes backwards or comes again with other values, or a\n"
	"rank without steps is bad input (exit 2, naming file:line), and nothing is stored.\n"
	"\n"
	"  --format FORMAT   one of:\n";

static const char lks_import_help_tail[] =
	"\n"
	"exit codes: 0 stored, 2 bad usage or a bad log, 3 the database failed\n";

static void lks_import_help_print(FILE *f)
{
	const lks_import_format *fmt;
	const lks_import_metric *m;

	fputs(lks_import_help, f);
	for (int i = 0; (fmt = lks_import_format_at(i)); i++)
		fprintf(f, "    %-16s %s\n", fmt->name, fmt->what);
	fputs("\nmetrics (their kind: numerics enter verdicts, performance never a bitwise one;\n"
	      "a name not listed is stored as written, as numerics):\n", f);
	for (int i = 0; (m = lks_import_metric_at(i)); i++)
		fprintf(f, "  %-19s %-11s %s%s%s%s\n", m->name, lks_metric_kind_name(m->kind), m->what,
		        *m->unit ? " (" : "", m->unit, *m->unit ? ")" : "");
	fputs(lks_import_help_tail, f);
}

int cmd_import(int argc, char **argv)
{
	const char *db = "lockstep.db", *fmt_name = NULL, *files[256];
	lks_import_opts o = { 0 };
	lks_import_result res;
	lks_store *store = NULL;
	int nfiles = 0, rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			lks_import_help_print(stdout);
			return LKS_EXIT_OK;
		}
		if (a[0] == '-' && a[1]) {
			const char **dst = !strcmp(a, "--format") ? &fmt_name
			                   : !strcmp(a, "--case") ? &o.case_name
			                   : !strcmp(a, "--run") ? &o.run_name
			                   : !strcmp(a, "--db") ? &db : NULL;

			if (!dst)
				return lks_usage("import: unknown option '%s' (see --help)", a);
			if (i + 1 >= argc)
				return lks_usage("import: %s needs a value", a);
			*dst = argv[++i];
			continue;
		}
		if (nfiles == (int)(sizeof(files) / sizeof(files[0])))
			return lks_usage("import: more than %d files", nfiles);
		files[nfiles++] = a;
	}
	if (!fmt_name || !o.case_name || !o.run_name || !nfiles)
		return lks_usage("import: want --format, --case, --run and a FILE (see --help)");
	if (!(o.fmt = lks_import_format_find(fmt_name)))
		return lks_usage("import: %s", lks_errmsg());
	if (lks_name_check("case", o.case_name, strlen(o.case_name))
	    || lks_name_check("run", o.run_name, strlen(o.run_name)))
		return lks_usage("import: %s", lks_errmsg());
	if ((rc = lks_store_open(db, &store)) != 0) {
		fprintf(stderr, "lockstep: import: %s\n", lks_errmsg());
		return rc == LKS_STORE_BAD_FILE ? LKS_EXIT_USAGE : LKS_EXIT_INFRA;
	}
	rc = lks_import_files(store, &o, files, nfiles, &res);
	lks_store_close(store);
	if (rc) {
		fprintf(stderr, "lockstep: import: %s; nothing stored\n", lks_errmsg());
		return rc == LKS_IMPORT_BAD ? LKS_EXIT_USAGE : LKS_EXIT_INFRA;
	}
	printf("imported %s/%s (run %lld, %s): steps up to %d, %d rank%s, %ld metric lines, "
	       "%ld repeated, %ld other lines ignored\n", o.case_name, o.run_name,
	       (long long)res.run_id, o.fmt->name, res.steps, res.world_size,
	       res.world_size == 1 ? "" : "s", res.counts.records, res.counts.repeated,
	       res.counts.ignored);
	return LKS_EXIT_OK;
}
