/*
 * test_comm.c: the threads communicator (kernels/comm.h): the all-reduce sum is bit for bit
 * the serial sum in rank order, the max lets a NaN through, the gather brings every rank's
 * bytes to the root in rank order, the barrier holds every rank until all arrive, and an
 * abort wakes ranks that wait in a collective with an error instead of a hang. And what the
 * NCCL communicator shares with it: the fold in rank order (element/reduce.h) gives the
 * threads' bits, rank 0's bytes reach every rank through an all-reduce sum (the unique
 * id), and device_memory is read only from tables of version 3 on.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/comm.h"
#include "kernels/element/reduce.h"

#define MAXW 8

struct comm_case {
	lks_comm *c[MAXW];
	int W;
	size_t n;
	float *x[MAXW];         /* (W, n) each rank's buffer */
	int rc[MAXW];
	char err[MAXW][300];
	void *out;              /* the root's gather */
	size_t counts[MAXW];
	atomic_int arrived;
	int seen[MAXW];         /* ranks arrived when this rank left the barrier */
	void (*fn)(struct comm_case *k, int rank);
};

struct comm_arg {
	struct comm_case *k;
	int rank;
};

static void *comm_thread(void *p)
{
	struct comm_arg *a = p;

	a->k->fn(a->k, a->rank);
	if (a->k->rc[a->rank])
		snprintf(a->k->err[a->rank], sizeof(a->k->err[0]), "%s", lks_errmsg());
	return NULL;
}

/* Runs fn on W threads, rank r on the r-th, and closes the group. */
static void comm_run(struct comm_case *k, void (*fn)(struct comm_case *, int))
{
	pthread_t th[MAXW];
	struct comm_arg a[MAXW];

	k->fn = fn;
	cr_assert_eq(lks_comm_threads(k->W, k->c), 0);
	for (int r = 0; r < k->W; r++) {
		cr_assert_eq(k->c[r]->rank, r);
		cr_assert_eq(k->c[r]->size, k->W);
		a[r] = (struct comm_arg){ k, r };
		cr_assert_eq(pthread_create(&th[r], NULL, comm_thread, &a[r]), 0);
	}
	for (int r = 0; r < k->W; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < k->W; r++)
		lks_comm_close(k->c[r]);
}

/* Values over a wide range of exponents and signs, so that the order of a sum shows. */
static float comm_value(int rank, size_t i)
{
	uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(rank * 40503u + 7u);

	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return ldexpf((float)(h & 0xffff) / 65536.0f + 0.5f, (int)(h >> 16) % 40 - 20)
	     * ((h >> 31) ? -1.0f : 1.0f);
}

static void comm_fill(struct comm_case *k)
{
	for (int r = 0; r < k->W; r++) {
		k->x[r] = malloc(k->n * sizeof(float));
		cr_assert_not_null(k->x[r]);
		for (size_t i = 0; i < k->n; i++)
			k->x[r][i] = comm_value(r, i);
	}
}

static void comm_free(struct comm_case *k)
{
	for (int r = 0; r < k->W; r++)
		free(k->x[r]);
	free(k->out);
}

static void do_sum(struct comm_case *k, int r)
{
	k->rc[r] = lks_comm_allreduce_sum(k->c[r], k->x[r], k->n);
}

static void do_max(struct comm_case *k, int r)
{
	k->rc[r] = lks_comm_allreduce_max(k->c[r], k->x[r], k->n);
}

Test(comm, allreduce_sum_is_the_serial_sum_in_rank_order)
{
	for (int W = 1; W <= 5; W++) {
		/* several chunks of 65536 and a part, so that every rank reduces some */
		struct comm_case k = { .W = W, .n = 5 * 65536 + 1234 };
		size_t differ = 0;

		comm_fill(&k);
		comm_run(&k, do_sum);
		for (int r = 0; r < W; r++)
			cr_assert_eq(k.rc[r], 0, "W %d rank %d: %s", W, r, k.err[r]);
		for (size_t i = 0; i < k.n; i++) {
			float s = comm_value(0, i), rev = comm_value(W - 1, i);

			for (int r = 1; r < W; r++) {
				s += comm_value(r, i);
				rev += comm_value(W - 1 - r, i);
			}
			differ += memcmp(&s, &rev, sizeof(s)) != 0;
			for (int r = 0; r < W; r++)
				cr_assert(memcmp(&k.x[r][i], &s, sizeof(s)) == 0,
				          "W %d rank %d element %zu: %a, the serial sum %a", W, r, i,
				          (double)k.x[r][i], (double)s);
		}
		/* the check can fail: the other order gives other bits somewhere */
		if (W >= 3)
			cr_assert_gt(differ, 0, "W %d: the data does not tell the orders apart", W);
		comm_free(&k);
	}
}

Test(comm, allreduce_max_propagates_nan)
{
	struct comm_case k = { .W = 4, .n = 70000 };

	comm_fill(&k);
	k.x[2][5] = NAN;                  /* one rank's NaN reaches every rank */
	k.x[1][69999] = NAN;              /* in the second chunk, reduced by rank 1 */
	k.x[3][6] = INFINITY;             /* an infinity is a max like another */
	k.x[0][7] = NAN;                  /* rank 0's NaN is kept against larger values */
	k.x[1][7] = 1e30f;
	comm_run(&k, do_max);
	for (int r = 0; r < 4; r++) {
		cr_assert_eq(k.rc[r], 0, "rank %d: %s", r, k.err[r]);
		cr_assert(isnan(k.x[r][5]) && isnan(k.x[r][69999]) && isnan(k.x[r][7]),
		          "rank %d lost a NaN", r);
		cr_assert(isinf(k.x[r][6]) && k.x[r][6] > 0);
		for (size_t i = 8; i < 69999; i += 997) {
			float m = comm_value(0, i);

			for (int q = 1; q < 4; q++)
				m = fmaxf(m, comm_value(q, i));
			cr_assert_eq(k.x[r][i], m, "rank %d element %zu", r, i);
		}
	}
	comm_free(&k);
}

/* rank r sends r + 1 records of 3 bytes, (r, j, 0x5a) */
static void do_gather(struct comm_case *k, int r)
{
	unsigned char rec[3 * MAXW];

	for (int j = 0; j <= r; j++)
		memcpy(rec + 3 * j, (unsigned char[]){ (unsigned char)r, (unsigned char)j, 0x5a }, 3);
	k->rc[r] = lks_comm_gather(k->c[r], rec, 3 * (size_t)(r + 1),
	                           r == LKS_COMM_ROOT ? &k->out : NULL,
	                           r == LKS_COMM_ROOT ? k->counts : NULL);
}

Test(comm, gather_brings_every_rank_to_the_root_in_rank_order)
{
	struct comm_case k = { .W = 5 };
	const unsigned char *p;

	comm_run(&k, do_gather);
	for (int r = 0; r < k.W; r++)
		cr_assert_eq(k.rc[r], 0, "rank %d: %s", r, k.err[r]);
	cr_assert_not_null(k.out);
	p = k.out;
	for (int r = 0; r < k.W; r++) {
		cr_assert_eq(k.counts[r], 3 * (size_t)(r + 1));
		for (int j = 0; j <= r; j++, p += 3)
			cr_assert(p[0] == r && p[1] == j && p[2] == 0x5a, "rank %d record %d", r, j);
	}
	free(k.out);
}

static void do_barrier(struct comm_case *k, int r)
{
	usleep((useconds_t)(1000 * 20 * r));  /* the ranks arrive one after another */
	atomic_fetch_add(&k->arrived, 1);
	k->rc[r] = lks_comm_barrier(k->c[r]);
	k->seen[r] = atomic_load(&k->arrived);
}

Test(comm, barrier_holds_every_rank_until_all_arrive, .timeout = 30)
{
	struct comm_case k = { .W = 4 };

	comm_run(&k, do_barrier);
	for (int r = 0; r < k.W; r++) {
		cr_assert_eq(k.rc[r], 0, "rank %d: %s", r, k.err[r]);
		cr_assert_eq(k.seen[r], 4, "rank %d left the barrier with %d arrived", r, k.seen[r]);
	}
}

/* Ranks 0-2 wait in an all-reduce; rank 3 never joins it, it aborts. */
static void do_abort(struct comm_case *k, int r)
{
	if (r == 3) {
		usleep(100 * 1000);  /* the others are waiting by now (and if not, they still fail) */
		lks_comm_abort(k->c[r], "lost its device");
		k->rc[r] = 0;
		return;
	}
	k->rc[r] = lks_comm_allreduce_sum(k->c[r], k->x[r], k->n);
	/* and every collective after it fails at once */
	k->seen[r] = lks_comm_barrier(k->c[r]);
}

Test(comm, abort_wakes_the_ranks_waiting_in_a_collective, .timeout = 30)
{
	struct comm_case k = { .W = 4, .n = 1000 };

	comm_fill(&k);
	comm_run(&k, do_abort);
	for (int r = 0; r < 3; r++) {
		cr_assert_eq(k.rc[r], -1, "rank %d: the all-reduce did not fail", r);
		cr_assert(strstr(k.err[r], "rank 3 aborted: lost its device"), "rank %d: %s", r,
		          k.err[r]);
		cr_assert_eq(k.seen[r], -1, "rank %d: a barrier after the abort passed", r);
		/* nothing was summed */
		cr_assert_eq(k.x[r][0], comm_value(r, 0));
	}
	comm_free(&k);
}

/* The group keeps the first abort's why, for a rank whose wait it ended to say the cause
   (a device end's wait does): none before, the first after, whatever came later. */
Test(comm, the_group_keeps_the_first_aborts_why)
{
	lks_comm *c[2];
	char why[64] = "untouched";

	cr_assert_eq(lks_comm_threads(2, c), 0);
	cr_assert_eq(lks_comm_why(c[0], why, sizeof(why)), 0);
	cr_assert_str_eq(why, "untouched");
	lks_comm_abort(c[1], "lost its device");
	lks_comm_abort(c[0], "saw the abort");
	cr_assert_eq(lks_comm_why(c[0], why, sizeof(why)), 1);
	cr_assert_str_eq(why, "rank 1 aborted: lost its device");
	cr_assert_eq(lks_comm_why(c[1], why, 8), 1);
	cr_assert_str_eq(why, "rank 1 ", "the why was not cut to its buffer");
	lks_comm_close(c[0]);
	lks_comm_close(c[1]);
}

/* rank 0 sends the bytes 0..255 in both orders; the others start from bytes that would
   show if they were added (0xa5) */
static void do_bcast(struct comm_case *k, int r)
{
	unsigned char *b = (unsigned char *)k->x[r];

	for (int i = 0; i < 512; i++)
		b[i] = r == 0 ? (unsigned char)(i < 256 ? i : 511 - i) : 0xa5;
	k->rc[r] = lks_comm_bcast_bytes(k->c[r], b, 512);
}

/* The NCCL unique id travels as floats in an all-reduce sum where only rank 0 gives
   non-zeros: every byte value arrives exact on every rank. */
Test(comm, bcast_bytes_carries_every_byte_value_from_rank_0)
{
	for (int W = 1; W <= 4; W++) {
		struct comm_case k = { .W = W, .n = 128 };  /* 512 bytes a rank */

		comm_fill(&k);
		comm_run(&k, do_bcast);
		for (int r = 0; r < W; r++) {
			const unsigned char *b = (const unsigned char *)k.x[r];

			cr_assert_eq(k.rc[r], 0, "W %d rank %d: %s", W, r, k.err[r]);
			for (int i = 0; i < 512; i++)
				cr_assert_eq(b[i], i < 256 ? i : 511 - i, "W %d rank %d byte %d", W, r, i);
		}
		comm_free(&k);
	}
}

/* special values at the first elements: signed zeros, infinities of both signs, NaN at
   several ranks, and a tie of -0 with +0, so that each rule shows */
static void comm_specials(struct comm_case *k)
{
	static const float v[][4] = {
		{ -0.0f, -0.0f, -0.0f, -0.0f }, { -0.0f, 0.0f, -0.0f, -0.0f },
		{ 0.0f, -0.0f, 0.0f, -0.0f }, { INFINITY, 1.0f, -INFINITY, 2.0f },
		{ -INFINITY, -INFINITY, 3.0f, -1e38f }, { 1.0f, NAN, 5.0f, -NAN },
		{ NAN, 1e30f, -1e30f, 4.0f }, { 3e38f, 3e38f, -3e38f, 1.0f },
		{ 1.0f, 2.0f, 3.0f, NAN },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		for (int r = 0; r < k->W; r++)
			k->x[r][i] = v[i][r % 4];
}

/* The NCCL communicator's ordered fold (element/reduce.h, on the rows of an all-gather) is
   bit for bit the threads communicator's all-reduce, sum and max, special values too. */
Test(comm, the_rank_order_fold_is_the_threads_allreduce)
{
	for (int max = 0; max <= 1; max++)
	for (int W = 1; W <= 5; W++) {
		struct comm_case k = { .W = W, .n = 65536 + 777 };
		float *all = malloc((size_t)W * k.n * sizeof(float));

		cr_assert_not_null(all);
		comm_fill(&k);
		comm_specials(&k);
		for (int r = 0; r < W; r++)
			memcpy(all + (size_t)r * k.n, k.x[r], k.n * sizeof(float));
		comm_run(&k, max ? do_max : do_sum);
		for (size_t i = 0; i < k.n; i++) {
			float f = lks_fold_ranks(all, W, k.n, i, max);

			for (int r = 0; r < W; r++)
				cr_assert(memcmp(&f, &k.x[r][i], sizeof(f)) == 0,
				          "%s W %d rank %d element %zu: fold %a, threads %a",
				          max ? "max" : "sum", W, r, i, (double)f, (double)k.x[r][i]);
		}
		/* the rules themselves, where W shows them */
		if (W == 4) {
			cr_assert(signbit(k.x[0][0]) && k.x[0][0] == 0.0f, "-0 + -0 or max is -0");
			cr_assert(max ? signbit(k.x[0][1]) : !signbit(k.x[0][1]),
			          "max keeps the first of a tie (-0); the sum -0 + 0 is +0");
			cr_assert(isnan(k.x[0][5]) && isnan(k.x[0][8]), "a NaN wins");
			cr_assert(max ? isinf(k.x[0][3]) : isnan(k.x[0][3]),
			          "max of +inf and -inf is +inf; their sum NaN");
			if (max)
				cr_assert(signbit(k.x[0][5]), "the last NaN in rank order wins (-NaN)");
		}
		free(all);
		comm_free(&k);
	}
}

static int says_device(lks_comm *c)
{
	(void)c;
	return 1;
}

/* device_memory (version 3) is read only from a table of version 3 or later; a table
   without it, and the threads', take host memory. */
Test(comm, device_memory_is_read_from_version_3_tables_only)
{
	lks_comm_methods m = { .version = 2, .name = "v2", .device_memory = says_device };
	lks_comm c = { &m, 0, 1 };
	lks_comm *t[1];

	cr_expect_eq(lks_comm_device_memory(&c), 0);
	m.version = 3;
	cr_expect_eq(lks_comm_device_memory(&c), 1);
	m.device_memory = NULL;
	cr_expect_eq(lks_comm_device_memory(&c), 0);
	cr_assert_eq(lks_comm_threads(1, t), 0);
	cr_expect_eq(lks_comm_device_memory(t[0]), 0);
	lks_comm_close(t[0]);
}

/* ---- all-gather, reduce-scatter and sub-groups (comm_group.c) ---- */

/* what each rank got, its x as it was before (orig), and the split that fn uses: colors[r]
   of groups */
static float *got[MAXW], *orig[MAXW];
static int groups_of, colors_of[MAXW], sub_rank[MAXW], sub_size[MAXW];

/* n here is the rows' length: x[r] holds W x n values for the reduce-scatter, and its
   first n are what the all-gather sends */
static void do_gather_scatter(struct comm_case *k, int r)
{
	float *ag = malloc(sizeof(float) * (size_t)k->W * k->n);

	k->rc[r] = !ag || lks_comm_reduce_scatter(k->c[r], k->x[r], k->n, got[r])
	        || lks_comm_all_gather(k->c[r], k->x[r], k->n, ag);
	if (!k->rc[r])  /* the all-gather's rows after the reduce-scatter's */
		memcpy(got[r] + k->n, ag, sizeof(float) * (size_t)k->W * k->n);
	free(ag);
}

/* every rank's x: values, the specials' rows first (comm_specials), over W x n */
static void fill_rows(struct comm_case *k, size_t len)
{
	size_t n = k->n;

	k->n = len;
	comm_fill(k);
	comm_specials(k);
	k->n = n;
	for (int r = 0; r < k->W; r++) {
		cr_assert_not_null(orig[r] = malloc(sizeof(float) * len));
		memcpy(orig[r], k->x[r], sizeof(float) * len);
	}
}

static void free_rows(struct comm_case *k)
{
	for (int r = 0; r < k->W; r++) {
		free(got[r]);
		free(orig[r]);
	}
	comm_free(k);
}

Test(comm, all_gather_and_reduce_scatter_are_the_ordered_ones)
{
	for (int W = 1; W <= 5; W++) {
		struct comm_case k = { .W = W, .n = 1000 };
		size_t len = (size_t)W * k.n;

		fill_rows(&k, len);
		for (int r = 0; r < W; r++)
			cr_assert_not_null(got[r] = malloc(sizeof(float) * (k.n + len)));
		comm_run(&k, do_gather_scatter);
		for (int r = 0; r < W; r++) {
			cr_assert_eq(k.rc[r], 0, "W %d rank %d: %s", W, r, k.err[r]);
			for (size_t i = 0; i < k.n; i++) {
				float s = orig[0][(size_t)r * k.n + i];

				for (int q = 1; q < W; q++)
					s += orig[q][(size_t)r * k.n + i];
				cr_assert(memcmp(&got[r][i], &s, sizeof(s)) == 0, "W %d rank %d reduce-scatter "
				          "%zu: %a, the serial sum %a", W, r, i, (double)got[r][i], (double)s);
			}
			for (int q = 0; q < W; q++)  /* -0 and NaN come through as they were */
				cr_assert(memcmp(got[r] + k.n + (size_t)q * k.n, orig[q], sizeof(float) * k.n)
				          == 0, "W %d rank %d: rank %d's row of the all-gather", W, r, q);
		}
		free_rows(&k);
	}
}

/* The split, then in the sub-group: the all-reduces sum and max of x's first n, the
   reduce-scatter of x (size x n) into got, the all-gather of x's first n after it. */
static void do_split(struct comm_case *k, int r)
{
	lks_comm *s;

	if ((k->rc[r] = lks_comm_split(k->c[r], groups_of, colors_of[r], &s)))
		return;
	sub_rank[r] = s->rank;
	sub_size[r] = s->size;
	float *mx = malloc(sizeof(float) * k->n), *ag = malloc(sizeof(float) * (size_t)s->size * k->n);

	if (mx)
		memcpy(mx, k->x[r], sizeof(float) * k->n);
	k->rc[r] = !mx || !ag || lks_comm_reduce_scatter(s, k->x[r], k->n, got[r] + 2 * k->n)
	        || lks_comm_all_gather(s, k->x[r], k->n, ag)
	        || lks_comm_allreduce_max(s, mx, k->n) || lks_comm_allreduce_sum(s, k->x[r], k->n);
	if (!k->rc[r]) {
		memcpy(got[r], k->x[r], sizeof(float) * k->n);
		memcpy(got[r] + k->n, mx, sizeof(float) * k->n);
		memcpy(got[r] + 3 * k->n, ag, sizeof(float) * (size_t)s->size * k->n);
	}
	free(mx);
	free(ag);
	lks_comm_close(s);
}

/* Six ranks split three ways, as a mesh's dimensions group them (dp 3 x tp 2: r / 2 and
   r % 2; and 2 x 3): in each group, each collective is its members' in their rank order,
   bit for bit, specials included, and a group's rank and size are its own. */
Test(comm, a_sub_group_is_its_ranks_in_rank_order)
{
	static const struct { int groups, div, mod; } splits[] = {
		{ 3, 2, 0 }, { 2, 1, 2 }, { 2, 3, 0 }, { 3, 1, 3 }, { 1, 1, 1 },
	};
	const int W = 6;

	for (size_t sp = 0; sp < sizeof(splits) / sizeof(splits[0]); sp++) {
		struct comm_case k = { .W = W, .n = 700 };

		groups_of = splits[sp].groups;
		for (int r = 0; r < W; r++) {
			colors_of[r] = splits[sp].mod ? r / splits[sp].div % splits[sp].mod
			                              : r / splits[sp].div;
			cr_assert_not_null(got[r] = malloc(sizeof(float) * k.n * (3 + W)));
		}
		fill_rows(&k, (size_t)W * k.n);
		comm_run(&k, do_split);
		for (int r = 0; r < W; r++) {
			int members[MAXW], m = 0, me = -1;

			cr_assert_eq(k.rc[r], 0, "split %zu rank %d: %s", sp, r, k.err[r]);
			for (int q = 0; q < W; q++)
				if (colors_of[q] == colors_of[r]) {
					me = q == r ? m : me;
					members[m++] = q;
				}
			cr_assert_eq(sub_rank[r], me, "split %zu rank %d", sp, r);
			cr_assert_eq(sub_size[r], m, "split %zu rank %d", sp, r);
			for (size_t i = 0; i < k.n; i++) {
				size_t at = (size_t)me * k.n + i;  /* the reduce-scatter's row me */
				float s = orig[members[0]][i], x = s, rs = orig[members[0]][at];

				for (int q = 1; q < m; q++) {
					float y = orig[members[q]][i];

					s += y;
					x = lks_max_nan(x, y);
					rs += orig[members[q]][at];
				}
				cr_assert(memcmp(&got[r][i], &s, sizeof(s)) == 0, "split %zu rank %d sum %zu: "
				          "%a, want %a", sp, r, i, (double)got[r][i], (double)s);
				cr_assert(memcmp(&got[r][k.n + i], &x, sizeof(x)) == 0, "split %zu rank %d max "
				          "%zu: %a, want %a", sp, r, i, (double)got[r][k.n + i], (double)x);
				cr_assert(memcmp(&got[r][2 * k.n + i], &rs, sizeof(rs)) == 0, "split %zu rank %d "
				          "reduce-scatter %zu: %a, want %a", sp, r, i,
				          (double)got[r][2 * k.n + i], (double)rs);
			}
			for (int q = 0; q < m; q++)
				cr_assert(memcmp(&got[r][(3 + q) * k.n], orig[members[q]], sizeof(float) * k.n)
				          == 0, "split %zu rank %d all-gather row %d", sp, r, q);
		}
		free_rows(&k);
	}
}

static void do_bad_split(struct comm_case *k, int r)
{
	lks_comm *s;

	k->rc[r] = lks_comm_split(k->c[r], 2, r == 2 ? 5 : r % 2, &s);
	if (!k->rc[r])
		lks_comm_close(s);
}

/* A color outside the groups: every rank refuses the split, saying whose color it was. */
Test(comm, a_split_with_a_color_outside_its_groups_is_refused)
{
	struct comm_case k = { .W = 4, .n = 1 };

	comm_fill(&k);
	comm_run(&k, do_bad_split);
	for (int r = 0; r < 4; r++) {
		cr_assert_neq(k.rc[r], 0, "rank %d split", r);
		cr_assert(strstr(k.err[r], "rank 2's color 5 is not one of 2 groups"), "rank %d: %s", r,
		          k.err[r]);
	}
	comm_free(&k);
}

static void do_uneven_split(struct comm_case *k, int r)
{
	lks_comm *s;

	k->rc[r] = lks_comm_split(k->c[r], 2, r == 0, &s);
	if (!k->rc[r])
		lks_comm_close(s);
}

/* Groups of different sizes would call the parent's collectives with different lengths:
   the split is refused on every rank, naming a group and its size. */
Test(comm, a_split_into_groups_of_different_sizes_is_refused)
{
	struct comm_case k = { .W = 4, .n = 1 };

	comm_fill(&k);
	comm_run(&k, do_uneven_split);
	for (int r = 0; r < 4; r++)
		cr_assert(k.rc[r] && strstr(k.err[r], "4 ranks do not split into 2 groups of one size "
		                                      "(group 0 has 3)"), "rank %d: %s", r, k.err[r]);
	comm_free(&k);
}
