/*
 * import_parts.c: a big log file read in parts at once (import_run_impl.h), one thread and
 * one writer each (a line format's lines, or a whole-file format's records where it says
 * how: lks_import_format's parse_at and cut), joined where the ranks' steps meet at the seams as one reader would see
 * them, else read on by one reader: what is stored and said is what one reader stores and
 * says.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/import/import_run_impl.h"
#include "kernels/err.h"
#include "kernels/pool.h"

/* A part after the first: its own reader state (every rank unseen), counts and blocks. */
struct lks_import_part {
	struct lks_import_run run;
	lks_import_counts c;
	const lks_import_format *fmt;
	off_t from;
	uint64_t len;             /* its bytes; UINT64_MAX: to the end (the last part) */
	dev_t dev;                /* the file the first part reads: the path must still name it */
	ino_t ino;
	pthread_t thread;
	int started, rc;
};

/* The records of path from where f's descriptor is, at most limit bytes of them, numbered
   on from line: a line format's lines, or a whole-file format's records (parse_at). */
static int lks_import_read_at(const lks_import_format *fmt, const char *path, FILE *f,
                              long line, uint64_t limit, struct lks_import_ctx *x,
                              lks_import_counts *c)
{
	if (fmt->line)
		return lks_import_lines_at(path, f, line, limit, lks_import_sink_counted, x, c,
		                           fmt->line);
	return fmt->parse_at(path, f, line, limit, lks_import_sink_counted, x, c);
}

static void *lks_import_part_main(void *arg)
{
	struct lks_import_part *p = arg;
	struct lks_import_ctx x = { &p->run, &p->c };
	FILE *f = fopen(p->run.path, "r");
	struct stat st;

	p->rc = -1;  /* a failure here: this part is read again after the one before it */
	lks_import_tag_map_use(p->run.tag_map);  /* this thread's labels read as the import's */
	if (f && !fstat(fileno(f), &st) && st.st_dev == p->dev && st.st_ino == p->ino
	    && lseek(fileno(f), p->from, SEEK_SET) == p->from)
		p->rc = lks_import_read_at(p->fmt, p->run.path, f, 0, p->len, &x, &p->c);
	if (!p->rc && p->run.store)
		p->rc = lks_import_flush(&p->run, 1);
	lks_import_tag_map_use(NULL);
	lks_import_writer_stop(p->run.writer);  /* its last block stored: the part is done */
	p->run.writer = NULL;
	if (f)
		fclose(f);
	return NULL;
}

/* Where a part starting near byte at of the file of size bytes would start: after the
   first newline from at on; 0 when there is none before the last byte. */
static off_t lks_import_cut(int fd, off_t at, off_t size)
{
	char buf[4096];

	while (at < size) {
		ssize_t n = pread(fd, buf, sizeof(buf), at);
		const char *nl = n > 0 ? memchr(buf, '\n', (size_t)n) : NULL;

		if (n <= 0)
			return 0;
		if (nl)
			return at + (nl - buf) + 1 < size ? at + (nl - buf) + 1 : 0;
		at += n;
	}
	return 0;
}

/* A part read as the reader of the parts before it would go on to read it: every rank it
   logs starts after the step the parts before (or an earlier file) left it at. A step that
   comes again there (a repeat, a restart, an error) is read again by one reader instead. */
static int lks_import_seam_clean(const struct lks_import_run *a, const struct lks_import_run *b)
{
	for (int k = 0; k < b->nranks; k++)
		if (b->ranks[k].seen && k < a->nranks && a->ranks[k].seen
		    && b->ranks[k].first <= a->ranks[k].step)
			return 0;
	return 1;
}

/* A part's ranks, counts and block numbers taken on by the run; its lines are numbered on
   from the parts' before it (before). */
static int lks_import_seam_join(struct lks_import_run *r, struct lks_import_part *p,
                                long before, lks_import_counts *c)
{
	struct lks_import_run *b = &p->run;

	if (lks_import_ranks_grow(r, b->nranks))
		return -1;
	for (int k = 0; k < b->nranks; k++)
		if (b->ranks[k].seen) {  /* swapped: the part's array frees the run's metrics */
			struct lks_rank_last t = r->ranks[k];

			r->ranks[k] = b->ranks[k];
			r->ranks[k].line += before;
			b->ranks[k] = t;
		}
	for (int j = 0; j < b->names.n; j++) {  /* in the order one reader meets them */
		int rc = lks_import_name(r, b->names.name[j], b->names.line[j] + before);

		if (rc)
			return rc;
	}
	c->lines += p->c.lines;
	c->records += p->c.records;
	c->ignored += p->c.ignored;
	c->repeated += p->c.repeated;
	if (p->c.cut && !c->cut++)  /* a file's last part alone can end in one */
		memcpy(c->cut_first, p->c.cut_first, sizeof(c->cut_first));
	r->next_seq = b->next_seq;
	return 0;
}

/* An environment variable of tests, a count >= lo; else def. */
static long lks_import_env(const char *name, long lo, long def)
{
	const char *e = getenv(name);
	char *end;
	long long v = e && *e ? strtoll(e, &end, 10) : lo - 1;

	return v >= lo && !*end ? (long)v : def;
}

/* import_run_impl.h */
int lks_import_starts(const lks_import_format *fmt, int fd, off_t size, off_t *starts)
{
	off_t min = (off_t)lks_import_env("LKS_IMPORT_SPLIT_MIN", 1, LKS_IMPORT_SPLIT_MIN);
	long most = lks_import_env("LKS_IMPORT_PARTS", 1, lks_pool_cpus());
	off_t parts = size < min ? 1 : size * 2 / min;
	int n = 1;

	if (most > LKS_IMPORT_PARTS_MAX)
		most = LKS_IMPORT_PARTS_MAX;
	if (!fmt->line && !(fmt->parse_at && fmt->cut))
		most = 1;
	if (parts > most)
		parts = most;
	starts[0] = 0;
	for (off_t k = 1; k < parts; k++) {
		off_t at = fmt->line ? lks_import_cut(fd, size / parts * k, size)
		           : fmt->cut(fd, size / parts * k, size);

		if (at > starts[n - 1])  /* a line longer than a part: fewer parts */
			starts[n++] = at;
	}
	return n;
}

/* import_run_impl.h */
int lks_import_parts(struct lks_import_run *r, const lks_import_format *fmt,
                            const char *path, FILE *f, const struct stat *st,
                            const off_t *starts, int n, lks_import_counts *c)
{
	struct lks_import_part *parts = calloc((size_t)n, sizeof(*parts));
	struct lks_import_ctx x = { r, c };
	int64_t first = r->next_seq, below = r->seq_below;
	long lines0 = c->lines;
	int rc = 0, k;

	if (!parts)
		return lks_err("out of memory");
	for (k = 1; k < n; k++) {
		struct lks_import_part *p = &parts[k];

		*p = (struct lks_import_part){ .fmt = fmt, .from = starts[k],
		                               .len = k + 1 < n ? (uint64_t)(starts[k + 1] - starts[k])
		                                                : UINT64_MAX,
		                               .dev = st->st_dev, .ino = st->st_ino, .rc = -1 };
		p->run = (struct lks_import_run){ .store = r->store, .run_id = r->run_id,
		                                  .path = path, .file = r->file, .only = r->only,
		                                  .nonly = r->nonly, .ranks_text = r->ranks_text,
		                                  .tag_map = r->tag_map,
		                                  .folder_rank = r->folder_rank,
		                                  .next_seq = first + k * LKS_IMPORT_PART_SEQ,
		                                  .seq_below = INT64_MAX, .store_mu = r->store_mu };
		/* each part's blocks stored by a writer of its own, as the first part's: the parts
		   parse alike and end together. No writer or no thread to be had: the part is
		   read by the reader before it */
		p->started = (!r->store || (p->run.writer = lks_import_writer_start(r->store, r->run_id,
		                                                                    r->store_mu)))
		             && !pthread_create(&p->thread, NULL, lks_import_part_main, p);
		if (!p->started) {
			lks_import_writer_stop(p->run.writer);
			p->run.writer = NULL;
		}
	}
	r->seq_below = first + LKS_IMPORT_PART_SEQ;  /* a restart leaves the parts' blocks be */
	rc = lks_import_read_at(fmt, path, f, 0, n > 1 ? (uint64_t)starts[1] : UINT64_MAX, &x, c);
	for (k = 1; k < n; k++)
		if (parts[k].started)
			pthread_join(parts[k].thread, NULL);
	r->seq_below = below;
	for (k = 1; !rc && k < n; k++) {
		if (parts[k].rc == 0 && lks_import_seam_clean(r, &parts[k].run)) {
			rc = lks_import_seam_join(r, &parts[k], c->lines - lines0, c);
			continue;
		}
		if (r->store && !(rc = lks_import_flush(r, 1))) {
			lks_import_lock(r, 1);
			rc = lks_store_import_unblock(r->store, r->run_id, first + k * LKS_IMPORT_PART_SEQ);
			lks_import_lock(r, 0);
		}
		if (!rc && lseek(fileno(f), starts[k], SEEK_SET) != starts[k])
			rc = lks_err("cannot read '%s' after line %ld", path, c->lines - lines0);
		if (!rc)
			rc = lks_import_read_at(fmt, path, f, c->lines - lines0, UINT64_MAX, &x, c);
		break;
	}
	for (k = 1; k < n; k++) {
		lks_import_ranks_free(parts[k].run.ranks, parts[k].run.nranks);
		lks_import_names_free(&parts[k].run.names);
	}
	free(parts);
	return rc;
}
