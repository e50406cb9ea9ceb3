/*
 * test_golden_class.c: golden classes (harness/store/golden_class.c) and the golden check
 * of runs of other backends. Runs are trained on the cpu and then made, in the store, into
 * what a cuda run stores (backend cuda; gemm=cublaslt in its options and the compute
 * capability its backend described in its fingerprint), so that what needs no GPU is
 * tested here: a cuda run in reference mode meets the CPU's golden bit for bit; a cublaslt
 * run has the class cuda-sm<arch>-cublaslt and meets its golden's loss and grad norm
 * within the tolerance of its recipe in that class's tolerances.ini, and fails with how to
 * measure one where there is none; 'lockstep golden measure' prints the measurement.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "golden_fixture.h"
#include "run_bin.h"
#include "harness/base/file.h"
#include "harness/store/golden.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

/* Run run as a cuda run stores it: with gemm=cublaslt in its options or not, and the
   compute capability cc its backend described in its fingerprint ("": none). */
static void make_cuda(struct fx *f, const char *run, int cublaslt, const char *cc)
{
	char q[1024];

	snprintf(q, sizeof(q), "UPDATE runs SET backend = 'cuda', options = %s, fingerprint = "
	         "'{\"lockstep.version\": \"0.1.0\", \"compiler\": \"GNU 12\", "
	         "\"isa.active\": \"avx2\"%s%s%s}' WHERE run_id = %lld",
	         cublaslt ? "replace(options, 'checkpoint=none', 'checkpoint=none gemm=cublaslt')"
	                  : "replace(options, ' gemm=cublaslt', '')",
	         *cc ? ", \"backend.device\": \"NVIDIA H100\", \"backend.compute_capability\": \""
	             : "", cc, *cc ? "\"" : "", (long long)id_of(f, run));
	cr_assert_eq(sqlite3_exec(lks_store_db(f->s), q, NULL, NULL, NULL), SQLITE_OK, "%s",
	             sqlite3_errmsg(lks_store_db(f->s)));
}

static void class_of(struct fx *f, const char *run, int want_rc, const char *want)
{
	lks_stored_run r;
	char cls[64] = "";

	cr_assert_eq(lks_stored_run_load(f->s, id_of(f, run), LKS_LOAD_INFO, &r), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(lks_golden_class_of(&r, cls, sizeof(cls)) != 0, want_rc, "%s", lks_errmsg());
	if (!want_rc)
		cr_assert_str_eq(cls, want);
	else
		cr_assert_not_null(strstr(lks_errmsg(), want), "%s", lks_errmsg());
	lks_stored_run_release(&r);
}

static lks_check_result eval_gold(struct fx *f)
{
	const lks_check_cfg *k = &f->c.checks[0];  /* gold: run a */
	lks_check_result r;

	cr_assert_str_eq(k->name, "gold");
	cr_assert_eq(lks_check_eval(f->s, k, &f->opts, id_of(f, "a"), 0, &r), 0, "%s",
	             lks_errmsg());
	return r;
}

static void put_tolerances(struct fx *f, const char *text)
{
	char path[256];
	FILE *t;

	snprintf(path, sizeof(path), "%s/cuda-sm90-cublaslt", f->golden);
	mkdir(path, 0755);  /* where no golden of the class was written yet */
	snprintf(path, sizeof(path), "%s/cuda-sm90-cublaslt/tolerances.ini", f->golden);
	cr_assert_not_null(t = fopen(path, "w"));
	fputs(text, t);
	fclose(t);
}

/* Multiplies the loss of every rank at step by factor in the golden file at path. */
static void scale_loss(const char *path, int step, double factor)
{
	struct text t;
	char prefix[32], v[64];

	text_read(&t, path);
	for (int rank = 0; rank < 2; rank++) {
		int i;

		snprintf(prefix, sizeof(prefix), "%d\t%d\t", step, rank);
		i = text_find(&t, prefix);  /* the step rows come before the stat rows */
		text_col(&t, i, 2, v, sizeof(v));
		snprintf(v, sizeof(v), "%.17g", strtod(v, NULL) * factor);
		text_set(&t, i, 2, v);
	}
	text_write(&t, path, t.n, -1);
	text_free(&t);
}

Test(golden_class, from_the_backend_gemm_and_architecture)
{
	struct fx f;

	fx_setup(&f);
	class_of(&f, "a", 0, "cpu");
	make_cuda(&f, "a", 0, "9.0");
	class_of(&f, "a", 0, "cpu");  /* reference mode: the CPU's arithmetic */
	make_cuda(&f, "a", 1, "9.0");
	class_of(&f, "a", 0, "cuda-sm90-cublaslt");
	make_cuda(&f, "bf", 1, "10.0");
	class_of(&f, "bf", 0, "cuda-sm100-cublaslt");
	make_cuda(&f, "bf", 1, "");
	class_of(&f, "bf", 1, "no backend.compute_capability");
	fx_teardown(&f);
}

/* A cuda run in reference mode is checked against golden/cpu, bit for bit: it passes where
   its bits are the CPU's and fails at the first one that is not. */
Test(golden_class, a_cuda_reference_run_meets_the_cpu_golden_bit_for_bit)
{
	struct fx f;
	char path[256], want[256];
	lks_check_result r;

	fx_setup(&f);
	write_golden(&f, "a", path, sizeof(path));
	snprintf(want, sizeof(want), "%s/cpu/tiny/a.tsv", f.golden);
	cr_assert_str_eq(path, want);
	make_cuda(&f, "a", 0, "9.0");
	r = eval_gold(&f);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	scale_loss(path, 2, 1 + 1e-15);  /* a difference no tolerance class would see */
	r = eval_gold(&f);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_str_eq(r.field, "loss");
	cr_assert_eq(r.step, 2);
	fx_teardown(&f);
}

/* A cublaslt run meets golden/cuda-sm90-cublaslt on loss and grad norm within its
   recipe's tolerance; without one it fails saying how to measure one; a bad file is bad
   input at its line. */
Test(golden_class, a_cublaslt_run_meets_its_class_within_the_recipes_tolerance)
{
	struct fx f;
	char path[256];
	lks_check_result r;

	fx_setup(&f);
	make_cuda(&f, "a", 1, "9.0");
	write_golden(&f, "a", path, sizeof(path));
	cr_assert_not_null(strstr(path, "/cuda-sm90-cublaslt/tiny/a.tsv"), "%s", path);
	r = eval_gold(&f);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.bad_input, 0);
	cr_assert_not_null(strstr(r.message, "no tolerances for golden class "
	                          "'cuda-sm90-cublaslt'"), "%s", r.message);
	cr_assert_not_null(strstr(r.message, "lockstep golden measure"), "%s", r.message);

	put_tolerances(&f, "[bf16]\nrtol = 0.1 ; a measurement\n");
	r = eval_gold(&f);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_not_null(strstr(r.message, "no tolerance for recipe 'fp8_rowwise'"), "%s",
	                   r.message);

	/* rtol 1e-3: a 1e-2 change is seen, a 1e-4 one is not; hashes are not compared */
	put_tolerances(&f, "; cuda-sm90-cublaslt\n[bf16]\nrtol = 0.1\n[fp8_rowwise]\n"
	                   "rtol = 1e-3 ; made up for this test\natol = 0\n");
	r = eval_gold(&f);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	scale_loss(path, 1, 1 + 1e-4);
	r = eval_gold(&f);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	scale_loss(path, 2, 1 + 1e-2);
	r = eval_gold(&f);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_str_eq(r.field, "loss");
	cr_assert_eq(r.step, 2);

	put_tolerances(&f, "[fp8_rowwise]\nrtol = -1\n");
	r = eval_gold(&f);
	cr_assert_eq(r.bad_input, LKS_BAD_GOLDEN, "%s", r.message);
	cr_assert_not_null(strstr(r.message, "tolerances.ini:2: bad value '-1' for 'rtol'"), "%s",
	                   r.message);
	/* comments of any length, on lines of their own or after a value, even holding ':'
	   and '=' (inih reads lines of at most 200 bytes, and read a cut line's rest as a
	   line of its own); a key line that does not fit is refused at its line */
	{
		char text[2048], lng[400];

		memset(lng, 'x', sizeof(lng) - 1);
		lng[sizeof(lng) - 1] = 0;
		memcpy(lng + 150, " rtol = 0.9 : atol = 5 ", 23);
		snprintf(text, sizeof(text), "; %s\n[fp8_rowwise]\nrtol = 1e-3 ; %s\n"
		         "atol = 0\t; %s\n", lng, lng, lng);
		put_tolerances(&f, text);
		r = eval_gold(&f);
		cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
		cr_assert_str_eq(r.field, "loss", "rtol 1e-3 read, the comments left out: %s",
		                 r.message);
		snprintf(text, sizeof(text), "[fp8_rowwise]\nrtol = 0.1\natol = 0%s\n", lng);
		put_tolerances(&f, text);
		r = eval_gold(&f);
		cr_assert_eq(r.bad_input, LKS_BAD_GOLDEN, "%s", r.message);
		cr_assert_not_null(strstr(r.message, "tolerances.ini:3: line longer than 198 "
		                                     "characters"), "%s", r.message);
	}
	put_tolerances(&f, "[fp8_rowwise]\natol = 1\n");
	r = eval_gold(&f);
	cr_assert_eq(r.bad_input, LKS_BAD_GOLDEN, "%s", r.message);
	cr_assert_not_null(strstr(r.message, "[fp8_rowwise] has no rtol"), "%s", r.message);
	fx_teardown(&f);
}

/* 'lockstep golden measure' prints per class and recipe the largest relative difference of
   the loss against the golden (here the CPU's, the class having none), and the tolerance
   section it gives. */
Test(golden_class, measure_prints_the_largest_relative_difference)
{
	struct fx f;
	char path[256], args[1024], out[8192];

	fx_setup(&f);
	write_golden(&f, "a", path, sizeof(path));  /* golden/cpu */
	scale_loss(path, 2, 1 + 5e-3);
	make_cuda(&f, "a", 1, "9.0");
	snprintf(args, sizeof(args), "golden measure --db '%s/t.db' --golden '%s'", f.dir,
	         f.golden);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "cuda-sm90-cublaslt       fp8_rowwise           1  cpu"),
	                   "%s", out);
	/* |x - 1.005 x| / (1.005 x) */
	cr_assert_not_null(strstr(out, "0.00498"), "%s", out);
	cr_assert_not_null(strstr(out, "[fp8_rowwise]\nrtol = 0.005 ; lockstep golden measure"),
	                   "%s", out);
	cr_assert_not_null(strstr(out, "NVIDIA H100"), "%s", out);
	cr_assert_not_null(strstr(out, "(tiny/a step 2)"), "%s", out);
	/* the sections it prints, written as the class's tolerances.ini, are read back: the
	   run meets the golden it was measured against (made the class's) within them */
	{
		const char *sec = strstr(out, "cuda-sm90-cublaslt/tolerances.ini (review");
		char cls[512];
		lks_check_result r;

		cr_assert_not_null(sec, "%s", out);
		put_tolerances(&f, strchr(sec, '\n') + 1);
		write_golden(&f, "a", cls, sizeof(cls));
		cr_assert_not_null(strstr(cls, "/cuda-sm90-cublaslt/tiny/a.tsv"), "%s", cls);
		scale_loss(cls, 2, 1 + 5e-3);
		r = eval_gold(&f);
		cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	}
	/* the bf16 run is of class cpu: nothing to measure; without the cublaslt run, none */
	make_cuda(&f, "a", 0, "9.0");
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no complete run of a class that is not bit for bit"),
	                   "%s", out);
	fx_teardown(&f);
}

/* ---- tolerances.ini as input ---- */

/* A mkdtemp folder into dir (at least 64 bytes) holding the class folder 'cls'. */
static void tol_dir(char *dir, size_t n)
{
	char cls[128];

	snprintf(dir, n, "/tmp/lks-test-tol-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cls, sizeof(cls), "%s/cls", dir);
	cr_assert_eq(mkdir(cls, 0755), 0);
}

static void tol_rm(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* text as dir/cls/tolerances.ini, read for recipe as the golden check reads it:
   lks_golden_tolerance's code (its message in lks_errmsg). */
static int tol_read(const char *dir, const char *text, const char *recipe, double *rtol,
                    double *atol)
{
	char path[256];
	FILE *t;

	snprintf(path, sizeof(path), "%s/cls/tolerances.ini", dir);
	cr_assert_not_null(t = fopen(path, "w"));
	fputs(text, t);
	fclose(t);
	*rtol = *atol = -1;
	return lks_golden_tolerance(dir, "cls", recipe, rtol, atol, path, sizeof(path));
}

/* A second [bf16], a key given twice or one before any section was read, the last value
   winning; each is bad input at its line, as in a combos file, whichever recipe is asked
   for. Of several mistakes the first is said, at its own line. */
Test(golden_class, tolerances_given_twice_or_outside_a_section_are_refused_at_their_line)
{
	static const struct {
		const char *text, *recipe, *want;
	} bad[] = {
		{ "[bf16]\nrtol = 0.1\n[fp8_rowwise]\nrtol = 1e-3\n[bf16]  ; again\nrtol = 0.5\n",
		  "bf16", "tolerances.ini:5: duplicate section [bf16] (first at line 1)" },
		{ "[bf16]\nrtol = 0.1\n[bf16]\n[fp8_rowwise]\nrtol = 1e-3\n", "fp8_rowwise",
		  "tolerances.ini:3: duplicate section [bf16] (first at line 1)" },
		{ "[fp8_rowwise]\nrtol = 1e-3\natol = 0\n  rtol = 0.5 ; measured again\n",
		  "fp8_rowwise",
		  "tolerances.ini:4: duplicate key 'rtol' in [fp8_rowwise] (first at line 2)" },
		{ "[bf16]\natol = 0\natol = 1\nrtol = 0.1\n[fp8_rowwise]\nrtol = 1e-3\n",
		  "fp8_rowwise", "tolerances.ini:3: duplicate key 'atol' in [bf16] (first at line 2)" },
		{ "; measured on an H100\nrtol = 0.5\n[fp8_rowwise]\nrtol = 1e-3\n", "fp8_rowwise",
		  "tolerances.ini:2: key 'rtol' before any section" },
		{ "[fp8_rowwise]\nrtol 1e-3\nrtol = -1\n", "fp8_rowwise",
		  "tolerances.ini:2: cannot parse the line" },
	};
	char dir[64];
	double rtol, atol;
	int rc;

	tol_dir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		rc = tol_read(dir, bad[i].text, bad[i].recipe, &rtol, &atol);
		cr_expect_eq(rc, LKS_E_BAD_INPUT, "%s: rc %d, rtol %g: %s", bad[i].text, rc, rtol,
		             lks_errmsg());
		cr_expect_not_null(strstr(lks_errmsg(), bad[i].want), "%s: %s", bad[i].text,
		                   lks_errmsg());
	}
	/* each once, in any order: read as before */
	rc = tol_read(dir, "[bf16]\nrtol = 0.1\n[fp8_rowwise]\natol = 2\nrtol = 1e-3\n",
	              "fp8_rowwise", &rtol, &atol);
	cr_expect_eq(rc, 0, "%s", lks_errmsg());
	cr_expect(rtol == 1e-3 && atol == 2, "rtol %g atol %g", rtol, atol);
	tol_rm(dir);
}

/* A tolerances.ini that is not a regular file is refused at once, naming it: a FIFO (the
   check waited for a writer for ever) and a link to /dev/zero (read until an allocation of
   1 GB failed, which passed for the end of the file); so is one over its limit. */
Test(golden_class, a_tolerances_file_not_regular_or_over_its_limit_is_refused, .timeout = 30)
{
	char dir[64], path[256], *big;
	double rtol, atol;
	int rc;

	tol_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/cls/tolerances.ini", dir);
	cr_assert_eq(mkfifo(path, 0644), 0);
	rc = lks_golden_tolerance(dir, "cls", "bf16", &rtol, &atol, path, sizeof(path));
	cr_expect_eq(rc, LKS_E_BAD_INPUT, "%s", lks_errmsg());
	cr_expect(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "a FIFO"), "%s",
	          lks_errmsg());
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(symlink("/dev/zero", path), 0);
	rc = lks_golden_tolerance(dir, "cls", "bf16", &rtol, &atol, path, sizeof(path));
	cr_expect_eq(rc, LKS_E_BAD_INPUT, "%s", lks_errmsg());
	cr_expect(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "a device"), "%s",
	          lks_errmsg());
	cr_assert_eq(unlink(path), 0);
	/* a comment of the limit's size after a value */
	cr_assert_not_null(big = malloc(LKS_TOLERANCES_FILE_MAX + 64));
	snprintf(big, 64, "[bf16]\nrtol = 0.1 ; ");
	memset(big + strlen(big), 'x', LKS_TOLERANCES_FILE_MAX);
	big[strlen("[bf16]\nrtol = 0.1 ; ") + LKS_TOLERANCES_FILE_MAX] = 0;
	rc = tol_read(dir, big, "bf16", &rtol, &atol);
	cr_expect_eq(rc, LKS_E_BAD_INPUT, "rc %d, rtol %g: %s", rc, rtol, lks_errmsg());
	cr_expect(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "over the limit"), "%s",
	          lks_errmsg());
	free(big);
	tol_rm(dir);
}
