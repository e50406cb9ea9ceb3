/*
 * launch.c: which launcher started this process, and where it put it (launch.h).
 */
#include "harness/engine/launch.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "kernels/comm.h"
#include "kernels/err.h"

/* One launcher's variables: the first whose rank variable is set wins, in this order
   (mpirun under srun sets both; OpenMPI's own are the ones its processes agree on). */
static const struct lks_launcher {
	const char *name;
	const char *rank, *size, *local_rank, *local_size;
} lks_launchers[] = {
	{ "openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
	  "OMPI_COMM_WORLD_LOCAL_SIZE" },
	{ "pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS" },
	/* SLURM_NTASKS is also set in a batch script, which srun did not start: the step's
	   count is the sign of a task of srun */
	{ "slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", NULL },
};

/* The whole number in variable name, in [lo, INT_MAX]; *out untouched when it is not set. */
static int lks_env_int(char *(*getenv_fn)(const char *), const char *name, int lo,
                       int *out)
{
	const char *s = name ? getenv_fn(name) : NULL;
	char *end;
	long v;

	if (!s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > INT_MAX)
		return lks_err("%s='%s' is not a whole number >= %d", name, s, lo);
	*out = (int)v;
	return 0;
}

int lks_launch_detect(char *(*getenv_fn)(const char *name), lks_launch *out)
{
	*out = (lks_launch){ "none", 0, 1, -1, -1 };
	for (size_t i = 0; i < sizeof(lks_launchers) / sizeof(lks_launchers[0]); i++) {
		const struct lks_launcher *l = &lks_launchers[i];
		int rank = -1, size = -1, lrank = -1, lsize = -1;

		if (!getenv_fn(l->rank) || !getenv_fn(l->size))
			continue;
		if (lks_env_int(getenv_fn, l->rank, 0, &rank) || lks_env_int(getenv_fn, l->size, 1, &size)
		    || lks_env_int(getenv_fn, l->local_rank, 0, &lrank)
		    || lks_env_int(getenv_fn, l->local_size, 1, &lsize))
			return -1;
		if (rank >= size)
			return lks_err("%s=%d is past %s=%d", l->rank, rank, l->size, size);
		if (lsize > 0 && lrank >= lsize)
			return lks_err("%s=%d is past %s=%d", l->local_rank, lrank, l->local_size, lsize);
		*out = (lks_launch){ l->name, rank, size, lrank, lsize };
		return 0;
	}
	return 0;
}

int lks_launch_rank_slot(int nranks, int procs, int proc, int local_rank, int i)
{
	int first, count, host_first, host_count;

	if (local_rank <= 0 || local_rank > proc)
		return i;
	lks_comm_layout(nranks, procs, proc, &first, &count);
	lks_comm_layout(nranks, procs, proc - local_rank, &host_first, &host_count);
	return first - host_first + i;
}
