/*
 * job.c: the processes one command runs as (job.h).
 */
#include "harness/suite/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/opt.h"
#include "kernels/err.h"
#ifdef LKS_HAVE_MPI
#include "kernels/mpi/comm_mpi.h"
#endif

int lks_job_start(double timeout_s, lks_job *j)
{
	memset(j, 0, sizeof(*j));
	j->root = 1;
	if (lks_launch_detect(getenv, &j->launch))
		return lks_usage("%s", lks_errmsg());
	/* one process needs no MPI (and a program that lockstep starts, a probe, inherits the
	   launcher's variables: MPI must not start in it) */
	if (j->launch.size == 1)
		return 0;
#ifdef LKS_HAVE_MPI
	if (lks_comm_mpi(timeout_s, &j->comm)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		return LKS_EXIT_INFRA;
	}
	if (j->comm->size != j->launch.size || j->comm->rank != j->launch.rank) {
		fprintf(stderr, "lockstep: %s says process %d of %d, MPI says %d of %d\n",
		        j->launch.launcher, j->launch.rank, j->launch.size, j->comm->rank,
		        j->comm->size);
		lks_job_end(j);
		return LKS_EXIT_INFRA;
	}
	j->root = j->comm->rank == 0;
	return 0;
#else
	(void)timeout_s;
	return lks_usage("launched by %s as process %d of %d, but this lockstep was built "
	                 "without MPI: its processes would not talk to each other (install an MPI "
	                 "library, e.g. Debian's libopenmpi-dev, and rebuild)", j->launch.launcher,
	                 j->launch.rank, j->launch.size);
#endif
}

int lks_job_agree(const lks_job *j, int *v, int n)
{
	float x[16];

	if (!j->comm)
		return 0;
	if (n > 16)
		return lks_err("an agreement of %d counts", n);
	for (int i = 0; i < n; i++)
		x[i] = (float)v[i];  /* exact: below 2^24 */
	if (lks_comm_allreduce_max(j->comm, x, (size_t)n))
		return -1;
	for (int i = 0; i < n; i++)
		v[i] = (int)x[i];
	return 0;
}

/* The hosts of the job's processes, gathered in process order as "name xN, ..." (each host
   once, with how many processes it runs). */
static int lks_job_hosts(const lks_job *j, char *out, size_t n)
{
	char host[256] = "", *all = NULL;
	size_t *counts = calloc((size_t)j->comm->size, sizeof(size_t)), len = 0;
	int rc = -1;

	if (!counts)
		return lks_err("out of memory");
	gethostname(host, sizeof(host) - 1);
	if (lks_comm_gather(j->comm, host, strlen(host) + 1, (void **)&all, counts))
		goto out;
	rc = 0;
	if (!j->root)
		goto out;
	out[0] = 0;
	for (int p = 0, at = 0; p < j->comm->size; at += (int)counts[p++]) {
		const char *h = all + at;
		int seen = 0, times = 0;

		for (int q = 0, qat = 0; q < j->comm->size; qat += (int)counts[q++]) {
			seen |= q < p && !strcmp(all + qat, h);
			times += !strcmp(all + qat, h);
		}
		if (!seen && len < n)
			len += (size_t)snprintf(out + len, n - len, "%s%s x%d", len ? ", " : "", h, times);
	}
out:
	free(all);
	free(counts);
	return rc;
}

int lks_job_fingerprint(const lks_job *j, lks_fingerprint *fp)
{
	char hosts[256] = "";

	if (!strcmp(j->launch.launcher, "none"))
		return 0;
	if (j->comm && lks_job_hosts(j, hosts, sizeof(hosts)))
		return -1;
	if (!j->comm) {  /* a launch of one process */
		gethostname(hosts, sizeof(hosts) - 4);
		strcat(hosts, " x1");
	}
	if (!j->root)
		return 0;
	lks_fingerprint_add(fp, "launcher", "%s", j->launch.launcher);
	lks_fingerprint_add(fp, "processes", "%d", j->launch.size);
	lks_fingerprint_add(fp, "hosts", "%s", hosts);
	if (!j->comm)
		return 0;
#ifdef LKS_HAVE_MPI
	{
		char lib[256];

		lks_comm_mpi_library(lib, sizeof(lib));
		lks_fingerprint_add(fp, "mpi_library", "%s", lib);
	}
#endif
	return 0;
}

void lks_job_end(lks_job *j)
{
	lks_comm_close(j->comm);
	j->comm = NULL;
}
