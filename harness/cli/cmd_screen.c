/*
 * cmd_screen.c: 'lockstep screen': its options, the devices chosen, the screen
 * (harness/probe/screen.h), and what it says: a line per device on the terminal, a JSON
 * document for fleets and JUnit (screen_out.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/cli/cmd.h"
#include "harness/cli/screen_out.h"
#include "harness/engine/recipe.h"
#include "harness/probe/screen.h"
#include "harness/store/trace_store.h"
#include "kernels/backend.h"
#include "kernels/err.h"
#if LKS_HAVE_CUDA
#include "kernels/cuda/module.h"
#endif

static const char lks_screen_usage[] =
	"usage: lockstep screen [options]\n"
	"\n"
	"The known-answer canary of a node: the screen's case (cases/screen/screen_MODE.ini)\n"
	"trained on every chosen GPU at once, each alone, and each GPU's every traced value and\n"
	"hash of every step held bit for bit to the goldens of its class (golden/cpu in\n"
	"reference mode, golden/cuda-sm<arch>-cublaslt with --gemm cublaslt) and to the other\n"
	"GPUs (a class without goldens still finds the odd GPU out). A GPU that departs is\n"
	"replayed: the failing step again from the state of the step before (a healthy GPU's),\n"
	"on it and on a GPU that gave the known answer, and the cause named: software (every\n"
	"GPU departs alike, whatever the replay gives, or the other departs too), transient\n"
	"(it now gives the known answer) or persistent (it departs again; the other does\n"
	"not).\n"
	"\n"
	"On --backend cpu the devices are stand-ins, the CPU under names of their own, so that\n"
	"the screen itself can be tried anywhere; LOCKSTEP_INJECT plants a fault in them, with\n"
	"device=K (only stand-in K; else every one, never the CPU a replay is held to) and\n"
	"times=once (not in a replay), e.g.\n"
	"  LOCKSTEP_INJECT='bitflip step=2 rank=0 tensor=blocks.0.mlp.up.out element=7 bit=22\n"
	"  device=2' lockstep screen --backend cpu --standins 4\n"
	"\n"
	"options:\n";

static const char lks_screen_tail[] =
	"\n"
	"exit codes: 0 every device gave the known answer, 1 a device departed (or no known\n"
	"            answer: no golden and no majority), 2 bad usage or a bad case or plant,\n"
	"            3 a device's runs could not be made (the JSON says which)\n";

struct lks_screen_args {
	const char *backend, *gpus, *json, *junit, *db, *dir, *cases, *golden;
	int mode, gemm, standins, keep;
	double budget;
};

static const char *const lks_modes[] = { "quick", "full", NULL };
static const char *const lks_gemms[] = { "reference", "cublaslt", NULL };

/* --gpus all|I,J,...: the devices' indices (of count) into idx; their number, or -1 after
   saying what is wrong. */
static int lks_screen_pick(const char *gpus, int count, int *idx)
{
	const char *p = gpus;
	int n = 0;

	if (!gpus || !strcmp(gpus, "all")) {
		for (n = 0; n < count && n < LKS_SCREEN_MAX; n++)
			idx[n] = n;
		return n;
	}
	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno || v < 0 || v >= count || (*end && *end != ',')
		    || (*end == ',' && !end[1]))  /* "0,": a number left out */
			return lks_usage("screen: --gpus %s: want all or indices from 0 to %d, "
			                 "e.g. 0,2,5", gpus, count - 1), -1;
		for (int i = 0; i < n; i++)
			if (idx[i] == v)
				return lks_usage("screen: --gpus %s: %ld twice", gpus, v), -1;
		if (n == LKS_SCREEN_MAX)
			return lks_usage("screen: --gpus %s: at most %d at once", gpus,
			                 LKS_SCREEN_MAX), -1;
		idx[n++] = (int)v;
		p = *end ? end + 1 : end;
	}
	return n ? n : (lks_usage("screen: --gpus is empty"), -1);
}

/* How many devices the backend has: stand-ins on the cpu; the GPUs CUDA sees (0 where it
   sees none, or cannot be loaded). */
static int lks_screen_count(const struct lks_screen_args *a, const lks_backend *be)
{
	if (!be || lks_be_host_memory(be))
		return a->standins;
#if LKS_HAVE_CUDA
	lks_cuda_info info;

	if (!strcmp(be->name, "cuda") && lks_cuda_module_info(&info) == 0)
		return info.device_count;
#endif
	return 0;
}

static int lks_screen_parse(int argc, char **argv, struct lks_screen_args *a)
{
	const lks_option opts[] = {
		LKS_OPT_STRING("--backend", "NAME", &a->backend,
		               "cuda (the GPUs; the default in a build with CUDA) or cpu (stand-ins)"),
		LKS_OPT_STRING("--gpus", "all|LIST", &a->gpus,
		               "the devices screened, by index: all (default) or 0,2,5"),
		LKS_OPT_INT("--standins", "N", &a->standins, 1, LKS_SCREEN_MAX,
		            "--backend cpu: how many stand-in devices (default 4)"),
		LKS_OPT_CHOICE("--mode", "quick|full", &a->mode, lks_modes,
		               "quick (the default: BF16, FP8 rowwise with checkpointing, FP8\n"
		               "tensorwise) or full (every recipe, delayed scaling with checkpoint\n"
		               "recompute, a wider model; and with 2 GPUs or more a run across\n"
		               "them, a rank each, its all-reduce on NCCL in the CPU's order, held\n"
		               "to the same run on the CPU). Meant for about 2 s a GPU (quick) and\n"
		               "60 s at most (full); not yet timed on a GPU"),
		LKS_OPT_CHOICE("--gemm", "IMPL", &a->gemm, lks_gemms,
		               "reference (the CPU's bits, golden/cpu; default) or cublaslt\n"
		               "(production mode, the goldens of the GPU's class)"),
		LKS_OPT_DOUBLE("--budget", "S", &a->budget, 0, 1e9,
		               "no replay starts after S seconds of the screen (0: none\n"
		               "starts; default: no bound)"),
		LKS_OPT_PATH("--json", "FILE", &a->json, "the node's document: every device's identity,\n"
		             "verdict, first divergence, replay class and readings"),
		LKS_OPT_PATH("--junit", "FILE", &a->junit, "a testcase per device"),
		LKS_OPT_PATH("--db", "FILE", &a->db, "keep the node's document in this database too\n"
		             "(table screens), for 'lockstep report' and the fleet's history"),
		LKS_OPT_PATH("--dir", "DIR", &a->dir, "keep each device's database here (gpuN.db);\n"
		             "default: a temporary folder, removed"),
		LKS_OPT_PATH("--cases", "DIR", &a->cases, "the screen's cases (default cases/screen)"),
		LKS_OPT_PATH("--golden", "DIR", &a->golden,
		             "where golden files are (default: $LKS_GOLDEN_DIR, else golden)"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "screen", .usage = lks_screen_usage,
	                          .tail = lks_screen_tail, .width = 18, .ctx = a };

	a->standins = 4;
	a->budget = -1;  /* not given: no bound (0 is a budget: no replay) */
	a->cases = "cases/screen";
	return lks_opt_parse(&cmd, opts, argc, argv, NULL);
}

int cmd_screen(int argc, char **argv)
{
	struct lks_screen_args a = { 0 };
	lks_screen_dev devs[LKS_SCREEN_MAX];
	lks_screen_opts o = { 0 };
	lks_screen_coll coll = { 0 };
	lks_screen_sink sink = { 0 };
	const lks_backend *be = NULL;
	char path[600], tmp[] = "/tmp/lks_screen_XXXXXX";
	int idx[LKS_SCREEN_MAX], n, rc, count;
	struct timespec t0, t1;

	if ((rc = lks_screen_parse(argc, argv, &a)) != 0)
		return lks_opt_exit(rc);
	if (a.backend && strcmp(a.backend, "cpu") && !(be = lks_backend_find(a.backend)))
		return lks_opt_exit(lks_usage("screen: %s", lks_errmsg()));
	if (!a.backend && !(be = lks_backend_find("cuda")))
		return lks_opt_exit(lks_usage("screen: this build has no cuda backend: "
		                              "--backend cpu screens CPU stand-ins"));
	if ((count = lks_screen_count(&a, be)) <= 0)
		return lks_opt_exit(lks_usage("screen: backend '%s' sees no device here%s",
		                              be ? be->name : "cpu", be ? ": --backend cpu screens "
		                              "CPU stand-ins" : ""));
	if ((n = lks_screen_pick(a.gpus, count, idx)) < 0)
		return LKS_EXIT_USAGE;
	memset(devs, 0, sizeof(devs));
	for (int i = 0; i < n; i++)
		devs[i].index = idx[i];
	snprintf(path, sizeof(path), "%s/screen_%s.ini", a.cases, lks_modes[a.mode]);
	/* before the screen: a database that cannot be kept to is known before its minutes */
	if (a.db && (rc = lks_store_open(a.db, &sink.db)) != 0) {
		fprintf(stderr, "lockstep: screen: %s\n", lks_errmsg());
		return lks_exit_code(rc);
	}
	if (a.dir && mkdir(a.dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "lockstep: screen: cannot make '%s': %s\n", a.dir, strerror(errno));
		lks_store_close(sink.db);
		return LKS_EXIT_INFRA;
	}
	if (!a.dir && !mkdtemp(tmp)) {
		fprintf(stderr, "lockstep: screen: cannot make a temporary folder: %s\n",
		        strerror(errno));
		lks_store_close(sink.db);
		return LKS_EXIT_INFRA;
	}
	o = (lks_screen_opts){ .case_path = path, .golden = a.golden, .workdir = a.dir ? a.dir : tmp,
	                       .collective = a.mode == 1, .coll = &coll,
	                       .be = be, .budgeted = a.budget >= 0,
	                       .budget_s = a.budget, .progress = stderr,
	                       .gemm = a.gemm ? LKS_GEMM_LIBRARY : LKS_GEMM_REFERENCE,
	                       .inject = getenv(LKS_INJECT_ENV) };
	lks_screen_sink_start(&sink);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = lks_screen_run(&o, devs, n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	lks_screen_release(devs, n);
	if (!a.dir)
		lks_screen_out_clean(tmp, devs, n);
	if (rc) {
		fprintf(stderr, "lockstep: screen: %s\n", lks_errmsg());
		lks_store_close(sink.db);
		return lks_exit_code(rc);
	}
	sink.json = a.json;
	sink.junit = a.junit;
	sink.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	rc = lks_screen_out(&o, lks_modes[a.mode], devs, n, &sink);
	lks_store_close(sink.db);
	return rc;
}
