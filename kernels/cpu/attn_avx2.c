/*
 * attn_avx2.c: the attention's tasks (attn_rows.h) compiled with hardware FMA, for the
 * AVX2 path: the same lines as attn.c's scalar build, the same bits (attn_rows.h says why).
 */
void lks_avx2_attn_fwd_task(void *arg, int task, int thread);
void lks_avx2_attn_bwd_task(void *arg, int task, int thread);

#define LKS_ATTN_PREFIX lks_avx2
#define LKS_ATTN_API
#include "kernels/cpu/attn_rows.h"
