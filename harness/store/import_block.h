/*
 * import_block.h: the records of an imported run stored many to a blob (schema version
 * 10, table import_blocks; trace_store_blocks.c stores and reads them). A record is what
 * a log said at one (step, rank): named metrics with a kind and a value. A block holds up
 * to LKS_BLOCK_RECORDS records in the order the log gave them, column by column, so that
 * an import writes one SQLite row per block instead of one per log line, and what a
 * metric repeats from one step to the next costs a byte.
 *
 * Layout (all integers unsigned LEB128 varints; "zz" zigzag-signed):
 *   version (2), records, names, then per name: kind byte (bit 0: performance, else
 *   numerics; bit 1: printed, below), the name and a NUL; the ranks (one each); the steps (zz: the difference to the record
 *   before, the first to 0); then per name its column: a byte 0 (every record has it) or
 *   1 and a bitmap of the records that have it (bit i of byte i/8), then each present value:
 *     t = zz(m - prev) << 4 | d, d in 0..14: the value is m / 10^d (m when d is 0),
 *         m an integer below 2^53 in magnitude and prev the m of the same name and rank
 *         before in the block (0 at first);
 *     t = 15: the value follows as 8 bytes (IEEE 754 binary64, little-endian): NaN (one
 *         pattern), +-inf, -0, and any value no short decimal gives back bit for bit.
 * A value is written the first way only when decoding gives back its exact bits, so the
 * layout loses nothing whatever the value; a log's numbers, written with a few decimals,
 * take that way. In a printed column (a value of it came with the decimals the log wrote
 * it with: import_rec.h's dec) d is those decimals, the value's precision as read, and a
 * value without them is raw (a whole number's d, 0, says no rounding: it is a count, or
 * whole); elsewhere d is any that gives the bits back. Version 1 (no
 * bit 1) reads as no column printed.
 *
 * Version 3, keyed: the records of a tensor trace (tensor_trace.h), each the statistics of
 * one tensor, with a key. After the steps and before the columns come the keys: per
 * record its tensor (zz: the difference to the record before, the first to 0), its
 * microbatch (zz likewise; -1 none), then the hashes as a column is laid out (a byte 0
 * every record has one, 1 and a bitmap, 2 none has) each present one as 8 bytes
 * little-endian. A block holds keyed records or unkeyed ones, never both; an unkeyed
 * block is written as version 2, as before.
 */
#ifndef LKS_HARNESS_STORE_IMPORT_BLOCK_H
#define LKS_HARNESS_STORE_IMPORT_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "harness/store/trace_store.h"

/* Records per block: 16384 of a torchtitan log encode to about 150 KiB. */
#define LKS_BLOCK_RECORDS 16384
/* Names per block: a block that would need more is full. */
#define LKS_BLOCK_NAMES 256
/* Ranks 0 .. LKS_BLOCK_MAX_RANK (import_rec.h's LKS_IMPORT_MAX_RANK). */
#define LKS_BLOCK_MAX_RANK 65535

typedef struct lks_block lks_block;

lks_block *lks_block_new(void);
void lks_block_free(lks_block *b);
/* Empties b for the next records (its memory is kept). */
void lks_block_reset(lks_block *b);
/* The records in b, and the first and last step among them. */
int lks_block_records(const lks_block *b);
void lks_block_steps(const lks_block *b, int *first, int *last);

/* Adds the record of (step, rank): rows[0..n) (at most LKS_METRICS_MAX, names shorter
   than LKS_METRIC_NAME_MAX, each once; their step and rank are not read; step >= 0, rank
   0 to LKS_BLOCK_MAX_RANK; a row's printed kept, as a decoded block's rows give it). 0, 1 when b is full (nothing added: store b, reset it and add
   again), or -1 (lks_err: a bad name, step or rank). */
int lks_block_add(lks_block *b, int step, int rank, const lks_metric_row *rows, int n);

/* The same for a record as lockstep import reads it (import_rec.h): its names NUL padded to
   16 bytes, none twice, each value with the decimal it was read as where there is one
   (then the encoder takes it, once it reads back as the value, instead of looking for
   one). 0, 1 when b is full, or -1 (lks_err). */
struct lks_import_rec;
int lks_block_add_rec(lks_block *b, const struct lks_import_rec *rec);

/* A tensor record's key (tensor_trace.h): its tensor (the seq of its name and phase in
   the run's tensors, 0 to INT_MAX), its microbatch (-1: none said), and its content hash
   where the trace has one. */
typedef struct lks_block_key {
	int tensor, micro;
	int has_hash;
	uint64_t hash;
} lks_block_key;

/* lks_block_add_rec for a keyed record: rec's step, rank and metrics (its statistics),
   key its key. A block that holds unkeyed records takes no keyed one, nor the other way
   (-1, lks_err). 0, 1 when b is full, or -1. */
int lks_block_add_keyed(lks_block *b, const struct lks_import_rec *rec, const lks_block_key *key);

/* The layout of b's records: *data, *len, valid until b changes (a second call before then
   gives the same bytes without encoding again). 0, or -1 (out of memory). */
int lks_block_encode(lks_block *b, const unsigned char **data, size_t *len);

/* Calls fn on each record of the blob data[0..len) in its order: its step and rank, and
   rows[0..n) (step, rank and printed set too; names in the block's order; n may be 0). Returns 0,
   what fn returned (other than 0), or -1 (lks_err: the blob is not a block). */
typedef int (*lks_block_fn)(void *arg, int step, int rank, const lks_metric_row *rows, int n);
int lks_block_decode(const unsigned char *data, size_t len, lks_block_fn fn, void *arg);
/* The same for a block of either kind: key is each record's (NULL in an unkeyed block).
   lks_block_decode refuses a keyed block (-1): a tensor's statistics are no step's
   metrics. */
typedef int (*lks_block_key_fn)(void *arg, int step, int rank, const lks_block_key *key,
                                const lks_metric_row *rows, int n);
int lks_block_decode_keyed(const unsigned char *data, size_t len, lks_block_key_fn fn,
                           void *arg);

/* The steps row of (step, rank) an imported record stands for: loss, grad_norm and lr where
   the record has them (NaN where not), step_time its iteration_time in seconds (its
   iteration_time_s as it is), nonfinite its numerics metrics that are not finite. */
void lks_block_step_row(int step, int rank, const lks_metric_row *rows, int n,
                        lks_step_row *out);

#endif
