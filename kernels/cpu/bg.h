/*
 * bg.h: the background thread moved to kernels/bg.h (host threads, not a CPU kernel: the
 * tracer uses it whatever the backend). This header stays only until runner.c includes
 * kernels/bg.h itself.
 */
#ifndef LKS_KERNELS_CPU_BG_H
#define LKS_KERNELS_CPU_BG_H

#include "kernels/bg.h"

#endif
