/*
 * import_tensors.c: the driver of the tensor trace formats (import.h,
 * lks_import_tensor_files): their records, one per tensor, stored as one run
 * (tensor_trace.h), and the one table of tensor statistics' names.
 *
 * A run's tensors are its (name, phase) pairs, numbered in the order first read (the
 * run's tensors table); a record is keyed by that number and its microbatch. The records of
 * one (step, rank) go into keyed blocks stored as they fill, so memory is a block and the
 * names, whatever the length of the dump. A (step, rank)'s records must come together, and
 * a rank's steps in order: a step of a rank met again after another is bad input at its
 * line (two dumps of one rank given, or a file of interleaved steps, which no framework
 * writes). A dump that says no step (one file a step: DebugMode's) gives its records the
 * step LKS_TENSOR_STEP_OF_FILE, and the driver the file's place among its rank's files:
 * the n-th file of a rank with tensors is step n. Any bad line stores nothing: the run is
 * one transaction.
 */
#include <dirent.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/import/import.h"
#include "harness/import/import_impl.h"
#include "harness/import/import_run_impl.h"
#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "kernels/err.h"

/* ---- statistics' names ---- */

/* A format's label of a statistic and lockstep's name of it: lockstep's own stat rows'
   names first (so that a dump and a lockstep run name alike what both have), then the
   names TransformerEngine's debug API (nvidia-dlfw-inspect) gives its statistics. */
static const struct { const char *label, *name; } lks_tstat_labels[] = {
	{ "l2", "l2" }, { "amax", "amax" }, { "scale", "scale" }, { "nonfinite", "nonfinite" },
	{ "underflow", "underflow" }, { "saturated", "saturated" },
	{ "min", "min" }, { "max", "max" }, { "mean", "mean" }, { "std", "std" },
	{ "l1", "l1" }, { "dynamic_range", "dynamic_range" }, { "numel", "numel" },
	{ "l2_norm", "l2" }, { "l1_norm", "l1" }, { "cur_amax", "amax" },
	{ "underflows%", "underflow_pct" }, { "scale_inv_min", "scale_inv_min" },
	{ "scale_inv_max", "scale_inv_max" }, { "mse", "mse" },
	{ "nan_count", "nan_count" }, { "inf_count", "inf_count" },
};

const char *lks_tensor_stat_name(const char *label, size_t len, char *buf)
{
	size_t o = 0;

	for (size_t i = 0; i < sizeof(lks_tstat_labels) / sizeof(lks_tstat_labels[0]); i++)
		if (strlen(lks_tstat_labels[i].label) == len
		    && !memcmp(lks_tstat_labels[i].label, label, len))
			return lks_tstat_labels[i].name;
	if (len == 0)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		char c = label[i];
		const char *w = c == '%' ? "pct" : NULL;
		size_t wl = w ? 3 + (o > 0) : 1;

		if (o + wl >= LKS_IMPORT_NAME_MAX)
			return NULL;
		if (w) {
			if (o)
				buf[o++] = '_';
			memcpy(buf + o, w, 3);
			o += 3;
			continue;
		}
		buf[o++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		           ? c : '_';
	}
	buf[o] = 0;
	return buf;
}

int lks_tensor_rec_stat(lks_tensor_rec *t, const char *label, size_t len, double value,
                        int64_t dec, const char *path)
{
	char buf[LKS_IMPORT_NAME_MAX];
	const char *name = lks_tensor_stat_name(label, len, buf);
	lks_import_rec *rec = &t->rec;
	size_t nl;

	if (!name)
		return lks_err("'%s':%ld: a bad statistic name '%.*s'", path, rec->line,
		               (int)(len > 64 ? 64 : len), label), LKS_E_BAD_INPUT;
	nl = strlen(name);
	for (int i = 0; i < rec->n; i++)
		if (!strcmp(rec->m[i].name, name))
			return lks_err("'%s':%ld: statistic '%s' twice for tensor '%s'", path,
			               rec->line, name, t->name), LKS_E_BAD_INPUT;
	if (rec->n == LKS_IMPORT_MAX_METRICS)
		return lks_err("'%s':%ld: more than %d statistics for tensor '%s'", path, rec->line,
		               LKS_IMPORT_MAX_METRICS, t->name), LKS_E_BAD_INPUT;
	memset(rec->m[rec->n].name, 0, 16);  /* NUL padded to 16 (import_rec.h) */
	memcpy(rec->m[rec->n].name, name, nl + 1);
	rec->m[rec->n].nlen = (int)nl;
	rec->m[rec->n].kind = LKS_METRIC_NUMERICS;
	rec->m[rec->n].value = value;
	rec->m[rec->n].dec = dec;
	rec->n++;
	return 0;
}

/* ---- where a dump's path puts it ---- */

/* The number after the last word w in s (n bytes) that starts s or follows a byte that is
   no letter, an optional '_' or '-' between, digits up to a byte that is none or the end:
   0 and *out; -1 none; LKS_IMPORT_NUMBER_OVER too big. */
static int lks_path_number_after(const char *s, size_t n, const char *w, int *out)
{
	size_t wl = strlen(w);
	int found = -1;

	for (size_t i = 0; i + wl <= n; i++) {
		size_t d = i + wl, e;
		char p = i ? (char)(s[i - 1] | 0x20) : 0;

		if ((p >= 'a' && p <= 'z') || strncmp(s + i, w, wl))
			continue;
		if (d < n && (s[d] == '_' || s[d] == '-'))
			d++;
		for (e = d; e < n && s[e] >= '0' && s[e] <= '9'; e++)
			;
		if (e == d || e - d > 10)
			continue;
		found = lks_import_step(s + d, e - d, out);
		if (found == LKS_IMPORT_NUMBER_OVER)
			return found;
	}
	return found;
}

int lks_tensor_path_place(const char *path, int none_step, int *step, int *rankp)
{
	const char *base = strrchr(path, '/');
	int by_step = 0, by_iter = 0, rank = 0, a, b;

	base = base ? base + 1 : path;
	a = lks_path_number_after(path, strlen(path), "step", &by_step);
	b = lks_path_number_after(path, strlen(path), "iteration", &by_iter);
	if (a == LKS_IMPORT_NUMBER_OVER || b == LKS_IMPORT_NUMBER_OVER)
		return lks_err("'%s': the step its name says is over %d", path,
		               LKS_IMPORT_MAX_STEP), LKS_E_BAD_INPUT;
	if (a == 0 && b == 0)
		return lks_err("'%s': its name says both a step and an iteration: one of them",
		               path), LKS_E_BAD_INPUT;
	*step = a == 0 ? by_step : b == 0 ? by_iter : none_step;
	if (lks_path_number_after(base, strlen(base), "rank", &rank) == LKS_IMPORT_NUMBER_OVER
	    || rank > LKS_IMPORT_MAX_RANK)
		return lks_err("'%s': the rank its name says is over %d", path,
		               LKS_IMPORT_MAX_RANK), LKS_E_BAD_INPUT;
	*rankp = rank;
	return 0;
}

/* ---- the driver ---- */

struct lks_timport {
	lks_store *store;
	int64_t run_id;
	const char *path;
	lks_import_counts *c;
	lks_block *b;
	int step, rank, seq;      /* the (step, rank) being filled, its next row; rank -1: none */
	int *last;                /* (nranks) per rank, the last step stored; -1: none */
	int nranks, max_step;
	int *nfiles;              /* (nfiles_n) per rank, its files whose records' step is
	                             their place (LKS_TENSOR_STEP_OF_FILE) */
	int nfiles_n;
	int frank, fstep;         /* the file's rank and step so placed; frank -1: none yet */
	lks_import_rec *placed;   /* a record so placed, with its step */
	lks_tensor_map tensors;   /* seq i: the i-th met */
};

/* The block of (step, rank) being filled stored (nothing without a store). */
static int lks_timport_flush(struct lks_timport *x)
{
	int rc = 0;

	if (x->rank >= 0 && lks_block_records(x->b)) {
		if (x->store)
			rc = lks_store_tensor_block(x->store, x->run_id, x->step, x->rank, x->seq, x->b);
		else
			lks_block_reset(x->b);
		x->seq++;
	}
	return rc;
}

/* The seq of (name, phase), new ones numbered on: -1 (lks_err), or LKS_E_BAD_INPUT for the
   name one past LKS_TENSOR_MAX_NAMES. */
static int lks_timport_tensor(struct lks_timport *x, const char *name, lks_phase phase,
                              long line)
{
	int i = lks_tensor_map_find(&x->tensors, name, phase);

	if (i >= 0)
		return i;
	if (x->tensors.n == LKS_TENSOR_MAX_NAMES)
		return lks_err("'%s':%ld: tensor '%.64s' is one past the %d names a trace may "
		               "hold", x->path, line, name, LKS_TENSOR_MAX_NAMES), LKS_E_BAD_INPUT;
	if (lks_tensor_map_add(&x->tensors, name, phase, x->tensors.n))
		return -1;
	return x->tensors.n - 1;
}

/* rec with the step of its file's place among its rank's files (LKS_TENSOR_STEP_OF_FILE):
   x->placed, or NULL (lks_err: out of memory). */
static const lks_import_rec *lks_timport_place(struct lks_timport *x, const lks_import_rec *rec)
{
	if (x->frank != rec->rank) {
		if (rec->rank >= x->nfiles_n) {
			int *p = realloc(x->nfiles, ((size_t)rec->rank + 1) * sizeof(*p));

			if (!p)
				return lks_err("out of memory"), NULL;
			for (int r = x->nfiles_n; r <= rec->rank; r++)
				p[r] = 0;
			x->nfiles = p;
			x->nfiles_n = rec->rank + 1;
		}
		x->frank = rec->rank;
		x->fstep = ++x->nfiles[rec->rank];
	}
	if (!x->placed && !(x->placed = malloc(sizeof(*x->placed))))
		return lks_err("out of memory"), NULL;
	memcpy(x->placed, rec, sizeof(*rec));
	x->placed->step = x->fstep;
	return x->placed;
}

static int lks_timport_sink(void *arg, const lks_tensor_rec *t)
{
	struct lks_timport *x = arg;
	const lks_import_rec *rec = &t->rec;
	lks_block_key key = { .micro = t->micro, .has_hash = t->has_hash, .hash = t->hash };
	int rc;

	if (rec->step == LKS_TENSOR_STEP_OF_FILE && rec->rank >= 0
	    && rec->rank <= LKS_IMPORT_MAX_RANK && !(rec = lks_timport_place(x, rec)))
		return -1;

	if (!t->name[0] || strnlen(t->name, LKS_TENSOR_NAME_MAX) == LKS_TENSOR_NAME_MAX)
		return lks_err("'%s':%ld: a tensor without a name, or one of %d bytes or more",
		               x->path, rec->line, LKS_TENSOR_NAME_MAX), LKS_E_BAD_INPUT;
	if (rec->step < 0 || rec->rank < 0 || rec->rank > LKS_IMPORT_MAX_RANK || t->micro < -1)
		return lks_err("'%s':%ld: step %d rank %d microbatch %d out of range", x->path,
		               rec->line, rec->step, rec->rank, t->micro), LKS_E_BAD_INPUT;
	if (rec->step != x->step || rec->rank != x->rank) {
		if (lks_timport_flush(x))
			return -1;
		if (rec->rank >= x->nranks) {
			int *p = realloc(x->last, ((size_t)rec->rank + 1) * sizeof(*p));

			if (!p)
				return lks_err("out of memory");
			for (int r = x->nranks; r <= rec->rank; r++)
				p[r] = -1;
			x->last = p;
			x->nranks = rec->rank + 1;
		}
		if (x->last[rec->rank] >= rec->step)
			return lks_err("'%s':%ld: step %d of rank %d after its step %d: a rank's "
			               "tensors of a step come together, its steps in order", x->path,
			               rec->line, rec->step, rec->rank, x->last[rec->rank]),
			       LKS_E_BAD_INPUT;
		x->last[rec->rank] = rec->step;
		x->step = rec->step;
		x->rank = rec->rank;
		x->seq = 0;
		if (rec->step > x->max_step)
			x->max_step = rec->step;
	}
	if ((key.tensor = lks_timport_tensor(x, t->name, t->phase, rec->line)) < 0)
		return key.tensor == LKS_E_BAD_INPUT ? LKS_E_BAD_INPUT : -1;
	if ((rc = lks_block_add_keyed(x->b, rec, &key)) == 1) {
		if (lks_timport_flush(x))
			return -1;
		rc = lks_block_add_keyed(x->b, rec, &key);
	}
	if (rc)
		return lks_err("'%s':%ld: %s", x->path, rec->line, lks_errmsg()), LKS_E_BAD_INPUT;
	x->c->records++;
	return 0;
}

/* Whether name matches one of pats, '|' between two (lks_import_format.tensor_files). */
static int lks_tensor_file_match(const char *pats, const char *name)
{
	char pat[256];

	for (const char *p = pats, *e; p; p = *e ? e + 1 : NULL) {
		e = strchr(p, '|');
		e = e ? e : p + strlen(p);
		if ((size_t)(e - p) < sizeof(pat)) {
			memcpy(pat, p, (size_t)(e - p));
			pat[e - p] = 0;
			if (!fnmatch(pat, name, 0))
				return 1;
		}
	}
	return 0;
}

/* Whether path's last component is name ("a/b/NAME", "a/b/NAME/") */
static int lks_ends_in(const char *path, const char *name)
{
	size_t n = strlen(path), k = strlen(name);

	while (n > 1 && path[n - 1] == '/')
		n--;
	return n >= k && !memcmp(path + n - k, name, k) && (n == k || path[n - k - 1] == '/');
}

static int lks_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One file, or a folder's files of the format in name order. */
static int lks_timport_path(struct lks_timport *x, const lks_import_format *fmt,
                            const char *path)
{
	int in = !strcmp(path, "-");
	FILE *f = in ? stdin : fopen(path, "r");
	struct stat st = { 0 };
	lks_import_counts fc = { 0 };
	int rc;

	if (!f)
		return lks_err("cannot open '%s'", path), LKS_E_BAD_INPUT;
	if (!fstat(fileno(f), &st) && S_ISDIR(st.st_mode)) {
		DIR *d = (fclose(f), opendir(path));
		struct dirent *e;
		char **files = NULL;
		size_t n = 0, cap = 0;

		if (!d)
			return lks_err("cannot read the folder '%s'", path), LKS_E_BAD_INPUT;
		rc = 0;
		while (!rc && (e = readdir(d)))
			if (fmt->tensor_files && lks_tensor_file_match(fmt->tensor_files, e->d_name)) {
				char *full = lks_import_path_in(path, e->d_name);

				if (!full || lks_room_for((void **)&files, &cap, n, sizeof(*files))) {
					free(full);
					rc = lks_err("out of memory");
					break;
				}
				files[n++] = full;
			}
		closedir(d);
		/* the framework's log folder: its tensor_folder, once (not that folder's own) */
		if (!rc && n == 0 && fmt->tensor_folder && !lks_ends_in(path, fmt->tensor_folder)) {
			char *sub = lks_import_path_in(path, fmt->tensor_folder);

			if (!sub)
				return lks_err("out of memory");
			if (!stat(sub, &st) && S_ISDIR(st.st_mode)) {
				rc = lks_timport_path(x, fmt, sub);
				free(sub);
				free(files);
				return rc;
			}
			free(sub);
		}
		if (!rc && n == 0)
			rc = (lks_err("'%s' holds no file of %s (%s)%s%s", path, fmt->name,
			              fmt->tensor_files ? fmt->tensor_files : "none",
			              fmt->tensor_folder ? ", nor a folder " : "",
			              fmt->tensor_folder ? fmt->tensor_folder : ""), LKS_E_BAD_INPUT);
		if (n)
			qsort(files, n, sizeof(*files), lks_name_cmp);
		for (size_t i = 0; !rc && i < n; i++)
			rc = lks_timport_path(x, fmt, files[i]);
		for (size_t i = 0; i < n; i++)
			free(files[i]);
		free(files);
		return rc;
	}
	x->path = path;
	x->rank = -1;  /* a new file begins its own (step, rank), and its own place */
	x->frank = -1;
	rc = fmt->tensor_parse(path, f, lks_timport_sink, x, &fc);  /* lines counted per file */
	x->c->lines += fc.lines;
	x->c->ignored += fc.ignored;
	if (!rc)
		rc = lks_timport_flush(x);
	if (!in)
		fclose(f);
	return rc;
}

int lks_import_tensor_files(lks_store *store, const lks_import_opts *o,
                            const char *const *paths, int npaths, lks_import_result *res)
{
	struct lks_timport x = { .store = store, .c = &res->counts, .rank = -1, .max_step = -1,
	                         .frank = -1 };
	int rc = 0;

	memset(res, 0, sizeof(*res));
	if (o->ranks)
		return lks_err("--ranks is for a log of some ranks; a tensor trace's ranks are "
		               "the ones it holds"), LKS_E_BAD_INPUT;
	if (!(x.b = lks_block_new()))
		return -1;
	if (store) {
		lks_store_bulk_begin(store);
		if (lks_import_begin(store, o, paths, npaths, &x.run_id)) {
			lks_store_bulk_end(store);
			lks_block_free(x.b);
			return -1;
		}
	}
	for (int i = 0; !rc && i < npaths; i++)
		rc = lks_timport_path(&x, o->fmt, paths[i]);
	for (int r = 0; !rc && r < x.nranks; r++)
		if (x.last[r] < 0)
			rc = (lks_err("%s: rank %d holds no tensor, but rank %d does",
			              npaths == 1 ? paths[0] : o->run_name, r, x.nranks - 1),
			      LKS_E_BAD_INPUT);
	if (!rc && x.nranks == 0)
		rc = (lks_err("%s: no tensor's statistics read",
		              npaths == 1 ? paths[0] : o->run_name), LKS_E_BAD_INPUT);
	if (!rc && store && lks_store_tensor_names(store, x.run_id, x.tensors.names,
	                                           x.tensors.phases, x.tensors.n))
		rc = -1;
	if (store) {
		if (lks_store_import_end(store, x.run_id, x.max_step, x.nranks, rc == 0) && !rc)
			rc = -1;
		lks_store_bulk_end(store);
	}
	if (!rc) {
		res->run_id = x.run_id;
		res->steps = x.max_step;
		res->world_size = x.nranks;
		res->parts = 1;
	}
	lks_tensor_map_release(&x.tensors);
	free(x.last);
	free(x.nfiles);
	free(x.placed);
	lks_block_free(x.b);
	return rc;
}
