/*
 * trace_store_prune.c: retention (prune.h). The suites to prune are chosen by one query;
 * each of their runs loses its stat rows LKS_PRUNE_BATCH at a time, each batch its own
 * BEGIN IMMEDIATE ... COMMIT, so no lock is held longer than one batch and a reader in WAL
 * mode sees the suite whole or a batch fewer, never a torn row. Each batch marks the
 * suite pruned in the same transaction, so no stat row goes without the mark: a prune
 * killed between batches leaves a run part pruned and its suite marked, which readers
 * take as pruned (lks_store_run_pruned), and the next prune finishes. A checkpoint after
 * each batch keeps the write-ahead log to about a batch: without it a writer beside
 * never sees the log wholly copied back at the start of a transaction, so the log never
 * starts over and grows by every batch (to 4 times the file, test_prune). Steps, events,
 * checks and verdicts stay: a pruned run still diffs and checks on loss and grad norm.
 */
#include <stdlib.h>

#include "harness/store/prune.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

int lks_store_pin(lks_store *s, int64_t suite_id, int pin)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (LKS_SQL(s->db, sqlite3_prepare_v2(s->db, "UPDATE suites SET pinned = ?2 WHERE "
	                                      "suite_id = ?1", -1, &st, NULL)) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, suite_id);
	sqlite3_bind_int(st, 2, pin ? 1 : 0);
	if (LKS_SQL(s->db, sqlite3_step(st)) < 0)
		goto out;
	if (sqlite3_changes(s->db) != 1) {
		lks_err("no suite %lld in '%s'", (long long)suite_id, lks_store_path(s));
		rc = LKS_E_BAD_INPUT;
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* The runs of the suites to prune, and those suites: read whole before any write, so no
   statement reads while the batches commit. The latest suite is kept, and so is the latest
   whole one (every run complete): night over night compares with it (nightly.c) while the
   latest is still being written, or was killed. So is a suite whose writer has not ended
   (finished NULL) and showed life (the suite, a run begun or ended, a verdict) within
   ?3 days: its checks read the stat rows still to come, and a writer killed leaves it so
   for good, to go ?3 days later (as a suite of an older lockstep without the column). */
static const char lks_prune_pick[] =
	"SELECT s.suite_id, r.run_id FROM suites s LEFT JOIN runs r USING (suite_id)\n"
	"WHERE coalesce(s.pinned, 0) = 0\n"
	"  AND s.suite_id < (SELECT max(suite_id) FROM runs)  -- what the next compares with\n"
	"  AND s.suite_id IS NOT (SELECT max(w.suite_id) FROM runs w  -- or, killed, the latest\n"
	"                         WHERE NOT EXISTS (SELECT 1 FROM runs o  -- whole one\n"
	"                                           WHERE o.suite_id = w.suite_id\n"
	"                                             AND o.status IS NOT 'complete'))\n"
	"  AND NOT (?1 >= 0 AND s.suite_id IN (SELECT suite_id FROM suites\n"
	"                                      ORDER BY suite_id DESC LIMIT ?1))\n"
	"  AND NOT (?2 >= 0 AND s.started >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now',\n"
	"                                             printf('-%f days', ?2)))\n"
	"  AND NOT (s.finished IS NULL  -- its writer may still be at it\n"
	"           AND max(s.started,\n"
	"                   coalesce((SELECT max(max(a.started, coalesce(a.finished, '')))\n"
	"                             FROM runs a WHERE a.suite_id = s.suite_id), ''),\n"
	"                   coalesce((SELECT max(c.time) FROM checks c\n"
	"                             WHERE c.suite_id = s.suite_id), ''))\n"
	"               >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', printf('-%f days', ?3)))\n"
	"ORDER BY s.suite_id, r.run_id";

struct lks_prune_pair {
	int64_t suite, run;       /* run 0: a suite without runs */
};

static int lks_prune_list(lks_store *s, const lks_prune_opts *o, struct lks_prune_pair **out,
                          int *n)
{
	sqlite3_stmt *st = NULL;
	int cap = 0, rc;

	*out = NULL;
	*n = 0;
	if (LKS_SQL(s->db, sqlite3_prepare_v2(s->db, lks_prune_pick, -1, &st, NULL)) < 0)
		return -1;
	sqlite3_bind_int(st, 1, o->keep);
	sqlite3_bind_double(st, 2, o->keep_days);
	sqlite3_bind_double(st, 3, LKS_PRUNE_ALIVE_DAYS);
	while ((rc = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW) {
		if (*n == cap) {
			struct lks_prune_pair *p = realloc(*out, sizeof(**out) * (size_t)(cap = cap * 2 + 16));

			if (!p) {
				rc = lks_err("out of memory");
				break;
			}
			*out = p;
		}
		(*out)[*n].suite = sqlite3_column_int64(st, 0);
		(*out)[(*n)++].run = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The statements of a prune: a batch of a run's stat rows, and the suite's mark (once: a
   later prune keeps the first time). */
struct lks_prune_sql {
	sqlite3_stmt *del, *mark, *states;
};

static int lks_prune_sql_prepare(lks_store *s, struct lks_prune_sql *q)
{
	/* the key's prefix (run_id) finds the batch; its rows go by their whole key */
	if (LKS_SQL(s->db, sqlite3_prepare_v2(s->db, "DELETE FROM stats WHERE run_id = ?1 AND "
	                                      "(step, rank, seq) IN (SELECT step, rank, seq FROM "
	                                      "stats WHERE run_id = ?1 LIMIT ?2)", -1, &q->del,
	                                      NULL)) < 0
	    || LKS_SQL(s->db, sqlite3_prepare_v2(s->db, "UPDATE suites SET pruned = strftime("
	                                         "'%Y-%m-%dT%H:%M:%fZ', 'now') WHERE suite_id = "
	                                         "?1 AND pruned IS NULL", -1, &q->mark,
	                                         NULL)) < 0
	    /* the states a run kept to resume from: a few rows, each a whole model */
	    || LKS_SQL(s->db, sqlite3_prepare_v2(s->db, "DELETE FROM states WHERE run_id = ?1",
	                                         -1, &q->states, NULL)) < 0)
		return -1;
	return 0;
}

static int lks_prune_mark(lks_store *s, struct lks_prune_sql *q, int64_t suite)
{
	sqlite3_bind_int64(q->mark, 1, suite);
	return lks_store_done(s, q->mark);
}

/* One batch of the run's stat rows and its suite's mark in one transaction; *gone: how
   many rows. */
static int lks_prune_batch(lks_store *s, struct lks_prune_sql *q, int64_t suite, int64_t run,
                           int batch, int64_t *gone)
{
	int rc;

	if (lks_store_exec(s, LKS_Q_BEGIN))
		return -1;
	sqlite3_bind_int64(q->del, 1, run);
	sqlite3_bind_int(q->del, 2, batch);
	sqlite3_bind_int64(q->states, 1, run);
	rc = lks_prune_mark(s, q, suite) || lks_store_done(s, q->states)
	     || lks_store_done(s, q->del);
	*gone = rc ? 0 : sqlite3_changes64(s->db);
	if (rc || lks_store_exec(s, LKS_Q_COMMIT)) {
		lks_store_rollback(s);
		return -1;
	}
	return 0;
}

int lks_store_prune(lks_store *s, const lks_prune_opts *o, lks_prune_result *res)
{
	struct lks_prune_pair *p = NULL;
	struct lks_prune_sql q = { NULL, NULL, NULL };
	int n = 0, rc = -1, batch = o->batch > 0 ? o->batch : LKS_PRUNE_BATCH;
	int64_t since = 0;        /* rows removed since the last checkpoint */
	int64_t of_suite = 0;     /* rows removed from the suite at hand */

	*res = (lks_prune_result){ 0 };
	if (lks_prune_list(s, o, &p, &n) || lks_prune_sql_prepare(s, &q))
		goto out;
	for (int i = 0; i < n; i++) {
		int64_t gone = p[i].run > 0;

		while (gone > 0) {
			if (lks_prune_batch(s, &q, p[i].suite, p[i].run, batch, &gone))
				goto out;
			res->rows += gone;
			of_suite += gone;
			res->transactions += gone > 0;
			/* the log copied back into the file after LKS_PRUNE_BATCH rows (a
			   checkpoint costs two fsyncs: not after each of many small batches), so
			   that the next transaction starts it over. PASSIVE never waits: a reader
			   holding older frames keeps them, and a later checkpoint copies them. */
			if ((since += gone) >= LKS_PRUNE_BATCH) {
				sqlite3_wal_checkpoint_v2(s->db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL,
				                          NULL);
				since = 0;
			}
		}
		/* a suite without runs is marked too; one pruned before, and nothing of it
		   left to remove, is not counted again */
		if (i + 1 == n || p[i + 1].suite != p[i].suite) {
			if (lks_prune_mark(s, &q, p[i].suite))
				goto out;
			res->suites += of_suite > 0 || sqlite3_changes(s->db) > 0;
			of_suite = 0;
		}
	}
	rc = 0;
out:
	if (rc)
		lks_err("cannot prune '%s': %s", lks_store_path(s), lks_errmsg());
	sqlite3_finalize(q.del);
	sqlite3_finalize(q.mark);
	sqlite3_finalize(q.states);
	free(p);
	return rc;
}

int lks_store_run_pruned(lks_store *s, int64_t run_id, int *pruned)
{
	sqlite3_stmt *st = NULL;
	int rc;

	*pruned = 0;
	if (LKS_SQL(s->db, sqlite3_prepare_v2(s->db, "SELECT s.pruned IS NOT NULL FROM runs r "
	                                      "JOIN suites s USING (suite_id) WHERE r.run_id = ?1",
	                                      -1, &st, NULL)) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	rc = LKS_SQL(s->db, sqlite3_step(st));
	if (rc == SQLITE_ROW)
		*pruned = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return rc < 0 ? -1 : 0;
}

int lks_store_vacuum(lks_store *s)
{
	if (LKS_SQL(s->db, sqlite3_exec(s->db, "VACUUM", NULL, NULL, NULL)) < 0)
		return lks_err("cannot vacuum '%s': %s", lks_store_path(s), lks_errmsg());
	/* PASSIVE never waits: a reader of an older snapshot keeps its frames, and the last
	   connection to close finishes the checkpoint */
	sqlite3_wal_checkpoint_v2(s->db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	return 0;
}
