/*
 * check_kind.h: the check kinds and the metrics of close, as tables (check_kind.c).
 *
 * One row per kind says its name in case files, how many runs it compares, the keys of
 * [check NAME] it reads beyond the common ones and what it needs of its runs (the case
 * parser validates a check by its row), what 'lockstep list' shows of it, and its column
 * in 'lockstep bench detect' or why it has none. How a kind is evaluated is verify's:
 * check.c has one function per kind, in a table indexed by lks_check_kind. Adding a kind
 * is a value of lks_check_kind, its row here, and its function there.
 */
#ifndef LKS_HARNESS_CHECK_KIND_H
#define LKS_HARNESS_CHECK_KIND_H

#include <stddef.h>

typedef enum lks_check_kind {
	LKS_CHECK_BITWISE = 0,
	LKS_CHECK_CLOSE,
	LKS_CHECK_SQNR,
	LKS_CHECK_GOLDEN,
	LKS_CHECK_FINITE,
	LKS_CHECK_RANKS_AGREE,
	LKS_CHECK_RECOMPUTE,
	LKS_CHECK_RESUME,
	LKS_CHECK_COUNT
} lks_check_kind;

/* The keys of [check NAME] that some kinds read: every kind reads kind, a, expect, step,
   rank and tensor, and b when it compares two runs. */
enum {
	LKS_CK_METRIC = 1,      /* metric (default loss; never empty), and tensors when the metric
	                           is a tensor statistic (else tensors is refused) */
	LKS_CK_TOL = 2,         /* rtol, atol */
	LKS_CK_FLOOR = 4,       /* floor_db */
};

/* What a kind needs of its runs, refused when the case is read. */
enum {
	LKS_CK_CHECKPOINT = 1,  /* run a has checkpoint = blocks (a recompute to compare) */
	LKS_CK_MAJORITY = 2,    /* it names a rank only against a majority of ranks: an expected
	                           rank on a run of 2 ranks is refused */
	LKS_CK_RESUMED = 4,     /* run b resumes from run a (resume_from = A@STEP) */
	LKS_CK_TRAINED = 8,     /* its runs are lockstep's, not imported: it reads what only a
	                           training has (gradients as they are made, a recompute, a
	                           kept state), so on a log it could never be evaluated */
};

/* A kind's column in 'lockstep bench detect': the kind evaluated with these settings on
   each fault case's faulty and clean run. title NULL: no column, and none says why. */
typedef struct lks_check_detect {
	const char *title;
	const char *metric;
	double rtol, floor_db;
	const char *none;
} lks_check_detect;

typedef struct lks_check_kind_info {
	const char *name;       /* in case files: kind = NAME */
	int nruns;              /* 2: runs a and b; 1: run a */
	unsigned keys;          /* LKS_CK_METRIC, LKS_CK_TOL, LKS_CK_FLOOR */
	unsigned needs;         /* LKS_CK_CHECKPOINT, LKS_CK_MAJORITY, LKS_CK_RESUMED,
	                           LKS_CK_TRAINED */
	const char *shown;      /* 'lockstep list': how closely it compares, where {metric},
	                           {rtol}, {atol} and {floor_db} stand for the check's keys
	                           (each a key the kind reads) */
	const char *what;       /* 'lockstep list --help': when it passes */
	lks_check_detect detect;
} lks_check_kind_info;

/* The row of kind k, NULL past the table's end. */
const lks_check_kind_info *lks_check_kind_of(lks_check_kind k);

/* "ranks_agree", "?" past the end; the kind called s, else an error (lks_err) that lists
   the names; the names of all, "bitwise, close, ...", into buf. */
const char *lks_check_kind_name(lks_check_kind k);
int lks_check_kind_parse(const char *s, lks_check_kind *out);
const char *lks_check_kind_names(char *buf, size_t size);

/* 2 for the kinds that compare two runs (a and b), else 1 (a). */
int lks_check_kind_nruns(lks_check_kind k);

/* The row's shown text with the keys of check k in it: "loss of blocks.* rtol 0.05 atol 0",
   "SQNR >= 20 dB", "bit for bit". */
struct lks_check_cfg;
const char *lks_check_kind_shown(const struct lks_check_cfg *k, char *buf, size_t size);

/* The metrics a close check compares, one row each in the table of check_kind.c: the
   case's validation, 'lockstep list' and the check (check.c) all read it. */
typedef enum lks_metric_scope {
	LKS_METRIC_STEP_MEAN,     /* one value per step: the mean over ranks (the loss) */
	LKS_METRIC_STEP_GLOBAL,   /* one value per step, the same on every rank (grad norm) */
	LKS_METRIC_TENSOR,        /* per step, rank and tensor: a statistic of the trace */
} lks_metric_scope;

typedef struct lks_metric {
	const char *name;
	lks_metric_scope scope;
	size_t off;               /* of the value in lks_step_row or lks_stat_row (trace_store.h) */
	int f32;                  /* the value is a float there, else a double */
	int nan_absent;           /* NaN with every value finite: the tensor has none (the
	                             scale of a tensor that was not quantized) */
	const char *what;         /* in words, for 'lockstep list' */
} lks_metric;

/* The metric called name, or NULL; the i-th row of the table, NULL past its end; the names
   of all, "loss, grad_norm, ...", into buf. */
const lks_metric *lks_metric_find(const char *name);
const lks_metric *lks_metric_at(int i);
const char *lks_metric_names(char *buf, size_t size);

#endif
