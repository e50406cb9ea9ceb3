/* test_ops.c: the transposes move every element to its transposed place, on any shape. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/philox.h"

/* shapes around the 16 x 16 and 4 x 4 blocks and the 32 x 32 tiles, and degenerate ones */
static const int dims[] = { 1, 3, 4, 15, 16, 17, 31, 32, 33, 64, 100 };
#define NDIMS (sizeof(dims) / sizeof(dims[0]))

Test(ops, transposes_match_the_definition)
{
	float *x = malloc(sizeof(float) * 100 * 100), *y = malloc(sizeof(float) * 100 * 100);
	uint8_t *q = malloc(100 * 100), *qt = malloc(100 * 100 + 1);
	uint16_t *b = malloc(2 * 100 * 100);

	for (int i = 0; i < 100 * 100; i++) {
		x[i] = lks_philox_normal(5, 0, (uint64_t)i) * 100.0f;
		q[i] = (uint8_t)lks_philox_u32(5, 1, (uint64_t)i);
	}
	x[7] = NAN;  /* a NaN and a value that rounds up to inf in BF16 go through the rounding */
	x[150] = 3.4e38f;
	for (size_t ri = 0; ri < NDIMS; ri++)
		for (size_t ci = 0; ci < NDIMS; ci++) {
			int rows = dims[ri], cols = dims[ci];

			memset(qt, 0xaa, 100 * 100 + 1);
			memset(y, 0xff, sizeof(float) * 100 * 100);
			memset(b, 0xff, 2 * 100 * 100);
			lks_transpose_u8(q, rows, cols, qt);
			lks_transpose_f32(x, rows, cols, y);
			for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {  /* the BF16 bulk rounding */
				if (lks_isa_force((lks_isa)isa) != 0)
					continue;
				lks_transpose_bf16(x, rows, cols, b);
				for (int i = 0; i < rows; i++)
					for (int k = 0; k < cols; k++)
						cr_assert_eq(b[(size_t)k * rows + i], lks_f32_to_bf16(x[(size_t)i * cols + k]),
						             "bf16 %dx%d (%d, %d) %s", rows, cols, i, k,
						             lks_isa_name((lks_isa)isa));
			}
			lks_isa_force(lks_isa_best());
			for (int i = 0; i < rows; i++)
				for (int k = 0; k < cols; k++) {
					cr_assert_eq(qt[(size_t)k * rows + i], q[(size_t)i * cols + k],
					             "u8 %dx%d (%d, %d)", rows, cols, i, k);
					cr_assert(memcmp(&y[(size_t)k * rows + i], &x[(size_t)i * cols + k], 4) == 0,
					          "f32 %dx%d (%d, %d)", rows, cols, i, k);
				}
			/* nothing past the result is written */
			cr_assert_eq(qt[rows * cols], 0xaa, "u8 %dx%d wrote past the end", rows, cols);
		}
	free(x);
	free(y);
	free(q);
	free(qt);
	free(b);
}

/* AdamW is element-wise: every ISA path gives every element the scalar path's bits. */
Test(ops, adamw_same_bits_on_every_path)
{
	enum { N = 1003 };  /* not a multiple of 8: the vector path leaves a tail */
	static float p0[N], g[N], m0[N], v0[N], p[LKS_ISA_COUNT][N], m[LKS_ISA_COUNT][N],
	             v[LKS_ISA_COUNT][N];

	for (int i = 0; i < N; i++) {
		p0[i] = lks_philox_normal(6, 0, (uint64_t)i) * 0.02f;
		g[i] = lks_philox_normal(6, 1, (uint64_t)i) * ldexpf(1.0f, (int)(i % 40) - 30);
		m0[i] = lks_philox_normal(6, 2, (uint64_t)i) * 1e-3f;
		v0[i] = fabsf(lks_philox_normal(6, 3, (uint64_t)i)) * 1e-6f;
	}
	g[5] = 0.0f;
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (lks_isa_force((lks_isa)isa) != 0)
			continue;
		memcpy(p[isa], p0, sizeof(p0));
		memcpy(m[isa], m0, sizeof(m0));
		memcpy(v[isa], v0, sizeof(v0));
		for (int step = 1; step <= 3; step++)  /* a few steps, so m and v feed back */
			lks_adamw(p[isa], g, m[isa], v[isa], N, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f,
			          1.0f - powf(0.9f, (float)step), 1.0f - powf(0.95f, (float)step));
		cr_assert(memcmp(p[isa], p[0], sizeof(p0)) == 0 && memcmp(m[isa], m[0], sizeof(m0)) == 0
		          && memcmp(v[isa], v[0], sizeof(v0)) == 0, "%s differs from scalar",
		          lks_isa_name((lks_isa)isa));
		cr_assert(memcmp(p[isa], p0, sizeof(p0)) != 0);  /* it did update */
	}
	lks_isa_force(lks_isa_best());
}

/* RMSNorm forward and backward: every ISA path the scalar path's bits (the AVX2 build
   turns fmaf into one instruction and vectorizes the gain's gradient). */
Test(ops, rmsnorm_same_bits_on_every_path)
{
	enum { T = 7, H = 77 };
	static float x[T * H], g[H], dy[T * H], y[LKS_ISA_COUNT][T * H], rstd[LKS_ISA_COUNT][T],
	             dx[LKS_ISA_COUNT][T * H], dg[LKS_ISA_COUNT][H];

	for (int i = 0; i < T * H; i++) {
		x[i] = lks_philox_normal(7, 0, (uint64_t)i) * ldexpf(1.0f, i % 9 - 4);
		dy[i] = lks_philox_normal(7, 1, (uint64_t)i) * 1e-3f;
	}
	for (int i = 0; i < H; i++)
		g[i] = 1.0f + 0.1f * lks_philox_normal(7, 2, (uint64_t)i);
	for (int bf16 = 0; bf16 < 2; bf16++)
		for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
			if (lks_isa_force((lks_isa)isa) != 0)
				continue;
			memset(dg[isa], 0, sizeof(dg[isa]));
			lks_rmsnorm_fwd(x, g, T, H, y[isa], rstd[isa], bf16);
			lks_rmsnorm_bwd(dy, x, g, rstd[isa], T, H, dx[isa], dg[isa], bf16);
			cr_assert(memcmp(y[isa], y[0], sizeof(y[0])) == 0
			          && memcmp(rstd[isa], rstd[0], sizeof(rstd[0])) == 0
			          && memcmp(dx[isa], dx[0], sizeof(dx[0])) == 0
			          && memcmp(dg[isa], dg[0], sizeof(dg[0])) == 0,
			          "%s bf16 %d differs from scalar", lks_isa_name((lks_isa)isa), bf16);
		}
	lks_isa_force(lks_isa_best());
}
