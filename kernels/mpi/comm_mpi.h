/*
 * comm_mpi.h: the communicator of ranks that are MPI processes (kernels/comm.h), one rank per
 * process: rank and size are MPI_COMM_WORLD's. The sums and maxes give the bits of the
 * threads communicator (every element reduced over the ranks in rank order), whatever the
 * MPI library's own reduction order, since lockstep reduces and MPI only moves bytes.
 *
 * abort ends the whole job (MPI_Abort with exit code 3): MPI cannot wake a collective of
 * another process with an error, and a job with a dead or stuck rank must not hang.
 */
#ifndef LKS_KERNELS_COMM_MPI_H
#define LKS_KERNELS_COMM_MPI_H

#include "kernels/comm.h"

/* This process's end of the world: MPI is initialised here when it is not yet (and
   finalised when the communicator is closed); -1 (lks_err) when MPI cannot start. */
int lks_comm_mpi(lks_comm **out);

#endif
