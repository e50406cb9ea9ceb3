/*
 * screen.c: 'lockstep screen' (screen.h): the screen's case on every device at once, each
 * device's runs held to the goldens of their class and to the other devices, and the
 * departing devices replayed (screen_replay.c).
 */
#include "harness/probe/screen_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/status.h"
#include "harness/store/golden.h"
#include "harness/verify/golden_compare.h"
#include "harness/verify/walk.h"
#include "kernels/clock.h"
#include "kernels/err.h"
#include "kernels/pool.h"

const char *lks_screen_verdict_name(lks_screen_verdict v)
{
	static const char *const names[] = { "pass", "fail", "undecided", "error" };

	return (unsigned)v < 4 ? names[v] : "?";
}

const char *lks_screen_class_name(lks_screen_class c)
{
	static const char *const names[] = { "", "transient", "persistent", "software",
	                                     "not replayed (budget spent)" };

	return (unsigned)c < 5 ? names[c] : "?";
}

/* The screen's keys of a plant (device=K, times=once|always) taken out of spec; the rest
   is the fault's, as LOCKSTEP_INJECT takes it. */
static int lks_screen_plan(const char *spec, struct lks_screen_plan *p)
{
	char rest[600] = "", word[200];
	const char *s = spec;
	int n;

	p->device = -1;
	p->once = 0;
	while (sscanf(s, " %199s%n", word, &n) == 1) {
		s += n;
		if (!strncmp(word, "device=", 7)) {
			char *end;
			long d = strtol(word + 7, &end, 10);

			if (end == word + 7 || *end || d < 0 || d >= 1 << 20)
				return lks_err("inject: bad %s (want device=INDEX)", word), LKS_E_BAD_INPUT;
			p->device = (int)d;
		} else if (!strcmp(word, "times=once") || !strcmp(word, "times=always")) {
			p->once = word[6] == 'o';
		} else if (!strncmp(word, "times=", 6)) {
			return lks_err("inject: bad %s (want times=once or times=always)", word),
			       LKS_E_BAD_INPUT;
		} else if (strlen(rest) + strlen(word) + 2 < sizeof(rest)) {
			strcat(strcat(rest, *rest ? " " : ""), word);
		}
	}
	return lks_fault_parse(rest, 1, &p->f) ? LKS_E_BAD_INPUT : 0;
}

const lks_fault *lks_screen_fault(const struct lks_screen_ctx *x, const lks_screen_dev *d,
                                  int j, int replay)
{
	const struct lks_screen_plan *p = &x->plan;

	/* the CPU is the reference a replay is held to, never a device screened: a plant
	   without device= there made a lone device's fault "software" ("departs too") */
	if (!d || !x->planted || !x->fits[j] || (p->device >= 0 && p->device != d->index)
	    || (p->once && replay))
		return NULL;
	return &p->f;
}

/* The runs the plant fits: the one run=NAME names (which must fit), else every run it
   fits, at least one. */
static int lks_screen_fits(struct lks_screen_ctx *x)
{
	const lks_fault *f = &x->plan.f;
	char why[600] = "";  /* why the first run it did not fit refused it, as run says */
	int n = 0, screened = x->plan.device < 0;

	/* a plant that cannot act would let the screen pass untested: a device not screened,
	   a fault of what earlier steps left, which the replay (from a healthy device's
	   state) cannot have and would call transient */
	for (int i = 0; x->planted && i < x->n; i++)
		screened |= x->devs[i].index == x->plan.device;
	if (x->planted && !screened)
		return lks_err("inject: device=%d is not one of the devices screened",
		               x->plan.device), LKS_E_BAD_INPUT;
	if (x->planted && lks_fault_keeps_state(f->kind))
		return lks_err("inject: %s acts through what earlier steps left: a step replayed "
		               "from another device's state cannot have it", lks_fault_kind_name(f->kind)),
		       LKS_E_BAD_INPUT;
	for (int j = 0; x->planted && j < x->c.nruns; j++) {
		const lks_run_cfg *r = &x->c.runs[j];

		if (f->run[0] && strcmp(f->run, r->name))
			continue;
		if (lks_run_fault_fits(&x->c, r, f)) {
			if (f->run[0])
				return lks_err("inject: run '%s': %s", r->name, lks_errmsg()),
				       LKS_E_BAD_INPUT;
			if (!why[0])  /* its own "inject: " said once, before */
				snprintf(why, sizeof(why), "; run '%s': %s", r->name, lks_errmsg()
				         + (strncmp(lks_errmsg(), "inject: ", 8) ? 0 : 8));
			continue;
		}
		x->fits[j] = 1;
		n++;
	}
	if (x->planted && !n && !lks_screen_coll_fits(x))
		return lks_err("inject: no run of %s %s '%s'%s", x->o->case_path,
		               f->run[0] ? "is called" : "fits", f->run[0] ? f->run
		               : lks_fault_kind_name(f->kind), why), LKS_E_BAD_INPUT;
	return 0;
}

int lks_screen_train(struct lks_screen_ctx *x, lks_screen_dev *d, int j, lks_store *store,
                     const lks_screen_train_at *at, int64_t *run_id)
{
	const lks_screen_opts *o = x->o;
	lks_run_cfg run = x->c.runs[j];
	int replay = at && !at->keep, keep_at = at ? at->step - 1 : 0;
	const lks_fault *f = lks_screen_fault(x, d, j, replay);
	lks_runner_opts ro = {
		.threads = x->threads, .backend = d && !d->standin ? o->be : NULL,
		.local_rank = d && !d->standin ? d->index : -1,
		.state_at = at && at->keep ? &keep_at : NULL,
		.nstate_at = at && at->keep,
		.stop_at = !at ? 0 : at->keep ? at->step : at->step + 1,
		.resume_run = replay && at->step > 0 ? at->from_run : 0,
		.resume_step = replay ? at->step - 1 : 0,
	};
	lks_run_result res;
	int rc;

	run.gemm = o->gemm;
	run.backend[0] = 0;
	run.inject = f ? *f : (lks_fault){ .kind = LKS_FAULT_NONE };
	rc = lks_run(&x->c, &run, store, &ro, &res);
	*run_id = res.run_id;
	return rc;
}

/* A device's runs, in its own thread: its store, the case's runs. They keep no state: a
   replay makes the one it needs (screen_replay.c). */
static void *lks_screen_worker(void *arg)
{
	struct lks_screen_job *jb = arg;
	lks_screen_dev *d = jb->d;
	char path[700];
	double t0 = lks_now();

	snprintf(path, sizeof(path), "%s/gpu%d.db", jb->x->o->workdir, d->index);
	unlink(path);
	if (lks_store_open(path, (lks_store **)&d->store)) {
		snprintf(d->error, sizeof(d->error), "%s", lks_errmsg());
		d->store = NULL;
	}
	for (int j = 0; d->store && j < jb->x->c.nruns && !d->error[0]; j++)
		if (lks_screen_train(jb->x, d, j, d->store, NULL, &d->run_ids[j]))
			snprintf(d->error, sizeof(d->error), "run '%s': %s", jb->x->c.runs[j].name,
			         lks_errmsg());
	if (d->error[0])
		d->verdict = LKS_SCREEN_ERROR;
	d->seconds = lks_now() - t0;
	return NULL;
}

/* Every device's runs, all at once. */
static int lks_screen_train_all(struct lks_screen_ctx *x)
{
	struct lks_screen_job jobs[LKS_SCREEN_MAX];
	pthread_t th[LKS_SCREEN_MAX];
	int started = 0;

	for (int i = 0; i < x->n; i++) {
		jobs[i] = (struct lks_screen_job){ x, &x->devs[i] };
		if (pthread_create(&th[i], NULL, lks_screen_worker, &jobs[i]))
			break;
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	return started == x->n ? 0 : lks_err("cannot start a thread per device");
}

/* Run j's golden file, where its class has one: into x->gold[j] (has_gold). The class is
   read off device d's stored run. */
static int lks_screen_golden(struct lks_screen_ctx *x, int j, lks_stored_run *run)
{
	char cls[64], path[1024];
	int rc;

	lks_stored_run_init(&x->gold[j]);
	if (lks_golden_class_of(run, cls, sizeof(cls))
	    || lks_golden_path(lks_golden_dir(x->o->golden), cls, run->case_name, run->run_name,
	                       path, sizeof(path)))
		return 0;  /* no class, no golden: the devices are held to each other */
	if ((rc = lks_golden_read(path, &x->gold[j])) == LKS_E_MISSING)
		return 0;
	if (rc)
		return rc;
	x->has_gold[j] = 1;
	return 0;
}

/* Whether runs a and b agree bit for bit (every traced value and hash, loss, grad norm, lr);
   the divergence into res. */
int lks_screen_same(lks_stored_run *a, lks_stored_run *b, int from, int until,
                    lks_check_result *res)
{
	lks_walk_opts w = { .exact = 1, .from_step = from, .until_step = until,
	                    .step_fields = LKS_WALK_LOSS | LKS_WALK_GRAD_NORM | LKS_WALK_LR };

	lks_check_result_init(res);
	if (lks_walk(&w, a, b, res, NULL))
		return -1;
	return !res->failed;
}

/* Run j on every device: held to its golden, and the devices grouped by identical traces;
   a device that departs from the known answer (the golden, else the majority's) records
   its first divergence, in the case's run order. */
static int lks_screen_compare_run(struct lks_screen_ctx *x, int j)
{
	lks_stored_run runs[LKS_SCREEN_MAX];
	int group[LKS_SCREEN_MAX], size[LKS_SCREEN_MAX] = { 0 }, ngroups = 0, best = -1, rc = 0;

	for (int i = 0; i < x->n; i++) {
		lks_stored_run_init(&runs[i]);
		group[i] = -1;
		if (x->devs[i].verdict == LKS_SCREEN_ERROR)
			continue;
		if (lks_stored_run_load(x->devs[i].store, x->devs[i].run_ids[j], LKS_LOAD_TRACE,
		                        &runs[i]))
			return -1;
		if (!x->gold_read[j]++ && (rc = lks_screen_golden(x, j, &runs[i])) != 0)
			goto out;
		for (int g = 0; g < ngroups && group[i] < 0; g++) {
			lks_check_result res;
			int k = 0;

			while (group[k] != g)
				k++;
			if ((rc = lks_screen_same(&runs[k], &runs[i], 0, 0, &res)) < 0)
				goto out;
			if (rc)
				group[i] = g;
		}
		if (group[i] < 0)
			group[i] = ngroups++;
		if (++size[group[i]] > (best < 0 ? 0 : size[best]))
			best = group[i];
	}
	rc = 0;
	for (int i = 0; i < x->n; i++) {
		lks_screen_dev *d = &x->devs[i];
		lks_check_result res;
		int k = 0;

		if (group[i] < 0 || d->verdict != LKS_SCREEN_PASS)
			continue;
		d->golden = x->has_gold[j];
		d->group = group[i] == best ? 0 : group[i] + 1;
		lks_check_result_init(&res);
		if (x->has_gold[j]) {
			if ((rc = lks_golden_compare(&runs[i], &x->gold[j], 1, 0, 0, &res)) != 0)
				goto out;
		} else if (size[best] < 2 || 2 * size[best] <= x->n) {
			/* no majority (a device alone agrees only with itself): no known answer */
			d->verdict = LKS_SCREEN_UNDECIDED;
			snprintf(d->run, sizeof(d->run), "%s", x->c.runs[j].name);
			continue;
		} else if (group[i] != best) {
			while (group[k] != best)
				k++;
			if ((rc = lks_screen_same(&runs[i], &runs[k], 0, 0, &res)) < 0)
				goto out;
			rc = 0;
		}
		if (res.failed) {
			d->verdict = LKS_SCREEN_FAIL;
			d->div = res;
			snprintf(d->run, sizeof(d->run), "%s", x->c.runs[j].name);
		}
	}
out:
	for (int i = 0; i < x->n; i++)
		lks_stored_run_release(&runs[i]);
	return rc;
}

int lks_screen_run(const lks_screen_opts *o, lks_screen_dev *devs, int n)
{
	struct lks_screen_ctx *x = calloc(1, sizeof(*x));
	long cores = lks_pool_cpus();
	int rc = -1;

	if (!x)
		return lks_err("out of memory");
	x->o = o;
	x->devs = devs;
	x->n = n;
	x->t0 = lks_now();
	x->threads = o->threads > 0 ? o->threads : cores > n ? (int)(cores / n) : 1;
	if (n < 1 || n > LKS_SCREEN_MAX) {
		rc = (lks_err("screen: %d devices; from 1 to %d are screened at once", n,
		              LKS_SCREEN_MAX), LKS_E_BAD_INPUT);
		goto out;
	}
	if (o->inject && *o->inject && (rc = lks_screen_plan(o->inject, &x->plan)) != 0)
		goto out;
	x->planted = o->inject && *o->inject;
	if (lks_case_load(o->case_path, NULL, 0, &x->c)) {
		rc = LKS_E_BAD_INPUT;  /* a case missing or bad: the user's (run says 2 too) */
		goto out;
	}
	x->loaded = 1;
	rc = LKS_E_BAD_INPUT;
	if (x->c.nruns > 64) {
		lks_err("%s: the screen takes at most 64 runs", o->case_path);
		goto out;
	}
	if ((rc = lks_screen_fits(x)) != 0)
		goto out;
	for (int i = 0; i < n; i++) {
		devs[i].verdict = LKS_SCREEN_PASS;
		devs[i].standin = !o->be || lks_be_host_memory(o->be);
		if (devs[i].standin) {
			snprintf(devs[i].uuid, sizeof(devs[i].uuid), "CPU-standin-%d", devs[i].index);
			snprintf(devs[i].name, sizeof(devs[i].name), "CPU stand-in %d", devs[i].index);
		}
	}
	rc = -1;
	if (lks_screen_identify(x) || lks_screen_train_all(x))
		goto out;
	for (int j = 0; j < x->c.nruns; j++)
		if ((rc = lks_screen_compare_run(x, j)) != 0)
			goto out;
	rc = lks_screen_replay_all(x) || lks_screen_collective(x) || lks_screen_readings(x)
	     ? -1 : 0;
out:
	lks_nvml_close(x->nvml);
	for (int j = 0; j < 64; j++)
		if (x->gold_read[j])
			lks_stored_run_release(&x->gold[j]);
	if (x->loaded)
		lks_case_release(&x->c);
	free(x);
	return rc;
}

void lks_screen_release(lks_screen_dev *devs, int n)
{
	for (int i = 0; i < n; i++) {
		lks_store_close(devs[i].store);
		devs[i].store = NULL;
	}
}
