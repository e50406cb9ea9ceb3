/*
 * import_writer_impl.h: the blocks of a whole import stored by a thread of their own while
 * the parser goes on (import.c). Two blocks take turns: the parser fills one while the
 * writer encodes the other and inserts it into the import's transaction. The store is used
 * by one thread at a time: the writer inserts holding the import's store lock (when there
 * is one: another thread storing blocks of the same import holds it too), and the caller
 * uses the store only after lks_import_writer_drain.
 */
#ifndef LKS_HARNESS_IMPORT_IMPORT_WRITER_IMPL_H
#define LKS_HARNESS_IMPORT_IMPORT_WRITER_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "harness/store/import_block.h"

typedef struct lks_import_writer lks_import_writer;

/* A writer of run_id's blocks into s (inside its import's transaction), each insert under
   store_mu unless it is NULL. NULL on failure (lks_err). */
lks_import_writer *lks_import_writer_start(lks_store *s, int64_t run_id,
                                           pthread_mutex_t *store_mu);
/* The block to fill. */
lks_block *lks_import_writer_block(lks_import_writer *w);
/* Hands the filled block to the writer, to be stored as block seq (after it has stored the
   one before), and gives an empty one to fill. 0, or -1 when the writer failed (lks_err:
   its message). */
int lks_import_writer_submit(lks_import_writer *w, int64_t seq);
/* Waits until every block handed over is stored: the store is the caller's again. 0, or
   -1 (lks_err: the writer's message). */
int lks_import_writer_drain(lks_import_writer *w);
/* Stops the thread (what is not handed over is dropped) and frees w; NULL does nothing. */
void lks_import_writer_stop(lks_import_writer *w);

#endif
