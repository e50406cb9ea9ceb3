/*
 * comm_nccl.h: the NCCL communicator (kernels/comm.h) of one rank on one GPU, built on the
 * rank's host end (threads' or MPI's). Plain C: the backend and the fingerprint include it
 * without a CUDA header. Compiled only when NCCL is found (LKS_HAVE_NCCL).
 *
 * Its all-reduces take device memory (device_memory: 1), queued on the rank's backend
 * stream and waited for. allreduce_sum is, by mode (lks_allreduce_mode): ordered, an
 * all-gather of every rank's x and a fold in rank order (element/reduce.h, the threads
 * communicator's lines: the same bits); or nccl, ncclAllReduce in place, NCCL's own
 * algorithm (NCCL_ALGO and NCCL_PROTO, in the fingerprint, choose it). allreduce_max is
 * always the ordered fold (NaN wins). gather, barrier and abort are the host end's, which
 * the NCCL end owns (closing it closes the host end). NCCL's destroy waits for every rank's,
 * so the ends of a process's ranks are closed at once, each in its thread; an aborted end
 * aborts its NCCL communicator instead, which waits for none.
 *
 * Topologies: a process driving its local GPUs, a thread per GPU, and a process per GPU
 * over MPI: the host end carries the NCCL unique id from rank 0 (lks_comm_bcast_bytes).
 * Several ranks on one GPU are not NCCL's: the group declines, and the runner stages
 * through the host communicator.
 */
#ifndef LKS_KERNELS_CUDA_COMM_NCCL_H
#define LKS_KERNELS_CUDA_COMM_NCCL_H

#ifdef __cplusplus
extern "C" {
#endif

#include "kernels/comm.h"

/* The NCCL end of the rank whose host end is host, on device with the backend's stream (a
   cudaStream_t as void *); nlocal: the ranks of this process, devices: the GPUs it sees.
   Called by every rank of host's group at once; *out is NULL (host untouched) where any
   process has more ranks than GPUs (all ranks alike); else it owns host. */
int lks_comm_nccl(lks_comm *host, int device, void *stream, int nlocal, int devices, int mode,
                  lks_comm **out);

/* ncclGetVersion's code (e.g. 22809 for 2.28.9); needs no GPU */
int lks_nccl_version(void);

#ifdef __cplusplus
}
#endif

#endif
