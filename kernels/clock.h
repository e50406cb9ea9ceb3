/*
 * clock.h: the monotonic clock, for how long something took or when to wake (never a
 * date): one reading in seconds, or in nanoseconds where a count is kept.
 */
#ifndef LKS_KERNELS_CLOCK_H
#define LKS_KERNELS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline double lks_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int64_t lks_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
