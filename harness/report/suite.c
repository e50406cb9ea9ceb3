/*
 * suite.c: the suite a report is of, read back through the store: its runs (each with its
 * loss, grad norm and step time per step, as means over ranks), its check verdicts with the
 * parameters stored with them, the order of its cases, and the reference run of a case.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/check_kind.h"
#include "harness/report/report_impl.h"
#include "kernels/err.h"

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

/* What the report shows of a check's parameters, as the checks table keeps them (a suite
   stored before schema 4 kept none: no band is drawn then, and no planted fault listed):
   the metric and rtol of a kind that compares a metric (the band of the relative loss
   difference plot), and where a check that proves a planted fault expects it. The pointers
   of p are not kept. */
static void lks_check_params_use(struct lks_rcheck *c, const lks_check_params *p)
{
	const lks_check_kind_info *info = NULL;
	lks_check_kind kind;

	if (lks_check_kind_parse(c->rec.kind, &kind) == 0)  /* else a kind of a later build */
		info = lks_check_kind_of(kind);
	if (info && (info->keys & LKS_CK_METRIC) && p->metric) {
		c->rtol = p->rtol;
		snprintf(c->metric, sizeof(c->metric), "%s", p->metric);
	}
	if (p->expect && strcmp(p->expect, "fail") == 0) {
		c->expect_fail = 1;
		lks_place(c->planted, sizeof(c->planted), p->exp_step, p->exp_rank, p->exp_tensor);
	}
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
	lks_check_params_use(c, &rec->params);
	return 0;
}

const struct lks_rrun *lks_run_by_id(const struct lks_report *r, int64_t id)
{
	for (int i = 0; i < r->nruns; i++)
		if (r->runs[i].id == id)
			return &r->runs[i];
	return NULL;
}

const char *lks_run_name(const struct lks_report *r, int64_t id)
{
	const struct lks_rrun *run = lks_run_by_id(r, id);

	return run ? run->run_name : "";
}

/* The reference of the relative-difference plot: the first bf16 run, else the first. */
int lks_reference(const struct lks_report *r, const char *case_name)
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


/* The cases of the suite, in the order their first run or check was stored. */
int lks_case_names(struct lks_report *r, const char ***out, int *n)
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

int lks_suite_load(struct lks_report *r)
{
	if (lks_store_get_runs(r->s, lks_collect_run, r)
	    || lks_store_get_checks(r->s, r->suite, lks_collect_check, r))
		return -1;
	for (int i = 0; i < r->nruns; i++)
		if (lks_load_steps(r, &r->runs[i]))
			return -1;
	return 0;
}


void lks_suite_release(struct lks_report *r)
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
