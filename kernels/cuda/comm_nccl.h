/*
 * comm_nccl.h: the NCCL communicator (kernels/comm.h) of one rank on one GPU: NCCL as the
 * link of a device communicator (kernels/devcomm.h), which bounds every wait by the
 * group's abort and the run's timeout, built on the rank's host end (threads' or MPI's).
 * Plain C: the backend and the fingerprint include it without a CUDA header. Compiled
 * only when NCCL is found (LKS_HAVE_NCCL).
 *
 * Its all-reduces take device memory, queued on the rank's backend stream. allreduce_sum
 * is, by mode (lks_allreduce_mode): ordered, an all-gather of every rank's x and a fold in
 * rank order (element/reduce.h, the threads communicator's lines: the same bits); or nccl,
 * ncclAllReduce in place, NCCL's own algorithm (NCCL_ALGO and NCCL_PROTO, in the
 * fingerprint, choose it). allreduce_max is always the ordered fold (NaN wins).
 *
 * Topologies: a process driving its local GPUs, a thread per GPU, and a process per GPU
 * over MPI: the host end carries the NCCL unique id from rank 0 (lks_comm_bcast_bytes).
 * Several ranks of a process on one GPU are not NCCL's: the group declines, and the runner
 * stages through the host communicator. Two processes on one GPU are refused before this
 * (the runner's device check).
 */
#ifndef LKS_KERNELS_CUDA_COMM_NCCL_H
#define LKS_KERNELS_CUDA_COMM_NCCL_H

#ifdef __cplusplus
extern "C" {
#endif

#include "kernels/comm.h"
#include "kernels/devcomm.h"

/* The NCCL end of the rank whose host end is host, on device with the backend's stream (a
   cudaStream_t as void *); devices: the GPUs this process sees; o: the ranks of this
   process, the mode and the timeout of every wait. Called by every rank of host's group at
   once; *out is NULL (host untouched) where any process has more ranks than GPUs (all
   ranks alike); else it owns host. */
int lks_comm_nccl(lks_comm *host, int device, void *stream, int devices,
                  const lks_devcomm_opts *o, lks_comm **out);

/* ncclGetVersion's code (e.g. 22809 for 2.28.9); needs no GPU */
int lks_nccl_version(void);

#ifdef __cplusplus
}
#endif

#endif
