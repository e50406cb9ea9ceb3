/*
 * nv_oracle.h: NVIDIA's host conversions float32 <-> E4M3 / E5M2 / BF16, callable from C.
 *
 * The tests of kernels/cpu/convert.h compare lockstep's encoders and decoders with these,
 * which wrap cuda_fp8.hpp / cuda_bf16.hpp compiled for the host (nv_oracle.cpp). They exist
 * only where the CUDA Toolkit headers are found. Formats are numbered as lks_fp8 numbers
 * them (0 E4M3, 1 E5M2) so that this header need not include convert.h; sat != 0 asks for
 * __NV_SATFINITE, 0 for __NV_NOSAT.
 */
#ifndef LKS_TESTS_NV_ORACLE_H
#define LKS_TESTS_NV_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* __nv_cvt_float_to_fp8(x, sat ? __NV_SATFINITE : __NV_NOSAT, fmt) */
uint8_t lks_nv_f32_to_fp8(float x, int fmt, int sat);
/* float(__nv_fp8_e4m3 / __nv_fp8_e5m2): through __nv_cvt_fp8_to_halfraw, then half -> float */
float lks_nv_fp8_to_f32(uint8_t v, int fmt);
/* __float2bfloat16(x), as raw bits */
uint16_t lks_nv_f32_to_bf16(float x);
/* __bfloat162float() of the raw bits h */
float lks_nv_bf16_to_f32(uint16_t h);

/* The same over arrays, y[i] = f(x[i]) for i < n: one call per chunk, so that the exhaustive
   test spends its time in NVIDIA's code and not in calls across translation units. */
void lks_nv_f32_to_fp8_n(const float *x, uint8_t *y, size_t n, int fmt, int sat);
void lks_nv_f32_to_bf16_n(const float *x, uint16_t *y, size_t n);

#ifdef __cplusplus
}
#endif

#endif
