/*
 * screen_impl.h: what screen.c (the runs and their comparison) and screen_replay.c (the
 * replays) share. Private to the screen.
 */
#ifndef LKS_HARNESS_PROBE_SCREEN_IMPL_H
#define LKS_HARNESS_PROBE_SCREEN_IMPL_H

#include "harness/engine/runner.h"
#include "harness/probe/screen.h"
#include "harness/store/run.h"

/* A planted fault and the screen's keys of it (screen.h). */
struct lks_screen_plan {
	lks_fault f;
	int device;               /* -1: every device */
	int once;                 /* the first run only, not a replay */
};

struct lks_screen_ctx {
	const lks_screen_opts *o;
	lks_screen_dev *devs;
	int n;
	lks_case c;
	int loaded;
	struct lks_screen_plan plan;
	int planted;
	int fits[64];             /* the plant fits run j (its recipe, tensors, steps) */
	int threads;              /* CPU threads of a run */
	double t0;
	lks_nvml *nvml;           /* the GPUs' readings (screen_gpu.c); NULL: stand-ins */
	lks_nvml_snap before, after;
	int nsel;                 /* the GPUs NVML reads, in the screen's order */
	lks_stored_run gold[64];  /* run j's golden, where has_gold[j] */
	int has_gold[64], gold_read[64];
};

/* A device's thread. */
struct lks_screen_job {
	struct lks_screen_ctx *x;
	lks_screen_dev *d;
};

/* Where a replay starts: step 'step' alone, from the state run from_run (of the store it is
   trained into) kept after step - 1; at step 0 from the initial parameters. With keep set,
   the run that makes that state instead: steps 0 to step - 1, as the screen trained them
   (its planted fault included), keeping the state after step - 1. */
typedef struct lks_screen_train_at {
	int step;
	int64_t from_run;
	int keep;
} lks_screen_train_at;

/* The fault planted in run j on device d, a replay or not: in every run it fits, or the
   one its run=NAME names, on device=K alone, else on every device screened; NULL where
   none, and always for the CPU (d NULL), the reference, which is no device. */
const lks_fault *lks_screen_fault(const struct lks_screen_ctx *x, const lks_screen_dev *d,
                                  int j, int replay);
/* Run j of the case on device d (NULL: the CPU) into store: the whole run (at NULL), a
   replay, or the run that makes a replay's state (at); its id into *run_id. */
int lks_screen_train(struct lks_screen_ctx *x, lks_screen_dev *d, int j, lks_store *store,
                     const lks_screen_train_at *at, int64_t *run_id);
/* 1 when a and b agree bit for bit over steps [from, until) (until 0: all, and their step
   counts), 0 when not (the divergence in res), -1 on error. */
int lks_screen_same(lks_stored_run *a, lks_stored_run *b, int from, int until,
                    lks_check_result *res);
/* The GPUs named (UUID, name) and NVML's readings taken before the screen, and after it
   with the XIDs between (screen_gpu.c); nothing for stand-ins or without NVML. */
int lks_screen_identify(struct lks_screen_ctx *x);
int lks_screen_readings(struct lks_screen_ctx *x);
/* The run across the GPUs, where o->collective asks for it (screen_coll.c). */
int lks_screen_collective(struct lks_screen_ctx *x);
/* Whether the plant fits the run across n GPUs: run 0 of the case on n ranks. */
int lks_screen_coll_fits(const struct lks_screen_ctx *x);
/* Every failed device replayed and classed (screen_replay.c). */
int lks_screen_replay_all(struct lks_screen_ctx *x);

#endif
