/*
 * name_index.c: names by hash (name_index.h). Open addressing with linear probing in a
 * table kept at most half full, doubled as it fills; each slot keeps 32 bits of the
 * name's XXH3-64, so that a probe compares a name's bytes only where the hashes agree and
 * the table grows without reading a name again.
 */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "harness/store/name_index.h"
#include "kernels/err.h"

static uint32_t lks_name_hash(const char *name)
{
	return (uint32_t)XXH3_64bits(name, strlen(name));
}

int lks_name_index_find(const lks_name_index *x, char *const *names, const char *name)
{
	uint32_t h;

	if (!x->cap)
		return -1;
	h = lks_name_hash(name);
	for (size_t i = h & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
		const struct lks_name_slot *s = &x->slot[i];

		if (!s->at)
			return -1;
		if (s->hash == h && !strcmp(names[s->at - 1], name))
			return s->at - 1;
	}
}

/* (hash, at) into the first empty slot of its probe (the table has one). */
static void lks_name_index_put(lks_name_index *x, uint32_t hash, int at)
{
	size_t i = hash & (x->cap - 1);

	while (x->slot[i].at)
		i = (i + 1) & (x->cap - 1);
	x->slot[i] = (struct lks_name_slot){ hash, at };
}

int lks_name_index_add(lks_name_index *x, const char *name, int at)
{
	if ((size_t)x->n + 1 > x->cap / 2) {
		lks_name_index grown = { .cap = x->cap ? 2 * x->cap : 64, .n = x->n };

		if (!(grown.slot = calloc(grown.cap, sizeof(*grown.slot))))
			return lks_err("out of memory");
		for (size_t i = 0; i < x->cap; i++)
			if (x->slot[i].at)
				lks_name_index_put(&grown, x->slot[i].hash, x->slot[i].at);
		free(x->slot);
		*x = grown;
	}
	lks_name_index_put(x, lks_name_hash(name), at + 1);
	x->n++;
	return 0;
}

void lks_name_index_release(lks_name_index *x)
{
	free(x->slot);
	*x = (lks_name_index){ 0 };
}
