/*
 * mpi_devices.c: each MPI process of a run on the GPU its launcher's local rank names, and
 * two processes on one GPU refused, in real processes under 'mpirun -np 2' (driven by
 * tests/engine/mpi_devices.cmake). The GPUs are standin_link.h's: the cpu's methods, a named GPU
 * per rank context (GPU-standin-<slot modulo the GPUs>), no device communicator (the ranks
 * stage their all-reduce through MPI).
 *
 * 'mpi_devices G': a machine of G GPUs. Each process trains two_blocks' run (2 ranks, one
 * per process) and says which GPU each of its ranks had (on_devices):
 *   "process P (local rank L): rank R on GPU-standin-D"
 * and checks that D is its local rank: exit 0, or 1 naming what differs. Where two
 * processes would share a GPU (G = 1) the run fails in every process and the job ends with
 * exit 3, the refusal on stderr (MPI_Abort through the runner's abort of the job).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/case.h"
#include "harness/engine/launch.h"
#include "harness/engine/runner.h"
#include "kernels/err.h"
#include "kernels/mpi/comm_mpi.h"
#include "standin_link.h"

static const char two_ranks[] =
	"[case]\nsteps = 2\nseed = 7\nworld_size = 2\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 2\nseq = 8\nbatch = 2\n"
	"[run r]\nrecipe = fp8_rowwise\n";

static lks_launch launch;
static int wrong;

static void on_devices(void *arg, const lks_rank_device *d, int n)
{
	char want[48];

	(void)arg;
	snprintf(want, sizeof(want), "GPU-standin-%d", launch.local_rank);
	for (int i = 0; i < n; i++) {
		printf("process %d (local rank %d): rank %d on %s\n", launch.rank, launch.local_rank,
		       d[i].rank, d[i].uuid);
		wrong += strcmp(d[i].uuid, want) != 0;
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char path[] = "/tmp/lks-mpi-devices-XXXXXX";
	lks_backend be = standin_backend();
	lks_run_result res;
	lks_comm *job;
	lks_case c;
	FILE *f;
	int fd, rc;

	if (argc != 2 || (standin_devices = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: mpi_devices GPUS\n");
		return 2;
	}
	be.comm = NULL;  /* the stand-in link's fabric is one process's: stage through MPI */
	if (lks_launch_detect(getenv, &launch) || lks_comm_mpi(30, &job)) {
		fprintf(stderr, "mpi_devices: %s\n", lks_errmsg());
		return 3;
	}
	if ((fd = mkstemp(path)) < 0 || !(f = fdopen(fd, "w"))) {
		fprintf(stderr, "mpi_devices: cannot write '%s'\n", path);
		return 3;
	}
	fputs(two_ranks, f);
	fclose(f);
	rc = lks_case_load(path, NULL, 0, &c);
	unlink(path);
	if (rc) {
		fprintf(stderr, "mpi_devices: %s\n", lks_errmsg());
		return 3;
	}
	lks_runner_opts o = { .threads = 1, .backend = &be, .job = job,
	                      .local_rank = launch.local_rank, .timeout_s = 30,
	                      .on_devices = on_devices };
	if (lks_run(&c, &c.runs[0], NULL, &o, &res)) {
		fprintf(stderr, "mpi_devices: process %d: %s\n", launch.rank, lks_errmsg());
		rc = 3;
	} else if (wrong) {
		fprintf(stderr, "mpi_devices: process %d: a rank not on GPU %d\n", launch.rank,
		        launch.local_rank);
		rc = 1;
	}
	lks_case_release(&c);
	lks_comm_close(job);
	return rc;
}
