/*
 * test_convert.c: float32 <-> E4M3 / E5M2 / BF16 conversions of kernels/cpu/convert.h,
 * checked without NVIDIA's code.
 *
 * The decoders are checked against an independent formula written here (ldexp of sign,
 * exponent and mantissa); the encoders by round trips over every code and by hand-derived
 * edge cases whose expected codes are worked out in the comments; the bulk versions against
 * the scalar ones on every ISA path this CPU supports. The comparison with NVIDIA's host
 * implementation lives in test_convert_oracle.c (sampled, default run) and
 * test_convert_exhaustive.c (all 2^32 inputs), which need the CUDA Toolkit headers.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/isa.h"

/* The prime stride of the strided bulk-vs-scalar sample: 2^32 / 4099 ~ one million
   patterns, and a prime steps through every low-bit residue instead of a fixed few. */
#define STRIDE 4099u
#define CHUNK (1u << 16)

/*
 * The value of FP8 code c by the definition of the format, in double (exact: at most four
 * significant bits). *nan is set for the NaN codes, whose value is meaningless.
 */
static double ref_fp8_value(unsigned c, lks_fp8 fmt, int *nan)
{
	int mbits = fmt == LKS_FP8_E4M3 ? 3 : 2;
	int ebits = fmt == LKS_FP8_E4M3 ? 4 : 5;
	int bias = fmt == LKS_FP8_E4M3 ? 7 : 15;
	unsigned e = (c >> mbits) & ((1u << ebits) - 1);
	unsigned m = c & ((1u << mbits) - 1);
	double sign = (c & 0x80) ? -1.0 : 1.0;
	double v;

	*nan = 0;
	if (fmt == LKS_FP8_E4M3 && e == 15 && m == 7) {  /* "fn": S.1111.111 only */
		*nan = 1;
		return 0.0;
	}
	if (fmt == LKS_FP8_E5M2 && e == 31) {  /* IEEE-like: inf or NaN */
		*nan = m != 0;
		return sign * HUGE_VAL;
	}
	if (e == 0)
		v = ldexp((double)m, 1 - bias - mbits);
	else
		v = ldexp((double)((1u << mbits) | m), (int)e - bias - mbits);
	return sign * v;
}

/* The value of BF16 bits h by the definition (8 exponent bits, bias 127, 7 mantissa). */
static double ref_bf16_value(unsigned h, int *nan)
{
	unsigned e = (h >> 7) & 0xff;
	unsigned m = h & 0x7f;
	double sign = (h & 0x8000) ? -1.0 : 1.0;

	*nan = e == 0xff && m != 0;
	if (e == 0xff)
		return sign * HUGE_VAL;
	if (e == 0)
		return sign * ldexp((double)m, 1 - 127 - 7);
	return sign * ldexp((double)(0x80 | m), (int)e - 127 - 7);
}

/*
 * Forces ISA path isa for the bulk functions; returns 0 when this CPU cannot run it (the
 * test isa_paths says which are skipped). Criterion runs each test in its own process, so
 * a forced path stays in its test.
 */
static int use_isa(lks_isa isa)
{
	if (!lks_isa_supported(isa))
		return 0;
	cr_assert_eq(lks_isa_force(isa), 0, "cannot force isa path '%s'", lks_isa_name(isa));
	cr_assert_eq(lks_isa_active(), isa, "isa path '%s' forced but not active",
		lks_isa_name(isa));
	return 1;
}

/* Says which ISA paths the bulk tests below run and which they skip (on stderr: a
   Criterion warning would make the run exit non-zero). */
Test(convert, isa_paths)
{
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++)
		fprintf(stderr, "test_convert: isa path '%s': %s\n", lks_isa_name((lks_isa)isa),
			lks_isa_supported((lks_isa)isa) ? "tested" : "not supported by this CPU, skipped");
	cr_expect(lks_isa_supported(LKS_ISA_SCALAR), "the scalar path must always run");
	cr_expect(lks_isa_supported(lks_isa_best()));
}

Test(convert, fp8_table_is_the_format)
{
	for (int f = 0; f < 2; f++) {
		lks_fp8 fmt = (lks_fp8)f;
		const float *t = lks_fp8_table(fmt);
		int nans = 0, infs = 0;

		for (unsigned c = 0; c < 256; c++) {
			int nan;
			float want = (float)ref_fp8_value(c, fmt, &nan);

			if (nan) {
				nans++;
				cr_expect(isnan(t[c]), "%s code 0x%02x: %a, expected NaN",
					lks_fp8_specs[f].name, c, t[c]);
				cr_expect(isnan(lks_fp8_to_f32((uint8_t)c, fmt)));
				continue;
			}
			infs += isinf(want) != 0;
			/* bitwise, so that -0 (0x80) is told from +0 */
			cr_expect_eq(lks_f32_bits(t[c]), lks_f32_bits(want),
				"%s code 0x%02x: %a, expected %a", lks_fp8_specs[f].name, c, t[c], want);
			cr_expect_eq(lks_f32_bits(lks_fp8_to_f32((uint8_t)c, fmt)), lks_f32_bits(want));
		}
		/* E4M3: 0x7f, 0xff; E5M2: 0x7d..0x7f and 0xfd..0xff; infinities 0x7c, 0xfc */
		cr_expect_eq(nans, f == LKS_FP8_E4M3 ? 2 : 6, "%s: %d NaN codes", lks_fp8_specs[f].name, nans);
		cr_expect_eq(infs, f == LKS_FP8_E4M3 ? 0 : 2, "%s: %d inf codes", lks_fp8_specs[f].name, infs);
	}
	cr_expect_eq(lks_fp8_table(LKS_FP8_E4M3)[0x7e], LKS_E4M3_MAX);
	cr_expect_eq(lks_fp8_table(LKS_FP8_E5M2)[0x7b], LKS_E5M2_MAX);
	cr_expect(isinf(lks_fp8_table(LKS_FP8_E5M2)[0x7c]) && lks_fp8_table(LKS_FP8_E5M2)[0x7c] > 0);
	cr_expect(isinf(lks_fp8_table(LKS_FP8_E5M2)[0xfc]) && lks_fp8_table(LKS_FP8_E5M2)[0xfc] < 0);
}

Test(convert, bf16_decode_is_the_format)
{
	for (unsigned h = 0; h < 65536; h++) {
		int nan;
		float want = (float)ref_bf16_value(h, &nan);
		float got = lks_bf16_to_f32((uint16_t)h);

		if (nan) {
			cr_expect(isnan(got), "bf16 0x%04x: %a, expected NaN", h, got);
			continue;
		}
		cr_expect_eq(lks_f32_bits(got), lks_f32_bits(want), "bf16 0x%04x: %a, expected %a",
			h, got, want);
	}
}

/* What encoding the value of code c gives back: c itself, except where the format says. */
static unsigned fp8_roundtrip_code(unsigned c, lks_fp8 fmt, int sat, int nan)
{
	if (nan)
		return LKS_FP8_NAN;  /* any NaN encodes to the canonical positive NaN */
	if (fmt == LKS_FP8_E5M2 && (c & 0x7f) == 0x7c && sat)
		return (c & 0x80) | 0x7b;  /* satfinite clamps +-inf to +-max */
	return c;
}

Test(convert, fp8_codes_round_trip)
{
	for (int f = 0; f < 2; f++) {
		lks_fp8 fmt = (lks_fp8)f;

		for (int sat = 0; sat < 2; sat++) {
			for (unsigned c = 0; c < 256; c++) {
				int nan;
				float v = (float)ref_fp8_value(c, fmt, &nan);
				unsigned want;

				if (nan)
					v = lks_fp8_table(fmt)[c];
				want = fp8_roundtrip_code(c, fmt, sat, nan);
				cr_expect_eq(lks_f32_to_fp8(v, fmt, sat), want,
					"%s sat=%d: code 0x%02x (%a) encodes to 0x%02x, expected 0x%02x",
					lks_fp8_specs[f].name, sat, c, v, lks_f32_to_fp8(v, fmt, sat), want);
			}
		}
	}
}

Test(convert, fp8_codes_round_trip_bulk)
{
	uint8_t codes[256], back[256];
	float vals[256];

	for (unsigned c = 0; c < 256; c++)
		codes[c] = (uint8_t)c;
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (!use_isa((lks_isa)isa))
			continue;
		for (int f = 0; f < 2; f++) {
			lks_fp8 fmt = (lks_fp8)f;

			lks_fp8_to_f32_n(codes, vals, 256, fmt);
			for (int sat = 0; sat < 2; sat++) {
				unsigned bad = 0, first = 0, want = 0, w;

				lks_f32_to_fp8_n(vals, back, 256, fmt, sat);
				for (unsigned c = 0; c < 256; c++) {
					int nan;

					(void)ref_fp8_value(c, fmt, &nan);
					w = fp8_roundtrip_code(c, fmt, sat, nan);
					if (back[c] != w && bad++ == 0) {
						first = c;
						want = w;
					}
				}
				cr_expect_eq(bad, 0, "%s %s sat=%d: %u codes do not round-trip, the first "
					"0x%02x back as 0x%02x, expected 0x%02x", lks_isa_name((lks_isa)isa),
					lks_fp8_specs[f].name, sat, bad, first, back[first], want);
			}
		}
	}
}

Test(convert, bf16_codes_round_trip)
{
	static uint16_t codes[65536], back[65536];
	static float vals[65536];

	for (unsigned h = 0; h < 65536; h++) {
		int nan;
		float v = (float)ref_bf16_value(h, &nan);
		unsigned want = nan ? LKS_BF16_NAN : h;

		if (nan)
			v = lks_bf16_to_f32((uint16_t)h);
		cr_expect_eq(lks_f32_to_bf16(v), want, "bf16 0x%04x encodes to 0x%04x", h,
			lks_f32_to_bf16(v));
		codes[h] = (uint16_t)h;
	}
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		unsigned bad = 0, first = 0;
		int nan;

		if (!use_isa((lks_isa)isa))
			continue;
		lks_bf16_to_f32_n(codes, vals, 65536);
		lks_f32_to_bf16_n(vals, back, 65536);
		for (unsigned h = 0; h < 65536; h++) {
			(void)ref_bf16_value(h, &nan);
			if (back[h] != (nan ? LKS_BF16_NAN : h) && bad++ == 0)
				first = h;
		}
		(void)ref_bf16_value(first, &nan);
		cr_expect_eq(bad, 0, "%s: %u bf16 codes do not round-trip, the first 0x%04x back "
			"as 0x%04x, expected 0x%04x", lks_isa_name((lks_isa)isa), bad, first,
			back[first], nan ? LKS_BF16_NAN : first);
	}
}

/* An input, given by its bits, and the codes expected without and with saturation. */
struct fp8_case {
	lks_fp8 fmt;
	uint32_t x;
	uint8_t nosat, sat;
};

/*
 * E4M3: value (-1)^s 2^(e-7) 1.mmm, subnormals m 2^-9; 0x7e = 1.110b 2^8 = 448 is the
 * largest finite, 0x7f NaN. E5M2: (-1)^s 2^(e-15) 1.mm, subnormals m 2^-16; 0x7b =
 * 1.11b 2^15 = 57344 the largest finite, 0x7c inf.
 */
static const struct fp8_case fp8_cases[] = {
	/* 1.0 = 2^0: e = 7, m = 0 */
	{ LKS_FP8_E4M3, 0x3f800000, 0x38, 0x38 },
	/* 1.0625 = 1 + 2^-4, halfway between 1.000b (0x38) and 1.001b (0x39): even 0x38 */
	{ LKS_FP8_E4M3, 0x3f880000, 0x38, 0x38 },
	/* one float ulp above that halfway point: up to 0x39 */
	{ LKS_FP8_E4M3, 0x3f880001, 0x39, 0x39 },
	/* 1.1875, halfway between 1.001b (0x39, odd) and 1.010b (0x3a): even 0x3a */
	{ LKS_FP8_E4M3, 0x3f980000, 0x3a, 0x3a },
	/* 248, halfway between 240 = 1.111b 2^7 (0x77) and 256 (0x78): the carry into the
	   exponent gives even 0x78 */
	{ LKS_FP8_E4M3, 0x43780000, 0x78, 0x78 },
	/* 448 = max: 0x7e */
	{ LKS_FP8_E4M3, 0x43e00000, 0x7e, 0x7e },
	/* 464 = 448 + half an ulp (16), halfway to 480 = 1.111b 2^8, whose code is NaN: ties
	   to even keep 1.110b, 448 (0x7e), not an overflow in either mode */
	{ LKS_FP8_E4M3, 0x43e80000, 0x7e, 0x7e },
	{ LKS_FP8_E4M3, 0xc3e80000, 0xfe, 0xfe },
	/* the float after 464 overflows: NaN (0x7f | sign) without saturation, +-max with */
	{ LKS_FP8_E4M3, 0x43e80001, 0x7f, 0x7e },
	{ LKS_FP8_E4M3, 0xc3e80001, 0xff, 0xfe },
	/* +-inf: overflow as above */
	{ LKS_FP8_E4M3, 0x7f800000, 0x7f, 0x7e },
	{ LKS_FP8_E4M3, 0xff800000, 0xff, 0xfe },
	/* FLT_MAX: overflow */
	{ LKS_FP8_E4M3, 0x7f7fffff, 0x7f, 0x7e },
	/* NaNs of any sign or payload, quiet or signalling: the canonical 0x7f */
	{ LKS_FP8_E4M3, 0x7fc00000, 0x7f, 0x7f },
	{ LKS_FP8_E4M3, 0xffc00000, 0x7f, 0x7f },
	{ LKS_FP8_E4M3, 0x7f800001, 0x7f, 0x7f },
	{ LKS_FP8_E4M3, 0xffffffff, 0x7f, 0x7f },
	/* 2^-6, the smallest normal: e = 1, m = 0 */
	{ LKS_FP8_E4M3, 0x3c800000, 0x08, 0x08 },
	/* 15 2^-10, halfway between the largest subnormal 7 2^-9 (0x07, odd) and 2^-6
	   (0x08): even 0x08 */
	{ LKS_FP8_E4M3, 0x3c700000, 0x08, 0x08 },
	/* 2^-9, the smallest subnormal: 0x01 */
	{ LKS_FP8_E4M3, 0x3b000000, 0x01, 0x01 },
	/* 2^-10, half the smallest subnormal: halfway between 0 and 0x01, even 0 */
	{ LKS_FP8_E4M3, 0x3a800000, 0x00, 0x00 },
	/* ... and its negative keeps the sign: 0x80 */
	{ LKS_FP8_E4M3, 0xba800000, 0x80, 0x80 },
	/* the float after 2^-10 rounds up to 0x01 */
	{ LKS_FP8_E4M3, 0x3a800001, 0x01, 0x01 },
	/* 3 2^-10 = 1.1b 2^-9, halfway between 0x01 (odd) and 0x02: even 0x02 */
	{ LKS_FP8_E4M3, 0x3b400000, 0x02, 0x02 },
	/* 3 2^-11 = 1.1b 2^-10, three quarters of the smallest subnormal: up to 0x01 */
	{ LKS_FP8_E4M3, 0x3ac00000, 0x01, 0x01 },
	/* -FLT_TRUE_MIN (a float subnormal) rounds to -0: 0x80; and +-0 stay */
	{ LKS_FP8_E4M3, 0x80000001, 0x80, 0x80 },
	{ LKS_FP8_E4M3, 0x00000000, 0x00, 0x00 },
	{ LKS_FP8_E4M3, 0x80000000, 0x80, 0x80 },

	/* 1.0 = 2^0: e = 15, m = 0 */
	{ LKS_FP8_E5M2, 0x3f800000, 0x3c, 0x3c },
	/* 1.125, halfway between 1.00b (0x3c) and 1.01b (0x3d): even 0x3c */
	{ LKS_FP8_E5M2, 0x3f900000, 0x3c, 0x3c },
	/* 1.375, halfway between 1.01b (0x3d, odd) and 1.10b (0x3e): even 0x3e */
	{ LKS_FP8_E5M2, 0x3fb00000, 0x3e, 0x3e },
	/* 57344 = max: 0x7b */
	{ LKS_FP8_E5M2, 0x47600000, 0x7b, 0x7b },
	/* the float below 61440 is below the halfway point: 0x7b */
	{ LKS_FP8_E5M2, 0x476fffff, 0x7b, 0x7b },
	/* 61440 = 57344 + half an ulp (4096), halfway between 1.11b 2^15 (odd) and 2^16,
	   the inf code: ties to even go up, so inf without saturation and max with */
	{ LKS_FP8_E5M2, 0x47700000, 0x7c, 0x7b },
	{ LKS_FP8_E5M2, 0xc7700000, 0xfc, 0xfb },
	/* +-inf: inf without saturation, +-max with */
	{ LKS_FP8_E5M2, 0x7f800000, 0x7c, 0x7b },
	{ LKS_FP8_E5M2, 0xff800000, 0xfc, 0xfb },
	/* NaNs: the canonical 0x7f in both modes, whatever the sign */
	{ LKS_FP8_E5M2, 0x7fc00000, 0x7f, 0x7f },
	{ LKS_FP8_E5M2, 0xffc00000, 0x7f, 0x7f },
	{ LKS_FP8_E5M2, 0x7f800001, 0x7f, 0x7f },
	/* 2^-14, the smallest normal: e = 1, m = 0 */
	{ LKS_FP8_E5M2, 0x38800000, 0x04, 0x04 },
	/* 2^-16, the smallest subnormal: 0x01 */
	{ LKS_FP8_E5M2, 0x37800000, 0x01, 0x01 },
	/* 2^-17, half of it: halfway between 0 and 0x01, even 0; negative keeps the sign */
	{ LKS_FP8_E5M2, 0x37000000, 0x00, 0x00 },
	{ LKS_FP8_E5M2, 0xb7000000, 0x80, 0x80 },
	/* the float after 2^-17: up to 0x01 */
	{ LKS_FP8_E5M2, 0x37000001, 0x01, 0x01 },
	/* 3 2^-17 = 1.1b 2^-16, halfway between 0x01 (odd) and 0x02: even 0x02 */
	{ LKS_FP8_E5M2, 0x37c00000, 0x02, 0x02 },
	/* -FLT_TRUE_MIN: -0 */
	{ LKS_FP8_E5M2, 0x80000001, 0x80, 0x80 },
};

struct bf16_case {
	uint32_t x;
	uint16_t want;
};

/* BF16 is the top 16 bits of a float32; rounding looks at the low 16. */
static const struct bf16_case bf16_cases[] = {
	{ 0x3f800000, 0x3f80 },  /* 1.0: exact */
	{ 0x3f807fff, 0x3f80 },  /* below halfway: down */
	{ 0x3f808000, 0x3f80 },  /* halfway between 0x3f80 (even) and 0x3f81: 0x3f80 */
	{ 0x3f808001, 0x3f81 },  /* above halfway: up */
	{ 0x3f818000, 0x3f82 },  /* halfway between 0x3f81 (odd) and 0x3f82: 0x3f82 */
	{ 0xbf818000, 0xbf82 },  /* the same negative: the sign does not change the tie */
	{ 0x7f7f7fff, 0x7f7f },  /* below halfway under the largest bf16: stays finite */
	{ 0x7f7f8000, 0x7f80 },  /* halfway between 0x7f7f (odd) and 0x7f80 = inf: inf */
	{ 0x7f7fffff, 0x7f80 },  /* FLT_MAX rounds up past the largest bf16: inf */
	{ 0xff7fffff, 0xff80 },  /* -FLT_MAX: -inf */
	{ 0x7f800000, 0x7f80 },  /* +-inf stay */
	{ 0xff800000, 0xff80 },
	{ 0x7fc00000, 0x7fff },  /* NaN: the canonical 0x7fff, whatever the sign or payload */
	{ 0xffc00000, 0x7fff },
	{ 0x7f800001, 0x7fff },  /* a signalling NaN whose payload is all in the low half:
	                            truncation would make it inf; it must stay NaN */
	{ 0xff800001, 0x7fff },
	{ 0x7fffffff, 0x7fff },  /* rounding would carry out of the exponent: NaN */
	{ 0x00008000, 0x0000 },  /* halfway between 0 and the smallest subnormal: 0 */
	{ 0x00018000, 0x0002 },  /* halfway between 0x0001 (odd) and 0x0002: 0x0002 */
	{ 0x80000001, 0x8000 },  /* -FLT_TRUE_MIN: -0 */
	{ 0x007fffff, 0x0080 },  /* the largest float subnormal rounds up to FLT_MIN */
};

Test(convert, fp8_edge_cases)
{
	size_t n = sizeof(fp8_cases) / sizeof(fp8_cases[0]);

	for (size_t i = 0; i < n; i++) {
		const struct fp8_case *k = &fp8_cases[i];
		float x = lks_bits_f32(k->x);

		for (int sat = 0; sat < 2; sat++) {
			unsigned want = sat ? k->sat : k->nosat;
			unsigned got = lks_f32_to_fp8(x, k->fmt, sat);

			cr_expect_eq(got, want, "%s sat=%d: 0x%08x (%a) gives 0x%02x, expected 0x%02x",
				lks_fp8_specs[k->fmt].name, sat, k->x, x, got, want);
			got = (k->fmt == LKS_FP8_E4M3 ? lks_f32_to_e4m3 : lks_f32_to_e5m2)(x, sat);
			cr_expect_eq(got, want, "lks_f32_to_%s sat=%d: 0x%08x gives 0x%02x",
				lks_fp8_specs[k->fmt].name, sat, k->x, got);
		}
	}
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (!use_isa((lks_isa)isa))
			continue;
		/* each case at every position of a vector and of the scalar tail: 67 copies,
		   so that lanes 0..31 of the 32-wide loop and a tail of 3 all see it */
		for (size_t i = 0; i < n; i++) {
			const struct fp8_case *k = &fp8_cases[i];
			float x[67];
			uint8_t y[67];

			for (int j = 0; j < 67; j++)
				x[j] = lks_bits_f32(k->x);
			for (int sat = 0; sat < 2; sat++) {
				unsigned want = sat ? k->sat : k->nosat;
				int bad = 0, first = -1;

				lks_f32_to_fp8_n(x, y, 67, k->fmt, sat);
				for (int j = 0; j < 67; j++) {
					if (y[j] != want && bad++ == 0)
						first = j;
				}
				cr_expect_eq(bad, 0, "%s %s sat=%d: 0x%08x gives 0x%02x at [%d] (%d of "
					"67 lanes), expected 0x%02x", lks_isa_name((lks_isa)isa),
					lks_fp8_specs[k->fmt].name, sat, k->x, first < 0 ? 0 : y[first],
					first, bad, want);
			}
		}
	}
}

Test(convert, bf16_edge_cases)
{
	size_t n = sizeof(bf16_cases) / sizeof(bf16_cases[0]);

	for (size_t i = 0; i < n; i++) {
		uint16_t got = lks_f32_to_bf16(lks_bits_f32(bf16_cases[i].x));

		cr_expect_eq(got, bf16_cases[i].want, "0x%08x gives 0x%04x, expected 0x%04x",
			bf16_cases[i].x, got, bf16_cases[i].want);
	}
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (!use_isa((lks_isa)isa))
			continue;
		for (size_t i = 0; i < n; i++) {
			float x[35];
			uint16_t y[35];
			int bad = 0, first = -1;

			for (int j = 0; j < 35; j++)
				x[j] = lks_bits_f32(bf16_cases[i].x);
			lks_f32_to_bf16_n(x, y, 35);
			for (int j = 0; j < 35; j++) {
				if (y[j] != bf16_cases[i].want && bad++ == 0)
					first = j;
			}
			cr_expect_eq(bad, 0, "%s: 0x%08x gives 0x%04x at [%d] (%d of 35 lanes), "
				"expected 0x%04x", lks_isa_name((lks_isa)isa), bf16_cases[i].x,
				first < 0 ? 0 : y[first], first, bad, bf16_cases[i].want);
		}
	}
}

/*
 * Compares the bulk encoders on the forced path with the scalar ones over x[0..n); adds
 * the number of mismatching elements to *bad, reporting the first few of the test.
 */
static void bulk_vs_scalar(const float *x, size_t n, lks_isa isa, size_t *bad)
{
	static uint8_t y8[CHUNK];
	static uint16_t y16[CHUNK];

	for (int f = 0; f < 2; f++) {
		for (int sat = 0; sat < 2; sat++) {
			lks_f32_to_fp8_n(x, y8, n, (lks_fp8)f, sat);
			for (size_t i = 0; i < n; i++) {
				uint8_t want = lks_f32_to_fp8(x[i], (lks_fp8)f, sat);

				if (y8[i] != want && (*bad)++ < 8)
					cr_log_error("%s %s sat=%d: 0x%08x bulk 0x%02x, scalar 0x%02x",
						lks_isa_name(isa), lks_fp8_specs[f].name, sat,
						lks_f32_bits(x[i]), y8[i], want);
			}
		}
	}
	lks_f32_to_bf16_n(x, y16, n);
	for (size_t i = 0; i < n; i++) {
		uint16_t want = lks_f32_to_bf16(x[i]);

		if (y16[i] != want && (*bad)++ < 8)
			cr_log_error("%s bf16: 0x%08x bulk 0x%04x, scalar 0x%04x", lks_isa_name(isa),
				lks_f32_bits(x[i]), y16[i], want);
	}
}

Test(convert, bulk_encoders_match_scalar)
{
	static float x[CHUNK];

	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		size_t bad = 0, total = 0;
		uint64_t k = 0;

		if (!use_isa((lks_isa)isa))
			continue;
		/* every STRIDE-th float32 pattern, then every pattern with low half 0x8000 (the
		   BF16 ties), in chunks */
		while (k * STRIDE <= UINT32_MAX) {
			size_t n = 0;

			for (; n < CHUNK && k * STRIDE <= UINT32_MAX; n++, k++)
				x[n] = lks_bits_f32((uint32_t)(k * STRIDE));
			bulk_vs_scalar(x, n, (lks_isa)isa, &bad);
			total += n;
		}
		for (uint32_t hi = 0; hi < 65536; hi++)
			x[hi] = lks_bits_f32(hi << 16 | 0x8000);
		bulk_vs_scalar(x, 65536, (lks_isa)isa, &bad);
		total += 65536;
		cr_expect_eq(bad, 0, "%s: %zu of %zu bulk encodings differ from the scalar ones",
			lks_isa_name((lks_isa)isa), bad, total);
	}
}

/*
 * Checks y[0..80) after a bulk call on [off, off + n): the scalar encoding inside, the
 * 0xa5 fill outside. Reports the first wrong element of the first few windows only: one
 * broken lane would otherwise fail every one of the 1136 windows.
 */
static void check_window(const char *what, const unsigned *want, const unsigned *got,
			 int off, int n)
{
	static int reported;

	for (int i = 0; i < 80; i++) {
		if (got[i] != want[i]) {
			if (reported++ >= 4)
				cr_assert_fail("%s, offset %d, n %d: wrong too; stopping", what, off, n);
			cr_expect_eq(got[i], want[i], "%s, offset %d, n %d: [%d] = 0x%x, expected 0x%x",
				what, off, n, i, got[i], want[i]);
			return;
		}
	}
}

/* Lengths 0..70 at offsets 0..3 from an aligned buffer: the vector loops' tails and
   unaligned loads must give what the scalar encoders give, and write nothing past n. */
Test(convert, bulk_lengths_and_offsets)
{
	float x[80];
	uint8_t y8[80];
	uint16_t y16[80];
	unsigned want[80], got[80];
	char what[64];

	for (int i = 0; i < 80; i++)  /* values across both formats' ranges, ties included */
		x[i] = ldexpf(1.0f + (float)i / 16.0f, i / 4 - 12) * (i & 1 ? -1.0f : 1.0f);
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (!use_isa((lks_isa)isa))
			continue;
		for (int off = 0; off < 4; off++) {
			for (int n = 0; n <= 70; n++) {
				for (int f = 0; f < 2; f++) {
					memset(y8, 0xa5, sizeof(y8));
					lks_f32_to_fp8_n(x + off, y8 + off, (size_t)n, (lks_fp8)f, 1);
					for (int i = 0; i < 80; i++) {
						int inside = i >= off && i < off + n;

						want[i] = inside ? lks_f32_to_fp8(x[i], (lks_fp8)f, 1) : 0xa5;
						got[i] = y8[i];
					}
					snprintf(what, sizeof(what), "%s %s", lks_isa_name((lks_isa)isa),
						lks_fp8_specs[f].name);
					check_window(what, want, got, off, n);
				}
				memset(y16, 0xa5, sizeof(y16));
				lks_f32_to_bf16_n(x + off, y16 + off, (size_t)n);
				for (int i = 0; i < 80; i++) {
					int inside = i >= off && i < off + n;

					want[i] = inside ? lks_f32_to_bf16(x[i]) : 0xa5a5;
					got[i] = y16[i];
				}
				snprintf(what, sizeof(what), "%s bf16", lks_isa_name((lks_isa)isa));
				check_window(what, want, got, off, n);
			}
		}
	}
}

Test(convert, bulk_decoders_match_table)
{
	static uint16_t h[65536 + 3];
	static float v[65536 + 3];
	uint8_t c[256 + 3];
	float w[256 + 3];

	for (unsigned i = 0; i < 65536 + 3; i++)
		h[i] = (uint16_t)(i * 40503u);  /* odd multiplier: every code, shuffled */
	for (unsigned i = 0; i < 256 + 3; i++)
		c[i] = (uint8_t)(i * 167u);
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (!use_isa((lks_isa)isa))
			continue;
		/* odd lengths, so that the tails are exercised too */
		unsigned bad = 0, first = 0;

		lks_bf16_to_f32_n(h, v, 65536 + 3);
		for (unsigned i = 0; i < 65536 + 3; i++) {
			if (lks_f32_bits(v[i]) != lks_f32_bits(lks_bf16_to_f32(h[i])) && bad++ == 0)
				first = i;
		}
		cr_expect_eq(bad, 0, "%s: %u bf16 decodes differ, the first 0x%04x to 0x%08x",
			lks_isa_name((lks_isa)isa), bad, h[first], lks_f32_bits(v[first]));
		for (int f = 0; f < 2; f++) {
			const float *t = lks_fp8_table((lks_fp8)f);

			bad = 0;
			lks_fp8_to_f32_n(c, w, 256 + 3, (lks_fp8)f);
			for (unsigned i = 0; i < 256 + 3; i++) {
				if (lks_f32_bits(w[i]) != lks_f32_bits(t[c[i]]) && bad++ == 0)
					first = i;
			}
			cr_expect_eq(bad, 0, "%s %s: %u decodes differ from the table, the first "
				"0x%02x to 0x%08x", lks_isa_name((lks_isa)isa), lks_fp8_specs[f].name,
				bad, c[first], lks_f32_bits(w[first]));
		}
	}
}
