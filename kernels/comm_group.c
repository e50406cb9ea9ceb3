/*
 * comm_group.c: reduce-scatter, all-gather and sub-groups over any communicator (comm.h),
 * made of its all-reduces, so that each is, bit for bit, what an ordered implementation of
 * it gives, on every transport that has all-reduces (threads, MPI, NCCL's ordered mode).
 *
 * The one fact they stand on: -0.0f adds nothing. x + -0 is x for every float x (+0 + -0 is
 * +0, -0 + -0 is -0, a NaN stays the NaN it was), so in a rank-ordered sum where some
 * ranks give -0 the result is the others' sum in rank order. Likewise -inf changes no
 * NaN-winning max (element/reduce.h: -inf is never greater, and a tie keeps what was).
 * Hence:
 *   - all-gather: each rank's n values in its own row of (size, n), the rest -0, summed;
 *   - reduce-scatter: the all-reduce of (size, n), each rank keeping its row;
 *   - a sub-group's collective: one collective of the parent over (groups, n), each
 *     group's ranks writing their row, the others -0 (-inf for the max).
 * A sub-group's collectives are therefore collectives of its parent: every group of a split
 * calls the same one together, as the ranks of a device mesh do in a step.
 */
#include "kernels/comm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* n floats of v */
static void lks_fill(float *x, size_t n, float v)
{
	for (size_t i = 0; i < n; i++)
		x[i] = v;
}

int lks_comm_all_gather(lks_comm *c, const float *x, size_t n, float *out)
{
	size_t total = (size_t)c->size * n;

	if (c->m->version >= 5 && c->m->all_gather)
		return c->m->all_gather(c, x, n, out);
	lks_fill(out, total, -0.0f);
	memcpy(out + (size_t)c->rank * n, x, n * sizeof(float));
	return lks_comm_allreduce_sum(c, out, total);
}

int lks_comm_reduce_scatter(lks_comm *c, const float *x, size_t n, float *out)
{
	size_t total = (size_t)c->size * n;
	float *all;
	int rc;

	if (c->m->version >= 5 && c->m->reduce_scatter)
		return c->m->reduce_scatter(c, x, n, out);
	if (!(all = malloc((total ? total : 1) * sizeof(float)))) {
		lks_comm_abort(c, "out of memory");
		return lks_err("out of memory");
	}
	memcpy(all, x, total * sizeof(float));
	if ((rc = lks_comm_allreduce_sum(c, all, total)) == 0)
		memcpy(out, all + (size_t)c->rank * n, n * sizeof(float));
	free(all);
	return rc;
}

/* ---- sub-groups ---- */

struct lks_comm_sub {
	lks_comm base;          /* first: an lks_comm * is one of these */
	lks_comm *parent;
	int groups, color;
	float *buf;             /* (groups x cap) the parent's rows */
	size_t cap;
};

static struct lks_comm_sub *lks_sub_of(lks_comm *c)
{
	return (struct lks_comm_sub *)c;
}

/* x (n floats) in this group's row of a (groups, n) buffer, the other rows pad, through
   the parent's all-reduce (max or sum), and this group's row back into x */
static int lks_sub_allreduce(lks_comm *c, float *x, size_t n, int max)
{
	struct lks_comm_sub *s = lks_sub_of(c);
	size_t total = (size_t)s->groups * n;
	int rc;

	if (n > s->cap) {
		float *b = realloc(s->buf, total * sizeof(float));

		if (!b) {
			lks_comm_abort(s->parent, "out of memory");
			return lks_err("out of memory");
		}
		s->buf = b;
		s->cap = n;
	}
	lks_fill(s->buf, total, max ? -INFINITY : -0.0f);
	memcpy(s->buf + (size_t)s->color * n, x, n * sizeof(float));
	rc = max ? lks_comm_allreduce_max(s->parent, s->buf, total)
	         : lks_comm_allreduce_sum(s->parent, s->buf, total);
	if (rc == 0)
		memcpy(x, s->buf + (size_t)s->color * n, n * sizeof(float));
	return rc;
}

static int lks_sub_sum(lks_comm *c, float *x, size_t n)
{
	return lks_sub_allreduce(c, x, n, 0);
}

static int lks_sub_max(lks_comm *c, float *x, size_t n)
{
	return lks_sub_allreduce(c, x, n, 1);
}

static int lks_sub_barrier(lks_comm *c)
{
	return lks_comm_barrier(lks_sub_of(c)->parent);
}

/* an abort of a sub-group ends the parent's collectives: the whole job stops */
static void lks_sub_abort(lks_comm *c, const char *why)
{
	lks_comm_abort(lks_sub_of(c)->parent, why);
}

static int lks_sub_aborted(lks_comm *c)
{
	return lks_comm_aborted(lks_sub_of(c)->parent);
}

static int lks_sub_why(lks_comm *c, char *buf, size_t n)
{
	return lks_comm_why(lks_sub_of(c)->parent, buf, n);
}

/* the parent stays open: the split's caller owns it */
static void lks_sub_close(lks_comm *c)
{
	struct lks_comm_sub *s = lks_sub_of(c);

	free(s->buf);
	free(s);
}

static const lks_comm_methods lks_comm_sub_methods = {
	.version = LKS_COMM_VERSION,
	.name = "sub-group",
	.allreduce_sum = lks_sub_sum,
	.allreduce_max = lks_sub_max,
	.gather = NULL,  /* the job's gather is the parent's */
	.barrier = lks_sub_barrier,
	.abort = lks_sub_abort,
	.close = lks_sub_close,
	.aborted = lks_sub_aborted,
	.why = lks_sub_why,
};

int lks_comm_split(lks_comm *c, int groups, int color, lks_comm **out)
{
	int32_t *colors = malloc(sizeof(int32_t) * (size_t)c->size), mine = color;
	struct lks_comm_sub *s;
	int rank = 0, size = 0, rc;

	*out = NULL;
	if (c->m->version >= 6 && c->m->split) {
		free(colors);
		return c->m->split(c, groups, color, out);
	}
	if (lks_comm_device_memory(c)) {
		free(colors);
		return lks_err("communicator '%s' works on device memory and makes no sub-groups",
		               c->m->name);
	}
	if (!colors || !(s = calloc(1, sizeof(*s)))) {
		free(colors);
		lks_comm_abort(c, "out of memory");
		return lks_err("out of memory");
	}
	/* every rank's color, so that each knows its place and its group's size */
	rc = lks_comm_allgather_bytes(c, &mine, sizeof(mine), (unsigned char *)colors);
	for (int r = 0; rc == 0 && r < c->size; r++) {
		if (colors[r] < 0 || colors[r] >= groups)
			rc = lks_err("communicator '%s': rank %d's color %d is not one of %d groups",
			             c->m->name, r, (int)colors[r], groups);
		size += colors[r] == color;
		rank += colors[r] == color && r < c->rank;
	}
	/* groups of one size, as a mesh's: a collective of one group has the length of every
	   other's, so that the parent's collective is one */
	for (int g = 0; rc == 0 && g < groups; g++) {
		int n = 0;

		for (int r = 0; r < c->size; r++)
			n += colors[r] == g;
		if (n != c->size / groups || c->size % groups)
			rc = lks_err("communicator '%s': %d ranks do not split into %d groups of one size "
			             "(group %d has %d)", c->m->name, c->size, groups, g, n);
	}
	free(colors);
	if (rc) {
		free(s);
		return rc;
	}
	*s = (struct lks_comm_sub){ { &lks_comm_sub_methods, rank, size }, c, groups, color, NULL,
	                            0 };
	*out = &s->base;
	return 0;
}
