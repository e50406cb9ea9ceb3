/*
 * test_store_health.c: GPU health in the trace store (schema version 5): the health rows
 * of a run before and after it, integer and text, NVML's absence as one row; the steps'
 * memory high-water mark, NULL when not measured. And a run's GEMM algorithms (schema
 * version 6): each field read back as written, a fallback's algorithm NULL in the table.
 * Part of test_trace_store.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "store_fixture.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

struct health_seen {
	int n;
	char row[8][128];
};

static int see_health(void *arg, const lks_health_row *r)
{
	struct health_seen *h = arg;

	if (h->n < 8) {
		if (r->text)
			snprintf(h->row[h->n], sizeof(h->row[0]), "%s %d %s '%s'", r->phase, r->device,
			         r->key, r->text);
		else
			snprintf(h->row[h->n], sizeof(h->row[0]), "%s %d %s %lld", r->phase, r->device,
			         r->key, (long long)r->value);
	}
	h->n++;
	return 0;
}

/* A new database 'name' in a new temporary folder (path), holding one run begun. */
static int64_t new_run(char *path, size_t size, const char *name, lks_store **s)
{
	lks_run_info info = run_info("bf16", 2);
	int64_t run;

	mkdir_tmp();
	path_in_tmp(path, size, name);
	cr_assert_eq(lks_store_open(path, s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(*s, &info, &run), 0, "%s", lks_errmsg());
	return run;
}

Test(trace_store, health_rows_read_back_in_order)
{
	const lks_health_row rows[] = {
		{ .phase = "before", .device = 0, .key = "name", .text = "NVIDIA H100" },
		{ .phase = "before", .device = 0, .key = "ecc_uncorrected", .value = 0 },
		{ .phase = "before", .device = 1, .key = "memory_total", .value = 85899345920LL },
		{ .phase = "after", .device = 0, .key = "ecc_uncorrected", .value = 2 },
	};
	const lks_health_row absent = { .phase = "after", .device = -1, .key = "absent",
	                                .text = "no NVML library" };
	struct health_seen seen = { 0 };
	char path[512];
	lks_store *s;
	int64_t run;

	run = new_run(path, sizeof(path), "health.db", &s);
	cr_assert_eq(lks_store_health(s, run, rows, 4), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_health(s, run, &absent, 1), 0, "%s", lks_errmsg());
	lks_store_close(s);
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_health(s, run, see_health, &seen), 0, "%s", lks_errmsg());
	cr_assert_eq(seen.n, 5);
	cr_expect_str_eq(seen.row[0], "before 0 name 'NVIDIA H100'");
	cr_expect_str_eq(seen.row[1], "before 0 ecc_uncorrected 0");
	cr_expect_str_eq(seen.row[2], "before 1 memory_total 85899345920");
	cr_expect_str_eq(seen.row[3], "after 0 ecc_uncorrected 2");
	cr_expect_str_eq(seen.row[4], "after -1 absent 'no NVML library'");
	cr_expect_eq(sql_int(s, "SELECT count(*) FROM health WHERE device IS NULL"), 1);
	lks_store_close(s);
	rm_tmp();
}

Test(trace_store, a_bad_health_row_stores_none_of_its_batch)
{
	const lks_health_row rows[] = {
		{ .phase = "before", .device = 0, .key = "power_mw", .value = 1 },
		{ .phase = "during", .device = 0, .key = "power_mw", .value = 2 },
	};
	char path[512];
	lks_store *s;
	int64_t run;

	run = new_run(path, sizeof(path), "health.db", &s);
	cr_assert_neq(lks_store_health(s, run, rows, 2), 0, "phase 'during' was stored");
	cr_expect(strstr(lks_errmsg(), "before or after"), "%s", lks_errmsg());
	cr_expect_eq(sql_int(s, "SELECT count(*) FROM health"), 0);
	lks_store_close(s);
	rm_tmp();
}

Test(trace_store, step_memory_high_water_mark_reads_back_and_zero_is_null)
{
	lks_step_row steps[2] = {
		{ .step = 0, .rank = 0, .loss = 1, .mem_peak = 5000000123LL },
		{ .step = 0, .rank = 1, .loss = 1, .mem_peak = 0 },
	}, got[2];
	char path[512];
	lks_store *s;
	int64_t run;
	int n;

	run = new_run(path, sizeof(path), "mem.db", &s);
	cr_assert_eq(lks_store_step(s, run, steps, 2, NULL, 0), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_steps(s, run, 0, got, 2, &n), 0, "%s", lks_errmsg());
	cr_assert_eq(n, 2);
	cr_expect_eq(got[0].mem_peak, 5000000123LL);
	cr_expect_eq(got[1].mem_peak, 0);
	cr_expect_eq(sql_int(s, "SELECT count(*) FROM steps WHERE mem_peak IS NULL"), 1);
	lks_store_close(s);
	rm_tmp();
}

struct plans_seen {
	int n;
	lks_gemm_algo p[4];
};

static int see_plan(void *arg, const lks_gemm_algo *p)
{
	struct plans_seen *seen = arg;

	if (seen->n < 4)
		seen->p[seen->n] = *p;
	seen->n++;
	return 0;
}

Test(trace_store, gemm_algorithms_read_back_field_by_field)
{
	/* every field other than the default, and values past 2^31 where the type is unsigned */
	const lks_gemm_algo want[] = {
		{ .role = LKS_GEMM_WGRAD, .M = 256, .N = 1024, .K = 4096, .a = LKS_E5M2,
		  .b = LKS_E4M3, .out = LKS_F32, .scaling_a = LKS_SCALE_AXIS,
		  .scaling_b = LKS_SCALE_TENSOR, .fast_accum = 0, .algo = 66, .tile = 3000000000u,
		  .stages = 21, .splitk = 1, .reduction = 0, .gemms = 12 },
		{ .role = LKS_GEMM_FWD, .M = 5, .N = 8, .K = 30, .a = LKS_E4M3, .b = LKS_E4M3,
		  .out = LKS_BF16, .scaling_a = LKS_SCALE_AXIS, .scaling_b = LKS_SCALE_AXIS,
		  .fast_accum = 1, .fallback = 1, .gemms = 3,
		  .reason = "k * 1 bytes is not a multiple of 16" },
	};
	struct plans_seen seen = { 0 };
	char path[512];
	lks_store *s;
	int64_t run = new_run(path, sizeof(path), "algos.db", &s);

	cr_assert_eq(lks_store_gemm_plans(s, run, want, 0), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_gemm_plans(s, run, want, 2), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM gemm_algos WHERE fallback IS NULL AND "
	                        "role = 'wgrad' AND dtype_a = 'e5m2' AND scaling_b = 'tensor'"), 1);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM gemm_algos WHERE fallback IS NOT NULL AND "
	                        "coalesce(algo, tile, stages, splitk, reduction) IS NULL"), 1);
	cr_assert_eq(lks_store_get_gemm_plans(s, run, see_plan, &seen), 0, "%s", lks_errmsg());
	lks_store_close(s);
	cr_assert_eq(seen.n, 2);
	for (int i = 0; i < 2; i++) {
		const lks_gemm_algo *g = &seen.p[i], *w = &want[i];

		cr_expect_eq(g->role, w->role, "plan %d", i);
		cr_expect(g->M == w->M && g->N == w->N && g->K == w->K, "plan %d", i);
		cr_expect(g->a == w->a && g->b == w->b && g->out == w->out, "plan %d", i);
		cr_expect(g->scaling_a == w->scaling_a && g->scaling_b == w->scaling_b, "plan %d", i);
		cr_expect_eq(g->fast_accum, w->fast_accum, "plan %d", i);
		cr_expect_eq(g->fallback, w->fallback, "plan %d", i);
		cr_expect(g->algo == w->algo && g->tile == w->tile && g->stages == w->stages
		          && g->splitk == w->splitk && g->reduction == w->reduction, "plan %d", i);
		cr_expect_eq(g->gemms, w->gemms, "plan %d", i);
		cr_expect_str_eq(g->reason, w->reason, "plan %d", i);
	}
	rm_tmp();
}
