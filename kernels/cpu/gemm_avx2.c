/*
 * gemm_avx2.c: the AVX2 + FMA GEMM kernels (see gemm_kernel.h); compiled with -mavx2 -mfma
 * -mf16c, reached only when lks_isa_supported(LKS_ISA_AVX2).
 *
 * The microkernel is a 6 x 16 outer product: twelve ymm accumulators (6 rows x 2 vectors
 * of 8 columns), and per k two loads of B, six broadcasts of A and twelve
 * _mm256_fmadd_ps. Each lane is one element's chain (gemm_kernel.h), k ascending, one
 * fused multiply-add per k; nothing is summed across lanes, so it agrees with the scalar
 * path bit for bit. Zen 3 and Haswell-class cores retire two FMAs per cycle with a latency
 * of 4 or 5, so twelve independent chains keep both pipes busy. Its loop is inline
 * assembly: with intrinsics the compiler spilled accumulators.
 *
 * The packer widens eight rows by eight k at a time (FP8 through a gather from the
 * library's decode table) and transposes them into the sliver; the AVX-512 path uses it
 * too, as packing is a few percent of the time and this code is tested on more machines.
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/gemm_kernel.h"

#define LKS_AVX2_MR 6
#define LKS_AVX2_NR 16

/* One k step of the outer product, k steps past the a and b registers (a: 24 bytes per k,
   b: 64): the tile's row r (ymm4+2r, ymm5+2r) += broadcast a[r] * (ymm0 | ymm1).
   vfmadd231ps x, y, acc is acc = y * x + acc with one rounding, as fmaf. */
#define LKS_AVX2_STEP(k)                                                             \
	"vmovaps " #k "*64(%[b]), %%ymm0\n\t"                                         \
	"vmovaps " #k "*64+32(%[b]), %%ymm1\n\t"                                      \
	"vbroadcastss " #k "*24+0(%[a]), %%ymm2\n\t"                                  \
	"vbroadcastss " #k "*24+4(%[a]), %%ymm3\n\t"                                  \
	"vfmadd231ps %%ymm0, %%ymm2, %%ymm4\n\t"                                      \
	"vfmadd231ps %%ymm1, %%ymm2, %%ymm5\n\t"                                      \
	"vbroadcastss " #k "*24+8(%[a]), %%ymm2\n\t"                                  \
	"vfmadd231ps %%ymm0, %%ymm3, %%ymm6\n\t"                                      \
	"vfmadd231ps %%ymm1, %%ymm3, %%ymm7\n\t"                                      \
	"vbroadcastss " #k "*24+12(%[a]), %%ymm3\n\t"                                 \
	"vfmadd231ps %%ymm0, %%ymm2, %%ymm8\n\t"                                      \
	"vfmadd231ps %%ymm1, %%ymm2, %%ymm9\n\t"                                      \
	"vbroadcastss " #k "*24+16(%[a]), %%ymm2\n\t"                                 \
	"vfmadd231ps %%ymm0, %%ymm3, %%ymm10\n\t"                                     \
	"vfmadd231ps %%ymm1, %%ymm3, %%ymm11\n\t"                                     \
	"vbroadcastss " #k "*24+20(%[a]), %%ymm3\n\t"                                 \
	"vfmadd231ps %%ymm0, %%ymm2, %%ymm12\n\t"                                     \
	"vfmadd231ps %%ymm1, %%ymm2, %%ymm13\n\t"                                     \
	"vfmadd231ps %%ymm0, %%ymm3, %%ymm14\n\t"                                     \
	"vfmadd231ps %%ymm1, %%ymm3, %%ymm15\n\t"

/* The rows of the tile: row r at (c) + r*ldc for r < 3, (c3) + (r-3)*ldc after. */
#define LKS_AVX2_ROWS_LOAD(op)                                                            \
	op " (%[c]), %%ymm4\n\t"          op " 32(%[c]), %%ymm5\n\t"                  \
	op " (%[c],%[ldc]), %%ymm6\n\t"   op " 32(%[c],%[ldc]), %%ymm7\n\t"           \
	op " (%[c],%[ldc],2), %%ymm8\n\t" op " 32(%[c],%[ldc],2), %%ymm9\n\t"         \
	op " (%[c3]), %%ymm10\n\t"        op " 32(%[c3]), %%ymm11\n\t"                \
	op " (%[c3],%[ldc]), %%ymm12\n\t" op " 32(%[c3],%[ldc]), %%ymm13\n\t"         \
	op " (%[c3],%[ldc],2), %%ymm14\n\t" op " 32(%[c3],%[ldc],2), %%ymm15\n\t"
#define LKS_AVX2_ROWS_STORE                                                          \
	"vmovups %%ymm4, (%[c])\n\t"          "vmovups %%ymm5, 32(%[c])\n\t"          \
	"vmovups %%ymm6, (%[c],%[ldc])\n\t"   "vmovups %%ymm7, 32(%[c],%[ldc])\n\t"   \
	"vmovups %%ymm8, (%[c],%[ldc],2)\n\t" "vmovups %%ymm9, 32(%[c],%[ldc],2)\n\t" \
	"vmovups %%ymm10, (%[c3])\n\t"        "vmovups %%ymm11, 32(%[c3])\n\t"        \
	"vmovups %%ymm12, (%[c3],%[ldc])\n\t" "vmovups %%ymm13, 32(%[c3],%[ldc])\n\t" \
	"vmovups %%ymm14, (%[c3],%[ldc],2)\n\t" "vmovups %%ymm15, 32(%[c3],%[ldc],2)\n\t"

/* a (kc, 6), b (kc, 16) 32-byte aligned packed slivers; c (6, 16) at c[i*ldc + j].
   Written in assembly because all sixteen ymm registers are needed (twelve accumulators,
   two B vectors, two broadcasts) and the compiler, given intrinsics, spills and copies. */
static void lks_micro_avx2(int kc, const float *a, const float *b, float *c, size_t ldc,
                           int first)
{
	size_t groups = (size_t)kc / 4, rest = (size_t)kc % 4;
	size_t ldb = ldc * sizeof(float);  /* bytes */
	float *c3 = c + 3 * ldc;

	/* the next tile down is usually the next call: start fetching its rows of C, which
	   come from L3 once per K block */
	for (int i = 6; i < 12; i++) {
		_mm_prefetch((const char *)(c + (size_t)i * ldc), _MM_HINT_T0);
		_mm_prefetch((const char *)(c + (size_t)i * ldc + 15), _MM_HINT_T0);
	}
	__asm__ volatile(
		/* acc = +0.0f on every path (fma(-x, y, +0) of an exact -0 product is +0), or
		   the chain so far */
		"testl %[first], %[first]\n\t"
		"jz 1f\n\t"
		"vxorps %%ymm4, %%ymm4, %%ymm4\n\t"   "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"
		"vxorps %%ymm6, %%ymm6, %%ymm6\n\t"   "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"
		"vxorps %%ymm8, %%ymm8, %%ymm8\n\t"   "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"
		"vxorps %%ymm10, %%ymm10, %%ymm10\n\t" "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"
		"vxorps %%ymm12, %%ymm12, %%ymm12\n\t" "vxorps %%ymm13, %%ymm13, %%ymm13\n\t"
		"vxorps %%ymm14, %%ymm14, %%ymm14\n\t" "vxorps %%ymm15, %%ymm15, %%ymm15\n\t"
		"jmp 2f\n\t"
		"1:\n\t"
		LKS_AVX2_ROWS_LOAD("vmovups")
		"2:\n\t"
		/* k in groups of four, ascending */
		"testq %[groups], %[groups]\n\t"
		"jz 4f\n\t"
		"3:\n\t"
		"prefetcht0 384(%[a])\n\t"
		LKS_AVX2_STEP(0)
		LKS_AVX2_STEP(1)
		LKS_AVX2_STEP(2)
		LKS_AVX2_STEP(3)
		"addq $96, %[a]\n\t"
		"addq $256, %[b]\n\t"
		"decq %[groups]\n\t"
		"jnz 3b\n\t"
		"4:\n\t"
		/* then the last kc % 4 steps, still ascending */
		"testq %[rest], %[rest]\n\t"
		"jz 6f\n\t"
		"5:\n\t"
		LKS_AVX2_STEP(0)
		"addq $24, %[a]\n\t"
		"addq $64, %[b]\n\t"
		"decq %[rest]\n\t"
		"jnz 5b\n\t"
		"6:\n\t"
		LKS_AVX2_ROWS_STORE
		"vzeroupper\n\t"
		: [a] "+r"(a), [b] "+r"(b), [groups] "+r"(groups), [rest] "+r"(rest)
		: [c] "r"(c), [c3] "r"(c3), [ldc] "r"(ldb), [first] "r"(first)
		: "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

/* Eight consecutive elements of an operand row widened to float32; a NULL row is a
   padding row of zeros. FP8 goes through the library's decode table, so the vector path
   widens exactly as the scalar one. */
static inline __m256 lks_avx2_load8(lks_dtype elem, const void *row, int k,
                                    const float *tab)
{
	if (!row)
		return _mm256_setzero_ps();
	switch (elem) {
	case LKS_F32:
		return _mm256_loadu_ps((const float *)row + k);
	case LKS_BF16: {
		__m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + k));
		return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
	}
	default: {
		__m128i q = _mm_loadl_epi64((const __m128i *)((const uint8_t *)row + k));
		return _mm256_i32gather_ps(tab, _mm256_cvtepu8_epi32(q), 4);
	}
	}
}

static inline float lks_avx2_load1(lks_dtype elem, const void *row, int k,
                                   const float *tab)
{
	if (!row)
		return 0.0f;
	switch (elem) {
	case LKS_F32: return ((const float *)row)[k];
	case LKS_BF16: return lks_bf16_to_f32(((const uint16_t *)row)[k]);
	default: return tab[((const uint8_t *)row)[k]];
	}
}

/* v[r] = row r of an 8 x 8 block becomes v[t] = column t. */
static inline void lks_avx2_transpose8(__m256 v[8])
{
	__m256 t[8], u[8];

	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
		t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
	}
	for (int i = 0; i < 8; i += 4) {
		u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
		u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
		u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
		u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
	}
	for (int i = 0; i < 4; i++) {
		v[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
		v[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
	}
}

/* The packer of gemm_kernel.h for slivers of 6 rows or of a multiple of 8 (the AVX2 and
   AVX-512 tiles): eight rows by eight k at a time, widened, transposed and stored as eight
   k-rows of the sliver. It only moves exact values, so any packer gives the same panel. */
void lks_gemm_pack_avx2(lks_dtype elem, const void *data, size_t ld, int r0, int rows,
                          int k0, int kc, int step, float *panel)
{
	size_t esz = elem == LKS_F32 ? 4 : elem == LKS_BF16 ? 2 : 1;
	const float *tab = NULL;
	__m256i mask6 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);

	if (step != 6 && step % 8 != 0) {
		lks_gemm_pack_generic(elem, data, ld, r0, rows, k0, kc, step, panel);
		return;
	}
	if (elem == LKS_E4M3 || elem == LKS_E5M2)
		tab = lks_fp8_table(elem == LKS_E4M3 ? LKS_FP8_E4M3 : LKS_FP8_E5M2);
	for (int s = 0; s * step < rows; s++) {
		float *sliver = panel + (size_t)s * kc * step;  /* (kc, step) */

		for (int h = 0; h < step; h += 8) {  /* eight sliver columns at a time */
			const void *p[8];  /* the operand rows at k0, NULL past the valid ones */
			int k = 0;

			for (int r = 0; r < 8; r++) {
				int row = s * step + h + r;

				p[r] = h + r < step && row < rows
				       ? (const char *)data + ((size_t)(r0 + row) * ld + (size_t)k0) * esz
				       : NULL;
			}
			for (; k + 8 <= kc; k += 8) {
				__m256 v[8];

				for (int r = 0; r < 8; r++)
					v[r] = lks_avx2_load8(elem, p[r], k, tab);
				lks_avx2_transpose8(v);
				for (int t = 0; t < 8; t++) {
					float *dst = sliver + (size_t)(k + t) * step + h;

					if (step % 8 == 0)
						_mm256_storeu_ps(dst, v[t]);
					else
						_mm256_maskstore_ps(dst, mask6, v[t]);
				}
			}
			for (; k < kc; k++)
				for (int r = 0; r < 8 && h + r < step; r++)
					sliver[(size_t)k * step + h + r] = lks_avx2_load1(elem, p[r], k, tab);
		}
	}
}

/* lks_f32_to_bf16 of convert.h on 8 lanes: the same integer steps, NaN to 0x7fff. */
static __m128i lks_avx2_bf16x8(__m256 x)
{
	__m256i u = _mm256_castps_si256(x);
	__m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
	__m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
	__m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
	__m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));

	r = _mm256_srli_epi32(r, 16);
	r = _mm256_blendv_epi8(r, _mm256_set1_epi32(LKS_BF16_NAN), nan);
	/* every lane is <= 0xffff, so the saturating pack is exact; it packs within 128-bit
	   halves, so gather quadwords 0 and 2 */
	r = _mm256_packus_epi32(r, r);
	r = _mm256_permute4x64_epi64(r, 0x08);
	return _mm256_castsi256_si128(r);
}

static void lks_epilogue_avx2(int rows, int cols, const float *acc, size_t ldacc, int scaled,
                              const float *inva, const float *invb, int bf16, void *out,
                              size_t ldout)
{
	int j8 = cols / 8 * 8;

	for (int i = 0; i < rows; i++) {
		const float *a = acc + (size_t)i * ldacc;  /* (cols) */
		__m256 ia = _mm256_set1_ps(inva[i]);

		for (int j = 0; j < j8; j += 8) {
			__m256 c = _mm256_loadu_ps(a + j);

			/* the same two roundings as the scalar path: s = inva*invb, then acc*s */
			if (scaled)
				c = _mm256_mul_ps(c, _mm256_mul_ps(ia, _mm256_loadu_ps(invb + j)));
			if (bf16)
				_mm_storeu_si128((__m128i *)((uint16_t *)out + (size_t)i * ldout + j),
				                 lks_avx2_bf16x8(c));
			else
				_mm256_storeu_ps((float *)out + (size_t)i * ldout + j, c);
		}
		if (j8 < cols)
			lks_gemm_epilogue_generic(1, cols - j8, a + j8, ldacc, scaled, inva + i,
			                          invb + j8, bf16,
			                          bf16 ? (void *)((uint16_t *)out + (size_t)i * ldout + j8)
			                               : (void *)((float *)out + (size_t)i * ldout + j8),
			                          ldout);
	}
}

const lks_gemm_kernel lks_gemm_kernel_avx2 = {
	.name = "avx2",
	.mr = LKS_AVX2_MR,
	.nr = LKS_AVX2_NR,
	.mc = 144,
	.kc = 384,
	.pack = lks_gemm_pack_avx2,
	.micro = lks_micro_avx2,
	.epilogue = lks_epilogue_avx2,
};
