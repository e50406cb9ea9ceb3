/*
 * meter.h: a traced tensor's bytes on their way to the host while the GPU goes on (the
 * cuda backend's measure_begin / measure_end, kernels/backend.h version 5).
 *
 * take copies the pieces (device memory) into a slot's device buffer on the compute stream,
 * which then goes on, and queues the slot's download into pinned host memory on a side
 * stream behind that copy; land waits for the download only. So a step pays a device to
 * device copy per traced tensor, and the download and the host's hashing overlap the next
 * work. A slot is one measurement's; give returns it for reuse. Slots grow to the largest
 * tensor asked for, so after the first step nothing is allocated. Their memory is not
 * counted in mem_peak. Private to kernels/cuda.
 */
#ifndef LKS_KERNELS_CUDA_METER_H
#define LKS_KERNELS_CUDA_METER_H

#include <cuda_runtime.h>
#include <stddef.h>

typedef struct lks_meter lks_meter;
typedef struct lks_meter_slot lks_meter_slot;

int lks_meter_open(lks_meter **out);
void lks_meter_close(lks_meter *m);

/* A slot holding the bytes of pieces src[0..n) (bytes[i] each, laid end to end, every piece
   at a multiple of 16 bytes) as the work queued on compute so far leaves them. */
int lks_meter_take(lks_meter *m, cudaStream_t compute, const void *const *src,
                   const size_t *bytes, int n, lks_meter_slot **out);
/* Waits for the slot's download; *host: its pieces, piece i at lks_meter_offset(bytes, i). */
int lks_meter_land(lks_meter_slot *s, const unsigned char **host);
size_t lks_meter_offset(const size_t *bytes, int i);
void lks_meter_give(lks_meter *m, lks_meter_slot *s);

#endif
