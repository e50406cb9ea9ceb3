/*
 * walk_tensors.c: the divergence walk (walk.h) on imported tensor traces
 * (harness/store/tensor_trace.h): step by step, and in each step rank by rank, a's
 * sequence of tensors aligned with b's (align.h) before any value is compared, since two
 * runs of different code rarely log the same ops.
 *
 * A tensor's key is its name, phase and microbatch. The two sequences of a (step, rank) are
 * aligned as a diff aligns lines: a longest common subsequence of keys, then a key left
 * once on each side paired as moved. Of what is left between two aligned pairs, an entry
 * of a and one of b at the same place of equal lengths of such runs, whose values all agree
 * (every statistic both have, and the hash), are paired as renamed; the rest is removed (a
 * only) or inserted (b only). None of these is a divergence: the walk compares the pairs,
 * and says what it aligned so.
 *
 * The divergence is the first pair, in a's order, that parts under the walk's options:
 * bitwise (o->exact) every statistic both entries hold, bit for bit (a NaN equal only to a
 * NaN), then the hash where both have one; with rtol and atol one statistic
 * (o->metric_name; every one without) within |a - b| <= atol + rtol |b|. Within a step the
 * first in execution order wins over the ranks, the lowest rank on a tie. A (step, rank)
 * that one run holds and the other not is the divergence (field "row"); steps one run has
 * past the other's last (field "steps").
 */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "harness/import/import.h"
#include "harness/store/tensor_trace.h"
#include "harness/verify/align.h"
#include "harness/verify/walk.h"
#include "kernels/err.h"

/* What a walk of two tensor traces keeps from step to step. */
struct lks_twalk {
	const lks_walk_opts *o;
	lks_stored_run *a, *b;
	lks_tensor_trace *ta, *tb;
	uint64_t *name_a, *name_b;    /* per tensor seq: the hash of its name and phase */
	int *stat_b;                  /* per statistic of a: b's index of its name; -2 unknown */
	int nstat_b;
	int metric_a;                 /* o->metric_name's index in a; -1 not (yet) held */
	int forward_only;             /* tensors of the backward phase left out */
	lks_align al;
	uint64_t *ka, *kb;            /* the keys of a (step, rank) */
	unsigned char *bpaired;       /* per entry of b: paired */
	size_t kcap;
	int *pair_b;                  /* per entry of a: its entry of b, or -1 */
	unsigned char *how;           /* per entry of a: LKS_ALIGN_* or LKS_TWALK_RENAMED */
	size_t pcap;
	/* what the walk aligned, over every step compared */
	long same, moved, renamed, inserted, removed;
	char first_ins[96], first_rem[96], first_ren[200];
	int64_t ncompared;
	int nmatch;
	int skip_missing;             /* a (step, rank) one side lacks is no divergence */
};

enum { LKS_TWALK_RENAMED = 3 };

/* The edit distance an alignment searches before it pairs the rest the cheaper way
   (align.h): two runs of one model differ by a few ops, a step of thousands of ops
   logged by different code by more, which no one reads op by op anyway. */
#define LKS_TWALK_MAX_D 4096

static const char *lks_lbl(const char *label, const char *none)
{
	return label ? label : none;
}

static uint64_t lks_tensor_key(const lks_stored_run *r, int seq)
{
	return XXH3_64bits_withSeed(r->names[seq], strlen(r->names[seq]),
	                            (uint64_t)r->phases[seq] + 1);
}

/* Per tensor of r, its name's hash. */
static uint64_t *lks_name_keys(const lks_stored_run *r)
{
	uint64_t *k = malloc(((size_t)r->nt + 1) * sizeof(*k));

	for (int i = 0; k && i < r->nt; i++)
		k[i] = lks_tensor_key(r, i);
	return k;
}

static uint64_t lks_entry_key(const uint64_t *names, const lks_tentry *e)
{
	/* the microbatch mixed in: -1 (none said) is a microbatch of its own */
	return names[e->tensor] ^ ((uint64_t)(e->micro + 2) * 0x9e3779b97f4a7c15ull);
}

/* b's index of a's statistic k (names differ in number between runs); -1 b has none (yet:
   a trace's names are met as its steps are read, so a miss is looked up again). */
static int lks_stat_in_b(struct lks_twalk *w, int k)
{
	if (k >= w->nstat_b) {
		int *p = realloc(w->stat_b, ((size_t)w->ta->nstats + 1) * sizeof(*p));

		if (!p)
			return -1;
		for (int i = w->nstat_b; i < w->ta->nstats; i++)
			p[i] = -1;
		w->stat_b = p;
		w->nstat_b = w->ta->nstats;
	}
	if (w->stat_b[k] < 0)
		w->stat_b[k] = lks_tensor_trace_stat(w->tb, w->ta->stats[k]);
	return w->stat_b[k];
}

/* The value of statistic kb in b's entry e, or NULL. */
static const lks_tval *lks_tval_of(const lks_tensor_trace *t, const lks_tentry *e, int k)
{
	for (int i = 0; i < e->n; i++)
		if (t->val[e->first + i].stat == k)
			return &t->val[e->first + i];
	return NULL;
}

static int lks_same_value(double x, double y)
{
	return (isnan(x) && isnan(y)) || !memcmp(&x, &y, sizeof(x));
}

/* Whether entries ea of a and eb of b part under the walk's options (exact: everything
   both hold alike; ignore the tolerance). With res, the divergence goes into it. */
static int lks_twalk_parts(struct lks_twalk *w, const lks_tentry *ea, const lks_tentry *eb,
                           int exact, lks_check_result *res, int *cmp)
{
	const lks_walk_opts *o = w->o;
	int compared = 0;

	for (int i = 0; i < ea->n; i++) {
		const lks_tval *va = &w->ta->val[ea->first + i], *vb;
		int kb;

		if (!exact && w->o->metric_name && va->stat != w->metric_a)
			continue;
		if ((kb = lks_stat_in_b(w, va->stat)) < 0 || !(vb = lks_tval_of(w->tb, eb, kb)))
			continue;
		compared = 1;
		if (exact || o->exact ? lks_same_value(va->value, vb->value)
		    : (isnan(va->value) || isnan(vb->value) ? (o->nan_equal && isnan(va->value)
		                                               && isnan(vb->value))
		       : fabs(va->value - vb->value) <= o->atol + o->rtol * fabs(vb->value)
		         || (o->nan_equal && va->value == vb->value)))
			continue;
		if (res) {
			char buf[LKS_IMPORT_NAME_MAX];
			const char *name = w->ta->stats[va->stat];
			const char *field = lks_tensor_stat_name(name, strlen(name), buf);

			if (field == buf || !field) {  /* a name of the format's own: no static one */
				snprintf(res->metric, sizeof(res->metric), "%s", name);
				field = "value";
			}
			lks_walk_real(res, field, va->value, vb->value, 0);
			if (!o->exact)
				snprintf(res->note, sizeof(res->note), "beyond atol %g + rtol %g", o->atol,
				         o->rtol);
		}
		return 1;
	}
	if ((exact || o->exact) && (!o->metric_name || exact) && ea->has_hash && eb->has_hash) {
		compared = 1;
		if (ea->hash != eb->hash) {
			if (res)
				lks_walk_int(res, "hash", (int64_t)ea->hash, (int64_t)eb->hash, 1);
			return 1;
		}
	}
	if (compared && !exact)
		w->ncompared++;
	if (cmp)
		*cmp = compared;
	return 0;
}

static int lks_twalk_room(struct lks_twalk *w, size_t na, size_t nb)
{
	size_t n = na > nb ? na : nb;

	if (n + 1 > w->kcap) {
		uint64_t *ka = realloc(w->ka, (n + 1) * sizeof(*ka));
		uint64_t *kb = ka ? realloc(w->kb, (n + 1) * sizeof(*kb)) : NULL;
		unsigned char *bp = kb ? realloc(w->bpaired, n + 1) : NULL;

		if (ka)
			w->ka = ka;
		if (kb)
			w->kb = kb;
		if (!bp)
			return lks_err("out of memory");
		w->bpaired = bp;
		w->kcap = n + 1;
	}
	if (na + 1 > w->pcap) {
		int *p = realloc(w->pair_b, (na + 1) * sizeof(*p));
		unsigned char *h = p ? realloc(w->how, na + 1) : NULL;

		if (p)
			w->pair_b = p;
		if (!h)
			return lks_err("out of memory");
		w->how = h;
		w->pcap = na + 1;
	}
	return 0;
}

static void lks_twalk_name(char *buf, size_t size, const lks_stored_run *r, const lks_tentry *e)
{
	snprintf(buf, size, "%s%s", r->names[e->tensor],
	         r->phases[e->tensor] == LKS_PHASE_BACKWARD ? " (backward)" : "");
}

/* Between two aligned pairs (LKS_ALIGN_SAME; and before the first, after the last), the
   entries of a and of b left unpaired: where there are as many on each side, the k-th of a
   and the k-th of b are paired as renamed when their values agree. */
static void lks_twalk_renamed(struct lks_twalk *w, const lks_tentry *ea, int na,
                              const lks_tentry *eb, int nb)
{
	for (int i = 0, j = 0;;) {
		int ie = i, je, ca = 0, cb = 0;

		while (ie < na && w->how[ie] != LKS_ALIGN_SAME)
			ie++;
		je = ie < na ? w->pair_b[ie] : nb;
		for (int x = i; x < ie; x++)
			ca += w->pair_b[x] < 0;
		for (int y = j; y < je; y++)
			cb += !w->bpaired[y];
		for (int k = 0, x = i, y = j; ca == cb && k < ca; k++, x++, y++) {
			while (w->pair_b[x] >= 0)  /* one of the ca unpaired lies ahead, below ie */
				x++;
			while (w->bpaired[y])
				y++;
			int cmp = 0;

			if (lks_twalk_parts(w, &ea[x], &eb[y], 1, NULL, &cmp) || !cmp)
				continue;
			w->pair_b[x] = y;
			w->bpaired[y] = 1;
			w->how[x] = LKS_TWALK_RENAMED;
			if (!w->renamed++) {
				char an[96], bn[96];

				lks_twalk_name(an, sizeof(an), w->a, &ea[x]);
				lks_twalk_name(bn, sizeof(bn), w->b, &eb[y]);
				snprintf(w->first_ren, sizeof(w->first_ren), "%s as %s", an, bn);
			}
		}
		if (ie == na)
			return;
		i = ie + 1;
		j = je + 1;
	}
}

/* a's entries ea[0..na) and b's eb[0..nb) aligned: pair_b, how and bpaired set. */
static int lks_twalk_align(struct lks_twalk *w, const lks_tentry *ea, size_t na,
                           const lks_tentry *eb, size_t nb)
{
	if (lks_twalk_room(w, na, nb))
		return -1;
	for (size_t i = 0; i < na; i++)
		w->ka[i] = lks_entry_key(w->name_a, &ea[i]);
	for (size_t j = 0; j < nb; j++)
		w->kb[j] = lks_entry_key(w->name_b, &eb[j]);
	if (lks_align_run(&w->al, w->ka, (int)na, w->kb, (int)nb, LKS_TWALK_MAX_D))
		return -1;
	for (size_t i = 0; i < na; i++) {
		w->pair_b[i] = w->al.amap[i];
		w->how[i] = w->al.ahow[i];
	}
	for (size_t j = 0; j < nb; j++)
		w->bpaired[j] = w->al.bmap[j] >= 0;
	lks_twalk_renamed(w, ea, (int)na, eb, (int)nb);
	return 0;
}

/* One step of a's rank ra against b's rb: aligned, then the first pair that parts (its
   place in a's sequence in *at, -1 none; the divergence into res, at rank ra). What was
   aligned is counted up to it. */
static int lks_twalk_rank(struct lks_twalk *w, int step, int ra, int rb, int *at,
                          lks_check_result *res)
{
	const lks_tentry *ea, *eb;
	size_t na = lks_tensor_trace_rank(w->ta, ra, &ea);
	size_t nb = lks_tensor_trace_rank(w->tb, rb, &eb), jmax = 0;

	*at = -1;
	if ((!na && !nb) || ((!na || !nb) && w->skip_missing))
		return 0;
	if (!na || !nb) {
		lks_walk_at(res, w->a, step, ra, -1);
		res->field = "row";
		snprintf(res->note, sizeof(res->note), "no tensors of step %d rank %d in %s", step,
		         ra, !na ? lks_lbl(w->o->label_a, "a") : lks_lbl(w->o->label_b, "b"));
		*at = 0;
		return 0;
	}
	if (lks_twalk_align(w, ea, na, eb, nb))
		return -1;
	for (size_t i = 0; i < na; i++) {
		if (w->pair_b[i] < 0) {
			if (!w->removed++)
				lks_twalk_name(w->first_rem, sizeof(w->first_rem), w->a, &ea[i]);
			continue;
		}
		jmax = (size_t)w->pair_b[i] > jmax ? (size_t)w->pair_b[i] : jmax;
		w->same += w->how[i] == LKS_ALIGN_SAME;
		w->moved += w->how[i] == LKS_ALIGN_MOVED;
		if ((w->o->pattern && fnmatch(w->o->pattern, w->a->names[ea[i].tensor], 0))
		    || (w->forward_only && w->a->phases[ea[i].tensor] == LKS_PHASE_BACKWARD))
			continue;
		w->nmatch++;
		if (lks_twalk_parts(w, &ea[i], &eb[w->pair_b[i]], 0, res, NULL)) {
			lks_walk_at(res, w->a, step, ra, ea[i].tensor);
			*at = (int)i;
			break;
		}
	}
	/* b's unpaired entries up to the divergence (all of them without one) */
	for (size_t j = 0; j < nb && (*at < 0 || j < jmax); j++)
		if (!w->bpaired[j] && !w->inserted++)
			lks_twalk_name(w->first_ins, sizeof(w->first_ins), w->b, &eb[j]);
	return 0;
}

/* What the walk aligned, after the values in res's note. */
static void lks_twalk_note(const struct lks_twalk *w, lks_check_result *res)
{
	size_t len = strlen(res->note);

	if (!w->moved && !w->renamed && !w->inserted && !w->removed)
		return;
	snprintf(res->note + len, sizeof(res->note) - len,
	         "%saligned by name and order: %ld inserted in %s%s%s%s, %ld removed%s%s%s, "
	         "%ld renamed%s%s%s, %ld moved", len ? "; " : "", w->inserted, lks_lbl(w->o->label_b, "b"),
	         w->inserted ? " (first: " : "", w->first_ins, w->inserted ? ")" : "",
	         w->removed, w->removed ? " (first: " : "", w->first_rem,
	         w->removed ? ")" : "", w->renamed, w->renamed ? " (first: " : "", w->first_ren,
	         w->renamed ? ")" : "", w->moved);
}

static void lks_twalk_release(struct lks_twalk *w)
{
	free(w->name_a);
	free(w->name_b);
	free(w->stat_b);
	free(w->ka);
	free(w->kb);
	free(w->bpaired);
	free(w->pair_b);
	free(w->how);
	lks_align_release(&w->al);
}

int lks_walk_tensor_trace(const lks_walk_opts *o, lks_stored_run *a, lks_stored_run *b,
                          lks_check_result *res, lks_walk_count *cnt)
{
	struct lks_twalk w = { .o = o, .a = a, .b = b, .ta = a->tt, .tb = b->tt, .metric_a = -1 };
	int rc = 0, steps = a->nsteps < b->nsteps ? a->nsteps : b->nsteps;

	if (cnt)
		*cnt = (lks_walk_count){ 0 };
	if (!a->tt || !b->tt) {
		lks_walk_at(res, a, -1, -1, -1);
		res->field = "row";
		snprintf(res->note, sizeof(res->note), "%s holds a tensor trace, %s none",
		         a->tt ? lks_lbl(o->label_a, "a") : lks_lbl(o->label_b, "b"),
		         a->tt ? lks_lbl(o->label_b, "b") : lks_lbl(o->label_a, "a"));
		return 0;
	}
	lks_align_init(&w.al);
	if (!(w.name_a = lks_name_keys(a)) || !(w.name_b = lks_name_keys(b))) {
		rc = lks_err("out of memory");
		goto out;
	}
	for (int step = 0; step < steps && !res->failed; step++) {
		int best = -1, nr;

		if (lks_tensor_trace_step(a->tt, step) || lks_tensor_trace_step(b->tt, step)) {
			rc = -1;
			goto out;
		}
		if (o->metric_name && w.metric_a < 0)  /* names are met as steps are read */
			w.metric_a = lks_tensor_trace_stat(a->tt, o->metric_name);
		nr = a->tt->nranks > b->tt->nranks ? a->tt->nranks : b->tt->nranks;
		for (int rank = 0; rank < nr; rank++) {
			lks_check_result r;
			int at;

			lks_check_result_init(&r);
			if (lks_twalk_rank(&w, step, rank, rank, &at, &r)) {
				rc = -1;
				goto out;
			}
			if (at >= 0 && (best < 0 || at < best)) {  /* the lowest rank on a tie */
				best = at;
				*res = r;
			}
		}
	}
	if (!res->failed && a->nsteps != b->nsteps) {
		lks_walk_at(res, a, steps, -1, -1);
		res->field = "steps";
		snprintf(res->note, sizeof(res->note), "%s holds steps to %d, %s to %d",
		         lks_lbl(o->label_a, "a"), a->nsteps - 1, lks_lbl(o->label_b, "b"),
		         b->nsteps - 1);
	}
	lks_twalk_note(&w, res);
	if (cnt) {
		cnt->nmatch = w.nmatch;
		cnt->nshared = w.nmatch;
		cnt->ncompared = w.ncompared;
	}
out:
	lks_twalk_release(&w);
	return rc;
}

int lks_walk_tensor_ranks(const lks_walk_opts *o, lks_stored_run *a, int forward_only,
                          lks_check_result *res, lks_walk_count *cnt)
{
	struct lks_twalk w = { .o = o, .a = a, .b = a, .ta = a->tt, .tb = a->tt, .metric_a = -1,
	                       .skip_missing = 1, .forward_only = forward_only };
	int rc = 0;

	*cnt = (lks_walk_count){ 0 };
	lks_align_init(&w.al);
	if (!(w.name_a = lks_name_keys(a)) || !(w.name_b = lks_name_keys(a))) {
		rc = lks_err("out of memory");
		goto out;
	}
	for (int step = 0; step < a->nsteps && !res->failed; step++) {
		lks_check_result first;
		int nr, odd = 0, first_r = -1;

		if (lks_tensor_trace_step(a->tt, step)) {
			rc = -1;
			goto out;
		}
		nr = a->tt->nranks;
		for (int r = 1; r < nr; r++) {
			lks_check_result tmp;
			int at;

			lks_check_result_init(&tmp);
			if (lks_twalk_rank(&w, step, r, 0, &at, &tmp)) {
				rc = -1;
				goto out;
			}
			if (at < 0)
				continue;
			odd++;
			if (first_r < 0) {
				first = tmp;
				first_r = r;
			}
		}
		if (!odd)
			continue;
		*res = first;
		if (nr == 2) {
			res->rank = -1;
			snprintf(res->note, sizeof(res->note), "ranks 0 and 1 differ, with no majority "
			         "of two: a golden or a clean run decides");
		} else if (odd == nr - 1) {
			res->rank = 0;
			snprintf(res->note, sizeof(res->note), "rank 0 differs from all %d others "
			         "(the values: rank 1 against rank 0)", nr - 1);
		} else {
			snprintf(res->note, sizeof(res->note), "%d of %d ranks differ from rank 0",
			         odd, nr);
		}
	}
	cnt->nmatch = cnt->nshared = w.nmatch;
	cnt->ncompared = w.ncompared;
out:
	lks_twalk_release(&w);
	return rc;
}

/* The l2 of a pair (x of a, y of b; a's tensor seq at rank) into d's largest relative
   error: a NaN on one side is an infinite one, on both none. */
static void lks_l2_rel_max(lks_tensor_step_diff *d, double x, double y, int seq, int rank)
{
	double rel = isnan(x) || isnan(y) ? (isnan(x) && isnan(y) ? 0 : INFINITY)
	             : x == y ? 0 : fabs(x - y) / fabs(y);

	if (isnan(d->l2_rel) || rel > d->l2_rel) {
		d->l2_rel = rel;
		d->l2_seq = rel > 0 ? seq : -1;
		d->l2_rank = rel > 0 ? rank : -1;
	}
}

int lks_walk_tensor_step_pairs(lks_stored_run *a, lks_stored_run *b, int step,
                               lks_tensor_pair_fn fn, void *arg, lks_tensor_step_diff *d)
{
	static const lks_walk_opts exact = { .exact = 1 };
	struct lks_twalk w = { .o = &exact, .a = a, .b = b, .ta = a->tt, .tb = b->tt,
	                       .metric_a = -1 };
	int rc = 0, l2a, nr;

	*d = (lks_tensor_step_diff){ .l2_rel = NAN, .l2_seq = -1, .l2_rank = -1 };
	if (!a->tt || !b->tt)
		return 0;
	lks_align_init(&w.al);
	if (!(w.name_a = lks_name_keys(a)) || !(w.name_b = lks_name_keys(b))) {
		rc = lks_err("out of memory");
		goto out;
	}
	if (lks_tensor_trace_step(a->tt, step) || lks_tensor_trace_step(b->tt, step)) {
		rc = -1;
		goto out;
	}
	l2a = lks_tensor_trace_stat(a->tt, "l2");
	nr = a->tt->nranks > b->tt->nranks ? a->tt->nranks : b->tt->nranks;
	for (int rank = 0; rank < nr && !rc; rank++) {
		const lks_tentry *ea, *eb;
		size_t na = lks_tensor_trace_rank(a->tt, rank, &ea);
		size_t nb = lks_tensor_trace_rank(b->tt, rank, &eb);

		if (!na || !nb) {
			d->removed += (long)na;
			d->inserted += (long)nb;
			continue;
		}
		if (lks_twalk_align(&w, ea, na, eb, nb)) {
			rc = -1;
			goto out;
		}
		for (size_t j = 0; j < nb; j++)
			d->inserted += !w.bpaired[j];
		for (size_t i = 0; i < na && !rc; i++) {
			const lks_tentry *x = &ea[i], *y;
			const lks_tval *va, *vb;
			double l2_a = NAN, l2_b = NAN;
			int kb, parts;

			if (w.pair_b[i] < 0) {
				d->removed++;
				continue;
			}
			y = &eb[w.pair_b[i]];
			d->pairs++;
			d->renamed += w.how[i] == LKS_TWALK_RENAMED;
			d->moved += w.how[i] == LKS_ALIGN_MOVED;
			d->nhash += x->has_hash && y->has_hash && x->hash != y->hash;
			d->nvalue += parts = lks_twalk_parts(&w, x, y, 1, NULL, NULL);
			if (l2a >= 0 && (va = lks_tval_of(a->tt, x, l2a))
			    && (kb = lks_stat_in_b(&w, l2a)) >= 0 && (vb = lks_tval_of(b->tt, y, kb))) {
				l2_a = va->value;
				l2_b = vb->value;
				lks_l2_rel_max(d, l2_a, l2_b, x->tensor, rank);
			}
			if (fn)
				rc = fn(arg, rank, (int)i, x->tensor, parts, l2_a, l2_b);
		}
	}
out:
	lks_twalk_release(&w);
	return rc;
}
