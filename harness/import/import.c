/*
 * import.c: lockstep import's table of formats (a row each, in its parser's file) and the
 * driver that turns their records into one stored run (import.h). The driver holds per rank
 * only its last step and that step's metrics, so memory does not grow with the log: a step
 * that goes backwards, or comes again with other values, is bad input at its line; the same
 * step again with the same values (several ranks writing one line with no "[rankN]:"
 * prefix, or a log printed twice) is counted as repeated and stored once. Across files the
 * run may restart from a checkpoint: a later file that logs a rank's step again drops that
 * rank's rows from the step on, and goes on from there. A run's metric names are counted as
 * they come (by hash; a record of a known layout costs nothing): the name past
 * LKS_IMPORT_MAX_NAMES, as many as a run read back holds, is bad input at its line.
 *
 * The run row: the case and run names given, recipe "import", backend "import:<format>",
 * seed 0, steps the last step read, world size the ranks read (every rank from 0 up must
 * have steps), the files in the fingerprint ({"import": {"format": ..., "files": [...]}}).
 * The records go into blocks of many (import_block.h), each stored as one row when full, by
 * a thread of its own while the parse goes on (import_writer_impl.h); a big file is read in
 * parts at once, each part's blocks stored by a writer thread of its own; a followed log
 * stores a block per step itself. Read back, a record is also a steps row: loss, grad_norm,
 * lr where present, step_time the iteration time in seconds, nonfinite the count of
 * numerics metrics not finite; NaN what the log lacks.
 */
#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/base/name.h"
#include "harness/import/import.h"
#include "harness/store/import_block.h"
#include "harness/import/import_run_impl.h"
#include "harness/import/import_writer_impl.h"
#include "harness/store/name_index.h"
#include "harness/store/run.h"
#include "kernels/clock.h"
#include "kernels/err.h"

/* The formats, by id: each row is its parser's file's. */
static const lks_import_format *const lks_import_formats[LKS_IMPORT_NFMT] = {
#define LKS_IMPORT_FMT_AT(id, row) [id] = &row,
	LKS_IMPORT_FORMATS(LKS_IMPORT_FMT_AT)
#undef LKS_IMPORT_FMT_AT
};

const lks_import_format *lks_import_format_at(int i)
{
	return i >= 0 && i < LKS_IMPORT_NFMT ? lks_import_formats[i] : NULL;
}

int lks_import_format_parse(const lks_import_format *fmt, const char *path, FILE *f,
                            lks_import_sink sink, void *arg, lks_import_counts *c)
{
	if (fmt->parse)
		return fmt->parse(path, f, sink, arg, c);
	return lks_import_lines(path, f, sink, arg, c, fmt->line);
}

const lks_import_format *lks_import_format_of_line(lks_import_line_fn line)
{
	for (int i = 0; line && i < LKS_IMPORT_NFMT; i++)
		if (lks_import_formats[i]->line == line)
			return lks_import_formats[i];
	return NULL;
}

const lks_import_format *lks_import_format_find(const char *name)
{
	char known[256];
	const char *names[LKS_IMPORT_NFMT];

	for (int i = 0; i < LKS_IMPORT_NFMT; i++) {
		if (!strcmp(lks_import_formats[i]->name, name))
			return lks_import_formats[i];
		names[i] = lks_import_formats[i]->name;
	}
	lks_err("unknown import format '%s' (known: %s)", name,
	        lks_names_join(names, sizeof(names[0]), 0, LKS_IMPORT_NFMT, known, sizeof(known)));
	return NULL;
}

_Static_assert(LKS_BLOCK_MAX_RANK == LKS_IMPORT_MAX_RANK, "a block holds every rank a log may");

/* Whether the metrics of kind perf (1 performance, 0 numerics) in a (na) and b (nb) are
   the same, in order: names, and values bit for bit, any NaN as any other. */
static int lks_vals_same(const struct lks_import_mval *a, int na,
                         const struct lks_import_mval *b, int nb, int perf)
{
	for (int i = 0, j = 0;; i++, j++) {
		while (i < na && (a[i].kind == LKS_METRIC_PERFORMANCE) != perf)
			i++;
		while (j < nb && (b[j].kind == LKS_METRIC_PERFORMANCE) != perf)
			j++;
		if (i == na || j == nb)
			return i == na && j == nb;
		if (a[i].nlen != b[j].nlen || memcmp(a[i].name, b[j].name, (size_t)a[i].nlen)
		    || (memcmp(&a[i].value, &b[j].value, sizeof(double))
		        && !(isnan(a[i].value) && isnan(b[j].value))))
			return 0;
	}
}

/* The record's metrics kept as its rank's last (a step that comes again is held to them):
   only the values where the names are those kept already (the same layout). */
static int lks_rank_keep(struct lks_rank_last *last, const lks_import_rec *rec)
{
	if (rec->layout && rec->layout == last->layout) {
		for (int i = 0; i < rec->n; i++)
			last->m[i].value = rec->m[i].value;
		return 0;
	}
	if (rec->n > last->cap) {
		struct lks_import_mval *m = realloc(last->m, (size_t)rec->n * sizeof(*m));

		if (!m)
			return lks_err("out of memory");
		last->m = m;
		last->cap = rec->n;
	}
	if (rec->n)  /* a step with no metrics: m may be none yet */
		memcpy(last->m, rec->m, (size_t)rec->n * sizeof(rec->m[0]));
	last->n = rec->n;
	last->layout = rec->layout;
	return 0;
}

void lks_import_ranks_free(struct lks_rank_last *ranks, int n)
{
	for (int k = 0; ranks && k < n; k++)
		free(ranks[k].m);
	free(ranks);
}

/* The block being filled: the writer's (a whole import) or the run's own (followed). */
static lks_block *lks_import_block(struct lks_import_run *r)
{
	return r->writer ? lks_import_writer_block(r->writer) : r->block;
}

void lks_import_lock(struct lks_import_run *r, int on)
{
	if (r->store_mu)
		(on ? pthread_mutex_lock : pthread_mutex_unlock)(r->store_mu);
}

/* import_run_impl.h */
int lks_import_flush(struct lks_import_run *r, int settle)
{
	int rc = 0;

	if (lks_block_records(lks_import_block(r)) > 0) {
		int64_t seq = r->next_seq++;
		const unsigned char *data;
		size_t len;

		if (r->writer) {
			rc = lks_import_writer_submit(r->writer, seq);
		} else if (!(rc = lks_block_encode(r->block, &data, &len))) {
			lks_import_lock(r, 1);
			rc = lks_store_import_block(r->store, r->run_id, seq, r->block);
			lks_import_lock(r, 0);
		}
	}
	if (!rc && settle && r->writer)
		rc = lks_import_writer_drain(r->writer);
	return rc ? -1 : 0;
}

/* A restart in the store: rank's records from step on dropped (lks_import_sink_rec). */
static int lks_import_restart(struct lks_import_run *r, int rank, int step)
{
	int rc;

	if (lks_import_flush(r, 1))
		return -1;
	lks_import_lock(r, 1);
	rc = lks_store_import_restart(r->store, r->run_id, rank, step, r->seq_below);
	lks_import_lock(r, 0);
	return rc;
}

/* The record into the block being filled; a full block is stored first. */
static int lks_import_store_rec(struct lks_import_run *r, const lks_import_rec *rec)
{
	int rc;

	if ((rc = lks_block_add_rec(lks_import_block(r), rec)) == 1) {
		if (lks_import_flush(r, 0))
			return -1;
		rc = lks_block_add_rec(lks_import_block(r), rec);
	}
	if (rc)
		return lks_err("'%s':%ld: %s", r->path, rec->line, lks_errmsg());
	return 0;
}

static int lks_follow_flush(struct lks_import_run *r)
{
	struct lks_import_follow *w = r->follow;
	int rc = 0;

	for (int i = 0; !rc && i < w->n; i++)
		rc = lks_import_store_rec(r, &w->recs[i]);
	if (!rc && (lks_import_flush(r, 1) || lks_store_import_commit(r->store)))
		rc = -1;
	if (!rc && w->n && w->recs[0].step > w->stored)
		w->stored = w->recs[0].step;
	if (!rc && w->n)
		rc = w->fn(w->arg, w->recs, w->n);
	if (!rc && w->n && w->end_step >= 0 && w->recs[0].step >= w->end_step)
		rc = LKS_IMPORT_REACHED;
	w->n = 0;
	return rc;
}

static int lks_follow_push(struct lks_import_run *r, const lks_import_rec *rec)
{
	struct lks_import_follow *w = r->follow;
	int rc;

	if (w->n && rec->step != w->recs[0].step) {
		if (!w->known)
			w->known = w->n;
		if ((rc = lks_follow_flush(r)))
			return rc;
	}
	if (w->n == w->cap) {
		lks_import_rec *p = realloc(w->recs, (size_t)(w->cap ? 2 * w->cap : 4) * sizeof(*p));

		if (!p)
			return lks_err("out of memory");
		w->recs = p;
		w->cap = w->cap ? 2 * w->cap : 4;
	}
	w->recs[w->n++] = *rec;
	return w->known && w->n >= w->known ? lks_follow_flush(r) : 0;
}

void lks_import_names_free(struct lks_import_names *x)
{
	for (int i = 0; i < x->n; i++)
		free(x->name[i]);
	free(x->name);
	free(x->line);
	lks_name_index_release(&x->index);
}

/* import_run_impl.h */
int lks_import_name(struct lks_import_run *r, const char *name, long line)
{
	struct lks_import_names *x = &r->names;
	char at[32] = "";

	if (lks_name_index_find(&x->index, x->name, name) >= 0)
		return 0;
	if (x->n == LKS_IMPORT_MAX_NAMES) {
		if (line > 0)
			snprintf(at, sizeof(at), ":%ld", line);
		return lks_err("'%s'%s: metric '%s' is one name too many: a run holds at most %d "
		               "metric names, and more could not be read back", r->path, at, name,
		               LKS_IMPORT_MAX_NAMES), LKS_E_BAD_INPUT;
	}
	if (lks_room_for((void **)&x->name, &x->cap, (size_t)x->n, sizeof(*x->name))
	    || lks_room_for((void **)&x->line, &x->line_cap, (size_t)x->n, sizeof(*x->line)))
		return -1;
	if (!(x->name[x->n] = strdup(name)))
		return lks_err("out of memory");
	if (lks_name_index_add(&x->index, name, x->n)) {
		free(x->name[x->n]);
		return -1;
	}
	x->line[x->n++] = line;
	return 0;
}

/* The record's names counted (lks_import_name), unless its layout says they were. */
static int lks_import_names_take(struct lks_import_run *r, const lks_import_rec *rec)
{
	int rc;

	if (rec->layout && rec->layout == r->names.layout)
		return 0;
	for (int i = 0; i < rec->n; i++)
		if ((rc = lks_import_name(r, rec->m[i].name, rec->line)))
			return rc;
	r->names.layout = rec->layout;
	return 0;
}

/* import_run_impl.h */
int lks_import_ranks_grow(struct lks_import_run *r, int n)
{
	struct lks_rank_last *p;

	if (n <= r->nranks)
		return 0;
	if (!(p = realloc(r->ranks, (size_t)n * sizeof(*p))))
		return lks_err("out of memory");
	memset(p + r->nranks, 0, (size_t)(n - r->nranks) * sizeof(*p));
	r->ranks = p;
	r->nranks = n;
	return 0;
}

static int lks_import_sink_rec(void *arg, const lks_import_rec *rec)
{
	struct lks_import_run *r = arg;
	struct lks_rank_last *last;
	int rc;

	if (r->only && (rec->rank >= r->nonly || !r->only[rec->rank]))
		return lks_err("'%s':%ld: rank %d is not one of the ranks given (%s)", r->path,
		               rec->line, rec->rank, r->ranks_text), LKS_E_BAD_INPUT;
	if (lks_import_ranks_grow(r, rec->rank + 1))
		return -1;
	last = &r->ranks[rec->rank];
	/* steps counted in a file go on in no other (a resumed console begins at 1 again, a
	   restart that dropped the steps before: import_hf_trainer.c) */
	if ((rec->counted || r->counted) && r->nfiles > 1)
		return lks_err("'%s': a console that prints no step (the n-th loss is step n) is a "
		               "run's only file: give a resumed run's trainer_state.json (its "
		               "log_history has the steps) or its event files",
		               r->counted ? r->counted : r->path), LKS_E_BAD_INPUT;
	r->counted = rec->counted && !r->counted ? r->path : r->counted;
	/* a later file that logs a rank's steps again is the run restarted from a checkpoint:
	   it goes on from there, and what the earlier files logged from that step on is
	   dropped (the job that logged it died) */
	if (last->seen && rec->step <= last->step && r->file > last->file) {
		if (r->store && lks_import_restart(r, rec->rank, rec->step))
			return -1;
		r->restarts++;
		last->seen = 0;
		if (r->follow && r->follow->stored >= rec->step)  /* those steps are gone */
			r->follow->stored = rec->step - 1;
	}
	if (last->seen && rec->step < last->step)
		return lks_err("'%s':%ld: step %d of rank %d goes backwards (step %d at line %ld)",
		               r->path, rec->line, rec->step, rec->rank, last->step, last->line),
		       LKS_E_BAD_INPUT;
	/* a step again: the same line printed twice, or, where lines name no rank, by several
	   ranks, each with its own timings (tps, tflops) but the job's loss and grad norm */
	if (last->seen && rec->step == last->step) {
		int num = lks_vals_same(rec->m, rec->n, last->m, last->n, 0);

		if (!num && !rec->ranked)
			return lks_err("'%s':%ld: step %d again with other values (line %ld), and the "
			               "lines name no rank: where several ranks print, give each line "
			               "its rank (torchrun --role rank --tee 3 writes \"[rank0]:\"), or "
			               "log one rank (--local-ranks-filter)", r->path, rec->line,
			               rec->step, last->line), LKS_E_BAD_INPUT;
		if (!num || (rec->ranked && !lks_vals_same(rec->m, rec->n, last->m, last->n, 1)))
			return lks_err("'%s':%ld: step %d of rank %d again with other values (line %ld)",
			               r->path, rec->line, rec->step, rec->rank, last->line),
			       LKS_E_BAD_INPUT;
		return 1;  /* repeated: counted by the caller */
	}
	if (lks_rank_keep(last, rec))
		return -1;
	if ((rc = lks_import_names_take(r, rec)))
		return rc;
	last->first = last->has_first ? last->first : rec->step;
	last->has_first = 1;
	last->seen = 1;
	last->step = rec->step;
	last->line = rec->line;
	last->file = r->file;
	if (r->follow)
		return lks_follow_push(r, rec);
	return r->store ? lks_import_store_rec(r, rec) : 0;
}

/* rec as rank - 1 wrote it (r->folder_rank): a copy, its metrics the n it has */
static const lks_import_rec *lks_import_rank_as(struct lks_import_run *r,
                                                const lks_import_rec *rec)
{
	if (!r->ranked && !(r->ranked = malloc(sizeof(*r->ranked))))
		return lks_err("out of memory"), NULL;
	memcpy(r->ranked, rec, offsetof(lks_import_rec, m) + (size_t)rec->n * sizeof(rec->m[0]));
	r->ranked->layout = rec->layout;
	r->ranked->rank = r->folder_rank - 1;
	r->ranked->ranked = 1;
	return r->ranked;
}

int lks_import_sink_counted(void *arg, const lks_import_rec *rec)
{
	struct lks_import_ctx *x = arg;
	int rc;

	if (x->run->folder_rank && !(rec = lks_import_rank_as(x->run, rec)))
		return -1;
	rc = lks_import_sink_rec(x->run, rec);
	if (rc == 1)
		x->c->repeated++;
	return rc == 1 ? 0 : rc;
}

/* {"import": {"format": F, "files": [...]}}, "ranks": R where the log holds those only,
   "tag_map": {LABEL: "NAME:KIND"} where labels were the user's */
static char *lks_import_fingerprint(const lks_import_opts *op, const char *const *paths, int n)
{
	json_t *files = json_array(), *o, *im;
	char *text;

	for (int i = 0; i < n; i++)
		json_array_append_new(files, json_string(paths[i]));
	o = json_pack("{s:{s:s,s:o}}", "import", "format", op->fmt->name, "files", files);
	im = json_object_get(o, "import");
	if (im && op->ranks && *op->ranks && json_object_set_new(im, "ranks", json_string(op->ranks)))
		im = NULL;
	if (im && op->tag_map && json_object_set_new(im, "tag_map",
	                                             lks_import_tag_map_json(op->tag_map)))
		im = NULL;
	text = im ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

/* The last step any rank logged (a restart may have taken a rank back). */
static int lks_import_last_step(const struct lks_import_run *r)
{
	int last = 0;

	for (int k = 0; k < r->nranks; k++)
		if (r->ranks[k].seen && r->ranks[k].step > last)
			last = r->ranks[k].step;
	return last;
}

/* Every rank from 0 to the last must have steps, or every rank given (o->ranks) where the
   log holds some ranks only; something must have been read. */
static int lks_import_ranks_check(const struct lks_import_run *r, const char *what)
{
	char had[96];
	size_t n = 0;

	if (r->nranks == 0)
		return lks_err("%s: no metric lines", what), LKS_E_BAD_INPUT;
	for (int k = 0; r->only && k < r->nonly; k++)
		if (r->only[k] && (k >= r->nranks || !r->ranks[k].seen))
			return lks_err("%s: rank %d has no steps (the ranks given: %s)", what, k,
			               r->ranks_text), LKS_E_BAD_INPUT;
	for (int k = 0; !r->only && k < r->nranks; k++) {
		if (r->ranks[k].seen)
			continue;
		/* the ranks that have steps, as --ranks takes them: a log of some ranks only
		   (torchrun --local-ranks-filter, local rank 0 of each node) imports with it */
		for (int j = 0; j < r->nranks && n + 8 < sizeof(had); j++)
			if (r->ranks[j].seen)
				n += (size_t)snprintf(had + n, sizeof(had) - n, "%s%d", n ? "," : "", j);
		return lks_err("%s: rank %d has no steps (ranks up to %d do); a log of some ranks "
		               "only imports with the ranks it holds given (--ranks %s%s)", what, k,
		               r->nranks - 1, had, n + 8 < sizeof(had) ? "" : ",..."),
		       LKS_E_BAD_INPUT;
	}
	return 0;
}

/* The ranks of text ("0,8", "0-3,8": ranks and ranges, comma separated, 0 to
   LKS_IMPORT_MAX_RANK) as a map of *n bytes, one per rank up to the last given, 1 where
   given; *map NULL when text is NULL or empty. 0, or LKS_E_BAD_INPUT (lks_err). */
static int lks_import_ranks_map(const char *text, unsigned char **map, int *n)
{
	const char *p = text;
	int twice = 0;

	*map = NULL;
	*n = 0;
	if (!text || !*text)
		return 0;
	if (!(*map = calloc(LKS_IMPORT_MAX_RANK + 1, 1)))
		return lks_err("out of memory");
	for (;;) {
		char *end;
		long lo, hi;

		if (!isdigit((unsigned char)*p)
		    || (hi = lo = strtol(p, &end, 10)) > LKS_IMPORT_MAX_RANK)
			break;
		if (*(p = end) == '-') {
			if (!isdigit((unsigned char)*++p) || (hi = strtol(p, &end, 10)) < lo
			    || hi > LKS_IMPORT_MAX_RANK)
				break;
			p = end;
		}
		for (long k = lo; k <= hi; k++)
			twice |= (*map)[k], (*map)[k] = 1;
		*n = (int)hi + 1 > *n ? (int)hi + 1 : *n;
		if (!*p && !twice)
			return 0;
		if (twice || *p++ != ',')
			break;
	}
	free(*map);
	*map = NULL;
	return lks_err("bad ranks '%s': want ranks and ranges from 0 to %d, comma separated, "
	               "each rank once (0,8 or 0-3,8)", text, LKS_IMPORT_MAX_RANK), LKS_E_BAD_INPUT;
}

int lks_import_ranks_valid(const char *text)
{
	unsigned char *map;
	int n, rc = lks_import_ranks_map(text, &map, &n);

	free(map);
	return rc;
}

/* import_run_impl.h */
int lks_import_file(struct lks_import_run *r, const lks_import_format *fmt, const char *path,
                    lks_import_counts *c)
{
	return lks_import_file_series(r, fmt, path, NULL, 0, c);
}

/* import_run_impl.h */
int lks_import_file_series(struct lks_import_run *r, const lks_import_format *fmt,
                           const char *path, const lks_import_series *series, int nseries,
                           lks_import_counts *c)
{
	struct lks_import_ctx x = { r, c };
	int in = !strcmp(path, "-");  /* standard input */
	FILE *f = in ? stdin : fopen(path, "r");
	struct stat st = { 0 };
	off_t starts[LKS_IMPORT_PARTS_MAX];
	int n, rc;

	if (!f)
		return lks_err("cannot open '%s'", path), LKS_E_BAD_INPUT;
	if (!fstat(fileno(f), &st) && S_ISDIR(st.st_mode)) {  /* fopen opens one for reading */
		fclose(f);
		if (fmt->id == LKS_IMPORT_TENSORBOARD)
			return lks_import_folder(r, fmt, path, c);
		return lks_err("'%s' is a folder, not a log", path), LKS_E_BAD_INPUT;
	}
	r->file = r->nfiles++;
	r->path = path;
	r->folder_rank = in ? 0 : lks_import_file_rank(fmt, path) + 1;
	if (nseries) {
		rc = lks_import_tensorboard_series(path, f, series, nseries, lks_import_sink_counted,
		                                   &x, c);
	} else if (!in && !r->follow && S_ISREG(st.st_mode)
	           && (n = lks_import_starts(fmt, fileno(f), st.st_size, starts)) > 1) {
		r->parts = n > r->parts ? n : r->parts;
		rc = lks_import_parts(r, fmt, path, f, &st, starts, n, c);
	} else {
		rc = lks_import_format_parse(fmt, path, f, lks_import_sink_counted, &x, c);
	}
	if (!in)
		fclose(f);
	return rc;
}

/* The run row of o, inside the import's first transaction. */
int lks_import_begin(lks_store *store, const lks_import_opts *o,
                            const char *const *paths, int npaths, int64_t *run_id)
{
	char backend[64], *fp;
	lks_run_info info = { .suite_id = o->suite_id, .case_name = o->case_name,
	                      .case_path = o->case_path, .case_text = o->case_text,
	                      .run_name = o->run_name, .recipe = "import", .backend = backend };
	int rc;

	snprintf(backend, sizeof(backend), "import:%s", o->fmt->name);
	if (!(fp = lks_import_fingerprint(o, paths, npaths)))
		return lks_err("out of memory");
	info.fingerprint = fp;
	rc = lks_store_import_begin(store, &info, run_id);
	free(fp);
	return rc;
}

int lks_import_files(lks_store *store, const lks_import_opts *o, const char *const *paths,
                     int npaths, lks_import_result *res)
{
	pthread_mutex_t store_mu = PTHREAD_MUTEX_INITIALIZER;
	double t0;
	struct lks_import_run r = { .store = store, .next_seq = 1, .seq_below = INT64_MAX,
	                            .store_mu = &store_mu, .ranks_text = o->ranks,
	                            .tag_map = o->tag_map };
	unsigned char *only;
	int rc = -1;

	if (o->fmt->tensor_parse)
		return lks_import_tensor_files(store, o, paths, npaths, res);
	memset(res, 0, sizeof(*res));
	if ((rc = lks_import_ranks_map(o->ranks, &only, &r.nonly)))
		return rc;
	r.only = only;
	if (store)
		lks_store_bulk_begin(store);  /* one large transaction (trace_store.h) */
	if (store && lks_import_begin(store, o, paths, npaths, &r.run_id)) {
		lks_store_bulk_end(store);
		free(only);
		return -1;
	}
	if (store && !(r.writer = lks_import_writer_start(store, r.run_id, &store_mu))) {
		lks_store_import_end(store, r.run_id, 0, 0, 0);
		lks_store_bulk_end(store);
		free(only);
		return -1;
	}
	rc = 0;
	lks_import_tag_map_use(o->tag_map);
	for (int i = 0; !rc && i < npaths; i++)
		rc = lks_import_file(&r, o->fmt, paths[i], &res->counts);
	lks_import_tag_map_use(NULL);  /* the map is the caller's again */
	if (!rc) {
		char what[512];

		snprintf(what, sizeof(what), npaths == 1 ? "'%s'" : "the files of '%s'",
		         npaths == 1 ? paths[0] : o->run_name);
		rc = lks_import_ranks_check(&r, what);
	}
	t0 = lks_now();
	if (!rc && store && lks_import_flush(&r, 1))
		rc = -1;
	lks_import_writer_stop(r.writer);  /* before the store is this thread's again */
	if (store && lks_store_import_end(store, r.run_id, lks_import_last_step(&r), r.nranks,
	                                  rc == 0) && !rc)
		rc = -1;
	if (store)
		lks_store_bulk_end(store);
	if (!rc) {
		res->commit_s = lks_now() - t0;
		res->run_id = r.run_id;
		res->steps = lks_import_last_step(&r);
		res->counts.restarts = r.restarts;
		res->world_size = r.nranks;
		res->parts = r.parts ? r.parts : 1;
		lks_import_unread_take(res, &r);
	}
	lks_import_ranks_free(r.ranks, r.nranks);
	lks_import_names_free(&r.names);
	free(r.ranked);
	free(only);
	return rc;
}

int lks_import_follow(lks_store *store, const lks_import_opts *o, const char *path, FILE *f,
                      int end_step, lks_import_step_fn fn, lks_import_more_fn more, void *arg,
                      lks_import_result *res)
{
	struct lks_import_follow w = { .end_step = end_step, .fn = fn, .arg = arg };
	struct lks_import_run r = { .store = store, .path = path, .follow = &w, .next_seq = 1,
	                            .seq_below = INT64_MAX, .ranks_text = o->ranks,
	                            .tag_map = o->tag_map };
	struct lks_import_ctx x = { &r, &res->counts };
	unsigned char *only;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = lks_import_ranks_map(o->ranks, &only, &r.nonly)))
		return rc;
	r.only = only;
	if (!(r.block = lks_block_new()) || lks_import_begin(store, o, &path, 1, &r.run_id)) {
		lks_block_free(r.block);
		free(only);
		return -1;
	}
	lks_import_tag_map_use(o->tag_map);
	for (;;) {
		rc = lks_import_format_parse(o->fmt, path, f, lks_import_sink_counted, &x,
		                             &res->counts);
		if (!rc && w.n) {
			w.known = w.known ? w.known : w.n;
			rc = lks_follow_flush(&r);  /* the end of a file completes its last step */
		}
		if (rc || !more || !more(arg))
			break;
		clearerr(f);
		r.file++;  /* the log again from a start: a later file of a whole import's */
	}
	lks_import_tag_map_use(NULL);
	if (!rc) {
		char what[512];

		snprintf(what, sizeof(what), "'%s'", path);
		rc = lks_import_ranks_check(&r, what);
	}
	/* an end step given and not reached: the log stopped short, the run not complete */
	if (lks_store_import_end(store, r.run_id, w.stored, r.nranks,
	                         (!rc && end_step < 0) || rc == LKS_IMPORT_REACHED)
	    && (!rc || rc == LKS_IMPORT_REACHED))
		rc = -1;
	res->run_id = r.run_id;
	res->steps = w.stored;
	res->world_size = r.nranks;
	res->parts = 1;
	lks_import_ranks_free(r.ranks, r.nranks);
	lks_import_names_free(&r.names);
	free(w.recs);
	lks_block_free(r.block);
	free(only);
	return rc;
}
