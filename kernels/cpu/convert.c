/*
 * convert.c: FP8 decode tables and the bulk conversions' dispatch (see convert.h).
 *
 * The decode tables are filled by the element decoder (kernels/element/cast.h: the format
 * definitions through ldexpf, exact for every FP8 value); the vector bulk code lives in
 * convert_avx2.c (AVX-512 machines run it too: the conversions are memory-bound, a wider
 * path would not pay).
 */
#include "kernels/cpu/convert.h"

#include <pthread.h>

#include "kernels/cpu/isa.h"

void lks_avx2_f32_to_bf16_n(const float *x, uint16_t *y, size_t n);
void lks_avx2_bf16_to_f32_n(const uint16_t *x, float *y, size_t n);
void lks_avx2_f32_to_fp8_n(const float *x, uint8_t *y, size_t n, lks_fp8 fmt, int sat);

static float lks_e4m3_values[256];
static float lks_e5m2_values[256];
static pthread_once_t lks_tables_once = PTHREAD_ONCE_INIT;

static void lks_tables_init(void)
{
	for (unsigned c = 0; c < 256; c++) {
		lks_e4m3_values[c] = lks_fp8_decode((uint8_t)c, LKS_FP8_E4M3);
		lks_e5m2_values[c] = lks_fp8_decode((uint8_t)c, LKS_FP8_E5M2);
	}
}

const float *lks_fp8_table(lks_fp8 fmt)
{
	pthread_once(&lks_tables_once, lks_tables_init);
	return fmt == LKS_FP8_E4M3 ? lks_e4m3_values : lks_e5m2_values;
}

void lks_f32_to_bf16_n(const float *x, uint16_t *y, size_t n)
{
	if (lks_isa_active() != LKS_ISA_SCALAR) {
		lks_avx2_f32_to_bf16_n(x, y, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		y[i] = lks_f32_to_bf16(x[i]);
}

void lks_bf16_to_f32_n(const uint16_t *x, float *y, size_t n)
{
	if (lks_isa_active() != LKS_ISA_SCALAR) {
		lks_avx2_bf16_to_f32_n(x, y, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		y[i] = lks_bf16_to_f32(x[i]);
}

void lks_f32_to_fp8_n(const float *x, uint8_t *y, size_t n, lks_fp8 fmt, int sat)
{
	if (lks_isa_active() != LKS_ISA_SCALAR) {
		lks_avx2_f32_to_fp8_n(x, y, n, fmt, sat);
		return;
	}
	for (size_t i = 0; i < n; i++)
		y[i] = lks_f32_to_fp8(x[i], fmt, sat);
}

void lks_fp8_to_f32_n(const uint8_t *x, float *y, size_t n, lks_fp8 fmt)
{
	const float *t = lks_fp8_table(fmt);

	/* a table lookup is as fast as a vector decode would be for a byte stream */
	for (size_t i = 0; i < n; i++)
		y[i] = t[x[i]];
}
