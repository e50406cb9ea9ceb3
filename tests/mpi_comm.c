/*
 * mpi_comm.c: the MPI communicator (kernels/mpi/comm_mpi.h) in real processes, run by
 * ctest under 'mpirun -np N' (1, 2 and 4). A plain program, since every process must run it
 * whole. Each process makes every rank's input itself (a function of rank and index), so it
 * knows the bits the rank-order reduction must give, and checks its result against them:
 * the all-reduce sum and max (NaN, -0, and values whose sum depends on the order: a library
 * reduction in another order would not give these bits), lengths shorter than the ranks and
 * not a multiple of them, and a gather of blocks of different sizes to rank 0.
 * Exit 0 when every check holds, 1 with the first that does not.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/mpi/comm_mpi.h"

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "mpi_comm: rank %d: ", me); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		failures++; \
	} \
} while (0)

static int me;

/* Rank r's element i: order-sensitive magnitudes, signed zeros, a NaN on one rank. */
static float input(int r, size_t i, int with_nan)
{
	static const float v[] = { 1e8f, 1.0f, -1e8f, 0.5f, -0.0f, 3.25f, -7e-39f, 65504.0f };

	if (with_nan && r == 1 && i % 97 == 5)
		return NAN;
	return v[(r * 3 + i) % 8] * (float)(1 + (i % 5));
}

static int same_bits(float a, float b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

static void check_allreduce(lks_comm *c, size_t n, int max)
{
	float *x = malloc((n ? n : 1) * sizeof(float));

	for (size_t i = 0; i < n; i++)
		x[i] = input(c->rank, i, max);
	CHECK((max ? lks_comm_allreduce_max(c, x, n) : lks_comm_allreduce_sum(c, x, n)) == 0,
	      "all-reduce: %s", lks_errmsg());
	for (size_t i = 0; i < n; i++) {
		float acc = input(0, i, max);

		for (int r = 1; r < c->size; r++) {
			float y = input(r, i, max);

			acc = max ? (isnan(y) || y > acc ? y : acc) : acc + y;
		}
		if (!same_bits(x[i], acc)) {
			CHECK(0, "%s of %zu: element %zu is %a, rank order gives %a", max ? "max" : "sum",
			      n, i, x[i], acc);
			break;
		}
	}
	free(x);
}

static void check_gather(lks_comm *c)
{
	size_t bytes = (size_t)c->rank * 3 + 1, counts[64];
	unsigned char *mine = malloc(bytes), *all = NULL;
	void *out = NULL;

	for (size_t i = 0; i < bytes; i++)
		mine[i] = (unsigned char)(c->rank * 16 + i);
	CHECK(lks_comm_gather(c, mine, bytes, &out, counts) == 0, "gather: %s", lks_errmsg());
	if (c->rank == LKS_COMM_ROOT && out) {
		all = out;
		for (int r = 0; r < c->size; r++) {
			CHECK(counts[r] == (size_t)r * 3 + 1, "gather: rank %d sent %zu bytes", r,
			      counts[r]);
			for (size_t i = 0; i < counts[r]; i++)
				CHECK(all[i] == (unsigned char)(r * 16 + i), "gather: rank %d byte %zu", r,
				      i);
			all += counts[r];
		}
		free(out);
	}
	free(mine);
}

int main(void)
{
	static const size_t lengths[] = { 0, 1, 3, 1000, 100003 };
	lks_comm *c;

	if (lks_comm_mpi(0, &c)) {
		fprintf(stderr, "mpi_comm: %s\n", lks_errmsg());
		return 1;
	}
	me = c->rank;
	if (c->size > 64) {
		fprintf(stderr, "mpi_comm: at most 64 processes\n");
		return 1;
	}
	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
		check_allreduce(c, lengths[k], 0);
		check_allreduce(c, lengths[k], 1);
	}
	check_gather(c);
	CHECK(lks_comm_barrier(c) == 0, "barrier: %s", lks_errmsg());
	if (me == 0 && !failures)
		printf("mpi_comm: %d processes agree with the rank-order reduction\n", c->size);
	lks_comm_close(c);
	return failures ? 1 : 0;
}
