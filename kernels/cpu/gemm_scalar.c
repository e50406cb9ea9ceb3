/*
 * gemm_scalar.c: the portable GEMM kernels (see gemm_kernel.h), the reference path.
 *
 * Plain C; this file is not compiled with -mfma, so fmaf() is libm's, correctly rounded
 * like the hardware FMA of the vector paths, and the result is the same bits. The packer
 * and the epilogue here are also the other paths' fallback for what they do not vectorize.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/gemm_kernel.h"

#define LKS_SCALAR_MR 4
#define LKS_SCALAR_NR 4

/* Widens row r, columns [k0, k0+kc), into panel positions dst[k*step]. */
static void lks_pack_row(lks_dtype elem, const void *data, size_t ld, size_t r, int k0,
                         int kc, int step, float *dst)
{
	size_t off = r * ld + (size_t)k0;

	switch (elem) {
	case LKS_F32: {
		const float *src = (const float *)data + off;
		for (int k = 0; k < kc; k++)
			dst[(size_t)k * step] = src[k];
		break;
	}
	case LKS_BF16: {
		const uint16_t *src = (const uint16_t *)data + off;
		for (int k = 0; k < kc; k++)
			dst[(size_t)k * step] = lks_bf16_to_f32(src[k]);
		break;
	}
	case LKS_E4M3:
	case LKS_E5M2: {
		const uint8_t *src = (const uint8_t *)data + off;
		const float *tab = lks_fp8_table(elem == LKS_E4M3 ? LKS_FP8_E4M3 : LKS_FP8_E5M2);
		for (int k = 0; k < kc; k++)
			dst[(size_t)k * step] = tab[src[k]];
		break;
	}
	}
}

void lks_gemm_pack_generic(lks_dtype elem, const void *data, size_t ld, int r0,
                           int rows, int k0, int kc, int step, float *panel)
{
	for (int s = 0; s * step < rows; s++) {
		float *sliver = panel + (size_t)s * kc * step;  /* (kc, step) */
		int n = rows - s * step < step ? rows - s * step : step;

		for (int r = 0; r < n; r++)
			lks_pack_row(elem, data, ld, (size_t)(r0 + s * step + r), k0, kc, step,
			             sliver + r);
		for (int r = n; r < step; r++)  /* padding: feeds only tile elements never stored */
			for (int k = 0; k < kc; k++)
				sliver[(size_t)k * step + r] = 0.0f;
	}
}

void lks_gemm_epilogue_generic(int rows, int cols, const float *acc, size_t ldacc,
                               int scaled, const float *inva, const float *invb, int bf16,
                               void *out, size_t ldout)
{
	for (int i = 0; i < rows; i++) {
		const float *a = acc + (size_t)i * ldacc;  /* (cols) */

		for (int j = 0; j < cols; j++) {
			float c = scaled ? a[j] * (inva[i] * invb[j]) : a[j];

			if (bf16)
				((uint16_t *)out)[(size_t)i * ldout + j] = lks_f32_to_bf16(c);
			else
				((float *)out)[(size_t)i * ldout + j] = c;
		}
	}
}

static void lks_micro_scalar(int kc, const float *a, const float *b, float *c, size_t ldc,
                             int first)
{
	float acc[LKS_SCALAR_MR][LKS_SCALAR_NR];

	for (int i = 0; i < LKS_SCALAR_MR; i++)
		for (int j = 0; j < LKS_SCALAR_NR; j++)
			acc[i][j] = first ? 0.0f : c[(size_t)i * ldc + j];
	for (int k = 0; k < kc; k++) {
		const float *ak = a + (size_t)k * LKS_SCALAR_MR;  /* (MR) */
		const float *bk = b + (size_t)k * LKS_SCALAR_NR;  /* (NR) */

		for (int i = 0; i < LKS_SCALAR_MR; i++)
			for (int j = 0; j < LKS_SCALAR_NR; j++)
				acc[i][j] = fmaf(ak[i], bk[j], acc[i][j]);
	}
	for (int i = 0; i < LKS_SCALAR_MR; i++)
		for (int j = 0; j < LKS_SCALAR_NR; j++)
			c[(size_t)i * ldc + j] = acc[i][j];
}

const lks_gemm_kernel lks_gemm_kernel_scalar = {
	.name = "scalar",
	.mr = LKS_SCALAR_MR,
	.nr = LKS_SCALAR_NR,
	.mc = 64,
	.kc = 256,
	.pack = lks_gemm_pack_generic,
	.micro = lks_micro_scalar,
	.epilogue = lks_gemm_epilogue_generic,
};
