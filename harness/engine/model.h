/*
 * model.h: the small language model every run trains (DESIGN.md, The model and data).
 *
 *   x0 = bf16(embed[tokens])                                      (T, H)
 *   block l:  [attention]  m = x_l + attn(rmsnorm(x_l) ga_l Wqkv^T) Wo^T
 *             h = rmsnorm(m) g_l;  u = h W1^T;  a = relu(u)^2;  x_{l+1} = m + a W2^T
 *   logits = rmsnorm(x_L) gf . Wh^T (BF16 operands, fp32 out);  softmax cross-entropy
 *
 * Without attention (the default, attention = none) m is x_l: a block is its MLP. With
 * attention = causal, attn is causal multi-head attention with RoPE of heads x head_dim
 * = D columns (kernels/element/attn.h), Wqkv (3D, H) and Wo (H, D). Wqkv, Wo, W1 (F, H)
 * and W2 (H, F) are the linear layers whose GEMMs follow the run's recipe (recipe.h); the
 * LM head stays in BF16 with fp32 logits and the loss in fp32/double, as frameworks do. Activations are BF16 values, weight gradients fp32, master weights fp32.
 * One lks_rank is one data-parallel replica: its parameters, gradients, activations and
 * trace; the runner (runner.c) all-reduces gradients between ranks and steps AdamW.
 */
#ifndef LKS_HARNESS_MODEL_H
#define LKS_HARNESS_MODEL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/engine/case.h"
#include "harness/engine/recipe.h"
#include "harness/engine/trace.h"
#include "kernels/backend.h"
#include "kernels/comm.h"

/* One parameter tensor inside the flat parameter vector. */
typedef struct lks_ptensor {
	char name[48];
	size_t off, n;
	int rows, cols;
	int decay;              /* weight decay applies (matrices, not gains) */
} lks_ptensor;

typedef struct lks_model {
	lks_model_cfg cfg;
	int nt;                 /* parameter tensors: embed, pb per block, final norm, head */
	lks_ptensor *t;         /* (nt) in the order above */
	size_t nparams;
	int pb;                 /* parameter tensors per block: norm, up, down; with attention
	                           attn_norm, qkv, proj before them */
	int lb;                 /* linear layers per block: up, down; with attention qkv, proj
	                           before them */
	int nlin;               /* linear layers: layers x lb; 3 amax slots each (x, w, dy) */
	int D;                  /* heads x head_dim; 0 without attention */
} lks_model;

/* Index of parameter tensors in lks_model.t, of a block l of model m. */
#define LKS_P_EMBED 0
#define LKS_P_ATTN_NORM(m, l) (1 + (m)->pb * (l))
#define LKS_P_QKV(m, l) (2 + (m)->pb * (l))
#define LKS_P_PROJ(m, l) (3 + (m)->pb * (l))
#define LKS_P_NORM(m, l) ((m)->pb * ((l) + 1) - 2)
#define LKS_P_UP(m, l) ((m)->pb * ((l) + 1) - 1)
#define LKS_P_DOWN(m, l) ((m)->pb * ((l) + 1))
#define LKS_P_FINAL_NORM(m) (1 + (m)->pb * (m)->cfg.layers)
#define LKS_P_HEAD(m) (2 + (m)->pb * (m)->cfg.layers)
/* Index of linear layers (their amax slots: 3 li + lks_src), of a block l of model m. */
#define LKS_LIN_QKV(m, l) ((m)->lb * (l))
#define LKS_LIN_PROJ(m, l) ((m)->lb * (l) + 1)
#define LKS_LIN_UP(m, l) ((m)->lb * ((l) + 1) - 2)
#define LKS_LIN_DOWN(m, l) ((m)->lb * ((l) + 1) - 1)

int lks_model_init(lks_model *m, const lks_model_cfg *cfg);
void lks_model_release(lks_model *m);
/* Place i of the flat vector (model_tensors.c): the index in m->t of the parameter tensor
   that holds it, *pad 0; or, *pad 1, of the last one before it, i lying in the padding
   that starts each tensor at a multiple of 16 floats or past the vector's end. */
int lks_model_param_at(const lks_model *m, size_t i, int *pad);
/* The trace's name of linear layer k of a block (model_tensors.c): "mlp.up", "mlp.down", and
   with attention "attn.qkv", "attn.proj" first. */
const char *lks_model_linear_name(const lks_model_cfg *cfg, int k);

/* The names a rank traces (model_tensors.c). What a rank's trace calls name, for a model
   of cfg with tokens (batch x seq) per rank: LKS_TENSOR_FLOAT with its element count in *n
   (bitflip and nan can strike it), or LKS_TENSOR_FP8 for an FP8 operand of a linear layer
   (codes and scales, beyond their reach); LKS_TENSOR_NONE when the model has no tensor of
   that name; -1 (lks_err) out of memory. */
enum { LKS_TENSOR_NONE = 0, LKS_TENSOR_FLOAT, LKS_TENSOR_FP8 };
int lks_model_tensor(const lks_model_cfg *cfg, long long tokens, const char *name, size_t *n);
/* Whether name is an FP8 operand of a linear layer of a model of cfg ("blocks.0.mlp.up.fwd.w"):
   1 with the block's linear layer (lks_model_linear_name's k), the GEMM's role and its
   operand ab (lks_role_src), else 0. */
int lks_model_fp8_operand(const lks_model_cfg *cfg, const char *name, int *lin, lks_role *role,
                          int *ab);
/* Calls fn with every name a rank of a model of cfg may trace (whatever the recipe and
   checkpointing: FP8 operands, recomputed activations, trace_optimizer's sums and moments
   and all), until fn returns non-zero;
   that value, 0 when fn never stopped it, -1 (lks_err) out of memory. */
int lks_model_tensor_each(const lks_model_cfg *cfg, int (*fn)(void *arg, const char *name),
                          void *arg);
/* Initial weights from Philox (seed, stream = tensor index + 1, index): the same on every
   rank and device. */
void lks_model_init_params(const lks_model *m, uint64_t seed, float *params);

/* Delayed scaling state of one quantized tensor (TE's amax history). */
typedef struct lks_amax_slot {
	float *hist;            /* (len) most recent first */
	int len, filled;
	float cur;              /* this step's amax, max-reduced over ranks at step end */
	float scale;            /* the scale used this step */
} lks_amax_slot;

typedef struct lks_rank {
	int rank;
	const lks_model *m;
	const lks_backend *be;
	void *bectx;
	const lks_recipe_rules *rules;
	int checkpoint;
	lks_gemm_impl gemm;     /* the run's GEMM: reference or the library's */
	int bf16;               /* activations rounded to BF16 (all recipes but fp32) */
	int T;                  /* tokens of this rank per step: batch x seq */
	float grad_scale;       /* 1 / tokens of the global batch */
	/* params to arena and qarena: the backend's memory (host memory on the CPU) */
	float *params;          /* (nparams) this replica's master weights */
	float *grads;           /* (nparams) this rank's gradients of the step */
	lks_amax_slot *slots;   /* (m->nlin linear layers x 3: x, w, dy) */
	int32_t *tok, *tgt;     /* (T) inputs and targets */
	float *xs;              /* (L+1, T, H) block inputs and the last block's output */
	float *rstd;            /* (L+1, T) */
	float *h, *u, *a;       /* per block, or one set when checkpointing: (T,H), (T,F), (T,F) */
	float *dn;              /* (L, T, H) the down projections' outputs */
	float *hf, *logits;     /* (T, H), (T, V) */
	float *dz;              /* (T, V) */
	float *gtmp;            /* (T, H) scratch */
	/* activation gradients, one set per block, so that each stays as it was traced until
	   the step ends (background tracing): gx (L+1, T, H) at each block's input and the
	   final norm's; gh (L, T, H); ga, gu (L, T, F) */
	float *gx, *gh, *ga, *gu;
	/* attention (NULL without): the RoPE table (S, hd); per block, or one set when
	   checkpointing: ha (T, H) the attention's norm, qkv and qkvr (T, 3D) before and after
	   RoPE, ao (T, D) the heads' outputs, ast (B, nh, S, 2) their rows' statistics, pr (T,
	   H) the projection, xm (T, H) the residual after it (the MLP's input); rstda (L, T)
	   the attention norms'; the gradients gm (L, T, H) at xm, go (L, T, D) at ao, gqkv (L,
	   T, 3D), gha (L, T, H) at ha */
	float *rope, *ha, *qkv, *qkvr, *ao, *ast, *pr, *xm, *rstda;
	float *gm, *go, *gqkv, *gha;
	unsigned char *arena;   /* GEMM operands of one call */
	size_t arena_size;
	unsigned char *qarena;  /* FP8 operands of the whole step, kept for background tracing */
	size_t qarena_size, qused;
	int recomputing;
	double loss;            /* sum of this rank's token losses in the step */
	/* tensor parallel (model_tp.c; tp = 1: none): the rank's index in its tp group, its
	   shares of the hidden units and heads (Fl = ffn / tp, hl = heads / tp, Dl = hl x
	   head_dim), its shard of each linear layer's weight (wl, remade from params at every
	   step, at wloff[li]), a whole tensor gathered for the trace (tpw, backend memory),
	   the host's buffers of the group's collectives (tph, 3 x tpn floats) */
	int tp, tpr, Fl, hl, Dl;
	int shards;             /* trace = shards: a split tensor traced as the rank's shard */
	float *wl, *tpw, *tph;
	size_t *wloff, tpn;
	/* sequence parallel (sp): the residual stream's rows on this rank, Ts = T / tp (T
	   without sp); its tokens (tsp, Ts), a whole (T, H) tensor gathered from the shards
	   (spw), both backend memory, and the step's tokens on the host (htok, T) */
	int sp, Ts;
	int32_t *tsp, *htok;
	float *spw;
	/* NaN/Inf in the rank's share of a tp group's collective, a partial sum or an FP8
	   operand's amax (its first: a rank's first such event only, nan_act_seen): the tensor
	   it sums into or the operand, and its non-finite count;
	   nan_act[0] = 0 where none this step (the runner clears it) */
	char nan_act[96];
	int64_t nan_act_count;
	int nan_act_seen;
	lks_tracer tr;

	/* what the runner keeps of the rank (runner.c): set by the runner, never by the model */
	struct lks_runner *R;   /* the run it is a rank of (its pool tasks reach it) */
	struct lks_fault_plant *plant;  /* the run's planted fault, where it strikes this rank
	                           (fault.h: be and comm are then its wrappers), or NULL */
	lks_comm *comm;         /* its end of the communicator */
	lks_comm *hcomm;        /* comm seen from host buffers (the mesh's groups are split
	                           from it): comm, or where comm is a device's its staged view
	                           (backend.h, lks_comm_staged) */
	float *m1, *m2;         /* (nparams) AdamW moments (backend memory) */
	float *staged;          /* (nparams) the host copy of its gradient for the all-reduce,
	                           where the backend's memory is not the host's; else NULL */
	int32_t *host_tok;      /* (2, T) its inputs and targets of the step, on the host */
	float *amax;            /* (2 x layers x 3) delayed scaling's slots, all-reduced (host) */
	float *damax;           /* the same in its backend's memory, where the communicator
	                           takes device memory (the runner's devcomm); else NULL */
	double time;            /* seconds of its forward + backward */
	int failed;             /* failed itself (1), or in a collective another's abort ended
	                           (2): an abort of another is not its failure */
	char err[512];          /* its error, recorded by its own thread */
	int nan_seen;           /* met NaN/Inf once: it scans no more */
	int nan_tensor;         /* this step's first non-finite gradient tensor, or -1 */
	int64_t nan_count;      /* its non-finite values */
	struct lks_fsdp *fsdp;  /* its shard of an FSDP run (runner_fsdp.c), or NULL */
	/* FSDP's FP8 all-gather (runner_fsdp.c), or NULL: the forward's operand q (traced as
	   name) of linear li's weight w (n floats: lks_tp_weight's) cast shard by shard and
	   gathered, in place of quantize */
	int (*fp8_gather)(struct lks_rank *r, int li, const float *w, size_t n, lks_quant *q,
	                  const char *name);
	/* called between the forward and the backward, or NULL (FSDP's reshard_after_forward:
	   the parameters dropped to the rank's shard and gathered again) */
	int (*after_forward)(struct lks_rank *r);
	lks_comm *tpc;          /* its tp group (the model's collectives), or NULL (tp = 1) */
	lks_comm *dpc;          /* its dp group, where the run's fault reduces an amax over it
	                           (amax_group), else NULL */
	const struct lks_fault *amax_fault;  /* that fault (every rank's), or NULL */
	size_t own0, own1;      /* the parameters it updates: all, or its shard's */
	float clip_coef;        /* its clip and update tasks (the pool's): the coefficient, */
	atomic_int task_failed; /* whether a task's backend call failed, */
	char task_err[256];     /* the first failure's error */
} lks_rank;

/* r comes zeroed, but for the runner's fields (those after tr); lks_rank_release frees
   what lks_rank_init made and leaves the runner's fields alone. */
int lks_rank_init(lks_rank *r, int rank, const lks_model *m, const lks_run_cfg *run,
                  int tokens_per_rank, int global_tokens, const lks_backend *be, void *bectx);
/* The bytes lks_rank_init and lks_rank_trace_on (traced) allocate for one rank, as a
   double: an estimate made before anything is allocated, of sizes that may not fit. */
double lks_rank_bytes(const lks_model *m, const lks_run_cfg *run, long long tokens_per_rank,
                      int traced);
void lks_rank_release(lks_rank *r);
/* Traces go to the background thread bg (trace.h): tensors the step keeps are measured
   there while the step goes on, FP8 operands kept for the whole step to that end. */
int lks_rank_trace_on(lks_rank *r, lks_bg *bg);

/* Tensor parallel (model_tp.c), Megatron-style: QKV and up are column-parallel (their
   weights' rows, hence heads and hidden units, split over the tp group), proj and down
   row-parallel (their weights' columns split; partial outputs summed over the group).
   Every rank keeps the whole parameter vector (the update is DP's) and computes with its
   shards. Sums over the group are rank-ordered fp32 (comm.h); a tensor split over the
   group is traced whole, its shards gathered in rank order. */
typedef enum lks_par { LKS_PAR_NONE = 0, LKS_PAR_COL, LKS_PAR_ROW } lks_par;
/* The parallel style of linear layer li of r's model (NONE when tp = 1). */
lks_par lks_tp_style(const lks_rank *r, int li);
/* Which dimension of a (rows, cols) tensor src of linear li is split over the group: 0
   rows, 1 cols, -1 none; *nb: the blocks it is split in (Wqkv and qkv: q, k and v). */
int lks_tp_split(const lks_rank *r, int li, lks_src src, int *nb);
int lks_tp_init(lks_rank *r, const lks_run_cfg *run);
void lks_tp_release(lks_rank *r);
/* This step's shards of the weights, from r->params; the shard of linear li. */
int lks_tp_weights(lks_rank *r);
const float *lks_tp_weight(const lks_rank *r, int li);
/* Where element k of linear li's weight shard (lks_tp_weight) lies in r->params (tp = 1:
   the weight's offset + k). */
size_t lks_tp_weight_index(const lks_rank *r, int li, size_t k);
/* h (n floats, host) becomes the group's NaN-winning max of it, the rank's share checked
   for NaN/Inf first (as lks_tp_sum's; what: the tensor named). */
int lks_tp_max(lks_rank *r, float *h, size_t n, const char *what);
/* x (n floats, backend memory) summed over the group in rank order, then (round: an
   activation) BF16-rounded where activations are. Before every sum the rank's partial is
   checked for NaN/Inf, traced or not: the first is recorded (nan_act) as the tensor what. */
int lks_tp_sum(lks_rank *r, float *x, size_t n, int round, const char *what);
/* x (T, H), this rank's partial output of a row-parallel layer (or a column-parallel
   layer's dgrad): summed over the group, BF16-rounded; under sequence parallel a
   reduce-scatter: x's first Ts rows get this rank's rows of the sum. */
int lks_tp_reduce(lks_rank *r, float *x, const char *what);
/* Whether a tensor of this name is traced, under tp, as a whole gathered from the group's
   shards (a copy: a fault that strikes it would strike the copy). */
int lks_tp_traced_split(const char *name);
/* Sequence parallel: the whole (T, H) from every rank's (Ts, H) rows (an all-gather along
   the sequence); x (T, H), the same on every rank, cut to this rank's rows in place; the
   rank's tokens (tsp) of the step's (tok). A rank's rows: of each sequence the positions
   [tpr S / tp, (tpr + 1) S / tp), as Megatron splits the sequence dimension. */
int lks_sp_gather(lks_rank *r, const float *local, float *whole, const char *what);
int lks_sp_slice(lks_rank *r, float *x);
int lks_sp_tokens(lks_rank *r);
/* whole (rows, cols) from each rank's shard x along dim in nb blocks (lks_tp_split), in
   rank order (every rank gets it). what: the tensor's name, its shard checked for NaN/Inf
   first (as lks_tp_sum's; NULL: a trace's copy, not checked). */
int lks_tp_gather(lks_rank *r, const float *x, int rows, int cols, int dim, int nb,
                  float *whole, const char *what);
/* Traces x, this rank's shard of a (rows, cols) tensor split along dim (0 rows, 1 cols;
   -1: x is whole) in nb blocks, as the whole tensor (gathered); tp = 1 or dim -1: x
   itself, kept (trace.h) when kept says it stays unchanged until the step ends; with
   trace = shards the shard itself (rows x cols / tp values), under the tensor's name. */
void lks_tp_trace(lks_rank *r, int kept, lks_phase ph, float *x, int rows, int cols, int dim,
                  int nb, const char *fmt, ...) __attribute__((format(printf, 9, 10)));
/* Whether, under tp, the tp group reduces the amax of the FP8 operand called name
   (blocks.0.mlp.up.fwd.w) in run of a model of cfg, by its recipe's scale group for it and
   the layer's split (lks_tp_quantize, where amax_local and amax_group act): LKS_GROUP_TP,
   else LKS_GROUP_NONE with *why, a phrase saying why not. */
lks_amax_group lks_tp_operand_group(const lks_model_cfg *cfg, const lks_run_cfg *run,
                                    const char *name, const char **why);
/* An FP8 operand q of linear li (src, the GEMM's reduction along src's rows when
   transposed) whose amax the recipe's scale group says to reduce over the tp group:
   quantized with the scales of the group's amax. name: the operand's trace name. */
int lks_tp_quantize(lks_rank *r, int li, lks_src src, int transposed, lks_quant *q,
                    const char *name, int *done);
/* q's cast counts (underflow, saturated) summed over the ranks of c, exactly. */
int lks_quant_counts_sum(lks_comm *c, lks_quant *q);
/* Traces q, this rank's shard of operand src of linear li, as the whole operand. */
int lks_tp_trace_quant(lks_rank *r, int li, lks_src src, lks_phase ph, const lks_quant *q,
                       const char *name);

/* Forward and backward of one step on r->tok / r->tgt: r->grads, r->loss, trace rows. */
int lks_rank_step(lks_rank *r);

/* Ends a step of delayed scaling: slot amaxes (already max-reduced) enter the history and
   the next step's scales are derived (margin: scale = fp8_max 2^-margin / amax). */
void lks_amax_slot_roll(lks_amax_slot *s, lks_dtype fmt, int most_recent, int margin);

#endif
