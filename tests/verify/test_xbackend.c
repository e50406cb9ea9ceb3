/*
 * test_xbackend.c: cross-backend cases as 'lockstep run' meets them (issue 14, item 5): a
 * run's own 'backend = NAME', stored with the run; gemm = cublaslt refused per run where
 * the run's backend is cpu; a run whose backend cannot be opened here (cuda without a GPU)
 * left out with the driver's reason and exit 3 while the others run and are stored. What
 * needs a device is skipped where there is one (ci/gpu runs it there). The cross-backend
 * case in cases/gpu/ parses, and the nightly suite (cases/) does not pick it up. (The golden classes
 * of such runs: test_golden_class.c.)
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_bin.h"
#include "harness/engine/case.h"
#include "kernels/backend.h"
#include "kernels/err.h"
#ifdef LKS_HAVE_CUDA
#include "kernels/cuda/module.h"
#endif

/* lines 1-10; [run c] at 11, [run g] at 13 */
static const char case_head[] =
	"[case]\nsteps = 2\n[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\n"
	"batch = 2\n\n";

struct xb {
	char dir[64], ini[128], db[128];
};

static void xb_setup(struct xb *x, const char *runs)
{
	FILE *f;

	snprintf(x->dir, sizeof(x->dir), "/tmp/lks-test-xb-XXXXXX");
	cr_assert_not_null(mkdtemp(x->dir));
	snprintf(x->ini, sizeof(x->ini), "%s/xb.ini", x->dir);
	snprintf(x->db, sizeof(x->db), "%s/x.db", x->dir);
	cr_assert_not_null(f = fopen(x->ini, "w"));
	fprintf(f, "%s%s", case_head, runs);
	fclose(f);
}

static void xb_teardown(struct xb *x)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->dir);
	cr_assert_eq(system(cmd), 0);
}

/* "name:backend:status" of every stored run, by id, joined by spaces, into out. */
static void stored_runs(const struct xb *x, char *out, size_t n)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	size_t len = 0;

	out[0] = 0;
	cr_assert_eq(sqlite3_open_v2(x->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT run_name, backend, status FROM runs ORDER BY "
	                                "run_id", -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	while (sqlite3_step(st) == SQLITE_ROW)
		len += (size_t)snprintf(out + len, n - len, "%s%s:%s:%s", len ? " " : "",
		                        (const char *)sqlite3_column_text(st, 0),
		                        (const char *)sqlite3_column_text(st, 1),
		                        (const char *)sqlite3_column_text(st, 2));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* gemm = cublaslt on a run whose own backend is cpu is bad usage at its line, whatever
   --backend says, before the database is made. */
Test(xbackend, gemm_cublaslt_is_checked_against_the_runs_backend)
{
	struct xb x;
	char args[512], out[8192], where[256];

	xb_setup(&x, "[run c]\nrecipe = bf16\n[run g]\nrecipe = bf16\nbackend = cpu\n"
	             "gemm = cublaslt\n");
	snprintf(args, sizeof(args), "run --quiet --backend cpu --db '%s' '%s'", x.db, x.ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	snprintf(where, sizeof(where), "%s:13: run 'g' asks for gemm = cublaslt, which needs "
	         "backend cuda", x.ini);
	cr_assert_not_null(strstr(out, where), "%s", out);
	cr_assert_eq(access(x.db, F_OK), -1, "the database was made");
#ifdef LKS_HAVE_CUDA
	/* --backend cuda does not move a run that says backend = cpu */
	snprintf(args, sizeof(args), "run --quiet --backend cuda --db '%s' '%s'", x.db, x.ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, where), "%s", out);
	cr_assert_eq(access(x.db, F_OK), -1, "the database was made");
#endif
	xb_teardown(&x);
}

/* A run with backend = cpu in an invocation of --backend cpu is stored as cpu, as is one
   that names none; the run's key is read, not ignored: 'backend = tpu' is refused. */
Test(xbackend, the_runs_backend_is_stored_with_it)
{
	struct xb x;
	char args[512], out[8192], runs[512];

	xb_setup(&x, "[run c]\nrecipe = bf16\n[run g]\nrecipe = bf16\nbackend = cpu\n");
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s'", x.db, x.ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	stored_runs(&x, runs, sizeof(runs));
	cr_assert_str_eq(runs, "c:cpu:complete g:cpu:complete");
	snprintf(args, sizeof(args), "run --quiet --set run.g.backend=tpu --db '%s' '%s'", x.db,
	         x.ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "bad value 'tpu' for 'backend'"), "%s", out);
	xb_teardown(&x);
}

#ifdef LKS_HAVE_CUDA
/* A case that compares a cpu run with a cuda run, on a machine without a device: the cuda
   run is left out (stored failed, untrained, the driver's reason its event: the JUnit file
   has an error for it, where its check was only "skipped"), the cpu run is trained, stored
   and checked, the check between them is skipped, and the command exits 3. With a device
   both runs are stored, each with its own backend, and the check is evaluated. */
Test(xbackend, a_cuda_run_without_a_device_is_left_out_with_the_reason)
{
	struct xb x;
	char args[768], out[8192], runs[512], junit[160];
	FILE *f;
	size_t n;
	lks_cuda_info info;
	int rc;

	xb_setup(&x, "[run c]\nrecipe = bf16\n[run g]\nrecipe = bf16\nbackend = cuda\n"
	             "[check same]\nkind = bitwise\na = g\nb = c\n"
	             "[check fin]\nkind = finite\na = c\n");
	cr_assert_eq(lks_cuda_module_info(&info), 0, "%s", lks_errmsg());
	snprintf(junit, sizeof(junit), "%s/j.xml", x.dir);
	snprintf(args, sizeof(args), "run --quiet --db '%s' --junit '%s' '%s'", x.db, junit, x.ini);
	rc = lks_run_bin(NULL, args, out, sizeof(out));
	stored_runs(&x, runs, sizeof(runs));
	if (info.device_count > 0) {
		cr_assert_eq(rc, 0, "%s", out);
		cr_assert_str_eq(runs, "c:cpu:complete g:cuda:complete");
		xb_teardown(&x);
		return;
	}
	cr_assert_eq(rc, 3, "%s", out);
	cr_assert_str_eq(runs, "c:cpu:complete g:cuda:failed", "the cuda run stored failed");
	cr_assert_not_null(strstr(out, "xb / g: left out: backend 'cuda' cannot be opened: "
	                           "cuda: no usable CUDA device: "), "%s", out);
	cr_assert_not_null(strstr(out, info.device_error), "%s", out);
	cr_assert_not_null(strstr(out, "skipped: run 'g' was not run"), "%s", out);
	cr_assert_not_null(strstr(out, "fin "), "%s", out);
	cr_assert_not_null(strstr(out, "1 passed, 0 failed"), "the cpu run's check: %s", out);
	cr_assert_not_null(strstr(out, "1 run was left out"), "%s", out);
	cr_assert_not_null(f = fopen(junit, "r"));
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	fclose(f);
	cr_assert_not_null(strstr(out, "errors=\"1\""), "%s", out);
	xb_teardown(&x);
}
#endif

/* cases/gpu/: runs on both backends, read where the build has cuda; 'lockstep run cases/'
   reads only the .ini files directly in cases/, so the nightly suite on a machine without
   a GPU never meets it. */
Test(xbackend, the_gpu_cases_parse_and_stay_out_of_the_nightly_suite)
{
	const char *gpu[] = { LKS_SRC "/cases/gpu" }, *nightly[] = { LKS_SRC "/cases" };
	char **paths;
	int n, ncuda = 0, ncpu = 0;
	lks_case *cases;

	cr_assert_eq(lks_case_paths(nightly, 1, &paths, &n), 0, "%s", lks_errmsg());
	for (int i = 0; i < n; i++)
		cr_assert_null(strstr(paths[i], "/gpu/"), "%s", paths[i]);
	lks_case_paths_free(paths, n);
	if (!lks_backend_find("cuda")) {
		cr_assert_neq(lks_cases_load(gpu, 1, NULL, 0, &cases, &n), 0);
		cr_assert_not_null(strstr(lks_errmsg(), "backend 'cuda' is not available"), "%s",
		                   lks_errmsg());
		lks_cases_release(cases, n);
		return;
	}
	cr_assert_eq(lks_cases_load(gpu, 1, NULL, 0, &cases, &n), 0, "%s", lks_errmsg());
	cr_assert_geq(n, 1);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			const lks_run_cfg *r = &cases[i].runs[j];

			ncuda += !strcmp(r->backend, "cuda");
			ncpu += !strcmp(r->backend, "cpu");
			cr_assert(r->gemm == LKS_GEMM_REFERENCE || !strcmp(r->backend, "cuda"),
			          "run %s: cublaslt off cuda", r->name);
		}
	cr_assert_gt(ncuda, 0);
	cr_assert_gt(ncpu, 0);
	lks_cases_release(cases, n);
}
