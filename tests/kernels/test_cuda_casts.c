/*
 * test_cuda_casts.c: the GPU's casts equal the CPU's over all 2^32 float32 patterns: E4M3
 * and E5M2, saturating and not, and BF16; and every code decodes to the same float32 bits
 * (issue 14, Must show). The CPU's bulk casts are the reference: test_convert_exhaustive
 * holds them against NVIDIA's own host code over the same 2^32 inputs. Built only with the
 * CUDA Toolkit; skips (a line on stderr) when no GPU is usable. On a device it takes the
 * CPU about a minute: label 'gpu'.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/convert.h"
#include "kernels/cuda/cast_all.h"
#include "kernels/cuda/cuda_info.h"

#define CHUNK ((size_t)1 << 24)

static void need_device(void)
{
	lks_cuda_info info;

	lks_cuda_info_get(&info);
	if (info.device_count == 0) {
		fprintf(stderr, "test_cuda_casts: skipped, no usable CUDA device: %s\n",
		        info.device_error);
		cr_skip_test("no usable CUDA device: %s", info.device_error);
	}
}

/* The first index where n bytes of a and b differ, or n. */
static size_t first_diff(const void *a, const void *b, size_t n, size_t width)
{
	const unsigned char *p = a, *q = b;

	if (memcmp(a, b, n * width) == 0)
		return n;
	for (size_t i = 0; i < n; i++)
		if (memcmp(p + i * width, q + i * width, width))
			return i;
	return n;
}

Test(cuda_casts, every_float32_pattern_casts_as_on_the_cpu, .timeout = 1800)
{
	static const struct { lks_fp8 fmt; int sat; const char *name; } fp8[4] = {
		{ LKS_FP8_E4M3, 0, "e4m3" }, { LKS_FP8_E4M3, 1, "e4m3 satfinite" },
		{ LKS_FP8_E5M2, 0, "e5m2" }, { LKS_FP8_E5M2, 1, "e5m2 satfinite" },
	};
	uint32_t *bits = malloc(CHUNK * sizeof(uint32_t));
	float *x = malloc(CHUNK * sizeof(float));
	uint8_t *gpu8[4], *cpu8 = malloc(CHUNK);
	uint16_t *gpu16 = malloc(CHUNK * sizeof(uint16_t)), *cpu16 = malloc(CHUNK * sizeof(uint16_t));

	need_device();
	cr_assert(bits && x && cpu8 && gpu16 && cpu16);
	for (int k = 0; k < 4; k++)
		cr_assert_not_null(gpu8[k] = malloc(CHUNK));
	for (uint64_t first = 0; first < ((uint64_t)1 << 32); first += CHUNK) {
		size_t at;

		for (size_t i = 0; i < CHUNK; i++)
			bits[i] = (uint32_t)(first + i);
		memcpy(x, bits, CHUNK * sizeof(float));
		cr_assert_eq(lks_cuda_casts((uint32_t)first, CHUNK, gpu8, gpu16), 0);
		for (int k = 0; k < 4; k++) {
			lks_f32_to_fp8_n(x, cpu8, CHUNK, fp8[k].fmt, fp8[k].sat);
			at = first_diff(gpu8[k], cpu8, CHUNK, 1);
			cr_assert_eq(at, CHUNK, "%s of 0x%08x: GPU 0x%02x, CPU 0x%02x", fp8[k].name,
			             bits[at < CHUNK ? at : 0], gpu8[k][at < CHUNK ? at : 0],
			             cpu8[at < CHUNK ? at : 0]);
		}
		lks_f32_to_bf16_n(x, cpu16, CHUNK);
		at = first_diff(gpu16, cpu16, CHUNK, 2);
		cr_assert_eq(at, CHUNK, "bf16 of 0x%08x: GPU 0x%04x, CPU 0x%04x",
		             bits[at < CHUNK ? at : 0], gpu16[at < CHUNK ? at : 0],
		             cpu16[at < CHUNK ? at : 0]);
	}
	for (int k = 0; k < 4; k++)
		free(gpu8[k]);
	free(bits);
	free(x);
	free(cpu8);
	free(gpu16);
	free(cpu16);
}

Test(cuda_casts, every_code_decodes_as_on_the_cpu)
{
	float e4[256], e5[256], *fp8[2] = { e4, e5 }, *bf = malloc(65536 * sizeof(float));
	uint16_t codes[65536];
	float cpu[65536];

	need_device();
	cr_assert_not_null(bf);
	cr_assert_eq(lks_cuda_decodes(fp8, bf), 0);
	for (int f = 0; f < 2; f++)
		cr_expect_eq(memcmp(fp8[f], lks_fp8_table((lks_fp8)f), sizeof(e4)), 0,
		             "the %s decode differs", f ? "e5m2" : "e4m3");
	for (int i = 0; i < 65536; i++)
		codes[i] = (uint16_t)i;
	lks_bf16_to_f32_n(codes, cpu, 65536);
	cr_expect_eq(memcmp(bf, cpu, sizeof(cpu)), 0, "the bf16 decode differs");
	free(bf);
}
