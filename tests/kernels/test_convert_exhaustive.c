/*
 * test_convert_exhaustive.c: every float32 bit pattern through lockstep's encoders and
 * NVIDIA's, 0 mismatches allowed ('exhaustive' label; ctest -L exhaustive).
 *
 * All 2^32 patterns x {E4M3, E5M2} x {satfinite, no saturation}, and BF16: the bulk
 * encoders on the best ISA path and on the scalar path, each against NVIDIA's host code
 * (nv_oracle.h). The scalar path is the scalar encoder of convert.h on each element, as the
 * library compiles it (convert.c); a second copy of that loop compiled here checked nothing
 * more and took a fifth of the time. The range is cut into SLICES Test()s per
 * format so that Criterion's --jobs spreads them over the cores; each slice goes through
 * the bulk API in chunks of CHUNK floats. A mismatch is reported with its input bits and
 * both codes (the first REPORT of each slice), then counted.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/isa.h"
#include "nv_oracle.h"

#define SLICES 16
#define SLICE_SIZE (((uint64_t)1 << 32) / SLICES)
#define CHUNK (1u << 16)
#define REPORT 8

/* The paths whose bulk encoders are compared: the best this CPU runs, and scalar. */
static int bulk_paths(lks_isa paths[2])
{
	lks_isa best = lks_isa_best();

	paths[0] = LKS_ISA_SCALAR;
	if (best == LKS_ISA_SCALAR)
		return 1;
	paths[1] = best;
	return 2;
}

static void use_isa(lks_isa isa)
{
	cr_assert_eq(lks_isa_force(isa), 0, "cannot force isa path '%s'", lks_isa_name(isa));
	cr_assert_eq(lks_isa_active(), isa);
}

/* Adds to *bad the positions where got and want differ; reports the first few of the test. */
static void tally(size_t *bad, const char *what, uint32_t base, const void *got,
		    const void *want, size_t width, size_t n)
{
	const uint8_t *g8 = got, *w8 = want;
	const uint16_t *g16 = got, *w16 = want;

	if (!memcmp(got, want, n * width))  /* the usual case, at memcmp's speed */
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned g = width == 1 ? g8[i] : g16[i];
		unsigned w = width == 1 ? w8[i] : w16[i];

		if (g != w && (*bad)++ < REPORT)
			cr_log_error("%s: 0x%08x gives 0x%0*x, NVIDIA 0x%0*x", what,
				base + (uint32_t)i, (int)(2 * width), g, (int)(2 * width), w);
	}
}

static void fill(float *x, uint32_t base, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = lks_bits_f32(base + (uint32_t)i);
}

static void check_fp8_slice(lks_fp8 fmt, unsigned slice)
{
	static float x[CHUNK];
	static uint8_t nv[CHUNK], got[CHUNK];
	lks_isa paths[2];
	int npaths = bulk_paths(paths);
	size_t bad = 0;
	char what[80];

	for (uint64_t b = slice * SLICE_SIZE; b < (slice + 1) * SLICE_SIZE; b += CHUNK) {
		uint32_t base = (uint32_t)b;

		fill(x, base, CHUNK);
		for (int sat = 0; sat < 2; sat++) {
			lks_nv_f32_to_fp8_n(x, nv, CHUNK, fmt, sat);
			for (int p = 0; p < npaths; p++) {
				use_isa(paths[p]);
				lks_f32_to_fp8_n(x, got, CHUNK, fmt, sat);
				snprintf(what, sizeof(what), "%s sat=%d bulk encoder, %s path",
					lks_fp8_specs[fmt].name, sat, lks_isa_name(paths[p]));
				tally(&bad, what, base, got, nv, 1, CHUNK);
			}
		}
	}
	cr_expect_eq(bad, 0, "%s, patterns 0x%08x..0x%08x: %zu mismatches with NVIDIA",
		lks_fp8_specs[fmt].name, (uint32_t)(slice * SLICE_SIZE),
		(uint32_t)((slice + 1) * SLICE_SIZE - 1), bad);
}

static void check_bf16_slice(unsigned slice)
{
	static float x[CHUNK];
	static uint16_t nv[CHUNK], got[CHUNK];
	lks_isa paths[2];
	int npaths = bulk_paths(paths);
	size_t bad = 0;
	char what[80];

	for (uint64_t b = slice * SLICE_SIZE; b < (slice + 1) * SLICE_SIZE; b += CHUNK) {
		uint32_t base = (uint32_t)b;

		fill(x, base, CHUNK);
		lks_nv_f32_to_bf16_n(x, nv, CHUNK);
		for (int p = 0; p < npaths; p++) {
			use_isa(paths[p]);
			lks_f32_to_bf16_n(x, got, CHUNK);
			snprintf(what, sizeof(what), "bf16 bulk encoder, %s path",
				lks_isa_name(paths[p]));
			tally(&bad, what, base, got, nv, 2, CHUNK);
		}
	}
	cr_expect_eq(bad, 0, "bf16, patterns 0x%08x..0x%08x: %zu mismatches with NVIDIA",
		(uint32_t)(slice * SLICE_SIZE), (uint32_t)((slice + 1) * SLICE_SIZE - 1), bad);
}

/* The slices must tile 2^32 in whole chunks, or part of the range would go unchecked
   while every slice passed; the list below must name slices 00 to SLICES - 1. */
_Static_assert(SLICES * SLICE_SIZE == (uint64_t)1 << 32, "slices must cover 2^32");
_Static_assert(SLICE_SIZE % CHUNK == 0, "a slice must be whole chunks");
_Static_assert(SLICES == 16, "SLICE_TESTS below lists 16 slices");

/* One Test() per (format, slice), so that --jobs runs them side by side. */
#define SLICE_TESTS(i) \
	Test(convert_exhaustive, e4m3_##i) { check_fp8_slice(LKS_FP8_E4M3, 1##i - 100); } \
	Test(convert_exhaustive, e5m2_##i) { check_fp8_slice(LKS_FP8_E5M2, 1##i - 100); } \
	Test(convert_exhaustive, bf16_##i) { check_bf16_slice(1##i - 100); }

SLICE_TESTS(00)
SLICE_TESTS(01)
SLICE_TESTS(02)
SLICE_TESTS(03)
SLICE_TESTS(04)
SLICE_TESTS(05)
SLICE_TESTS(06)
SLICE_TESTS(07)
SLICE_TESTS(08)
SLICE_TESTS(09)
SLICE_TESTS(10)
SLICE_TESTS(11)
SLICE_TESTS(12)
SLICE_TESTS(13)
SLICE_TESTS(14)
SLICE_TESTS(15)

/* Says which paths the slices compare (on stderr: a Criterion warning would make the run
   exit non-zero). */
Test(convert_exhaustive, isa_paths)
{
	lks_isa paths[2];
	int n = bulk_paths(paths);

	for (int i = 0; i < n; i++)
		fprintf(stderr, "test_convert_exhaustive: bulk encoders on the '%s' path\n",
			lks_isa_name(paths[i]));
	for (int i = 0; i < LKS_ISA_COUNT; i++)
		if (!lks_isa_supported((lks_isa)i))
			fprintf(stderr, "test_convert_exhaustive: isa path '%s' not supported by this "
				"CPU, skipped\n", lks_isa_name((lks_isa)i));
	cr_expect(lks_isa_supported(paths[n - 1]));
}
