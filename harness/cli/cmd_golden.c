/*
 * cmd_golden.c: 'lockstep golden update': write golden files (harness/store/golden.h) from the
 * latest complete stored run of runs of the given cases: those named with --run, else
 * those the cases' golden checks compare, else (a case without golden checks) every run.
 * ('lockstep golden measure', the tolerances of a class: cmd_golden_measure.c.)
 *
 * Every case and every run is resolved to a stored run before anything is written, so a
 * missing or unusable run stops the command (exit 2) with every golden file as it was. A
 * run that is not the case's run as its file now declares it is passed over: one made with
 * --steps, --set or --resume-from, with a fault planted through LOCKSTEP_INJECT, or from a
 * case file whose text has changed since; so is one that did not complete. The run picked
 * must be whole: one whose suite 'lockstep prune' took (all of its stat rows gone, or some
 * where a prune was stopped) is refused, as are a tensor trace and a run whose case plants
 * a fault. What is read is one snapshot of the database, as a prune beside may be removing
 * rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "harness/engine/case.h"
#include "harness/cli/cmd.h"
#include "harness/store/golden.h"
#include "harness/base/shell.h"
#include "harness/store/trace_store.h"
#include "harness/verify/check.h"
#include "kernels/err.h"

static const char lks_golden_usage[] =
	"usage: lockstep golden update [options] CASE|DIR...\n"
	"       lockstep golden measure [options]   (its --help: the tolerances of a class)\n"
	"\n"
	"Writes the golden file of runs of each case (a DIR means all its *.ini) from the\n"
	"latest complete run of it in the database: GOLDEN/<class>/<case>/<run>.tsv, a text\n"
	"file of the run's settings, its step rows (loss, grad norm, lr) and its per-tensor\n"
	"statistics and hashes, meant to be reviewed in a diff and committed. A case's golden\n"
	"checks compare later runs with it ('lockstep run'). The class: cpu for every run of\n"
	"the reference arithmetic (cpu, or cuda with gemm = reference), met bit for bit; for a\n"
	"cuda run with gemm = cublaslt, cuda-sm<arch>-cublaslt (cuda-sm90-cublaslt), met on\n"
	"loss and grad norm within the tolerance of the run's recipe in\n"
	"GOLDEN/<class>/tolerances.ini, measured with 'lockstep golden measure'.\n"
	"Which runs: those named by --run; else those the case's golden checks compare; else,\n"
	"in a case without golden checks, every run.\n"
	"Runs that are not the case's runs as its file now declares them are passed over:\n"
	"made with --steps, --set, --resume-from or a LOCKSTEP_INJECT fault, or before the case\n"
	"file was edited. An incomplete run is refused, and so is one that 'lockstep prune'\n"
	"took stat rows of (or is taking), a tensor trace, and a run its case plants a fault in\n"
	"(a golden is what a clean run computes: a fault case's clean runs are written, with\n"
	"--run NAME where the default would take the faulty one). Nothing is written unless\n"
	"every run asked for has a whole stored run to write, and no file is replaced until\n"
	"every new one is written (a full disk or a kill leaves the old set).\n"
	"\n"
	"options:\n";

static const char lks_golden_tail[] =
	"\n"
	"example:\n"
	"  lockstep run cases/ --db nightly.db\n"
	"  lockstep golden update cases/*.ini --db nightly.db\n"
	"  lockstep golden update cases/fp8_recipes.ini --run bf16   # after an intended change\n"
	"  git diff golden/\n"
	"\n"
	"exit codes: 0 written, 2 bad usage, an unknown case or run, or no whole stored run to\n"
	"            write (run it first with 'lockstep run'), 3 infrastructure failure\n";

struct lks_golden_args {
	const char *db;
	const char *golden;       /* --golden DIR; NULL: not given */
	lks_opt_list only, inputs;
};

/* The stored runs, as read once. */
struct lks_stored {
	int64_t id;
	char *case_name, *run_name, *status;
	int steps;
	int set, resumed, injected;  /* made with --set, --resume-from, a planted fault */
	uint64_t text_hash;       /* XXH3-64 of the case text it was run from; 0: none stored
	                             (an import by 'lockstep import --case') */
};

struct lks_stored_list {
	struct lks_stored *v;
	int n, cap;
};

/* 0: go on; LKS_OPT_HELP: help was printed; else an exit code */
static int lks_golden_parse(int argc, char **argv, struct lks_golden_args *a)
{
	const lks_option opts[] = {
		LKS_OPT_LIST("--run", "NAME", &a->only,
		             "the runs with this name (repeatable; default: see above)"),
		LKS_OPT_PATH("--db", "FILE", &a->db,
		             "the database (default lockstep.db), opened read-only"),
		LKS_OPT_PATH("--golden", "DIR", &a->golden,
		             "where golden files go (default: $LKS_GOLDEN_DIR, else golden)"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "golden update", .usage = lks_golden_usage,
	                          .tail = lks_golden_tail, .width = 16 };
	int rc;

	a->db = "lockstep.db";
	if (argc < 2)
		return lks_usage("golden: which subcommand? ('lockstep golden update CASE...', "
		                 "'lockstep golden measure'; --help)");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		lks_opt_usage(&cmd, opts, stdout);
		return LKS_OPT_HELP;
	}
	if (strcmp(argv[1], "update"))
		return lks_usage("golden: unknown subcommand '%s' (golden update CASE..., golden "
		                 "measure; --help)", argv[1]);
	if ((rc = lks_opt_parse(&cmd, opts, argc - 1, argv + 1, &a->inputs)) != 0)
		return rc;
	if (a->inputs.n == 0)
		return lks_usage("golden update: which cases? (a case file or a directory of them)");
	return 0;
}

static int lks_stored_add(void *arg, const lks_run_rec *run)
{
	struct lks_stored_list *l = arg;
	struct lks_stored *e;
	const char *o;

	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 64;
		struct lks_stored *v = realloc(l->v, sizeof(*v) * (size_t)cap);

		if (!v)
			return lks_err("out of memory");
		l->v = v;
		l->cap = cap;
	}
	e = &l->v[l->n];
	e->id = run->run_id;
	e->steps = run->info.steps;
	/* what the runner appends to the options (runner.c, lks_run_options) of a run made
	   with --set, --resume-from RUN@STEP (a case's own resume_from names a run) and a
	   fault the environment planted (a case's own fault is refused: lks_golden_fit) */
	o = run->info.options ? run->info.options : "";
	e->set = strstr(o, " set: ") != NULL;
	e->resumed = strstr(o, " resume_from=run ") != NULL;
	e->injected = strstr(o, " inject: ") != NULL;
	e->text_hash = run->info.case_text && *run->info.case_text
	               ? XXH3_64bits(run->info.case_text, strlen(run->info.case_text)) : 0;
	e->case_name = strdup(run->info.case_name ? run->info.case_name : "");
	e->run_name = strdup(run->info.run_name ? run->info.run_name : "");
	e->status = strdup(run->status ? run->status : "");
	l->n++;
	if (!e->case_name || !e->run_name || !e->status)
		return lks_err("out of memory");
	return 0;
}

static void lks_stored_free(struct lks_stored_list *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->v[i].case_name);
		free(l->v[i].run_name);
		free(l->v[i].status);
	}
	free(l->v);
}

/* Why stored run e is not run cfg of case c as c's file declares it now, or NULL. */
static const char *lks_golden_undeclared(const struct lks_stored *e, const lks_case *c,
                                         const lks_run_cfg *cfg)
{
	int imported = cfg && cfg->import_fmt[0];  /* its log says how many steps */

	if (e->text_hash && e->text_hash != XXH3_64bits(c->text, strlen(c->text)))
		return "made before the case file was edited";
	if (e->set)
		return "made with --set";
	if (!imported && e->steps != c->steps)
		return "made with --steps";
	if (e->resumed)
		return "resumed with --resume-from";
	if (e->injected && !(cfg && cfg->inject.kind != LKS_FAULT_NONE))
		return "made with a fault LOCKSTEP_INJECT planted";
	return NULL;
}

/* The latest stored run that is this case's run as declared and complete; 0 and a message
   (lks_err) when there is none. */
static int64_t lks_golden_pick(const struct lks_stored_list *l, const lks_case *c,
                               const char *run, const char *db)
{
	const struct lks_stored *latest = NULL;
	const lks_run_cfg *cfg = lks_case_run(c, run);
	char qcase[1024], qdb[1024], cmd[2100];
	const char *why = NULL;

	for (int i = l->n - 1; i >= 0; i--) {
		const struct lks_stored *e = &l->v[i];

		if (strcmp(e->case_name, c->name) || strcmp(e->run_name, run))
			continue;
		if (!latest)
			latest = e;
		if (strcmp(e->status, "complete"))
			continue;
		if (!(why = lks_golden_undeclared(e, c, cfg)))
			return e->id;
	}
	/* the command to paste, each word quoted for the shell */
	snprintf(cmd, sizeof(cmd), "lockstep run %s --db %s",
	         lks_shell_quote(c->path, qcase, sizeof(qcase)), lks_shell_quote(db, qdb, sizeof(qdb)));
	if (!latest)
		lks_err("no stored run '%s' of case '%s' in '%s': run it first with: %s", run, c->name,
		        db, cmd);
	else if (strcmp(latest->status, "complete"))
		lks_err("run '%s' of case '%s': the latest stored run (%lld) is %s, and no earlier one "
		        "is complete and as declared; refusing it: run it again with: %s", run,
		        c->name, (long long)latest->id, latest->status, cmd);
	else
		lks_err("run '%s' of case '%s': no stored run is the case's run as its file declares "
		        "it (run %lld was %s); run it as declared with: %s", run, c->name,
		        (long long)latest->id, lks_golden_undeclared(latest, c, cfg), cmd);
	return 0;
}

/* Run id can give a golden file: whole (none of its stat rows removed by 'lockstep prune':
   check.h says how that is known, nor being removed), no tensor trace (an empty golden
   file would pass whatever the trace holds), no planted fault (a golden is what a clean run
   computes). 0, else LKS_E_BAD_INPUT with why, or -1. */
static int lks_golden_fit(lks_store *s, int64_t id, const char *db)
{
	lks_stored_run g;
	char cls[64];
	int pruned, rc;

	if (lks_check_run_pruned(s, id, &pruned))
		return -1;
	if (pruned)
		return lks_err("run %lld of '%s' is not whole: its suite was pruned, and its stat "
		               "rows are gone, or some of them (a prune stopped part way; lockstep "
		               "prune --help): run the case again for its golden", (long long)id, db),
		       LKS_E_BAD_INPUT;
	if (lks_stored_run_load(s, id, LKS_LOAD_TRACE, &g)) {
		lks_stored_run_release(&g);
		return -1;
	}
	rc = lks_golden_class_of(&g, cls, sizeof(cls));  /* a class its file can be under */
	if (rc == 0 && g.tt)
		rc = (lks_err("run %lld of '%s' is a tensor trace (%s), which has no golden file "
		              "yet: keep its dump beside the case and compare tonight's against it "
		              "(a bitwise check of two imported runs), or 'lockstep diff' the two",
		              (long long)id, db, g.backend), LKS_E_BAD_INPUT);
	else if (rc == 0 && strstr(g.options, " inject: "))
		rc = (lks_err("run %lld of '%s' has a planted fault (%s): goldens come from clean "
		              "runs (give the case's clean runs with --run)", (long long)id, db,
		              strstr(g.options, " inject: ") + 9), LKS_E_BAD_INPUT);
	lks_stored_run_release(&g);
	return rc;
}

/* The runs named with --run; without, the runs the case's golden checks compare, or every
   run of a case that has none (so no golden lands in the repository that nothing reads). */
static int lks_selected_run(const struct lks_golden_args *a, const lks_case *c, const char *run)
{
	int ngolden = 0;

	for (int i = 0; i < a->only.n; i++)
		if (!strcmp(a->only.v[i], run))
			return 1;
	if (a->only.n)
		return 0;
	for (int i = 0; i < c->nchecks; i++)
		if (c->checks[i].kind == LKS_CHECK_GOLDEN) {
			ngolden++;
			if (!strcmp(c->checks[i].a, run))
				return 1;
		}
	return ngolden == 0;
}

/* Each --run names a run of at least one case. */
static int lks_golden_check_only(const struct lks_golden_args *a, const lks_case *cases, int n)
{
	for (int i = 0; i < a->only.n; i++) {
		int found = 0;

		for (int j = 0; j < n && !found; j++)
			found = lks_case_run(&cases[j], a->only.v[i]) != NULL;
		if (!found)
			return lks_usage("golden update: no run '%s' in the cases given", a->only.v[i]);
	}
	return 0;
}

/* A golden file written aside, to be renamed in with the others of the set. */
struct lks_golden_out {
	lks_atomic a;
	char line[1280];          /* what is said once it is in place */
};

/* The golden file of stored run id, in folder dir, written aside into *o; read whole: a
   golden is kept small. */
static int lks_golden_stage_one(lks_store *s, int64_t id, const char *db, const char *dir,
                                struct lks_golden_out *o)
{
	lks_stored_run g;
	char path[1024], cls[64];
	long size;
	int rc, n;

	if ((rc = lks_stored_run_load(s, id, LKS_LOAD_WHOLE, &g)) != 0)
		goto out;
	if ((rc = lks_golden_class_of(&g, cls, sizeof(cls))) != 0
	    || (rc = lks_golden_path(dir, cls, g.case_name, g.run_name, path, sizeof(path))) != 0
	    || (rc = lks_golden_stage(&g, path, &o->a)) != 0)
		goto out;
	size = ftell(o->a.f);
	/* an import's or a traced run's steps are its last step's number, not a count */
	n = snprintf(o->line, sizeof(o->line), lks_stored_run_steps_last(&g)
	             ? "wrote %s: run %lld of '%s', steps up to %d x %d rank%s, "
	             : "wrote %s: run %lld of '%s', %d steps x %d rank%s, ",
	             path, (long long)id, db, g.steps, g.W, g.W > 1 ? "s" : "");
	n = n < 0 || n >= (int)sizeof(o->line) ? (int)sizeof(o->line) - 1 : n;
	if (g.nm)
		snprintf(o->line + n, sizeof(o->line) - (size_t)n, "%d metrics, %zu metric rows, %ld KiB",
		         g.nm, g.nmrows, (size + 1023) / 1024);
	else
		snprintf(o->line + n, sizeof(o->line) - (size_t)n, "%d tensors, %zu stats rows, %ld KiB",
		         g.nt, g.nstats, (size + 1023) / 1024);
out:
	lks_stored_run_release(&g);
	return rc;
}

/* The set: every golden written aside, then all renamed in, so that a full disk or a
   kill while writing leaves the old set whole; only a crash between two renames (a few
   microseconds) leaves it part new. */
static int lks_golden_write_all(lks_store *s, const int64_t *ids, int n, const char *db,
                                const char *dir)
{
	struct lks_golden_out *o = calloc((size_t)n + 1, sizeof(*o));
	int staged = 0, rc = 0;

	if (!o)
		return lks_err("out of memory");
	while (staged < n && !(rc = lks_golden_stage_one(s, ids[staged], db, dir, &o[staged])))
		staged++;
	for (int i = 0; i < staged; i++)
		if (rc)
			lks_atomic_abort(&o[i].a);
		else if ((rc = lks_atomic_commit(&o[i].a)) == 0)
			printf("%s\n", o[i].line);
	free(o);
	return rc;
}

int cmd_golden(int argc, char **argv)
{
	struct lks_golden_args a = { 0 };
	struct lks_stored_list stored = { 0 };
	int ncases = 0, nids = 0, rc, open_rc;
	lks_case *cases = NULL;
	lks_store *store = NULL;
	int64_t *ids = NULL;
	char qdb[1024];

	if (argc >= 2 && !strcmp(argv[1], "measure"))
		return lks_golden_measure(argc - 1, argv + 1);
	if ((rc = lks_golden_parse(argc, argv, &a)) != 0) {
		rc = lks_opt_exit(rc);
		goto out;
	}
	rc = LKS_EXIT_USAGE;
	if (lks_cases_load(a.inputs.v, a.inputs.n, NULL, 0, &cases, &ncases)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		goto out;
	}
	if (lks_golden_check_only(&a, cases, ncases))
		goto out;
	/* said here with the command to make it; the store refuses it too */
	if (access(a.db, F_OK)) {
		lks_usage("golden update: no database '%s': run the cases first with: lockstep run "
		          "CASE --db %s", a.db, lks_shell_quote(a.db, qdb, sizeof(qdb)));
		goto out;
	}
	/* one snapshot: the runs, their prune marks and the rows written */
	if ((open_rc = lks_store_open_readonly(a.db, &store)) != 0
	    || lks_store_read_begin(store) || lks_store_get_runs(store, lks_stored_add, &stored)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		rc = open_rc == LKS_E_BAD_INPUT ? LKS_EXIT_USAGE : LKS_EXIT_INFRA;
		goto out;
	}
	/* every run resolved before anything is written */
	for (int i = 0; i < ncases; i++)
		nids += cases[i].nruns;
	if (!(ids = calloc((size_t)nids + 1, sizeof(*ids)))) {
		rc = LKS_EXIT_INFRA;
		goto out;
	}
	nids = 0;
	for (int i = 0; i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			if (!lks_selected_run(&a, &cases[i], cases[i].runs[j].name))
				continue;
			if (!(ids[nids++] = lks_golden_pick(&stored, &cases[i], cases[i].runs[j].name, a.db))) {
				fprintf(stderr, "lockstep: %s\n", lks_errmsg());
				goto out;
			}
			if ((open_rc = lks_golden_fit(store, ids[nids - 1], a.db)) != 0) {
				fprintf(stderr, "lockstep: %s\n", lks_errmsg());
				rc = lks_exit_code(open_rc);
				goto out;
			}
		}
	if ((open_rc = lks_golden_write_all(store, ids, nids, a.db, lks_golden_dir(a.golden))) != 0) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		rc = lks_exit_code(open_rc);
		goto out;
	}
	printf("%d golden file%s written under '%s'\n", nids, nids == 1 ? "" : "s",
	       lks_golden_dir(a.golden));
	rc = LKS_EXIT_OK;
out:
	lks_cases_release(cases, ncases);
	if (store)
		lks_store_read_end(store);
	lks_store_close(store);
	lks_stored_free(&stored);
	free(ids);
	free(a.only.v);
	free(a.inputs.v);
	return rc;
}
