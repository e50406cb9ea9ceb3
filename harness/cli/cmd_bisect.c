/*
 * cmd_bisect.c: 'lockstep bisect --combos F CASE...': the first bad combo of the ordered
 * list in F, by binary search over probes (harness/probe/search.h, harness/probe/probe.h);
 * then what changed from the last good to it: the keys of the two combos, and the
 * fingerprints their probes' runs stored. With --votes K each combo the search asks about
 * is probed K times and marked by their majority, for bugs that fail one run in a few.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cmd.h"
#include "harness/store/fingerprint.h"
#include "harness/probe/probe.h"
#include "harness/base/shell.h"
#include "kernels/err.h"

static const char lks_bisect_usage[] =
	"usage: lockstep bisect --combos FILE [options] CASE|DIR...\n"
	"\n"
	"Finds the first bad combo of FILE, whose combos are in order from good to bad (e.g.\n"
	"versions, oldest first). The first combo is probed first and must be good. The last\n"
	"is taken to be bad, as git bisect takes the commit it is told is bad, and is probed\n"
	"when the search reaches it (every combo before it good): so a list that never turns\n"
	"bad is found out, and a search that met a bad combo earlier spends no probe on the\n"
	"last. In between, binary search; a combo that could not be tested (exit 125, or a\n"
	"crash or timeout with --on-crash skip) is stepped around, like 'git bisect skip'.\n"
	"8 combos take at most 5 probes. Prints each probe as it goes, then the first bad\n"
	"combo, the number of probes, the keys in which the last good and the first bad combo\n"
	"differ, and the fingerprint keys in which their stored runs differ.\n"
	LKS_PROBE_HELP_PROBE
	"\n"
	"options:\n";

static const char lks_bisect_tail[] =
	"\n"
	"example:\n"
	"  lockstep bisect --combos ci/cuda-versions.ini cases/fp8_recipes.ini --check tracks_bf16\n"
	"\n"
	"exit codes: 0 the first bad combo was found,\n"
	"            2 bad usage or input, or the first combo is bad, or the last is good,\n"
	"            3 it could not be narrowed to one combo (the ones that could not be\n"
	"              tested are listed), the first or last could not be tested, or an\n"
	"              infrastructure failure\n";

struct lks_bisect_state {
	lks_probe_session ps;
	int votes;                /* --votes K: probes per combo, their majority its mark */
	int64_t *suites;          /* (combos) the suite a probe of the majority stored; 0: none */
	lks_outcome *outcomes;    /* (combos) of those probed: a probe of the majority's */
	int (*tally)[3];          /* (combos) its probes good, bad, skip, where the votes split */
};

/* Combo i probed votes times; its mark the majority's (good or bad), else skip: no
   majority says nothing of it. Where the votes split, it says so. */
static int lks_bisect_probe(void *arg, int i, lks_mark *mark)
{
	struct lks_bisect_state *b = arg;
	int n[3] = { 0, 0, 0 };
	lks_probe_result res;
	int64_t suite;

	*mark = LKS_MARK_SKIP;
	for (int v = 0; v < b->votes; v++) {
		lks_mark m;

		if (lks_probe_session_run(&b->ps, &b->ps.combos.combos[i], NULL, 0, &res, &suite))
			return -1;
		m = lks_probe_mark(b->ps.cfg, res.outcome);
		n[m]++;
		if (v == 0 || 2 * n[m] == b->votes + 1) {  /* the first's, then the majority's */
			b->outcomes[i] = res.outcome;
			b->suites[i] = suite;
		}
		if (2 * n[m] > b->votes && m != LKS_MARK_SKIP)
			*mark = m;
	}
	if (n[0] != b->votes && n[1] != b->votes && n[2] != b->votes) {
		memcpy(b->tally[i], n, sizeof(n));
		fprintf(b->ps.out, "votes split at %s: %d good, %d bad, %d skip -> %s\n",
		       b->ps.combos.combos[i].name, n[0], n[1], n[2], lks_mark_name(*mark));
	}
	return 0;
}

/* After the search: the combos whose votes split, or that none did. */
static void lks_bisect_votes(const struct lks_bisect_state *b)
{
	int split = 0;

	if (b->votes < 2)
		return;
	for (int i = 0; i < b->ps.combos.n; i++)
		if (b->tally[i][0] + b->tally[i][1] + b->tally[i][2]) {
			printf("%s%s (%d good, %d bad, %d skip)", split++ ? ", " : "votes split: ",
			       b->ps.combos.combos[i].name, b->tally[i][0], b->tally[i][1],
			       b->tally[i][2]);
		}
	if (split)
		printf("\n");
	else
		printf("votes: no combo split (%d probes a combo)\n", b->votes);
}

/* "9 probes: 3 combos, 3 votes each": every probe stored, and the combos the search
   probed, which --votes multiplies; "3 probes" with one vote, where the two are one. */
static void lks_bisect_count(const struct lks_bisect_state *b, const lks_search_result *r,
                             char *buf, size_t n)
{
	if (b->votes == 1)
		snprintf(buf, n, "%d probes", r->nprobes);
	else
		snprintf(buf, n, "%d probes: %d combos, %d votes each", b->ps.nprobes, r->nprobes,
		         b->votes);
}

/* The first run a suite stored: its id and fingerprint (malloc'd). */
struct lks_first_run {
	int64_t suite_id, run_id;
	char *fingerprint;
};

static int lks_first_run_of(void *arg, const lks_run_rec *run)
{
	struct lks_first_run *f = arg;

	if (run->info.suite_id != f->suite_id)
		return 0;
	f->run_id = run->run_id;
	f->fingerprint = strdup(run->info.fingerprint ? run->info.fingerprint : "{}");
	return 1;  /* runs come in the order they began: this is the first */
}

/* The fingerprint keys in which the runs of the last good and first bad probe differ. */
static int lks_bisect_fingerprints(struct lks_bisect_state *b, int good, int bad)
{
	struct lks_first_run g = { .suite_id = b->suites[good] }, x = { .suite_id = b->suites[bad] };
	const char *gname = b->ps.combos.combos[good].name, *bname = b->ps.combos.combos[bad].name;
	char qdb[1024];
	int rc = 0;

	if (!g.suite_id || !x.suite_id) {
		printf("fingerprints: the probe of '%s' stored no run\n", g.suite_id ? bname : gname);
		return 0;
	}
	if (lks_store_get_runs(b->ps.store, lks_first_run_of, &g) < 0
	    || lks_store_get_runs(b->ps.store, lks_first_run_of, &x) < 0)
		rc = -1;
	else if (!g.fingerprint || !x.fingerprint)
		rc = lks_err("out of memory");
	if (!rc) {
		printf("runs: %lld (%s), %lld (%s)\n", (long long)g.run_id, gname, (long long)x.run_id,
		       bname);
		lks_fingerprint_json_diff(stdout, g.fingerprint, x.fingerprint, gname, bname);
		printf("the traces side by side: lockstep diff %lld %lld --db %s\n",
		       (long long)g.run_id, (long long)x.run_id,
		       lks_shell_quote(b->ps.cfg->db, qdb, sizeof(qdb)));
	}
	free(g.fingerprint);
	free(x.fingerprint);
	return rc;
}

static int lks_bisect_found(struct lks_bisect_state *b, const lks_search_result *r, char *result,
                            size_t n)
{
	const lks_combo *good = &b->ps.combos.combos[r->last_good];
	const lks_combo *bad = &b->ps.combos.combos[r->first_bad];
	lks_combo_change *ch;
	char count[80];
	int nch;

	lks_bisect_count(b, r, count, sizeof(count));
	printf("\nfirst bad combo: %s (%s:%d)\nlast good combo: %s\n%s\n", bad->name,
	       b->ps.combos.path, bad->line, good->name, count);
	snprintf(result, n, "first bad: %s, after %s (%s)", bad->name, good->name, count);
	if (lks_combo_diff(good, bad, &ch, &nch))
		return -1;
	if (nch) {
		printf("combo keys that differ:\n");
		lks_combo_print_changes(stdout, ch, nch, LKS_COMBO_ALL, good->name, bad->name);
	} else {
		printf("combos: the same in every key\n");
	}
	free(ch);
	return lks_bisect_fingerprints(b, r->last_good, r->first_bad);
}

/* Neither end as it must be, or no single answer: why, and the exit code. */
static int lks_bisect_unfound(struct lks_bisect_state *b, const lks_search_result *r,
                              char *result, size_t n)
{
	const lks_combos *cs = &b->ps.combos;
	int end = r->status == LKS_SEARCH_START_NOT_GOOD ? 0 : cs->n - 1;
	lks_mark m = r->status == LKS_SEARCH_START_NOT_GOOD ? r->start : r->end;
	char count[80];

	if (r->status == LKS_SEARCH_SKIPPED) {
		lks_bisect_count(b, r, count, sizeof(count));
		printf("\ncannot tell which is the first bad combo (%s); it is one of:\n", count);
		for (int i = r->last_good + 1; i <= r->first_bad; i++)
			printf("  %s%s\n", cs->combos[i].name, i < r->first_bad ? "  (could not test)" : "");
		snprintf(result, n, "first bad: one of %s..%s", cs->combos[r->last_good + 1].name,
		         cs->combos[r->first_bad].name);
		return LKS_EXIT_INFRA;
	}
	if (m == LKS_MARK_SKIP) {
		const int *t = b->tally[end];
		char why[80];

		/* a split's first vote is no more its outcome than the others */
		if (t[0] + t[1] + t[2])
			snprintf(why, sizeof(why), "votes split: %d good, %d bad, %d skip", t[0], t[1], t[2]);
		else
			snprintf(why, sizeof(why), "%s", lks_outcome_name(b->outcomes[end]));
		snprintf(result, n, "the %s combo '%s' could not be tested (%s)", end ? "last" : "first",
		         cs->combos[end].name, why);
	} else {
		snprintf(result, n, "the %s combo '%s' is %s: bisect needs a %s first combo and a %s "
		         "last one", end ? "last" : "first", cs->combos[end].name, lks_mark_name(m),
		         "good", "bad");
	}
	fprintf(stderr, "lockstep: bisect: %s\n", result);
	return m == LKS_MARK_SKIP ? LKS_EXIT_INFRA : LKS_EXIT_USAGE;
}

static int lks_bisect_setup(struct lks_bisect_state *b)
{
	int n = b->ps.combos.n, rc;

	if (n < 2)
		return lks_err("%s: bisect needs at least two combos", b->ps.combos.path),
		       LKS_E_BAD_INPUT;
	for (int i = 0; i < n; i++)
		if ((rc = lks_probe_session_validate(&b->ps, &b->ps.combos.combos[i])))
			return rc;
	b->suites = calloc((size_t)n, sizeof(*b->suites));
	b->outcomes = calloc((size_t)n, sizeof(*b->outcomes));
	b->tally = calloc((size_t)n, sizeof(*b->tally));
	return b->suites && b->outcomes && b->tally ? 0 : lks_err("out of memory");
}

/* --votes K into *(int *)o->value, while the options are parsed (before any database is
   opened): from 1, and odd, since an even K can tie and a tie has no majority. 99 is far
   more than a bug that fails one run in a few needs, and bounds a typo's cost. */
static int lks_bisect_votes_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                                const char *arg)
{
	int rc = lks_opt_int(cmd->who, name, arg, 1, 99, o->value);

	if (!rc && *(int *)o->value % 2 == 0)
		return lks_usage("%s: %s wants an odd number, not %s: an even one can tie, and a "
		                 "tie has no majority", cmd->who, name, arg);
	return rc;
}

int cmd_bisect(int argc, char **argv)
{
	struct lks_bisect_state b = { .votes = 1 };
	lks_search_result r;
	lks_probe_cfg cfg;
	char result[512] = "";
	int rc;

	/* a CALL row with a value: the callback checks what an INT row cannot (odd) */
	const lks_option extra[] = {
		{ .kind = LKS_OPT_CALL, .name = "--votes", .arg = "K", .value = &b.votes,
		  .fn = lks_bisect_votes_opt,
		  .help = "probe each combo K times (odd, 1 to 99; default 1) and take the\n"
		          "majority: for bugs that fail one run in a few; where the votes\n"
		          "split, it says so, and no majority of good or bad is a skip" },
		LKS_OPT_END(),
	};

	if (lks_probe_start("bisect", argc, argv, lks_bisect_usage, lks_bisect_tail, extra, &cfg,
	                    &b.ps, &rc))
		goto out;
	if ((rc = lks_bisect_setup(&b))
	    || (rc = lks_search_bisect(b.ps.combos.n, lks_bisect_probe, &b, &r))) {
		rc = lks_probe_fail(rc);
		goto out;
	}
	if (r.status != LKS_SEARCH_FOUND)
		rc = lks_bisect_unfound(&b, &r, result, sizeof(result));
	else if (lks_bisect_found(&b, &r, result, sizeof(result)))
		rc = lks_probe_fail(-1);
	lks_bisect_votes(&b);
out:
	lks_probe_session_close(&b.ps, result[0] ? result : NULL);
	free(b.suites);
	free(b.outcomes);
	free(b.tally);
	lks_probe_cfg_release(&cfg);
	return rc;
}
