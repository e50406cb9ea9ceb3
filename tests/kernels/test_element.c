/*
 * test_element.c: the element functions shared with CUDA (kernels/element/) give the bits of
 * the CPU's entry points on every ISA path, over sweeps that include NaN, infinities, signed
 * zeros and subnormals. The scalar path calls them, so the vector paths (AVX2 build, hardware
 * FMA, bulk BF16 rounding) are what can differ; test_ops, test_convert and test_quant
 * compare those paths with the scalar one for the casts, the scale, RMSNorm and AdamW, and
 * this file compares them with the element functions called one at a time, as a CUDA
 * thread will call them. Squared ReLU had no test before: it is checked here against its
 * definition too.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/element/cast.h"
#include "kernels/element/ops.h"
#include "kernels/philox.h"

enum { N = 4099 };  /* not a multiple of any vector width: the paths leave a tail */

/* Values of every kind: random bit patterns (NaNs with payloads, infinities, subnormals),
   normals over a wide range of exponents, and the edge cases by name. */
static void sweep(float *x, int n, uint32_t stream)
{
	static const float edges[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f,
	                               -1e-45f, 1e-40f, -1e-40f, 3.4e38f, -3.4e38f, 1.0f, -1.0f };
	int ne = (int)(sizeof(edges) / sizeof(edges[0]));

	for (int i = 0; i < n; i++) {
		if (i < ne)
			x[i] = edges[i];
		else if (i % 3 == 0)
			x[i] = lks_bits_f32(lks_philox_u32(11, stream, (uint64_t)i));
		else
			x[i] = lks_philox_normal(11, stream, (uint64_t)i) * ldexpf(1.0f, i % 80 - 40);
	}
}

static int same_bits(const float *a, const float *b, int n, int *first)
{
	for (int i = 0; i < n; i++)
		if (lks_f32_bits(a[i]) != lks_f32_bits(b[i])) {
			*first = i;
			return 0;
		}
	return 1;
}

/* Squared ReLU of one element is max(u, 0)^2 with NaN let through and -0 giving +0, and its
   gradient 2 max(u, 0) dy. */
Test(element, relu2_is_its_definition)
{
	static float u[N], dy[N];

	sweep(u, N, 0);
	sweep(dy, N, 1);
	for (int i = 0; i < N; i++) {
		float r = u[i] > 0.0f ? u[i] : 0.0f;  /* +0 for -0 and every negative */

		if (isnan(u[i])) {
			cr_assert(isnan(lks_relu2(u[i])) && isnan(lks_relu2_grad(u[i], dy[i])),
			          "NaN %a is hidden", u[i]);
			continue;
		}
		cr_assert_eq(lks_f32_bits(lks_relu2(u[i])), lks_f32_bits(r * r), "relu2(%a) = %a", u[i],
		             lks_relu2(u[i]));
		cr_assert_eq(lks_f32_bits(lks_relu2_grad(u[i], dy[i])), lks_f32_bits(2.0f * r * dy[i]),
		             "relu2'(%a) dy %a = %a", u[i], dy[i], lks_relu2_grad(u[i], dy[i]));
	}
	cr_assert_eq(lks_f32_bits(lks_relu2(-0.0f)), 0u, "-0 gives +0");
}

/* The bulk squared ReLU (vectorized loop, bulk BF16 rounding on the active path) is the
   element function, element by element. */
Test(element, relu2_bulk_is_the_element_on_every_path)
{
	static float u[N], dy[N], y[N], du[N], want_y[N], want_du[N];
	int first = -1;

	sweep(u, N, 2);
	sweep(dy, N, 3);
	for (int bf16 = 0; bf16 < 2; bf16++) {
		for (int i = 0; i < N; i++) {
			want_y[i] = lks_bf16_if(lks_relu2(u[i]), bf16);
			want_du[i] = lks_bf16_if(lks_relu2_grad(u[i], dy[i]), bf16);
		}
		for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
			if (lks_isa_force((lks_isa)isa) != 0)
				continue;
			lks_relu2_fwd(u, N, y, bf16);
			lks_relu2_bwd(u, dy, N, du, bf16);
			cr_assert(same_bits(y, want_y, N, &first), "%s bf16 %d: y[%d] of %a is %a, want %a",
			          lks_isa_name((lks_isa)isa), bf16, first, u[first], y[first], want_y[first]);
			cr_assert(same_bits(du, want_du, N, &first), "%s bf16 %d: du[%d] is %a, want %a",
			          lks_isa_name((lks_isa)isa), bf16, first, du[first], want_du[first]);
		}
	}
	lks_isa_force(lks_isa_best());
}

/* RMSNorm forward and backward: the CPU's T rows (the AVX2 build turns fmaf into one
   instruction) are the element row functions, row by row, and the gain's gradient their
   per-column steps in row order. */
Test(element, rmsnorm_rows_are_the_cpu_on_every_path)
{
	enum { T = 9, H = 131 };
	static float x[T * H], g[H], dy[T * H], y[T * H], rstd[T], dx[T * H], dg[H];
	static float wy[T * H], wrstd[T], wdx[T * H], wdg[H];
	int first = -1;

	for (int i = 0; i < T * H; i++) {
		x[i] = lks_philox_normal(12, 0, (uint64_t)i) * ldexpf(1.0f, i % 13 - 6);
		dy[i] = lks_philox_normal(12, 1, (uint64_t)i) * 1e-3f;
	}
	for (int i = 0; i < H; i++)
		g[i] = 1.0f + 0.1f * lks_philox_normal(12, 2, (uint64_t)i);
	x[3 * H + 5] = 0.0f;
	x[4 * H + 7] = 1e-40f;  /* a subnormal in a row */
	for (int bf16 = 0; bf16 < 2; bf16++) {
		memset(wdg, 0, sizeof(wdg));
		for (int t = 0; t < T; t++) {
			wrstd[t] = lks_rmsnorm_row_fwd(x + t * H, g, H, wy + t * H, bf16);
			lks_rmsnorm_row_bwd(dy + t * H, x + t * H, g, wrstd[t], H, wdx + t * H, bf16);
		}
		for (int t = 0; t < T; t++)
			for (int i = 0; i < H; i++)
				wdg[i] = lks_rmsnorm_dg_step(wdg[i], dy[t * H + i], x[t * H + i], wrstd[t]);
		for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
			const char *name = lks_isa_name((lks_isa)isa);

			if (lks_isa_force((lks_isa)isa) != 0)
				continue;
			memset(dg, 0, sizeof(dg));
			lks_rmsnorm_fwd(x, g, T, H, y, rstd, bf16);
			lks_rmsnorm_bwd(dy, x, g, rstd, T, H, dx, dg, bf16);
			cr_assert(same_bits(rstd, wrstd, T, &first), "%s bf16 %d: rstd[%d]", name, bf16,
			          first);
			cr_assert(same_bits(y, wy, T * H, &first), "%s bf16 %d: y[%d]", name, bf16, first);
			cr_assert(same_bits(dx, wdx, T * H, &first), "%s bf16 %d: dx[%d]", name, bf16, first);
			cr_assert(same_bits(dg, wdg, H, &first), "%s bf16 %d: dg[%d]", name, bf16, first);
		}
	}
	lks_isa_force(lks_isa_best());
}

/* AdamW over a few steps (m and v feed back): the CPU's update on every path (eight lanes
   on AVX2) is the element update, element by element. */
Test(element, adamw_one_is_the_cpu_update_on_every_path)
{
	static float g[N], p0[N], m0[N], v0[N], p[N], m[N], v[N], wp[N], wm[N], wv[N];
	int first = -1;

	sweep(g, N, 4);
	for (int i = 0; i < N; i++) {
		p0[i] = lks_philox_normal(13, 0, (uint64_t)i) * 0.02f;
		m0[i] = lks_philox_normal(13, 1, (uint64_t)i) * 1e-3f;
		v0[i] = fabsf(lks_philox_normal(13, 2, (uint64_t)i)) * 1e-6f;
	}
	memcpy(wp, p0, sizeof(p0));
	memcpy(wm, m0, sizeof(m0));
	memcpy(wv, v0, sizeof(v0));
	for (int step = 1; step <= 3; step++)
		for (int i = 0; i < N; i++)
			lks_adamw_one(&wp[i], g[i], &wm[i], &wv[i], 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f,
			              1.0f - powf(0.9f, (float)step), 1.0f - powf(0.95f, (float)step));
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		const char *name = lks_isa_name((lks_isa)isa);

		if (lks_isa_force((lks_isa)isa) != 0)
			continue;
		memcpy(p, p0, sizeof(p0));
		memcpy(m, m0, sizeof(m0));
		memcpy(v, v0, sizeof(v0));
		for (int step = 1; step <= 3; step++)
			lks_adamw(p, g, m, v, N, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f,
			          1.0f - powf(0.9f, (float)step), 1.0f - powf(0.95f, (float)step));
		cr_assert(same_bits(p, wp, N, &first), "%s: p[%d] (g %a)", name, first, g[first]);
		cr_assert(same_bits(m, wm, N, &first), "%s: m[%d] (g %a)", name, first, g[first]);
		cr_assert(same_bits(v, wv, N, &first), "%s: v[%d] (g %a)", name, first, g[first]);
	}
	lks_isa_force(lks_isa_best());
}

/* The device's view of a format (lks_fp8_spec_of, no host table) is the host table's row,
   and the element decoder gives the CPU's decode table, code by code, NaNs included. */
Test(element, fp8_spec_and_decode_are_the_cpu_tables)
{
	for (int f = 0; f < 2; f++) {
		lks_fp8_spec s = lks_fp8_spec_of((lks_fp8)f);
		const lks_fp8_spec *t = &lks_fp8_specs[f];
		const float *table = lks_fp8_table((lks_fp8)f);

		cr_assert_str_eq(s.name, t->name);
		cr_assert(s.max == t->max && s.overflow == t->overflow && s.minnorm == t->minnorm
		          && s.shift == t->shift && s.rebias == t->rebias && s.submagic == t->submagic
		          && s.maxcode == t->maxcode && s.ovfcode == t->ovfcode, "%s: rows differ",
		          t->name);
		for (unsigned c = 0; c < 256; c++)
			cr_assert_eq(lks_f32_bits(lks_fp8_decode((uint8_t)c, (lks_fp8)f)),
			             lks_f32_bits(table[c]), "%s code 0x%02x", t->name, c);
	}
}
