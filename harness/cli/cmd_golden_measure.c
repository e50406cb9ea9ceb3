/*
 * cmd_golden_measure.c: 'lockstep golden measure': the measurement a tolerance of a golden
 * class that is not bit for bit (cuda-sm90-cublaslt, golden.h) is written from. For every
 * complete run of one suite whose class is such a one, it compares the loss and the grad
 * norm of every step with the golden the check would use (the class's own, else the CPU's,
 * the reference) as the golden check does (the loss the mean over the ranks, walk.h), and
 * prints per class and recipe the largest relative difference of each, with the sections
 * of golden/<class>/tolerances.ini they give. It measures; a person reviews and commits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/cli/cmd.h"
#include "harness/engine/check_kind.h"
#include "harness/store/fingerprint.h"
#include "harness/store/golden.h"
#include "harness/store/trace_store.h"
#include "harness/verify/walk.h"
#include "kernels/err.h"

static const char lks_measure_usage[] =
	"usage: lockstep golden measure [options]\n"
	"\n"
	"For each complete run of a suite whose golden class is not compared bit for bit (a\n"
	"cuda run with gemm = cublaslt: cuda-sm<arch>-cublaslt), compares its loss and grad\n"
	"norm at every step with its golden: the class's own when there is one, else the\n"
	"CPU's (golden/cpu, the reference). Prints per class and recipe the largest relative\n"
	"difference |run - golden| / |golden| of each, over how many runs, and the sections of\n"
	"GOLDEN/<class>/tolerances.ini they give (rtol: the larger of the two), each with a\n"
	"comment saying what gave it. Review them before committing.\n"
	"\n"
	"options:\n";

static const char lks_measure_tail[] =
	"\n"
	"example (on the GPU):\n"
	"  lockstep run cases/ --backend cuda --gemm cublaslt --db prod.db\n"
	"  lockstep golden measure --db prod.db\n"
	"  lockstep golden update cases/*.ini --db prod.db   # the class's own goldens\n"
	"\n"
	"exit codes: 0 measured, 2 bad usage or nothing to measure (no run of such a class\n"
	"            with a golden), 3 the database cannot be read\n";

/* the largest difference of one (class, recipe) */
struct lks_measured {
	char cls[64], recipe[40], against[64], device[128];
	int runs;
	double loss, grad_norm;          /* the largest relative differences */
	char where_loss[160], where_gn[160];  /* "case/run step N" where they are */
};

struct lks_measure {
	lks_store *s;
	const char *dir;
	int64_t suite;                   /* 0: the latest, found first */
	struct lks_measured v[64];
	int n, skipped;
};

static int lks_latest_suite(void *arg, const lks_run_rec *run)
{
	struct lks_measure *m = arg;

	if (run->info.suite_id > m->suite)
		m->suite = run->info.suite_id;
	return 0;
}

static struct lks_measured *lks_measured_of(struct lks_measure *m, const char *cls,
                                            const char *recipe)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].cls, cls) && !strcmp(m->v[i].recipe, recipe))
			return &m->v[i];
	if (m->n == (int)(sizeof(m->v) / sizeof(m->v[0])))
		return NULL;
	memset(&m->v[m->n], 0, sizeof(m->v[0]));
	snprintf(m->v[m->n].cls, sizeof(m->v[0].cls), "%s", cls);
	snprintf(m->v[m->n].recipe, sizeof(m->v[0].recipe), "%s", recipe);
	return &m->v[m->n++];
}

/* |a - b| / |b|, or |a - b| where b is 0; NaN where either is (a NaN is no measurement) */
static double lks_rel_err(double a, double b)
{
	return a == b ? 0.0 : b == 0.0 ? fabs(a) : fabs(a - b) / fabs(b);
}

/* The largest relative difference of metric name over the steps both have. */
static double lks_max_rel(const lks_stored_run *r, const lks_stored_run *g, const char *name,
                          int *at)
{
	const lks_metric *mt = lks_metric_find(name);
	int n = r->nsteps < g->nsteps ? r->nsteps : g->nsteps;
	double worst = 0.0;

	*at = -1;
	for (int step = 0; step < n; step++) {
		double e = lks_rel_err(lks_walk_step_value(r, step, mt), lks_walk_step_value(g, step, mt));

		if (isnan(e) || e > worst) {
			worst = e;
			*at = step;
			if (isnan(e))
				break;
		}
	}
	return worst;
}

/* The golden run r is measured against, read into g, its class into against; 1: none */
static int lks_measure_golden(struct lks_measure *m, const lks_stored_run *r, const char *cls,
                              lks_stored_run *g, char *against, size_t n)
{
	const char *classes[] = { cls, "cpu" };
	char path[1024];

	for (int i = 0; i < 2; i++) {
		int rc;

		if (lks_golden_path(m->dir, classes[i], r->case_name, r->run_name, path, sizeof(path)))
			return -1;
		rc = lks_golden_read(path, g);
		if (rc == 0) {
			snprintf(against, n, "%s", classes[i]);
			return 0;
		}
		lks_stored_run_release(g);
		lks_stored_run_init(g);
		if (rc != LKS_E_MISSING)
			return -1;
	}
	return 1;
}

static int lks_measure_run(void *arg, const lks_run_rec *rec)
{
	struct lks_measure *m = arg;
	struct lks_measured *e;
	lks_stored_run r, g;
	char cls[64], against[64];
	double loss, gn;
	int rc = 0, at_loss, at_gn;

	if (rec->info.suite_id != m->suite || strcmp(rec->status, "complete"))
		return 0;
	lks_stored_run_init(&g);
	if ((rc = lks_stored_run_load(m->s, rec->run_id, LKS_LOAD_TRACE, &r)) != 0)
		goto out;
	if (lks_golden_class_of(&r, cls, sizeof(cls))) {
		fprintf(stderr, "lockstep: golden measure: %s\n", lks_errmsg());
		m->skipped++;
		goto out;
	}
	if (lks_golden_exact(cls))  /* bit for bit: no tolerance to measure */
		goto out;
	if ((rc = lks_measure_golden(m, &r, cls, &g, against, sizeof(against))) != 0) {
		if (rc > 0)
			fprintf(stderr, "lockstep: golden measure: run %lld (%s/%s): no golden in "
			        "'%s' (class %s or cpu): left out\n", (long long)r.id, r.case_name,
			        r.run_name, m->dir, cls);
		m->skipped += rc > 0;
		rc = rc > 0 ? 0 : rc;
		goto out;
	}
	if (!(e = lks_measured_of(m, cls, r.recipe))) {
		rc = lks_err("more than 64 classes and recipes");
		goto out;
	}
	loss = lks_max_rel(&r, &g, "loss", &at_loss);
	gn = lks_max_rel(&r, &g, "grad_norm", &at_gn);
	/* the class's goldens or the CPU's: "mixed" when runs of one recipe met both */
	if (e->runs++ == 0)
		snprintf(e->against, sizeof(e->against), "%s", against);
	else if (strcmp(e->against, against))
		snprintf(e->against, sizeof(e->against), "mixed");
	if (!*e->device)
		lks_fingerprint_json_get(r.fingerprint, "backend.device", e->device,
		                         sizeof(e->device));
	if (!(loss <= e->loss)) {
		e->loss = loss;
		snprintf(e->where_loss, sizeof(e->where_loss), "%s/%s step %d", r.case_name,
		         r.run_name, at_loss);
	}
	if (!(gn <= e->grad_norm)) {
		e->grad_norm = gn;
		snprintf(e->where_gn, sizeof(e->where_gn), "%s/%s step %d", r.case_name,
		         r.run_name, at_gn);
	}
out:
	lks_stored_run_release(&r);
	lks_stored_run_release(&g);
	return rc;
}

static void lks_measure_print(const struct lks_measure *m, const char *db)
{
	printf("golden measure: suite %lld of '%s'\n", (long long)m->suite, db);
	printf("%-24s %-18s %4s  %-8s %-13s %-13s\n", "class", "recipe", "runs", "against",
	       "loss rel max", "gnorm rel max");
	for (int i = 0; i < m->n; i++)
		printf("%-24s %-18s %4d  %-8s %-13.3g %-13.3g\n", m->v[i].cls, m->v[i].recipe,
		       m->v[i].runs, m->v[i].against, m->v[i].loss, m->v[i].grad_norm);
	for (int i = 0; i < m->n; i++) {
		const struct lks_measured *e = &m->v[i];

		if (i == 0 || strcmp(e->cls, m->v[i - 1].cls))
			printf("\n; %s/%s/tolerances.ini (review before committing)\n", m->dir, e->cls);
		printf("[%s]\nrtol = %.2g ; lockstep golden measure, suite %lld, %d run%s on %s "
		       "against %s goldens: loss rel max %.3g (%s), grad_norm rel max %.3g (%s)\n"
		       "atol = 0\n", e->recipe, e->loss > e->grad_norm ? e->loss : e->grad_norm,
		       (long long)m->suite, e->runs, e->runs > 1 ? "s" : "",
		       *e->device ? e->device : "an unnamed device", e->against, e->loss,
		       *e->where_loss ? e->where_loss : "equal", e->grad_norm,
		       *e->where_gn ? e->where_gn : "equal");
	}
}

int lks_golden_measure(int argc, char **argv)
{
	struct lks_measure m = { 0 };
	const char *db = "lockstep.db", *golden = NULL;
	int rc = LKS_EXIT_USAGE, open_rc;
	long long suite = 0;

	const char *suite_arg = NULL;
	char *end;
	const lks_option opts[] = {
		LKS_OPT_PATH("--db", "FILE", &db, "the database (default lockstep.db), opened read-only"),
		LKS_OPT_STRING("--suite", "N", &suite_arg,
		               "the suite measured (default: the latest in the database)"),
		LKS_OPT_PATH("--golden", "DIR", &golden,
		             "where golden files are (default: $LKS_GOLDEN_DIR, else golden)"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "golden measure", .usage = lks_measure_usage,
	                          .tail = lks_measure_tail, .width = 16 };

	if ((open_rc = lks_opt_parse(&cmd, opts, argc, argv, NULL)) != 0)
		return lks_opt_exit(open_rc);
	if (suite_arg && ((suite = strtoll(suite_arg, &end, 10)) <= 0 || *end))
		return lks_usage("golden measure: bad suite '%s': want a suite id", suite_arg);
	m.dir = lks_golden_dir(golden);
	if (access(db, F_OK))
		return lks_usage("golden measure: no database '%s'", db);
	if ((open_rc = lks_store_open_readonly(db, &m.s)) != 0
	    || (!suite && lks_store_get_runs(m.s, lks_latest_suite, &m))
	    || ((m.suite = suite ? suite : m.suite), lks_store_get_runs(m.s, lks_measure_run, &m))) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		rc = open_rc == LKS_E_BAD_INPUT ? LKS_EXIT_USAGE : LKS_EXIT_INFRA;
		goto out;
	}
	if (m.n == 0) {
		lks_usage("golden measure: suite %lld of '%s' has no complete run of a class that "
		          "is not bit for bit (gemm = cublaslt) with a golden to measure against",
		          (long long)m.suite, db);
		goto out;
	}
	lks_measure_print(&m, db);
	rc = LKS_EXIT_OK;
out:
	lks_store_close(m.s);
	return rc;
}
