/*
 * test_cli.c: the 'lockstep' program as a user meets it: help that lists the commands, the
 * exit codes of DESIGN.md (2 for bad usage), and the fingerprint of 'lockstep env'; input
 * files that are not regular files, and printed commands that paste into a shell.
 * LKS_BIN is the path of the built program (set by tests/cli/CMakeLists.txt).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "run_bin.h"
#include "harness/base/shell.h"
#include "harness/store/trace_store.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"
#ifdef LKS_HAVE_CUDA
#include "kernels/cuda/module.h"
#define LKS_BACKENDS "cpu, cuda"
#else
#define LKS_BACKENDS "cpu"
#endif

Test(cli, help_lists_commands)
{
	char out[8192];

	cr_assert_eq(lks_run_bin(NULL, "--help", out, sizeof(out)), 0);
	cr_assert_not_null(strstr(out, "usage: lockstep"));
	cr_assert_not_null(strstr(out, "  env "));
	cr_assert_not_null(strstr(out, "  bench "));
	cr_assert_not_null(strstr(out, "exit codes"));
	cr_assert_eq(lks_run_bin(NULL, "bench --help", out, sizeof(out)), 0);
	cr_assert_not_null(strstr(out, "gemm"));
	cr_assert_not_null(strstr(out, "quant"));
}

Test(cli, bad_usage_exits_2)
{
	char out[8192], args[1024];

	cr_assert_eq(lks_run_bin(NULL, "", NULL, 0), 2, "no command");
	cr_assert_eq(lks_run_bin(NULL, "frobnicate", out, sizeof(out)), 2);
	cr_assert_not_null(strstr(out, "'frobnicate' is not a lockstep command"), "%s", out);
	cr_assert_eq(lks_run_bin(NULL, "env --bogus", NULL, 0), 2);
	cr_assert_eq(lks_run_bin(NULL, "bench", NULL, 0), 2, "bench without a subject");
	cr_assert_eq(lks_run_bin(NULL, "bench nosuch", NULL, 0), 2);
	cr_assert_eq(lks_run_bin(NULL, "bench quant --rows x", out, sizeof(out)), 2);
	cr_assert_not_null(strstr(out, "--rows"), "%s", out);
	cr_assert_eq(lks_run_bin(NULL, "bench quant --isa nosuch", NULL, 0), 2);
	cr_assert_eq(lks_run_bin(NULL, "bench gemm --threads 0", NULL, 0), 2);
	cr_assert_eq(lks_run_bin(NULL, "bench gemm --burst 5", out, sizeof(out)), 2);
	cr_assert_not_null(strstr(out, "--burst times a device backend's"), "%s", out);
	cr_assert_eq(lks_run_bin("LKS_ISA=bogus", "env", out, sizeof(out)), 2);
	cr_assert_not_null(strstr(out, "bogus"), "%s", out);
	/* a case that is not there is the user's input (it was exit 3); a CASE argument
	   --flips would not measure (it measured --case's, silently) */
	cr_assert_eq(lks_run_bin(NULL, "bench detect --flips 5 --case /nonexistent.ini", out,
	                         sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "cannot open '/nonexistent.ini'"), "%s", out);
	cr_assert_eq(lks_run_bin(NULL, "bench detect --repeats 3 cases/faults", out, sizeof(out)), 2,
	             "%s", out);
	cr_assert_not_null(strstr(out, "measure --case FILE"), "%s", out);
	/* a run with a fault of its own: in its reference too, every flip was "caught" */
	snprintf(args, sizeof(args), "bench detect --flips 2 --case '%s/cases/faults/bitflip.ini'",
	         LKS_SRC);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "run 'flipped' has a fault of its own"), "%s", out);
}

/* --backend NAME is resolved by the backend registry, which names the ones this build has */
Test(cli, run_backend_unknown_lists_the_known_ones)
{
	char out[8192];

	cr_assert_eq(lks_run_bin(NULL, "run --backend tpu --db /nonexistent/x.db cases/world_sizes.ini",
	                         out, sizeof(out)), 2);
	cr_assert_not_null(strstr(out, "backend 'tpu' is not available (this build has: "
	                               LKS_BACKENDS ")"), "%s", out);
}

/* run --set SET on world_sizes.ini, which the cpu backend cannot run: bad usage at the
   case's file and line saying want, before the database is made */
static void bad_on_cpu(const char *set, const char *want)
{
	char out[8192], args[1024];

	unlink("/tmp/lks_test_on_cpu.db");
	snprintf(args, sizeof(args), "run --set '%s' --db /tmp/lks_test_on_cpu.db "
	         "'%s/cases/world_sizes.ini'", set, LKS_SRC);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "cases/world_sizes.ini:"), "%s", out);
	cr_assert_not_null(strstr(out, want), "%s", out);
	cr_assert_eq(access("/tmp/lks_test_on_cpu.db", F_OK), -1, "the database was made");
}

/* A run that asks for the library's GEMM on the cpu backend (which has only the reference)
   is bad usage at its file and line, before the database is made. */
Test(cli, run_gemm_cublaslt_on_cpu_is_bad_usage)
{
	bad_on_cpu("run.*.gemm=cublaslt",
	           "asks for gemm = cublaslt, which needs backend cuda (--backend cuda");
}

/* --gemm cublaslt (production mode for the runs that name no gemm) on the cpu backend is
   the same bad usage, saying it came from --gemm; --gemm reference leaves a run's own
   gemm = cublaslt as it is; --gemm takes reference or cublaslt only. */
Test(cli, run_gemm_option_sets_the_runs_that_name_none)
{
	char out[8192], args[1024];

	unlink("/tmp/lks_test_on_cpu.db");
	snprintf(args, sizeof(args), "run --gemm cublaslt --db /tmp/lks_test_on_cpu.db "
	         "'%s/cases/world_sizes.ini'", LKS_SRC);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "cases/world_sizes.ini:"), "%s", out);
	cr_assert_not_null(strstr(out, "asks for gemm = cublaslt (--gemm cublaslt), which needs "
	                               "backend cuda"), "%s", out);
	bad_on_cpu("run.*.gemm=cublaslt' --gemm 'reference",
	           "asks for gemm = cublaslt, which needs backend cuda (--backend cuda");
	cr_assert_eq(lks_run_bin(NULL, "run --gemm fast --db /nonexistent/x.db cases/", out,
	                         sizeof(out)), 2);
	cr_assert_not_null(strstr(out, "--gemm is reference or cublaslt, not 'fast'"), "%s", out);
	cr_assert_eq(access("/tmp/lks_test_on_cpu.db", F_OK), -1, "the database was made");
}

/* So is one that asks for NCCL's all-reduce (the cpu backend sums on the host). */
Test(cli, run_allreduce_nccl_on_cpu_is_bad_usage)
{
	bad_on_cpu("run.*.allreduce=nccl",
	           "asks for allreduce = nccl, which needs backend cuda (--backend cuda");
}

Test(cli, env_fingerprint)
{
	char out[16384];

	cr_assert_eq(lks_run_bin(NULL, "env", out, sizeof(out)), 0);
	static const char *const keys[] = { "lockstep.version", "lockstep.commit", "compiler",
		"compiler.flags", "cpu.model", "isa.active", "sqlite", "xxhash", "inih" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_assert_not_null(strstr(out, keys[i]), "no '%s' in:\n%s", keys[i], out);
	/* the numerics flags the build promises are the ones it records */
	cr_assert_not_null(strstr(out, "-ffp-contract=off"), "%s", out);
	cr_assert_null(strstr(out, "fast-math\n"), "%s", out);

	cr_assert_eq(lks_run_bin("LKS_ISA=scalar", "env", out, sizeof(out)), 0);
	cr_assert_not_null(strstr(out, "isa.active             scalar"), "%s", out);
	cr_assert_not_null(strstr(out, "env.LKS_ISA            scalar"), "%s", out);

	cr_assert_eq(lks_run_bin(NULL, "env --json", out, sizeof(out)), 0);
	cr_assert_eq(out[0], '{');
	cr_assert_not_null(strstr(out, "\"isa.active\": "), "%s", out);
#if defined(LKS_HAVE_NCCL)
	/* ncclGetVersion needs no GPU: the library's version, as 2.28.9 */
	cr_assert_not_null(strstr(out, "\"nccl\": \"2."), "%s", out);
#elif defined(LKS_HAVE_CUDA)
	cr_assert_not_null(strstr(out, "\"nccl\": \"not built"), "%s", out);
#endif
	cr_assert_eq(lks_run_bin("NCCL_ALGO=Ring", "env --json", out, sizeof(out)), 0);
	cr_assert_not_null(strstr(out, "\"env.NCCL_ALGO\": \"Ring\""), "%s", out);
}

Test(cli, bench_quant_runs_small)
{
	char out[8192];

	cr_assert_eq(lks_run_bin(NULL, "bench quant --rows 64 --cols 100 --reps 1 --threads 2", out, sizeof(out)), 0,
	             "%s", out);
	cr_assert_not_null(strstr(out, "memcpy (peer)"), "%s", out);
	cr_assert_not_null(strstr(out, "ratio"), "%s", out);
}

/* The table of 'bench import' on a small log: the peer, both readers and the verdict on
   the target (not the timings: those are a benchmark's, never a test's). The log is the
   bench's own: the import must have read every line of it (else the bench fails, 3). */
Test(cli, bench_import_runs_small_and_prints_its_table)
{
	char out[8192];

	cr_assert_eq(lks_run_bin(NULL, "bench import --lines 500 --ranks 3 --reps 2", out,
	                         sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "500 lines, 3 ranks"), "%s", out);
	cr_assert_not_null(strstr(out, "wc -l (peer)"), "%s", out);
	cr_assert_not_null(strstr(out, "parse and checks (no store)"), "%s", out);
	cr_assert_not_null(strstr(out, "lockstep import (SQLite, one txn)"), "%s", out);
	cr_assert_not_null(strstr(out, "target >= 0.25 x wc -l: "), "%s", out);
	/* the phases: each a time, the commit within the import (parse and store is what is
	   left of it, never below zero) */
	{
		const char *p = strstr(out, "of which: ");
		double ph[4];

		cr_assert_not_null(p, "%s", out);
		cr_assert_eq(sscanf(p, "of which: open %lf s, parse and store %lf s, durable commit "
		                    "%lf s (no more cores shorten it), close %lf s", &ph[0], &ph[1],
		                    &ph[2], &ph[3]), 4, "%s", p);
		for (int i = 0; i < 4; i++)
			cr_assert_geq(ph[i], 0, "phase %d: %s", i, p);
		/* short of the target, the gap in the parse and store's terms: its budget is the
		   target's time less the open, commit and close, as printed (3 decimals: each of
		   the 4 numbers a sum is checked from is off by up to 0.0005) */
		p = strstr(out, "at the target the import takes ");
		cr_assert_eq(p != NULL, strstr(out, "NOT met") != NULL, "%s", out);
		if (p) {
			double at, fixed, left, now;

			cr_assert_eq(sscanf(p, "at the target the import takes %lf s; open, commit and "
			                    "close take %lf s, leaving %lf s for the parse and store (now "
			                    "%lf s", &at, &fixed, &left, &now), 4, "%s", p);
			cr_assert_leq(fabs(at - fixed - left), 0.002, "%s", p);
			cr_assert_eq(now, ph[1], "%s", p);
			cr_assert_leq(fabs(fixed - (ph[0] + ph[2] + ph[3])), 0.002, "%s", p);
		}
	}
	cr_assert_eq(lks_run_bin(NULL, "bench import --lines 0", NULL, 0), 2);
	cr_assert_eq(lks_run_bin(NULL, "bench import --nosuch", NULL, 0), 2);
	/* an event file of scalars: the import must have read every record of it */
	cr_assert_eq(lks_run_bin(NULL, "bench import --format tensorboard --lines 400 --reps 1", out,
	                         sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "a TensorBoard event file of 400 scalars"), "%s", out);
	cr_assert_not_null(strstr(out, "target >= 0.25 x wc -l: "), "%s", out);
	cr_assert_eq(lks_run_bin(NULL, "bench import --format csv", NULL, 0), 2);
}

/* The peer and lockstep in interleaved rounds: each lockstep row shows the median of the
   per-round ratios, their interquartile range and min-max, and the number of rounds. The
   numbers themselves are not checked: they are timings. */
Test(cli, bench_gemm_prints_median_ratio_spread_and_rounds)
{
	char out[8192], *row;
	double med, q1, q3, lo, hi;
	int n;

	cr_assert_eq(lks_run_bin(NULL, "bench gemm --sizes 8,24 --reps 5 --threads 2", out,
	                         sizeof(out)), 0, "%s", out);
	if (strstr(out, "peer missing"))
		cr_skip_test("OpenBLAS is not installed: no ratios to print");
	cr_assert_not_null(strstr(out, "5 rounds"), "%s", out);
	cr_assert_not_null(strstr(out, "IQR"), "%s", out);
	cr_assert_not_null(row = strstr(out, "24x24x24         lockstep bf16"), "%s", out);
	cr_assert_eq(sscanf(row + strlen("24x24x24         lockstep bf16"), "%*f %*f %lfx %lf-%lfx %lf-%lfx %d", &med, &q1, &q3, &lo, &hi,
	                    &n), 6, "%s", row);
	cr_assert_eq(n, 5);
	cr_assert(lo <= q1 && q1 <= med && med <= q3 && q3 <= hi, "%s", row);
	cr_assert_eq(lks_run_bin(NULL, "bench gemm --sizes 8 --reps 0", NULL, 0), 2);
}

/* Writes text to path. */
static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write '%s'", path);
	fputs(text, f);
	fclose(f);
}

/* The whole file, for comparing before and after. */
static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	cr_assert_not_null(f, "cannot read '%s'", path);
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(*n + 1);
	cr_assert_eq(fread(buf, 1, *n, f), *n);
	fclose(f);
	return buf;
}

Test(cli, run_stores_and_bad_case_touches_nothing)
{
	char dir[] = "/tmp/lks_test_cli_XXXXXX", good[600], bad[600], db[600], args[2048], out[8192];
	char *before, *after;
	size_t nb, na;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(good, sizeof(good), "%s/good.ini", dir);
	snprintf(bad, sizeof(bad), "%s/bad.ini", dir);
	snprintf(db, sizeof(db), "%s/x.db", dir);
	put_file(good, "[case]\nsteps = 2\n[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\n"
	               "seq = 4\nbatch = 2\n[run a]\nrecipe = fp8_rowwise\n");
	put_file(bad, "[case]\nsteps = 2\n[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\n"
	              "seq = 4\nbatch = 2\n[run a]\nrecipe = fp8_rowwise\ncheckpoint = sometimes\n");
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s'", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "suite 1 stored"), "%s", out);
	before = slurp(db, &nb);

	/* a bad case among good ones: exit 2, the message names file and line, and the
	   database is not opened at all */
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' '%s'", db, good, bad);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	snprintf(args, sizeof(args), "%s:12:", bad);  /* the checkpoint line */
	cr_assert_not_null(strstr(out, args), "no '%s' in: %s", args, out);
	cr_assert_not_null(strstr(out, "sometimes"), "%s", out);
	after = slurp(db, &na);
	cr_assert(nb == na && memcmp(before, after, nb) == 0, "the database changed");
	free(before);
	free(after);

	snprintf(args, sizeof(args), "run --quiet --db '%s' --set model.hiden=3 '%s'", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "hiden"), "%s", out);
	snprintf(args, sizeof(args), "list '%s'", good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "fp8_rowwise"), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* list shows how each run runs: its mesh as dp x fsdp x tp (a 3-D one was shown as two
   meshes, each with a dp of its own), the keys that choose backend, GEMM, all-reduce,
   the optimizer's trace and a resumed start, and a golden check's tolerance, and the
   description without raw control characters; and it refuses, at the run's line, what
   run refuses when the case is read. */
Test(cli, list_shows_how_each_run_runs_and_refuses_what_run_refuses)
{
	char dir[] = "/tmp/lks_test_cli_XXXXXX", ini[600], args[1024], out[8192], text[2048];
	static const char head[] = "[case]\nsteps = 3\nworld_size = 4\ndescription = red \033[31m "
	                           "here\n[model]\nvocab = 16\nhidden = 8\nffn = 16\nlayers = 1\n"
	                           "seq = 4\nbatch = 1\n";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(ini, sizeof(ini), "%s/m.ini", dir);
	snprintf(text, sizeof(text), "%s[run mesh]\nrecipe = bf16\nfsdp = 2\ntp = 2\n"
	         "[run cpu]\nrecipe = bf16\nbackend = cpu\ngemm = reference\n"
	         "[run resumed]\nrecipe = bf16\nresume_from = cpu@0\ntrace_optimizer = on\n"
	         "allreduce = nccl\n[check g]\nkind = golden\na = cpu\nrtol = 0.1\n", head);
	put_file(ini, text);
	snprintf(args, sizeof(args), "list '%s'", ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, " 4 ranks, dp 1 x fsdp 2 x tp 2\n"), "%s", out);
	cr_assert_not_null(strstr(out, " 4 ranks, backend cpu, gemm reference\n"), "%s", out);
	cr_assert_not_null(strstr(out, " 4 ranks, allreduce nccl, optimizer traced, resumed from "
	                               "cpu after step 0\n"), "%s", out);
	cr_assert_not_null(strstr(out, "rtol 0.1 atol 0 off cpu"), "%s", out);
	/* a control character of the description reaches no terminal raw */
	cr_assert_not_null(strstr(out, "\n  red \\x1b[31m here\n"), "%s", out);
	/* line 29 */
	strcat(text, "[run bad]\nrecipe = bf16\nbackend = cpu\ngemm = cublaslt\n");
	put_file(ini, text);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "m.ini:29: run 'bad' asks for gemm = cublaslt, which needs "
	                               "backend cuda"), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* A case is known by its file's name: two of one name in one command (the same file
   twice, or two folders' x.ini) were both run, then night over night paired one's run
   with the other's, and golden update wrote one's golden over the other's. Refused,
   naming both, before a database is made; and by list. */
Test(cli, two_cases_of_one_name_are_bad_usage)
{
	char dir[] = "/tmp/lks_test_cli_XXXXXX", a[600], b[600], db[600], args[2048], out[8192];
	const char *text = "[case]\nsteps = 1\n[model]\nvocab = 32\nhidden = 16\nffn = 32\n"
	                   "layers = 1\nseq = 4\nbatch = 2\n[run a]\nrecipe = bf16\n";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(args, sizeof(args), "mkdir '%s/A' '%s/C'", dir, dir);
	cr_assert_eq(system(args), 0);
	snprintf(a, sizeof(a), "%s/A/x.ini", dir);
	snprintf(b, sizeof(b), "%s/C/x.ini", dir);
	snprintf(db, sizeof(db), "%s/x.db", dir);
	put_file(a, text);
	put_file(b, text);
	for (int k = 0; k < 4; k++) {
		const char *second = k == 1 ? a : b;

		/* list too: it is how a user checks cases before a night (it said "valid") */
		snprintf(args, sizeof(args), k < 2 ? "run --quiet --db '%s' '%s' '%s'"
		         : k == 2 ? "golden update --db '%s' '%s' '%s'" : "list %.0s'%s' '%s'", db, a,
		         second);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s: %s", args, out);
		cr_assert(strstr(out, "two cases named 'x'") && strstr(out, second), "%s", out);
		cr_assert_neq(access(db, F_OK), 0, "%s made the database", args);
	}
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* --steps N trains what --set case.steps=N trains: the warmup follows the steps trained
   (it followed the file's 60: 3 steps of warmup against 1, and every step after the
   first differed). What --steps leaves a case no room for is bad usage before anything
   trains: a warmup it wrote that is longer, a resume_from at or past its last step (that
   one failed when its run began, after the case's earlier runs were stored). */
Test(cli, steps_option_trains_what_case_steps_trains)
{
	char dir[] = "/tmp/lks_test_cli_XXXXXX", ini[600], db[600], args[2048], out[8192];
	const char *model = "[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\n"
	                    "batch = 2\n";
	char text[1024];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(ini, sizeof(ini), "%s/long.ini", dir);
	snprintf(db, sizeof(db), "%s/x.db", dir);
	snprintf(text, sizeof(text), "[case]\nsteps = 60\n%s[run a]\nrecipe = bf16\n", model);
	put_file(ini, text);
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' --steps 8", db, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' --set case.steps=8", db, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "diff 1 2 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "identical: bit for bit"), "%s", out);

	snprintf(text, sizeof(text), "[case]\nsteps = 20\n%s[optim]\nwarmup = 10\n"
	         "[run a]\nrecipe = bf16\n[run b]\nrecipe = bf16\nresume_from = a@6\n", model);
	put_file(ini, text);
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' --steps 5", db, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "warmup 10 is longer than --steps 5"), "%s", out);
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' --steps 7 --set optim.warmup=1",
	         db, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "run 'b' resumes after step 6, and --steps 7"), "%s", out);
	/* one limit for --steps and case.steps (--steps took 2^30 and trained on) */
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' --steps 20000000", db, ini);
	cr_assert_eq(lks_run_bin("timeout 20", args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "--steps") && strstr(out, "10000000"), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* A run that fails (here out of memory: the address space capped below what the
   attention's backward of 8192 positions needs) no longer ends the suite: the other
   case's runs and checks are stored, the JUnit file written (the run's error saying why),
   its own check skipped, and the exit is 3. */
Test(cli, a_failed_run_leaves_the_other_cases_to_run, .timeout = 120)
{
	char dir[] = "/tmp/lks_test_cli_XXXXXX", path[600], args[2048], out[8192];

#if defined(__SANITIZE_ADDRESS__)
	cr_skip_test("AddressSanitizer reserves its shadow memory: it cannot start under ulimit -v");
#endif
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.ini", dir);
	put_file(path, "[case]\nsteps = 1\n[model]\nvocab = 32\nhidden = 8\nffn = 8\n"
	               "layers = 1\nseq = 8192\nbatch = 1\nattention = causal\nheads = 4\n"
	               "[run a]\nrecipe = bf16\n[check f]\nkind = finite\na = a\n");
	snprintf(path, sizeof(path), "%s/b.ini", dir);
	put_file(path, "[case]\nsteps = 2\n[model]\nvocab = 32\nhidden = 16\nffn = 32\n"
	               "layers = 1\nseq = 8\nbatch = 1\n[run a]\nrecipe = bf16\n"
	               "[run b]\nrecipe = bf16\n[check ab]\nkind = bitwise\na = a\nb = b\n");
	snprintf(args, sizeof(args), "run '%s' --db '%s/x.db' --junit '%s/j.xml'", dir, dir, dir);
	cr_assert_eq(lks_run_bin("ulimit -v 600000;", args, out, sizeof(out)), 3, "%s", out);
	cr_assert(strstr(out, "a / a: rank 0: out of memory"), "%s", out);
	cr_assert(strstr(out, "skipped: run 'a' was not run"), "%s", out);
	cr_assert(strstr(out, "2 checks: 1 passed, 0 failed"), "%s", out);
	cr_assert(strstr(out, "1 run failed"), "%s", out);
	/* the JUnit file says the failed run as an error, and why, beside the skipped check */
	snprintf(args, sizeof(args), "cat '%s/j.xml'", dir);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 0, "no JUnit file");
	cr_assert(strstr(out, "errors=\"1\" skipped=\"1\"")
	          && strstr(out, "<testcase classname=\"run.a\" name=\"a\">\n"
	                         "      <error type=\"run failed\" message=\"the run did not "
	                         "complete: rank 0: out of memory"), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* ranks_agree on a run of one rank compares nothing: it passed; now unsupported, said,
   and not counted as a failure (exit 0). Its tensors = is a tensor trace's only. */
Test(cli, ranks_agree_of_one_rank_is_unsupported)
{
	char dir[] = "/tmp/lks_test_cli_XXXXXX", path[600], args[2048], out[8192];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/one.ini", dir);
	put_file(path, "[case]\nsteps = 2\n[model]\nvocab = 32\nhidden = 16\nffn = 32\n"
	               "layers = 1\nseq = 4\nbatch = 2\n[run a]\nrecipe = bf16\n"
	               "[check r]\nkind = ranks_agree\na = a\n");
	snprintf(args, sizeof(args), "run --quiet --db '%s/x.db' '%s'", dir, path);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "unsupported: run 'a' has one rank"), "%s", out);
	cr_assert(strstr(out, "1 checks: 0 passed, 0 failed, 0 expected failures, 1 unsupported"),
	          "%s", out);
	/* tensors = chooses a tensor trace's; lockstep's own runs compare every parameter */
	put_file(path, "[case]\nsteps = 2\nworld_size = 2\n[model]\nvocab = 32\nhidden = 16\n"
	               "ffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n[run a]\nrecipe = bf16\n"
	               "[check r]\nkind = ranks_agree\na = a\ntensors = *weight*\n");
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);  /* the same run */
	cr_assert(strstr(out, "on lockstep's own runs it compares every parameter"), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* ---- kill -9 in the middle of 'lockstep run' ---- */

struct seen_runs {
	int n;
	int64_t id[8];
	char status[8][16];
};

static int collect_run(void *arg, const lks_run_rec *run)
{
	struct seen_runs *s = arg;

	if (s->n < 8) {
		s->id[s->n] = run->run_id;
		snprintf(s->status[s->n], sizeof(s->status[0]), "%s", run->status);
		s->n++;
	}
	return 0;
}

static int64_t count_rows(const char *db, lks_store_table table, int64_t run_id)
{
	lks_store *s;
	int64_t n = -1;

	if (lks_store_open(db, &s) == 0) {
		lks_store_count(s, run_id, table, &n);
		lks_store_close(s);
	}
	return n;
}

Test(cli, kill_9_leaves_an_incomplete_run_and_the_rest_intact)
{
	char dir[] = "/tmp/lks_test_kill_XXXXXX", quick[600], slow[600], db[600], args[2048], out[4096];
	struct seen_runs runs = { 0 };
	int64_t steps_before, stats_before, steps;
	lks_store *s;
	pid_t pid;
	int status;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(quick, sizeof(quick), "%s/quick.ini", dir);
	snprintf(slow, sizeof(slow), "%s/slow.ini", dir);
	snprintf(db, sizeof(db), "%s/k.db", dir);
	put_file(quick, "[case]\nsteps = 3\n[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\n"
	                "seq = 4\nbatch = 2\n[run a]\nrecipe = bf16\n");
	put_file(slow, "[case]\nsteps = 100000\nworld_size = 2\n[model]\nvocab = 32\nhidden = 16\n"
	               "ffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n[run b]\nrecipe = fp8_delayed\n");
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s'", db, quick);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	steps_before = count_rows(db, LKS_TABLE_STEPS, 1);
	stats_before = count_rows(db, LKS_TABLE_STATS, 1);
	cr_assert_eq(steps_before, 3);

	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		freopen("/dev/null", "w", stdout);
		execl(LKS_BIN, LKS_BIN, "run", "--quiet", "--db", db, slow, (char *)NULL);
		_exit(127);
	}
	/* wait until the second run has stored some steps, then kill it mid-flight */
	for (int i = 0; i < 400 && count_rows(db, LKS_TABLE_STEPS, 2) < 2 * 20; i++)
		usleep(25000);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the run ended before the kill");

	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_runs(s, collect_run, &runs), 0);
	cr_assert_eq(runs.n, 2);
	cr_assert_str_eq(runs.status[0], "complete");
	cr_assert_str_eq(runs.status[1], "incomplete");
	cr_assert_eq(lks_store_count(s, 2, LKS_TABLE_STEPS, &steps), 0);
	cr_assert_geq(steps, 40);
	cr_assert_eq(steps % 2, 0, "a step is stored with both ranks or not at all");
	{
		sqlite3_stmt *st;

		cr_assert_eq(sqlite3_prepare_v2(lks_store_db(s), "PRAGMA integrity_check", -1, &st, NULL),
		             SQLITE_OK);
		cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
		cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
		sqlite3_finalize(st);
	}
	lks_store_close(s);
	cr_assert_eq(count_rows(db, LKS_TABLE_STEPS, 1), steps_before);
	cr_assert_eq(count_rows(db, LKS_TABLE_STATS, 1), stats_before);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

Test(cli, bench_step_smoke_and_tracing_changes_no_bit)
{
	char out[16384], args[1024], over[32], iqr[64], range[64], *row;
	double ms;
	int n;

	snprintf(args, sizeof(args), "bench step --case '%s/cases/fp8_recipes.ini' --steps 2 --reps 2",
	         LKS_SRC);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	/* the bench compares a traced and an untraced run of the same case */
	cr_assert_not_null(strstr(out, "final loss equal bit for bit traced and untraced: yes"), "%s", out);
	cr_assert_not_null(strstr(out, "reference: run 'bf16'"), "%s", out);
	/* in rounds: the overhead is the median of per-round ratios, with its spread and the
	   number of rounds; what the background thread got is reported */
	cr_assert_not_null(row = strstr(out, "   stats + hashes + SQLite "), "%s", out);
	cr_assert_eq(sscanf(row + strlen("   stats + hashes + SQLite "), "%lf %31s %63s %63s %d", &ms,
	                    over, iqr, range, &n), 5, "%s", row);
	cr_assert_eq(n, 2, "%s", row);
	cr_assert(strchr(over, '%') && strstr(iqr, "..") && strstr(range, ".."), "%s", row);
	cr_assert_not_null(strstr(out, "background thread (idle priority): "), "%s", out);
	cr_assert_not_null(strstr(out, "ms CPU/step = "), "%s", out);
	cr_assert_not_null(strstr(out, "5. the background thread against the GEMM threads"), "%s",
	                   out);
	snprintf(args, sizeof(args), "bench step --case '%s/cases/fp8_recipes.ini' --steps 1", LKS_SRC);
	cr_assert_eq(lks_run_bin(NULL, args, NULL, 0), 2);
}

Test(cli, a_file_that_is_not_a_lockstep_database_is_bad_input)
{
	char dir[] = "/tmp/lks_test_notdb_XXXXXX", db[600], good[600], args[2048], out[4096];
	char *after;
	size_t n;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/notes.db", dir);
	snprintf(good, sizeof(good), "%s/good.ini", dir);
	put_file(db, "my notes, not a database\n");
	put_file(good, "[case]\nsteps = 1\n[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\n"
	               "seq = 4\nbatch = 2\n[run a]\nrecipe = bf16\n");
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s'", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "is not a lockstep database"), "%s", out);
	after = slurp(db, &n);
	cr_assert(n == 25 && memcmp(after, "my notes, not a database\n", n) == 0, "the file changed");
	free(after);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

Test(cli, check_exit_codes_for_bisect_and_junit)
{
	char dir[] = "/tmp/lks_test_check_XXXXXX", good[600], bad[600], broken[600], db[600];
	char junit[600], args[4096], out[8192];
	const char *model = "[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n";
	char *xml;
	size_t n;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(good, sizeof(good), "%s/good.ini", dir);
	snprintf(bad, sizeof(bad), "%s/bad.ini", dir);
	snprintf(broken, sizeof(broken), "%s/broken.ini", dir);
	snprintf(db, sizeof(db), "%s/c.db", dir);
	snprintf(junit, sizeof(junit), "%s/junit.xml", dir);
	snprintf(args, sizeof(args), "[case]\nsteps = 2\n%s[run a]\nrecipe = bf16\n[run b]\nrecipe = bf16\n"
	         "[check same]\nkind = bitwise\na = a\nb = b\n", model);
	put_file(good, args);
	/* FP8 and BF16 differ from step 0 on: rtol 0 must fail, and name step 0 */
	snprintf(args, sizeof(args), "[case]\nsteps = 2\n%s[run a]\nrecipe = bf16\n[run f]\n"
	         "recipe = fp8_rowwise\n[check exact]\nkind = close\na = f\nb = a\nrtol = 0\n"
	         "[check same]\nkind = bitwise\na = a\nb = a_again\n[run a_again]\nrecipe = bf16\n", model);
	put_file(bad, args);
	put_file(broken, "[case]\nsteps = two\n");

	snprintf(args, sizeof(args), "check --quiet --db '%s' '%s'", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "check --quiet --db '%s' --junit '%s' '%s'", db, junit, bad);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "step 0"), "the divergence names step 0: %s", out);
	snprintf(args, sizeof(args), "check --quiet --db '%s' '%s'", db, broken);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 125, "%s", out);
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s'", db, broken);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);

	xml = slurp(junit, &n);
	xml[n - 1] = 0;
	/* two checks, and the case's three runs night over night: new, as the database's
	   earlier suite ran another case */
	cr_assert_not_null(strstr(xml, "tests=\"5\" failures=\"1\""), "%s", xml);
	cr_assert_not_null(strstr(xml, "<testcase classname=\"nightly.bad\" name=\"a_again\">\n"
	                               "      <system-out>new</system-out>"), "%s", xml);
	cr_assert_not_null(strstr(xml, "<testcase classname=\"bad\" name=\"exact\">"), "%s", xml);
	cr_assert_not_null(strstr(xml, "<failure type=\"close\""), "%s", xml);
	cr_assert_not_null(strstr(xml, "<testcase classname=\"bad\" name=\"same\">\n    </testcase>"),
	                   "the passing check has no failure: %s", xml);
	free(xml);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* A --run or --check name that selects nothing would train nothing, skip every check and
   pass: 'run' exits 2 before the database is opened, 'check' 125 (bisect skips, never
   "good"); 'check' also exits 125 when every check it kept was skipped. A misspelt metric
   is bad input at its line. */
Test(cli, unknown_names_are_bad_usage_and_never_good)
{
	char dir[] = "/tmp/lks_test_names_XXXXXX", good[600], typo[600], db[600], args[4096];
	char out[8192];
	const char *text = "[case]\nsteps = 2\n[model]\nvocab = 32\nhidden = 16\nffn = 32\n"
	                   "layers = 1\nseq = 4\nbatch = 2\n[run a]\nrecipe = bf16\n[run b]\n"
	                   "recipe = bf16\n[check same]\nkind = bitwise\na = a\nb = b\n"
	                   "[check fin]\nkind = finite\na = a\n";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(good, sizeof(good), "%s/good.ini", dir);
	snprintf(typo, sizeof(typo), "%s/typo.ini", dir);
	snprintf(db, sizeof(db), "%s/n.db", dir);
	put_file(good, text);
	snprintf(args, sizeof(args), "%s[check tracks]\nkind = close\na = a\nb = b\nmetric = lsos\n", text);
	put_file(typo, args);

	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' --run nosuch", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no case has a run named nosuch"), "%s", out);
	cr_assert_neq(access(db, F_OK), 0, "the database was created");
	snprintf(args, sizeof(args), "check --quiet --db '%s' '%s' --run nosuch", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 125, "%s", out);
	/* every --check name counts, not only the first */
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' --check same --check nosuch", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no case has a check named nosuch"), "%s", out);
	/* a run of the case, but not of the case --check kept */
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' --check same --run nosuch", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);

	/* known names: run a alone; 'same' needs b and is skipped, 'fin' is evaluated */
	snprintf(args, sizeof(args), "check --quiet --db '%s' '%s' --run a", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "1 passed"), "%s", out);
	cr_assert_not_null(strstr(out, "1 skipped"), "%s", out);
	/* nothing evaluated: run says so and passes, check cannot call it good */
	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s' --run a --check same", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "1 skipped"), "%s", out);
	snprintf(args, sizeof(args), "check --quiet --db '%s' '%s' --run a --check same", db, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 125, "%s", out);
	cr_assert_not_null(strstr(out, "no check was evaluated (1 skipped, 0 unsupported)"), "%s", out);

	snprintf(args, sizeof(args), "run --quiet --db '%s' '%s'", db, typo);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	snprintf(args, sizeof(args), "%s:25: unknown metric 'lsos' in [check tracks]", typo);
	cr_assert_not_null(strstr(out, args), "no '%s' in: %s", args, out);
	snprintf(args, sizeof(args), "list '%s'", typo);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* ---- input files and printed commands ---- */

static const char tiny_case[] =
	"[case]\nsteps = 2\n[model]\nvocab = 16\nhidden = 8\nffn = 16\nlayers = 1\nseq = 4\n"
	"batch = 1\n[run a]\nrecipe = bf16\n[check g]\nkind = golden\na = a\n";

/* /dev/zero never ends and a FIFO blocks its reader: both are refused at once (exit 2).
   Before, 'list /dev/zero' grew until memory ran out: the address space is capped at 2 GiB
   here, so that a regression fails instead of taking the machine's memory. */
Test(cli, special_files_are_refused_at_once, .timeout = 120)
{
	char dir[] = "/tmp/lks_test_special_XXXXXX", path[600], args[2048], out[8192];

	cr_assert_not_null(mkdtemp(dir));
	/* a cap on memory, so that a reader that grows on /dev/zero fails fast; AddressSanitizer
	   reserves terabytes of address space for its shadow and cannot start under one */
#if defined(__SANITIZE_ADDRESS__)
	cr_assert_eq(lks_run_bin("timeout 20", "list /dev/zero", out, sizeof(out)), 2, "%s", out);
#else
	cr_assert_eq(lks_run_bin("ulimit -v 2097152; timeout 20", "list /dev/zero", out, sizeof(out)),
	             2, "%s", out);
#endif
	cr_assert_not_null(strstr(out, "'/dev/zero' is not a regular file (a device): want a case "
	                          "file"), "%s", out);
	snprintf(path, sizeof(path), "%s/pipe.ini", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	snprintf(args, sizeof(args), "run --quiet --db '%s/x.db' '%s'", dir, path);
	cr_assert_eq(lks_run_bin("timeout 20", args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "is not a regular file (a FIFO): want a case file"), "%s", out);
	/* a golden file that is a FIFO: bad input, exit 2, named */
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	put_file(path, tiny_case);
	snprintf(path, sizeof(path), "%s/golden/cpu/tiny", dir);
	snprintf(args, sizeof(args), "mkdir -p '%s' && mkfifo '%s/a.tsv'", path, path);
	cr_assert_eq(system(args), 0);
	snprintf(args, sizeof(args), "run --quiet --db '%s/x.db' --golden '%s/golden' '%s/tiny.ini'",
	         dir, dir, dir);
	cr_assert_eq(lks_run_bin("timeout 20", args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "/golden/cpu/tiny/a.tsv' is not a regular file (a FIFO): "
	                          "want a golden file"), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* Runs cmd through the shell in dir; the exit code and the output. */
static int sh_in(const char *dir, const char *cmd, char *out, size_t n)
{
	char full[8192];

	if ((size_t)snprintf(full, sizeof(full), "cd '%s' && %s 2>&1", dir, cmd) >= sizeof(full))
		cr_assert_fail("command longer than %zu bytes", sizeof(full));
	return lks_run_sh(full, out, n);
}

/* The command a failed golden check prints for a case whose path has a blank, a quote and
   a '$' pastes into a shell as it is, and makes the golden; then the check passes. */
Test(cli, printed_golden_command_pastes_into_a_shell, .timeout = 120)
{
	char dir[] = "/tmp/lks_test_paste_XXXXXX", path[700], cmd[4096], out[8192], *p, *eol;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/it's a $dir", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/it's a $dir/tiny.ini", dir);
	put_file(path, tiny_case);
	/* a database of its own: the command must name it (it read lockstep.db) */
	snprintf(cmd, sizeof(cmd), "'%s' run --quiet \"it's a \\$dir/tiny.ini\" --db "
	         "\"it's a \\$dir/t.db\"", LKS_BIN);
	cr_assert_eq(sh_in(dir, cmd, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(p = strstr(out, "create it with: lockstep golden update "), "%s", out);
	p += strlen("create it with: lockstep");
	eol = strchr(p, '\n');
	*eol = 0;
	snprintf(cmd, sizeof(cmd), "'%s'%s", LKS_BIN, p);
	cr_assert_eq(sh_in(dir, cmd, out, sizeof(out)), 0, "'%s':\n%s", cmd, out);
	cr_assert_not_null(strstr(out, "wrote golden/cpu/tiny/a.tsv"), "%s", out);
	snprintf(cmd, sizeof(cmd), "'%s' run --quiet \"it's a \\$dir/tiny.ini\" --db "
	         "\"it's a \\$dir/t.db\"", LKS_BIN);
	cr_assert_eq(sh_in(dir, cmd, out, sizeof(out)), 0, "%s", out);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Runs 'shell -c script' (no other shell between) and returns its stdout in out. */
static void shell_run(const char *shell, const char *script, char *out, size_t n)
{
	int fd[2], status;
	size_t len = 0;
	ssize_t got;
	pid_t pid;

	cr_assert_eq(pipe(fd), 0);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		execlp(shell, shell, "-c", script, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (len + 1 < n && (got = read(fd[0], out + len, n - 1 - len)) > 0)
		len += (size_t)got;
	out[len] = 0;
	close(fd[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s -c %s", shell, script);
}

/* Every word lks_shell_quote makes reads back through bash as the word it was, and through
   /bin/sh too when it has no control characters (its $'...' is not POSIX). */
Test(cli, shell_quote_round_trips_through_sh)
{
	static const char *const words[] = {
		"plain", "cases/x.ini", "a b", "it's", "$HOME", "`id`", "a\"b", "back\\slash",
		"semi;colon", "new\nline", "tab\there", "esc\x1b[0m", "", "-", "*", "~", "'",
		"\\'", "x\x7fy", "end\n",
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		char q[256], script[400], out[256];

		lks_shell_quote(words[i], q, sizeof(q));
		for (const char *c = q; *c; c++)
			cr_assert((unsigned char)*c >= 0x20 && *c != 0x7f, "raw control byte in %s", q);
		snprintf(script, sizeof(script), "printf '%%s|' %s", q);
		for (int sh = 0; sh < 2; sh++) {
			if (sh && q[0] == '$')
				continue;
			shell_run(sh ? "sh" : "bash", script, out, sizeof(out));
			cr_assert(strlen(out) > 0 && out[strlen(out) - 1] == '|', "%s gave '%s'", script,
			          out);
			out[strlen(out) - 1] = 0;
			cr_assert_str_eq(out, words[i], "%s", script);
		}
	}
	/* a word too long for the buffer is cut with its quote closed */
	char q[8];
	cr_assert_str_eq(lks_shell_quote("a b c d e f", q, sizeof(q)), "'a b c'");
}

#ifdef LKS_HAVE_CUDA
/* built with CUDA on a machine without a device: the run stops at open (an infrastructure
   failure, 3), saying why */
Test(cli, run_backend_cuda_without_a_device_says_why)
{
	char dir[] = "/tmp/lks_test_cuda_XXXXXX", good[600], args[2048], out[8192];
	lks_cuda_info info;

	cr_assert_eq(lks_cuda_module_info(&info), 0, "%s", lks_errmsg());
	if (info.device_count > 0)
		cr_skip_test("a CUDA device is here: tests/gpu_backend runs the backend");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(good, sizeof(good), "%s/good.ini", dir);
	put_file(good, "[case]\nsteps = 1\n[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\n"
	               "seq = 4\nbatch = 2\n[run a]\nrecipe = bf16\n");
	snprintf(args, sizeof(args), "run --quiet --backend cuda --db '%s/r.db' '%s'", dir, good);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 3, "%s", out);
	cr_assert_not_null(strstr(out, "cuda: no usable CUDA device: "), "%s", out);
	cr_assert_not_null(strstr(out, info.device_error), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* 'bench gemm --backend cuda' opens the backend first: without a device it stops at once
   with the driver's reason (exit 3), timing nothing. */
Test(cli, bench_gemm_backend_cuda_without_a_device_says_why)
{
	char out[8192];
	lks_cuda_info info;

	cr_assert_eq(lks_cuda_module_info(&info), 0, "%s", lks_errmsg());
	if (info.device_count > 0)
		cr_skip_test("a CUDA device is here: ci/gpu runs the benchmark");
	cr_assert_eq(lks_run_bin(NULL, "bench gemm --backend cuda", out, sizeof(out)), 3, "%s", out);
	cr_assert_not_null(strstr(out, "bench gemm: cuda: no usable CUDA device: "), "%s", out);
	cr_assert_null(strstr(out, "TFLOP/s"), "%s", out);
}
#endif

/* An unknown backend is bad usage, naming the ones this build has. */
Test(cli, bench_gemm_unknown_backend_lists_the_known_ones)
{
	char out[8192];

	cr_assert_eq(lks_run_bin(NULL, "bench gemm --backend nope", out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "backend 'nope' is not available (this build has: cpu"),
	                   "%s", out);
}

/* A bad log imported into a database that is not there leaves none behind (exit 2); into
   one that holds a run it leaves that one, and its run, in place. */
Test(cli, bad_import_leaves_no_new_database)
{
	char dir[] = "/tmp/lks_test_cli_XXXXXX", good[600], bad[600], db[600], args[2048], out[4096];
	struct stat st;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(good, sizeof(good), "%s/good.jsonl", dir);
	snprintf(bad, sizeof(bad), "%s/bad.jsonl", dir);
	snprintf(db, sizeof(db), "%s/new.db", dir);
	put_file(good, "{\"step\": 1, \"loss\": 2.5}\n");
	put_file(bad, "{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2, \"loss\": \"much\"}\n");
	snprintf(args, sizeof(args), "import --format jsonl '%s' --case c --run r --db '%s'", bad,
	         db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "bad.jsonl':2:"), "%s", out);
	cr_assert_neq(stat(db, &st), 0, "'%s' was left behind", db);
	snprintf(args, sizeof(args), "import --format jsonl '%s' --case c --run r --db '%s'", good,
	         db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "import --format jsonl '%s' --case c --run s --db '%s'", bad,
	         db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	snprintf(args, sizeof(args), "export --format jsonl c/r --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "the first import is gone: %s",
	             out);
	cr_assert_not_null(strstr(out, "\"loss\":2.5"), "%s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}
