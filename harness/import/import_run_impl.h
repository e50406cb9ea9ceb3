/*
 * import_run_impl.h: the state of one import, shared by the driver (import.c) and the reading
 * of a big file in parts at once (import_parts.c); this room's alone.
 */
#ifndef LKS_HARNESS_IMPORT_IMPORT_RUN_IMPL_H
#define LKS_HARNESS_IMPORT_IMPORT_RUN_IMPL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "harness/import/import.h"
#include "harness/import/import_impl.h"
#include "harness/import/import_writer_impl.h"
#include "harness/store/import_block.h"
#include "harness/store/name_index.h"

/* Per rank: the last step and its record's metrics (0 steps yet: seen 0). */
struct lks_rank_last {
	int seen, step;
	struct lks_import_mval *m;  /* (cap) that step's metrics, n of them */
	int n, cap;
	uint64_t layout;          /* of the record m was copied from whole (lks_import_rec) */
	long line;
	int file;                 /* the file (index) of that step */
	int first, has_first;     /* the first step this reader saw */
};

/* The metric names a reader has read, each once, in the order first read, each with the
   line that first had it: a run holds at most LKS_IMPORT_MAX_NAMES. The names of every
   record stored count, a restart's dropped ones too (what the files hold, not only what
   the run keeps). */
struct lks_import_names {
	char **name;              /* (cap) n of them */
	long *line;               /* (cap) */
	int n;
	size_t cap, line_cap;
	lks_name_index index;
	uint64_t layout;          /* a record of this layout (not 0) has its names here */
};

/* A followed log (lks_import_follow): the records of the step being read, stored in one
   transaction and handed to fn when the step completes: when a later step's line comes,
   when every rank of the first complete step has written it, or at the end of input. */
struct lks_import_follow {
	lks_import_rec *recs;     /* (cap) the step being read, n of them */
	int n, cap;
	int known;                /* ranks of the first complete step; 0: none complete yet */
	int end_step;             /* -1: none */
	int stored;               /* the last step stored */
	lks_import_step_fn fn;
	void *arg;
};

struct lks_import_run {
	lks_store *store;
	int64_t run_id;
	const char *path;
	int file;                 /* the index of the file being read (a folder's count one
	                             each) */
	int nfiles;               /* the files begun so far */
	const char *counted;      /* a file whose records' steps were counted (rec->counted),
	                             or NULL */
	struct lks_rank_last *ranks;
	int nranks;
	int restarts;             /* ranks a later file took back to an earlier step */
	struct lks_import_follow *follow;  /* NULL: a whole import, one transaction */
	lks_block *block;         /* the records not stored yet, without a writer */
	lks_import_writer *writer;  /* a whole import (store set): its blocks' thread */
	int64_t next_seq;         /* the next block's */
	int64_t seq_below;        /* a restart drops records of the blocks below it only */
	int parts;                /* the most parts a file was read in */
	pthread_mutex_t *store_mu;  /* NULL: this thread alone uses the store */
	const unsigned char *only;  /* (nonly) the ranks the log holds, by o->ranks; NULL: all */
	int nonly;
	const char *ranks_text;   /* o->ranks as given, for messages */
	const lks_import_tag_map *tag_map;  /* o->tag_map: this thread's while it parses
	                                       (lks_import_tag_map_use) */
	int folder_rank;          /* 1 + the rank of every record of the file being read, from
	                             its folder's name (rank_N: lks_import_file_rank); 0: the
	                             records' own */
	lks_import_rec *ranked;   /* a record given its folder's rank; NULL until one is */
	struct lks_import_names names;
	int unread;               /* lks_import_result's */
	char unread_first[512];
	int hparams;              /* lks_import_result's */
	char hparams_first[512];
};

/* The sink the parsers see: a repeated record is counted, not an error. */
struct lks_import_ctx {
	struct lks_import_run *run;
	lks_import_counts *c;
};

/* The tag map this thread's labels are read with (NULL: none), until another is given: what
   the thread remembered of labels under another map is forgotten (import_label.c). Set by
   each thread that parses, and set back to NULL after, before the map is freed. */
void lks_import_tag_map_use(const lks_import_tag_map *m);
/* The map as JSON, {LABEL: "NAME:KIND"}, for a run's fingerprint; NULL (no memory). */
json_t *lks_import_tag_map_json(const lks_import_tag_map *m);

/* The driver's steps that the parts take too (import.c). */
void lks_import_ranks_free(struct lks_rank_last *ranks, int n);
void lks_import_names_free(struct lks_import_names *x);
/* The import's store lock taken (on) or given back, where there is one. */
void lks_import_lock(struct lks_import_run *r, int on);
/* The records gathered, handed to the writer or stored here (encoded before the store's
   lock: other parts of a file insert meanwhile); with settle, the writer has stored them
   too when this returns, and the store is free of this import's writer. 0, or -1. */
int lks_import_flush(struct lks_import_run *r, int settle);
/* name, first read at line, into r's names when it is new to them: 0, LKS_E_BAD_INPUT when
   it is one too many (lks_err naming r's path and the line), or -1. */
int lks_import_name(struct lks_import_run *r, const char *name, long line);
/* Ranks 0 .. n - 1 in r->ranks, the new ones unseen. 0, or -1. */
int lks_import_ranks_grow(struct lks_import_run *r, int n);
/* The sink the parsers see (arg a struct lks_import_ctx): a repeated record is counted. */
int lks_import_sink_counted(void *arg, const lks_import_rec *rec);

/* The run row of o (backend import:FMT, the files in its fingerprint), inside the
   import's first transaction (lks_store_import_begin). */
int lks_import_begin(lks_store *store, const lks_import_opts *o, const char *const *paths,
                     int npaths, int64_t *run_id);

/* One FILE of an import ('-': standard input; a folder of event files for tensorboard:
   lks_import_folder) read into r (import.c). 0, LKS_E_BAD_INPUT, -1. */
int lks_import_file(struct lks_import_run *r, const lks_import_format *fmt, const char *path,
                    lks_import_counts *c);
/* lks_import_file of a TensorBoard event file with the nseries add_scalars series files
   of its writer's process (lks_import_tensorboard_series; none: lks_import_file). */
int lks_import_file_series(struct lks_import_run *r, const lks_import_format *fmt,
                           const char *path, const lks_import_series *series, int nseries,
                           lks_import_counts *c);

/* ---- TensorBoard folders, and the ranks their names give (import_folder.c) ---- */

/* A folder given to tensorboard: its events.out.tfevents.* files in name order, or, where
   it holds none, its rank_N folders in rank order, each so; each file through
   lks_import_file. A folder of neither, or not read, is LKS_E_BAD_INPUT. */
int lks_import_folder(struct lks_import_run *r, const lks_import_format *fmt,
                      const char *path, lks_import_counts *c);
/* What r left unread (its series and add_hparams files of no launch) into res
   (import_folder.c) */
void lks_import_unread_take(lks_import_result *res, const struct lks_import_run *r);
/* The rank of every record of the file path of fmt: for tensorboard, N where the path names
   the file's folder "rank_N" or "rankN" (torchtitan's folder per rank); else -1, the
   records' own. */
int lks_import_file_rank(const lks_import_format *fmt, const char *path);

/* ---- a file read in parts at once (import_parts.c) ---- */

/* A log file of at least LKS_IMPORT_SPLIT_MIN bytes (the variable of that name, for tests)
   is read in parts of at least half that size by threads of their own, as many as the
   machine has processors, at most LKS_IMPORT_PARTS_MAX (the variable LKS_IMPORT_PARTS,
   for tests, sets the most). Part k's blocks are numbered from k * LKS_IMPORT_PART_SEQ above
   the file's first. */
#define LKS_IMPORT_SPLIT_MIN ((off_t)8 << 20)
#define LKS_IMPORT_PARTS_MAX 16
#define LKS_IMPORT_PART_SEQ ((int64_t)1 << 40)

/* Where the parts of the file fd (size bytes) of fmt start: starts[0] = 0, then in order;
   their count (1: read whole; a format that is neither a line format nor has parse_at and
   cut is read whole). */
int lks_import_starts(const lks_import_format *fmt, int fd, off_t size, off_t *starts);
/* The file f (path, described by st) read in parts at once (starts[0..n), the first read
   here, each other by a thread of its own), with exactly what one reader would store and
   say: at the first part whose seam is not clean, or which failed, its blocks and those
   of the parts after it are dropped, and the file is read on from its start by one
   reader. */
int lks_import_parts(struct lks_import_run *r, const lks_import_format *fmt, const char *path,
                     FILE *f, const struct stat *st, const off_t *starts, int n,
                     lks_import_counts *c);

#endif
