/*
 * bench_detect.c: 'lockstep bench detect': which checks catch each planted fault, and at
 * which step, beside the two checks users often rely on alone (issue 5):
 *   - a loss-only golden check at rtol 5%: the faulty run's loss against the clean run's,
 *   - a NaN-only check of the collective inputs (what TORCH_NCCL_NAN_CHECK does): the
 *     runner's event for NaN/Inf in a rank's gradients before the all-reduce.
 *
 * Every fault case (cases/faults) is run once; in each, the first run with a planted
 * fault is the faulty run and the first run without one the clean run. Every check kind
 * is then evaluated on those same two stored runs, so the table compares checks, not
 * runs. The columns are the check-kind table's (check_kind.h): each kind with a column,
 * in the table's order, with the settings its row gives (a kind without one says why:
 * --help shows it), then the NaN event.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/bench/bench.h"
#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "harness/base/opt.h"
#include "harness/engine/runner.h"
#include "harness/verify/sqnr.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

static const char lks_detect_help[] =
	"usage: lockstep bench detect [--dir DIR] [CASE|DIR...]\n"
	"       lockstep bench detect --flips N [--repeats M] [--seed S] [--case FILE]\n"
	"\n"
	"Runs the fault cases (default cases/faults) and evaluates every check kind on each\n"
	"case's faulty and clean run, beside a loss-only check at rtol 5% and a NaN-only check\n"
	"of the collective inputs. Prints, per fault, the step at which each check catches it\n"
	"('-': missed; 'n/a': the check does not apply), then where each catch points.\n"
	"\n"
	"With --flips N (and --repeats M), instead: N single-bit flips planted at random in the\n"
	"case's runs, each within its run's ranks and tensors (a fifth each in GEMM outputs,\n"
	"weights, AdamW's state, the buffer a rank sends into the all-reduce and the sum it\n"
	"receives, these in a run of 2 ranks or more), each compared bit for bit with a clean\n"
	"run as 'lockstep screen' compares: how many are caught, how many at their step and\n"
	"tensor; then M clean runs, any difference a false alarm (exit 1). The runs keep their\n"
	"ranks; a case of 1 rank (the screen's quick case, the default) is trained on 2, so\n"
	"that it has an all-reduce. --repeats M alone: the clean runs only.\n"
	"\n"
	"options:\n"
	"  --dir DIR      where the temporary databases go (default $TMPDIR or /tmp)\n"
	"  --flips N      single-bit flips (default 0: with --repeats the clean runs alone,\n"
	"                 without it the fault cases instead)\n"
	"  --repeats M    clean runs after the flips (default 0)\n"
	"  --seed S       the flips' random choices (default 34)\n"
	"  --case FILE    the case flipped: data-parallel runs (no fsdp, no tp) trained from\n"
	"                 step 0 without a fault (default cases/screen/screen_quick.ini)\n";

/* The columns: check kinds on (faulty, clean), in the order of the check-kind table, then
   the NaN event (kind LKS_CHECK_COUNT). */
#define LKS_NCOLS (LKS_CHECK_COUNT + 1)

struct lks_col {
	lks_check_kind kind;
	const char *title;
};

static int lks_detect_cols(struct lks_col *cols)
{
	const lks_check_kind_info *row;
	int n = 0;

	for (int i = 0; (row = lks_check_kind_of((lks_check_kind)i)); i++)
		if (row->detect.title)
			cols[n++] = (struct lks_col){ (lks_check_kind)i, row->detect.title };
	cols[n++] = (struct lks_col){ LKS_CHECK_COUNT, "NaN collective" };
	return n;
}

/* After the usage: the columns, from the check kinds' table. */
static void lks_detect_columns(FILE *f)
{
	struct lks_col cols[LKS_NCOLS];
	const lks_check_kind_info *row;
	int n = lks_detect_cols(cols);

	fprintf(f, "\ncolumns:\n");
	for (int j = 0; j < n; j++)
		fprintf(f, "  %-16s %s\n", cols[j].title, cols[j].kind == LKS_CHECK_COUNT
		        ? "the runner's event: NaN/Inf in gradients before the all-reduce"
		        : lks_check_kind_name(cols[j].kind));
	for (int i = 0; (row = lks_check_kind_of((lks_check_kind)i)); i++)
		if (!row->detect.title)
			fprintf(f, "  %-16s none: %s\n", row->name, row->detect.none);
}

struct lks_catch {
	int applies, caught, step, rank;
	char tensor[128];
};

struct lks_detect_row {
	char case_name[LKS_NAME_MAX];  /* the fault case: one row each */
	struct lks_catch col[LKS_NCOLS];
};

static int lks_first_event(void *arg, const lks_event_rec *ev)
{
	struct lks_catch *c = arg;

	if (c->caught || strcmp(ev->kind, "nonfinite_grad"))
		return 0;
	c->caught = 1;
	c->step = ev->step;
	c->rank = ev->rank;
	snprintf(c->tensor, sizeof(c->tensor), "%s", ev->tensor ? ev->tensor : "");
	return 0;
}

/* Check kind evaluated with the settings of its column on the faulty and the clean run. */
static int lks_detect_check(lks_store *s, lks_check_kind kind, const lks_run_cfg *bad,
                            const lks_run_cfg *clean, int64_t id_bad, int64_t id_clean,
                            struct lks_catch *c)
{
	const lks_check_kind_info *row = lks_check_kind_of(kind);
	lks_check_cfg k = { .kind = kind, .rtol = row->detect.rtol,
	                    .floor_db = row->detect.floor_db, .exp_step = -1, .exp_rank = -1 };
	lks_check_result res;
	int two = row->nruns == 2;

	snprintf(k.name, sizeof(k.name), "detect_%s", row->name);
	snprintf(k.a, sizeof(k.a), "%s", bad->name);
	if (two)
		snprintf(k.b, sizeof(k.b), "%s", clean->name);
	snprintf(k.metric, sizeof(k.metric), "%s", row->detect.metric ? row->detect.metric : "");
	c->applies = !(row->needs & LKS_CK_CHECKPOINT) || bad->checkpoint;
	if (!c->applies)
		return 0;
	if (lks_check_eval(s, &k, NULL, id_bad, two ? id_clean : 0, &res))
		return -1;
	c->caught = res.failed;
	c->step = res.step;
	c->rank = res.rank;
	snprintf(c->tensor, sizeof(c->tensor), "%s", res.tensor);
	return 0;
}

/* The first run of c with a planted fault and the first without; an error without both. */
static int lks_detect_pick(const lks_case *c, const lks_run_cfg **bad, const lks_run_cfg **clean)
{
	*bad = *clean = NULL;
	for (int i = 0; i < c->nruns; i++) {
		const lks_run_cfg *r = &c->runs[i];

		if (r->inject.kind != LKS_FAULT_NONE && !*bad)
			*bad = r;
		else if (r->inject.kind == LKS_FAULT_NONE && !*clean)
			*clean = r;
	}
	if (!*bad || !*clean)
		return lks_err("%s: a fault case needs a run with inject and one without", c->path);
	return 0;
}

/* Runs the faulty and the clean run of case c and fills row. */
static int lks_detect_case(lks_store *s, int64_t suite, const lks_case *c,
                           struct lks_detect_row *row)
{
	const lks_run_cfg *bad, *clean;
	int64_t id_bad = 0, id_clean = 0;
	lks_runner_opts o = { .suite_id = suite, .threads = 1 };
	lks_run_result res;
	lks_sqnr_pairs *pairs = NULL;
	struct lks_col cols[LKS_NCOLS];
	int ncols = lks_detect_cols(cols), rc = -1;

	if (lks_detect_pick(c, &bad, &clean))
		return -1;
	memset(row, 0, sizeof(*row));
	snprintf(row->case_name, sizeof(row->case_name), "%s", c->name);
	/* the clean run is made first and its gradients kept for the faulty run's sqnr */
	if (lks_sqnr_begin_pair(1, 0, &pairs))
		return -1;
	lks_sqnr_hook(pairs, 0, &o);
	if (lks_run(c, clean, s, &o, &res) || lks_sqnr_end_run(pairs, 0, res.run_id, s))
		goto out;
	id_clean = res.run_id;
	lks_sqnr_hook(pairs, 1, &o);
	if (lks_run(c, bad, s, &o, &res) || lks_sqnr_end_run(pairs, 1, res.run_id, s))
		goto out;
	id_bad = res.run_id;

	for (int j = 0; j < ncols - 1; j++)
		if (lks_detect_check(s, cols[j].kind, bad, clean, id_bad, id_clean, &row->col[j]))
			goto out;
	row->col[ncols - 1].applies = 1;
	rc = lks_store_get_events(s, id_bad, lks_first_event, &row->col[ncols - 1]);
out:
	lks_sqnr_free(pairs);
	return rc;
}

static void lks_detect_print(const struct lks_detect_row *rows, int n)
{
	struct lks_col cols[LKS_NCOLS];
	int ncols = lks_detect_cols(cols);

	printf("\n| fault |");
	for (int j = 0; j < ncols; j++)
		printf(" %s |", cols[j].title);
	printf("\n|---|");
	for (int j = 0; j < ncols; j++)
		printf("---|");
	printf("\n");
	for (int i = 0; i < n; i++) {
		printf("| %s |", rows[i].case_name);
		for (int j = 0; j < ncols; j++) {
			const struct lks_catch *c = &rows[i].col[j];

			if (!c->applies)
				printf(" n/a |");
			else if (!c->caught)
				printf(" - |");
			else if (c->step < 0)
				printf(" caught |");
			else
				printf(" step %d |", c->step);
		}
		printf("\n");
	}
	printf("\nwhere each catch points (step, rank, tensor):\n");
	for (int i = 0; i < n; i++)
		for (int j = 0; j < ncols; j++) {
			const struct lks_catch *c = &rows[i].col[j];

			if (!c->applies || !c->caught)
				continue;
			printf("  %-16s %-15s step %d, ", rows[i].case_name, cols[j].title, c->step);
			if (c->rank < 0 && !c->tensor[0])
				printf("every rank (the step's mean loss)\n");
			else if (c->rank < 0)
				printf("no single rank (the replicas have no majority), %s\n", c->tensor);
			else
				printf("rank %d, %s\n", c->rank, c->tensor);
		}
}

/* --flips: in a folder of its own, removed after */
static int lks_detect_flips(const char *base, const char *path, int flips, int repeats,
                            unsigned seed)
{
	static const char *const files[] = { "refs.db", "refs.db-wal", "refs.db-shm", "flip.db",
	                                     "flip.db-wal", "flip.db-shm" };
	char dir[2048], f[2200];
	int rc;

	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(dir, sizeof(dir), "%s/lks-bench-flips-XXXXXX", base) >= sizeof(dir)
	    || !mkdtemp(dir)) {
		fprintf(stderr, "lockstep: bench detect: cannot create a folder in '%s': %s\n", base,
		        strerror(errno));
		return LKS_EXIT_INFRA;
	}
	rc = lks_bench_flips(path, dir, flips, repeats, seed);
	if (rc < 0)
		fprintf(stderr, "lockstep: bench detect: %s\n", lks_errmsg());
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(f, sizeof(f), "%s/%s", dir, files[i]);
		unlink(f);
	}
	rmdir(dir);
	return rc < 0 ? lks_exit_code(rc) : rc;
}

int lks_bench_detect(int argc, char **argv)
{
	const char *base = getenv("TMPDIR"), *def[] = { "cases/faults" };
	lks_opt_list inputs = { 0 };
	int ncases = 0, rc;
	lks_case *cases = NULL;
	struct lks_detect_row *rows = NULL;
	char dir[2048] = "", db[2200];
	lks_store *store = NULL;
	int64_t suite;

	int flips = 0, repeats = 0, seed = 34;
	const char *flip_case = "cases/screen/screen_quick.ini";
	const lks_option opts[] = {  /* the usage's text says them */
		LKS_OPT_PATH("--dir", "DIR", &base, NULL),
		LKS_OPT_INT("--flips", "N", &flips, 0, 10000000, NULL),
		LKS_OPT_INT("--repeats", "M", &repeats, 0, 10000000, NULL),
		LKS_OPT_INT("--seed", "S", &seed, 0, 1 << 30, NULL),
		LKS_OPT_PATH("--case", "FILE", &flip_case, NULL),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "bench detect", .usage = lks_detect_help,
	                          .after = lks_detect_columns };

	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, &inputs)) != 0) {
		rc = lks_opt_exit(rc);
		goto out;
	}
	if ((flips || repeats) && inputs.n) {  /* it would be ignored, another case measured */
		rc = lks_usage("bench detect: --flips and --repeats measure --case FILE, not '%s'",
		               inputs.v[0]);
		goto out;
	}
	if (flips || repeats) {
		rc = lks_detect_flips(base, flip_case, flips, repeats, (unsigned)seed);
		goto out;
	}
	rc = LKS_EXIT_USAGE;
	if (lks_cases_load(inputs.n ? inputs.v : def, inputs.n ? inputs.n : 1, NULL, 0, &cases,
	                   &ncases)) {
		fprintf(stderr, "lockstep: bench detect: %s\n", lks_errmsg());
		goto out;
	}
	for (int i = 0; i < ncases; i++) {
		const lks_run_cfg *bad, *clean;

		if (lks_detect_pick(&cases[i], &bad, &clean)) {
			fprintf(stderr, "lockstep: bench detect: %s\n", lks_errmsg());
			goto out;
		}
	}
	rc = LKS_EXIT_INFRA;
	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(dir, sizeof(dir), "%s/lks-bench-detect-XXXXXX", base) >= sizeof(dir)
	    || !mkdtemp(dir)) {
		fprintf(stderr, "lockstep: bench detect: cannot create a folder in '%s': %s\n", base,
		        strerror(errno));
		dir[0] = 0;
		goto out;
	}
	snprintf(db, sizeof(db), "%s/detect.db", dir);
	if (!(rows = calloc((size_t)ncases + 1, sizeof(*rows))) || lks_store_open(db, &store)
	    || lks_store_begin_suite(store, "bench detect", &suite)) {
		fprintf(stderr, "lockstep: bench detect: %s\n", rows ? lks_errmsg() : "out of memory");
		goto out;
	}
	printf("bench detect: %d fault case%s, each check on the same faulty and clean run\n",
	       ncases, ncases == 1 ? "" : "s");
	for (int i = 0; i < ncases; i++)
		if (lks_detect_case(store, suite, &cases[i], &rows[i])) {
			fprintf(stderr, "lockstep: bench detect: %s: %s\n", cases[i].name, lks_errmsg());
			goto out;
		}
	lks_detect_print(rows, ncases);
	rc = LKS_EXIT_OK;
out:
	if (store)
		lks_store_close(store);
	if (dir[0]) {
		static const char *const files[] = { "detect.db", "detect.db-wal", "detect.db-shm" };

		for (int i = 0; i < 3; i++) {
			snprintf(db, sizeof(db), "%s/%s", dir, files[i]);
			unlink(db);
		}
		rmdir(dir);
	}
	free(rows);
	lks_cases_release(cases, ncases);
	free(inputs.v);
	return rc;
}
