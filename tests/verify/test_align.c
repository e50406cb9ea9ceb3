/*
 * test_align.c: pairing two sequences of keys (harness/verify/align.h): empty sides, equal
 * ones, an insertion, a removal, repeated names, a moved entry, the first occurrence
 * preferred, the moved pass declining a key with two unpaired entries; thousands of random
 * small sequences against a plain O(N*M) dynamic-programming LCS (length, exactness under
 * random bounds, a valid common subsequence, the moved pass's rule, the same answer twice);
 * the fallback beyond max_d (still a common subsequence, exact 0); a million entries with
 * five edits and twenty thousand with nothing in common.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/verify/align.h"

/* The keys of a test: one letter, one key (names as the tests write them). */
enum { A = 'A', B, C, D, E, F, X = 'X', Y, MM = 100, ADD, RELU };

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The LCS's length by the textbook table, one row kept. */
static int dp_lcs(const uint64_t *a, int na, const uint64_t *b, int nb)
{
	int *row = calloc((size_t)nb + 1, sizeof *row);
	int r;

	cr_assert(row);
	for (int i = 1; i <= na; i++) {
		int diag = 0;   /* row[j - 1] of the row before */

		for (int j = 1; j <= nb; j++) {
			int up = row[j];

			row[j] = a[i - 1] == b[j - 1] ? diag + 1 : (up > row[j - 1] ? up : row[j - 1]);
			diag = up;
		}
	}
	r = row[nb];
	free(row);
	return r;
}

/* What every result must be: amap and bmap inverse maps of equal keys, NONE exactly where
   unpaired, the same kind on both sides, the SAME pairs increasing in a and in b, the
   counts right. */
static void check_valid(const lks_align *al, const uint64_t *a, int na, const uint64_t *b,
                        int nb)
{
	int last = -1, nsame = 0, nmoved = 0;

	for (int i = 0; i < na; i++) {
		int j = al->amap[i];

		if (j < 0) {
			cr_assert_eq(j, -1);
			cr_assert_eq(al->ahow[i], LKS_ALIGN_NONE, "a[%d]", i);
			continue;
		}
		cr_assert_lt(j, nb);
		cr_assert_eq(al->bmap[j], i, "a[%d] -> b[%d] -> a[%d]", i, j, al->bmap[j]);
		cr_assert_eq(a[i], b[j], "a[%d] and b[%d] paired with different keys", i, j);
		cr_assert_eq(al->ahow[i], al->bhow[j]);
		if (al->ahow[i] == LKS_ALIGN_SAME) {
			cr_assert_gt(j, last, "SAME pairs out of order at a[%d]", i);
			last = j;
			nsame++;
		} else {
			cr_assert_eq(al->ahow[i], LKS_ALIGN_MOVED);
			nmoved++;
		}
	}
	for (int j = 0; j < nb; j++) {
		int i = al->bmap[j];

		if (i < 0)
			cr_assert_eq(al->bhow[j], LKS_ALIGN_NONE, "b[%d]", j);
		else
			cr_assert_eq(al->amap[i], j);
	}
	cr_assert_eq(al->nsame, nsame);
	cr_assert_eq(al->nmoved, nmoved);
}

/* The moved pass's rule, counted by hand: an entry is MOVED exactly when its key has one
   entry outside the SAME pairs on each side. */
static void check_moved(const lks_align *al, const uint64_t *a, int na, const uint64_t *b,
                        int nb)
{
	for (int i = 0; i < na; i++) {
		int ca = 0, cb = 0;

		if (al->ahow[i] == LKS_ALIGN_SAME)
			continue;
		for (int t = 0; t < na; t++)
			ca += a[t] == a[i] && al->ahow[t] != LKS_ALIGN_SAME;
		for (int t = 0; t < nb; t++)
			cb += b[t] == a[i] && al->bhow[t] != LKS_ALIGN_SAME;
		cr_assert_eq(al->ahow[i] == LKS_ALIGN_MOVED, ca == 1 && cb == 1, "a[%d]", i);
	}
	/* b's side follows: a MOVED pair has the same kind on both (check_valid), and an
	   unpaired b entry whose key had one such entry on each side would have been paired
	   with a's, which the loop above finds MOVED */
	(void)nb;
}

static lks_align run(const uint64_t *a, int na, const uint64_t *b, int nb, int max_d)
{
	lks_align al;

	lks_align_init(&al);
	cr_assert_eq(lks_align_run(&al, a, na, b, nb, max_d), 0);
	check_valid(&al, a, na, b, nb);
	check_moved(&al, a, na, b, nb);
	return al;
}

Test(align, empty_sides)
{
	static const uint64_t k[] = { A, B, C };
	lks_align al = run(NULL, 0, NULL, 0, 4096);

	cr_assert_eq(al.nsame + al.nmoved, 0);
	cr_assert_eq(al.exact, 1);
	lks_align_release(&al);
	al = run(k, 3, NULL, 0, 4096);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(al.ahow[i], LKS_ALIGN_NONE);
	lks_align_release(&al);
	al = run(NULL, 0, k, 3, 0);
	for (int j = 0; j < 3; j++)
		cr_assert_eq(al.bmap[j], -1);
	cr_assert_eq(al.exact, 1);
	lks_align_release(&al);
}

Test(align, identical)
{
	static const uint64_t k[] = { MM, ADD, MM, RELU, MM, MM };
	lks_align al = run(k, 6, k, 6, 0);

	cr_assert_eq(al.nsame, 6);
	cr_assert_eq(al.exact, 1);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(al.amap[i], i);
	lks_align_release(&al);
}

Test(align, insertion_before_the_first)
{
	static const uint64_t a[] = { A, B, C }, b[] = { X, A, B, C };
	lks_align al = run(a, 3, b, 4, 4096);

	for (int i = 0; i < 3; i++) {
		cr_assert_eq(al.amap[i], i + 1);
		cr_assert_eq(al.ahow[i], LKS_ALIGN_SAME);
	}
	cr_assert_eq(al.bhow[0], LKS_ALIGN_NONE);
	cr_assert_eq(al.bmap[0], -1);
	lks_align_release(&al);
}

Test(align, removal)
{
	static const uint64_t a[] = { A, B, C, D }, b[] = { A, C, D };
	lks_align al = run(a, 4, b, 3, 4096);

	cr_assert_eq(al.nsame, 3);
	cr_assert_eq(al.amap[1], -1);
	cr_assert_eq(al.ahow[1], LKS_ALIGN_NONE);
	cr_assert_eq(al.amap[2], 1);
	cr_assert_eq(al.amap[3], 2);
	lks_align_release(&al);
}

/* A DebugMode dump: aten::mm logged again and again, one more of them in b. */
Test(align, repeated_names)
{
	static const uint64_t a[] = { MM, ADD, MM, RELU }, b[] = { MM, MM, ADD, MM, RELU };
	lks_align al = run(a, 4, b, 5, 4096);

	cr_assert_eq(al.nsame, 4);
	cr_assert_eq(al.nmoved, 0);
	for (int j = 0; j < 5; j++)
		if (al.bhow[j] == LKS_ALIGN_NONE)
			cr_assert_eq(b[j], MM, "the inserted entry is b[%d], not an mm", j);
	/* the prefix pairs the first mm with the first; what is inserted is the second */
	cr_assert_eq(al.amap[0], 0);
	cr_assert_eq(al.bhow[1], LKS_ALIGN_NONE);
	cr_assert_eq(al.amap[1], 2);
	cr_assert_eq(al.amap[2], 3);
	cr_assert_eq(al.amap[3], 4);
	lks_align_release(&al);
}

Test(align, moved)
{
	static const uint64_t a[] = { A, B, C, D }, b[] = { A, C, D, B };
	lks_align al = run(a, 4, b, 4, 4096);

	cr_assert_eq(al.nsame, 3);
	cr_assert_eq(al.nmoved, 1);
	cr_assert_eq(al.ahow[1], LKS_ALIGN_MOVED);
	cr_assert_eq(al.amap[1], 3);
	cr_assert_eq(al.bhow[3], LKS_ALIGN_MOVED);
	cr_assert_eq(al.ahow[2], LKS_ALIGN_SAME);
	cr_assert_eq(al.amap[2], 1);
	lks_align_release(&al);
}

/* Two unpaired x in a and one in b: which x moved is not known, so none is paired. */
Test(align, moved_needs_one_each_side)
{
	static const uint64_t a[] = { A, B, X, X }, b[] = { X, A, B };
	lks_align al = run(a, 4, b, 3, 4096);

	cr_assert_eq(al.nsame, 2);
	cr_assert_eq(al.nmoved, 0);
	cr_assert_eq(al.bhow[0], LKS_ALIGN_NONE);
	lks_align_release(&al);
}

Test(align, first_occurrence_preferred)
{
	static const uint64_t x1[] = { X }, x2[] = { X, X };
	lks_align al = run(x1, 1, x2, 2, 4096);

	cr_assert_eq(al.amap[0], 0);
	cr_assert_eq(al.bhow[1], LKS_ALIGN_NONE);
	lks_align_release(&al);
	al = run(x2, 2, x1, 1, 4096);
	cr_assert_eq(al.bmap[0], 0);
	cr_assert_eq(al.amap[1], -1);
	lks_align_release(&al);
}

/* Thousands of random small pairs, one aligner reused for all (its buffers grow and
   shrink in use), a second one for the same answer twice: the length of a longest common
   subsequence whenever the edit distance is within the bound (max_d: none, or 0..63) or
   exact says so, exact 0 only when it is not, a valid common subsequence always. */
Test(align, against_dynamic_programming)
{
	enum { NCASES = 6000, MAXLEN = 60 };
	uint64_t s = 20240611, a[MAXLEN], b[MAXLEN];
	lks_align al, al2;
	int nfallback = 0, nmoved = 0;

	lks_align_init(&al);
	lks_align_init(&al2);
	for (int c = 0; c < NCASES; c++) {
		int alpha = 2 + (int)(rng_next(&s) % 7);
		int na = (int)(rng_next(&s) % (MAXLEN + 1)), nb = (int)(rng_next(&s) % (MAXLEN + 1));
		int max_d = c % 3 == 0 ? -1 : (int)(rng_next(&s) % 64), want, dist;

		/* half the cases: b an edited copy of a, so that the distance is often small */
		for (int i = 0; i < na; i++)
			a[i] = rng_next(&s) % (uint64_t)alpha;
		for (int j = 0; j < nb; j++)
			b[j] = (c & 1) && j < na && rng_next(&s) % 8 ? a[j] : rng_next(&s) % (uint64_t)alpha;
		want = dp_lcs(a, na, b, nb);
		dist = na + nb - 2 * want;
		cr_assert_eq(lks_align_run(&al, a, na, b, nb, max_d), 0);
		check_valid(&al, a, na, b, nb);
		check_moved(&al, a, na, b, nb);
		/* exact 0 only past the bound; past it, exact 1 where no search was needed (the
		   prefix and suffix leave a side empty) */
		if (max_d < 0 || dist <= max_d)
			cr_assert_eq(al.exact, 1, "case %d: D %d, max_d %d", c, dist, max_d);
		if (al.exact)
			cr_assert_eq(al.nsame, want, "case %d: %d paired, the LCS is %d", c, al.nsame,
			             want);
		else
			cr_assert_leq(al.nsame, want);
		nfallback += !al.exact;
		nmoved += al.nmoved;
		cr_assert_eq(lks_align_run(&al2, a, na, b, nb, max_d), 0);
		cr_assert_eq(al2.nsame, al.nsame);
		if (na > 0) {
			cr_assert_arr_eq(al2.amap, al.amap, (size_t)na * sizeof *al.amap);
			cr_assert_arr_eq(al2.ahow, al.ahow, (size_t)na);
		}
	}
	/* the cases did reach the fallback and the moved pass */
	cr_assert_gt(nfallback, 100);
	cr_assert_gt(nmoved, 100);
	lks_align_release(&al);
	lks_align_release(&al2);
}

/* A bound too small: the fallback's chain, exact 0. Renamed ops (keys only one side has)
   it pairs as well as the LCS does; an entry of a repeated key moved it does not (the LCS
   of [A B A C] and [B A C A] keeps 3 of 4; pairing the k-th A with the k-th A crosses
   B and C, and the longest chain of those pairs is 2). */
Test(align, fallback_beyond_max_d)
{
	static const uint64_t a[] = { A, B, C, D, E, F }, b[] = { A, X, C, Y, E, F };
	static const uint64_t c[] = { A, B, A, C }, d[] = { B, A, C, A };
	lks_align al = run(a, 6, b, 6, 1);

	cr_assert_eq(al.exact, 0);
	cr_assert_eq(al.nsame, 4);
	cr_assert_eq(al.amap[2], 2);
	lks_align_release(&al);
	al = run(a, 6, b, 6, 4);
	cr_assert_eq(al.exact, 1);
	cr_assert_eq(al.nsame, 4);
	lks_align_release(&al);
	al = run(c, 4, d, 4, 0);
	cr_assert_eq(al.exact, 0);
	cr_assert_eq(dp_lcs(c, 4, d, 4), 3);
	cr_assert_eq(al.nsame, 2);
	lks_align_release(&al);
}

/* A million entries drawn from a thousand names (names repeat, as in a real trace), b the
   same with two entries removed and three new ones inserted: D = 5, so the search is
   O(N D); the pairing is exact and leaves out just the five. The LCS is N - 2: b without
   its new keys is a with two entries removed. Twenty thousand entries with no key in
   common: D = 40000 > max_d, the fallback, nothing paired. */
Test(align, big)
{
	enum { N = 1000000 };
	static const int del[] = { 17, 500000 }, ins[] = { 0, 250000, N - 2 };
	uint64_t *a = malloc(N * sizeof *a), *b = malloc((N + 1) * sizeof *b), s = 7;
	lks_align al;
	int nb = 0, nins = 0;

	cr_assert(a && b);
	for (int i = 0; i < N; i++)
		a[i] = rng_next(&s) % 1000;
	for (int i = 0; i < N; i++) {
		if (nins < 3 && i == ins[nins])
			b[nb++] = (1ull << 63) | (uint64_t)nins++;
		if (i != del[0] && i != del[1])
			b[nb++] = a[i];
	}
	cr_assert_eq(nb, N + 1);
	lks_align_init(&al);
	cr_assert_eq(lks_align_run(&al, a, N, b, nb, 4096), 0);
	check_valid(&al, a, N, b, nb);
	cr_assert_eq(al.exact, 1);
	cr_assert_eq(al.nsame, N - 2);
	cr_assert_eq(al.nmoved, 0);
	for (int j = 0; j < nb; j++)
		cr_assert_eq(al.bhow[j] == LKS_ALIGN_NONE, (b[j] >> 63) != 0, "b[%d]", j);

	for (int i = 0; i < 20000; i++) {
		a[i] = (uint64_t)i;
		b[i] = (uint64_t)i + 1000000;
	}
	cr_assert_eq(lks_align_run(&al, a, 20000, b, 20000, 4096), 0);
	check_valid(&al, a, 20000, b, 20000);
	cr_assert_eq(al.exact, 0);
	cr_assert_eq(al.nsame + al.nmoved, 0);
	lks_align_release(&al);
	free(a);
	free(b);
}
