/*
 * state.h: a rank's training state after a step, as bytes: what the next step starts
 * from, so that a run resumed from it trains the steps after it bit for bit as the run
 * that kept it did ('run --resume-from', a case's resume_from, the screen's replay).
 *
 * What a step carries to the next, and nothing else: the rank's parameters, AdamW's two
 * moments (whole vectors; an FSDP rank's hold zeros outside its shard), delayed scaling's
 * amax histories and scales, and the Adam bias powers beta^t as the runner multiplied
 * them. The data, the learning rate and every activation are made anew from the step's
 * number.
 *
 * Layout (host byte order, which the header's mark tells apart; the store keeps it as a
 * blob, table states):
 *   "LKSSTAT1", u32 0x01020304, u32 slots, u64 nparams, u32 history length, i32 step,
 *   u32 world size, u32 0, f32 beta1^t, f32 beta2^t, u64 XXH3-64 of all that follows;
 *   then params, m1, m2 (nparams f32 each), then per amax slot: i32 filled, f32 cur,
 *   f32 scale, f32 history[length].
 */
#ifndef LKS_HARNESS_STATE_H
#define LKS_HARNESS_STATE_H

#include <stddef.h>
#include <stdint.h>

struct lks_runner;
struct lks_rank;

/* Rank r's state after step (R's step just done) into *blob (malloc'd, *n bytes). */
int lks_state_save(struct lks_runner *R, struct lks_rank *r, int step, void **blob, size_t *n);
/* Rank r (its memory made for R's model) set to the state blob holds, which must be of
   step and of R's model, recipe and world size; R's bias powers too. Bad bytes: LKS_E_BAD_INPUT
   (lks_err) saying what does not fit; what r held is then undefined. */
int lks_state_load(struct lks_runner *R, struct lks_rank *r, int step, const void *blob,
                   size_t n);

/* The runner's use of them: every rank of this process (the job's only one) kept in store
   as of run run_id after step; or set to what run from_run kept after step. */
struct lks_store;
int lks_state_keep(struct lks_runner *R, struct lks_store *store, int64_t run_id, int step);
int lks_state_resume(struct lks_runner *R, struct lks_store *store, int64_t from_run, int step);

/* Whether the run keeps its state after step (o's state_every and state_at). */
struct lks_runner_opts;
int lks_state_wanted(const struct lks_runner_opts *o, int step);
/* A resumed run (o->resume_run): R's ranks set to the stored state, R's first step the one
   after it; 0 for a run from step 0. Bad input where the state is missing or not of this
   run's shape. Every process of a job calls it. */
int lks_state_start(struct lks_runner *R, struct lks_store *store,
                    const struct lks_runner_opts *o);
/* A process of a job that hosts none of the run's ranks: its part in the job's collectives
   of the run's states (the resumed state sent out, each kept state gathered). */
int lks_state_idle(struct lks_runner *R, const struct lks_runner_opts *o);

#endif
