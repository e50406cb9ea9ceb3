/*
 * test_bench_step_cli.c: 'lockstep bench step --backend NAME' as a user runs it. The
 * backend is opened first: cuda without a device stops there with the driver's reason
 * (exit 3), an unknown name is bad usage; on the cpu backend the same path runs part 1
 * through the backend it opened, at hidden 1024 where the case is narrower, and prints the
 * tracing cost; --parts runs only the parts it names. Part of test_cli.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_bin.h"
#ifdef LKS_HAVE_CUDA
#include "kernels/cuda/module.h"
#endif

/* A case of one small layer, hidden 16: the backend path widens it to 1024. */
static const char narrow_case[] =
	"[case]\nsteps = 3\nseed = 7\nworld_size = 1\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 1\n"
	"[run r]\nrecipe = fp8_rowwise\n";

/* A new folder in /tmp (dir, its template) and the case text in it as name: path. */
static void case_in_tmp(char *dir, const char *name, const char *text, char *path,
                        size_t size)
{
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, size, "%s/%s", dir, name);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

#ifdef LKS_HAVE_CUDA
Test(cli, bench_step_backend_cuda_without_a_device_says_why)
{
	char out[8192];
	lks_cuda_info info;

	cr_assert_eq(lks_cuda_module_info(&info), 0, "%s", lks_errmsg());
	if (info.device_count > 0)
		cr_skip_test("a CUDA device is here: ci/gpu runs the benchmark");
	cr_assert_eq(lks_run_bin(NULL, "bench step --backend cuda", out, sizeof(out)), 3, "%s",
	             out);
	cr_assert_not_null(strstr(out, "bench step: cuda: no usable CUDA device: "), "%s", out);
	cr_assert_null(strstr(out, "tracing cost"), "%s", out);
}
#endif

Test(cli, bench_step_unknown_backend_is_bad_usage)
{
	char out[8192];

	cr_assert_eq(lks_run_bin(NULL, "bench step --backend nope", out, sizeof(out)), 2, "%s",
	             out);
	cr_assert_not_null(strstr(out, "backend 'nope' is not available (this build has: cpu"),
	                   "%s", out);
}

Test(cli, bench_step_on_a_backend_times_tracing_at_hidden_1024, .timeout = 300)
{
	char dir[] = "/tmp/lks_test_bench_step_XXXXXX", path[300], args[800], out[16384];

	case_in_tmp(dir, "narrow.ini", narrow_case, path, sizeof(path));
	snprintf(args, sizeof(args), "bench step --backend cpu --case '%s' --steps 2 --reps 1 "
	         "--threads 1 --dir '%s'", path, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_expect_not_null(strstr(out, "bench step on backend cpu: "), "%s", out);
	cr_expect_not_null(strstr(out, "1. tracing cost: run 'r' (fp8_rowwise, 1 rank), hidden "
	                               "1024, ffn 4096, 1 layers"), "%s", out);
	cr_expect_not_null(strstr(out, "target overhead <= 5%: "), "%s", out);
	cr_expect_not_null(strstr(out, "final loss equal bit for bit traced and untraced: yes"),
	                   "%s", out);
	cr_expect_null(strstr(out, "3. GEMM share"), "%s", out);
	/* a case already wide enough is kept as it is */
	snprintf(args, sizeof(args), "bench step --backend cpu --case '%s' --steps 2 --reps 1 "
	         "--threads 1 --dir '%s' --set model.hidden=2048 --set model.ffn=64", path, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_expect_not_null(strstr(out, "hidden 2048, ffn 64,"), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* The whole bench step on a two-rank case with attention: part 3 times the attention in
   its own column (a share above 0), part 5 runs the case's run on one rank (its GEMM pool
   is one rank's: two ranks sharing it once hung there), part 6 times FSDP against DP on
   the case's two ranks, part 7 tensor parallel (tp 2) against DP, traced and not. */
Test(cli, bench_step_of_a_two_rank_attention_case, .timeout = 300)
{
	static const char text[] =
		"[case]\nsteps = 3\nworld_size = 2\n"
		"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 8\nbatch = 1\n"
		"attention = causal\nheads = 2\n"
		"[run bf16]\nrecipe = bf16\n[run r]\nrecipe = fp8_rowwise\n";
	char dir[] = "/tmp/lks_test_bench_step_XXXXXX", path[300], args[800], out[32768];
	const char *row;
	double attn = 0.0;

	case_in_tmp(dir, "attn.ini", text, path, sizeof(path));
	snprintf(args, sizeof(args), "bench step --case '%s' --steps 3 --reps 1 --threads 2 "
	         "--dir '%s'", path, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "attn ms   attn"), "%s", out);
	cr_assert_not_null(row = strstr(out, "\n   untraced   "), "%s", out);
	/* configuration, tokens, ms/step, gemm ms, gemm %, quant ms, quant %, attn ms */
	cr_assert_eq(sscanf(row, " untraced %*d %*f %*f %*f%% %*f %*f%% %lf", &attn), 1, "%s", out);
	cr_expect_gt(attn, 0.0, "%s", out);
	cr_expect_not_null(strstr(out, "5. the background thread against the GEMM threads: run 'r' "
	                               "on one rank"), "%s", out);
	cr_expect_not_null(strstr(out, "6. FSDP against DP: run 'r' on 2 ranks"), "%s", out);
	cr_expect_not_null(strstr(out, "\n   FSDP    "), "%s", out);
	cr_expect_not_null(strstr(out, "7. tensor parallel against DP: run 'r' on 2 ranks (threads), "
	                               "as DP and with\n   tp = 2"), "%s", out);
	cr_expect_not_null(strstr(out, "\n   TP traced    "), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* --parts runs those parts and no other (2 with 1, whose runs it replays); a part number
   outside 1 to 7, an empty one, or a part other than 1 and 2 with --backend is bad usage. */
Test(cli, bench_step_parts_chooses_what_runs, .timeout = 300)
{
	static const char *const heads[] = { "\n1. tracing cost", "\n2. SQLite ingest",
	                                     "\n3. GEMM share", "\n4. FP8 vs BF16 loss gap",
	                                     "\n5. the background thread", "\n6. FSDP against DP",
	                                     "\n7. tensor parallel" };
	static const char *const bad[] = { "--parts 0", "--parts 8", "--parts 1,", "--parts ,1",
	                                   "--parts 1x", "--parts ''", "--backend cpu --parts 5" };
	char dir[] = "/tmp/lks_test_bench_step_XXXXXX", path[300], args[800], out[32768];

	case_in_tmp(dir, "n.ini", narrow_case, path, sizeof(path));
	snprintf(args, sizeof(args), "bench step --case '%s' --steps 2 --reps 1 --threads 2 "
	         "--dir '%s' --parts 2,6", path, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	for (int k = 1; k <= 7; k++)
		cr_expect_eq(strstr(out, heads[k - 1]) != NULL, k == 1 || k == 2 || k == 6,
		             "part %d: %s", k, out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(args, sizeof(args), "bench step --case '%s' %s", path, bad[i]);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s: %s", bad[i], out);
		cr_expect_not_null(strstr(out, bad[i][2] == 'b' ? "parts 1 and 2 only"
		                                                 : "want part numbers from 1 to 7"),
		                   "%s: %s", bad[i], out);
	}
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}
