/*
 * meter.h: a traced tensor's bytes on their way to the host while the GPU goes on (the
 * cuda backend's measure_begin / measure_end, kernels/backend.h version 5).
 *
 * take copies the pieces (device memory) into a slot's device buffer on the compute stream,
 * which then goes on, and queues the slot's download into pinned host memory on a side
 * stream behind that copy (8 side streams, taken in turn); land waits for the download
 * only. take_dev copies without the download: the caller measures the copy on the side
 * stream (devstats.cu) and sends home only its record. So a step pays a device to
 * device copy per traced tensor, and the download and the host's hashing overlap the next
 * work. A slot is one measurement's; give returns it for reuse. Slots grow to the largest
 * tensor asked for, so after the first step nothing is allocated. Their device bytes (and
 * as many pinned) stay within a budget (LKS_CUDA_METER_MB, default 512): past it, take
 * drops free slots, else waits for one to be given back (the tracer's thread measures and
 * gives them), and only with no slot in use does one slot go past the budget (a tensor
 * larger than it). account(arg, delta) hears every change of the device bytes held, so
 * that mem_peak counts them. Private to kernels/cuda.
 */
#ifndef LKS_KERNELS_CUDA_METER_H
#define LKS_KERNELS_CUDA_METER_H

#include <stddef.h>

/* ---- the slots' policy: pure host logic (tests/kernels/test_meter_policy.c) ---- */

enum lks_meter_act {
	LKS_METER_USE,    /* free slot k holds it */
	LKS_METER_GROW,   /* grow free slot k to it (k -1: a new slot) */
	LKS_METER_DROP,   /* free slot k's buffers (its bytes leave held), then ask again */
	LKS_METER_WAIT    /* wait for a slot in use to be given back, then ask again */
};

/* What take does for bytes, with the free slots' capacities cap[0..nfree), held bytes in
   all slots, inuse slots taken and not given back, and the budget: the smallest free slot
   that fits; else the largest free slot grown (a new one where none is free) if the budget
   allows or nothing is in use (nothing would come back to wait for); else a smaller free
   slot dropped to make room; else wait. */
static inline enum lks_meter_act lks_meter_choose(const size_t *cap, int nfree, size_t held,
                                                  int inuse, size_t bytes, size_t budget,
                                                  int *k)
{
	int fit = -1, big = -1, small = -1;
	size_t extra;

	for (int i = 0; i < nfree; i++) {
		if (cap[i] >= bytes && (fit < 0 || cap[i] < cap[fit]))
			fit = i;
		if (big < 0 || cap[i] > cap[big])
			big = i;
	}
	if ((*k = fit) >= 0)
		return LKS_METER_USE;
	for (int i = 0; i < nfree; i++)
		if (i != big && cap[i] > 0 && (small < 0 || cap[i] < cap[small]))
			small = i;
	extra = big >= 0 ? bytes - cap[big] : bytes;
	if (held + extra <= budget) {
		*k = big;
		return LKS_METER_GROW;
	}
	if ((*k = small) >= 0)
		return LKS_METER_DROP;
	if (inuse == 0) {  /* only the largest left, free: grow it past the budget */
		*k = big;
		return LKS_METER_GROW;
	}
	return LKS_METER_WAIT;
}

#ifdef __CUDACC__
#include <cuda_runtime.h>

typedef struct lks_meter lks_meter;
typedef struct lks_meter_slot lks_meter_slot;

/* budget: bytes (0: LKS_CUDA_METER_MB or 512 MiB); account may be NULL */
int lks_meter_open(size_t budget, void (*account)(void *arg, long long delta), void *arg,
                   lks_meter **out);
void lks_meter_close(lks_meter *m);

/* A slot holding the bytes of pieces src[0..n) (bytes[i] each, laid end to end, every piece
   at a multiple of 16 bytes) as the work queued on compute so far leaves them. */
int lks_meter_take(lks_meter *m, cudaStream_t compute, const void *const *src,
                   const size_t *bytes, int n, lks_meter_slot **out);
/* As take, with extra device bytes after the pieces (from lks_meter_offset(bytes, n)), but
   what comes home is the caller's: *dev is the slot's device buffer, *side the stream that
   waits for the copy, where the caller queues its measurement of dev, then send downloads
   n bytes from dev + at and lets land wait for them. */
int lks_meter_take_dev(lks_meter *m, cudaStream_t compute, const void *const *src,
                       const size_t *bytes, int n, size_t extra, lks_meter_slot **out,
                       void **dev, cudaStream_t *side);
int lks_meter_send(lks_meter *m, lks_meter_slot *s, size_t at, size_t n);
/* Waits for the slot's download; *host: its pieces, piece i at lks_meter_offset(bytes, i)
   (after send, the n bytes sent). */
int lks_meter_land(lks_meter_slot *s, const unsigned char **host);
size_t lks_meter_offset(const size_t *bytes, int i);
void lks_meter_give(lks_meter *m, lks_meter_slot *s);
#endif

#endif
