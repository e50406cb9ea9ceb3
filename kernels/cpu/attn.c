/* attn.c: multi-head attention with RoPE on the CPU (ops.h), each value by the lines of
   kernels/element/attn.h in the order it states; the (sequence, head) pairs are tasks of
   the GEMM's pool (pool.h), which changes no bit. */
#include "kernels/cpu/ops.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/isa.h"
#include "kernels/element/attn.h"
#include "kernels/pool.h"

/* lks_scalar_attn_fwd_task and _bwd_task here; the AVX2 + FMA build of the same lines is
   attn_avx2.c's, taken when the active path is not the scalar one (isa.h) */
#define LKS_ATTN_PREFIX lks_scalar
#define LKS_ATTN_API static
#include "kernels/cpu/attn_rows.h"

void lks_avx2_attn_fwd_task(void *arg, int task, int thread);
void lks_avx2_attn_bwd_task(void *arg, int task, int thread);

void lks_attn_fwd(lks_pool *pool, const float *qkv, const float *rope,
                  const lks_attn_shape *a, float *qkvr, float *o, float *stat, int bf16)
{
	int T = a->B * a->S, hd = a->hd, nh = a->nh;
	size_t D = (size_t)nh * (size_t)hd;
	struct lks_attn_job j = { qkvr, NULL, NULL, a, o, stat, NULL, NULL, bf16 };

	/* q and k rotated, v as it is */
	for (int t = 0; t < T; t++) {
		const float *cs = lks_rope_cos(rope, a, t % a->S), *sn = lks_rope_sin(rope, a, t % a->S);

		for (int h = 0; h < nh; h++)
			for (int part = 0; part < 2; part++)
				lks_rope_row(qkv + lks_attn_at(a, t, part, h), cs, sn, hd, 0,
				             qkvr + lks_attn_at(a, t, part, h), bf16);
		memcpy(qkvr + lks_attn_at(a, t, 2, 0), qkv + lks_attn_at(a, t, 2, 0), D * sizeof(float));
	}
	lks_pool_run(pool, a->B * nh, lks_isa_active() != LKS_ISA_SCALAR ? lks_avx2_attn_fwd_task
	                                       : lks_scalar_attn_fwd_task, &j);
}

int lks_attn_bwd(lks_pool *pool, const float *qkvr, const float *stat, const float *dout,
                 const float *rope, const lks_attn_shape *a, float *dqkv, int bf16)
{
	int S = a->S, hd = a->hd, nh = a->nh;
	/* one sequence and head at a time per thread: p_ij and dS_ij, (S, S) each */
	float *scratch = malloc(sizeof(float) * 2 * (size_t)S * (size_t)S
	                        * (size_t)lks_pool_threads(pool));
	struct lks_attn_job j = { qkvr, stat, dout, a, NULL, NULL, dqkv, scratch, bf16 };

	if (!scratch)
		return -1;
	lks_pool_run(pool, a->B * nh, lks_isa_active() != LKS_ISA_SCALAR ? lks_avx2_attn_bwd_task
	                                       : lks_scalar_attn_bwd_task, &j);
	free(scratch);
	/* the rotation's gradient: dq and dk turned back, then rounded once */
	for (int t = 0; t < a->B * S; t++) {
		const float *cs = lks_rope_cos(rope, a, t % S), *sn = lks_rope_sin(rope, a, t % S);

		for (int h = 0; h < nh; h++)
			for (int part = 0; part < 2; part++) {
				float *x = dqkv + lks_attn_at(a, t, part, h);

				lks_rope_row(x, cs, sn, hd, 1, x, bf16);
			}
	}
	return 0;
}
