/*
 * suite.c: the suite a report is of, read back through the store: its runs (stored runs,
 * run.h, with their tensors and step rows; the loss and grad norm per step as the checks
 * compare them, walk.h), its check verdicts with the parameters stored with them, the order
 * of its cases, and the reference run of a case.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/engine/check_kind.h"
#include "harness/engine/fault.h"
#include "harness/report/report_impl.h"
#include "harness/verify/check.h"
#include "harness/verify/walk.h"
#include "kernels/err.h"

static char *lks_dup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* A run of the suite: a place for it in r->runs, its id kept until it is loaded. */
static int lks_collect_run(void *arg, const lks_run_rec *rec)
{
	struct lks_report *r = arg;
	lks_stored_run *more;

	if (rec->info.suite_id != r->suite)
		return 0;
	if (!(more = realloc(r->runs, (size_t)(r->nruns + 1) * sizeof(*more))))
		return lks_err("out of memory");
	r->runs = more;
	lks_stored_run_init(&r->runs[r->nruns]);
	r->runs[r->nruns++].id = rec->run_id;
	return 0;
}

/* A per-step value as the checks compare it (walk.h): the metric is one of the table's. */
static double lks_run_step(const lks_stored_run *run, int step, const char *metric)
{
	const lks_metric *m = lks_metric_find(metric);

	return m ? lks_walk_step_value(run, step, m) : NAN;
}

double lks_run_loss(const lks_stored_run *run, int step)
{
	return lks_run_step(run, step, "loss");
}

double lks_run_grad_norm(const lks_stored_run *run, int step)
{
	return lks_run_step(run, step, "grad_norm");
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
	snprintf(c->name_a, sizeof(c->name_a), "%s", p->a ? p->a : "");
	snprintf(c->name_b, sizeof(c->name_b), "%s", p->b ? p->b : "");
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

lks_stored_run *lks_run_by_id(const struct lks_report *r, int64_t id)
{
	for (int i = 0; i < r->nruns; i++)
		if (r->runs[i].id == id)
			return &r->runs[i];
	return NULL;
}

const char *lks_run_name(const struct lks_report *r, int64_t id)
{
	const lks_stored_run *run = lks_run_by_id(r, id);

	return run ? run->run_name : "";
}

/* The reference of the heatmaps: the first bf16 run, else the first (report_impl.h). */
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


int lks_pruned_note(struct lks_report *r, const char *what, const lks_stored_run *const *runs,
                    int n)
{
	char line[600];

	for (int i = 0; i < n; i++) {
		int pruned;

		if (lks_check_run_pruned(r->s, runs[i]->id, &pruned))
			return -1;
		if (!pruned)
			continue;
		snprintf(line, sizeof(line), "%s: not drawn: the per-tensor stats of run '%s' were "
		         "pruned (lockstep prune --help); its loss and grad norm are kept", what,
		         runs[i]->run_name);
		lks_para(r, 1, line);
		return 1;
	}
	return 0;
}

/* The fault that run 'name' of the case planted: the spec its stored options hold
   (" inject: SPEC", before any " resume_from=" or " set: ": runner.c; LOCKSTEP_INJECT's
   too), or for a run not stored its case's stored text's; 1 when there is one, into f. */
static int lks_run_fault(const struct lks_report *r, const char *case_name, const char *name,
                         lks_fault *f)
{
	const lks_stored_run *text = NULL;
	lks_case c;
	int found = 0;

	for (int i = 0; i < r->nruns; i++) {
		const lks_stored_run *run = &r->runs[i];
		const char *inj;
		char spec[512], *end;

		if (strcmp(run->case_name, case_name))
			continue;
		if (!text && run->case_text && *run->case_text)
			text = run;
		if (strcmp(run->run_name, name))
			continue;
		if (!(inj = strstr(run->options, " inject: ")))
			return 0;
		snprintf(spec, sizeof(spec), "%s", inj + strlen(" inject: "));
		if ((end = strstr(spec, " resume_from=")) || (end = strstr(spec, " set: ")))
			*end = 0;
		return lks_fault_parse(spec, 1, f) == 0;
	}
	if (!text || lks_case_load_text(text->case_name, text->case_text, &c))
		return 0;  /* no text, or one of another lockstep: not known */
	for (int j = 0; j < c.nruns && !found; j++)
		if (!strcmp(c.runs[j].name, name) && c.runs[j].inject.kind != LKS_FAULT_NONE) {
			*f = c.runs[j].inject;
			found = 1;
		}
	lks_case_release(&c);
	return found;
}

void lks_suite_planted(struct lks_report *r)
{
	for (int i = 0; i < r->nchecks; i++) {
		struct lks_rcheck *k = &r->checks[i];
		lks_fault f;

		if (!k->expect_fail)
			continue;
		/* the run of the pair that plants one (a fault case's faulty run against its
		   clean one, either way round) */
		if ((k->name_a[0] && lks_run_fault(r, k->rec.case_name, k->name_a, &f))
		    || (k->name_b[0] && lks_run_fault(r, k->rec.case_name, k->name_b, &f))) {
			k->plant_known = 1;
			k->plant_step = f.step;
			k->plant_rank = f.rank;
			snprintf(k->plant_tensor, sizeof(k->plant_tensor), "%s", f.tensor);
		}
	}
}

/* The checks the case declares, as its stored text says (the first run's that has one);
   -1 when no run stored a text or it no longer reads (a case of another lockstep). */
static int lks_case_declared(const struct lks_report *r, const char *case_name)
{
	for (int i = 0; i < r->nruns; i++) {
		const lks_stored_run *run = &r->runs[i];
		lks_case c;
		int n;

		if (strcmp(run->case_name, case_name) || !run->case_text || !*run->case_text)
			continue;
		if (lks_case_load_text(run->case_name, run->case_text, &c))
			return -1;
		n = c.nchecks;
		lks_case_release(&c);
		return n;
	}
	return -1;
}

int lks_case_incomplete(const struct lks_report *r, const char *case_name, int nstored,
                        char *why, size_t size)
{
	size_t n = 0;
	int declared;

	why[0] = 0;
	for (int i = 0; i < r->nruns; i++) {
		const lks_stored_run *run = &r->runs[i];

		if (strcmp(run->case_name, case_name) || !strcmp(run->status, "complete"))
			continue;
		if (n < size)
			n += (size_t)snprintf(why + n, size - n, "%srun '%s' %s", n ? "; " : "",
			                      run->run_name, run->status);
	}
	/* the checks are stored after the case's last run: none while it declares some is a
	   suite that stopped before them. Fewer than declared is no sign: --check keeps some */
	if (nstored == 0 && (declared = lks_case_declared(r, case_name)) > 0 && n < size)
		n += (size_t)snprintf(why + n, size - n, "%s%d check%s declared, no verdict stored",
		                      n ? "; " : "", declared, declared > 1 ? "s" : "");
	return n > 0;
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

/* The runs are loaded once the runs table has been read, not from inside its walk, so
   that no two reads of the store are open at once: each with its tensors and step rows,
   its stat rows read when a plot steps to them. */
int lks_suite_load(struct lks_report *r)
{
	if (lks_store_get_runs(r->s, lks_collect_run, r)
	    || lks_store_get_checks(r->s, r->suite, lks_collect_check, r))
		return -1;
	for (int i = 0; i < r->nruns; i++)
		if (lks_stored_run_load(r->s, r->runs[i].id, LKS_LOAD_TRACE, &r->runs[i]))
			return -1;
	return 0;
}

void lks_suite_release(struct lks_report *r)
{
	for (int i = 0; i < r->nruns; i++)
		lks_stored_run_release(&r->runs[i]);
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
