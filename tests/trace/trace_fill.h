/*
 * trace_fill.h: the values the lockstep-trace tests trace (test_trace_lib.c,
 * gpu_trace_device.c): uniform in [-4, 4) from a seed of the length and variant; variant 1
 * puts a NaN in the middle, variant 2 a subnormal first and -inf last.
 */
#ifndef LKS_TESTS_TRACE_FILL_H
#define LKS_TESTS_TRACE_FILL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

static inline void trace_fill(float *x, size_t n, int variant)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (n + 1) + (uint64_t)variant;

	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 8.0 - 4.0);
	}
	if (n > 3 && variant == 1)
		x[n / 2] = NAN;
	if (n > 3 && variant == 2) {
		x[0] = 1e-40f;
		x[n - 1] = -INFINITY;
	}
}

#endif
