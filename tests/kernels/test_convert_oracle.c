/*
 * test_convert_oracle.c: lockstep's conversions against NVIDIA's host implementation, on a
 * sample of float32 inputs small enough for the default run (about 1.5 million patterns).
 *
 * The sample: every 4099th float32 pattern; every pattern whose low 16 bits are one of
 * 0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff (every BF16 value, tie and neighbour);
 * and, for both FP8 formats, the 17 float32 patterns around every code's value and around
 * every rounding boundary between two codes (subnormals and the overflow threshold
 * included), with either sign. The decoders are compared over every code. All 2^32
 * patterns are compared by test_convert_exhaustive.c ('exhaustive' label).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/isa.h"
#include "nv_oracle.h"

#define STRIDE 4099u  /* prime: steps through every low-bit residue */
#define NEAR 8        /* float32 ulps either side of a boundary */
#define CHUNK (1u << 16)
#define REPORT 8      /* mismatches reported per test before only counting */

/* A growable list of float32 bit patterns. */
struct patterns {
	uint32_t *u;
	size_t n, cap;
};

static void patterns_add(struct patterns *p, uint32_t u)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 1u << 20;
		p->u = realloc(p->u, p->cap * sizeof(*p->u));
		cr_assert_not_null(p->u, "out of memory");
	}
	p->u[p->n++] = u;
}

/* The 2 NEAR + 1 patterns around x, both signs. */
static void patterns_add_near(struct patterns *p, float x)
{
	uint32_t u = lks_f32_bits(x) & 0x7fffffffu;

	for (int d = -NEAR; d <= NEAR; d++) {
		if (d < 0 && u < (uint32_t)-d)  /* below +0 the bits would wrap to NaNs */
			continue;
		patterns_add(p, u + (uint32_t)d);
		patterns_add(p, (u + (uint32_t)d) ^ 0x80000000u);
	}
}

static void patterns_build(struct patterns *p)
{
	static const uint16_t lows[] = { 0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff };

	for (uint64_t k = 0; k * STRIDE <= UINT32_MAX; k++)
		patterns_add(p, (uint32_t)(k * STRIDE));
	for (uint32_t hi = 0; hi < 65536; hi++)
		for (size_t j = 0; j < sizeof(lows) / sizeof(lows[0]); j++)
			patterns_add(p, hi << 16 | lows[j]);
	for (int f = 0; f < 2; f++) {
		int mbits = f == LKS_FP8_E4M3 ? 3 : 2;
		int bias = f == LKS_FP8_E4M3 ? 7 : 15;

		/* every finite positive code c: its value v, and the boundary v + step / 2 with
		   the next value (for the largest code, the overflow threshold); the step is that
		   of c's binade, 2^(max(e, 1) - bias - mbits), so no table is consulted */
		for (unsigned c = 0; c <= lks_fp8_specs[f].maxcode; c++) {
			int e = (int)(c >> mbits);
			float step = ldexpf(1.0f, (e > 1 ? e : 1) - bias - mbits);
			float v = e ? ldexpf((float)((1u << mbits) | (c & ((1u << mbits) - 1))),
			                     e - bias - mbits)
			            : (float)c * step;

			patterns_add_near(p, v);
			patterns_add_near(p, v + step / 2);
		}
	}
	/* specials, though the sets above already hold them */
	patterns_add(p, 0x7f800000u);
	patterns_add(p, 0xff800000u);
	patterns_add(p, 0x7fc00000u);
	patterns_add(p, 0xffc00000u);
	patterns_add(p, 0x7f800001u);
	patterns_add(p, 0xff800001u);
	patterns_add(p, 0x7f7fffffu);
	patterns_add(p, 0x80000001u);
}

/* What a comparison found: conversions compared, and how many differ. */
struct tally {
	size_t compared, bad;
};

static void compare8(struct tally *t, const char *what, const uint32_t *u, const uint8_t *got,
		     const uint8_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (got[i] != want[i] && t->bad++ < REPORT)
			cr_log_error("%s: 0x%08x gives 0x%02x, NVIDIA 0x%02x", what, u[i], got[i],
				want[i]);
	}
	t->compared += n;
}

static void compare16(struct tally *t, const char *what, const uint32_t *u,
		      const uint16_t *got, const uint16_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (got[i] != want[i] && t->bad++ < REPORT)
			cr_log_error("%s: 0x%08x gives 0x%04x, NVIDIA 0x%04x", what, u[i], got[i],
				want[i]);
	}
	t->compared += n;
}

/*
 * Compares lockstep with NVIDIA over the sample, chunk by chunk: the scalar encoders when
 * isa < 0, else the bulk encoders on that (forced) path.
 */
static struct tally compare_sample(int isa)
{
	static float x[CHUNK];
	static uint8_t nv8[CHUNK], got8[CHUNK];
	static uint16_t nv16[CHUNK], got16[CHUNK];
	struct patterns p = { 0 };
	struct tally t = { 0 };
	char what[64];

	patterns_build(&p);
	for (size_t base = 0; base < p.n; base += CHUNK) {
		size_t n = p.n - base < CHUNK ? p.n - base : CHUNK;
		const uint32_t *u = p.u + base;

		for (size_t i = 0; i < n; i++)
			x[i] = lks_bits_f32(u[i]);
		for (int f = 0; f < 2; f++) {
			for (int sat = 0; sat < 2; sat++) {
				lks_nv_f32_to_fp8_n(x, nv8, n, f, sat);
				if (isa < 0) {
					for (size_t i = 0; i < n; i++)
						got8[i] = lks_f32_to_fp8(x[i], (lks_fp8)f, sat);
				} else {
					lks_f32_to_fp8_n(x, got8, n, (lks_fp8)f, sat);
				}
				snprintf(what, sizeof(what), "%s sat=%d %s%s", lks_fp8_specs[f].name, sat,
					isa < 0 ? "scalar encoder" : "bulk encoder, path ",
					isa < 0 ? "" : lks_isa_name((lks_isa)isa));
				compare8(&t, what, u, got8, nv8, n);
			}
		}
		lks_nv_f32_to_bf16_n(x, nv16, n);
		if (isa < 0) {
			for (size_t i = 0; i < n; i++)
				got16[i] = lks_f32_to_bf16(x[i]);
		} else {
			lks_f32_to_bf16_n(x, got16, n);
		}
		snprintf(what, sizeof(what), "bf16 %s%s",
			isa < 0 ? "scalar encoder" : "bulk encoder, path ",
			isa < 0 ? "" : lks_isa_name((lks_isa)isa));
		compare16(&t, what, u, got16, nv16, n);
	}
	free(p.u);
	return t;
}

Test(convert_oracle, fp8_decode_matches_nvidia)
{
	for (int f = 0; f < 2; f++) {
		const float *t = lks_fp8_table((lks_fp8)f);

		for (unsigned c = 0; c < 256; c++) {
			float nv = lks_nv_fp8_to_f32((uint8_t)c, f);

			if (isnan(nv)) {
				cr_expect(isnan(t[c]), "%s 0x%02x: %a, NVIDIA NaN", lks_fp8_specs[f].name,
					c, t[c]);
				continue;
			}
			cr_expect_eq(lks_f32_bits(t[c]), lks_f32_bits(nv), "%s 0x%02x: %a, NVIDIA %a",
				lks_fp8_specs[f].name, c, t[c], nv);
		}
	}
}

Test(convert_oracle, bf16_decode_matches_nvidia)
{
	for (unsigned h = 0; h < 65536; h++) {
		float nv = lks_nv_bf16_to_f32((uint16_t)h);
		float got = lks_bf16_to_f32((uint16_t)h);

		if (isnan(nv)) {
			cr_expect(isnan(got), "bf16 0x%04x: %a, NVIDIA NaN", h, got);
			continue;
		}
		cr_expect_eq(lks_f32_bits(got), lks_f32_bits(nv), "bf16 0x%04x: %a, NVIDIA %a", h,
			got, nv);
	}
}

/* The oracle's single-value and array entry points must agree, or the tests that use the
   arrays would be checking against something else. */
Test(convert_oracle, oracle_array_matches_single)
{
	static float x[CHUNK];
	static uint8_t y8[CHUNK];
	static uint16_t y16[CHUNK];

	for (uint32_t i = 0; i < CHUNK; i++)
		x[i] = lks_bits_f32(i * 65537u + (i >> 3));
	for (int f = 0; f < 2; f++) {
		for (int sat = 0; sat < 2; sat++) {
			lks_nv_f32_to_fp8_n(x, y8, CHUNK, f, sat);
			for (uint32_t i = 0; i < CHUNK; i++)
				cr_expect_eq(y8[i], lks_nv_f32_to_fp8(x[i], f, sat));
		}
	}
	lks_nv_f32_to_bf16_n(x, y16, CHUNK);
	for (uint32_t i = 0; i < CHUNK; i++)
		cr_expect_eq(y16[i], lks_nv_f32_to_bf16(x[i]));
}

Test(convert_oracle, scalar_encoders_match_nvidia)
{
	struct tally t = compare_sample(-1);

	cr_log_info("scalar encoders: %zu conversions compared, %zu differ", t.compared, t.bad);
	cr_expect_gt(t.compared, 5 * 1400000, "sample smaller than planned: %zu", t.compared);
	cr_expect_eq(t.bad, 0, "scalar encoders: %zu of %zu conversions differ from NVIDIA's",
		t.bad, t.compared);
}

Test(convert_oracle, bulk_encoders_match_nvidia)
{
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		struct tally t;

		if (!lks_isa_supported((lks_isa)isa)) {
			/* stderr: a Criterion warning would make the run exit non-zero */
			fprintf(stderr, "test_convert_oracle: isa path '%s' not supported by this "
				"CPU, skipped\n", lks_isa_name((lks_isa)isa));
			continue;
		}
		cr_assert_eq(lks_isa_force((lks_isa)isa), 0);
		cr_assert_eq(lks_isa_active(), (lks_isa)isa);
		t = compare_sample(isa);
		cr_log_info("%s bulk encoders: %zu conversions compared, %zu differ",
			lks_isa_name((lks_isa)isa), t.compared, t.bad);
		cr_expect_eq(t.bad, 0, "%s bulk encoders: %zu of %zu conversions differ from "
			"NVIDIA's", lks_isa_name((lks_isa)isa), t.bad, t.compared);
	}
}
