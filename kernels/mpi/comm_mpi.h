/*
 * comm_mpi.h: the communicator of ranks that are MPI processes x threads (kernels/comm.h):
 * the job's end, one per process (rank and size are MPI_COMM_WORLD's), lays out each run's
 * ranks over the processes as threads (group). The sums and maxes give the bits of the
 * threads communicator (every element reduced over the ranks in rank order), whatever the
 * MPI library's own reduction order, since lockstep reduces and MPI only moves bytes.
 *
 * abort ends the whole job (MPI_Abort with exit code 3): MPI cannot wake a collective of
 * another process with an error, and a job with a dead or stuck rank must not hang.
 */
#ifndef LKS_KERNELS_COMM_MPI_H
#define LKS_KERNELS_COMM_MPI_H

#include "kernels/comm.h"

/* This process's end of the job: rank and size are MPI_COMM_WORLD's, one end per process
   (its group method lays the ranks of a run out over the processes, as threads). MPI is
   initialised here when it is not yet (and finalised when the communicator is closed); -1
   (lks_err) when MPI cannot start. A wait for another process that lasts timeout_s
   seconds (it died or hangs) ends the job as abort does, naming what it waited for: every
   wait of a group (the exchanges of a run's steps), and every wait of process 0. The other
   processes wait for process 0 between runs without a limit, as long as its checks or a run
   they have no rank in take; should it hang there, nothing ends the job. timeout_s <= 0:
   no limit. */
int lks_comm_mpi(double timeout_s, lks_comm **out);

/* The MPI library's version, its first line (MPI_Get_library_version), into buf. */
void lks_comm_mpi_library(char *buf, size_t n);

#endif
