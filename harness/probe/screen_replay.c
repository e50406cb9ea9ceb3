/*
 * screen_replay.c: a device that departed from the known answer, replayed (screen.h): the
 * failing step again, from the state of the step before, on the same device and on
 * another that gave the known answer, and the departure classed transient, persistent or
 * software.
 */
#include "harness/probe/screen_impl.h"

#include <stdio.h>
#include <string.h>

#include "kernels/clock.h"
#include "kernels/err.h"

/* A device's name in the replay's words: "gpu 2", or "the CPU" (NULL). */
static const char *lks_dev_word(const lks_screen_dev *d, char *buf, size_t n)
{
	if (!d)
		return "the CPU";
	snprintf(buf, n, "%s %d", d->standin ? "stand-in" : "gpu", d->index);
	return buf;
}

/* A device of the known answer: one that passed (it met the goldens, or without goldens
   it is of the majority); NULL where none. */
static lks_screen_dev *lks_screen_ref(struct lks_screen_ctx *x)
{
	for (int i = 0; i < x->n; i++)
		if (x->devs[i].verdict == LKS_SCREEN_PASS)
			return &x->devs[i];
	return NULL;
}

/* Whether every device that made its runs departed, all in one group: the same wrong
   bits everywhere. Two at least: a device screened alone is no "every device" (it was
   called software where the CPU gives the known answer: persistent). */
static int lks_screen_all_alike(const struct lks_screen_ctx *x)
{
	int seen = 0, group = -1;

	for (int i = 0; i < x->n; i++) {
		const lks_screen_dev *d = &x->devs[i];

		if (d->verdict == LKS_SCREEN_ERROR)
			continue;
		if (d->verdict != LKS_SCREEN_FAIL || (group >= 0 && d->group != group))
			return 0;
		group = d->group;
		seen++;
	}
	return seen > 1;
}

/* Step at->step of run j on device on (NULL: the CPU) from at's state in store src,
   compared with the known answer (known) and, where wrong is given, with the first
   departure: 1 the known answer, 0 not (*repeats: the same wrong bits), -1 error. */
static int lks_screen_try(struct lks_screen_ctx *x, lks_screen_dev *on, int j, lks_store *src,
                          const lks_screen_train_at *at, lks_stored_run *known,
                          lks_stored_run *wrong, int *repeats)
{
	lks_stored_run r;
	lks_check_result res;
	int64_t id;
	int rc;

	if (lks_screen_train(x, on, j, src, at, &id)
	    || lks_stored_run_load(src, id, LKS_LOAD_TRACE, &r))
		return -1;
	rc = lks_screen_same(&r, known, at->step, at->step + 1, &res);
	if (rc == 0 && wrong)
		*repeats = lks_screen_same(&r, wrong, at->step, at->step + 1, &res) == 1;
	lks_stored_run_release(&r);
	return rc;
}

/* Device d, which departed at its run d->run, replayed and classed. */
static int lks_screen_replay_one(struct lks_screen_ctx *x, lks_screen_dev *d)
{
	lks_screen_dev *ref = lks_screen_ref(x), *other;
	lks_stored_run mine, refrun, *known;
	lks_screen_train_at at = { .step = d->div.step };
	lks_store *src;
	char w1[32], w2[48], w3[32];
	int j = 0, rc = -1, ok, repeats = 0;

	while (strcmp(x->c.runs[j].name, d->run))
		j++;
	if (at.step < 0) {
		snprintf(d->replay, sizeof(d->replay), "no step to replay: the runs differ in %s",
		         d->div.field ? d->div.field : "their settings");
		return 0;
	}
	/* the state of the step before: a device's of the known answer, else its own. The
	   screen's runs kept none (every step's state, written to disk, was 70% of a quick
	   screen's time, and some 2 GB a device in the full one); that device trains the run
	   again to that step and keeps it there. Training is deterministic, so it is the state
	   the screen's run had: the known answer's, or this device's own with whatever its
	   fault did before step S. */
	src = ref ? ref->store : d->store;
	lks_stored_run_init(&refrun);
	if (at.step > 0) {
		lks_screen_train_at keep = { .step = at.step, .keep = 1 };

		if (lks_screen_train(x, ref ? ref : d, j, src, &keep, &at.from_run))
			return -1;
	}
	if (lks_stored_run_load(d->store, d->run_ids[j], LKS_LOAD_TRACE, &mine))
		return -1;
	known = x->has_gold[j] ? &x->gold[j] : &refrun;
	if (!x->has_gold[j] && (!ref || lks_stored_run_load(ref->store, ref->run_ids[j],
	                                                      LKS_LOAD_TRACE, &refrun)))
		goto out;
	if ((ok = lks_screen_try(x, d, j, src, &at, known, &mine, &repeats)) < 0)
		goto out;
	/* at step 0 no device's state: the initial parameters (resume_run 0) */
	snprintf(w2, sizeof(w2), "%s's state", lks_dev_word(ref ? ref : d, w3, sizeof(w3)));
	snprintf(d->replay, sizeof(d->replay), "step %d again on %s from %s: %s", at.step,
	         lks_dev_word(d, w1, sizeof(w1)), at.step ? w2 : "the initial parameters",
	         ok ? "the known answer" : repeats ? "departs again, the same bits"
	         : "departs again, other bits");
	/* every device departed alike: the same wrong bits on each is no one device's fault,
	   even where the step now gives the known answer (a fault of the software that does
	   not repeat, as a glitch of one device would not strike them all alike) */
	if (lks_screen_all_alike(x)) {
		d->cls = LKS_REPLAY_SOFTWARE;
		snprintf(d->replay + strlen(d->replay), sizeof(d->replay) - strlen(d->replay),
		         "; %severy device departed alike%s", ok ? "but " : "", ok ? ", the same "
		         "bits: a fault that does not repeat, of no one device" : "");
		rc = 0;
		goto out;
	}
	if (ok) {
		d->cls = LKS_REPLAY_TRANSIENT;
		rc = 0;
		goto out;
	}
	/* another device from the same state: one of the known answer, else the CPU (its
	   bits are the reference mode's); in production mode without one, none has them */
	other = ref;
	if (!other && x->o->gemm != LKS_GEMM_REFERENCE) {
		d->cls = LKS_REPLAY_SOFTWARE;
		snprintf(d->replay + strlen(d->replay), sizeof(d->replay) - strlen(d->replay),
		         "; no device gave the known answer to replay it on");
		rc = 0;
		goto out;
	}
	if ((ok = lks_screen_try(x, other, j, src, &at, known, NULL, NULL)) < 0)
		goto out;
	d->cls = ok ? LKS_REPLAY_PERSISTENT : LKS_REPLAY_SOFTWARE;
	snprintf(d->replay + strlen(d->replay), sizeof(d->replay) - strlen(d->replay),
	         "; on %s from %s: %s", lks_dev_word(other, w3, sizeof(w3)),
	         at.step ? "that state" : "them", ok ? "the known answer" : "departs too");
	rc = 0;
out:
	lks_stored_run_release(&mine);
	lks_stored_run_release(&refrun);
	return rc;
}

/* Whether the budget was spent before device d's replay, which then starts not (class
   and words set); 0 (0 s: none starts) is a budget like any other. */
static int lks_screen_spent(struct lks_screen_ctx *x, lks_screen_dev *d)
{
	double t = lks_now() - x->t0;

	if (!x->o->budgeted || d->div.step < 0 || t < x->o->budget_s)
		return 0;
	d->cls = LKS_REPLAY_SKIPPED;
	snprintf(d->replay, sizeof(d->replay), "the screen had run %.2f s, and no replay starts "
	         "after %g s", t, x->o->budget_s);
	return 1;
}

int lks_screen_replay_all(struct lks_screen_ctx *x)
{
	for (int i = 0; i < x->n; i++) {
		lks_screen_dev *d = &x->devs[i];
		int spent;

		if (d->verdict != LKS_SCREEN_FAIL)
			continue;
		spent = lks_screen_spent(x, d);
		if (x->o->progress)
			fprintf(x->o->progress, "screen: %s %d departs in run '%s' at step %d: %s\n",
			        d->standin ? "stand-in" : "gpu", d->index, d->run, d->div.step,
			        spent ? "not replayed, the budget spent" : "replaying");
		if (!spent && lks_screen_replay_one(x, d)) {
			snprintf(d->replay, sizeof(d->replay), "the replay failed: %s", lks_errmsg());
			d->cls = LKS_REPLAY_NONE;
		}
	}
	return 0;
}
