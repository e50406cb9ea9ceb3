/*
 * screen.h: 'lockstep screen', the known-answer canary of a node's GPUs (DESIGN.md, GPU
 * health and screening; issue 34).
 *
 * The screen's case (cases/screen/screen_<mode>.ini) is trained on every chosen device at
 * once, each device alone (its runs of world size 1 on it, into a store of its own under
 * the work folder). Each device's runs are then
 * held, bit for bit, to the known answer:
 *   - the golden files of the runs' class where there are some (golden/cpu in reference
 *     mode, golden/cuda-sm<arch>-cublaslt in production mode): every traced value and
 *     hash of every step;
 *   - the other devices: the devices are grouped by identical traces, and a device
 *     outside a majority is the odd one out; without goldens the majority's traces are
 *     the known answer, and without a majority nothing is (the verdict is undecided).
 *
 * A device that departs, at step S of a run, is replayed: step S again, from the state
 * after step S - 1 of a device that gave the known answer (its own where none did; from
 * the initial parameters at step 0), which that device trains again and keeps (the
 * screen's runs keep no state), on the same device and on a device that gave the known
 * answer (the CPU where no GPU did, in reference mode). The class:
 *   software    every device departed alike (two at least), whatever the replays give:
 *               the same wrong bits on each are no one device's fault; or the other
 *               device departs too;
 *   transient   else, the same device now gives the known answer;
 *   persistent  it departs again, and the other device gives the known answer from the
 *               same state.
 *
 * With --mode full (collective), the GPUs also train one run together, a rank each, its
 * all-reduce on their device communicator, held to the same run on the CPU (screen_coll.c):
 * the rank where it departs names the GPU.
 *
 * Stand-ins: on the cpu backend the devices are stand-ins, each the CPU under a name of
 * its own (index, "CPU-standin-<index>"), so that all of this runs and is tested without
 * a GPU. A planted fault (LOCKSTEP_INJECT, fault.h, with two keys of the screen's own:
 * device=K strikes only device K's runs, every screened device's without it, never the
 * CPU's, the reference a replay is held to; times=once strikes the first run and not a
 * replay, times=always, the default, every run) makes a device faulty; nothing in the
 * comparison knows of it.
 */
#ifndef LKS_HARNESS_PROBE_SCREEN_H
#define LKS_HARNESS_PROBE_SCREEN_H

#include <stdint.h>
#include <stdio.h>

#include "harness/engine/case.h"
#include "harness/engine/fault.h"
#include "harness/verify/check.h"
#include "kernels/backend.h"
#include "kernels/nvml/nvml.h"

#define LKS_SCREEN_MAX 16  /* devices screened at once: NVML's limit */

typedef enum lks_screen_verdict {
	LKS_SCREEN_PASS = 0,
	LKS_SCREEN_FAIL,          /* departs from the known answer */
	LKS_SCREEN_UNDECIDED,     /* no known answer: no golden and no majority */
	LKS_SCREEN_ERROR,         /* its runs could not be made (the device, the store) */
} lks_screen_verdict;

typedef enum lks_screen_class {
	LKS_REPLAY_NONE = 0,      /* not replayed: it passed, or no step to replay */
	LKS_REPLAY_TRANSIENT,
	LKS_REPLAY_PERSISTENT,
	LKS_REPLAY_SOFTWARE,
	LKS_REPLAY_SKIPPED,       /* the budget was spent before its replay */
} lks_screen_class;

/* One device screened. */
typedef struct lks_screen_dev {
	/* who it is, as operators name it (NVML's, matched by UUID, where it has them) */
	int index;                /* as --gpus names it: CUDA's ordinal, or the stand-in's */
	char uuid[96], name[96], pci[32], serial[32];
	int standin;              /* the CPU under this name */
	/* what it did */
	lks_screen_verdict verdict;
	int golden;               /* held to golden files (else only to the other devices) */
	int group;                /* its group of identical traces (0: the largest) */
	char run[LKS_NAME_MAX];   /* the first run where it departs */
	lks_check_result div;     /* where and how (step, rank, tensor, field, bits) */
	lks_screen_class cls;     /* the replay's */
	char replay[512];         /* what the replay saw, in words */
	double seconds;           /* its runs */
	char error[512];          /* verdict ERROR: why */
	/* NVML's readings (nvml 1; a GPU NVML sees, by its UUID): before the screen and after
	   it, the XID events between, and what worsened, in words ("" nothing) */
	int nvml;
	lks_nvml_device before, after;
	int nxid;
	char findings[512];
	/* private */
	void *store;
	int64_t run_ids[64];
} lks_screen_dev;

/* The run across the node's GPUs at once (lks_screen_opts.collective): every chosen GPU a
   rank of one run, its collectives on the backend's device communicator (NCCL on CUDA, in
   the CPU's rank order), held bit for bit to the same run on the CPU's threads. */
typedef struct lks_screen_coll {
	int ran;                  /* 0: not run; note says why */
	int error;                /* it could not be made (the devices, their communicator) */
	int failed;               /* it departs from the CPU's */
	int gpu;                  /* the GPU of the rank where it departs first; -1: none */
	lks_check_result div;
	char note[256];
} lks_screen_coll;

typedef struct lks_screen_opts {
	const char *case_path;    /* the screen's case file */
	const char *golden;       /* golden files' folder; NULL: lks_golden_dir's default */
	const char *workdir;      /* each device's store goes here as gpu<index>.db */
	const lks_backend *be;    /* NULL: the cpu, as stand-ins */
	int gemm;                 /* LKS_GEMM_REFERENCE or LKS_GEMM_LIBRARY (production) */
	int threads;              /* CPU threads of each stand-in's runs; 0: cores / devices */
	int budgeted;             /* budget_s bounds the replays; 0: no bound */
	double budget_s;          /* budgeted: replays start only within this many seconds of
	                             the screen's start (0: none starts) */
	const char *inject;       /* a planted fault with device= and times=; NULL: none */
	int collective;           /* also the run across the GPUs (coll gets its result):
	                             reference mode, GPUs 0 to n - 1 */
	lks_screen_coll *coll;
	FILE *progress;           /* a line per device and replay; NULL: silent */
} lks_screen_opts;

/* Screens devs[0..n) (index, and for a GPU its uuid, set by the caller; the rest is
   filled in): every verdict, divergence and replay class. 0, or an error (lks_err) that
   stops the screen before a verdict: a bad case or plant (LKS_E_BAD_INPUT), memory. */
int lks_screen_run(const lks_screen_opts *o, lks_screen_dev *devs, int n);
/* Closes what a screen left open in devs. */
void lks_screen_release(lks_screen_dev *devs, int n);

const char *lks_screen_verdict_name(lks_screen_verdict v);
const char *lks_screen_class_name(lks_screen_class c);


#endif
