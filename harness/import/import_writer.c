/*
 * import_writer.c: a whole import's blocks stored on a thread of their own
 * (import_writer_impl.h). One block is handed over at a time: submit waits for the writer
 * to finish the one before (so at most one block is in its hands and memory stays two
 * blocks), then gives the parser the block the writer emptied. The writer's failure is kept
 * with its message (lks_err is per thread) and returned by the next submit or drain.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/import/import_writer_impl.h"
#include "kernels/err.h"

struct lks_import_writer {
	lks_store *s;
	int64_t run_id;
	lks_block *fill;          /* the parser's */
	lks_block *spare;         /* empty, the writer's to give back (when pending is NULL) */
	lks_block *pending;       /* handed over, not stored yet: block seq */
	int64_t seq;
	pthread_mutex_t *store_mu;  /* NULL: none */
	int stop, failed;
	char msg[1024];
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static void *lks_import_writer_main(void *arg)
{
	lks_import_writer *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		const unsigned char *data;
		size_t len;
		lks_block *b;
		int rc;

		while (!w->pending && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->pending)
			break;
		b = w->pending;
		pthread_mutex_unlock(&w->mu);
		/* encoded before the store's lock: other parts of the file insert meanwhile */
		rc = 0;
		if (!w->failed && !(rc = lks_block_encode(b, &data, &len))) {
			if (w->store_mu)
				pthread_mutex_lock(w->store_mu);
			rc = lks_store_import_block(w->s, w->run_id, w->seq, b);
			if (w->store_mu)
				pthread_mutex_unlock(w->store_mu);
		}
		lks_block_reset(b);
		pthread_mutex_lock(&w->mu);
		if (rc && !w->failed) {
			w->failed = 1;
			snprintf(w->msg, sizeof(w->msg), "%s", lks_errmsg());
		}
		w->spare = b;
		w->pending = NULL;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

lks_import_writer *lks_import_writer_start(lks_store *s, int64_t run_id,
                                           pthread_mutex_t *store_mu)
{
	lks_import_writer *w = calloc(1, sizeof(*w));

	if (!w || !(w->fill = lks_block_new()) || !(w->spare = lks_block_new())) {
		if (w)
			lks_block_free(w->fill);
		free(w);
		lks_err("out of memory");
		return NULL;
	}
	w->s = s;
	w->run_id = run_id;
	w->store_mu = store_mu;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (pthread_create(&w->thread, NULL, lks_import_writer_main, w)) {
		lks_block_free(w->fill);
		lks_block_free(w->spare);
		free(w);
		lks_err("cannot start the import's writer thread");
		return NULL;
	}
	return w;
}

lks_block *lks_import_writer_block(lks_import_writer *w)
{
	return w->fill;
}

/* Waits (under mu) until the writer holds no block; its failure, as lks_err. */
static int lks_import_writer_idle(lks_import_writer *w)
{
	while (w->pending)
		pthread_cond_wait(&w->cv, &w->mu);
	return w->failed ? lks_err("%s", w->msg) : 0;
}

int lks_import_writer_submit(lks_import_writer *w, int64_t seq)
{
	int rc;

	if (lks_block_records(w->fill) == 0)
		return 0;
	pthread_mutex_lock(&w->mu);
	if (!(rc = lks_import_writer_idle(w))) {
		w->pending = w->fill;
		w->seq = seq;
		w->fill = w->spare;
		w->spare = NULL;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int lks_import_writer_drain(lks_import_writer *w)
{
	int rc;

	pthread_mutex_lock(&w->mu);
	rc = lks_import_writer_idle(w);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void lks_import_writer_stop(lks_import_writer *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	lks_block_free(w->fill);
	lks_block_free(w->spare);
	lks_block_free(w->pending);
	free(w);
}
