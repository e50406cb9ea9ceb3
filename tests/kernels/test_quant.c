/*
 * test_quant.c: quantization follows torchao's semantics exactly (DESIGN.md, Numerics), on
 * every ISA path and thread count, compared bitwise with a reference written here from the
 * definitions (double division for the scale, libm log2/exp2 for the power of two).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant.h"
#include "kernels/philox.h"

static double fmax_clamp(double a)
{
	return a < 1e-12 ? 1e-12 : a;
}

/* torchao: scale = fp8_max / clamp(amax.double(), min=1e-12), as float32;
   pow2: exp2(floor(log2(scale))). */
static float ref_scale(float amax, lks_fp8 fmt, int pow2)
{
	double fmax = fmt == LKS_FP8_E4M3 ? 448.0 : 57344.0;
	float s;

	if (isnan(amax))
		return NAN;
	s = (float)(fmax / fmax_clamp(amax));
	if (pow2)
		s = (float)exp2(floor(log2((double)s)));
	return s;
}

struct ref {
	uint8_t *q;
	float *scale;
	uint64_t underflow, saturated;
};

static float ref_amax(const float *x, int rows, int cols, size_t ld, lks_axis axis, int idx)
{
	float m = 0.0f;

	for (int r = 0; r < rows; r++) {
		for (int c = 0; c < cols; c++) {
			float v;

			if ((axis == LKS_AXIS_ROW && r != idx) || (axis == LKS_AXIS_COL && c != idx))
				continue;
			v = fabsf(x[(size_t)r * ld + c]);
			if (isnan(v))
				return NAN;
			m = v > m ? v : m;
		}
	}
	return m;
}

static void ref_quantize(const lks_quant *q, struct ref *out)
{
	size_t ns = q->axis == LKS_AXIS_ROW ? (size_t)q->rows
	          : q->axis == LKS_AXIS_COL ? (size_t)q->cols : 1;
	float maxv = q->fmt == LKS_FP8_E4M3 ? 448.0f : 57344.0f;

	for (size_t i = 0; i < ns && !q->scale_given; i++)
		out->scale[i] = ref_scale(ref_amax(q->x, q->rows, q->cols, q->ldx, q->axis, (int)i),
		                          q->fmt, q->pow2);
	out->underflow = out->saturated = 0;
	for (int r = 0; r < q->rows; r++) {
		for (int c = 0; c < q->cols; c++) {
			float x = q->x[(size_t)r * q->ldx + c];
			size_t k = q->axis == LKS_AXIS_ROW ? (size_t)r : q->axis == LKS_AXIS_COL ? (size_t)c : 0;
			float y = x * out->scale[k];
			uint8_t code = lks_f32_to_fp8(y, q->fmt, 1);

			out->q[(size_t)r * q->cols + c] = code;
			out->underflow += x != 0.0f && (code & 0x7f) == 0;
			/* saturated: the cast clamped, i.e. without satfinite it would not be finite */
			out->saturated += !isnan(y) && fabsf(y) > maxv
			               && code != lks_f32_to_fp8(y, q->fmt, 0);
		}
	}
}

/* normals at magnitudes 2^-40 .. 2^20, with zeros, -0, infinities, NaN and tiny values */
static void fill(float *x, size_t n, uint64_t seed, int specials)
{
	for (size_t i = 0; i < n; i++) {
		x[i] = lks_philox_normal(seed, 0, i) * ldexpf(1.0f, (int)(lks_philox_u32(seed, 1, i) % 61) - 40);
		if (!specials)
			continue;
		switch (lks_philox_u32(seed, 2, i) % 211) {
		case 0: x[i] = 0.0f; break;
		case 1: x[i] = -0.0f; break;
		case 2: x[i] = INFINITY; break;
		case 3: x[i] = -INFINITY; break;
		case 4: x[i] = NAN; break;
		case 5: x[i] = 1e-42f; break;  /* a float32 subnormal */
		default: break;
		}
	}
}

static void check_against_ref(lks_quant *q, const char *what)
{
	size_t ns = lks_quant_nscales(q);
	uint8_t *rq = malloc((size_t)q->rows * q->cols + 1);
	float *rs = malloc(sizeof(float) * (ns + 1));
	struct ref ref = { rq, rs, 0, 0 };

	if (q->scale_given)
		memcpy(rs, q->scale, sizeof(float) * ns);
	ref_quantize(q, &ref);
	for (size_t i = 0; i < ns; i++)
		cr_assert(memcmp(&rs[i], &q->scale[i], sizeof(float)) == 0 || (isnan(rs[i]) && isnan(q->scale[i])),
		          "%s: scale %zu is %a, want %a", what, i, q->scale[i], rs[i]);
	for (int r = 0; r < q->rows; r++)
		for (int c = 0; c < q->cols; c++)
			cr_assert_eq(q->q[(size_t)r * q->ldq + c], rq[(size_t)r * q->cols + c],
			             "%s: code (%d, %d) is 0x%02x, want 0x%02x (x = %a)", what, r, c,
			             q->q[(size_t)r * q->ldq + c], rq[(size_t)r * q->cols + c],
			             q->x[(size_t)r * q->ldx + c]);
	cr_assert_eq(q->underflow, ref.underflow, "%s: underflow %llu, want %llu", what,
	             (unsigned long long)q->underflow, (unsigned long long)ref.underflow);
	cr_assert_eq(q->saturated, ref.saturated, "%s: saturated %llu, want %llu", what,
	             (unsigned long long)q->saturated, (unsigned long long)ref.saturated);
	free(rq);
	free(rs);
}

Test(quant, scale_follows_torchao)
{
	static const float amaxes[] = { 0.0f, 1e-30f, 1e-12f, 3e-12f, 1.0f, 3.0f, 448.0f,
		0.1f, 12345.678f, 3.4e38f, INFINITY };

	for (size_t i = 0; i < sizeof(amaxes) / sizeof(amaxes[0]); i++) {
		for (int fmt = 0; fmt < 2; fmt++) {
			for (int pow2 = 0; pow2 < 2; pow2++) {
				float got = lks_fp8_scale(amaxes[i], (lks_fp8)fmt, pow2);
				float want = ref_scale(amaxes[i], (lks_fp8)fmt, pow2);

				cr_assert(memcmp(&got, &want, sizeof(got)) == 0,
				          "amax %a fmt %d pow2 %d: %a, want %a", amaxes[i], fmt, pow2, got, want);
			}
		}
	}
	cr_assert(isnan(lks_fp8_scale(NAN, LKS_FP8_E4M3, 1)));
	/* the clamp: amax 0 gives 448 / 1e-12 computed in double, then rounded once */
	cr_assert_eq(lks_fp8_scale(0.0f, LKS_FP8_E4M3, 0), (float)(448.0 / 1e-12));
}

Test(quant, every_path_and_thread_count_matches_reference)
{
	static const int shapes[][2] = { { 1, 1 }, { 1, 37 }, { 7, 31 }, { 33, 64 }, { 17, 257 }, { 64, 1000 } };
	static const int threads[] = { 1, 2, 3 };
	int pools_n = sizeof(threads) / sizeof(threads[0]);
	lks_pool *pools[3];

	for (int t = 0; t < pools_n; t++)
		cr_assert_eq(lks_pool_create(threads[t], &pools[t]), 0);
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (!lks_isa_supported((lks_isa)isa)) {
			printf("quant: skipping the %s path: this CPU cannot run it\n", lks_isa_name((lks_isa)isa));
			continue;
		}
		cr_assert_eq(lks_isa_force((lks_isa)isa), 0);
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			int rows = shapes[s][0], cols = shapes[s][1];
			size_t ldx = (size_t)cols + 3, ldq = (size_t)cols + 5;
			float *x = malloc(sizeof(float) * rows * ldx);
			uint8_t *qb = malloc((size_t)rows * ldq);
			float scale[1000], amax[1000];

			fill(x, (size_t)rows * ldx, 100 + s, s % 2);
			for (int axis = 0; axis < 3; axis++) {
				for (int fmt = 0; fmt < 2; fmt++) {
					for (int t = 0; t < pools_n; t++) {
						lks_quant q = { .x = x, .rows = rows, .cols = cols, .ldx = ldx,
						                .fmt = (lks_fp8)fmt, .axis = (lks_axis)axis,
						                .pow2 = (axis + fmt + t) % 2, .q = qb, .ldq = ldq,
						                .scale = scale, .amax = t == 1 ? amax : NULL };
						char what[128];

						snprintf(what, sizeof(what), "%s %dx%d axis %d fmt %d threads %d",
						         lks_isa_name((lks_isa)isa), rows, cols, axis, fmt, threads[t]);
						cr_assert_eq(lks_quantize(pools[t], &q), 0, "%s", what);
						check_against_ref(&q, what);
					}
				}
			}
			free(x);
			free(qb);
		}
	}
	for (int t = 0; t < pools_n; t++)
		lks_pool_free(pools[t]);
}

Test(quant, given_scales_saturate_and_underflow)
{
	/* delayed scaling uses a scale from history: values now beyond it saturate and values
	   far below it underflow. E4M3 with scale 1: 500 and inf clamp to 448 (0x7e), 464 is a
	   tie that rounds to 448 without clamping, 2^-10 is half the smallest subnormal (ties
	   to even: 0), 2^-9 is the smallest subnormal (0x01). */
	float x[] = { 500.0f, -INFINITY, 464.0f, 0x1p-10f, 0x1p-9f, 0.0f, NAN, -600.0f, 1.0f };
	uint8_t q[9];
	float scale = 1.0f;

	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		lks_quant qt = { .x = x, .rows = 1, .cols = 9, .ldx = 9, .fmt = LKS_FP8_E4M3,
		                 .axis = LKS_AXIS_TENSOR, .scale_given = 1, .q = q, .ldq = 9,
		                 .scale = &scale };

		if (lks_isa_force((lks_isa)isa) != 0)
			continue;
		cr_assert_eq(lks_quantize(NULL, &qt), 0);
		cr_assert_eq(scale, 1.0f, "a given scale is not overwritten");
		cr_assert_eq(q[0], 0x7e);
		cr_assert_eq(q[1], 0xfe);
		cr_assert_eq(q[2], 0x7e);
		cr_assert_eq(q[3], 0x00);
		cr_assert_eq(q[4], 0x01);
		cr_assert_eq(q[6], 0x7f);
		cr_assert_eq(q[7], 0xfe);
		cr_assert_eq(q[8], 0x38);  /* 1.0 = 2^0: exponent 7 (bias 7), mantissa 0 */
		cr_assert_eq(qt.saturated, 3, "500, -inf and -600 clamp; 464 rounds");
		cr_assert_eq(qt.underflow, 1, "only 2^-10 is non-zero and becomes zero");
	}
}

Test(quant, dequantize_inverts_exact_values)
{
	/* x = decode(c) / scale with a power-of-two scale is exactly representable, so the
	   round trip must give x back bit for bit, for every finite code of both formats */
	for (int fmt = 0; fmt < 2; fmt++) {
		const float *t = lks_fp8_table((lks_fp8)fmt);
		float x[256], y[256], scale[2];
		uint8_t q[256];
		int n = 0;

		for (int c = 0; c < 256; c++)
			if (isfinite(t[c]))
				x[n++] = t[c] / 4.0f;  /* amax is max/4, so the pow2 scale is exactly 4 */
		lks_quant qt = { .x = x, .rows = 1, .cols = n, .ldx = (size_t)n, .fmt = (lks_fp8)fmt,
		                 .axis = LKS_AXIS_ROW, .pow2 = 1, .q = q, .ldq = (size_t)n,
		                 .scale = scale };
		cr_assert_eq(lks_quantize(NULL, &qt), 0);
		cr_assert_eq(scale[0], 4.0f);
		lks_dequantize(&qt, y, (size_t)n);
		for (int i = 0; i < n; i++)
			cr_assert(memcmp(&x[i], &y[i], sizeof(float)) == 0, "fmt %d: %a came back as %a",
			          fmt, x[i], y[i]);
	}
}

Test(quant, bad_arguments_fail)
{
	float x[4] = { 0 }, s;
	uint8_t q[4];
	lks_quant qt = { .x = x, .rows = 2, .cols = 2, .ldx = 1, .q = q, .ldq = 2, .scale = &s };

	cr_assert_neq(lks_quantize(NULL, &qt), 0, "ldx below cols");
	qt.ldx = 2;
	qt.scale = NULL;
	cr_assert_neq(lks_quantize(NULL, &qt), 0, "no scale output");
}
