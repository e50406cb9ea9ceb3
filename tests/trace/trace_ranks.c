/*
 * trace_ranks.c: the ranks of one job tracing into one database at once, as torchrun's
 * processes do (lockstep_trace.h): RANKS processes (or, with 'threads', threads of this
 * process: what ci/sanitize's ThreadSanitizer build runs, since Criterion does not start
 * there) each trace STEPS steps of TENSORS tensors, some names shared and some a rank's
 * own, opening at the same moment. Then the database must hold one complete run of world
 * size RANKS, every tensor named once, and every record of every (step, rank) in its order
 * with the statistics of its values. A plain program: exit 0 passed, 1 failed.
 *
 *   trace_ranks DB [threads]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "kernels/cpu/stats.h"
#include "kernels/err.h"
#include "kernels/trace/lockstep_trace.h"

#define RANKS 4
#define STEPS 20
#define TENSORS 50
#define N 257

static const char *db;
static pthread_barrier_t start;
static int use_barrier;

static void values(float *x, int rank, int step, int t)
{
	for (int i = 0; i < N; i++)
		x[i] = (float)((rank + 1) * 0.25 + step * 0.5 + t + i * 1e-3);
}

static void name_of(char *buf, size_t n, int rank, int t)
{
	if (t % 5 == 4)  /* every fifth tensor a rank's own */
		snprintf(buf, n, "rank%d.own%d", rank, t);
	else
		snprintf(buf, n, "layers.%d.output", t);
}

/* One rank's tracing: 0, or 1 with what failed said. */
static int trace_rank(int rank)
{
	float x[N];
	char name[64];
	lks_trace *t;

	if (use_barrier)
		pthread_barrier_wait(&start);
	if (!(t = lks_trace_open(db, "ranks", "job", rank, RANKS))) {
		fprintf(stderr, "rank %d: open: %s\n", rank, lks_trace_error());
		return 1;
	}
	for (int step = 0; step < STEPS; step++) {
		for (int k = 0; k < TENSORS; k++) {
			values(x, rank, step, k);
			name_of(name, sizeof(name), rank, k);
			if (lks_trace_tensor(t, name, LKS_TRACE_FORWARD, -1, x, N, LKS_TRACE_F32)) {
				fprintf(stderr, "rank %d: tensor: %s\n", rank, lks_trace_error());
				lks_trace_close(t);
				return 1;
			}
		}
		if (lks_trace_step(t, step)) {
			fprintf(stderr, "rank %d: step: %s\n", rank, lks_trace_error());
			lks_trace_close(t);
			return 1;
		}
	}
	if (lks_trace_close(t)) {
		fprintf(stderr, "rank %d: close: %s\n", rank, lks_trace_error());
		return 1;
	}
	return 0;
}

static void *rank_thread(void *arg)
{
	return (void *)(intptr_t)trace_rank((int)(intptr_t)arg);
}

/* What the database holds: 0, or 1 with the first thing wrong said. */
static int check(void)
{
	lks_store *s;
	lks_stored_run r;
	int bad = 0;

	if (lks_store_open_readonly(db, &s) || lks_stored_run_load(s, 1, LKS_LOAD_TRACE, &r)) {
		fprintf(stderr, "read: %s\n", lks_errmsg());
		return 1;
	}
	if (!r.tt || strcmp(r.status, "complete") || r.W != RANKS || r.nsteps != STEPS
	    || r.nt != TENSORS / 5 * 4 + RANKS * (TENSORS / 5)) {
		fprintf(stderr, "run: status %s, world size %d, steps %d, tensors %d\n", r.status,
		        r.W, r.nsteps, r.nt);
		bad = 1;
	}
	for (int i = 0; !bad && i < r.nt; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(r.names[i], r.names[j]))
				bad = fprintf(stderr, "'%s' named twice\n", r.names[i]) > 0;
	for (int step = 0; !bad && step < STEPS; step++) {
		if (lks_tensor_trace_step(r.tt, step)) {
			fprintf(stderr, "step %d: %s\n", step, lks_errmsg());
			bad = 1;
			break;
		}
		for (int rank = 0; !bad && rank < RANKS; rank++) {
			const lks_tentry *e;
			size_t n = lks_tensor_trace_rank(r.tt, rank, &e);

			if (n != TENSORS) {
				bad = fprintf(stderr, "step %d rank %d: %zu records\n", step, rank, n) > 0;
				break;
			}
			for (int k = 0; k < TENSORS; k++) {
				float x[N], amax;
				char name[64];
				double l2;
				int64_t nf;
				uint64_t h;

				values(x, rank, step, k);
				name_of(name, sizeof(name), rank, k);
				lks_stats_f32(x, N, &l2, &amax, &nf, &h);
				if (strcmp(r.names[e[k].tensor], name) || e[k].hash != h) {
					bad = fprintf(stderr, "step %d rank %d record %d: '%s', hash %016llx "
					              "(want '%s', %016llx)\n", step, rank, k,
					              r.names[e[k].tensor], (unsigned long long)e[k].hash, name,
					              (unsigned long long)h) > 0;
					break;
				}
			}
		}
	}
	lks_stored_run_release(&r);
	lks_store_close(s);
	return bad;
}

int main(int argc, char **argv)
{
	int failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: trace_ranks DB [threads]\n");
		return 2;
	}
	db = argv[1];
	unlink(db);
	if (argc > 2 && !strcmp(argv[2], "threads")) {
		pthread_t th[RANKS];

		use_barrier = 1;
		pthread_barrier_init(&start, NULL, RANKS);
		for (int r = 0; r < RANKS; r++)
			pthread_create(&th[r], NULL, rank_thread, (void *)(intptr_t)r);
		for (int r = 0; r < RANKS; r++) {
			void *rc;

			pthread_join(th[r], &rc);
			failed |= rc != NULL;
		}
		pthread_barrier_destroy(&start);
	} else {
		pid_t pid[RANKS];

		for (int r = 0; r < RANKS; r++)
			if ((pid[r] = fork()) == 0)
				_exit(trace_rank(r));
		for (int r = 0; r < RANKS; r++) {
			int st;

			waitpid(pid[r], &st, 0);
			failed |= !WIFEXITED(st) || WEXITSTATUS(st);
		}
	}
	failed |= check();
	printf("trace_ranks: %d ranks x %d steps x %d tensors (%s): %s\n", RANKS, STEPS, TENSORS,
	       use_barrier ? "threads" : "processes", failed ? "FAILED" : "passed");
	return failed;
}
