/*
 * trace_store_gemm.c: how the backend's GEMM library ran the GEMMs of a run (the
 * gemm_algos table, schema version 6; trace_store.h). Role, types and scalings are stored
 * by name (kernels/backend_types.h), so that the table reads without lockstep's enums; the
 * algorithm's fields are NULL where the reference kernel ran them instead.
 */
#include <stdio.h>
#include <string.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

int lks_store_gemm_plans(lks_store *s, int64_t run_id, const lks_gemm_algo *plans, int n)
{
	sqlite3_stmt *st;
	int rc = -1;

	if (n == 0)
		return 0;
	if (lks_store_stmt(s, LKS_Q_GEMM_PLAN, &st) || lks_store_exec(s, LKS_Q_BEGIN))
		return -1;
	for (int i = 0; i < n; i++) {
		const lks_gemm_algo *p = &plans[i];
		int lib = !p->fallback;
		const lks_val v[] = {
			lks_val_int(run_id), lks_val_int(i), lks_val_text(lks_gemm_role_name(p->role)),
			lks_val_int(p->M), lks_val_int(p->N), lks_val_int(p->K),
			lks_val_text(lks_dtype_name(p->a)), lks_val_text(lks_dtype_name(p->b)),
			lks_val_text(lks_dtype_name(p->out)),
			lks_val_text(lks_scaling_name(p->scaling_a)),
			lks_val_text(lks_scaling_name(p->scaling_b)), lks_val_int(p->fast_accum != 0),
			lib ? lks_val_int(p->algo) : lks_val_null(),
			lib ? lks_val_int(p->tile) : lks_val_null(),
			lib ? lks_val_int(p->stages) : lks_val_null(),
			lib ? lks_val_int(p->splitk) : lks_val_null(),
			lib ? lks_val_int(p->reduction) : lks_val_null(),
			lib ? lks_val_null() : lks_val_text(p->reason), lks_val_int(p->gemms),
		};

		lks_store_bind(st, 1, v, LKS_NVALS(v));
		if (lks_store_done(s, st))
			goto out;
	}
	rc = 0;
out:
	return lks_store_batch_end(s, st, rc);
}

/* A name read back as its enum value; one this build does not know (a database written
   by hand) reads as 0. */
static int lks_named_role(const char *t)
{
	for (int i = 0; i <= LKS_GEMM_WGRAD; i++)
		if (t && strcmp(lks_gemm_role_name((lks_gemm_role)i), t) == 0)
			return i;
	return 0;
}

static int lks_named_dtype(const char *t)
{
	for (int i = 0; i <= LKS_E5M2; i++)
		if (t && strcmp(lks_dtype_name((lks_dtype)i), t) == 0)
			return i;
	return 0;
}

static int lks_named_scaling(const char *t)
{
	for (int i = 0; i <= LKS_SCALE_AXIS; i++)
		if (t && strcmp(lks_scaling_name((lks_scaling)i), t) == 0)
			return i;
	return 0;
}

struct lks_plan_walk {
	int (*fn)(void *arg, const lks_gemm_algo *plan);
	void *arg;
};

static int lks_row_plan(sqlite3_stmt *st, void *ctx)
{
	struct lks_plan_walk *w = ctx;
	lks_gemm_algo p = {
		.role = (lks_gemm_role)lks_named_role(lks_column_text(st, 0)),
		.M = sqlite3_column_int(st, 1), .N = sqlite3_column_int(st, 2),
		.K = sqlite3_column_int(st, 3),
		.a = (lks_dtype)lks_named_dtype(lks_column_text(st, 4)),
		.b = (lks_dtype)lks_named_dtype(lks_column_text(st, 5)),
		.out = (lks_dtype)lks_named_dtype(lks_column_text(st, 6)),
		.scaling_a = (lks_scaling)lks_named_scaling(lks_column_text(st, 7)),
		.scaling_b = (lks_scaling)lks_named_scaling(lks_column_text(st, 8)),
		.fast_accum = sqlite3_column_int(st, 9),
		.fallback = sqlite3_column_type(st, 15) != SQLITE_NULL,
		.algo = sqlite3_column_int(st, 10),
		.tile = (uint32_t)sqlite3_column_int64(st, 11),
		.stages = (uint32_t)sqlite3_column_int64(st, 12),
		.splitk = sqlite3_column_int(st, 13),
		.reduction = (uint32_t)sqlite3_column_int64(st, 14),
		.gemms = sqlite3_column_int64(st, 16),
	};

	if (p.fallback)
		snprintf(p.reason, sizeof(p.reason), "%s", lks_column_text(st, 15));
	return w->fn(w->arg, &p);
}

int lks_store_get_gemm_plans(lks_store *s, int64_t run_id,
                             int (*fn)(void *arg, const lks_gemm_algo *plan), void *arg)
{
	const lks_val v[] = { lks_val_int(run_id) };
	struct lks_plan_walk w = { fn, arg };

	return lks_store_rows(s, LKS_Q_GET_GEMM_PLANS, v, LKS_NVALS(v), lks_row_plan, &w);
}
