/*
 * import_follow.c: 'lockstep import --follow': a log read as it is written (a file, like
 * tail -F, or standard input), each step stored in its own transaction as it completes
 * and compared at once with a reference (harness/verify/follow.h), so that a CI job or a
 * watcher can stop a run that has parted from its reference while it still burns GPU
 * hours. Exit 1 at the first difference, 0 at the end step or the end of input (standard
 * input closed, or a file that has not grown for --idle seconds), 2 bad input, 3 failure.
 *
 * A file is read through a stdio stream of our own (fopencookie) whose reads wait for the
 * file to grow: the parsers see one stream that ends only when the writer has been quiet
 * for the idle time, and need not know they follow anything.
 *
 * The file is watched as tail -F watches it, and followed rather than refused: a CI job
 * watching a live training log wants to go on watching the job that writes it. A file
 * truncated (shorter than what was read, or rewritten past it: the bytes before the offset
 * read are not those read any more) or replaced at its path (rotated: moved away and made
 * again) is said on standard error and read again
 * from its start, as the next file of the run (lks_import_follow). A rotated log goes on
 * with later steps. A step logged again is the job restarted there (from step 1, or from a
 * checkpoint): the steps stored from it on are dropped, then stored and compared with the
 * reference again as they come, so a step logged again with other values is caught as any
 * other, never passed for one compared before. Standard input has no file to watch.
 *
 * A rotated file is left only once the new one has bytes, and is read to its end then: a
 * job writes on to the file it has open (logrotate's create, until the job reopens its
 * log), so the old file grows after the new one appears, and its last lines come before
 * the new file's first.
 */
#define _GNU_SOURCE  /* fopencookie */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/cli/cmd.h"
#include "harness/verify/follow.h"
#include "kernels/err.h"
#include "kernels/clock.h"

/* How often a quiet file is looked at again: a step of any training run takes longer, so
   this adds at most 20 ms to the time a divergence is seen. */
#define LKS_FOLLOW_POLL_NS 20000000L

/* The last bytes read of a file, kept to see it rewritten under the reader: a log
   truncated and written again past the offset read, between two reads, is no shorter
   then, but its bytes before that offset differ (a new job's timestamps and banner, its
   steps again). 4 KiB holds the last lines of a log (a metric line of any framework's is
   well under 1 KiB) and costs one 4 KiB pread per read. A file rewritten with the very
   bytes read, over the last 4 KiB of them, reads on as the same file. */
#define LKS_TAIL_KEPT 4096

struct lks_tail {
	const char *path;
	int fd;
	dev_t dev;                /* the file fd reads: the path may come to name another */
	ino_t ino;
	int next;                 /* the file at the path now, not empty, read once fd is read
	                             to its end; -1: none */
	off_t off;                /* bytes read of it */
	char kept[LKS_TAIL_KEPT]; /* the last nkept of them, up to off */
	size_t nkept;
	double idle_s;            /* no growth for this long: end of input */
	const char *turned;       /* what happened, where the stream ends to go on from the
	                             start of a file; NULL: it does not */
	int turns;
};

static void lks_tail_keep(struct lks_tail *t, const char *buf, size_t n)
{
	if (n >= LKS_TAIL_KEPT) {
		memcpy(t->kept, buf + n - LKS_TAIL_KEPT, LKS_TAIL_KEPT);
		t->nkept = LKS_TAIL_KEPT;
	} else {
		size_t keep = t->nkept + n > LKS_TAIL_KEPT ? LKS_TAIL_KEPT - n : t->nkept;

		memmove(t->kept, t->kept + t->nkept - keep, keep);
		memcpy(t->kept + keep, buf, n);
		t->nkept = keep + n;
	}
	t->off += (off_t)n;
}

/* What happened to the file under the bytes read before t->off, or NULL: they are still
   there (or the file cannot be read at an offset, a FIFO: nothing to watch). */
static const char *lks_tail_rewritten(struct lks_tail *t)
{
	char now[LKS_TAIL_KEPT];
	ssize_t got;

	if (!t->nkept)
		return NULL;
	do
		got = pread(t->fd, now, t->nkept, t->off - (off_t)t->nkept);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return NULL;
	if ((size_t)got < t->nkept)
		return "was truncated";
	return memcmp(now, t->kept, t->nkept) ? "was truncated and written again" : NULL;
}

/* At the end of the file read: 1 when the path names another file now that holds bytes,
   opened in t->next (t reads it from its start once the file read is read to its end
   again: its writer may have written there until it wrote the new one), else 0 (none
   there, an empty one, or none that opens yet: looked at again). */
static int lks_tail_replaced(struct lks_tail *t)
{
	struct stat st;
	int fd;

	if (stat(t->path, &st) || (st.st_dev == t->dev && st.st_ino == t->ino)
	    || S_ISDIR(st.st_mode) || st.st_size == 0 || (fd = open(t->path, O_RDONLY)) < 0)
		return 0;
	if (fstat(fd, &st) || st.st_size == 0) {  /* the one opened may be newer than st's */
		close(fd);
		return 0;
	}
	t->next = fd;
	return 1;
}

/* The file in t->next read from its start. */
static void lks_tail_turn(struct lks_tail *t)
{
	struct stat st;

	if (fstat(t->next, &st))
		st.st_dev = 0, st.st_ino = 0;
	close(t->fd);
	*t = (struct lks_tail){ .path = t->path, .fd = t->next, .next = -1, .dev = st.st_dev,
	                        .ino = st.st_ino, .idle_s = t->idle_s, .turns = t->turns };
}

static ssize_t lks_tail_read(void *cookie, char *buf, size_t n)
{
	struct lks_tail *t = cookie;
	double quiet_since = lks_now();

	for (;;) {
		struct timespec poll = { 0, LKS_FOLLOW_POLL_NS };
		ssize_t got;

		if (t->turned)
			return 0;  /* the end of the file before, until lks_follow_more takes it */
		if ((got = read(t->fd, buf, n)) < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return got;
		/* looked at after the read: a rewrite before it shows, and what it read goes */
		if ((t->turned = lks_tail_rewritten(t))) {
			t->off = 0;
			t->nkept = 0;
			return lseek(t->fd, 0, SEEK_SET) ? -1 : 0;
		}
		if (got > 0) {
			lks_tail_keep(t, buf, (size_t)got);
			return got;
		}
		if (t->next >= 0) {  /* the file before read to its end after the new one grew */
			lks_tail_turn(t);
			t->turned = "is a new file (the one followed was moved or removed)";
			return 0;
		}
		if (lks_tail_replaced(t))
			continue;
		if (lks_now() - quiet_since >= t->idle_s)
			return 0;
		nanosleep(&poll, NULL);
	}
}

static int lks_tail_close(void *cookie)
{
	struct lks_tail *t = cookie;
	int rc = close(t->fd);

	if (t->next >= 0)
		close(t->next);
	free(t);
	return rc;
}

/* path followed as it grows ("-": standard input, which ends when it is closed; *tail
   NULL). */
static FILE *lks_tail_open(const char *path, double idle_s, struct lks_tail **tail)
{
	static const cookie_io_functions_t io = { .read = lks_tail_read, .close = lks_tail_close };
	struct lks_tail *t;
	struct stat st;
	FILE *f;

	*tail = NULL;
	if (!strcmp(path, "-"))
		return stdin;
	if (!(t = calloc(1, sizeof(*t))))
		return NULL;
	t->path = path;
	t->idle_s = idle_s;
	t->next = -1;
	if ((t->fd = open(path, O_RDONLY)) < 0 || fstat(t->fd, &st)) {
		if (t->fd >= 0)
			close(t->fd);
		free(t);
		return NULL;
	}
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	if (!(f = fopencookie(t, "r", io)))
		lks_tail_close(t);
	else
		*tail = t;
	return f;
}

struct lks_follow_state {
	const lks_follow_ref *ref;
	struct lks_tail *tail;    /* NULL: standard input */
	double rtol, atol;
	long compared;
	long steps, again;        /* steps compared: past the last before, and again */
	int top;                  /* the last step compared, of those past the last before */
	lks_follow_div div;
};

static int lks_follow_on_step(void *arg, const lks_import_rec *recs, int n)
{
	struct lks_follow_state *st = arg;

	if (st->steps && recs[0].step <= st->top) {
		st->again++;
	} else {
		st->steps++;
		st->top = recs[0].step;
	}
	return lks_follow_step(st->ref, recs, n, st->rtol, st->atol, &st->compared, &st->div)
	       ? LKS_IMPORT_DIVERGED : 0;
}

/* At the end of the stream: whether it goes on from the start of the file (said here). */
static int lks_follow_more(void *arg)
{
	struct lks_follow_state *st = arg;
	struct lks_tail *t = st->tail;

	if (!t || !t->turned)
		return 0;
	fprintf(stderr, "lockstep: import: '%s' %s: read from its start (a step it logs again "
	        "is the job restarted: stored and compared again)\n", t->path, t->turned);
	t->turned = NULL;
	t->turns++;
	return 1;
}

/* The reference: "--reference RUN_ID" (a stored run), "--reference-file FMT:PATH" or
   "--golden FILE" (a golden of class import). */
static int lks_follow_reference(lks_store *store, const lks_follow_args *a,
                                lks_follow_ref **ref)
{
	const lks_import_format *fmt;
	char name[32];
	const char *colon;
	int rc;

	if (a->reference_run) {
		char status[32];

		if (lks_store_run_status(store, a->reference_run, status, sizeof(status)))
			return lks_usage("import: no reference run %lld", (long long)a->reference_run);
		return lks_follow_ref_run(store, a->reference_run, ref) ? LKS_EXIT_INFRA : 0;
	}
	if (a->golden_file) {
		if ((rc = lks_follow_ref_golden(a->golden_file, ref)) == LKS_E_BAD_INPUT)
			return lks_usage("import: --golden: %s", lks_errmsg());
		return rc ? LKS_EXIT_INFRA : 0;
	}
	colon = strchr(a->reference_file, ':');
	if (!colon || (size_t)(colon - a->reference_file) >= sizeof(name))
		return lks_usage("import: --reference-file wants FORMAT:PATH, not '%s'",
		                 a->reference_file);
	snprintf(name, sizeof(name), "%.*s", (int)(colon - a->reference_file), a->reference_file);
	if (!(fmt = lks_import_format_find(name)))
		return lks_usage("import: --reference-file: %s", lks_errmsg());
	if ((rc = lks_follow_ref_file(fmt, colon + 1, ref)) == LKS_E_BAD_INPUT)
		return lks_usage("import: the reference: %s", lks_errmsg());
	return rc ? LKS_EXIT_INFRA : 0;
}

int lks_import_follow_cmd(lks_store *store, const lks_import_opts *o, const char *path,
                          const lks_follow_args *a)
{
	struct lks_follow_state st = { .rtol = a->rtol, .atol = a->atol };
	lks_follow_ref *ref = NULL;
	lks_import_result res;
	FILE *f = NULL;
	int rc, turns;

	if ((rc = lks_follow_reference(store, a, &ref))) {
		if (rc == LKS_EXIT_INFRA)
			fprintf(stderr, "lockstep: import: the reference: %s\n", lks_errmsg());
		return rc;
	}
	if (lks_follow_ref_size(ref) == 0) {
		lks_follow_ref_free(ref);
		return lks_usage("import: the reference holds no values to compare");
	}
	st.ref = ref;
	if (!(f = lks_tail_open(path, a->idle_s, &st.tail))) {
		fprintf(stderr, "lockstep: import: cannot open '%s'\n", path);
		lks_follow_ref_free(ref);
		return LKS_EXIT_USAGE;
	}
	rc = lks_import_follow(store, o, path, f, a->end_step, lks_follow_on_step, lks_follow_more,
	                       &st, &res);
	turns = st.tail ? st.tail->turns : 0;
	if (f != stdin)
		fclose(f);  /* and st.tail */
	lks_follow_ref_free(ref);
	if (rc == LKS_IMPORT_DIVERGED) {
		const lks_follow_div *d = &st.div;

		printf("diverged at step %d rank %d metric %s: log %.17g, reference %.17g%s\n",
		       d->step, d->rank, d->metric, d->got, d->want,
		       d->missing ? " (not in the log)" : "");
		printf("run %lld: steps up to %d stored, %ld values compared before\n",
		       (long long)res.run_id, res.steps, st.compared);
		return LKS_EXIT_FAIL;
	}
	if (rc && rc != LKS_IMPORT_REACHED) {
		/* a step is stored once the next begins: before that, nothing is */
		if (st.steps)
			fprintf(stderr, "lockstep: import: %s; the %ld step%s before it stay stored (run "
			        "%lld, incomplete)\n", lks_errmsg(), st.steps, st.steps == 1 ? "" : "s",
			        (long long)res.run_id);
		else
			fprintf(stderr, "lockstep: import: %s; nothing stored\n", lks_errmsg());
		return lks_exit_code(rc);
	}
	printf("followed %s/%s (run %lld): %ld step%s up to %d, %d rank%s, %ld values equal to the "
	       "reference", o->case_name, o->run_name, (long long)res.run_id, st.steps,
	       st.steps == 1 ? "" : "s", res.steps, res.world_size, res.world_size == 1 ? "" : "s",
	       st.compared);
	/* a gate that compared nothing has not passed: no step and rank of the log is the
	   reference's (a log that counts its steps otherwise, another rank) */
	if (st.compared == 0) {
		printf("\nnothing compared: no step and rank of the log holds a value of the "
		       "reference\n");
		return LKS_EXIT_FAIL;
	}
	/* idle before the step asked for: the job died or stalled, the run stored incomplete */
	if (a->end_step >= 0 && rc != LKS_IMPORT_REACHED) {
		printf("\nthe log stopped at step %d, before --end-step %d: its job died or stalled "
		       "(run %lld incomplete)\n", res.steps, a->end_step, (long long)res.run_id);
		return LKS_EXIT_INFRA;
	}
	if (turns)
		printf(", %ld step%s read again (the log truncated or replaced %d time%s)", st.again,
		       st.again == 1 ? "" : "s", turns, turns == 1 ? "" : "s");
	printf("%s\n", rc == LKS_IMPORT_REACHED ? " (end step reached)" : "");
	return LKS_EXIT_OK;
}
