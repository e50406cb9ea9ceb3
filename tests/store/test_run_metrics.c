/*
 * test_run_metrics.c: an imported run's metric rows held in a stored run (run_metrics.c):
 * every (step, rank, metric) is found through the index of where each (step, rank)
 * begins exactly as the binary search finds it, present or not, at the edges and past
 * them; the index is made where the pairs are dense and not where they are sparse.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/run.h"
#include "kernels/err.h"

#define STEPS 50
#define RANKS 4
#define NAMES 3

static const char *const names[NAMES] = { "loss", "grad_norm", "tps" };

/* Whether the row (step, rank, m) is there: some (step, rank) have none, some lack one. */
static int present(int step, int rank, int m)
{
	return !(step % 7 == 3 && rank == 2) && !(m == 1 && step % 5 == 0) && step != 31;
}

static double value(int step, int rank, int m)
{
	return step * 1000.0 + rank * 10.0 + m;
}

/* Every lookup, inside and around the rows, against what was added. */
static void every_lookup(const lks_stored_run *r)
{
	for (int step = -1; step <= STEPS + 1; step++)
		for (int rank = -1; rank <= RANKS; rank++)
			for (int m = 0; m < NAMES; m++) {
				const double *v = lks_stored_run_metric(r, step, rank,
				                                        lks_stored_run_metric_find(r, names[m]));
				int want = step >= 0 && step < STEPS && rank >= 0 && rank < RANKS
				           && present(step, rank, m);

				cr_assert_eq(v != NULL, want, "step %d rank %d metric %d", step, rank, m);
				if (v)
					cr_assert_eq(*v, value(step, rank, m));
			}
}

Test(run_metrics, the_index_finds_what_the_binary_search_finds)
{
	lks_stored_run r;

	lks_stored_run_init(&r);
	for (int step = 0; step < STEPS; step++)
		for (int rank = 0; rank < RANKS; rank++)
			for (int m = NAMES - 1; m >= 0; m--)  /* within a pair, any order */
				if (present(step, rank, m))
					cr_assert_eq(lks_stored_run_add_metric(&r, step, rank, names[m],
					                                       LKS_METRIC_NUMERICS,
					                                       value(step, rank, m), 0), 0);
	cr_assert_null(r.mfirst, "rows added: no index until one is made");
	every_lookup(&r);  /* the binary search */
	lks_stored_run_metrics_index(&r);
	cr_assert_not_null(r.mfirst, "dense pairs: an index");
	every_lookup(&r);
	/* a row added after: the index is dropped, and the binary search finds it */
	cr_assert_eq(lks_stored_run_add_metric(&r, STEPS, 0, "loss", LKS_METRIC_NUMERICS, 7.0, 0), 0);
	cr_assert_null(r.mfirst);
	cr_assert_eq(*lks_stored_run_metric(&r, STEPS, 0, lks_stored_run_metric_find(&r, "loss")),
	             7.0);
	lks_stored_run_release(&r);
}

Test(run_metrics, sparse_steps_keep_the_binary_search)
{
	lks_stored_run r;

	lks_stored_run_init(&r);
	for (int k = 0; k < 10; k++)  /* a golden file of every 100000th step */
		cr_assert_eq(lks_stored_run_add_metric(&r, k * 100000, 0, "loss", LKS_METRIC_NUMERICS,
		                                       k, 0), 0);
	lks_stored_run_metrics_index(&r);
	cr_assert_null(r.mfirst, "a million entries for ten rows");
	for (int k = 0; k < 10; k++) {
		cr_assert_eq(*lks_stored_run_metric(&r, k * 100000, 0, 0), k);
		cr_assert_null(lks_stored_run_metric(&r, k * 100000 + 1, 0, 0));
	}
	lks_stored_run_release(&r);
}

/* A row holds its rank in 16 bits (rows come by step, then rank): rank 65535 is held and found, rank 65536 is refused
   with a message, not wrapped to 0. (The metric index has the same guard; 65537 names,
   found one by one, would take this test seconds.) */
Test(run_metrics, a_rank_past_16_bits_is_refused_not_wrapped)
{
	lks_stored_run r;
	const double *v;

	lks_stored_run_init(&r);
	cr_assert_eq(lks_stored_run_add_metric(&r, 1, 0, "loss", LKS_METRIC_NUMERICS, 1.5, 0), 0,
	             "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_add_metric(&r, 1, 65535, "loss", LKS_METRIC_NUMERICS, 2.5, 0), 0,
	             "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_add_metric(&r, 2, 65536, "loss", LKS_METRIC_NUMERICS, 3.5, 0), -1);
	cr_assert_not_null(strstr(lks_errmsg(), "ranks 0 to 65535"), "%s", lks_errmsg());
	cr_assert_not_null(v = lks_stored_run_metric(&r, 1, 65535, 0));
	cr_assert_eq(*v, 2.5);
	cr_assert_null(lks_stored_run_metric(&r, 2, 0, 0), "rank 65536 was stored as rank 0");
	lks_stored_run_release(&r);
}
