/*
 * test_cuda.c: the CUDA backend's pieces against the CPU reference, on a real device.
 * Built only with the CUDA Toolkit; every test skips cleanly (exit 0, a line on stderr)
 * when no GPU is usable, as on CI machines.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_info.h"
#include "kernels/cuda/rng.h"
#include "kernels/philox.h"

static void need_device(void)
{
	lks_cuda_info info;

	lks_cuda_info_get(&info);
	if (info.device_count == 0) {
		fprintf(stderr, "test_cuda: skipped, no usable CUDA device: %s\n", info.device_error);
		cr_skip_test("no usable CUDA device: %s", info.device_error);
	}
}

Test(cuda, philox_matches_cpu_bitwise)
{
	const size_t n = (size_t)1 << 20;
	const uint64_t offset = ((uint64_t)1 << 33) + 3;  /* a block index above 2^32, unaligned */
	float *gpu = malloc(n * sizeof(float));

	need_device();
	cr_assert_not_null(gpu);
	for (int dist = 0; dist < 2; dist++) {
		cr_assert_eq(lks_cuda_philox_fill(77, 4, offset, n, (lks_rng_dist)dist, gpu), 0);
		for (size_t i = 0; i < n; i++) {
			float cpu = dist ? lks_philox_normal(77, 4, offset + i)
			                 : lks_philox_uniform(77, 4, offset + i);

			cr_assert(memcmp(&cpu, &gpu[i], sizeof(float)) == 0,
			          "dist %d index %zu: cpu %a, gpu %a", dist, i, cpu, gpu[i]);
		}
	}
	free(gpu);
}
