/*
 * search.c: bisection over an ordered list and ddmin over a set (see search.h).
 */
#include "harness/probe/search.h"

#include <stdlib.h>

#include "kernels/err.h"

#define LKS_UNTESTED (-1)

const char *lks_mark_name(lks_mark m)
{
	static const char *const names[] = { "good", "bad", "skip" };

	return (unsigned)m < 3 ? names[m] : "?";
}

/* ---- bisect ---- */

struct lks_bisect {
	lks_probe_index_fn probe;
	void *arg;
	int *marks;               /* (n) lks_mark, or LKS_UNTESTED */
	lks_search_result *res;
};

static int lks_bisect_probe(struct lks_bisect *b, int i)
{
	lks_mark m;

	if (b->probe(b->arg, i, &m))
		return -1;
	b->marks[i] = (int)m;
	b->res->nprobes++;
	return 0;
}

/* The untested index in (lo, hi) nearest their middle, the lower one first; -1: none. */
static int lks_bisect_next(const struct lks_bisect *b, int lo, int hi)
{
	int mid = lo + (hi - lo) / 2;

	for (int d = 0; d < hi - lo; d++) {
		if (mid - d > lo && b->marks[mid - d] == LKS_UNTESTED)
			return mid - d;
		if (mid + d < hi && b->marks[mid + d] == LKS_UNTESTED)
			return mid + d;
	}
	return -1;
}

/* Narrows (lo, hi] down to where the search stands when nothing untested is left in it. */
static int lks_bisect_narrow(struct lks_bisect *b, int n, int *lo, int *hi)
{
	int m;

	while ((m = lks_bisect_next(b, *lo, *hi)) >= 0 || b->marks[*hi] == LKS_UNTESTED) {
		if (m < 0)
			m = *hi;  /* the last combo, reached with every combo before it good */
		if (lks_bisect_probe(b, m))
			return -1;
		if (b->marks[m] == LKS_MARK_GOOD)
			*lo = m;
		else if (b->marks[m] == LKS_MARK_BAD)
			*hi = m;
		if (m == n - 1 && b->marks[m] != LKS_MARK_BAD) {
			b->res->end = (lks_mark)b->marks[m];
			b->res->status = LKS_SEARCH_END_NOT_BAD;
			return 0;
		}
	}
	return 0;
}

int lks_search_bisect(int n, lks_probe_index_fn probe, void *arg, lks_search_result *res)
{
	struct lks_bisect b = { probe, arg, NULL, res };
	int lo = 0, hi = n - 1, rc = -1;

	*res = (lks_search_result){ .last_good = -1, .first_bad = -1 };
	if (n < 2)
		return lks_err("bisect needs at least two combos, not %d", n);
	if (!(b.marks = malloc((size_t)n * sizeof(*b.marks))))
		return lks_err("out of memory");
	for (int i = 0; i < n; i++)
		b.marks[i] = LKS_UNTESTED;
	if (lks_bisect_probe(&b, 0))
		goto out;
	res->start = (lks_mark)b.marks[0];
	rc = 0;
	if (res->start != LKS_MARK_GOOD) {
		res->status = LKS_SEARCH_START_NOT_GOOD;
		goto out;
	}
	if ((rc = lks_bisect_narrow(&b, n, &lo, &hi)) || res->status != LKS_SEARCH_FOUND)
		goto out;
	res->end = (lks_mark)b.marks[n - 1];
	res->last_good = lo;
	res->first_bad = hi;
	res->status = hi == lo + 1 ? LKS_SEARCH_FOUND : LKS_SEARCH_SKIPPED;
out:
	free(b.marks);
	return rc;
}

/* ---- ddmin ---- */

struct lks_ddmin {
	lks_probe_subset_fn probe;
	void *arg;
	uint64_t *seen;           /* subsets probed, and what they gave */
	lks_mark *marks;
	int nseen, cap;
	lks_search_result *res;
};

static int lks_ddmin_test(struct lks_ddmin *d, uint64_t subset, lks_mark *mark)
{
	for (int i = 0; i < d->nseen; i++)
		if (d->seen[i] == subset) {
			*mark = d->marks[i];
			return 0;
		}
	if (d->nseen == d->cap) {
		int cap = d->cap ? 2 * d->cap : 32;
		uint64_t *s = realloc(d->seen, (size_t)cap * sizeof(*s));
		lks_mark *m = s ? realloc(d->marks, (size_t)cap * sizeof(*m)) : NULL;

		if (s)
			d->seen = s;
		if (!m)
			return lks_err("out of memory");
		d->marks = m;
		d->cap = cap;
	}
	if (d->probe(d->arg, subset, mark))
		return -1;
	d->seen[d->nseen] = subset;
	d->marks[d->nseen++] = *mark;
	d->res->nprobes++;
	return 0;
}

static int lks_popcount(uint64_t x)
{
	return __builtin_popcountll(x);
}

/* Chunk i of k of set: its members in order, cut into k runs as equal as can be. */
static uint64_t lks_chunk(uint64_t set, int k, int i)
{
	int size = lks_popcount(set), from = size * i / k, to = size * (i + 1) / k, at = 0;
	uint64_t chunk = 0;

	for (int bit = 0; bit < 64; bit++)
		if (set >> bit & 1) {
			if (at >= from && at < to)
				chunk |= 1ull << bit;
			at++;
		}
	return chunk;
}

/* One round at granularity *k: set and *k narrowed where a chunk or complement is bad;
   *done when neither is and the chunks are single differences already. */
static int lks_ddmin_round(struct lks_ddmin *d, uint64_t *set, int *k, int *done)
{
	int size = lks_popcount(*set);
	lks_mark m;

	for (int i = 0; i < *k; i++) {
		uint64_t chunk = lks_chunk(*set, *k, i);

		if (lks_ddmin_test(d, chunk, &m))
			return -1;
		if (m == LKS_MARK_BAD) {
			*set = chunk;
			*k = 2;
			return 0;
		}
	}
	/* with two chunks each complement is the other chunk, tested just above */
	for (int i = 0; *k > 2 && i < *k; i++) {
		uint64_t rest = *set & ~lks_chunk(*set, *k, i);

		if (lks_ddmin_test(d, rest, &m))
			return -1;
		if (m == LKS_MARK_BAD) {
			*set = rest;
			*k = *k - 1 > 2 ? *k - 1 : 2;
			return 0;
		}
	}
	if (*k >= size)
		*done = 1;
	else
		*k = 2 * *k < size ? 2 * *k : size;
	return 0;
}

int lks_search_ddmin(int n, lks_probe_subset_fn probe, void *arg, lks_search_result *res)
{
	struct lks_ddmin d = { .probe = probe, .arg = arg, .res = res };
	uint64_t set = n == 64 ? ~0ull : (1ull << n) - 1;
	int k = 2, done = 0, rc = -1;

	*res = (lks_search_result){ .last_good = -1, .first_bad = -1 };
	if (n < 1 || n > 64)
		return lks_err("reduce takes 1 to 64 differences, not %d", n);
	if (lks_ddmin_test(&d, 0, &res->start))
		goto out;
	rc = 0;
	if (res->start != LKS_MARK_GOOD) {
		res->status = LKS_SEARCH_START_NOT_GOOD;
		goto out;
	}
	if ((rc = lks_ddmin_test(&d, set, &res->end)))
		goto out;
	if (res->end != LKS_MARK_BAD) {
		res->status = LKS_SEARCH_END_NOT_BAD;
		goto out;
	}
	while (!done && lks_popcount(set) > 1)
		if ((rc = lks_ddmin_round(&d, &set, &k, &done)))
			goto out;
	res->minimal = set;
	res->status = LKS_SEARCH_FOUND;
out:
	free(d.seen);
	free(d.marks);
	return rc;
}
