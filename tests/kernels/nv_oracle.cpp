/*
 * nv_oracle.cpp: the oracle of the conversion tests, NVIDIA's host code (see nv_oracle.h).
 *
 * Built by a host C++ compiler, never nvcc: without __CUDA_ARCH__ the headers take their
 * portable C paths (__nv_cvt_double_to_fp8, __internal_float2bfloat16, ...), which are
 * documented to match the device's cvt.rn instructions. Nothing here reimplements a
 * conversion; every result comes from NVIDIA's functions or conversion operators.
 */
#include "nv_oracle.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if defined(__CUDACC__)
#error "nv_oracle.cpp is the host oracle; compile it with the host C++ compiler"
#endif

static __nv_fp8_interpretation_t lks_nv_fmt(int fmt)
{
	return fmt ? __NV_E5M2 : __NV_E4M3;
}

static __nv_saturation_t lks_nv_sat(int sat)
{
	return sat ? __NV_SATFINITE : __NV_NOSAT;
}

extern "C" uint8_t lks_nv_f32_to_fp8(float x, int fmt, int sat)
{
	return (uint8_t)__nv_cvt_float_to_fp8(x, lks_nv_sat(sat), lks_nv_fmt(fmt));
}

extern "C" float lks_nv_fp8_to_f32(uint8_t v, int fmt)
{
	/* The classes' own float operators, as a CUDA program on the host would decode. */
	if (fmt) {
		__nv_fp8_e5m2 f;
		f.__x = (__nv_fp8_storage_t)v;
		return static_cast<float>(f);
	}
	__nv_fp8_e4m3 f;
	f.__x = (__nv_fp8_storage_t)v;
	return static_cast<float>(f);
}

extern "C" uint16_t lks_nv_f32_to_bf16(float x)
{
	__nv_bfloat16_raw r = static_cast<__nv_bfloat16_raw>(__float2bfloat16(x));
	return r.x;
}

extern "C" float lks_nv_bf16_to_f32(uint16_t h)
{
	__nv_bfloat16_raw r;
	r.x = h;
	return __bfloat162float(__nv_bfloat16(r));
}

extern "C" void lks_nv_f32_to_fp8_n(const float *x, uint8_t *y, size_t n, int fmt, int sat)
{
	__nv_saturation_t s = lks_nv_sat(sat);
	__nv_fp8_interpretation_t f = lks_nv_fmt(fmt);

	for (size_t i = 0; i < n; i++)
		y[i] = (uint8_t)__nv_cvt_float_to_fp8(x[i], s, f);
}

extern "C" void lks_nv_f32_to_bf16_n(const float *x, uint16_t *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = static_cast<__nv_bfloat16_raw>(__float2bfloat16(x[i])).x;
}
