/*
 * test_launch.c: the launcher is read from the environment its launcher set (launch.h):
 * each launcher's variables, the order among them, a batch script that is not a task, and
 * malformed values refused by name.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/launch.h"
#include "kernels/err.h"

/* The environment of a test: NAME=VALUE strings, NULL-terminated. */
static const char *const *env;

static char *fake_getenv(const char *name)
{
	size_t n = strlen(name);

	for (const char *const *e = env; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return (char *)*e + n + 1;
	return NULL;
}

static lks_launch detect(const char *const *vars)
{
	lks_launch l;

	env = vars;
	cr_assert_eq(lks_launch_detect(fake_getenv, &l), 0, "%s", lks_errmsg());
	return l;
}

static void refused(const char *const *vars, const char *what)
{
	lks_launch l;

	env = vars;
	cr_assert_eq(lks_launch_detect(fake_getenv, &l), -1, "accepted: %s", what);
	cr_assert(strstr(lks_errmsg(), what), "'%s' does not name %s", lks_errmsg(), what);
}

Test(launch, by_hand_is_one_process)
{
	const char *const none[] = { "PATH=/bin", NULL };
	lks_launch l = detect(none);

	cr_assert_str_eq(l.launcher, "none");
	cr_assert_eq(l.rank, 0);
	cr_assert_eq(l.size, 1);
	cr_assert_eq(l.local_rank, -1);
}

Test(launch, each_launcher)
{
	const char *const ompi[] = { "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
	                             "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
	                             NULL };
	const char *const pmi[] = { "PMI_RANK=5", "PMI_SIZE=8", "MPI_LOCALRANKID=1",
	                            "MPI_LOCALNRANKS=4", NULL };
	const char *const slurm[] = { "SLURM_PROCID=6", "SLURM_STEP_NUM_TASKS=7",
	                              "SLURM_NTASKS=7", "SLURM_LOCALID=2", NULL };
	lks_launch l;

	l = detect(ompi);
	cr_assert_str_eq(l.launcher, "openmpi");
	cr_assert(l.rank == 3 && l.size == 4 && l.local_rank == 1 && l.local_size == 2);
	l = detect(pmi);
	cr_assert_str_eq(l.launcher, "pmi");
	cr_assert(l.rank == 5 && l.size == 8 && l.local_rank == 1 && l.local_size == 4);
	l = detect(slurm);
	cr_assert_str_eq(l.launcher, "slurm");
	cr_assert(l.rank == 6 && l.size == 7 && l.local_rank == 2 && l.local_size == -1);
}

/* mpirun inside a Slurm allocation: the processes agree on OpenMPI's numbering */
Test(launch, openmpi_before_slurm)
{
	const char *const both[] = { "SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=1",
	                             "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", NULL };
	lks_launch l = detect(both);

	cr_assert_str_eq(l.launcher, "openmpi");
	cr_assert(l.rank == 1 && l.size == 2);
}

/* sbatch's script has SLURM_PROCID=0 and SLURM_NTASKS, but srun did not start it */
Test(launch, batch_script_is_not_a_task)
{
	const char *const batch[] = { "SLURM_JOB_ID=42", "SLURM_PROCID=0", "SLURM_NTASKS=8",
	                              "SLURM_LOCALID=0", NULL };
	lks_launch l = detect(batch);

	cr_assert_str_eq(l.launcher, "none");
	cr_assert_eq(l.size, 1);
}

Test(launch, malformed_values_are_refused_by_name)
{
	const char *const word[] = { "OMPI_COMM_WORLD_RANK=one", "OMPI_COMM_WORLD_SIZE=2", NULL };
	const char *const past[] = { "PMI_RANK=2", "PMI_SIZE=2", NULL };
	const char *const zero[] = { "SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=0", NULL };
	const char *const trail[] = { "PMI_RANK=1 ", "PMI_SIZE=2", NULL };
	const char *const local[] = { "PMI_RANK=1", "PMI_SIZE=2", "MPI_LOCALRANKID=3",
	                              "MPI_LOCALNRANKS=2", NULL };
	const char *const huge[] = { "PMI_RANK=0", "PMI_SIZE=99999999999", NULL };

	refused(word, "OMPI_COMM_WORLD_RANK");
	refused(past, "PMI_RANK=2 is past PMI_SIZE=2");
	refused(zero, "SLURM_STEP_NUM_TASKS");
	refused(trail, "PMI_RANK");
	refused(local, "MPI_LOCALRANKID=3");
	refused(huge, "PMI_SIZE");
}

/* The devices of a host go to its ranks in rank order, whatever the ranks per process:
   process p, local rank l on its host, takes devices from (its first rank - the first rank
   of the host's first process). */
Test(launch, a_hosts_ranks_take_its_devices_in_rank_order)
{
	/* 3 ranks on 2 processes of one host: 2 + 1 */
	cr_expect_eq(lks_launch_rank_slot(3, 2, 0, 0, 0), 0);
	cr_expect_eq(lks_launch_rank_slot(3, 2, 0, 0, 1), 1);
	cr_expect_eq(lks_launch_rank_slot(3, 2, 1, 1, 0), 2);
	/* 4 processes of one rank, 2 hosts of 2 processes each, by slot */
	for (int p = 0; p < 4; p++)
		cr_expect_eq(lks_launch_rank_slot(4, 4, p, p % 2, 0), p % 2, "process %d", p);
	/* 8 ranks on 2 hosts of one process each (a process drives its host's GPUs) */
	for (int i = 0; i < 4; i++)
		cr_expect_eq(lks_launch_rank_slot(8, 2, 1, 0, i), i);
	/* the local rank unknown: the process's own ranks from device 0 */
	cr_expect_eq(lks_launch_rank_slot(4, 4, 3, -1, 0), 0);
	/* every process of 6 on one host, one rank each: a device each */
	for (int p = 0; p < 6; p++)
		cr_expect_eq(lks_launch_rank_slot(6, 6, p, p, 0), p);
}
