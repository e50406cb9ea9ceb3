/*
 * cmd_reduce.c: 'lockstep reduce --good A --bad B --combos F CASE...': delta debugging
 * (ddmin, harness/probe/search.h) over the keys in which combos A and B differ (environment
 * variables, library path, case overrides), down to a 1-minimal set of them that, applied
 * to A, still makes the probe bad.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/strbuf.h"
#include "harness/cli/cmd.h"
#include "harness/probe/probe.h"
#include "kernels/err.h"

static const char lks_reduce_usage[] =
	"usage: lockstep reduce --good A --bad B --combos FILE [options] CASE|DIR...\n"
	"\n"
	"Finds which of the keys in which combos A and B differ make B bad: delta debugging\n"
	"(ddmin, Zeller) over the differences (env.VAR, unset.VAR, library_path, set.S.K, and\n"
	"a set.S.K both have in another order: overrides apply in order, the later wins).\n"
	"A must be good and B bad; then subsets of the differences are applied to A (each key\n"
	"taking B's value and place, or dropped where B lacks it) and probed, halving and\n"
	"refining, until a 1-minimal subset remains: it still fails, and leaving out any one\n"
	"of its keys does not. A probe that could not test, crashed or timed out counts as not\n"
	"failing (with --on-crash bad a crash or timeout counts as failing). A subset's probe\n"
	"is stored under the combo name A+{KEY,...}. At most 64 differences.\n"
	LKS_PROBE_HELP_PROBE
	"\n"
	"options:\n";

static const char lks_reduce_tail[] =
	"\n"
	"example:\n"
	"  lockstep reduce --good cuda-12.4 --bad cuda-12.6 --combos ci/versions.ini \\\n"
	"      cases/fp8_recipes.ini --check tracks_bf16\n"
	"\n"
	"exit codes: 0 a minimal difference was found,\n"
	"            2 bad usage or input, A and B do not differ, A is bad or B is good,\n"
	"            3 A or B could not be tested, or an infrastructure failure\n";

struct lks_reduce_state {
	lks_probe_session ps;
	const lks_combo *a, *b;
	lks_combo_change *ch;     /* the differences, a's targets first */
	int n;
};

static uint64_t lks_all(int n)
{
	return n == 64 ? ~0ull : (1ull << n) - 1;
}

/* A's name, B's name, or "A+{KEY,KEY}" for a subset in between, whole however long (up
   to 64 targets of 511 bytes): malloc'd, NULL when out of memory. */
static char *lks_subset_name(const struct lks_reduce_state *r, uint64_t subset)
{
	lks_strbuf sb = LKS_STRBUF_INIT;
	const char *sep = "";

	if (subset == 0 || subset == lks_all(r->n)) {
		lks_strbuf_adds(&sb, subset ? r->b->name : r->a->name);
		return lks_strbuf_detach(&sb);
	}
	lks_strbuf_addf(&sb, "%s+{", r->a->name);
	for (int i = 0; i < r->n; i++)
		if (subset >> i & 1) {
			lks_strbuf_addf(&sb, "%s%s", sep, r->ch[i].target);
			sep = ",";
		}
	lks_strbuf_adds(&sb, "}");
	return lks_strbuf_detach(&sb);
}

static int lks_reduce_probe(void *arg, uint64_t subset, lks_mark *mark)
{
	struct lks_reduce_state *r = arg;
	char *name = lks_subset_name(r, subset);
	lks_probe_result res;
	lks_combo c;
	int rc;

	if (!name)
		return lks_err("out of memory");
	rc = lks_combo_apply(r->a, r->b, r->ch, r->n, subset, name, &c);
	free(name);
	if (rc)
		return -1;
	rc = lks_probe_session_run(&r->ps, &c, NULL, 0, &res, NULL);
	lks_combo_release(&c);
	if (!rc)
		*mark = lks_probe_mark(r->ps.cfg, res.outcome);
	return rc;
}

static int lks_reduce_setup(struct lks_reduce_state *r, const char *good, const char *bad)
{
	const lks_combos *cs = &r->ps.combos;
	int rc;

	r->a = lks_combos_find(cs, good);
	r->b = lks_combos_find(cs, bad);
	if (!r->a || !r->b)
		return lks_err("%s: no combo '%s'", cs->path, r->a ? bad : good), LKS_E_BAD_INPUT;
	if ((rc = lks_probe_session_validate(&r->ps, r->a))
	    || (rc = lks_probe_session_validate(&r->ps, r->b)))
		return rc;
	if (lks_combo_diff(r->a, r->b, &r->ch, &r->n))
		return -1;
	if (r->n > LKS_COMBO_CHANGES_MAX)
		return lks_err("combos '%s' and '%s' differ in %d keys; reduce takes at most %d",
		               good, bad, r->n, LKS_COMBO_CHANGES_MAX), LKS_E_BAD_INPUT;
	if (r->n == 0)
		return lks_err("combos '%s' and '%s' do not differ", good, bad), LKS_E_BAD_INPUT;
	printf("combos '%s' and '%s' differ in %d key%s:\n", good, bad, r->n, r->n > 1 ? "s" : "");
	lks_combo_print_changes(stdout, r->ch, r->n, lks_all(r->n), good, bad);
	return 0;
}

/* Prints the search's end and makes the session's one-line result (*result, malloc'd, every
   key of the minimal difference whole; NULL out of memory). */
static int lks_reduce_report(const struct lks_reduce_state *r, const lks_search_result *s,
                             char **result)
{
	int k = __builtin_popcountll(s->minimal);
	const char *end = s->status == LKS_SEARCH_START_NOT_GOOD ? r->a->name : r->b->name;
	lks_mark m = s->status == LKS_SEARCH_START_NOT_GOOD ? s->start : s->end;
	lks_strbuf sb = LKS_STRBUF_INIT;

	if (s->status != LKS_SEARCH_FOUND) {
		lks_strbuf_addf(&sb, "combo '%s' %s", end, m == LKS_MARK_SKIP ? "could not be tested"
		                : m == LKS_MARK_GOOD ? "is good: reduce needs --bad to fail"
		                : "is bad: reduce needs --good to pass");
		fprintf(stderr, "lockstep: reduce: %s\n", sb.buf);
		*result = lks_strbuf_detach(&sb);
		return m == LKS_MARK_SKIP ? LKS_EXIT_INFRA : LKS_EXIT_USAGE;
	}
	printf("\nminimal difference (%d of %d key%s, %d probes): applied to '%s', it fails\n", k,
	       r->n, r->n > 1 ? "s" : "", s->nprobes, r->a->name);
	lks_combo_print_changes(stdout, r->ch, r->n, s->minimal, r->a->name, r->b->name);
	lks_strbuf_adds(&sb, "minimal:");
	for (int i = 0; i < r->n; i++)
		if (s->minimal >> i & 1)
			lks_strbuf_addf(&sb, " %s", r->ch[i].target);
	lks_strbuf_addf(&sb, " (%d of %d keys, %d probes)", k, r->n, s->nprobes);
	*result = lks_strbuf_detach(&sb);
	return LKS_EXIT_OK;
}

int cmd_reduce(int argc, char **argv)
{
	struct lks_reduce_state r = { 0 };
	const char *good = NULL, *bad = NULL;
	const lks_option extra[] = {
		LKS_OPT_STRING("--good", "A", &good, "the good combo"),
		LKS_OPT_STRING("--bad", "B", &bad, "the bad combo"),
		LKS_OPT_END(),
	};
	lks_search_result s;
	lks_probe_cfg cfg;
	char *result = NULL;
	int rc;

	if (lks_probe_start("reduce", argc, argv, lks_reduce_usage, lks_reduce_tail, extra, &cfg,
	                    &r.ps, &rc))
		goto out;
	if ((rc = lks_reduce_setup(&r, good, bad))
	    || (rc = lks_search_ddmin(r.n, lks_reduce_probe, &r, &s))) {
		rc = lks_probe_fail(rc);
		goto out;
	}
	rc = lks_reduce_report(&r, &s, &result);
out:
	lks_probe_session_close(&r.ps, result);
	free(result);
	free(r.ch);
	lks_probe_cfg_release(&cfg);
	return rc;
}
