/*
 * align.c: two sequences of keys paired as diff pairs lines (see align.h): the common
 * prefix and suffix, Myers' middle snake divided and conquered, the fallback beyond max_d,
 * the moved pass.
 *
 * Coordinates: a point (x, y) of the edit graph has paired a[0..x) with b[0..y) in some
 * way; it lies on diagonal k = x - y. A step right (x + 1) removes a[x], a step down
 * (y + 1) inserts b[y], and a diagonal step, where a[x] == b[y], pairs them. The cost of a
 * point is its fewest right and down steps from (0, 0); along a diagonal it never falls,
 * so the points of a diagonal within a cost d are a prefix of it, and a frontier holds for
 * each diagonal the furthest x of cost at most d.
 */
#include "harness/verify/align.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/err.h"

/* A slot of the table of keys (open addressing, linear probing). */
struct lks_align_slot {
	uint64_t key;
	int a, b;     /* moved pass: an unpaired entry of the key in a, in b; fallback: b, the
	                 next occurrence in b not yet given to one of a */
	int na, nb;   /* moved pass: the unpaired entries of the key in a, in b; fallback: nb
	                 its occurrences in b. Both 0: the slot is empty */
};

/* One lks_align_run: the keys, the two frontiers, the result. */
struct run {
	const uint64_t *a, *b;
	int *vf, *vr;   /* centred: vf[k] the furthest x on diagonal k, from the start; vr the
	                   same from the end, in the reversed sequences */
	lks_align *al;
};

/* Where the two searches met: the diagonal run from (x0, y0) to (x1, y1), on a path of
   the fewest edits. */
struct snake {
	int x0, y0, x1, y1;
};

void lks_align_init(lks_align *al)
{
	memset(al, 0, sizeof *al);
	al->exact = 1;
}

void lks_align_release(lks_align *al)
{
	free(al->amap);
	free(al->bmap);
	free(al->ahow);
	free(al->bhow);
	free(al->v);
	free(al->work);
	free(al->slots);
	lks_align_init(al);
}

/* *p to hold n elements of size each (at least one, so that an empty side has buffers
   too); callers overwrite what it held. */
static int reserve(void **p, size_t *cap, size_t n, size_t size)
{
	void *q;

	if (n == 0)
		n = 1;
	if (n <= *cap)
		return 0;
	q = realloc(*p, n * size);
	if (!q)
		return lks_err("out of memory aligning two sequences (%zu entries)", n);
	*p = q;
	*cap = n;
	return 0;
}

/* One side's map and how to hold n entries (one capacity for both); callers overwrite
   what they held. */
static int reserve_side(int **map, unsigned char **how, size_t *cap, size_t n)
{
	if (n == 0)
		n = 1;
	if (n <= *cap)
		return 0;
	free(*map);
	free(*how);
	*map = malloc(n * sizeof **map);
	*how = malloc(n);
	*cap = *map && *how ? n : 0;
	if (!*cap) {
		free(*map);
		free(*how);
		*map = NULL;
		*how = NULL;
		return lks_err("out of memory aligning two sequences (%zu entries)", n);
	}
	return 0;
}

static void pair(lks_align *al, int i, int j, unsigned char how)
{
	al->amap[i] = j;
	al->bmap[j] = i;
	al->ahow[i] = how;
	al->bhow[j] = how;
}

/* a[i..i+len) with b[j..j+len), equal entry by entry. */
static void pair_run(lks_align *al, int i, int j, int len)
{
	for (int t = 0; t < len; t++)
		pair(al, i + t, j + t, LKS_ALIGN_SAME);
}

/* Pairs the common prefix of a[*ao..*ao+*n) and b[*bo..*bo+*m), then the common suffix of
   what is left, and narrows the ranges to what lies between. */
static void strip(struct run *r, int *ao, int *n, int *bo, int *m)
{
	const uint64_t *a = r->a + *ao, *b = r->b + *bo;
	int p = 0, s = 0;

	while (p < *n && p < *m && a[p] == b[p])
		p++;
	while (s < *n - p && s < *m - p && a[*n - 1 - s] == b[*m - 1 - s])
		s++;
	pair_run(r->al, *ao, *bo, p);
	pair_run(r->al, *ao + *n - s, *bo + *m - s, s);
	*ao += p;
	*bo += p;
	*n -= p + s;
	*m -= p + s;
}

/* The diagonals round d visits: lo, lo + 2, ..., hi, those of [-d, d] that cross the grid
   of an n by m problem (-m <= k <= n); every one of them has a point within cost d (the
   first point of diagonal k costs |k|). */
static void round_range(int d, int n, int m, int *lo, int *hi)
{
	*lo = -d;
	if (*lo < -m)
		*lo = -m + ((d + m) & 1);
	*hi = d;
	if (*hi > n)
		*hi = n - ((d + n) & 1);
}

/*
 * The furthest x on diagonal k within cost d, before its diagonal run: one step from the
 * previous round's frontier v (diagonals plo..phi, cost d - 1), right from k - 1 or down
 * from k + 1, whichever goes further (when both reach the same x the choice does not
 * matter: only x is kept). A step off the grid is taken one point back along the
 * neighbour's diagonal instead (that point is within cost d - 1 too), which is the last
 * point of diagonal k: x = n or y = m.
 */
static int reach(const int *v, int k, int plo, int phi, int n, int m)
{
	int x = -1;

	if (k + 1 >= plo && k + 1 <= phi)
		x = v[k + 1];
	if (k - 1 >= plo && k - 1 <= phi && v[k - 1] + 1 > x)
		x = v[k - 1] + 1;
	if (x > n)
		x = n;
	if (x > m + k)
		x = m + k;
	return x;
}

/*
 * The middle snake of a[ao..ao+n) against b[bo..bo+m), both non-empty, their first entries
 * different and their last too (strip), so D >= 2. The search runs from the start (vf)
 * and from the end (vr, on the sequences reversed, where diagonal k' is diagonal
 * delta - k' of the forward one) in rounds d = 0, 1, ...; D has the parity of
 * delta = n - m, and the searches meet in round ceil(D/2): from the start when D is odd
 * (D = 2d - 1), from the end when it is even (D = 2d), on the first diagonal where the
 * furthest x from the start is at or past the furthest from the end. A round that could
 * only find D > max_d (max_d >= 0) is not run. Returns D, or -1 when D > max_d.
 *
 * The halves before and after the snake have costs that add up to D, each less than D
 * (d and d - 1, or d and d), so dividing ends; each round costs O(n + m), and the rounds
 * of all the halves O((n + m) D) together.
 */
static int middle_snake(struct run *r, int ao, int n, int bo, int m, int max_d,
                        struct snake *s)
{
	const uint64_t *a = r->a + ao, *b = r->b + bo;
	int *vf = r->vf, *vr = r->vr;
	int delta = n - m, odd = (n + m) & 1;
	int flo = 1, fhi = -1, rlo = 1, rhi = -1;   /* last round's diagonals; none yet */

	for (int d = 0;; d++) {
		int lo, hi;

		if (max_d >= 0 && 2 * d - 1 > max_d)
			return -1;
		round_range(d, n, m, &lo, &hi);
		for (int k = lo; k <= hi; k += 2) {
			int x = d == 0 ? 0 : reach(vf, k, flo, fhi, n, m), x0 = x;

			while (x < n && x - k < m && a[x] == b[x - k])
				x++;
			vf[k] = x;
			if (odd && delta - k >= rlo && delta - k <= rhi && x >= n - vr[delta - k]) {
				*s = (struct snake){ x0, x0 - k, x, x - k };
				return 2 * d - 1;
			}
		}
		flo = lo;
		fhi = hi;
		if (max_d >= 0 && 2 * d > max_d)
			return -1;
		for (int k = lo; k <= hi; k += 2) {
			int u = d == 0 ? 0 : reach(vr, k, rlo, rhi, n, m), u0 = u;

			while (u < n && u - k < m && a[n - 1 - u] == b[m - 1 - (u - k)])
				u++;
			vr[k] = u;
			if (!odd && delta - k >= flo && delta - k <= fhi && vf[delta - k] >= n - u) {
				*s = (struct snake){ n - u, m - (u - k), n - u0, m - (u0 - k) };
				return 2 * d;
			}
		}
		rlo = lo;
		rhi = hi;
	}
}

/* A longest common subsequence of a[ao..ao+n) and b[bo..bo+m) into the maps: strip, then
   the middle snake, then each half the same way. The recursion halves D at each level, so
   it goes log2(D) deep. */
static void lcs(struct run *r, int ao, int n, int bo, int m)
{
	struct snake s;

	for (;;) {
		strip(r, &ao, &n, &bo, &m);
		if (n == 0 || m == 0)
			return;
		middle_snake(r, ao, n, bo, m, -1, &s);
		pair_run(r->al, ao + s.x0, bo + s.y0, s.x1 - s.x0);
		lcs(r, ao, s.x0, bo, s.y0);
		ao += s.x1;
		bo += s.y1;
		n -= s.x1;
		m -= s.y1;
	}
}

static uint64_t mix(uint64_t z)
{
	/* splitmix64's finalizer: keys need not be hashes of their own (tests use 0, 1, 2) */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A table with room for n keys, emptied; *mask the last slot's index. */
static int table(lks_align *al, size_t n, size_t *mask)
{
	size_t cap = 16;

	while (cap < 2 * n)
		cap *= 2;
	if (reserve((void **)&al->slots, &al->capslots, cap, sizeof *al->slots))
		return -1;
	memset(al->slots, 0, cap * sizeof *al->slots);
	*mask = cap - 1;
	return 0;
}

/* The slot of key: its own, or the empty one where it would go (the table is never full:
   it has twice the room of the keys put in it). */
static struct lks_align_slot *slot(lks_align *al, size_t mask, uint64_t key)
{
	size_t i = (size_t)mix(key) & mask;

	while ((al->slots[i].na || al->slots[i].nb) && al->slots[i].key != key)
		i = (i + 1) & mask;
	al->slots[i].key = key;
	return &al->slots[i];
}

/*
 * Beyond max_d: the k-th occurrence of each key in a[ao..ao+n) paired with the k-th in
 * b[bo..bo+m) where b has one, then of those pairs (increasing in a, not always in b) a
 * longest chain increasing in b too, by patience sorting: tails[t] is the pair ending the
 * chains of t + 1 pairs that end lowest in b, prev[i] the pair before i in its chain.
 */
static int fallback(struct run *r, int ao, int n, int bo, int m)
{
	lks_align *al = r->al;
	const uint64_t *a = r->a + ao, *b = r->b + bo;
	int *next, *cand, *tails, *prev, len = 0;
	size_t mask;

	if (reserve((void **)&al->work, &al->capwork, (size_t)m + 3 * (size_t)n, sizeof(int)) ||
	    table(al, (size_t)m, &mask))
		return -1;
	next = al->work;        /* (m) the next occurrence in b of b[j]'s key, or -1 */
	cand = next + m;        /* (n) the occurrence in b paired with a[i], or -1 */
	tails = cand + n;       /* (n) */
	prev = tails + n;       /* (n) */
	for (int j = m - 1; j >= 0; j--) {
		struct lks_align_slot *sl = slot(al, mask, b[j]);

		next[j] = sl->nb ? sl->b : -1;
		sl->b = j;
		sl->nb++;
	}
	for (int i = 0; i < n; i++) {
		struct lks_align_slot *sl = slot(al, mask, a[i]);

		cand[i] = -1;
		if (sl->nb && sl->b >= 0) {
			cand[i] = sl->b;
			sl->b = next[sl->b];
		}
	}
	for (int i = 0; i < n; i++) {
		int lo = 0, hi = len;

		if (cand[i] < 0)
			continue;
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;

			if (cand[tails[mid]] < cand[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		prev[i] = lo > 0 ? tails[lo - 1] : -1;
		tails[lo] = i;
		if (lo == len)
			len++;
	}
	for (int i = len > 0 ? tails[len - 1] : -1; i >= 0; i = prev[i])
		pair(al, ao + i, bo + cand[i], LKS_ALIGN_SAME);
	return 0;
}

/* Pairs as moved each unpaired entry of a with the unpaired one of b of its key, where
   the key has exactly one unpaired entry on each side. */
static int moved(lks_align *al, const uint64_t *a, int na, const uint64_t *b, int nb)
{
	size_t nua = 0, nub = 0, mask;

	for (int i = 0; i < na; i++)
		nua += al->amap[i] < 0;
	for (int j = 0; j < nb; j++)
		nub += al->bmap[j] < 0;
	if (nua == 0 || nub == 0)
		return 0;
	if (table(al, nua + nub, &mask))
		return -1;
	for (int i = 0; i < na; i++)
		if (al->amap[i] < 0) {
			struct lks_align_slot *sl = slot(al, mask, a[i]);

			sl->a = i;
			sl->na++;
		}
	for (int j = 0; j < nb; j++)
		if (al->bmap[j] < 0) {
			struct lks_align_slot *sl = slot(al, mask, b[j]);

			sl->b = j;
			sl->nb++;
		}
	for (int i = 0; i < na; i++)
		if (al->amap[i] < 0) {
			struct lks_align_slot *sl = slot(al, mask, a[i]);

			if (sl->na == 1 && sl->nb == 1)
				pair(al, i, sl->b, LKS_ALIGN_MOVED);
		}
	return 0;
}

int lks_align_run(lks_align *al, const uint64_t *a, int na, const uint64_t *b, int nb,
                  int max_d)
{
	struct run r = { .a = a, .b = b, .al = al };
	struct snake s;
	int ao = 0, bo = 0, n = na, m = nb, lim, dist;

	if (na < 0 || nb < 0 || na > LKS_ALIGN_MAX || nb > LKS_ALIGN_MAX)
		return lks_err("cannot align sequences of %d and %d entries", na, nb);
	if (reserve_side(&al->amap, &al->ahow, &al->capa, (size_t)na) ||
	    reserve_side(&al->bmap, &al->bhow, &al->capb, (size_t)nb))
		return -1;
	for (int i = 0; i < na; i++)
		al->amap[i] = -1;
	for (int j = 0; j < nb; j++)
		al->bmap[j] = -1;
	memset(al->ahow, LKS_ALIGN_NONE, (size_t)na);
	memset(al->bhow, LKS_ALIGN_NONE, (size_t)nb);
	al->exact = 1;

	strip(&r, &ao, &n, &bo, &m);
	if (n > 0 && m > 0) {
		/* the frontiers: a round d visits diagonals |k| <= d, and d goes no further
		   than ceil(D/2) <= max(n, m) (D <= n + m), nor, under a bound, than
		   (max_d + 1) / 2; the halves' searches stay within their parent's */
		lim = n > m ? n : m;
		if (max_d >= 0 && max_d / 2 + 1 < lim)
			lim = max_d / 2 + 1;
		if (reserve((void **)&al->v, &al->capv, 2 * (2 * (size_t)lim + 3), sizeof(int)))
			return -1;
		r.vf = al->v + lim + 1;
		r.vr = r.vf + 2 * lim + 3;
		dist = max_d >= 0 && abs(n - m) > max_d ? -1
		                                         : middle_snake(&r, ao, n, bo, m, max_d, &s);
		if (dist >= 0) {
			pair_run(al, ao + s.x0, bo + s.y0, s.x1 - s.x0);
			lcs(&r, ao, s.x0, bo, s.y0);
			lcs(&r, ao + s.x1, n - s.x1, bo + s.y1, m - s.y1);
		} else {
			al->exact = 0;
			if (fallback(&r, ao, n, bo, m))
				return -1;
		}
	}
	if (moved(al, a, na, b, nb))
		return -1;
	al->nsame = al->nmoved = 0;
	for (int i = 0; i < na; i++) {
		al->nsame += al->ahow[i] == LKS_ALIGN_SAME;
		al->nmoved += al->ahow[i] == LKS_ALIGN_MOVED;
	}
	return 0;
}
