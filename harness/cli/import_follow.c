/*
 * import_follow.c: 'lockstep import --follow': a log read as it is written (a file, like
 * tail -f, or standard input), each step stored in its own transaction as it completes
 * and compared at once with a reference (harness/verify/follow.h), so that a CI job or a
 * watcher can stop a run that has parted from its reference while it still burns GPU
 * hours. Exit 1 at the first difference, 0 at the end step or the end of input (standard
 * input closed, or a file that has not grown for --idle seconds), 2 bad input, 3 failure.
 *
 * A file is read through a stdio stream of our own (fopencookie) whose reads wait for the
 * file to grow: the parsers see one stream that ends only when the writer has been quiet
 * for the idle time, and need not know they follow anything.
 */
#define _GNU_SOURCE  /* fopencookie */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/cli/cmd.h"
#include "harness/verify/follow.h"
#include "kernels/err.h"
#include "kernels/clock.h"

/* How often a quiet file is looked at again: a step of any training run takes longer, so
   this adds at most 20 ms to the time a divergence is seen. */
#define LKS_FOLLOW_POLL_NS 20000000L

struct lks_tail {
	int fd;
	double idle_s;            /* no growth for this long: end of input */
};

static ssize_t lks_tail_read(void *cookie, char *buf, size_t n)
{
	struct lks_tail *t = cookie;
	double quiet_since = lks_now();

	for (;;) {
		ssize_t got = read(t->fd, buf, n);
		struct timespec poll = { 0, LKS_FOLLOW_POLL_NS };

		if (got > 0 || (got < 0 && errno != EINTR))
			return got;
		if (got == 0 && lks_now() - quiet_since >= t->idle_s)
			return 0;
		nanosleep(&poll, NULL);
	}
}

static int lks_tail_close(void *cookie)
{
	struct lks_tail *t = cookie;
	int rc = close(t->fd);

	free(t);
	return rc;
}

/* path followed as it grows ("-": standard input, which ends when it is closed). */
static FILE *lks_tail_open(const char *path, double idle_s)
{
	static const cookie_io_functions_t io = { .read = lks_tail_read, .close = lks_tail_close };
	struct lks_tail *t;
	FILE *f;

	if (!strcmp(path, "-"))
		return stdin;
	if (!(t = malloc(sizeof(*t))))
		return NULL;
	t->idle_s = idle_s;
	if ((t->fd = open(path, O_RDONLY)) < 0) {
		free(t);
		return NULL;
	}
	if (!(f = fopencookie(t, "r", io)))
		lks_tail_close(t);
	return f;
}

struct lks_follow_state {
	const lks_follow_ref *ref;
	double rtol, atol;
	long compared, steps;
	lks_follow_div div;
};

static int lks_follow_on_step(void *arg, const lks_import_rec *recs, int n)
{
	struct lks_follow_state *st = arg;

	st->steps++;
	return lks_follow_step(st->ref, recs, n, st->rtol, st->atol, &st->compared, &st->div)
	       ? LKS_IMPORT_DIVERGED : 0;
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
		if ((rc = lks_follow_ref_golden(a->golden_file, ref)) == LKS_IMPORT_BAD)
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
	if ((rc = lks_follow_ref_file(fmt, colon + 1, ref)) == LKS_IMPORT_BAD)
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
	int rc;

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
	if (!(f = lks_tail_open(path, a->idle_s))) {
		fprintf(stderr, "lockstep: import: cannot open '%s'\n", path);
		lks_follow_ref_free(ref);
		return LKS_EXIT_USAGE;
	}
	rc = lks_import_follow(store, o, path, f, a->end_step, lks_follow_on_step, &st, &res);
	if (f != stdin)
		fclose(f);
	lks_follow_ref_free(ref);
	if (rc == LKS_IMPORT_DIVERGED) {
		const lks_follow_div *d = &st.div;

		printf("diverged at step %d rank %d metric %s: log %.17g, reference %.17g%s\n",
		       d->step, d->rank, d->metric, d->got, d->want,
		       d->missing ? " (not in the log)" : "");
		printf("run %lld: %ld steps stored, %ld values compared before\n",
		       (long long)res.run_id, st.steps, st.compared);
		return LKS_EXIT_FAIL;
	}
	if (rc && rc != LKS_IMPORT_REACHED) {
		fprintf(stderr, "lockstep: import: %s; steps before it stay stored (run %lld, "
		        "incomplete)\n", lks_errmsg(), (long long)res.run_id);
		return rc == LKS_IMPORT_BAD ? LKS_EXIT_USAGE : LKS_EXIT_INFRA;
	}
	printf("followed %s/%s (run %lld): %ld step%s up to %d, %d rank%s, %ld values equal to the "
	       "reference%s\n", o->case_name, o->run_name, (long long)res.run_id, st.steps,
	       st.steps == 1 ? "" : "s", res.steps, res.world_size, res.world_size == 1 ? "" : "s", st.compared,
	       rc == LKS_IMPORT_REACHED ? " (end step reached)" : "");
	return LKS_EXIT_OK;
}
