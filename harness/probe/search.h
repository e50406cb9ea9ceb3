/*
 * search.h: the two searches over combos, apart from the processes they run, so that they
 * can be tested with a predicate in place of probes:
 *
 *   lks_search_bisect  combos 0..n-1 in order, 0 good, turning bad at some point: the first
 *                      bad one, by binary search (lockstep bisect)
 *   lks_search_ddmin   n differences between a good and a bad combo: a 1-minimal subset
 *                      that, applied to the good one, still makes it bad (Zeller and
 *                      Hildebrandt, "Simplifying and Isolating Failure-Inducing Input",
 *                      IEEE TSE 2002: ddmin) (lockstep reduce)
 *
 * A probe answers good, bad or skip (it could not tell: a crash or a timeout under
 * --on-crash skip, or exit 125). Every probe is asked once: results are remembered.
 */
#ifndef LKS_HARNESS_SEARCH_H
#define LKS_HARNESS_SEARCH_H

#include <stdint.h>

typedef enum lks_mark {
	LKS_MARK_GOOD = 0,
	LKS_MARK_BAD,
	LKS_MARK_SKIP,
} lks_mark;

/* "good", "bad", "skip" */
const char *lks_mark_name(lks_mark m);

typedef enum lks_search_status {
	LKS_SEARCH_FOUND = 0,     /* bisect: first_bad (last_good just before it); ddmin: minimal */
	LKS_SEARCH_START_NOT_GOOD,  /* combo 0 / the empty subset is bad or could not be tested */
	LKS_SEARCH_END_NOT_BAD,   /* combo n-1 / the full set is good or could not be tested */
	LKS_SEARCH_SKIPPED,       /* bisect: the first bad is one of last_good+1..first_bad, the
	                             ones before first_bad could not be tested */
} lks_search_status;

typedef struct lks_search_result {
	lks_search_status status;
	lks_mark start, end;      /* what the start and end gave, where they were probed */
	int last_good, first_bad; /* bisect */
	uint64_t minimal;         /* ddmin: bit i = difference i */
	int nprobes;
} lks_search_result;

/* Returns 0 and *mark, or -1 (lks_err) when the probe could not be run at all: the search
   stops and returns -1. */
typedef int (*lks_probe_index_fn)(void *arg, int index, lks_mark *mark);
typedef int (*lks_probe_subset_fn)(void *arg, uint64_t subset, lks_mark *mark);

/*
 * Combo 0 is probed first and must be good. Combo n-1 is taken to be bad, as git bisect
 * takes the commit it is told is bad, and is probed when the search reaches it, that is
 * when every combo probed before it was good: so a sequence that never turns bad is found
 * out, and a search that met a bad combo earlier spends no probe on the last. In between,
 * binary search: the untested combo nearest the middle of (last good, first bad); a
 * skipped one is left aside and its nearest untested neighbour taken instead, like 'git
 * bisect skip'. Every FOUND answer rests on two probes, good at last_good and bad at
 * first_bad = last_good + 1. n >= 2.
 */
int lks_search_bisect(int n, lks_probe_index_fn probe, void *arg, lks_search_result *res);

/*
 * ddmin over n <= 64 differences: the empty subset (the good combo) must be good and the
 * full set (the bad combo) bad; then the set is cut into k chunks (k = 2 first), and the
 * search goes on with the first chunk that is bad by itself (k = 2), else the first
 * complement of a chunk that is bad (k - 1), else with 2k chunks, until no chunk of single
 * differences and no complement is bad: the result is 1-minimal, removing any one
 * difference from it leaves a subset that is not bad. A skip counts as not bad.
 */
int lks_search_ddmin(int n, lks_probe_subset_fn probe, void *arg, lks_search_result *res);

#endif
