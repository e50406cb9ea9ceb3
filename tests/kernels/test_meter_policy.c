/*
 * test_meter_policy.c: the cuda meter's slots within their budget (kernels/cuda/meter.h,
 * lks_meter_choose), on a CPU stand-in of its slots: what take and give do, with the
 * policy's answers acted on as meter.cu acts on them. Issue 35 found the slots unbounded
 * (256 in flight, each as large as the largest tensor).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cuda/meter.h"

#define MAXS 64

/* the stand-in: every slot's capacity and whether it is taken */
struct pool {
	size_t cap[MAXS], held, budget, most;
	int taken[MAXS], n, inuse, grown, waits;
};

/* take bytes: 1 and *slot, or 0 where the meter would wait (nothing changed but drops) */
static int take(struct pool *p, size_t bytes, int *slot)
{
	for (;;) {
		size_t cap[MAXS];
		int map[MAXS], nfree = 0, k;
		enum lks_meter_act act;

		for (int i = 0; i < p->n; i++)
			if (!p->taken[i]) {
				cap[nfree] = p->cap[i];
				map[nfree++] = i;
			}
		act = lks_meter_choose(cap, nfree, p->held, p->inuse, bytes, p->budget, &k);
		if (act == LKS_METER_WAIT) {
			cr_assert_gt(p->inuse, 0, "waits with nothing in use: it would never end");
			p->waits++;
			return 0;
		}
		if (act == LKS_METER_DROP) {
			cr_assert(k >= 0 && k < nfree && cap[k] > 0);
			p->held -= p->cap[map[k]];
			p->cap[map[k]] = 0;
			continue;
		}
		if (act == LKS_METER_USE) {
			cr_assert(k >= 0 && k < nfree && cap[k] >= bytes, "used a slot too small");
			for (int i = 0; i < nfree; i++)
				cr_assert(!(cap[i] >= bytes && cap[i] < cap[k]), "not the smallest that fits");
			*slot = map[k];
		} else {
			cr_assert_eq(act, LKS_METER_GROW);
			if (k < 0) {
				cr_assert_lt(p->n, MAXS);
				*slot = p->n++;
				p->cap[*slot] = 0;
			} else {
				*slot = map[k];
			}
			p->held += bytes - p->cap[*slot];
			p->cap[*slot] = bytes;
			p->grown++;
		}
		p->taken[*slot] = 1;
		p->inuse++;
		p->most = p->held > p->most ? p->held : p->most;
		return 1;
	}
}

static void give(struct pool *p, int slot)
{
	cr_assert(p->taken[slot]);
	p->taken[slot] = 0;
	p->inuse--;
}

/* Many tensors in flight, each at most the budget, given back in random order as a
   tracer's thread measures them: never more bytes than the budget, never a wait with
   nothing in use, and every take served once enough came back. */
Test(meter_policy, slots_stay_within_the_budget_and_never_wait_for_nothing)
{
	struct pool p = { .budget = 1000 };
	uint64_t r = 0x9e3779b97f4a7c15ull;
	int out[512], nout = 0;

	for (int t = 0; t < 20000; t++) {
		size_t bytes;
		int s;

		r ^= r << 13; r ^= r >> 7; r ^= r << 17;
		bytes = 1 + r % 400;
		while (!take(&p, bytes, &s)) {  /* wait: the oldest measurement comes back */
			give(&p, out[0]);
			memmove(out, out + 1, sizeof(out[0]) * (size_t)--nout);
		}
		cr_assert_leq(p.held, p.budget, "take %d: %zu bytes held", t, p.held);
		out[nout++] = s;
		if (nout == 256 || r % 3 == 0) {  /* a measurement lands */
			int i = (int)((r >> 20) % (uint64_t)nout);

			give(&p, out[i]);
			out[i] = out[--nout];
		}
	}
	cr_expect_gt(p.waits, 0, "the budget was never reached: the test shows nothing");
}

/* A step's tensors again and again: after the first step every take is a slot's use, no
   slot grows (the meter allocates only while it grows). */
Test(meter_policy, after_the_first_step_nothing_grows)
{
	static const size_t step[] = { 64, 4096, 16384, 4096, 64, 1 << 20, 16384, 1 << 20, 300 };
	struct pool p = { .budget = 512u << 20 };
	int s[9], grown = -1;

	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 9; i++)
			cr_assert(take(&p, step[i], &s[i]));
		for (int i = 8; i >= 0; i--)
			give(&p, s[i]);
		if (round == 0)
			grown = p.grown;
	}
	cr_expect_eq(p.grown, grown, "slots grew after the first step");
	cr_expect_eq(p.n, 9);
}

/* A tensor larger than the budget: with nothing in use its slot goes past the budget
   (else it could never be measured), after the other free slots are dropped; with a slot
   in use, it waits. */
Test(meter_policy, a_tensor_larger_than_the_budget)
{
	struct pool p = { .budget = 100 };
	int a, b, c;

	cr_assert(take(&p, 60, &a));
	cr_assert(take(&p, 30, &b));
	cr_assert_not(take(&p, 500, &c), "a slot is in use: wait");
	give(&p, a);
	cr_assert_not(take(&p, 500, &c), "still one in use");
	give(&p, b);
	cr_assert(take(&p, 500, &c));
	cr_expect_eq(p.held, 500, "the other free slot dropped, this one alone past the budget");
	give(&p, c);
	cr_assert(take(&p, 50, &a), "a small one uses the big free slot");
	cr_expect_eq(a, c);
}
