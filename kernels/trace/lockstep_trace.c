/*
 * lockstep_trace.c: lockstep-trace (lockstep_trace.h), the library a training run calls to
 * trace its tensors with lockstep's statistics into lockstep's store.
 *
 * lks_trace_tensor measures the tensor at once, with the code lockstep's model traces its
 * own with (lks_stats_f32, kernels/cpu/stats.h: one pass over memory for the L2 norm, amax,
 * the non-finite count and the hash), and keeps the record in the step being filled.
 * lks_trace_step hands the step to the writer thread, which names its tensors in the run's
 * tensors table and stores its records as keyed blocks (harness/store/tensor_trace.h), one
 * transaction a step; at most two steps wait for it, so a rank that outruns its disk waits
 * rather than growing without bound. An error of the writer is kept and said by the next
 * call.
 *
 * A device tensor (lks_trace_tensor_device) is measured on its GPU by the cuda backend's
 * module (kernels/cuda/trace_dev.h, loaded as lockstep loads it: module.h), its record left
 * there until lks_trace_step brings the step's home in one copy.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/trace/lockstep_trace.h"
#include "harness/base/name.h"
#include "harness/store/fingerprint.h"
#include "harness/store/import_block.h"
#include "harness/store/tensor_trace.h"
#include "harness/store/trace_store.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/stats.h"
#include "kernels/element/cast.h"
#include "kernels/err.h"
#if LKS_HAVE_CUDA
#include "kernels/cuda/module.h"
#endif

/* Steps handed to the writer and not yet stored, at most. */
#define LKS_TRACE_QUEUE 2

struct lks_trace_rec {
	char name[LKS_TENSOR_NAME_MAX];
	lks_phase phase;
	int micro;
	double l2;
	float amax;
	int64_t nonfinite;
	uint64_t hash;
	int pending;              /* a device tensor's, measured on its GPU: filled at the step */
};

struct lks_trace_stepbuf {
	int step;
	struct lks_trace_rec *r;
	size_t n, cap;
};

struct lks_trace {
	lks_store *s;
	int64_t run_id;
	int rank, last_step;
	int stored;                               /* the last step the writer stored; -1: none */
	struct lks_trace_stepbuf cur;             /* being filled */
	float *scratch;                           /* a half tensor widened */
	size_t scratch_cap;
	void *dev;                                /* the device tensors' context (the module's) */
	size_t npending;                          /* device tensors of the step being filled */
	/* the writer: the steps handed over, oldest first */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct lks_trace_stepbuf queue[LKS_TRACE_QUEUE];
	int nqueue, stop, failed;
	char err[512];
	/* the writer's */
	lks_tensor_map tensors;                   /* the seqs of the names met */
	lks_block *b;
};

static __thread char lks_trace_errbuf[512];
static const float lks_trace_none;  /* what an empty tensor points at */

static int lks_trace_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(lks_trace_errbuf, sizeof(lks_trace_errbuf), fmt, ap);
	va_end(ap);
	return -1;
}

const char *lks_trace_error(void)
{
	return lks_trace_errbuf;
}

int lks_trace_version(void)
{
	return LKS_TRACE_API_VERSION;
}

/* ---- the writer ---- */

/* The seq of (name, phase), from the writer's map or the store. */
static int lks_trace_seq(lks_trace *t, const struct lks_trace_rec *r, int *seq)
{
	if ((*seq = lks_tensor_map_find(&t->tensors, r->name, r->phase)) >= 0)
		return 0;
	if (lks_store_trace_tensor(t->s, t->run_id, r->name, r->phase, seq))
		return -1;
	return lks_tensor_map_add(&t->tensors, r->name, r->phase, *seq);
}

/* One step's records stored, in one transaction. */
static int lks_trace_store_step(lks_trace *t, const struct lks_trace_stepbuf *sb)
{
	lks_import_rec *rec = malloc(sizeof(*rec));
	int part = 0, rc = -1;

	if (!rec)
		return lks_err("out of memory");
	if (lks_store_trace_begin(t->s))
		goto out;
	for (size_t i = 0; i < sb->n; i++) {
		const struct lks_trace_rec *r = &sb->r[i];
		lks_block_key key = { .micro = r->micro, .has_hash = 1, .hash = r->hash };
		static const char *const names[3] = { "l2", "amax", "nonfinite" };
		const double v[3] = { r->l2, r->amax, (double)r->nonfinite };
		int add;

		if (lks_trace_seq(t, r, &key.tensor))
			goto fail;
		memset(rec, 0, sizeof(*rec));
		rec->step = sb->step;
		rec->rank = t->rank;
		rec->n = 3;
		for (int k = 0; k < 3; k++) {
			strcpy(rec->m[k].name, names[k]);
			rec->m[k].nlen = (int)strlen(names[k]);
			rec->m[k].kind = LKS_METRIC_NUMERICS;
			rec->m[k].value = v[k];
			rec->m[k].dec = LKS_IMPORT_NO_DEC;
		}
		if ((add = lks_block_add_keyed(t->b, rec, &key)) == 1) {
			if (lks_store_tensor_block(t->s, t->run_id, sb->step, t->rank, part++, t->b))
				goto fail;
			add = lks_block_add_keyed(t->b, rec, &key);
		}
		if (add)
			goto fail;
	}
	if (lks_store_tensor_block(t->s, t->run_id, sb->step, t->rank, part, t->b)
	    || lks_store_trace_commit(t->s))
		goto fail;
	rc = 0;
	goto out;
fail:
	lks_block_reset(t->b);
	lks_store_trace_rollback(t->s);
out:
	free(rec);
	return rc;
}

static void *lks_trace_writer(void *arg)
{
	lks_trace *t = arg;

	pthread_mutex_lock(&t->mu);
	for (;;) {
		struct lks_trace_stepbuf sb;
		int rc;

		while (!t->nqueue && !t->stop)
			pthread_cond_wait(&t->cv, &t->mu);
		if (!t->nqueue)
			break;
		sb = t->queue[0];
		pthread_mutex_unlock(&t->mu);
		rc = t->failed ? 0 : lks_trace_store_step(t, &sb);
		pthread_mutex_lock(&t->mu);
		if (rc && !t->failed) {
			t->failed = 1;
			snprintf(t->err, sizeof(t->err), "step %d: %s", sb.step, lks_errmsg());
		} else if (!t->failed) {
			t->stored = sb.step;
		}
		free(sb.r);
		memmove(t->queue, t->queue + 1, (size_t)(--t->nqueue) * sizeof(t->queue[0]));
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* ---- the API ---- */

/* The run's fingerprint: the machine and lockstep's build, as a run lockstep trains has,
   and the API version. malloc'd; NULL when out of memory. */
static char *lks_trace_fingerprint(void)
{
	lks_fingerprint *fp = malloc(sizeof(*fp));
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	if (!fp)
		return NULL;
	if (!(m = open_memstream(&buf, &len))) {
		free(fp);
		return NULL;
	}
	lks_fingerprint_collect(fp);
	lks_fingerprint_add(fp, "trace_api", "%d", LKS_TRACE_API_VERSION);
	lks_fingerprint_print(fp, m, 1);
	free(fp);
	if (fclose(m)) {
		free(buf);
		return NULL;
	}
	return buf;
}

lks_trace *lks_trace_open(const char *db, const char *case_name, const char *run_name,
                          int rank, int world_size)
{
	return lks_trace_open_job(db, case_name, run_name, rank, world_size, NULL);
}

lks_trace *lks_trace_open_job(const char *db, const char *case_name, const char *run_name,
                              int rank, int world_size, const char *job)
{
	char options[300];
	lks_run_info info = { .case_name = case_name, .run_name = run_name, .recipe = "trace",
	                      .backend = LKS_TRACE_BACKEND, .world_size = world_size };
	lks_trace *t;
	char *fp = NULL;

	if (!db || !case_name || !run_name)
		return lks_trace_fail("lks_trace_open: a database, a case and a run name"), NULL;
	if (!*db)  /* SQLite would open a temporary database of its own */
		return lks_trace_fail("lks_trace_open: an empty database path"), NULL;
	if (lks_name_check("case", case_name, strlen(case_name))
	    || lks_name_check("run", run_name, strlen(run_name))
	    || (job && *job && lks_name_check("job", job, strlen(job))))
		return lks_trace_fail("%s", lks_errmsg()), NULL;
	if (job && *job) {
		snprintf(options, sizeof(options), "job=%s", job);
		info.options = options;
	}
	if (world_size < 1 || rank < 0 || rank >= world_size)
		return lks_trace_fail("rank %d of world size %d", rank, world_size), NULL;
	if (!(t = calloc(1, sizeof(*t))))
		return lks_trace_fail("out of memory"), NULL;
	t->rank = rank;
	t->last_step = -1;
	t->stored = -1;
	t->cur.step = -1;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	fp = lks_trace_fingerprint();
	info.fingerprint = fp;
	if (!fp || !(t->b = lks_block_new()) || lks_store_open(db, &t->s)
	    || lks_store_trace_join(t->s, &info, rank, &t->run_id)) {
		const char *why = fp ? lks_errmsg() : "out of memory";

		if (strstr(why, db))  /* the store's message names the file already */
			lks_trace_fail("%s", why);
		else
			lks_trace_fail("'%s': %s", db, why);
		goto fail;
	}
	free(fp);
	fp = NULL;
	if (pthread_create(&t->thread, NULL, lks_trace_writer, t)) {
		lks_trace_fail("cannot start the writer thread");
		goto fail;
	}
	return t;
fail:
	free(fp);
	lks_store_close(t->s);
	lks_block_free(t->b);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	free(t);
	return NULL;
}

/* x as float32, widened into t's scratch where it is a half type. */
static const float *lks_trace_f32(lks_trace *t, const void *data, size_t n, int dtype)
{
	if (dtype == LKS_TRACE_F32)
		return data;
	if (n > t->scratch_cap) {
		float *p = realloc(t->scratch, n * sizeof(*p));

		if (!p)
			return NULL;
		t->scratch = p;
		t->scratch_cap = n;
	}
	if (dtype == LKS_TRACE_BF16) {
		lks_bf16_to_f32_n(data, t->scratch, n);
	} else {
		const uint16_t *h = data;

		for (size_t i = 0; i < n; i++)
			t->scratch[i] = lks_f16_to_f32(h[i]);
	}
	return t->scratch;
}

/* A new record of the step being filled, its name, phase and microbatch checked and set;
   NULL after lks_trace_fail. */
static struct lks_trace_rec *lks_trace_rec_new(lks_trace *t, const char *name, int phase,
                                               int micro, int dtype, int have_data)
{
	struct lks_trace_rec *r;

	if (!t || !name || !have_data)
		return lks_trace_fail("lks_trace_tensor: no trace, name or data"), NULL;
	if (!*name || strlen(name) >= LKS_TENSOR_NAME_MAX)
		return lks_trace_fail("tensor '%.64s': a name of 1 to %d bytes", name,
		                      LKS_TENSOR_NAME_MAX - 1), NULL;
	if (phase < LKS_TRACE_FORWARD || phase > LKS_TRACE_RECOMPUTE || micro < -1)
		return lks_trace_fail("tensor '%s': phase %d, microbatch %d", name, phase, micro),
		       NULL;
	if (dtype < LKS_TRACE_F32 || dtype > LKS_TRACE_F16)
		return lks_trace_fail("tensor '%s': unknown dtype %d", name, dtype), NULL;
	if (t->cur.n == t->cur.cap) {
		size_t cap = t->cur.cap ? 2 * t->cur.cap : 256;
		struct lks_trace_rec *p = realloc(t->cur.r, cap * sizeof(*p));

		if (!p)
			return lks_trace_fail("out of memory"), NULL;
		t->cur.r = p;
		t->cur.cap = cap;
	}
	r = &t->cur.r[t->cur.n];
	strcpy(r->name, name);
	r->phase = (lks_phase)phase;
	r->micro = micro;
	r->pending = 0;
	return r;
}

int lks_trace_tensor(lks_trace *t, const char *name, int phase, int micro, const void *data,
                     size_t n, int dtype)
{
	struct lks_trace_rec *r = lks_trace_rec_new(t, name, phase, micro, dtype, data || !n);
	const float *x;

	if (!r)
		return -1;
	if (!n)  /* no values: no pointer read, whatever the dtype */
		x = &lks_trace_none;
	else if (!(x = lks_trace_f32(t, data, n, dtype)))
		return lks_trace_fail("out of memory");
	lks_stats_f32(x, n, &r->l2, &r->amax, &r->nonfinite, &r->hash);
	t->cur.n++;
	return 0;
}

/* ---- device tensors (the cuda backend's module measures them on their GPU) ---- */

#if LKS_HAVE_CUDA
/* The module, with a GPU to measure on; NULL after lks_trace_fail. */
static const lks_cuda_module *lks_trace_module(void)
{
	const lks_cuda_module *m = lks_cuda_module_load();
	lks_cuda_info info;

	if (!m)
		return lks_trace_fail("device tensors: %s", lks_errmsg()), NULL;
	m->info_get(&info);
	if (info.device_count <= 0)
		return lks_trace_fail("device tensors: CUDA sees no GPU here%s%s",
		                      info.device_error[0] ? ": " : "", info.device_error), NULL;
	return m;
}
#endif

int lks_trace_device(void)
{
#if LKS_HAVE_CUDA
	return lks_trace_module() != NULL;
#else
	lks_trace_fail("device tensors: this lockstep-trace was built without the cuda backend");
	return 0;
#endif
}

int lks_trace_tensor_device(lks_trace *t, const char *name, int phase, int micro,
                            const void *data, size_t n, int dtype, void *stream)
{
	struct lks_trace_rec *r = lks_trace_rec_new(t, name, phase, micro, dtype, data || !n);

	if (!r)
		return -1;
	if (dtype != LKS_TRACE_F32)
		return lks_trace_fail("tensor '%s': a device tensor is measured as float32: widen "
		                      "it on its GPU first (exact), e.g. torch's .float()", name);
	if (!n) {  /* nothing to read: its statistics are known here */
		lks_stats_f32(&lks_trace_none, 0, &r->l2, &r->amax, &r->nonfinite, &r->hash);
		t->cur.n++;
		return 0;
	}
#if LKS_HAVE_CUDA
	{
		/* not lks_trace_module: no device query a tensor; without a GPU the pointer's
		   check in trace_measure says so */
		const lks_cuda_module *m = lks_cuda_module_load();
		char why[512];
		size_t slot;

		if (!m)
			return lks_trace_fail("tensor '%s': %s", name, lks_errmsg());
		if (m->trace_measure(&t->dev, data, n, stream, &slot, why, sizeof(why)))
			return lks_trace_fail("tensor '%s': %s", name, why);
		if (slot != t->npending)
			return lks_trace_fail("tensor '%s': the device's record %zu, not %zu", name,
			                      slot, t->npending);
		r->pending = 1;
		t->npending++;
		t->cur.n++;
		return 0;
	}
#else
	(void)stream;
	return lks_trace_fail("tensor '%s': this lockstep-trace was built without the cuda "
	                      "backend", name);
#endif
}

/* The step's device tensors' records brought home into their places. */
static int lks_trace_collect(lks_trace *t)
{
#if LKS_HAVE_CUDA
	lks_tensor_stats *st;
	char why[512];
	size_t k = 0;
	int rc;

	if (!t->npending)
		return 0;
	if (!(st = malloc(t->npending * sizeof(*st))))
		return lks_trace_fail("out of memory");
	rc = lks_cuda_module_load()->trace_collect(t->dev, st, t->npending, why, sizeof(why));
	for (size_t i = 0; rc == 0 && i < t->cur.n; i++) {
		struct lks_trace_rec *r = &t->cur.r[i];

		if (!r->pending)
			continue;
		r->l2 = st[k].l2;
		r->amax = st[k].amax;
		r->nonfinite = st[k].nonfinite;
		r->hash = st[k].hash;
		r->pending = 0;
		k++;
	}
	free(st);
	t->npending = 0;
	return rc ? lks_trace_fail("%s", why) : 0;
#else
	(void)t;
	return 0;
#endif
}

int lks_trace_step(lks_trace *t, int step)
{
	int rc = 0;

	if (!t)
		return lks_trace_fail("lks_trace_step: no trace");
	if (step <= t->last_step || step < 0 || step > LKS_TRACE_STEP_MAX) {
		size_t n = t->cur.n;

		(void)lks_trace_collect(t);  /* its device records let go of */
		t->cur.n = 0;  /* not stored under the next step either */
		if (step > LKS_TRACE_STEP_MAX)
			return lks_trace_fail("step %d: steps go from 0 to %d (the %zu tensors given "
			                      "for it are dropped)", step, LKS_TRACE_STEP_MAX, n);
		return lks_trace_fail("step %d after step %d: a rank's steps ascend (the %zu "
		                      "tensors given for it are dropped)", step, t->last_step, n);
	}
	if (lks_trace_collect(t)) {
		t->cur.n = 0;  /* a step that cannot be measured whole is not stored */
		t->last_step = step;
		return -1;
	}
	pthread_mutex_lock(&t->mu);
	while (t->nqueue == LKS_TRACE_QUEUE)
		pthread_cond_wait(&t->cv, &t->mu);
	if (t->failed) {
		rc = lks_trace_fail("%s", t->err);
	} else if (t->cur.n) {
		t->cur.step = step;
		t->queue[t->nqueue++] = t->cur;
		memset(&t->cur, 0, sizeof(t->cur));
		pthread_cond_broadcast(&t->cv);
	}
	t->cur.n = 0;  /* a failed writer's step is dropped, as every later one */
	t->last_step = step;
	pthread_mutex_unlock(&t->mu);
	return rc;
}

/* The end of a rank whose writer failed (a lock held past the busy timeout, a file-size
   limit), stored all the same, now that the writer has let go of the store: its trace
   lacks steps, so the run is failed (a close too), why and the writer's error kept, its
   steps those stored. -1 after lks_trace_fail, which says whether the end was stored. */
static int lks_trace_leave_failed(lks_trace *t, const char *why)
{
	char msg[700];

	snprintf(msg, sizeof(msg), "%s%slockstep-trace's writer failed: %s", why && *why ? why : "",
	         why && *why ? "; " : "", t->err);
	if (lks_store_trace_leave(t->s, t->run_id, t->rank, t->stored, 1, msg))
		return lks_trace_fail("%s; the rank's end (the run failed) could not be stored "
		                      "either: %s", t->err, lks_errmsg());
	return lks_trace_fail("%s (the run is stored failed)", t->err);
}

/* Closes (failed 0) or aborts t: the writer stores what was handed over, then the rank
   leaves the run. */
static int lks_trace_end(lks_trace *t, int failed, const char *why)
{
	int rc = 0;

	if (!t)
		return 0;
	if (failed) {  /* a step cut short is not stored; its device records are let go of */
		(void)lks_trace_collect(t);
		t->cur.n = 0;
	} else if (t->cur.n)  /* tensors given after the last step: a step of their own */
		rc = lks_trace_step(t, t->last_step + 1);
	pthread_mutex_lock(&t->mu);
	t->stop = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thread, NULL);
	if (t->failed)
		rc = lks_trace_leave_failed(t, why);
	else if (lks_store_trace_leave(t->s, t->run_id, t->rank, t->last_step, failed, why))
		rc = lks_trace_fail("%s", lks_errmsg());
	lks_store_close(t->s);
	lks_block_free(t->b);
	lks_tensor_map_release(&t->tensors);
	free(t->cur.r);
	free(t->scratch);
#if LKS_HAVE_CUDA
	if (t->dev)
		lks_cuda_module_load()->trace_close(t->dev);
#endif
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	free(t);
	return rc;
}

int lks_trace_close(lks_trace *t)
{
	return lks_trace_end(t, 0, NULL);
}

int lks_trace_abort(lks_trace *t, const char *why)
{
	return lks_trace_end(t, 1, why);
}

#ifdef __GLIBC__
/* on_exit's handler: the process's status decides how t ends. */
static void lks_trace_at_exit(int status, void *arg)
{
	char why[64];

	if (!status) {
		(void)lks_trace_close(arg);
		return;
	}
	snprintf(why, sizeof(why), "the process exited with status %d", status);
	(void)lks_trace_abort(arg, why);
}
#endif

int lks_trace_close_at_exit(lks_trace *t)
{
	if (!t)
		return lks_trace_fail("lks_trace_close_at_exit: no trace");
#ifdef __GLIBC__
	if (on_exit(lks_trace_at_exit, t))
		return lks_trace_fail("lks_trace_close_at_exit: on_exit failed");
	return 0;
#else
	return lks_trace_fail("lks_trace_close_at_exit: this C library has no on_exit");
#endif
}
