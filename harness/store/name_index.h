/*
 * name_index.h: names found by hash among an array of them, name i at names[i] (an
 * imported run's metric names: a log may give tens of thousands, and a linear look per
 * name made reading one back quadratic). The index holds where each name is and its hash,
 * not the name: the caller owns the array and passes it to each look.
 */
#ifndef LKS_HARNESS_STORE_NAME_INDEX_H
#define LKS_HARNESS_STORE_NAME_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct lks_name_index {
	struct lks_name_slot {
		uint32_t hash;
		int at;           /* 1 + the name's index; 0: an empty slot */
	} *slot;              /* (cap) at most half of them taken */
	size_t cap;           /* a power of two, or 0 */
	int n;
} lks_name_index;

/* The index i of name (names[i] equal to it), or -1 when it was never added. */
int lks_name_index_find(const lks_name_index *x, char *const *names, const char *name);
/* name, which is names[at] (none equal to it added before), added. 0, or -1 (lks_err: out
   of memory). */
int lks_name_index_add(lks_name_index *x, const char *name, int at);
/* Frees what x holds; it is empty and usable again. */
void lks_name_index_release(lks_name_index *x);

#endif
