/*
 * test_cuda_module.c: the CUDA backend as a module (kernels/cuda/module.h), as the program
 * meets it. The program links no CUDA library (ldd) and loads none for --help or an import
 * (LD_DEBUG=libs), but does for 'env', through lockstep-cuda.so; the module is looked for
 * in $LKS_CUDA_MODULE, beside the program, then one folder up, and one that cannot be found
 * or loaded is an infrastructure failure (exit 3) naming where it looked and dlerror's text,
 * while cpu runs go on. The registry's 'cuda' row takes the module's methods at its first
 * open. Built only with the CUDA backend.
 *
 * Suite cuda_module_device (its own ctest entry): --backend cuda gets the CUDA runtime's own
 * "no device" answer through the module; where a device is here that answer differs, and
 * the test says it skipped (ctest's SKIP_REGULAR_EXPRESSION).
 * LKS_BIN, LKS_CUDA_MODULE and NOT_A_MODULE (a shared library that is not lockstep's) are
 * set by tests/kernels/CMakeLists.txt.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_bin.h"
#include "kernels/backend.h"
#include "kernels/cuda/module.h"
#include "kernels/err.h"

/* A case of one small layer, trained on the backend --backend names. */
static const char tiny_case[] =
	"[case]\nsteps = 1\n[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\n"
	"batch = 2\n[run a]\nrecipe = bf16\n";

struct tmp {
	char dir[64];
	char ini[128];   /* tiny_case */
	char gpu[128];   /* a case whose run asks for backend = cuda */
	char log[128];   /* a jsonl log of two steps */
};

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static struct tmp t;  /* the test's folder (each test runs in a process of its own) */

static void tmp_setup(void)
{
	char text[512];

	snprintf(t.dir, sizeof(t.dir), "/tmp/lks_test_cuda_module_XXXXXX");
	cr_assert_not_null(mkdtemp(t.dir));
	snprintf(t.ini, sizeof(t.ini), "%s/tiny.ini", t.dir);
	snprintf(t.gpu, sizeof(t.gpu), "%s/gpu.ini", t.dir);
	snprintf(t.log, sizeof(t.log), "%s/run.jsonl", t.dir);
	put(t.ini, tiny_case);
	snprintf(text, sizeof(text), "%s[run g]\nrecipe = bf16\nbackend = cuda\n", tiny_case);
	put(t.gpu, text);
	put(t.log, "{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2, \"loss\": 2.25}\n");
}

static void tmp_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t.dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(cuda_module, .init = tmp_setup, .fini = tmp_teardown);
TestSuite(cuda_module_device, .init = tmp_setup, .fini = tmp_teardown);

/* The lines of the shell command cmd's output (stderr included) that hold word. */
static int lines_with(const char *cmd, const char *word)
{
	char sh[2048], out[32];

	snprintf(sh, sizeof(sh), "{ %s; } 2>&1 | grep -c -- '%s'", cmd, word);
	lks_run_sh(sh, out, sizeof(out));
	return atoi(out);
}

/* Runs 'LKS_BIN args' with LD_DEBUG=libs, which names every library the dynamic linker
   loads (dlopen'ed ones too), into files of t.dir; 1 where one of them holds word, 0
   where none does. The command must exit 0. */
static int loads(const char *args, const char *word)
{
	char env[256], cmd[512], out[4096];
	int n;

	snprintf(env, sizeof(env), "LKS_CUDA_MODULE= LD_DEBUG=libs LD_DEBUG_OUTPUT='%s/ld'",
	         t.dir);
	cr_assert_eq(lks_run_bin(env, args, out, sizeof(out)), 0, "%s: %s", args, out);
	snprintf(cmd, sizeof(cmd), "cat '%s'/ld.*", t.dir);
	cr_assert_gt(lines_with(cmd, "find library="), 0, "no LD_DEBUG output of %s", args);
	n = lines_with(cmd, word);
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/ld.*", t.dir);
	cr_assert_eq(system(cmd), 0);
	return n > 0;
}

static const char *const cuda_libs[] = { "libcudart", "libcublas", "libnccl" };

Test(cuda_module, the_program_links_no_cuda_library)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "ldd '%s'", LKS_BIN);
	for (size_t i = 0; i < sizeof(cuda_libs) / sizeof(cuda_libs[0]); i++)
		cr_assert_eq(lines_with(cmd, cuda_libs[i]), 0, "lockstep needs %s", cuda_libs[i]);
	/* the same reading finds them in the module: ldd is read right */
	snprintf(cmd, sizeof(cmd), "ldd '%s'", LKS_CUDA_MODULE);
	cr_assert_gt(lines_with(cmd, "libcublasLt"), 0, "%s does not need libcublasLt",
	             LKS_CUDA_MODULE);
	cr_assert_gt(lines_with(cmd, "libcudart"), 0, "%s does not need libcudart",
	             LKS_CUDA_MODULE);
}

Test(cuda_module, help_import_and_list_load_no_cuda_library_and_env_loads_them)
{
	char args[3][512];

	snprintf(args[0], sizeof(args[0]), "--help");
	snprintf(args[1], sizeof(args[1]), "import --format jsonl '%s' --case c --run r --db "
	         "'%s/i.db'", t.log, t.dir);
	snprintf(args[2], sizeof(args[2]), "list '%s'", t.gpu);  /* a run on cuda, listed */
	for (int a = 0; a < 3; a++) {
		for (size_t i = 0; i < sizeof(cuda_libs) / sizeof(cuda_libs[0]); i++)
			cr_assert(!loads(args[a], cuda_libs[i]), "'%s' loads %s", args[a],
			          cuda_libs[i]);
		cr_assert(!loads(args[a], "lockstep-cuda.so"), "'%s' loads the module",
		          args[a]);
	}
	/* 'env' makes a fingerprint: the CUDA libraries' versions, from the module */
	cr_assert(loads("env", "calling init: .*lockstep-cuda.so"));
	cr_assert(loads("env", "calling init: .*libcublasLt"));
}

Test(cuda_module, a_module_that_cannot_be_loaded_is_an_infrastructure_failure)
{
	char env[256], args[1024], out[8192], want[512];

	snprintf(env, sizeof(env), "LKS_CUDA_MODULE='%s/none.so'", t.dir);
	snprintf(want, sizeof(want), "cannot load the cuda backend from LKS_CUDA_MODULE="
	         "'%s/none.so': %s/none.so: cannot open shared object file: No such file or "
	         "directory", t.dir, t.dir);
	/* a run on cuda: left out, naming the file and dlerror's text (exit 3) */
	snprintf(args, sizeof(args), "run --quiet --backend cuda --db '%s/r.db' '%s'", t.dir,
	         t.ini);
	cr_assert_eq(lks_run_bin(env, args, out, sizeof(out)), 3, "%s", out);
	cr_assert_not_null(strstr(out, "backend 'cuda' cannot be opened: "), "%s", out);
	cr_assert_not_null(strstr(out, want), "%s", out);
	cr_assert_eq(lks_run_bin(env, "bench gemm --backend cuda", out, sizeof(out)), 3, "%s", out);
	cr_assert_not_null(strstr(out, "bench gemm: cannot load the cuda backend"), "%s", out);
	/* a cpu run needs no CUDA: it runs, its fingerprint says why the versions are missing */
	snprintf(args, sizeof(args), "run --quiet --db '%s/r.db' '%s'", t.dir, t.ini);
	cr_assert_eq(lks_run_bin(env, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(lks_run_bin(env, "env --json", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"cuda\": \"not loaded: cannot load the cuda backend"),
	                   "%s", out);
	cr_assert_null(strstr(out, "cuda.runtime"), "%s", out);
	/* a shared library that is not lockstep's cuda backend */
	snprintf(env, sizeof(env), "LKS_CUDA_MODULE='%s'", NOT_A_MODULE);
	cr_assert_eq(lks_run_bin(env, "bench gemm --backend cuda", out, sizeof(out)), 3, "%s", out);
	cr_assert_not_null(strstr(out, "is not lockstep's cuda backend: "), "%s", out);
	cr_assert_not_null(strstr(out, "lks_cuda_module_entry"), "dlerror's text: %s", out);
}

/* In this process (the module one folder up): until the first open, the registry's row
   has open and open_rank only; after it, whether a device opened or not, every other method
   is the module's, and open and open_rank stay the row's. */
Test(cuda_module, the_registry_row_takes_the_module_methods_at_its_first_open)
{
	const lks_backend *be = lks_backend_find("cuda"), *mod;
	const lks_cuda_module *m;
	const size_t open_end = offsetof(lks_backend, open) + sizeof(be->open);
	const size_t rank_at = offsetof(lks_backend, open_rank);
	const size_t rank_end = rank_at + sizeof(be->open_rank);
	void *ctx = NULL;

	cr_assert_not_null(be, "%s", lks_errmsg());
	cr_assert(LKS_BE_HAS(be, open) && LKS_BE_HAS(be, open_rank));
	cr_assert(!LKS_BE_HAS(be, close) && !LKS_BE_HAS(be, gemm) && !LKS_BE_HAS(be, comm));
	if (lks_be_open(be, 1, &ctx) == 0)
		lks_be_close(be, ctx);
	else  /* the runtime's reason, in this thread: the module's lks_err is the program's */
		cr_assert_not_null(strstr(lks_errmsg(), "cuda: no usable CUDA device: "), "%s",
		                   lks_errmsg());
	cr_assert_not_null(m = lks_cuda_module_load(), "%s", lks_errmsg());
	mod = m->backend;
	cr_assert_str_eq(be->name, "cuda");
	cr_assert(be != mod && be->open != mod->open && be->open_rank != mod->open_rank);
	cr_assert(be->close == mod->close && be->gemm == mod->gemm && be->quantize == mod->quantize
	          && be->nonfinite == mod->nonfinite && be->gemm_plans == mod->gemm_plans
	          && be->comm == mod->comm && be->host_memory == NULL);
	cr_assert_eq(memcmp((const char *)be + open_end, (const char *)mod + open_end,
	                    rank_at - open_end), 0);
	cr_assert_eq(memcmp((const char *)be + rank_end, (const char *)mod + rank_end,
	                    sizeof(lks_backend) - rank_end), 0);
}

/* A copy of the program in dir/a/b/: the module beside it, else in dir/a/, else nowhere */
Test(cuda_module, the_module_is_looked_for_beside_the_program_then_one_folder_up)
{
	char bin[256], cmd[1024], out[8192], want[1024];

	snprintf(bin, sizeof(bin), "%s/a/b/lockstep", t.dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/a/b' && cp '%s' '%s'", t.dir, LKS_BIN, bin);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	/* nowhere: both places named, each with dlerror's text; env says so (cut short: a
	   fingerprint's value) and goes on */
	snprintf(cmd, sizeof(cmd), "LKS_CUDA_MODULE= '%s' bench gemm --backend cuda 2>&1", bin);
	cr_assert_eq(lks_run_sh(cmd, out, sizeof(out)), 3, "%s", out);
	snprintf(want, sizeof(want), "bench gemm: cannot find the cuda backend (lockstep-cuda.so "
	         "beside the program, then one folder up; LKS_CUDA_MODULE names another): "
	         "%s/a/b/lockstep-cuda.so: cannot open shared object file: No such file or "
	         "directory; %s/a/lockstep-cuda.so: cannot open shared object file: No such file "
	         "or directory\n", t.dir, t.dir);
	cr_assert_not_null(strstr(out, want), "%s", out);
	snprintf(cmd, sizeof(cmd), "LKS_CUDA_MODULE= '%s' env 2>&1", bin);
	cr_assert_eq(lks_run_sh(cmd, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "not loaded: cannot find the cuda backend"), "%s", out);
	/* one folder up (as for the tests in build/tests/) */
	snprintf(cmd, sizeof(cmd), "ln -s '%s' '%s/a/lockstep-cuda.so'", LKS_CUDA_MODULE, t.dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(cmd, sizeof(cmd), "LKS_CUDA_MODULE= '%s' env 2>&1", bin);
	cr_assert_eq(lks_run_sh(cmd, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "cuda.runtime"), "%s", out);
	/* beside it first: a file there that does not load is the answer, not one up */
	snprintf(cmd, sizeof(cmd), "echo 'not a module' > '%s/a/b/lockstep-cuda.so'", t.dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(cmd, sizeof(cmd), "LKS_CUDA_MODULE= '%s' env 2>&1", bin);
	cr_assert_eq(lks_run_sh(cmd, out, sizeof(out)), 0, "%s", out);
	snprintf(want, sizeof(want), "not loaded: cannot load the cuda backend: "
	         "%s/a/b/lockstep-cuda.so: ", t.dir);
	cr_assert_not_null(strstr(out, want), "%s", out);
	/* $LKS_CUDA_MODULE before both */
	snprintf(cmd, sizeof(cmd), "LKS_CUDA_MODULE='%s' '%s' env 2>&1", LKS_CUDA_MODULE, bin);
	cr_assert_eq(lks_run_sh(cmd, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "cuda.runtime"), "%s", out);
}

/* --backend cuda, the module found beside the program: without a device, the CUDA
   runtime's own reason, which only the module's code can give */
Test(cuda_module_device, run_backend_cuda_gets_the_runtime_answer_through_the_module)
{
	char env[256], args[1024], out[8192];
	lks_cuda_info info;

	cr_assert_eq(lks_cuda_module_info(&info), 0, "%s", lks_errmsg());
	if (info.device_count > 0) {
		fprintf(stderr, "test_cuda_module: skipped, a CUDA device is here: %s\n",
		        info.device0);
		cr_skip_test("a CUDA device is here: gpu_backend runs the module's backend");
	}
	snprintf(args, sizeof(args), "run --quiet --backend cuda --db '%s/r.db' '%s'", t.dir,
	         t.ini);
	cr_assert_eq(lks_run_bin("LKS_CUDA_MODULE=", args, out, sizeof(out)), 3, "%s", out);
	cr_assert_not_null(strstr(out, "backend 'cuda' cannot be opened: cuda: no usable CUDA "
	                           "device: "), "%s", out);
	cr_assert_not_null(strstr(out, info.device_error), "%s", out);
	/* and only the module gives it: without one, another reason */
	snprintf(env, sizeof(env), "LKS_CUDA_MODULE='%s/none.so'", t.dir);
	cr_assert_eq(lks_run_bin(env, args, out, sizeof(out)), 3, "%s", out);
	cr_assert_null(strstr(out, "no usable CUDA device"), "%s", out);
	cr_assert_not_null(strstr(out, "cannot load the cuda backend"), "%s", out);
}
