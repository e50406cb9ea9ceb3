/*
 * cmd_export.c: 'lockstep export': a stored run written for other tools, as jsonl or as
 * Megatron-LM's golden values (harness/import/export.c). An imported run gives its metrics,
 * a lockstep run its loss, grad norm and learning rate per step and rank; either reads
 * back through 'lockstep import' with the same values, bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/atomic_file.h"
#include "harness/base/name.h"
#include "harness/cli/cmd.h"
#include "harness/cli/run_arg.h"
#include "harness/import/import.h"
#include "harness/store/run.h"
#include "kernels/err.h"

static const char lks_export_usage[] =
	"usage: lockstep export --format jsonl|megatron-golden|tensor-jsonl RUN [--db FILE]\n"
	"                       [-o FILE] [--rank R] [--partial]\n"
	"\n"
	"Writes stored run RUN (its id, as 'lockstep run', 'import' and 'diff' show it, or\n"
	"CASE/RUN: the latest stored run of that case and run name) of the database (default\n"
	"lockstep.db, opened read-only) to FILE (default standard output). An imported run\n"
	"gives its metrics; a run lockstep trained gives loss, grad_norm and lr per step and\n"
	"rank. Values are written so that they read back as the same doubles ('lockstep\n"
	"import --format' the same format stores them bit for bit); NaN and infinities as\n"
	"\"nan\", \"inf\", \"-inf\".\n"
	"Only a complete run is written: one incomplete (killed, stopped, or still being\n"
	"written) or failed is refused, saying its status and the steps it holds, since what\n"
	"it holds would read back as a complete run; --partial writes it as far as it holds,\n"
	"saying so on standard error. A run with nothing to write (no values, none of rank R)\n"
	"is refused: no empty file.\n"
	"FILE is written aside and put in place whole: an export refused or failed leaves it\n"
	"as it was.\n"
	"\n";

static const char lks_export_formats[] =
	"  --format jsonl            one object per step and rank: step, rank, the metrics\n"
	"  --format megatron-golden  Megatron-LM's golden values: metric -> start_step,\n"
	"                            end_step, step_interval, values (a map from step to\n"
	"                            value, as Megatron-LM writes them today); one rank's values\n"
	"                            (--rank, default 0), and no performance metric the format\n"
	"                            has no name for (tps, mfu, memory); a NaN is refused\n"
	"                            (the format's \"nan\" is a step not logged): use jsonl\n"
	"  --format tensor-jsonl     a tensor trace (imported, or stored by lockstep-trace):\n"
	"                            one object per tensor at a step and rank, its statistics\n"
	"                            and hash\n";

static const char lks_export_tail[] =
	"\n"
	"exit codes: 0 written, 2 bad usage, no such run, a run not complete (without\n"
	"            --partial), one with nothing to write or the format cannot hold,\n"
	"            3 the database or the write failed\n";

/* The formats export writes: each read back by the importer of its name. */
static const lks_import_fmt lks_export_fmts[] = {
	LKS_IMPORT_JSONL, LKS_IMPORT_MEGATRON_GOLDEN, LKS_IMPORT_TENSOR_JSONL,
};
#define LKS_EXPORT_NFMT ((int)(sizeof(lks_export_fmts) / sizeof(lks_export_fmts[0])))

/* The format export writes called name; NULL (lks_err: unknown, or read only) if none. */
static const lks_import_format *lks_export_format(const char *name)
{
	const char *names[LKS_EXPORT_NFMT];
	char known[128];

	for (int i = 0; i < LKS_EXPORT_NFMT; i++) {
		const lks_import_format *f = lks_import_format_at(lks_export_fmts[i]);

		if (!strcmp(f->name, name))
			return f;
		names[i] = f->name;
	}
	lks_names_join(names, sizeof(names[0]), 0, LKS_EXPORT_NFMT, known, sizeof(known));
	if (lks_import_format_find(name))
		lks_err("format '%s' is read, not written (want %s)", name, known);
	else
		lks_err("unknown export format '%s' (known: %s)", name, known);
	return NULL;
}

/* What run r (not complete) holds, in words: "4 of its 40 steps" (a run lockstep trained,
   whose steps are a count, from 0), "steps up to 12" (an import or a trace, whose steps
   is its last step), "no step". 0, or -1 (lks_err). */
static int lks_export_held(lks_store *store, const lks_stored_run *info, char *buf, size_t n)
{
	lks_stored_run r;
	int count = 0, rc;

	if (!(rc = lks_stored_run_load(store, info->id, LKS_LOAD_TRACE, &r))) {
		for (int i = 0; i < r.nsteprows; i++)
			count += !i || r.steprows[i].step != r.steprows[i - 1].step;
		if (!lks_stored_run_steps_last(&r))
			snprintf(buf, n, "%d of its %d step%s", count, r.steps, r.steps == 1 ? "" : "s");
		else if (r.nsteps > 0)
			snprintf(buf, n, "steps up to %d", r.nsteps - 1);
		else
			snprintf(buf, n, "no step");
	}
	lks_stored_run_release(&r);
	return rc;
}

/* A run whose steps are not all in is refused (what it holds read back as a complete
   run, and a golden file of a killed run's first steps passed any later run), or with
   partial written, said on standard error. Then --rank R: one the run has (below its
   world size). 0, or the exit code. */
static int lks_export_check(lks_store *store, int64_t id, int rank, int partial)
{
	lks_stored_run r;
	char held[96];
	int rc = 0;

	lks_stored_run_init(&r);
	if (lks_stored_run_load(store, id, LKS_LOAD_INFO, &r)
	    || (strcmp(r.status, "complete") && lks_export_held(store, &r, held, sizeof(held)))) {
		fprintf(stderr, "lockstep: export: %s\n", lks_errmsg());
		rc = LKS_EXIT_INFRA;
	} else if (strcmp(r.status, "complete") && !partial) {
		rc = lks_usage("export: run %lld (%s/%s) is stored '%s': it holds %s; only a "
		               "complete run is exported (--partial writes it as far as it holds)",
		               (long long)id, r.case_name, r.run_name, r.status, held);
	} else if (rank >= r.W) {
		rc = lks_usage("export: run %lld has ranks 0 to %d, not rank %d", (long long)id,
		               r.W - 1, rank);
	} else if (strcmp(r.status, "complete")) {
		fprintf(stderr, "lockstep: export: run %lld (%s/%s) is stored '%s': it holds %s; "
		        "written as far as it holds (--partial)\n", (long long)id, r.case_name,
		        r.run_name, r.status, held);
	}
	lks_stored_run_release(&r);
	return rc;
}

/* Adds to the message of a run with no metric values to write what it holds instead: a
   tensor trace. */
static void lks_export_why_empty(lks_store *store, int64_t id)
{
	lks_stored_run r;
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s", lks_errmsg());
	if (!lks_stored_run_load(store, id, LKS_LOAD_TRACE, &r) && r.tt && !r.nmrows
	    && !r.nsteprows)
		lks_err("%s: it holds a tensor trace (export --format tensor-jsonl)", msg);
	else
		lks_err("%s", msg);
	lks_stored_run_release(&r);
}

int cmd_export(int argc, char **argv)
{
	const char *db = "lockstep.db", *fmt_name = NULL, *run_arg = NULL, *out_path = NULL;
	const lks_import_format *fmt;
	lks_store *store = NULL;
	int rank = -1, partial = 0, rc;
	int64_t id;
	long written = 0;
	FILE *out = stdout;
	lks_atomic a;

	lks_opt_list args = { 0 };
	const lks_option opts[] = {
		LKS_OPT_TEXT(lks_export_formats),
		LKS_OPT_STRING("--format", "FORMAT", &fmt_name, NULL),
		LKS_OPT_PATH("--db", "FILE", &db, NULL),
		LKS_OPT_PATH("-o", "FILE", &out_path, NULL),
		LKS_OPT_INT("--rank", "R", &rank, 0, 65535,
		            "one rank's values: jsonl and tensor-jsonl write its\n"
		            "lines alone (default every rank), megatron-golden its\n"
		            "metrics (default 0); a rank the run lacks is refused"),
		LKS_OPT_FLAG("--partial", &partial,
		             "a run not complete (incomplete or failed) is written\n"
		             "as far as it holds, its status said on standard error\n"
		             "(default: refused)"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "export", .usage = lks_export_usage,
	                          .tail = lks_export_tail, .width = 25 };

	rc = lks_opt_parse(&cmd, opts, argc, argv, &args);
	run_arg = args.n ? args.v[0] : NULL;
	free(args.v);
	if (rc)
		return lks_opt_exit(rc);
	if (args.n > 1)
		return lks_usage("export: one RUN only (see --help)");
	if (!fmt_name || !run_arg)
		return lks_usage("export: want --format and a RUN (see --help)");
	if (!(fmt = lks_export_format(fmt_name)))
		return lks_usage("export: %s", lks_errmsg());
	if (rank < 0 && fmt->id == LKS_IMPORT_MEGATRON_GOLDEN)
		rank = 0;
	/* read-only: a misspelt --db is refused, not made */
	if ((rc = lks_store_open_readonly(db, &store)) != 0) {
		fprintf(stderr, "lockstep: export: %s\n", lks_errmsg());
		return lks_exit_code(rc);
	}
	if ((rc = lks_run_arg_resolve(store, "export", db, run_arg, &id)) != 0) {
		if (rc < 0)
			fprintf(stderr, "lockstep: export: %s\n", lks_errmsg());
		lks_store_close(store);
		return rc < 0 ? LKS_EXIT_INFRA : rc;
	}
	if ((rc = lks_export_check(store, id, rank, partial)) != 0) {
		lks_store_close(store);
		return rc;
	}
	/* written aside and put in place whole: a refused or failed export leaves what -o
	   named as it was (a symlink, /dev/stdout, a pipe: written through) */
	if (out_path && lks_atomic_open(&a, out_path)) {
		lks_store_close(store);
		fprintf(stderr, "lockstep: export: %s\n", lks_errmsg());
		return LKS_EXIT_INFRA;
	}
	if (out_path)
		out = a.f;
	rc = fmt->id == LKS_IMPORT_TENSOR_JSONL ? lks_export_tensors(store, id, rank, out, &written)
	     : lks_export_run(store, id, fmt->id, rank, out, &written);
	if (rc == LKS_E_MISSING && fmt->id != LKS_IMPORT_TENSOR_JSONL)
		lks_export_why_empty(store, id);
	lks_store_close(store);
	if (out_path && rc)
		lks_atomic_abort(&a);
	else if (out_path && lks_atomic_commit(&a))
		rc = -1;
	if (rc) {
		fprintf(stderr, "lockstep: export: %s\n", lks_errmsg());
		return lks_exit_code(rc);
	}
	if (out_path)
		fprintf(stderr, "exported run %lld (%s): %ld %s to '%s'\n", (long long)id, fmt->name,
		        written, fmt->id == LKS_IMPORT_MEGATRON_GOLDEN ? "metrics" : "lines", out_path);
	return LKS_EXIT_OK;
}
