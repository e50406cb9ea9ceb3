/*
 * launch.h: how this process was started, read from the environment its launcher set:
 * OpenMPI's mpirun (OMPI_COMM_WORLD_*), a PMI launcher such as MPICH's Hydra (PMI_RANK,
 * PMI_SIZE; MPI_LOCALRANKID, MPI_LOCALNRANKS), or Slurm's srun (SLURM_PROCID,
 * SLURM_STEP_NUM_TASKS, SLURM_LOCALID). A process started by hand, or a batch script that
 * has SLURM_* variables but was not started by srun (no SLURM_STEP_NUM_TASKS), is one
 * process of one. The launcher names this process among the job's processes; the ranks of
 * a run are processes x threads (DESIGN.md, ranks).
 */
#ifndef LKS_HARNESS_LAUNCH_H
#define LKS_HARNESS_LAUNCH_H

typedef struct lks_launch {
	const char *launcher;     /* "none", "openmpi", "pmi", "slurm" */
	int rank, size;           /* this process among the job's: 0 <= rank < size */
	int local_rank, local_size;  /* on this host; -1 where the launcher does not say */
} lks_launch;

/* The launch as the environment says, read through getenv_fn (getenv; a test passes its
   own). A variable that is set but malformed (not a whole number in range, a rank past the
   size) is an error (lks_err naming the variable) rather than a guess: -1. */
int lks_launch_detect(char *(*getenv_fn)(const char *name), lks_launch *out);

/* Which of its host's devices the rank of index i of process proc (of procs) takes, when a
   run's nranks ranks are laid out over the processes in blocks (lks_comm_layout) and the
   launcher says the process is local_rank on its host: the processes of a host are taken
   to be contiguous in the job (mpirun's and srun's placement by slot), so a host's ranks
   take its devices 0, 1, ... in rank order, whatever the number of ranks per process.
   local_rank < 0 (not known) or a placement that breaks the rule gives local_rank x the
   process's ranks + i, or i; the runner's device check then refuses two processes on one
   device. */
int lks_launch_rank_slot(int nranks, int procs, int proc, int local_rank, int i);

#endif
