/* data.c: the synthetic token process (see data.h). */
#include "harness/engine/data.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/err.h"
#include "kernels/philox.h"

/* Philox streams of the data, apart from the weights' streams (tensor index + 1). */
#define LKS_STREAM_PERM 0x10000000u
#define LKS_STREAM_TOKENS 0x10000001u

int lks_data_init(lks_data *d, uint64_t seed, int vocab, int seq)
{
	d->seed = seed;
	d->vocab = vocab;
	d->seq = seq;
	if (!(d->succ = malloc(sizeof(int32_t) * (size_t)vocab)))
		return lks_err("out of memory");
	for (int i = 0; i < vocab; i++)
		d->succ[i] = i;
	for (int i = vocab - 1; i > 0; i--) {  /* Fisher-Yates */
		int j = (int)(lks_philox_u32(seed, LKS_STREAM_PERM, (uint64_t)i) % (uint32_t)(i + 1));
		int32_t t = d->succ[i];

		d->succ[i] = d->succ[j];
		d->succ[j] = t;
	}
	return 0;
}

void lks_data_release(lks_data *d)
{
	free(d->succ);
	d->succ = NULL;
}

void lks_data_sequence(const lks_data *d, uint64_t g, int32_t *tok, int32_t *tgt)
{
	/* two draws per position: one decides follow-or-jump, one picks the jump */
	uint64_t base = g * 2 * (uint64_t)(d->seq + 1);
	int32_t prev = (int32_t)(lks_philox_u32(d->seed, LKS_STREAM_TOKENS, base) % (uint32_t)d->vocab);

	for (int t = 0; t <= d->seq; t++) {
		int32_t next = prev;

		if (t > 0) {
			uint32_t u = lks_philox_u32(d->seed, LKS_STREAM_TOKENS, base + 2 * (uint64_t)t);
			uint32_t v = lks_philox_u32(d->seed, LKS_STREAM_TOKENS, base + 2 * (uint64_t)t + 1);

			next = (u & 7) ? d->succ[prev] : (int32_t)(v % (uint32_t)d->vocab);
		}
		if (t < d->seq)
			tok[t] = next;
		if (t > 0)
			tgt[t - 1] = next;
		prev = next;
	}
}

double lks_data_entropy(const lks_data *d)
{
	/* P(successor) = 7/8 + 1/(8V), any other token 1/(8V) */
	double v = d->vocab, ps = 7.0 / 8.0 + 1.0 / (8.0 * v), po = 1.0 / (8.0 * v);

	return -(ps * log(ps) + (v - 1.0) * po * log(po));
}
