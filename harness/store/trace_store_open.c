/*
 * trace_store_open.c: opening and closing the trace store (trace_store.h, DESIGN.md Trace).
 *
 * One connection per lks_store. The database is in WAL mode with synchronous=NORMAL: a
 * commit is one append to the -wal file without fsync, and a crash (kill -9, power loss
 * after the OS flushed) loses at most the last transactions, never consistency. Several
 * processes may write one file (MPI ranks, parallel CI jobs): writers take the lock up
 * front with BEGIN IMMEDIATE and wait for each other through the busy timeout. What a
 * file holds is read before anything is written to it (trace_store_schema.c).
 *
 * Checkpoints (copying the WAL into the database file, with two fsyncs) run on a thread of
 * the store with its own connection, woken every LKS_CKPT_FRAMES frames, so that a step
 * never waits for the disk; the closing connection does the last one. A store is used by
 * one thread at a time (the connection is opened without SQLite's mutex).
 */
#define _GNU_SOURCE  /* sync_file_range */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

/* The page size of a new file. An import's blocks are blobs of about 256 KiB, each a chain
   of overflow pages: at 16 KiB a chain is 4 times shorter than at SQLite's default 4 KiB,
   and the commit writes it in as many fewer calls. 'lockstep bench import' measured the
   1M-line import at 0.34 s against 0.40 s (median of 7, 2 cores); 32 KiB gained no more,
   and a bigger page wastes more of a blob's last one. The cost: each table and index takes
   a 16 KiB page at least, so a small file grows (fp8_recipes.ini, 10 steps: 0.28 -> 0.54
   MB; with world_sizes.ini, 50 steps: 2.5 -> 2.8 MB; 'lockstep run' as fast). A file made
   before keeps its own. */
#define LKS_STORE_PAGE_SIZE 16384
#define LKS_STR_(x) #x
#define LKS_STR(x) LKS_STR_(x)

/* Wake the checkpointer when this many WAL frames (pages) were added since it last was:
   SQLite's own default for wal_autocheckpoint, so the WAL stays near 4 MiB. */
#define LKS_CKPT_FRAMES 1000

/* WAL: readers (report, a polling test) never block the writer, and a commit is an
   append. The mode is persistent in the file, so only the first opening after creation
   switches; the switch needs an exclusive lock, which SQLite does not wait for through
   the busy handler, hence the retries while another process reads the new file. */
static int lks_store_wal(sqlite3 *db, const char *path)
{
	sqlite3_stmt *st = NULL;
	const char *mode;
	int rc = -1, r, waited = 0;

	if (LKS_SQL(db, sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL)) < 0
	    || LKS_SQL(db, sqlite3_step(st)) != SQLITE_ROW)
		goto out;
	if (strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0) {
		rc = 0;
		goto out;
	}
	sqlite3_finalize(st);
	if (LKS_SQL(db, sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL)) < 0)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_BUSY && waited < LKS_STORE_BUSY_MS) {
		sqlite3_reset(st);
		waited += sqlite3_sleep(5);
	}
	if (LKS_SQL(db, r) != SQLITE_ROW)
		goto out;
	mode = (const char *)sqlite3_column_text(st, 0);
	if (strcmp(mode, "wal") != 0) {
		lks_err("'%s': cannot use WAL journal mode (got '%s'); is it on a network file system?",
		        path, mode);
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* Per-connection settings, applied once the file is known to be ours. */
static int lks_store_configure(sqlite3 *db, const char *path)
{
	if (lks_store_wal(db, path))
		return -1;
	/* synchronous=NORMAL in WAL: commits are durable against a process crash, and
	   consistent (not durable) against power loss; fsync only at checkpoints.
	   cache_size: 64 MiB, so that ingest keeps the right edge of the stats b-tree and
	   the WAL index pages in memory. */
	if (LKS_SQL(db, sqlite3_exec(db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
	                                 "PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY;",
	                             NULL, NULL, NULL)) < 0)
		return -1;
	return 0;
}

/* ---- the background checkpointer ---- */

static void *lks_store_ckpt_main(void *arg)
{
	lks_store *s = arg;

	pthread_mutex_lock(&s->ckpt_mu);
	for (;;) {
		while (!s->ckpt_pending && !s->ckpt_stop)
			pthread_cond_wait(&s->ckpt_cv, &s->ckpt_mu);
		if (s->ckpt_stop)
			break;
		s->ckpt_pending = 0;
		pthread_mutex_unlock(&s->ckpt_mu);
		/* PASSIVE: copies what no reader needs, never blocks the writer; a failure only
		   leaves the WAL longer, and the closing connection checkpoints anyway */
		sqlite3_wal_checkpoint_v2(s->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		pthread_mutex_lock(&s->ckpt_mu);
	}
	pthread_mutex_unlock(&s->ckpt_mu);
	return NULL;
}

/* Called by SQLite after each commit of the writer with the WAL's length in frames. */
static int lks_store_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	lks_store *s = arg;

	if (frames < s->ckpt_frames)  /* the WAL restarted from its beginning */
		s->ckpt_frames = 0;
	if (frames - s->ckpt_frames >= LKS_CKPT_FRAMES) {
		s->ckpt_frames = frames;
		pthread_mutex_lock(&s->ckpt_mu);
		s->ckpt_pending = 1;
		pthread_cond_signal(&s->ckpt_cv);
		pthread_mutex_unlock(&s->ckpt_mu);
	}
	return SQLITE_OK;
}

/* Starts the checkpointer; without it (no thread, no second connection) SQLite's own
   automatic checkpoint in the writer's commits does the work, only slower. */
static void lks_store_ckpt_start(lks_store *s, const char *path)
{
	if (sqlite3_open_v2(path, &s->ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL)
	        != SQLITE_OK
	    || sqlite3_exec(s->ckpt_db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL)
	        != SQLITE_OK)
		goto fallback;
	if (pthread_mutex_init(&s->ckpt_mu, NULL))
		goto fallback;
	if (pthread_cond_init(&s->ckpt_cv, NULL)) {
		pthread_mutex_destroy(&s->ckpt_mu);
		goto fallback;
	}
	if (pthread_create(&s->ckpt_thread, NULL, lks_store_ckpt_main, s)) {
		pthread_cond_destroy(&s->ckpt_cv);
		pthread_mutex_destroy(&s->ckpt_mu);
		goto fallback;
	}
	s->ckpt_running = 1;
	/* replaces the automatic checkpoint, which is itself a WAL hook */
	sqlite3_wal_hook(s->db, lks_store_wal_hook, s);
	return;
fallback:
	sqlite3_close_v2(s->ckpt_db);
	s->ckpt_db = NULL;
	sqlite3_wal_autocheckpoint(s->db, LKS_CKPT_FRAMES);
}

static void lks_store_ckpt_stop(lks_store *s)
{
	if (!s->ckpt_running)
		return;
	sqlite3_wal_hook(s->db, NULL, NULL);
	pthread_mutex_lock(&s->ckpt_mu);
	s->ckpt_stop = 1;
	pthread_cond_signal(&s->ckpt_cv);
	pthread_mutex_unlock(&s->ckpt_mu);
	pthread_join(s->ckpt_thread, NULL);
	pthread_cond_destroy(&s->ckpt_cv);
	pthread_mutex_destroy(&s->ckpt_mu);
	sqlite3_close_v2(s->ckpt_db);
	s->ckpt_db = NULL;
	s->ckpt_running = 0;
}

/* ---- what the file system says ---- */

/* The folder of path (sqlite3_free). */
static char *lks_store_dir(const char *path)
{
	const char *slash = strrchr(path, '/');

	return !slash ? sqlite3_mprintf(".")
	       : sqlite3_mprintf("%.*s", slash == path ? 1 : (int)(slash - path), path);
}

/* A side file of path (-wal, -shm) this user cannot write: a read by another user made it
   theirs, and SQLite, finding it, opens the file to read only, so that every write fails
   "attempt to write a readonly database" although the file itself is writable. Removing
   it is only safe while no process has the database open, which this one cannot know:
   its owner (or root) must. */
static const char *lks_store_side_why(const char *path, char *buf, size_t n)
{
	static const char *const sides[] = { "-wal", "-shm" };

	for (int i = 0; i < 2; i++) {
		char *side = sqlite3_mprintf("%s%s", path, sides[i]);
		struct stat st;
		const char *why = NULL;

		if (side && stat(side, &st) == 0 && access(side, W_OK) != 0 && errno == EACCES) {
			struct passwd *pw = getpwuid(st.st_uid);

			snprintf(buf, n, "'%s' belongs to user %s (uid %u), and this user cannot "
			         "write it (a read by that user left it): as that user or root, remove "
			         "'%s-wal' and '%s-shm' while no lockstep command uses the database",
			         side, pw ? pw->pw_name : "?", (unsigned)st.st_uid, path, path);
			why = buf;
		}
		sqlite3_free(side);
		if (why)
			return why;
	}
	return NULL;
}

/* Whether the file system holding path is mounted read-only: a writer's SQLite says only
   "unable to open database file" there. */
static int lks_store_fs_readonly(const char *path)
{
	char *dir = lks_store_dir(path);
	struct statvfs vfs;
	int ro = dir && statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);

	sqlite3_free(dir);
	return ro;
}

/* The space left to this user on the file system holding path, in bytes; -1: unknown. */
static long long lks_store_fs_free(const char *path)
{
	char *dir = lks_store_dir(path);
	struct statvfs vfs;
	long long n = -1;

	if (dir && statvfs(dir, &vfs) == 0)
		n = (long long)(geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail) * (long long)vfs.f_frsize;
	sqlite3_free(dir);
	return n;
}

/* Less free than this is a full file system to SQLite: the -shm alone grows by 32 KiB,
   a page of the log by 16 KiB. */
#define LKS_STORE_FS_LOW (128 << 10)

const char *lks_store_fs_why(const char *path, char *buf, size_t n)
{
	const char *why;
	long long left;

	if (lks_store_fs_readonly(path))
		return snprintf(buf, n, "its file system is mounted read-only"), buf;
	if ((why = lks_store_side_why(path, buf, n)) != NULL)
		return why;
	if ((left = lks_store_fs_free(path)) >= 0 && left < LKS_STORE_FS_LOW)
		return snprintf(buf, n, "no space left on its file system (%lld KiB free)",
		                left / 1024), buf;
	return NULL;
}

void lks_store_unlink(const char *path)
{
	static const char *const sides[] = { "-wal", "-shm", "-journal" };

	unlink(path);
	for (int i = 0; i < 3; i++) {
		char *side = sqlite3_mprintf("%s%s", path, sides[i]);

		if (side)
			unlink(side);
		sqlite3_free(side);
	}
}

/* A file this open made and could not give a schema (a full disk): removed while it holds
   nothing, so that it is not left to be read as "an empty file". One that holds bytes by
   now is another process's, which made it meanwhile. */
static void lks_store_unmake(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
		lks_store_unlink(path);
}

int lks_store_open(const char *path, lks_store **out)
{
	lks_store *s = NULL;
	sqlite3 *db = NULL;
	enum lks_store_kind kind;
	int64_t version;
	struct stat st;
	char why[1024];
	int rc = -1, found, made;

	*out = NULL;
	found = stat(path, &st) == 0;
	made = !found && errno == ENOENT;
	/* a folder, a FIFO, /dev/null: SQLite's "disk I/O error" (exit 3) said nothing of it */
	if (found && !S_ISREG(st.st_mode))
		return lks_err("'%s' is not a lockstep database (not a regular file)", path),
		       LKS_E_BAD_INPUT;
	/* what SQLite would find only at the first write, or name as an open that failed */
	if (lks_store_fs_readonly(path))
		return lks_err("cannot write '%s': its file system is mounted read-only", path);
	if (lks_store_side_why(path, why, sizeof(why)))
		return lks_err("cannot write '%s': %s", path, why);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
	                    | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		lks_err("cannot open '%s': %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	sqlite3_extended_result_codes(db, 0);
	sqlite3_busy_timeout(db, LKS_STORE_BUSY_MS);
	/* read first: nothing may be written to a file we will refuse */
	if ((rc = lks_store_inspect(db, path, &kind, &version)) != 0)
		goto out;
	rc = -1;
	/* before the first page is written: a file keeps the page size it is made with */
	if (kind == LKS_FILE_NEW
	    && LKS_SQL(db, sqlite3_exec(db, "PRAGMA page_size = " LKS_STR(LKS_STORE_PAGE_SIZE),
	                                NULL, NULL, NULL)) < 0)
		goto out;
	if (kind != LKS_FILE_OURS && (rc = lks_store_create(db, path)) != 0)
		goto out;
	rc = -1;
	if (lks_store_configure(db, path))
		goto out;
	/* a no-op, without the write lock, where the file has it already */
	if (LKS_SQL(db, sqlite3_exec(db, lks_store_tensor_index, NULL, NULL, NULL)) < 0)
		goto out;
	s = calloc(1, sizeof(*s));
	if (!s) {
		lks_err("cannot open '%s': out of memory", path);
		goto out;
	}
	s->db = db;
	db = NULL;
	lks_store_ckpt_start(s, path);
	*out = s;
	rc = 0;
out:
	sqlite3_close_v2(db);
	if (rc && made)
		lks_store_unmake(path);
	return rc;
}

/* ---- opening to read only ---- */

/* "file:PATH?mode=ro[&immutable=1]": the URI of a file, '?', '#', '%' and control
   characters percent-encoded (sqlite3_free). An absolute path gets an empty authority. */
static char *lks_store_uri(const char *path, int immutable)
{
	sqlite3_str *u = sqlite3_str_new(NULL);

	sqlite3_str_appendall(u, path[0] == '/' ? "file://" : "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		if (*p == '?' || *p == '#' || *p == '%' || *p < 0x20 || *p == 0x7f)
			sqlite3_str_appendf(u, "%%%02X", *p);
		else
			sqlite3_str_appendchar(u, 1, (char)*p);
	sqlite3_str_appendall(u, immutable ? "?mode=ro&immutable=1" : "?mode=ro");
	return sqlite3_str_finish(u);
}

/* Opens path read-only and reads its header (lks_store_inspect). *db is set whatever
   happens; the SQLite code of a read that failed (SQLITE_READONLY where the -shm of a WAL
   database cannot be made) comes back in *sql_rc, with rc -1. */
static int lks_store_open_ro_db(const char *path, int immutable, sqlite3 **db, int *sql_rc)
{
	char *uri = lks_store_uri(path, immutable);
	enum lks_store_kind kind;
	int64_t version;
	int rc;

	*db = NULL;
	*sql_rc = SQLITE_NOMEM;
	if (!uri)
		return lks_err("cannot open '%s': out of memory", path);
	*sql_rc = sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
	                          | SQLITE_OPEN_NOMUTEX, NULL);
	sqlite3_free(uri);
	if (*sql_rc != SQLITE_OK)
		return lks_err("cannot open '%s': %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
	sqlite3_extended_result_codes(*db, 0);
	sqlite3_busy_timeout(*db, LKS_STORE_BUSY_MS);
	if ((rc = lks_store_inspect(*db, path, &kind, &version)) != 0) {
		*sql_rc = sqlite3_errcode(*db);
		return rc;
	}
	*sql_rc = SQLITE_OK;
	if (kind == LKS_FILE_NEW)
		return lks_err("'%s' is not a lockstep database (an SQLite database without tables)",
		               path), LKS_E_BAD_INPUT;
	/* before the TEMP tables: changing temp_store drops every TEMP table there is */
	if (LKS_SQL(*db, sqlite3_exec(*db, "PRAGMA temp_store = MEMORY;", NULL, NULL, NULL)) < 0)
		return -1;
	return lks_store_temp_schema(*db, path, version);
}

/* The size of the file beside path named path + suffix ("-wal", "-journal"), 0 when there
   is none. */
static off_t lks_store_side_size(const char *path, const char *suffix)
{
	char *side = sqlite3_mprintf("%s%s", path, suffix);
	struct stat st;
	off_t n = side && stat(side, &st) == 0 ? st.st_size : 0;

	sqlite3_free(side);
	return n;
}

/* Whether the folder of path can be written (by this process, on this medium). */
static int lks_store_dir_writable(const char *path)
{
	char *dir = lks_store_dir(path);
	int ok = dir && access(dir, W_OK) == 0;

	sqlite3_free(dir);
	return ok;
}

/* Whether path, which SQLite would not open to read (SQLITE_READONLY, SQLITE_CANTOPEN), may
   be read immutable: 0 where it may, else -1 with why (lks_err). immutable=1 reads the file
   as it lies, without locks, a -shm, or a look at a journal, so it is right only on a medium
   nobody can write: a folder that cannot be written, holding no rollback journal and no
   write-ahead log. A journal there is a writer's (an import's, killed mid-write): the file
   holds pages of its transaction, which only rolling the journal back undoes, and a reader
   that went on would see a run that was never committed. A writer must roll it back: it is
   the file's own state, not bad input, so the caller's -1 (exit 3), as for a lock. */
static int lks_store_immutable_ok(const char *path)
{
	if (lks_store_side_size(path, "-journal") > 0)
		return lks_err("cannot read '%s': a writer stopped in the middle of a transaction "
		               "(killed?) and left its rollback journal '%s-journal'; the file holds "
		               "part of that transaction until a writer rolls it back: any lockstep "
		               "command that writes the database does so as it opens it (rerun the "
		               "import, or 'lockstep run' or 'lockstep prune' with --db '%s'), with "
		               "write access to the file and its folder", path, path, path);
	if (lks_store_side_size(path, "-wal") > 0)
		return lks_err("cannot read '%s': its write-ahead log '%s-wal' needs the index "
		               "'%s-shm', which cannot be made here (a read-only folder?): open it "
		               "once with write access to fold the log in", path, path, path);
	/* the folder can be written: what failed is not the medium, and SQLite said what */
	if (lks_store_dir_writable(path))
		return -1;
	return 0;
}

int lks_store_open_readonly(const char *path, lks_store **out)
{
	lks_store *s = NULL;
	sqlite3 *db = NULL;
	struct stat st;
	int rc, sql_rc;

	*out = NULL;
	if (stat(path, &st) != 0)
		return errno == ENOENT ? (lks_err("no database '%s'", path), LKS_E_BAD_INPUT)
		                       : lks_err("cannot open '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		return lks_err("'%s' is not a lockstep database (%s)", path, S_ISREG(st.st_mode)
		               ? "an empty file" : "not a regular file"), LKS_E_BAD_INPUT;
	rc = lks_store_open_ro_db(path, 0, &db, &sql_rc);
	/* A WAL database needs its -shm (the WAL index), which a reader makes where it can;
	   a hot journal needs rolling back, which a reader may not do. Where the -shm cannot
	   be made (a read-only folder or medium) and there is neither, the file is opened
	   immutable: no locks, no -shm; nobody can be writing it there. */
	if (rc == -1 && (sql_rc == SQLITE_READONLY || sql_rc == SQLITE_CANTOPEN)) {
		if ((rc = lks_store_immutable_ok(path)) != 0)
			goto out;
		sqlite3_close_v2(db);
		rc = lks_store_open_ro_db(path, 1, &db, &sql_rc);
	}
	if (rc)
		goto out;
	rc = -1;
	if (!(s = calloc(1, sizeof(*s)))) {
		lks_err("cannot open '%s': out of memory", path);
		goto out;
	}
	/* per-connection settings only: the file's journal mode is left as it is */
	if (LKS_SQL(db, sqlite3_exec(db, "PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536;",
	                             NULL, NULL, NULL)) < 0) {
		free(s);
		goto out;
	}
	s->db = db;
	db = NULL;
	*out = s;
	rc = 0;
out:
	sqlite3_close_v2(db);
	return rc;
}

/* ---- bulk writes (trace_store.h) ---- */

/* Whether the file is in journal mode now, after asking for it: an error (SQLITE_BUSY:
   another connection has the file) leaves the mode as it was. */
static int lks_store_journal(sqlite3 *db, const char *mode)
{
	char sql[64];
	sqlite3_stmt *st;
	int in;

	snprintf(sql, sizeof(sql), "PRAGMA journal_mode = %s", mode);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	in = sqlite3_step(st) == SQLITE_ROW
	     && !sqlite3_stricmp((const char *)sqlite3_column_text(st, 0), mode);
	sqlite3_finalize(st);
	return in;
}

void lks_store_bulk_begin(lks_store *s)
{
	if (s->bulk || !sqlite3_get_autocommit(s->db))
		return;
	lks_store_ckpt_stop(s);  /* its connection, open on the file, would keep it in WAL */
	/* rollback journal: FULL syncs the journal before the file is written, without which
	   a power loss may corrupt the file, not just lose the transaction */
	sqlite3_exec(s->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
	sqlite3_busy_timeout(s->db, 0);  /* another connection: no switch, and no wait */
	s->bulk = lks_store_journal(s->db, "delete");
	sqlite3_busy_timeout(s->db, LKS_STORE_BUSY_MS);
	if (s->bulk) {
		/* a descriptor of its own: the kernel writes the file's pages back whichever one
		   names it; none to be had, and the commit's fsync does it all */
		int fd = open(sqlite3_db_filename(s->db, "main"), O_RDONLY | O_CLOEXEC);

		s->bulk_fd = fd >= 0 ? fd + 1 : 0;
		sqlite3_exec(s->db, "PRAGMA cache_size = -1024", NULL, NULL, NULL);
	}
	if (!s->bulk) {
		sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
		lks_store_ckpt_start(s, sqlite3_db_filename(s->db, "main"));
	}
}

void lks_store_bulk_flush(lks_store *s)
{
#ifdef SYNC_FILE_RANGE_WRITE  /* Linux; elsewhere the commit's fsync does it all */
	if (s->bulk_fd)
		sync_file_range(s->bulk_fd - 1, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
	(void)s;
#endif
}

void lks_store_bulk_end(lks_store *s)
{
	const char *path = sqlite3_db_filename(s->db, "main");

	if (!s->bulk || !sqlite3_get_autocommit(s->db))
		return;
	s->bulk = 0;
	if (s->bulk_fd)
		close(s->bulk_fd - 1);
	s->bulk_fd = 0;
	sqlite3_exec(s->db, "PRAGMA cache_size = -65536", NULL, NULL, NULL);  /* as opened */
	/* waits out readers that came meanwhile; where it cannot, the next opening switches */
	lks_store_wal(s->db, path);
	sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
	lks_store_ckpt_start(s, path);
}

void lks_store_close(lks_store *s)
{
	if (!s)
		return;
	lks_store_bulk_end(s);
	if (s->bulk_fd)  /* a bulk write that could not end: inside a transaction */
		close(s->bulk_fd - 1);
	lks_store_ckpt_stop(s);
	for (int i = 0; i < LKS_Q_COUNT; i++)
		sqlite3_finalize(s->stmt[i]);
	sqlite3_finalize(s->stat_batch);
	/* the last connection to close checkpoints the WAL into the database file */
	sqlite3_close_v2(s->db);
	free(s);
}

struct sqlite3 *lks_store_db(lks_store *s)
{
	return s->db;
}
