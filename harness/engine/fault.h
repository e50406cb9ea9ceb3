/*
 * fault.h: faults planted on purpose, to prove that lockstep's checks catch and locate the
 * failures FP8 training meets in the field (issue 5). A fault acts on the data of a run,
 * never on the checks: the trace records what the faulty run really computed.
 *
 *   bitflip step=S rank=R tensor=NAME element=I bit=B   a faulty device: bit B of element I
 *                                                       of the tensor flips on one rank
 *   nan step=S rank=R tensor=NAME [element=I]           element I (default 0) becomes NaN
 *   stale_bwd_scale                                     under checkpointing the backward (dy)
 *                                                       scales of fp8_delayed are never
 *                                                       updated (TransformerEngine's bug)
 *   skip_allreduce step=S rank=R                        rank R applies its local gradient
 *                                                       instead of the all-reduced sum
 *   scale_round_up [step=S] [rank=R]                    power-of-two scales rounded up
 *                                                       instead of down (from step S on)
 *   rs_drop_tail step=S rank=R [count=N]                an FSDP run's reduce-scatter leaves
 *                                                       the last N (1) elements of rank R's
 *                                                       shard unwritten (NCCL #1950)
 *   ag_stale step=S rank=R                              an FSDP run's all-gathers take rank
 *                                                       R's shard of the step before
 *   amax_local tensor=OPERAND [step=S] [rank=R]         under tp, the FP8 operand's amax is
 *                                                       its shard's, not the group's (torch-
 *                                                       titan #3109), from step S on
 *   bitflip_allreduce step=S rank=R element=I bit=B     a faulty link or buffer: bit B of
 *                                                       element I of rank R's gradient (the
 *                                                       parameter vector's order) flips as it
 *                                                       enters the all-reduce, after the
 *                                                       NaN/Inf check
 *   bitflip_allreduce_out step=S rank=R element=I bit=B the same in the sum the all-reduce
 *                                                       gives rank R (the others' is whole)
 *   amax_group tensor=OPERAND [step=S] [rank=R]         under dp x tp, the FP8 operand's amax
 *                                                       reduced over the dp group instead of
 *                                                       the tp group (Megatron-LM PR #442)
 *
 * A run takes one, as its key 'inject = ...' or from the environment variable
 * LOCKSTEP_INJECT (same syntax, with an optional run=NAME to aim at one run), so that a
 * bisect combo can plant one. Tensors are named as in the trace (lockstep list shows a
 * case; the run's tensors table has them all); bitflip and nan act where the tensor is
 * traced, before the model goes on with it, and in the forward, not the recompute.
 *
 * A fault is planted at the seams, never in the model, the tracer or the runner: a
 * backend around the run's (fault_backend.c: bitflip, nan, scale_round_up,
 * stale_bwd_scale), a communicator around the struck rank's end (fault_comm.c:
 * skip_allreduce, bitflip_allreduce(_out), rs_drop_tail, ag_stale), and the choice of an operand's scale group
 * (model_tp.c asks lks_fault_amax_local and lks_fault_amax_group: amax_local,
 * amax_group), each rank's own
 * (lks_fault_plant_rank). A kind is one row of the table
 * in fault.c (its name, keys, the runs it fits, the seam it wraps) and what its wrapper
 * does.
 */
#ifndef LKS_HARNESS_FAULT_H
#define LKS_HARNESS_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/comm.h"

typedef enum lks_fault_kind {
	LKS_FAULT_NONE = 0,
	LKS_FAULT_BITFLIP,
	LKS_FAULT_NAN,
	LKS_FAULT_STALE_BWD_SCALE,
	LKS_FAULT_SKIP_ALLREDUCE,
	LKS_FAULT_SCALE_ROUND_UP,
	LKS_FAULT_RS_DROP_TAIL,
	LKS_FAULT_AG_STALE,
	LKS_FAULT_AMAX_LOCAL,
	LKS_FAULT_AMAX_GROUP,
	LKS_FAULT_BITFLIP_ALLREDUCE,
	LKS_FAULT_BITFLIP_ALLREDUCE_OUT,
	LKS_FAULT_COUNT
} lks_fault_kind;

typedef struct lks_fault {
	lks_fault_kind kind;
	int step, rank;         /* -1: any (scale_round_up only) */
	char tensor[128];
	int64_t element;
	int64_t count;          /* rs_drop_tail: the elements lost (0: 1) */
	int bit;
	char run[64];           /* LOCKSTEP_INJECT's run=NAME; empty: every run */
} lks_fault;

#define LKS_INJECT_ENV "LOCKSTEP_INJECT"

const char *lks_fault_kind_name(lks_fault_kind k);

/* Parses a spec ("bitflip step=3 rank=1 tensor=blocks.0.mlp.up.out element=17 bit=30");
   errors (lks_err) say what is wrong. run=NAME is accepted only when allow_run. */
int lks_fault_parse(const char *spec, int allow_run, lks_fault *out);

/* Writes the spec back in the parsed syntax (stored with the run's options). */
void lks_fault_format(const lks_fault *f, char *buf, size_t size);

/* Whether the fault can act on a run with this recipe (an lks_recipe: what a fault needs
   of one is told from its rules in the recipe table) and checkpointing; an error (lks_err)
   says why not, naming the recipes that fit. */
int lks_fault_fits(const lks_fault *f, int recipe, int checkpoint, int world_size, int steps);

/* Whether the fault fits run r's mesh (its fsdp or tp groups of its world_size ranks): the
   faults of a reduce-scatter or all-gather need fsdp > 1 (they strike the fsdp group's) or
   tp > 1 (the tp group's; rs_drop_tail with sequence_parallel = on), skip_allreduce
   fsdp = 1 and tp = 1 (not built under tp), amax_local tp > 1, amax_group also
   world_size > tp; under tp bitflip and nan strike a tensor the rank traces itself, not
   one traced whole, gathered from the group's shards (with trace = shards, or for a tensor
   no shard splits); an error (lks_err) says why not. */
struct lks_run_cfg;
int lks_fault_fits_mesh(const lks_fault *f, const struct lks_run_cfg *r);

/* Whether the fault acts in run r of model m: bitflip and nan, whether the tensor is one
   that a rank traces as floats, and the element inside it (tokens: a rank's batch x seq);
   bitflip_allreduce(_out), whether a parameter's gradient holds the element;
   rs_drop_tail in an FSDP run, one of the places it drops; amax_local and amax_group, an
   FP8 operand whose amax r's tp group reduces (lks_tp_operand_group); an error (lks_err)
   says why not: an FP8 operand, a name the model does not have, an element past the end,
   places that are padding between tensors or after the last, an operand no tp group
   reduces. */
struct lks_model_cfg;
int lks_fault_fits_model(const lks_fault *f, const struct lks_run_cfg *r,
                         const struct lks_model_cfg *m, long long tokens);

/* bitflip and nan: applied to x (n floats, traced as name) when the fault aims at this
   step, rank and tensor; returns 1 when applied, 0 when not aimed here, -1 (lks_err) when
   the element is out of range. */
int lks_fault_tensor(const lks_fault *f, int step, int rank, const char *name, float *x,
                     size_t n);
/* Its two halves, for a tensor in a backend's memory: whether the fault aims at this step,
   rank and tensor (1, the element in *at; 0 not; -1 out of range, as above), and what it
   does to that one element, read to the host. */
int lks_fault_aim(const lks_fault *f, int step, int rank, const char *name, size_t n,
                  size_t *at);
void lks_fault_strike(const lks_fault *f, float *v);

/* Whether the fault acts on this step and rank (its kind's rule: skip_allreduce at one
   step, scale_round_up from its step on). */
int lks_fault_here(const lks_fault *f, lks_fault_kind kind, int step, int rank);

/* The faults in a collective (fault_comm.c): *out wraps inner, the end of the rank it
   strikes; at the fault's step (while *step, the rank's step under way, is it)
   skip_allreduce's all-reduce sum gives the others the sum as usual and leaves this rank
   its own x, rs_drop_tail's reduce-scatter and ag_stale's all-gathers are struck. Closing
   *out closes inner. */
int lks_fault_comm(const lks_fault *f, const int *step, lks_comm *inner, lks_comm **out);
/* The same around rank's end *c of a mesh group split from the world (fsdp_group: the fsdp
   group, else the tp group), where f acts in that group's reduce-scatter or all-gathers
   and strikes this rank (lks_fault_fits_mesh: the fsdp group's where fsdp > 1, else the
   tp group's); else *c is left as it is. Where such a group is the world, the world's
   end is wrapped already (lks_fault_plant_rank). */
int lks_fault_group(const lks_fault *f, const struct lks_run_cfg *r, int rank,
                    const int *step, int fsdp_group, lks_comm **c);
/* A collective of the trace's copy of a tensor (gathered whole from a group's shards), not
   of the run's data, is under way in this thread (on 1, then 0): the communicator faults
   pass it over and do not count it, so that a fault changes what the run computes and not
   only what its trace shows. */
void lks_fault_copy(int on);

/* ---- a fault planted in a rank's seams ---- */

struct lks_backend;
typedef struct lks_fault_plant lks_fault_plant;

/* Plants f in the seams of rank (of the run): *be, the run's backend, becomes a wrapper
   around it, and *comm, the rank's end of the communicator, a wrapper around it (which
   closing *comm closes), where f's kind acts there and on this rank; step: the run's step
   under way. *out (NULL where nothing was planted) is released by lks_fault_unplant, after
   the rank's last use of *be. */
int lks_fault_plant_rank(const lks_fault *f, int rank, const int *step,
                    const struct lks_backend **be, lks_comm **comm, lks_fault_plant **out);
/* A bitflip or nan whose rank traced its step without meeting its tensor, an amax_local or
   amax_group whose rank reached its step and never met its operand: -1 (lks_err) naming
   the tensor; else 0. */
int lks_fault_plant_check(const lks_fault_plant *p);
void lks_fault_unplant(lks_fault_plant *p);
/* amax_local: whether the FP8 operand called name takes its own amax instead of its scale
   group's on this rank and step (p: the rank's plant, or NULL). amax_group: whether every
   rank of the run (f, the run's fault) reduces the amax of operand name over the dp group
   too at step, the collective the struck ranks take instead of the tp group's; and whether
   this rank is struck (lks_fault_amax_local's p and name). */
int lks_fault_amax_local(lks_fault_plant *p, const char *name);
int lks_fault_amax_group(const lks_fault *f, int step, const char *name);
int lks_fault_amax_group_here(lks_fault_plant *p, const char *name);

/* Whether f's wrapper of a communicator works on host memory: every rank of the run then
   keeps the host's ends (no device communicator). */
int lks_fault_host_comm(const lks_fault *f);
/* Whether fault kind k acts through what earlier steps left (stale_bwd_scale, ag_stale):
   a run resumed from another's state, or a step replayed from it, cannot have it. */
int lks_fault_keeps_state(lks_fault_kind k);
/* Whether f acts in a run resumed after step resume_step, which trains only the steps
   after it: not a kind that keeps what earlier steps did, nor a fault of one step at or
   before it (one from a step on acts in the steps after); an error (lks_err) says why not. */
int lks_fault_fits_resumed(const lks_fault *f, int resume_step);
/* The bytes f's wrappers take in a run with nparams parameters, at most. */
double lks_fault_bytes(const lks_fault *f, size_t nparams);

#endif
