/*
 * import_hf_trainer.c: Hugging Face Trainer's logs (import.h), read after the code that
 * writes them, src/transformers/trainer_callback.py of huggingface/transformers at 55093b7:
 *
 *   - trainer_state.json (TrainerState.save_to_json: json.dumps(asdict(self), indent=2,
 *     sort_keys=True)): its "log_history", a list of the dicts Trainer.log made, each with
 *     its "step" (global_step): {"epoch": 0.01, "grad_norm": 188.28, "learning_rate": 5e-05,
 *     "loss": 10.5949, "step": 10}, an evaluation's {"eval_loss": ..., "step": 10, ...} and
 *     the run's summary {"train_loss": ..., "train_runtime": ..., "step": 100} after it.
 *     The entries of one step make one record (an "epoch" given again is the same);
 *     steps go forward. A NaN or infinite loss, which Python's json writes bare (NaN,
 *     Infinity), is read as such.
 *   - the console (PrinterCallback and ProgressCallback print the same dict, without its
 *     step: print(logs)): {'loss': 10.5949, 'grad_norm': 188.28, 'learning_rate': 5e-05,
 *     'epoch': 0.01}, a Python dict of numbers (nan, inf as Python prints them; a numpy
 *     scalar as np.float64(x)). Since transformers 5 both print each float as a string of
 *     4 significant digits (f"{v:.4g}"; seen in 5.24.0's ProgressCallback.on_log and
 *     PrinterCallback.on_log): {'loss': '3.915', 'learning_rate': '8.333e-05', ...}, read
 *     as the number it spells. ProgressCallback (the default) writes it through tqdm, so in
 *     a captured console it follows the bar and a '\r' on its line: the line read is what
 *     a terminal shows, after it (lks_import_each_line). Launched by torchrun --tee (or
 *     srun --label) a line has its process's prefix, "[rank0]:" or "[default0]:": the
 *     Trainer prints on each node's local process zero (log_on_each_node), the job's
 *     dict each time, so the lines of the first prefix's rank are read and the copies of
 *     other nodes' are counted as ignored. The console has no step: the n-th line with a 'loss' is
 *     step n (logging_steps apart in the run); lines without one (evaluations, the summary)
 *     are counted as ignored. trainer_state.json has the steps: a resumed run's console
 *     begins again at step 1, and its lines say nothing of where the run resumed (not
 *     even 'epoch', a fraction rounded), so a console is refused as one file of several
 *     (rec->counted, import.c): import its trainer_state.json or its event files.
 * Before transformers 5 the Trainer rounds the loss to 4 decimals in both; 5.24.0 keeps it
 * whole in trainer_state.json (3.914597749710083). learning_rate is lr.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import_impl.h"

/* The precision the Trainer printed value of key at (dec: as its text, or shortest, reads):
   the loss rounded to 4 decimals before transformers 5 (Trainer._maybe_log_save_evaluate:
   round(tr_loss, 4), whose repr drops the zeros after: 10.5 is 10.5000), its console's
   string of 4 significant digits in 5 (quoted); other values as written. */
static int64_t lks_hf_dec(const char *key, size_t len, double value, int quoted, int64_t dec)
{
	if (quoted)
		return lks_import_dec_sig(dec, value, 4);
	return len == 4 && !memcmp(key, "loss", 4) ? lks_import_dec_widen(dec, 4) : dec;
}
#include "kernels/err.h"

static const lks_import_label_row lks_hf_labels[] = {
	{ "loss", "loss" },
	{ "grad_norm", "grad_norm" },
	{ "learning_rate", "lr" },
	{ NULL, NULL },
};

/* Whether rec holds a metric of that name already (the Trainer's "epoch" of a step's
   training and evaluation entries). */
static int lks_hf_has(const lks_import_rec *rec, const char *name)
{
	for (int i = 0; i < rec->n; i++)
		if (!strcmp(rec->m[i].name, name))
			return 1;
	return 0;
}

/* trainer_state.json's log_history, each step's entries one record */
static int lks_hf_state(const char *path, json_t *doc, lks_import_rec *rec,
                        lks_import_sink sink, void *arg, lks_import_counts *c)
{
	json_t *hist = json_object_get(doc, "log_history"), *e, *v;
	size_t i;
	int rc, open = 0;

	if (!json_is_array(hist))
		return lks_err("'%s': want trainer_state.json's \"log_history\", a list", path),
		       LKS_E_BAD_INPUT;
	json_array_foreach(hist, i, e) {
		const char *key;
		int step;

		if (!json_is_object(e)
		    || lks_import_json_int(json_object_get(e, "step"), 0, LKS_IMPORT_MAX_STEP, 0, &step))
			return lks_err("'%s': log_history[%zu]: want an object with its \"step\" (0 to %d)",
			               path, i, LKS_IMPORT_MAX_STEP), LKS_E_BAD_INPUT;
		if (open && step < rec->step)
			return lks_err("'%s': log_history[%zu]: step %d after step %d", path, i, step,
			               rec->step), LKS_E_BAD_INPUT;
		if (open && step != rec->step) {
			c->records++;
			if ((rc = sink(arg, rec)))
				return rc;
			open = 0;
		}
		if (!open) {
			memset(rec, 0, sizeof(*rec));
			rec->step = step;
			open = 1;
		}
		json_object_foreach(e, key, v) {
			double x;

			if (!strcmp(key, "step") || (!strcmp(key, "epoch") && lks_hf_has(rec, "epoch"))
			    || json_is_null(v) || json_is_boolean(v))
				continue;
			/* a number, or Python's NaN and infinities (read as "nan", "inf"); other
			   strings are no metric */
			if (lks_import_json_number(v, &x)) {
				if (json_is_string(v))
					continue;
				return lks_err("'%s': log_history[%zu].\"%s\": want a number", path, i, key),
				       LKS_E_BAD_INPUT;
			}
			if ((rc = lks_import_rec_add_dec(rec, LKS_IMPORT_HF_TRAINER, key, strlen(key), x,
			                                 lks_hf_dec(key, strlen(key), x, 0,
			                                            lks_import_shortest_dec(x)),
			                                 path)))
				return rc;
		}
	}
	if (!open)
		return 0;
	c->records++;
	return sink(arg, rec);
}

struct lks_hf_read {
	lks_import_rec rec;
	int n;                  /* the console's lines with a loss so far */
	int rank;               /* the rank whose prefix the first of them had; -1: none yet */
	const char *path;
	lks_import_sink sink;
	void *arg;
	lks_import_counts *c;
};

/* One Python dict "{'k': v, ...}" of the console: a record when it holds 'loss'. */
static int lks_hf_line(void *arg, char *line, size_t len, long at)
{
	struct lks_hf_read *x = arg;
	const char *p, *end = line + len;
	int rc, rank, ranked;

	p = lks_import_rank_prefix(line, &rank, &ranked);
	while (p < end && isspace((unsigned char)*p))
		p++;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	if (end - p < 2 || *p != '{' || end[-1] != '}' || !strstr(p, "'loss': ")) {
		x->c->ignored++;
		return 0;
	}
	/* the local process zero of each node prints the job's dict: one node's lines are
	   the run's, another's the same again */
	if (x->rank < 0)
		x->rank = rank;
	if (rank != x->rank) {
		x->c->ignored++;
		return 0;
	}
	memset(&x->rec, 0, sizeof(x->rec));
	x->rec.line = at;
	for (p++, end--; p < end;) {
		const char *k, *ke, *v, *ve;
		double val;
		int64_t dec;
		int quoted;

		while (p < end && (*p == ' ' || *p == ','))
			p++;
		if (p == end)
			break;
		if ((*p != '\'' && *p != '"') || !(ke = memchr(p + 1, *p, (size_t)(end - p - 1)))
		    || ke + 1 >= end || ke[1] != ':')
			return lks_err("'%s':%ld: want {'name': number, ...}", x->path, at),
			       LKS_E_BAD_INPUT;
		k = p + 1;
		for (v = ke + 2; v < end && *v == ' '; v++)
			;
		for (ve = v; ve < end && *ve != ','; ve++)
			;
		p = ve;
		/* transformers 5's console: a float as a string of 4 digits, '3.915' */
		quoted = ve - v >= 2 && (*v == '\'' || *v == '"') && ve[-1] == *v;
		if (quoted) {
			v++;
			ve--;
		}
		/* a numpy scalar: np.float64(1.5) */
		for (const char *q = v; q < ve && *q != '('; q++)
			if (q + 1 < ve && q[1] == '(' && ve[-1] == ')') {
				v = q + 2;
				ve--;
				break;
			}
		if ((rc = lks_import_number_dec(v, (size_t)(ve - v), 0, &val, &dec)))
			return lks_import_bad_value(x->path, at, k, (size_t)(ke - k), v, (size_t)(ve - v), rc);
		if ((rc = lks_import_rec_add_dec(&x->rec, LKS_IMPORT_HF_TRAINER, k, (size_t)(ke - k), val,
		                                 lks_hf_dec(k, (size_t)(ke - k), val, quoted, dec),
		                                 x->path)))
			return rc;
	}
	x->rec.step = ++x->n;
	x->rec.counted = 1;  /* one console alone: a resumed run's begins at 1 again */
	x->c->records++;
	return x->sink(x->arg, &x->rec);
}

static int lks_import_parse_hf(const char *path, FILE *f, lks_import_sink sink, void *arg,
                               lks_import_counts *c)
{
	struct lks_hf_read *x = calloc(1, sizeof(*x));
	char *text = NULL, *py = NULL;
	const char *s;
	size_t len = 0;
	json_error_t e;
	json_t *doc = NULL;
	FILE *mem;
	int rc;

	if (!x)
		return lks_err("out of memory");
	if ((rc = lks_import_json_slurp(f, path, "a Trainer's log", &text, &len))) {
		free(x);
		return rc == LKS_E_BAD_INPUT ? rc : lks_err("cannot read '%s'", path);
	}
	for (s = text; isspace((unsigned char)*s); s++)
		;
	/* a JSON document (Python's bare NaN and Infinity read as "nan", "inf"), or a console
	   line: JSON's keys are double quoted, Python's dicts' single */
	if (*s == '{' && !(doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e))
	    && e.position > (int)(s - text) + 2 && (py = lks_import_json_bare_nonfinite(text)))
		doc = json_loads(py, JSON_REJECT_DUPLICATES, &e);
	if (doc) {
		rc = lks_hf_state(path, doc, &x->rec, sink, arg, c);
		json_decref(doc);
	} else if (*s == '{' && e.position > (int)(s - text) + 2) {
		lks_err("'%s':%d: not JSON: %s", path, e.line, e.text);
		rc = LKS_E_BAD_INPUT;
	} else if (!(mem = fmemopen(text, len ? len : 1, "r"))) {
		rc = lks_err("out of memory");
	} else {
		*x = (struct lks_hf_read){ .rank = -1, .path = path, .sink = sink, .arg = arg,
		                           .c = c };
		rc = lks_import_each_line(path, mem, c, lks_hf_line, x);
		fclose(mem);
	}
	free(py);
	free(text);
	free(x);
	return rc;
}

const lks_import_format lks_import_hf_trainer_format = {
	.id = LKS_IMPORT_HF_TRAINER,
	.name = "hf-trainer",
	.what = "Hugging Face Trainer's trainer_state.json (log_history), or its console lines "
	        "({'loss': 10.5949, 'grad_norm': ..., 'learning_rate': ..., 'epoch': ...}, the n-th "
	        "the step n: a run's only file)",
	.parse = lks_import_parse_hf,
	.labels = lks_hf_labels,
};
