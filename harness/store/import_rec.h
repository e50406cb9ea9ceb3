/*
 * import_rec.h: what an imported run is made of, as the store keeps it (DESIGN.md, Imported
 * runs): records, one per (step, rank) a log wrote, of named metrics with a kind (numerics
 * or performance) and a value, each value with the decimal it was read as where there is one
 * (the block codec, import_block.h, stores them so); and the one table of the metrics a
 * framework logs, by canonical name (import_metric.c). The parsers that make records, one
 * per format, are the import room's (harness/import/import.h).
 */
#ifndef LKS_HARNESS_STORE_IMPORT_REC_H
#define LKS_HARNESS_STORE_IMPORT_REC_H

#include <stddef.h>
#include <stdint.h>

#include "harness/store/trace_store.h"

/* Metrics on one line, and the longest name stored. */
#define LKS_IMPORT_MAX_METRICS LKS_METRICS_MAX
#define LKS_IMPORT_NAME_MAX LKS_METRIC_NAME_MAX
/* Ranks 0 .. LKS_IMPORT_MAX_RANK: more than any job writes into one log. A log that
   names a bigger one is bad input at its line, in every format. */
#define LKS_IMPORT_MAX_RANK 65535
/* Steps 0 .. LKS_IMPORT_MAX_STEP: a step is an int wherever lockstep keeps one, and so is
   the last step + 1 (a run's steps, the end of a walk over them): 2^31 - 2. */
#define LKS_IMPORT_MAX_STEP 2147483646
/* Metric names in one run: what reads a run back holds a name's index in 16 bits (run.h,
   struct lks_mrow), so an import that would store more is bad input at the line whose
   name is one too many. */
#define LKS_IMPORT_MAX_NAMES 65536

/* One row of the metric table: the canonical name, its kind, its unit in words, and what
   it is. */
typedef struct lks_import_metric {
	const char *name;
	lks_metric_kind kind;
	const char *unit;
	const char *what;
} lks_import_metric;

/* The row of canonical name (len bytes), or NULL; the i-th row, NULL past the end. */
const lks_import_metric *lks_import_metric_find(const char *name);
const lks_import_metric *lks_import_metric_find_n(const char *name, size_t len);
const lks_import_metric *lks_import_metric_at(int i);

/* What a parser found at one (step, rank). */
typedef struct lks_import_rec {
	long line;                /* where it was read (0: not of a line, megatron-golden) */
	int step, rank;           /* rank 0 where the log names none */
	int ranked;               /* the line named its rank ("[rankN]:", jsonl's "rank"); else
	                             whichever rank printed it stands as rank 0 */
	int counted;              /* the step is the record's place in its file, not one the
	                             log wrote (a console that prints none: Hugging Face's) */
	int n;
	struct lks_import_mval {
		char name[LKS_IMPORT_NAME_MAX];  /* a name of fewer than 16 bytes is NUL padded
		                                    to 16: its first 16 bytes are it, whole */
		int nlen;                 /* strlen(name) */
		lks_metric_kind kind;
		double value;
		int64_t dec;              /* the decimal the value was read as: see
		                             LKS_IMPORT_NO_DEC */
	} m[LKS_IMPORT_MAX_METRICS];
	/* Where a reader knows that its metrics' names and kinds are those of others, in the
	   same order: records of one layout (not 0) are alike so; 0: not known. */
	uint64_t layout;
} lks_import_rec;

/* A value's decimal as the log wrote it, where the block layout (import_block.h) takes it
   as it is: (m << 4) | d, the value being m / 10^d exactly (m below 2^53 in magnitude, d
   0 to 14, each one rounding of one division, as the layout reads it back), so a block
   need not look for one; LKS_IMPORT_NO_DEC where the reader has none. */
#define LKS_IMPORT_NO_DEC ((int64_t)15)

/* Exact powers of ten as doubles, 10^0 to 10^22: 10^22 is the last one a double holds
   exactly. */
extern const double lks_import_pow10[23];

#endif
