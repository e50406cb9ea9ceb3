/*
 * quant.c: amax, torchao scales, satfinite casts and dequantization (see quant.h).
 *
 * Work is split over rows (tensorwise and rowwise) or column blocks (the columnwise amax)
 * into pool tasks; each task keeps its own amax and counts, combined afterwards by max and
 * integer sums, which do not depend on the order. The element loops are per ISA
 * (quant_kernel.h).
 */
#include "kernels/cpu/quant.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant_kernel.h"
#include "kernels/err.h"

#define LKS_QUANT_ROWS_PER_TASK 16
#define LKS_QUANT_COLS_PER_TASK 256  /* a block of columns for the columnwise amax */

static void lks_scalar_amax_acc(const float *x, size_t n, float *acc)
{
	for (size_t j = 0; j < n; j++)
		acc[j] = lks_nanmax(acc[j], fabsf(x[j]));
}

static float lks_scalar_amax(const float *x, size_t n)
{
	float m = 0.0f;

	for (size_t j = 0; j < n; j++)
		m = lks_nanmax(m, fabsf(x[j]));
	return m;
}

static void lks_scalar_cast(const float *x, size_t n, const float *scale, int per_elem,
                            const lks_fp8_spec *s, uint8_t *q, lks_cast_counts *counts)
{
	for (size_t j = 0; j < n; j++)
		q[j] = lks_cast_one(x[j], scale[j * (size_t)per_elem], s, counts);
}

const lks_quant_ops lks_quant_scalar_ops = {
	lks_scalar_amax_acc, lks_scalar_amax, lks_scalar_cast,
};

static const lks_quant_ops *lks_quant_ops_active(void)
{
	/* AVX-512 machines take the AVX2 loops: the cast is bound by memory, not width */
	return lks_isa_active() == LKS_ISA_SCALAR ? &lks_quant_scalar_ops : &lks_quant_avx2_ops;
}

float lks_amax(const float *x, size_t n)
{
	return lks_quant_ops_active()->amax(x, n);
}

struct lks_quant_job {
	lks_quant *q;
	const lks_quant_ops *ops;
	float *part;              /* per task: amax (tensor axis) */
	lks_cast_counts *counts;  /* per task */
	int ntasks;
};

static void lks_rows_of_task(const lks_quant *q, int task, int *r0, int *r1)
{
	*r0 = task * LKS_QUANT_ROWS_PER_TASK;
	*r1 = *r0 + LKS_QUANT_ROWS_PER_TASK < q->rows ? *r0 + LKS_QUANT_ROWS_PER_TASK : q->rows;
}

static void lks_amax_task(void *arg, int task, int thread)
{
	struct lks_quant_job *job = arg;
	lks_quant *q = job->q;
	int r0, r1;

	if (q->axis == LKS_AXIS_COL) {
		size_t c0 = (size_t)task * LKS_QUANT_COLS_PER_TASK;
		size_t n = (size_t)q->cols - c0 < LKS_QUANT_COLS_PER_TASK
		           ? (size_t)q->cols - c0 : LKS_QUANT_COLS_PER_TASK;

		for (size_t c = c0; c < c0 + n; c++)
			q->amax[c] = 0.0f;
		for (int r = 0; r < q->rows; r++)
			job->ops->amax_acc(q->x + (size_t)r * q->ldx + c0, n, q->amax + c0);
		return;
	}
	lks_rows_of_task(q, task, &r0, &r1);
	job->part[task] = 0.0f;
	for (int r = r0; r < r1; r++) {
		float m = job->ops->amax(q->x + (size_t)r * q->ldx, (size_t)q->cols);

		if (q->axis == LKS_AXIS_ROW)
			q->amax[r] = m;
		else
			job->part[task] = lks_nanmax(job->part[task], m);
	}
}

static void lks_cast_task(void *arg, int task, int thread)
{
	struct lks_quant_job *job = arg;
	lks_quant *q = job->q;
	lks_cast_counts *counts = &job->counts[task];
	int r0, r1;

	lks_rows_of_task(q, task, &r0, &r1);
	counts->underflow = counts->saturated = 0;
	for (int r = r0; r < r1; r++) {
		const float *scale = q->scale + (q->axis == LKS_AXIS_ROW ? r : 0);

		job->ops->cast(q->x + (size_t)r * q->ldx, (size_t)q->cols, scale,
		               q->axis == LKS_AXIS_COL, &lks_fp8_specs[q->fmt],
		               q->q + (size_t)r * q->ldq, counts);
	}
}

int lks_quant_check(const lks_quant *q)
{
	if (q->rows < 0 || q->cols < 0)
		return lks_err("quantize: bad shape %d x %d", q->rows, q->cols);
	if (q->ldx < (size_t)q->cols || q->ldq < (size_t)q->cols)
		return lks_err("quantize: leading dimension below %d columns", q->cols);
	if ((unsigned)q->fmt > LKS_FP8_E5M2 || (unsigned)q->axis > LKS_AXIS_COL)
		return lks_err("quantize: bad format or axis");
	if (q->rows && q->cols && (!q->x || !q->q))
		return lks_err("quantize: missing input or output");
	if (!q->scale)
		return lks_err("quantize: missing scale output");
	return 0;
}

int lks_quantize(lks_pool *pool, lks_quant *q)
{
	int row_tasks = (q->rows + LKS_QUANT_ROWS_PER_TASK - 1) / LKS_QUANT_ROWS_PER_TASK;
	int col_tasks = (q->cols + LKS_QUANT_COLS_PER_TASK - 1) / LKS_QUANT_COLS_PER_TASK;
	struct lks_quant_job job = { q, lks_quant_ops_active(), NULL, NULL, row_tasks };
	float *own_amax = NULL, tensor_amax = 0.0f;
	size_t nscales = lks_quant_nscales(q);
	int rc = -1;

	if (lks_quant_check(q))
		return -1;
	job.part = malloc(sizeof(float) * (size_t)(row_tasks + 1));
	job.counts = malloc(sizeof(lks_cast_counts) * (size_t)(row_tasks + 1));
	if (!q->amax && q->axis != LKS_AXIS_TENSOR && !q->scale_given)
		own_amax = malloc(sizeof(float) * (nscales + 1));
	if (!job.part || !job.counts
	    || (!q->amax && q->axis != LKS_AXIS_TENSOR && !q->scale_given && !own_amax)) {
		lks_err("quantize: out of memory");
		goto out;
	}
	if (own_amax)
		q->amax = own_amax;

	if (!q->scale_given || q->amax)
		lks_pool_run(pool, q->axis == LKS_AXIS_COL ? col_tasks : row_tasks, lks_amax_task,
		             &job);
	if (q->axis == LKS_AXIS_TENSOR) {
		for (int t = 0; t < row_tasks; t++)
			tensor_amax = lks_nanmax(tensor_amax, job.part[t]);
		if (q->amax)
			q->amax[0] = tensor_amax;
	}
	for (size_t i = 0; i < nscales && !q->scale_given; i++)
		q->scale[i] = lks_fp8_scale(q->axis == LKS_AXIS_TENSOR ? tensor_amax : q->amax[i],
		                            q->fmt, q->pow2);

	lks_pool_run(pool, row_tasks, lks_cast_task, &job);
	q->underflow = q->saturated = 0;
	for (int t = 0; t < row_tasks; t++) {
		q->underflow += job.counts[t].underflow;
		q->saturated += job.counts[t].saturated;
	}
	rc = 0;
out:
	if (own_amax)
		q->amax = NULL;
	free(own_amax);
	free(job.part);
	free(job.counts);
	return rc;
}

void lks_dequantize(const lks_quant *q, float *y, size_t ldy)
{
	const float *t = lks_fp8_table(q->fmt);

	for (int r = 0; r < q->rows; r++) {
		for (int c = 0; c < q->cols; c++) {
			size_t k = q->axis == LKS_AXIS_ROW ? (size_t)r
			         : q->axis == LKS_AXIS_COL ? (size_t)c : 0;

			y[(size_t)r * ldy + c] = t[q->q[(size_t)r * q->ldq + c]] * (1.0f / q->scale[k]);
		}
	}
}
