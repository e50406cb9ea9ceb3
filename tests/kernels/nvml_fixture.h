/*
 * nvml_fixture.h: the fake libnvidia-ml as the tests of test_nvml (test_nvml.c,
 * test_gpu_health.c) load and set it; defined in test_nvml.c.
 */
#ifndef LKS_TESTS_KERNELS_NVML_FIXTURE_H
#define LKS_TESTS_KERNELS_NVML_FIXTURE_H

#include "kernels/nvml/nvml.h"
#include "fake_nvml.h"

/* The fake at path, loaded, and its state cleared: two devices unless the test says. */
fake_nvml_state *fake_open(const char *path);
/* lks_nvml_open(path), asserted to answer. */
lks_nvml *nvml_open(const char *path);
/* The whole fake with four devices in NVML's (PCI) order: device i is "GPU-fake-i", at
   40 + i degrees, SM clock 1755 + 75 i MHz; device 0 has no serial (not supported). */
fake_nvml_state *fake_four(void);
/* An XID queued on NVML's device dev. */
void queue_xid(fake_nvml_state *s, int dev, unsigned long long xid);

#endif
