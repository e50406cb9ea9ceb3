/*
 * bench_store.c: 'lockstep bench store': ingest rate of the trace store. Writes steps x
 * ranks x tensors stat rows (plus one step row per rank and step) into a fresh database
 * file on disk, one lks_store_step() transaction per step as the runner does, and the same
 * rows with fwrite() + fflush() per step into a binary file beside it, in the same run. The
 * target is absolute: at least 1,000,000 stat rows per second, so that tracing every
 * tensor of a small model costs little next to the step itself; the fwrite peer says how
 * far that is from just handing the bytes to the OS.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/bench/bench.h"
#include "harness/base/opt.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

#define LKS_BENCH_STORE_TARGET 1e6  /* stat rows per second (the target) */

static const char lks_bench_store_help[] =
	"usage: lockstep bench store [--steps N] [--ranks R] [--tensors T] [--reps N]\n"
	"                            [--dir DIR] [--keep]\n"
	"\n"
	"Writes N steps x R ranks x T tensors of stat rows into a new SQLite trace database in\n"
	"a temporary folder under DIR ($TMPDIR or /tmp by default), one transaction per step,\n"
	"and the same rows with fwrite + fflush per step into a binary file; prints the best of\n"
	"the repetitions of each in rows per second, and their ratio. The time of closing the\n"
	"database (the WAL checkpoint) is shown apart. Defaults: 500 x 4 x 300, 3 repetitions.\n"
	"--keep leaves the files in place.\n";

/* splitmix64: hash-like 64-bit values, the top bit set in half of them */
static uint64_t lks_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Rows of one step, in key order (rank, seq), with values that vary like real traces. */
static void lks_bench_fill(int step, int ranks, int tensors, lks_step_row *steps,
                           lks_stat_row *stats)
{
	for (int r = 0; r < ranks; r++) {
		steps[r] = (lks_step_row){ .step = step, .rank = r, .loss = 10.0 / (1 + step),
		                           .grad_norm = 1.0 + 0.01 * r, .lr = 3e-4,
		                           .step_time = 0.05, .nonfinite = 0 };
		for (int t = 0; t < tensors; t++) {
			lks_stat_row *x = &stats[(size_t)r * (size_t)tensors + (size_t)t];
			uint64_t h = lks_mix(((uint64_t)step << 32) ^ ((uint64_t)r << 20) ^ (uint64_t)t);

			*x = (lks_stat_row){ .step = step, .rank = r, .seq = t,
			                     .l2 = (double)(h >> 11) * 0x1p-53 * 100.0,
			                     .amax = (float)(h & 0xffff) / 1024.0f,
			                     .scale = t % 3 ? 0x1p-4f * (float)(1 + t % 7) : NAN,
			                     .nonfinite = 0, .underflow = (int64_t)(h >> 60),
			                     .saturated = (int64_t)(h >> 62), .hash = h };
		}
	}
}

static void lks_bench_unlink(const char *dir, const char *name)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	unlink(p);
}

/* One repetition: a fresh database and a fresh binary file. Times are seconds. */
static int lks_bench_store_once(const char *dir, int nsteps, int ranks, int tensors,
                                lks_step_row *steps, lks_stat_row *stats, double *t_sql,
                                double *t_close, double *t_fwrite)
{
	char db_path[4096], bin_path[4096];
	const char **names = NULL;
	lks_phase *phases = NULL;
	lks_store *s = NULL;
	FILE *f = NULL;
	int64_t run_id;
	size_t nstats = (size_t)ranks * (size_t)tensors;
	int rc = -1;

	snprintf(db_path, sizeof(db_path), "%s/bench.db", dir);
	snprintf(bin_path, sizeof(bin_path), "%s/bench.bin", dir);
	lks_bench_unlink(dir, "bench.db");
	lks_bench_unlink(dir, "bench.db-wal");
	lks_bench_unlink(dir, "bench.db-shm");
	names = calloc((size_t)tensors, sizeof(*names));
	phases = calloc((size_t)tensors, sizeof(*phases));
	if (!names || !phases) {
		lks_err("out of memory");
		goto out;
	}
	for (int t = 0; t < tensors; t++) {
		names[t] = t % 2 ? "blocks.0.mlp.up.weight.grad" : "blocks.0.attn.out";
		phases[t] = t % 2 ? LKS_PHASE_BACKWARD : LKS_PHASE_FORWARD;
	}

	lks_run_info info = { .case_name = "bench", .run_name = "store", .recipe = "bf16",
	                      .backend = "cpu", .world_size = ranks, .steps = nsteps, .seed = 1,
	                      .fingerprint = "{}" };
	if (lks_store_open(db_path, &s) || lks_store_begin_run(s, &info, &run_id)
	    || lks_store_tensors(s, run_id, names, phases, tensors))
		goto out;
	*t_sql = 0;
	for (int i = 0; i < nsteps; i++) {
		double t0;

		lks_bench_fill(i, ranks, tensors, steps, stats);
		t0 = lks_now();
		if (lks_store_step(s, run_id, steps, ranks, stats, nstats))
			goto out;
		*t_sql += lks_now() - t0;
	}
	if (lks_store_end_run(s, run_id, "complete"))
		goto out;
	double t0 = lks_now();
	lks_store_close(s);
	s = NULL;
	*t_close = lks_now() - t0;

	f = fopen(bin_path, "wb");
	if (!f) {
		lks_err("cannot create '%s': %s", bin_path, strerror(errno));
		goto out;
	}
	*t_fwrite = 0;
	for (int i = 0; i < nsteps; i++) {
		lks_bench_fill(i, ranks, tensors, steps, stats);
		t0 = lks_now();
		/* fflush: the bytes reach the OS each step, as a WAL commit does */
		if (fwrite(steps, sizeof(*steps), (size_t)ranks, f) != (size_t)ranks
		    || fwrite(stats, sizeof(*stats), nstats, f) != nstats || fflush(f)) {
			lks_err("cannot write '%s': %s", bin_path, strerror(errno));
			goto out;
		}
		*t_fwrite += lks_now() - t0;
	}
	rc = 0;
out:
	if (f)
		fclose(f);
	lks_store_close(s);
	free(names);
	free(phases);
	return rc;
}

int lks_bench_store(int argc, char **argv)
{
	int nsteps = 500, ranks = 4, tensors = 300, reps = 3, keep = 0;
	const char *base = getenv("TMPDIR");
	char dir[2048];  /* room for the file names in 4096-byte paths */
	lks_step_row *steps = NULL;
	lks_stat_row *stats = NULL;
	double best_sql = 1e30, best_close = 1e30, best_fw = 1e30;
	int rc = LKS_EXIT_INFRA;

	if (!base || !*base)
		base = "/tmp";
	const lks_option opts[] = {  /* the usage's text says each */
		LKS_OPT_INT("--steps", "N", &nsteps, 1, 1 << 20, NULL),
		LKS_OPT_INT("--ranks", "N", &ranks, 1, 1 << 20, NULL),
		LKS_OPT_INT("--tensors", "N", &tensors, 1, 1 << 20, NULL),
		LKS_OPT_INT("--reps", "N", &reps, 1, 1 << 20, NULL),
		LKS_OPT_PATH("--dir", "DIR", &base, NULL),
		LKS_OPT_FLAG("--keep", &keep, NULL),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "bench store", .usage = lks_bench_store_help };
	int prc;

	if ((prc = lks_opt_parse(&cmd, opts, argc, argv, NULL)) != 0)
		return lks_opt_exit(prc);

	if ((size_t)snprintf(dir, sizeof(dir), "%s/lks-bench-store-XXXXXX", base) >= sizeof(dir))
		return lks_usage("bench store: --dir '%s' is too long", base);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "lockstep: bench store: cannot create a folder in '%s': %s\n", base,
		        strerror(errno));
		return LKS_EXIT_INFRA;
	}
	steps = calloc((size_t)ranks, sizeof(*steps));
	stats = calloc((size_t)ranks * (size_t)tensors, sizeof(*stats));
	if (!steps || !stats) {
		fprintf(stderr, "lockstep: bench store: out of memory\n");
		goto out;
	}
	for (int r = 0; r < reps; r++) {
		double t_sql, t_close, t_fw;

		if (lks_bench_store_once(dir, nsteps, ranks, tensors, steps, stats, &t_sql, &t_close,
		                         &t_fw)) {
			fprintf(stderr, "lockstep: bench store: %s\n", lks_errmsg());
			goto out;
		}
		best_sql = t_sql < best_sql ? t_sql : best_sql;
		best_close = t_close < best_close ? t_close : best_close;
		best_fw = t_fw < best_fw ? t_fw : best_fw;
	}

	double rows = (double)nsteps * ranks * tensors;
	printf("bench store: %d steps x %d ranks x %d tensors = %.0f stat rows, one transaction "
	       "per step, in '%s', best of %d\n", nsteps, ranks, tensors, rows, dir, reps);
	printf("%-32s %10s %14s %8s\n", "writer", "s", "stat rows/s", "ratio");
	printf("%-32s %10.3f %14.0f %8.2f\n", "fwrite + fflush per step (peer)", best_fw,
	       rows / best_fw, 1.0);
	printf("%-32s %10.3f %14.0f %8.2f\n", "lks_store_step (lockstep)", best_sql,
	       rows / best_sql, best_fw / best_sql);
	printf("%-32s %10.3f\n", "lks_store_close (checkpoint)", best_close);
	printf("target >= %.0f stat rows/s: %s\n", LKS_BENCH_STORE_TARGET,
	       rows / best_sql >= LKS_BENCH_STORE_TARGET ? "met" : "NOT met");
	rc = LKS_EXIT_OK;
out:
	if (!keep) {
		lks_bench_unlink(dir, "bench.db");
		lks_bench_unlink(dir, "bench.db-wal");
		lks_bench_unlink(dir, "bench.db-shm");
		lks_bench_unlink(dir, "bench.bin");
		rmdir(dir);
	}
	free(steps);
	free(stats);
	return rc;
}
