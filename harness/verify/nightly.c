/*
 * nightly.c: night over night (nightly.h): each run of a suite against the same case and
 * run of the latest earlier whole suite with the same settings, through the bitwise check
 * (check.h, so the one walker of walk.h) as 'lockstep diff' compares two runs. Everything
 * is read in one snapshot of the database, as other 'run's and a 'prune' write it.
 */
#include "harness/verify/nightly.h"

#include <stdlib.h>
#include <string.h>

#include "harness/base/shell.h"
#include "harness/engine/case.h"
#include "harness/store/fingerprint.h"
#include "harness/store/run.h"
#include "harness/verify/check.h"
#include "kernels/err.h"

/* A stored run as much as the comparison needs of it. */
struct lks_nrun {
	int64_t id, suite;
	char *case_name, *case_path, *run_name, *recipe, *options, *backend, *combo;
	char *settings;           /* options without a planted fault (" inject: SPEC") */
	int W, steps;
	uint64_t seed;
	const char *status;       /* "complete", "incomplete", "failed" (static) */
	int whole;                /* complete, of a suite whose runs all are (lks_nightly_whole) */
};

/* One verdict and the strings it points to. */
struct lks_nverdict {
	lks_nightly_rec rec;
	const struct lks_nrun *t, *p;  /* tonight's and the earlier run; NULL: none */
	int order;                /* the order found, for a stable sort */
	char keys[512], message[512], tensor[128], field[32];
};

struct lks_nightly {
	struct lks_nrun *runs;
	int n, cap;
	struct lks_nverdict *v;
	int nv;
};

static char *lks_dup(const char *s)
{
	return strdup(s ? s : "");
}

/* nightly.h. runner.c writes a fault as " inject: SPEC" before any " set: ". */
char *lks_nightly_settings(const char *options)
{
	const char *inj = strstr(options, " inject: "), *set;
	char *s;

	if (!inj)
		return strdup(options);
	set = strstr(inj, " set: ");
	if (!(s = malloc(strlen(options) + 1)))
		return NULL;
	memcpy(s, options, (size_t)(inj - options));
	strcpy(s + (inj - options), set ? set : "");
	return s;
}

static int lks_nightly_take(void *arg, const lks_run_rec *rec)
{
	struct lks_nightly *N = arg;
	struct lks_nrun *r;
	const lks_run_info *i = &rec->info;

	if (i->suite_id <= 0)  /* an import belongs to no night */
		return 0;
	if (N->n == N->cap) {
		int cap = N->cap ? 2 * N->cap : 64;
		struct lks_nrun *p = realloc(N->runs, sizeof(*p) * (size_t)cap);

		if (!p)
			return lks_err("out of memory");
		N->runs = p;
		N->cap = cap;
	}
	r = &N->runs[N->n++];
	*r = (struct lks_nrun){ .id = rec->run_id, .suite = i->suite_id, .W = i->world_size,
	                        .steps = i->steps, .seed = i->seed,
	                        .status = !rec->status ? "incomplete"
	                                  : !strcmp(rec->status, "complete") ? "complete"
	                                  : !strcmp(rec->status, "failed") ? "failed"
	                                  : "incomplete" };
	r->case_name = lks_dup(i->case_name);
	r->case_path = lks_dup(i->case_path);
	r->run_name = lks_dup(i->run_name);
	r->recipe = lks_dup(i->recipe);
	r->options = lks_dup(i->options);
	r->backend = lks_dup(i->backend);
	r->combo = lks_dup(i->combo);
	r->settings = lks_nightly_settings(r->options);
	if (!r->settings || !r->case_name || !r->case_path || !r->run_name || !r->recipe
	    || !r->options || !r->backend || !r->combo)
		return lks_err("out of memory");
	return 0;
}

static void lks_nightly_release(struct lks_nightly *N)
{
	for (int i = 0; i < N->n; i++) {
		struct lks_nrun *r = &N->runs[i];

		free(r->case_name), free(r->case_path), free(r->run_name);
		free(r->recipe), free(r->options), free(r->backend), free(r->combo);
		free(r->settings);
	}
	free(N->runs);
	free(N->v);
}

/* The same case and run, made with the same settings (nightly.h). An imported run's
   ranks and steps are what its log held, not settings: a log that stops early tonight is
   the same run changed, not a new one. */
static int lks_same_settings(const struct lks_nrun *a, const struct lks_nrun *b)
{
	int imported = !strncmp(a->backend, "import:", 7);

	return !strcmp(a->case_name, b->case_name) && !strcmp(a->run_name, b->run_name)
	    && !strcmp(a->recipe, b->recipe) && !strcmp(a->settings, b->settings)
	    && !strcmp(a->backend, b->backend) && !strcmp(a->combo, b->combo)
	    && (imported || (a->W == b->W && a->steps == b->steps)) && a->seed == b->seed;
}

/* A suite is whole when every run it stored is complete. While one is not, its process
   stopped (killed, or a run failed) or is still writing it: the suite is passed over,
   its complete runs too, so that tonight is compared with nights that ended, and a
   later night compares with it once it is whole. Between two of its runs a suite still
   being written looks whole: what it holds then is complete runs, each as good to
   compare with as any, and the runs it has not begun are not gone. */
static void lks_nightly_whole(struct lks_nightly *N)
{
	for (int i = 0; i < N->n; i++)
		N->runs[i].whole = !strcmp(N->runs[i].status, "complete");
	for (int i = 0; i < N->n; i++)
		if (strcmp(N->runs[i].status, "complete"))
			for (int j = 0; j < N->n; j++)
				N->runs[j].whole &= N->runs[j].suite != N->runs[i].suite;
}

/* The run of the latest whole suite before t's with t's settings (the last stored of
   it). */
static const struct lks_nrun *lks_nightly_prev(const struct lks_nightly *N,
                                               const struct lks_nrun *t)
{
	const struct lks_nrun *best = NULL;

	for (int i = 0; i < N->n; i++) {
		const struct lks_nrun *r = &N->runs[i];

		if (r->whole && r->suite < t->suite && lks_same_settings(r, t)
		    && (!best || r->suite > best->suite
		        || (r->suite == best->suite && r->id > best->id)))
			best = r;
	}
	return best;
}

static struct lks_nverdict *lks_nightly_add(struct lks_nightly *N, const struct lks_nrun *t,
                                            const struct lks_nrun *p, const char *verdict)
{
	struct lks_nverdict *v = &N->v[N->nv++];
	const struct lks_nrun *r = t ? t : p;

	memset(v, 0, sizeof(*v));
	v->order = N->nv - 1;
	v->t = t;
	v->p = p;
	v->rec = (lks_nightly_rec){ .case_name = r->case_name, .run_name = r->run_name,
	                            .run_id = t ? t->id : 0, .prev_run_id = p ? p->id : 0,
	                            .prev_suite_id = p ? p->suite : 0, .verdict = verdict,
	                            .step = -1, .rank = -1 };
	return v;
}

/* Whether two runs stored as many rows of table x. */
static int lks_same_count(lks_store *s, int64_t a, int64_t b, lks_store_table x, int *same)
{
	int64_t na, nb;

	if (lks_store_count(s, a, x, &na) || lks_store_count(s, b, x, &nb))
		return -1;
	*same = na == nb;
	return 0;
}

/* When 'lockstep prune' removed the stat rows of v's runs, words that say so (else ""):
   they are then compared on their step rows alone (lks_check_bitwise_kept). */
static int lks_nightly_pruned(lks_store *s, const struct lks_nverdict *v, char *buf, size_t n)
{
	const struct lks_nrun *r[2] = { v->p, v->t };
	int pr[2];

	for (int i = 0; i < 2; i++)
		if (lks_check_run_pruned(s, r[i]->id, &pr[i]))
			return -1;
	buf[0] = 0;
	if (pr[0] || pr[1])
		snprintf(buf, n, " (the tensors' stat rows of run %lld were pruned: compared on "
		         "loss and grad norm alone)", (long long)r[pr[0] ? 0 : 1]->id);
	return 0;
}

/* The fault planted in a run, as its options hold it (" inject: SPEC", before any
   " set: "): its start and length (0: none). */
static size_t lks_fault_part(const char *options, const char **at)
{
	const char *set;

	if (!(*at = strstr(options, " inject: ")))
		return 0;
	set = strstr(*at, " set: ");
	return set ? (size_t)(set - *at) : strlen(*at);
}

/* Whether the case texts of two runs of one case and run differ in what the run trains,
   beside its settings (compared before it is paired): the model, the optimizer and the
   case's world size (the global batch). A comment, a check or another run edited changes
   nothing it trains; a text that no longer reads differs. */
static int lks_case_trains_differ(const lks_stored_run *p, const lks_stored_run *t)
{
	lks_case a, b;
	int differ = 1;

	if (!strcmp(p->case_text, t->case_text))
		return 0;
	if (lks_case_load_text(p->case_name, p->case_text, &a))
		return 1;
	if (!lks_case_load_text(t->case_name, t->case_text, &b)) {
		differ = memcmp(&a.model, &b.model, sizeof(a.model))
		         || memcmp(&a.optim, &b.optim, sizeof(a.optim)) || a.world_size != b.world_size;
		lks_case_release(&b);
	}
	lks_case_release(&a);
	return differ;
}

/* The keys that tell two runs' makings apart (v->keys, their count): the fingerprint's,
   but env.LOCKSTEP_INJECT (a fault planted elsewhere changes nothing in this run: what it
   planted here is the pseudo-key 'inject'), and 'case.text' where the case's text differs
   in what the run trains. */
/* key appended to v->keys, blank-separated, where it fits whole; *n counts it anyway */
static void lks_nightly_key(struct lks_nverdict *v, int *n, const char *key)
{
	size_t len = strlen(v->keys);

	if (len + 1 + strlen(key) < sizeof(v->keys))
		snprintf(v->keys + len, sizeof(v->keys) - len, "%s%s", len ? " " : "", key);
	(*n)++;
}

static int lks_nightly_keys(const lks_stored_run *p, const lks_stored_run *t,
                            struct lks_nverdict *v)
{
	const char *fa, *fb;
	size_t na = lks_fault_part(v->p->options, &fa), nb = lks_fault_part(v->t->options, &fb);
	char all[sizeof(v->keys)], *key, *save = NULL;
	int n = 0;

	lks_fingerprint_json_keys(p->fingerprint, t->fingerprint, all, sizeof(all));
	v->keys[0] = 0;
	for (key = strtok_r(all, " ", &save); key; key = strtok_r(NULL, " ", &save))
		if (strcmp(key, "env.LOCKSTEP_INJECT"))
			lks_nightly_key(v, &n, key);
	if (na != nb || (na && memcmp(fa, fb, na)))
		lks_nightly_key(v, &n, "inject");
	if (lks_case_trains_differ(p, t))
		lks_nightly_key(v, &n, "case.text");
	return n;
}

/* Tonight's run t against the earlier p: the verdict, the divergence, the keys. */
static int lks_nightly_pair(lks_store *s, struct lks_nverdict *v)
{
	lks_check_cfg k = { .name = "nightly", .kind = LKS_CHECK_BITWISE, .a = "tonight",
	                    .b = "before", .exp_step = -1, .exp_rank = -1 };
	static const lks_store_table tables[] = { LKS_TABLE_TENSORS, LKS_TABLE_STEPS,
	                                          LKS_TABLE_STATS };
	static const char *const what[] = { "tensors", "step rows", "stat rows" };
	lks_check_result res;
	lks_stored_run t, p;
	char pruned[160];
	int nkeys, same = 1;

	/* the fingerprints and case texts of the two runs alone: a history holds many */
	lks_stored_run_init(&t);
	lks_stored_run_init(&p);
	if (lks_stored_run_load(s, v->t->id, LKS_LOAD_INFO, &t)
	    || lks_stored_run_load(s, v->p->id, LKS_LOAD_INFO, &p)) {
		lks_stored_run_release(&t);
		lks_stored_run_release(&p);
		return -1;
	}
	nkeys = lks_nightly_keys(&p, &t, v);
	lks_stored_run_release(&t);
	lks_stored_run_release(&p);
	/* an imported log's fingerprint is lockstep's, not the framework's that wrote it: an
	   equal one proves no sameness of software, so a change is never the hardware alarm */
	if (!strncmp(v->t->backend, "import:", 7)) {
		size_t len = strlen(v->keys);

		nkeys++;
		snprintf(v->keys + len, sizeof(v->keys) - len, "%simport.software", len ? " " : "");
	}
	v->rec.fp_equal = nkeys == 0;
	if (lks_nightly_pruned(s, v, pruned, sizeof(pruned)))
		return -1;
	if (lks_check_bitwise_kept(s, &k, v->t->id, v->p->id, pruned[0] != 0, &res))
		return -1;
	if (res.verdict != LKS_VERDICT_PASS) {
		v->rec.verdict = "changed";
		v->rec.step = res.step;
		v->rec.rank = res.rank;
		snprintf(v->tensor, sizeof(v->tensor), "%s", res.tensor);
		snprintf(v->field, sizeof(v->field), "%s", res.field ? res.field : "");
		snprintf(v->message, sizeof(v->message), "%s%s", res.message, pruned);
		return 0;
	}
	if (pruned[0])
		snprintf(v->message, sizeof(v->message), "bit for bit in loss and grad norm%s",
		         pruned);
	/* the walk compares what both traced: a run that traced more or fewer rows changed;
	   a pruned run has no stat rows to count */
	for (int i = 0; i < (pruned[0] ? 2 : 3) && same; i++) {
		if (lks_same_count(s, v->t->id, v->p->id, tables[i], &same))
			return -1;
		if (!same) {
			v->rec.verdict = "changed";
			snprintf(v->message, sizeof(v->message), "the runs stored different numbers "
			         "of %s (equal where both have them)", what[i]);
		}
	}
	if (same)
		v->rec.verdict = "unchanged";
	return 0;
}

/* Runs of the latest whole suite before tonight that ran t's case, gone when tonight has
   no run with their settings. */
static void lks_nightly_gone(struct lks_nightly *N, int64_t suite_id, const struct lks_nrun *t)
{
	int64_t last = 0;

	for (int i = 0; i < N->n; i++) {
		const struct lks_nrun *r = &N->runs[i];

		if (r->whole && r->suite < suite_id && r->suite > last
		    && !strcmp(r->case_name, t->case_name))
			last = r->suite;
	}
	for (int i = 0; i < N->n; i++) {
		const struct lks_nrun *p = &N->runs[i];
		int found = 0;

		if (p->suite != last || strcmp(p->case_name, t->case_name))
			continue;
		for (int j = 0; j < N->nv && !found; j++)  /* the case's gone runs once */
			found = N->v[j].p == p && !N->v[j].t;
		for (int j = 0; j < N->n && !found; j++)
			found = N->runs[j].suite == suite_id && lks_same_settings(&N->runs[j], p);
		if (!found)
			lks_nightly_add(N, NULL, p, "gone");
	}
}

/* A suite passed over (not whole), said with its first run that is not complete. */
static void lks_nightly_say_suite(FILE *out, const struct lks_nightly *N, int64_t suite)
{
	for (int i = 0; out && i < N->n; i++) {
		const struct lks_nrun *r = &N->runs[i];

		if (r->suite == suite && strcmp(r->status, "complete")) {
			fprintf(out, "passed over: suite %lld, whose run %lld (%s/%s) is %s (its "
			        "process was killed or failed, or is still writing it): compared with "
			        "whole suites alone\n", (long long)suite, (long long)r->id,
			        r->case_name, r->run_name, r->status);
			return;
		}
	}
}

static int lks_nightly_said(const int64_t *said, int n, int64_t suite)
{
	for (int i = 0; i < n; i++)
		if (said[i] == suite)
			return 1;
	return 0;
}

/* What night over night passed over, said (out may be NULL) and counted in *n: tonight's
   runs that are not complete, and each suite, once, that is not whole (lks_nightly_whole)
   and would have been compared with: it holds a run with the settings of a run of
   tonight, and lies between the two (or before tonight, for a run that is new). */
static int lks_nightly_passed(const struct lks_nightly *N, int64_t suite_id, FILE *out,
                              int *n)
{
	int64_t *said = malloc(sizeof(*said) * ((size_t)N->n + 1));
	int nsuites = 0;

	*n = 0;
	if (!said)
		return lks_err("out of memory");
	for (int i = 0; i < N->n; i++) {
		const struct lks_nrun *t = &N->runs[i], *p;

		if (t->suite != suite_id)
			continue;
		if (strcmp(t->status, "complete")) {
			if (out)
				fprintf(out, "passed over: %s/%s (run %lld) of tonight is %s: not "
				        "compared\n", t->case_name, t->run_name, (long long)t->id,
				        t->status);
			(*n)++;
			continue;
		}
		p = lks_nightly_prev(N, t);
		for (int j = 0; j < N->n; j++) {
			const struct lks_nrun *r = &N->runs[j];

			if (r->whole || r->suite >= suite_id || (p && r->suite <= p->suite)
			    || !lks_same_settings(r, t) || lks_nightly_said(said, nsuites, r->suite))
				continue;
			said[nsuites++] = r->suite;
			lks_nightly_say_suite(out, N, r->suite);
		}
	}
	*n += nsuites;
	free(said);
	return 0;
}

/* 'lockstep bisect' along the versions of one key (a library, the driver, the commit,
   the compiler), else 'lockstep reduce' over the differences (env.VAR, case.text: the
   case's keys as set.S.K, several keys); the combos file is the user's to write from the
   keys printed. */
static void lks_nightly_narrow(FILE *out, const struct lks_nverdict *v)
{
	char qpath[1200];
	const char *path = lks_shell_quote(v->t->case_path, qpath, sizeof(qpath));

	if (strstr(v->keys, "import.software"))
		fprintf(out, "  an imported log: lockstep does not see the software that wrote it; "
		        "compare the framework's versions of the two nights, or bisect with a probe "
		        "that trains and imports the log (%s)\n", path);
	else if (!strcmp(v->keys, "inject"))
		fprintf(out, "  the fault planted in it is not last night's (its options' inject: "
		        "LOCKSTEP_INJECT or the case's): the change is the fault's\n");
	else if (!strchr(v->keys, ' ') && strncmp(v->keys, "env.", 4)
	         && strcmp(v->keys, "case.text"))
		fprintf(out, "  narrow it: lockstep bisect --combos COMBOS.ini %s   (COMBOS.ini: "
		        "one [combo] per version of %s between last night's and tonight's)\n", path,
		        v->keys);
	else
		fprintf(out, "  narrow it: lockstep reduce --good last-night --bad tonight "
		        "--combos COMBOS.ini %s   (COMBOS.ini: [combo last-night] and [combo "
		        "tonight] with the keys above)\n", path);
}

static void lks_nightly_print(FILE *out, const struct lks_nverdict *v, const char *db)
{
	const lks_nightly_rec *r = &v->rec;
	char qdb[1100];

	if (!strcmp(r->verdict, "new")) {
		fprintf(out, "new:       %s/%s (run %lld): no earlier run with these settings\n",
		        r->case_name, r->run_name, (long long)r->run_id);
		return;
	}
	if (!strcmp(r->verdict, "gone")) {
		fprintf(out, "gone:      %s/%s (run %lld of suite %lld): not run tonight with "
		        "these settings\n", r->case_name, r->run_name, (long long)r->prev_run_id,
		        (long long)r->prev_suite_id);
		return;
	}
	fprintf(out, "%s %s/%s (run %lld; before: run %lld of suite %lld)%s%s\n",
	        !strcmp(r->verdict, "unchanged") ? "unchanged:"
	        : r->fp_equal ? "ALARM changed with the same fingerprint:" : "changed:  ",
	        r->case_name, r->run_name, (long long)r->run_id, (long long)r->prev_run_id,
	        (long long)r->prev_suite_id, r->message ? ": " : "", r->message ? r->message : "");
	if (!strcmp(r->verdict, "unchanged"))
		return;
	if (r->fp_equal) {
		fprintf(out, "  the same software gave different bits: suspect the hardware or a "
		        "non-determinism; see: lockstep diff %lld %lld --db %s\n",
		        (long long)r->prev_run_id, (long long)r->run_id,
		        lks_shell_quote(db, qdb, sizeof(qdb)));
		return;
	}
	fprintf(out, "  fingerprint keys that differ: %s\n", r->fp_keys);
	lks_nightly_narrow(out, v);
}

/* The order of printing and storing: alarms, other changes, new, gone, unchanged. */
static int lks_nightly_rank(const struct lks_nverdict *v)
{
	const char *x = v->rec.verdict;

	if (!strcmp(x, "changed"))
		return v->rec.fp_equal ? 0 : 1;
	return !strcmp(x, "new") ? 2 : !strcmp(x, "gone") ? 3 : 4;
}

static int lks_nightly_cmp(const void *pa, const void *pb)
{
	const struct lks_nverdict *a = pa, *b = pb;
	int ra = lks_nightly_rank(a), rb = lks_nightly_rank(b);

	return ra != rb ? ra - rb : a->order - b->order;
}

/* The verdict of each complete run of tonight, and the gone runs, in printing order. */
static int lks_nightly_verdicts(lks_store *s, struct lks_nightly *N, int64_t suite_id)
{
	/* at most one verdict per run of the database */
	if (!(N->v = calloc((size_t)N->n, sizeof(*N->v))))
		return lks_err("out of memory");
	for (int i = 0; i < N->n; i++) {
		const struct lks_nrun *r = &N->runs[i], *p;

		if (r->suite != suite_id || strcmp(r->status, "complete"))  /* passed over */
			continue;
		if (!(p = lks_nightly_prev(N, r))) {
			lks_nightly_add(N, r, NULL, "new");
			continue;
		}
		if (lks_nightly_pair(s, lks_nightly_add(N, r, p, "unchanged")))
			return -1;
	}
	for (int i = 0; i < N->n; i++)
		if (N->runs[i].suite == suite_id && !strcmp(N->runs[i].status, "complete"))
			lks_nightly_gone(N, suite_id, &N->runs[i]);
	qsort(N->v, (size_t)N->nv, sizeof(*N->v), lks_nightly_cmp);
	return 0;
}

/* Each verdict stored, counted and (but an unchanged one without a word) printed. */
static int lks_nightly_store(lks_store *s, struct lks_nightly *N, int64_t suite_id,
                             const char *db, FILE *out, lks_nightly_tally *t)
{
	for (int i = 0; i < N->nv; i++) {
		struct lks_nverdict *v = &N->v[i];
		const char *x = v->rec.verdict;

		/* the strings of v, where qsort put it */
		v->rec.suite_id = suite_id;
		v->rec.fp_keys = v->keys;
		v->rec.message = v->message[0] ? v->message : NULL;
		v->rec.tensor = v->tensor[0] ? v->tensor : NULL;
		v->rec.field = v->field[0] ? v->field : NULL;
		if (lks_store_nightly(s, &v->rec))
			return -1;
		t->unchanged += !strcmp(x, "unchanged");
		t->changed += !strcmp(x, "changed");
		t->silent += !strcmp(x, "changed") && v->rec.fp_equal;
		t->added += !strcmp(x, "new");
		t->gone += !strcmp(x, "gone");
		if (out && (strcmp(x, "unchanged") || v->rec.message))  /* pruned: said */
			lks_nightly_print(out, v, db);
	}
	return 0;
}

int lks_nightly_compare(lks_store *s, int64_t suite_id, const char *db, FILE *out,
                        lks_nightly_tally *t)
{
	struct lks_nightly N = { 0 };
	int rc = -1, earlier = 0;

	memset(t, 0, sizeof(*t));
	/* one snapshot: each run's status, its suite's prune mark and its rows as they were
	   together, whatever another 'run' or a 'prune' commits meanwhile */
	if (lks_store_read_begin(s) || lks_store_get_runs(s, lks_nightly_take, &N))
		goto out;
	lks_nightly_whole(&N);
	for (int i = 0; i < N.n; i++)
		earlier |= N.runs[i].whole && N.runs[i].suite < suite_id;
	if (!earlier) {  /* nothing to compare with: what was passed over, if anything, said */
		if (lks_nightly_passed(&N, suite_id, NULL, &t->passed))
			goto out;
		if (out && t->passed)
			fprintf(out, "\nnight over night: suite %lld: no earlier whole suite to "
			        "compare with\n", (long long)suite_id);
		rc = lks_nightly_passed(&N, suite_id, out, &t->passed);
		goto out;
	}
	if (lks_nightly_verdicts(s, &N, suite_id))
		goto out;
	lks_store_read_end(s);  /* before the verdicts are written */
	t->compared = 1;
	if (out)
		fprintf(out, "\nnight over night: suite %lld against the latest earlier whole suite "
		        "with the same settings, run by run\n", (long long)suite_id);
	if (lks_nightly_passed(&N, suite_id, out, &t->passed)
	    || lks_nightly_store(s, &N, suite_id, db, out, t))
		goto out;
	if (out)
		fprintf(out, "night over night: %d unchanged, %d changed (%d with the same "
		        "fingerprint), %d new, %d gone%s\n", t->unchanged, t->changed, t->silent,
		        t->added, t->gone, t->passed ? "; some passed over (above)" : "");
	rc = 0;
out:
	lks_store_read_end(s);
	lks_nightly_release(&N);
	return rc;
}
