/* ops.c: element-wise and row-wise model kernels in fixed order (see ops.h). */
#include "kernels/cpu/ops.h"

#include <math.h>
#include <stdlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "kernels/cpu/convert.h"
#include "kernels/cpu/isa.h"
#include "kernels/mathf.h"

void lks_round_bf16(float *x, size_t n)
{
	uint16_t h[512];

	/* through the bulk conversions, vectorized on the active ISA path (same bits) */
	for (size_t i = 0; i < n; i += 512) {
		size_t k = n - i < 512 ? n - i : 512;

		lks_f32_to_bf16_n(x + i, h, k);
		lks_bf16_to_f32_n(h, x + i, k);
	}
}

#define LKS_RMS_PREFIX lks_scalar
#define LKS_RMS_API static
#include "kernels/cpu/ops_rms.h"

void lks_avx2_rmsnorm_fwd(const float *x, const float *g, int T, int H, float *y, float *rstd,
                          int bf16);
void lks_avx2_rmsnorm_bwd(const float *dy, const float *x, const float *g, const float *rstd,
                          int T, int H, float *dx, float *dg, int bf16);

void lks_rmsnorm_fwd(const float *x, const float *g, int T, int H, float *y, float *rstd,
                     int bf16)
{
	if (lks_isa_active() != LKS_ISA_SCALAR)
		lks_avx2_rmsnorm_fwd(x, g, T, H, y, rstd, bf16);
	else
		lks_scalar_rmsnorm_fwd(x, g, T, H, y, rstd, bf16);
}

void lks_rmsnorm_bwd(const float *dy, const float *x, const float *g, const float *rstd,
                     int T, int H, float *dx, float *dg, int bf16)
{
	if (lks_isa_active() != LKS_ISA_SCALAR)
		lks_avx2_rmsnorm_bwd(dy, x, g, rstd, T, H, dx, dg, bf16);
	else
		lks_scalar_rmsnorm_bwd(dy, x, g, rstd, T, H, dx, dg, bf16);
}

/* The element-wise loops below vectorize; the BF16 rounding then goes in bulk. */
void lks_relu2_fwd(const float *restrict u, size_t n, float *restrict y, int bf16)
{
	for (size_t i = 0; i < n; i++)
		y[i] = lks_relu2(u[i]);
	if (bf16)
		lks_round_bf16(y, n);
}

void lks_relu2_bwd(const float *restrict u, const float *restrict dy, size_t n,
                   float *restrict du, int bf16)
{
	for (size_t i = 0; i < n; i++)
		du[i] = lks_relu2_grad(u[i], dy[i]);
	if (bf16)
		lks_round_bf16(du, n);
}

double lks_cross_entropy(const float *z, const int32_t *target, int T, int V, float grad_scale,
                         float *dz)
{
	double total = 0.0, *e = malloc(sizeof(double) * (size_t)V);

	if (!e)  /* a few KiB; without them there is no loss to report */
		return NAN;
	for (int t = 0; t < T; t++) {
		const float *zr = z + (size_t)t * V;
		float *dr = dz + (size_t)t * V;
		float m = zr[0];
		double sum = 0.0;

		for (int v = 1; v < V; v++)
			m = zr[v] > m ? zr[v] : m;
		for (int v = 0; v < V; v++) {
			e[v] = lks_exp((double)zr[v] - m);
			sum += e[v];
		}
		total += lks_log(sum) + m - zr[target[t]];
		for (int v = 0; v < V; v++)
			dr[v] = (float)((e[v] / sum - (v == target[t])) * grad_scale);
	}
	free(e);
	return total;
}

size_t lks_avx2_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr,
                      float b1, float b2, float eps, float wd, float bc1, float bc2);

void lks_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
               float b2, float eps, float wd, float bc1, float bc2)
{
	size_t i = lks_isa_active() != LKS_ISA_SCALAR
	         ? lks_avx2_adamw(p, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2) : 0;

	for (; i < n; i++)
		lks_adamw_one(&p[i], g[i], &m[i], &v[i], lr, b1, b2, eps, wd, bc1, bc2);
}

/* ---- transposes ---- */

#define LKS_TILE 32  /* tile by tile, so that both sides stay in L1 */

/* The scalar transpose of the block [r0, r1) x [c0, c1). */
#define LKS_TRANSPOSE_EDGE(s, d, rows, cols, r0, r1, c0, c1)                  \
	for (int i_ = (r0); i_ < (r1); i_++)                                      \
		for (int k_ = (c0); k_ < (c1); k_++)                                  \
			(d)[(size_t)k_ * (rows) + i_] = (s)[(size_t)i_ * (cols) + k_]

#ifdef __SSE2__
/* 16 x 16 bytes: four rounds of interleaving row k with row k + 8 (a perfect shuffle of
   the 8 index bits each round; after four, rows and columns have traded places). */
static void lks_transpose_u8_16(const uint8_t *s, size_t lds, uint8_t *d, size_t ldd)
{
	__m128i r[16], n[16];

	for (int i = 0; i < 16; i++)
		r[i] = _mm_loadu_si128((const __m128i *)(s + (size_t)i * lds));
	for (int round = 0; round < 4; round++) {
		for (int k = 0; k < 8; k++) {
			n[2 * k] = _mm_unpacklo_epi8(r[k], r[k + 8]);
			n[2 * k + 1] = _mm_unpackhi_epi8(r[k], r[k + 8]);
		}
		for (int i = 0; i < 16; i++)
			r[i] = n[i];
	}
	for (int i = 0; i < 16; i++)
		_mm_storeu_si128((__m128i *)(d + (size_t)i * ldd), r[i]);
}

/* 4 x 4 floats. */
static void lks_transpose_f32_4(const float *s, size_t lds, float *d, size_t ldd)
{
	__m128 a = _mm_loadu_ps(s), b = _mm_loadu_ps(s + lds);
	__m128 c = _mm_loadu_ps(s + 2 * lds), e = _mm_loadu_ps(s + 3 * lds);

	_MM_TRANSPOSE4_PS(a, b, c, e);
	_mm_storeu_ps(d, a);
	_mm_storeu_ps(d + ldd, b);
	_mm_storeu_ps(d + 2 * ldd, c);
	_mm_storeu_ps(d + 3 * ldd, e);
}
#define LKS_U8_BLOCK 16
#define LKS_F32_BLOCK 4
#else  /* element by element: "blocks" of one */
#define LKS_U8_BLOCK 1
#define LKS_F32_BLOCK 1
static void lks_transpose_u8_16(const uint8_t *s, size_t lds, uint8_t *d, size_t ldd)
{
	*d = *s;
}
static void lks_transpose_f32_4(const float *s, size_t lds, float *d, size_t ldd)
{
	*d = *s;
}
#endif

/* A transpose in B x B blocks of blockfn, tile by tile, the edges element by element. */
#define LKS_TRANSPOSE_BLOCKED(s, rows, cols, d, B, blockfn)                            \
	do {                                                                             \
		int rb_ = (rows) / (B) * (B), cb_ = (cols) / (B) * (B);                      \
                                                                                     \
		for (int i0 = 0; i0 < rb_; i0 += LKS_TILE)                                   \
			for (int k0 = 0; k0 < cb_; k0 += LKS_TILE)                               \
				for (int i = i0; i < i0 + LKS_TILE && i < rb_; i += (B))             \
					for (int k = k0; k < k0 + LKS_TILE && k < cb_; k += (B))         \
						blockfn((s) + (size_t)i * (cols) + k, (size_t)(cols),        \
						        (d) + (size_t)k * (rows) + i, (size_t)(rows));       \
		LKS_TRANSPOSE_EDGE(s, d, rows, cols, 0, rows, cb_, cols);                    \
		LKS_TRANSPOSE_EDGE(s, d, rows, cols, rb_, rows, 0, cb_);                     \
	} while (0)

void lks_transpose_u8(const uint8_t *s, int rows, int cols, uint8_t *d)
{
	LKS_TRANSPOSE_BLOCKED(s, rows, cols, d, LKS_U8_BLOCK, lks_transpose_u8_16);
}

void lks_transpose_f32(const float *s, int rows, int cols, float *d)
{
	LKS_TRANSPOSE_BLOCKED(s, rows, cols, d, LKS_F32_BLOCK, lks_transpose_f32_4);
}

void lks_transpose_bf16(const float *s, int rows, int cols, uint16_t *d)
{
	float tile[LKS_TILE * LKS_TILE];

	/* a tile transposed as floats into L1, then each of its rows rounded in bulk */
	for (int i0 = 0; i0 < rows; i0 += LKS_TILE)
		for (int k0 = 0; k0 < cols; k0 += LKS_TILE) {
			int ni = rows - i0 < LKS_TILE ? rows - i0 : LKS_TILE;
			int nk = cols - k0 < LKS_TILE ? cols - k0 : LKS_TILE;

			for (int i = 0; i < ni; i++)
				for (int k = 0; k < nk; k++)
					tile[k * LKS_TILE + i] = s[(size_t)(i0 + i) * cols + k0 + k];
			for (int k = 0; k < nk; k++)
				lks_f32_to_bf16_n(tile + k * LKS_TILE, d + (size_t)(k0 + k) * rows + i0,
				                  (size_t)ni);
		}
}
