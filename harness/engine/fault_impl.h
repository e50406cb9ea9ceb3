/*
 * fault_impl.h: the table of fault kinds (fault.c: a row and the action of each) and the
 * wrappers that plant them at a rank's seams (fault_backend.c, fault_comm.c). Private to
 * the fault files.
 */
#ifndef LKS_HARNESS_FAULT_IMPL_H
#define LKS_HARNESS_FAULT_IMPL_H

#include "harness/engine/fault.h"
#include "kernels/backend.h"

/* A rank's backend around the run's, for the fault that strikes it: first, so that its
   methods find it in be->app as the struct itself. */
struct lks_fault_plant {
	lks_backend be;           /* the inner's methods, those of the kind replaced */
	const lks_backend *inner; /* the run's backend */
	const lks_fault *f;
	int rank;
	const int *step;          /* the run's step under way */
	int hits;                 /* times a tensor fault struck */
	int seen;                 /* the rank traced the fault's step */
	int last_step, ordinal;   /* the step of the last quantize met, and its count there */
	float *kept;              /* (nkept) scales kept from the first step (stale scales) */
	int nkept, capkept;
};

/* One kind of fault: a row, in lks_fault_kind's order. */
typedef struct lks_fault_row {
	const char *name;
	unsigned need, allow;   /* the keys it requires and accepts (fault.c's K_*) */
	int tensor;             /* it strikes a traced float tensor (lks_fault_fits_model) */
	int from_step;          /* it acts from its step on, else at its step only; a rank not
	                           given: every rank */
	/* whether it can act on a run of this recipe, checkpointing and world size: 0, or -1
	   (lks_err) saying why not; NULL: every run */
	int (*fits)(const lks_fault *f, int recipe, int checkpoint, int world_size);
	/* what the backend around the rank's does (fault_backend.c), NULL: nothing: before a
	   tensor is measured (the tracer's window, backend.h traced), before a cast */
	int (*traced)(struct lks_fault_plant *w, void *ctx, float *x, size_t n, const char *name,
	              int phase);
	int (*quantize)(struct lks_fault_plant *w, void *ctx, lks_quant *q);
	/* the communicator around the rank's end (fault_comm.c: lks_fault_comm's signature);
	   NULL: none */
	int (*comm)(const lks_fault *f, const int *step, lks_comm *inner, lks_comm **out);
	int host_comm;          /* its communicator works on host memory */
	int gathers;            /* it acts in a mesh group's reduce-scatter or all-gathers: the
	                           fsdp group's (fsdp > 1), else the tp group's */
	int scale_group;        /* it acts where an FP8 operand's scale group is chosen (tp > 1;
	                           its tensor is an FP8 operand); 2: with another mesh
	                           dimension's group (dp > 1) */
	int grad_copies;        /* host copies of a rank's gradient its wrapper keeps */
} lks_fault_row;

extern const lks_fault_row lks_fault_rows[LKS_FAULT_COUNT];

#endif
