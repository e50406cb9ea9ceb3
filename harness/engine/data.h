/*
 * data.h: the synthetic training data, a pure function of (seed, sequence index).
 *
 * A token stream with learnable structure: a fixed random permutation P of the vocabulary
 * (from the seed) gives each token a successor; each next token is P[previous] with
 * probability 7/8, else uniform. A model that learns P reaches a loss near the entropy of
 * that process (lks_data_entropy: about 1.07 nats for V = 256) — far below ln V (5.5) —
 * so a case checks learning, not noise. Sequence g of the global stream is the same on
 * every rank and device, so the global batch of a step does not depend on the world size.
 */
#ifndef LKS_HARNESS_DATA_H
#define LKS_HARNESS_DATA_H

#include <stdint.h>

typedef struct lks_data {
	uint64_t seed;
	int vocab, seq;
	int32_t *succ;          /* (vocab) the successor permutation */
} lks_data;

int lks_data_init(lks_data *d, uint64_t seed, int vocab, int seq);
void lks_data_release(lks_data *d);
/* Inputs tok (seq) and targets tgt (seq) of global sequence g. */
void lks_data_sequence(const lks_data *d, uint64_t g, int32_t *tok, int32_t *tgt);
/* The loss of a model that knows the process exactly (nats per token). */
double lks_data_entropy(const lks_data *d);

#endif
