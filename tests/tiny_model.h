/*
 * tiny_model.h: the [model] section of the small cases the command tests train (diff,
 * export, nightly, prune): milliseconds a run, two ranks' worth of batch.
 */
#ifndef LKS_TESTS_TINY_MODEL_H
#define LKS_TESTS_TINY_MODEL_H

#define LKS_TINY_MODEL \
	"[model]\n" \
	"vocab = 64\n" \
	"hidden = 32\n" \
	"ffn = 64\n" \
	"layers = 1\n" \
	"seq = 8\n" \
	"batch = 2\n"

#endif
