/*
 * job.h: the processes one command runs as (DESIGN.md, Ranks and the distributed engine).
 * Started by mpirun or srun, lockstep reads its launcher from the environment
 * (harness/engine/launch.h) and joins the others through MPI (kernels/mpi/comm_mpi.h);
 * started by hand, or as the only process of a launch, it is a job of one process with no
 * communicator at all (MPI does not start). Every process
 * trains its share of every run; process 0 alone owns the database, the checks and the
 * report, and the others stay quiet.
 */
#ifndef LKS_HARNESS_SUITE_JOB_H
#define LKS_HARNESS_SUITE_JOB_H

#include "harness/engine/launch.h"
#include "harness/store/fingerprint.h"
#include "kernels/comm.h"

typedef struct lks_job {
	lks_launch launch;
	lks_comm *comm;         /* this process's end of the job; NULL: a process alone */
	int root;               /* this process owns the database (process 0) */
} lks_job;

/* Joins the job this process was launched into; timeout_s bounds every wait for another
   process (comm_mpi.h). A malformed launcher variable, or a launch of several processes
   into a lockstep built without MPI, is bad usage (2); MPI that cannot start, 3. */
int lks_job_start(double timeout_s, lks_job *j);

/* n counts agreed by every process: each v[i] becomes the largest of the processes' v[i]
   (counts at least 0 and below 2^24). Where only the root counts (verdicts), it is the
   root's; for an exit code, a process that failed wins over the ones that did not, and
   the launcher gets one exit status. A process alone: v as it is. -1 (lks_err) when the
   exchange fails. */
int lks_job_agree(const lks_job *j, int *v, int n);

/* The job in the fingerprint: launcher, processes, hosts and the MPI library, when a
   launcher started it (collective: every process calls it; only the root's fp is
   filled). */
int lks_job_fingerprint(const lks_job *j, lks_fingerprint *fp);

void lks_job_end(lks_job *j);

#endif
