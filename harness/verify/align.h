/*
 * align.h: two sequences of keys paired as diff pairs the lines of two files (align.c).
 * In each (step, rank) a run traces its tensors in execution order, and two runs of
 * different code rarely trace the same sequence: ops are inserted, removed, moved or
 * renamed. Each entry is a 64-bit key (a hash of its name, phase and microbatch: equal
 * keys, the same tensor name), and names repeat (a DebugMode dump traces aten::mm many
 * times), so an entry is paired by its place among its neighbours, not by its name alone:
 *
 *   1. the common prefix, then the common suffix of what is left, pair as they stand;
 *   2. between them, a longest common subsequence: Myers' O((N+M) D) search (1986, "An
 *      O(ND) Difference Algorithm and Its Variations"), D the edit distance (entries
 *      removed from a plus entries inserted into b), in linear space: the middle snake
 *      where the search from the start meets the search from the end splits the problem
 *      in two, each half solved the same way (prefix and suffix first);
 *   3. the moved pass: an entry of a and an entry of b left unpaired with the same key,
 *      where the key has no other unpaired entry on either side, pair as moved.
 *
 * Bounded cost: the search of step 2 looks no further than D = max_d, so it costs
 * O((N+M) max_d) at most. Beyond it (exact 0) step 2 pairs instead the k-th occurrence of
 * each key in a's part with the k-th occurrence in b's, and keeps of those pairs a longest
 * chain increasing in both (patience sorting, O(n log n)): still a common subsequence; a
 * longest one where every difference is an entry whose key the other side lacks (ops new,
 * dropped or renamed), often a shorter one where entries of one key were inserted or
 * removed among others of it. Memory: O(N+M), kept in the struct and reused from call to
 * call.
 *
 * Determinism: the pairing depends on the keys alone. Of several longest common
 * subsequences, the one taken follows from the order above: the prefix is paired before
 * anything else, so a run of equal entries at the start pairs from its first entry on
 * (a = [x], b = [x, x]: a[0] with b[0]); then the suffix, from the last entry back; in
 * between, the first middle snake found (the search from the start before the one from
 * the end, diagonals x - y from lowest to highest), recursively.
 */
#ifndef LKS_HARNESS_VERIFY_ALIGN_H
#define LKS_HARNESS_VERIFY_ALIGN_H

#include <stddef.h>
#include <stdint.h>

/* What lks_align_run made of an entry (ahow, bhow). */
enum {
	LKS_ALIGN_NONE = 0,   /* unpaired: removed (an entry of a) or inserted (one of b) */
	LKS_ALIGN_SAME = 1,   /* paired in the common subsequence: same key, same order */
	LKS_ALIGN_MOVED = 2,  /* paired by the moved pass: the only unpaired entry of its key
	                         on each side, out of order */
};

struct lks_align_slot;

typedef struct lks_align {
	int *amap;              /* (na) the index in b paired with a[i], or -1 */
	int *bmap;              /* (nb) the index in a paired with b[j], or -1 */
	unsigned char *ahow;    /* (na) LKS_ALIGN_* of a[i] */
	unsigned char *bhow;    /* (nb) LKS_ALIGN_* of b[j] */
	int nsame, nmoved;      /* pairs of each kind */
	int exact;              /* 1: the SAME pairs are a longest common subsequence (always
	                           when the edit distance is at most max_d, and when prefix
	                           and suffix leave nothing to search); 0: the edit distance
	                           exceeds max_d and they are the fallback's chain (above) */
	/* private: buffers kept from call to call */
	size_t capa, capb;      /* entries amap/ahow, bmap/bhow hold */
	int *v;                 /* the two frontiers of the search */
	size_t capv;
	int *work;              /* the fallback's chains */
	size_t capwork;
	struct lks_align_slot *slots;  /* the table of keys (moved pass, fallback) */
	size_t capslots;
} lks_align;

void lks_align_init(lks_align *al);
void lks_align_release(lks_align *al);

/*
 * Pairs a[0..na) with b[0..nb) (either may be empty, its pointer NULL) into al's maps:
 * prefix and suffix, a longest common subsequence within an edit distance of max_d
 * (negative: no bound), else the fallback, then the moved pass. Earlier results in al are
 * overwritten. 0, or -1 (lks_err: out of memory, or a length below 0 or above
 * LKS_ALIGN_MAX), after which the maps are not to be read.
 */
#define LKS_ALIGN_MAX (1 << 29)
int lks_align_run(lks_align *al, const uint64_t *a, int na, const uint64_t *b, int nb,
                  int max_d);

#endif
