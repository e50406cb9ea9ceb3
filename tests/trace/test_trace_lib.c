/*
 * test_trace_lib.c: lockstep-trace's C library (kernels/trace/lockstep_trace.h), linked as
 * a user links it. A tensor traced through it has, bit for bit, the statistics the same
 * values get from lockstep's model tracer (harness/engine/trace.h, the CPU backend): the
 * 32-lane L2 norm, amax, the non-finite count and the hash, on lengths around the lanes'
 * and the hash's block sizes, with NaN and infinities. Half types measure as their float32
 * values. Two ranks join one run, which is complete once both close. Bad calls fail with a
 * message and store nothing wrong; device tensors without a GPU are refused, the step kept.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../store_fixture.h"
#include "harness/engine/trace.h"
#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "kernels/backend.h"
#include "kernels/cpu/backend_cpu.h"
#include "kernels/element/cast.h"
#include "kernels/trace/lockstep_trace.h"
#include "trace_fill.h"

/* Lengths: below, at and past the 32 lanes, XXH3's 240-byte and 1 KiB stripes' edges in
   floats, and one large enough for many blocks. */
static const size_t lengths[] = { 0, 1, 31, 32, 33, 60, 61, 256, 257, 1000, 100003 };
#define NLEN (sizeof(lengths) / sizeof(lengths[0]))

/* The model tracer's row of x. */
static lks_stat_row model_row(float *x, size_t n)
{
	lks_tracer t;
	lks_stat_row r;

	lks_tracer_init(&t, 0, &lks_backend_cpu, NULL);
	lks_tracer_begin_step(&t, 0);
	lks_trace_f32(&t, LKS_PHASE_FORWARD, x, n, "x");
	lks_tracer_sync(&t);
	cr_assert(!t.failed && t.nrows == 1);
	r = t.rows[0];
	lks_tracer_release(&t);
	return r;
}

static const lks_tval *stat_of(const lks_tensor_trace *tt, const lks_tentry *e, const char *name)
{
	int k = lks_tensor_trace_stat(tt, name);

	for (int i = 0; k >= 0 && i < e->n; i++)
		if (tt->val[e->first + i].stat == k)
			return &tt->val[e->first + i];
	cr_assert_fail("no statistic '%s'", name);
	return NULL;
}

static void load(const char *db, lks_store **s, lks_stored_run *r)
{
	cr_assert_eq(lks_store_open_readonly(db, s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_load(*s, 1, LKS_LOAD_TRACE, r), 0, "%s", lks_errmsg());
	cr_assert_not_null(r->tt);
}

Test(trace_lib, statistics_equal_the_model_tracers_bit_for_bit)
{
	char db[512];
	float *x = malloc(100003 * sizeof(float));
	lks_trace *t;
	lks_store *s;
	lks_stored_run r;
	const lks_tentry *e;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	cr_assert_eq(lks_trace_version(), LKS_TRACE_API_VERSION);
	cr_assert_not_null(t = lks_trace_open(db, "c", "r", 0, 1), "%s", lks_trace_error());
	for (int v = 0; v < 3; v++) {
		for (size_t i = 0; i < NLEN; i++) {
			char name[64];

			trace_fill(x, lengths[i], v);
			snprintf(name, sizeof(name), "t%zu.v%d", lengths[i], v);
			cr_assert_eq(lks_trace_tensor(t, name, LKS_TRACE_FORWARD, -1, x, lengths[i],
			                              LKS_TRACE_F32), 0, "%s", lks_trace_error());
		}
		cr_assert_eq(lks_trace_step(t, v), 0, "%s", lks_trace_error());
	}
	cr_assert_eq(lks_trace_close(t), 0, "%s", lks_trace_error());
	load(db, &s, &r);
	cr_assert_str_eq(r.status, "complete");
	cr_assert_str_eq(r.backend, LKS_TRACE_BACKEND);
	cr_assert_eq(r.nsteps, 3);
	for (int v = 0; v < 3; v++) {
		cr_assert_eq(lks_tensor_trace_step(r.tt, v), 0, "%s", lks_errmsg());
		cr_assert_eq(lks_tensor_trace_rank(r.tt, 0, &e), NLEN);
		for (size_t i = 0; i < NLEN; i++) {
			lks_stat_row m;
			double l2;
			float amax;

			trace_fill(x, lengths[i], v);
			m = model_row(x, lengths[i]);
			l2 = stat_of(r.tt, &e[i], "l2")->value;
			amax = (float)stat_of(r.tt, &e[i], "amax")->value;
			cr_assert(!memcmp(&l2, &m.l2, sizeof(l2)) || (isnan(l2) && isnan(m.l2)),
			          "n %zu v %d: l2 %a, the model's %a", lengths[i], v, l2, m.l2);
			cr_assert(!memcmp(&amax, &m.amax, sizeof(amax)) || (isnan(amax) && isnan(m.amax)),
			          "n %zu v %d: amax", lengths[i], v);
			cr_assert_eq(stat_of(r.tt, &e[i], "nonfinite")->value, (double)m.nonfinite);
			cr_assert(e[i].has_hash);
			cr_assert_eq(e[i].hash, m.hash, "n %zu v %d: hash", lengths[i], v);
		}
	}
	lks_stored_run_release(&r);
	lks_store_close(s);
	free(x);
}

Test(trace_lib, half_types_measure_as_their_float32_values)
{
	char db[512];
	uint16_t hb[300], hh[300];
	float fb[300], fh[300];
	lks_trace *t;
	lks_store *s;
	lks_stored_run r;
	const lks_tentry *e;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "h.db");
	for (int i = 0; i < 300; i++) {
		hb[i] = (uint16_t)(0x3f80 + 7 * i);       /* bf16 from 1.0 up, and some NaN */
		hh[i] = (uint16_t)(0x0001 + 211 * i);     /* halves: subnormals to inf and NaN */
		fb[i] = lks_bf16_to_f32(hb[i]);
		fh[i] = lks_f16_to_f32(hh[i]);
	}
	cr_assert_not_null(t = lks_trace_open(db, "c", "h", 0, 1), "%s", lks_trace_error());
	cr_assert_eq(lks_trace_tensor(t, "bf16", LKS_TRACE_FORWARD, -1, hb, 300, LKS_TRACE_BF16), 0);
	cr_assert_eq(lks_trace_tensor(t, "f16", LKS_TRACE_BACKWARD, 2, hh, 300, LKS_TRACE_F16), 0);
	/* no values: any dtype, no pointer */
	cr_assert_eq(lks_trace_tensor(t, "none16", LKS_TRACE_FORWARD, -1, NULL, 0, LKS_TRACE_F16),
	             0, "%s", lks_trace_error());
	cr_assert_eq(lks_trace_tensor(t, "none32", LKS_TRACE_FORWARD, -1, NULL, 0, LKS_TRACE_F32),
	             0, "%s", lks_trace_error());
	cr_assert_eq(lks_trace_close(t), 0, "%s", lks_trace_error());  /* a step of its own */
	load(db, &s, &r);
	cr_assert_eq(lks_tensor_trace_step(r.tt, 0), 0);
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 0, &e), 4);
	cr_assert_eq(e[2].hash, model_row(fb, 0).hash, "an empty tensor's hash");
	cr_assert_eq(e[3].hash, e[2].hash);
	cr_assert_eq(e[0].hash, model_row(fb, 300).hash);
	cr_assert_eq(e[1].hash, model_row(fh, 300).hash);
	cr_assert_eq(e[1].micro, 2);
	cr_assert_eq(r.phases[e[1].tensor], LKS_PHASE_BACKWARD);
	lks_stored_run_release(&r);
	lks_store_close(s);
}

Test(trace_lib, two_ranks_join_one_run_complete_when_both_close)
{
	char db[512];
	float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	lks_trace *t0, *t1;
	lks_store *s;
	lks_stored_run r;
	const lks_tentry *e;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "r.db");
	cr_assert_not_null(t0 = lks_trace_open(db, "c", "dp", 0, 2), "%s", lks_trace_error());
	cr_assert_not_null(t1 = lks_trace_open(db, "c", "dp", 1, 2), "%s", lks_trace_error());
	for (int step = 0; step < 4; step++) {
		cr_assert_eq(lks_trace_tensor(t0, "w", LKS_TRACE_FORWARD, -1, x, 8, LKS_TRACE_F32), 0);
		cr_assert_eq(lks_trace_tensor(t1, "w", LKS_TRACE_FORWARD, -1, x, 8, LKS_TRACE_F32), 0);
		cr_assert_eq(lks_trace_tensor(t1, "a1", LKS_TRACE_FORWARD, -1, x, step + 1,
		                              LKS_TRACE_F32), 0);
		cr_assert_eq(lks_trace_step(t0, step), 0);
		cr_assert_eq(lks_trace_step(t1, step), 0);
	}
	cr_assert_eq(lks_trace_step(t0, 3), -1, "a step again");
	cr_assert(strstr(lks_trace_error(), "ascend"), "%s", lks_trace_error());
	/* past the bound: the last step + 1 would not be an int (diff said two runs of that
	   step identical, export looped) */
	cr_assert_eq(lks_trace_step(t0, LKS_TRACE_STEP_MAX + 1), -1, "a step past the bound");
	cr_assert(strstr(lks_trace_error(), "steps go from 0 to 2147483646"), "%s",
	          lks_trace_error());
	cr_assert_eq(lks_trace_close(t0), 0, "%s", lks_trace_error());
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM runs WHERE status = 'complete'"), 0,
	             "rank 1 is still tracing");
	cr_assert_eq(lks_trace_close(t1), 0, "%s", lks_trace_error());
	load(db, &s, &r);
	cr_assert_str_eq(r.status, "complete");
	cr_assert_eq(r.W, 2);
	cr_assert_eq(r.nsteps, 4);
	cr_assert_eq(r.nt, 2, "names shared by the ranks");
	cr_assert_eq(lks_tensor_trace_step(r.tt, 3), 0);
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 0, &e), 1);
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 1, &e), 2);
	lks_stored_run_release(&r);
	lks_store_close(s);
	/* a second job of the same names: a new run */
	cr_assert_not_null(t0 = lks_trace_open(db, "c", "dp", 0, 2), "%s", lks_trace_error());
	cr_assert_eq(lks_trace_close(t0), 0);
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM runs"), 2);
}

/* A rank whose training failed aborts: its whole steps stay, the step it was filling is
   not stored, and the run is failed with why, whatever the other rank does after. */
Test(trace_lib, an_aborted_rank_fails_the_run_keeping_its_whole_steps)
{
	char db[512];
	float x[4] = { 1, 2, 3, 4 };
	lks_trace *t0, *t1;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "abort.db");
	cr_assert_not_null(t0 = lks_trace_open(db, "c", "dp", 0, 2), "%s", lks_trace_error());
	cr_assert_not_null(t1 = lks_trace_open(db, "c", "dp", 1, 2), "%s", lks_trace_error());
	for (int step = 0; step < 2; step++)
		for (int r = 0; r < 2; r++) {
			lks_trace *t = r ? t1 : t0;

			cr_assert_eq(lks_trace_tensor(t, "w", LKS_TRACE_FORWARD, -1, x, 4,
			                              LKS_TRACE_F32), 0);
			cr_assert_eq(lks_trace_step(t, step), 0);
		}
	cr_assert_eq(lks_trace_tensor(t0, "cut", LKS_TRACE_FORWARD, -1, x, 4, LKS_TRACE_F32), 0);
	cr_assert_eq(lks_trace_abort(t0, "loss went NaN"), 0, "%s", lks_trace_error());
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM runs WHERE status = 'failed'"), 1);
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM events WHERE kind = "
	                              "'trace_rank_failed' AND rank = 0 AND message = "
	                              "'loss went NaN'"), 1);
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM tensors WHERE name = 'cut'"), 0,
	             "the step cut short is not stored");
	cr_assert_eq(lks_trace_tensor(t1, "w", LKS_TRACE_FORWARD, -1, x, 4, LKS_TRACE_F32), 0);
	cr_assert_eq(lks_trace_close(t1), 0, "%s", lks_trace_error());
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM runs WHERE status = 'failed' AND "
	                              "steps = 2"), 1, "rank 1's steps kept (to step 2: a traced "
	                              "run's steps are its last), the run still failed");
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM tensor_blocks WHERE rank = 0"), 2);
	cr_assert_eq(lks_trace_abort(NULL, "x"), 0);
}

/* A rank of run `run` whose writer fails at step 1 (fsize: the file-size limit of this test's
   process from then on, as a lock held past the busy timeout would fail it), step 0 stored
   first; ended by abort (why) or by close (why NULL). The end's return. */
static int writer_fails(const char *db, const char *run, const char *why, rlim_t fsize)
{
	float x = 1;
	lks_trace *t = lks_trace_open(db, "c", run, 0, 1);
	struct rlimit lim = { 1 << 20, RLIM_INFINITY };
	char q[256];
	int rc;

	cr_assert_not_null(t, "%s", lks_trace_error());
	cr_assert_eq(lks_trace_tensor(t, "w", LKS_TRACE_FORWARD, -1, &x, 1, LKS_TRACE_F32), 0);
	cr_assert_eq(lks_trace_step(t, 0), 0, "%s", lks_trace_error());
	snprintf(q, sizeof(q), "SELECT count(*) FROM tensor_blocks JOIN runs USING (run_id) "
	         "WHERE run_name = '%s'", run);
	for (int i = 0; i < 1000 && !sql_int_path(db, q); i++)  /* step 0 stored first */
		usleep(10000);
	lim.rlim_cur = fsize;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (int i = 0; i < 200000; i++)  /* some MB of records: past the limit */
		cr_assert_eq(lks_trace_tensor(t, "w", LKS_TRACE_FORWARD, i, &x, 1, LKS_TRACE_F32), 0);
	cr_assert_eq(lks_trace_step(t, 1), 0, "%s", lks_trace_error());
	rc = why ? lks_trace_abort(t, why) : lks_trace_close(t);
	lim.rlim_cur = RLIM_INFINITY;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	return rc;
}

/* A writer that failed does not keep the rank's end from being stored (it kept it, and the
   run stayed incomplete for good, the reason lost): an abort stores the run failed with
   why and the writer's error, a close failed too (a step is missing), the steps stored
   kept; where even the end cannot be written, the error says so. */
Test(trace_lib, a_failed_writer_still_stores_the_ranks_end_failed)
{
	char db[512], q[256];

	signal(SIGXFSZ, SIG_IGN);  /* a write past the limit fails (EFBIG) */
	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "wfail.db");
	cr_assert_eq(writer_fails(db, "ab", "training crashed", 1 << 20), -1);
	cr_assert(strstr(lks_trace_error(), "step 1: ") && strstr(lks_trace_error(),
	          "stored failed"), "%s", lks_trace_error());
	cr_assert_eq(writer_fails(db, "cl", NULL, 1 << 20), -1);
	for (int i = 0; i < 2; i++) {
		snprintf(q, sizeof(q), "SELECT count(*) FROM runs JOIN events USING (run_id) WHERE "
		         "run_name = '%s' AND status = 'failed' AND steps = 0 AND kind = "
		         "'trace_rank_failed' AND message LIKE '%s%%writer failed: step 1: %%'",
		         i ? "cl" : "ab", i ? "" : "training crashed; ");
		cr_assert_eq(sql_int_path(db, q), 1, "%s", q);
	}
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM tensor_blocks WHERE step = 0"), 2);
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM tensor_blocks WHERE step = 1"), 0);
	/* nothing more may be written: the end is not stored, and the error says it */
	cr_assert_eq(writer_fails(db, "no", "x", 1), -1);
	cr_assert(strstr(lks_trace_error(), "could not be stored either"), "%s",
	          lks_trace_error());
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM runs WHERE run_name = 'no' AND "
	                              "status = 'incomplete'"), 1);
}

/* A job relaunched after a crash: its ranks join only a run of their own launch's key, not
   the dead launch's run that one of its ranks never joined (which mixed two launches into
   one run, stored complete). The same key joins; a bad key is refused. */
Test(trace_lib, a_relaunched_job_makes_a_run_of_its_own)
{
	char db[512];
	float x[2] = { 1, 2 };
	lks_trace *t0, *t1, *u0, *u1;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "relaunch.db");
	/* launch a: rank 0 traces and closes, rank 1 died before it opened */
	cr_assert_not_null(t0 = lks_trace_open_job(db, "c", "dp", 0, 2, "a"), "%s",
	                   lks_trace_error());
	cr_assert_eq(lks_trace_tensor(t0, "w", LKS_TRACE_FORWARD, -1, x, 2, LKS_TRACE_F32), 0);
	cr_assert_eq(lks_trace_close(t0), 0, "%s", lks_trace_error());
	/* launch b: rank 1 opens first */
	cr_assert_not_null(u1 = lks_trace_open_job(db, "c", "dp", 1, 2, "b"), "%s",
	                   lks_trace_error());
	cr_assert_not_null(u0 = lks_trace_open_job(db, "c", "dp", 0, 2, "b"), "%s",
	                   lks_trace_error());
	cr_assert_eq(lks_trace_close(u1), 0, "%s", lks_trace_error());
	cr_assert_eq(lks_trace_close(u0), 0, "%s", lks_trace_error());
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM runs"), 2);
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND "
	                              "options = 'job=b'"), 1, "launch b's run complete");
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM runs WHERE status = 'incomplete' AND "
	                              "options = 'job=a'"), 1, "the dead launch's run left alone");
	cr_assert_eq(sql_int_path(db, "SELECT count(DISTINCT run_id) FROM events WHERE kind = "
	                              "'trace_rank' AND rank = 1"), 1);
	/* the same key joins one run; a key with a character a name does not take is refused */
	cr_assert_not_null(t0 = lks_trace_open_job(db, "c", "dp", 0, 2, "c.1"), "%s",
	                   lks_trace_error());
	cr_assert_not_null(t1 = lks_trace_open_job(db, "c", "dp", 1, 2, "c.1"), "%s",
	                   lks_trace_error());
	cr_assert_eq(lks_trace_close(t0), 0);
	cr_assert_eq(lks_trace_close(t1), 0);
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND "
	                              "options = 'job=c.1'"), 1);
	cr_assert_null(lks_trace_open_job(db, "c", "dp", 0, 2, "a b"));
	cr_assert(strstr(lks_trace_error(), "job"), "%s", lks_trace_error());
}

/* A step refused (not ascending, or again) drops the tensors given for it: they were
   stored under the next step, beside its own (or as a step of their own at the close). */
Test(trace_lib, a_refused_step_drops_its_tensors)
{
	char db[512];
	float x[3] = { 1, 2, 3 };
	const char *const names[] = { "x", "y", "z", "u" };
	const int steps[] = { 5, 3, 7, 7 };  /* 3: below 5; 7 again */
	lks_trace *t;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "refused.db");
	cr_assert_not_null(t = lks_trace_open(db, "c", "r", 0, 1), "%s", lks_trace_error());
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(lks_trace_tensor(t, names[i], LKS_TRACE_FORWARD, -1, x, 3,
		                              LKS_TRACE_F32), 0);
		cr_assert_eq(lks_trace_step(t, steps[i]), i % 2 ? -1 : 0, "%s", lks_trace_error());
		if (i % 2)
			cr_assert(strstr(lks_trace_error(), "ascend (the 1 tensors given for it are "
			          "dropped)"), "%s", lks_trace_error());
	}
	cr_assert_eq(lks_trace_close(t), 0, "%s", lks_trace_error());
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM tensors"), 2, "x and z alone");
	cr_assert_eq(sql_int_path(db, "SELECT count(*) FROM tensors WHERE name IN ('y', 'u')"),
	             0);
	cr_assert_eq(sql_int_path(db, "SELECT count(DISTINCT step) FROM tensor_blocks"), 2,
	             "steps 5 and 7, no step 8 made at the close");
	cr_assert_eq(sql_int_path(db, "SELECT max(step) FROM tensor_blocks"), 7);
}

Test(trace_lib, bad_calls_fail_with_a_message)
{
	char db[512];
	float x = 1;
	lks_trace *t;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "b.db");
	cr_assert_null(lks_trace_open(db, "c", "r", 2, 2));
	cr_assert(strstr(lks_trace_error(), "rank 2 of world size 2"), "%s", lks_trace_error());
	cr_assert_null(lks_trace_open(db, "c d", "r", 0, 1));
	cr_assert_null(lks_trace_open("/nonexistent-dir/x.db", "c", "r", 0, 1));
	cr_assert(strstr(lks_trace_error(), "/nonexistent-dir/x.db"), "%s", lks_trace_error());
	cr_assert(!strstr(strstr(lks_trace_error(), "x.db") + 1, "x.db"), "the path once: %s",
	          lks_trace_error());
	cr_assert_null(lks_trace_open(tmpdir, "c", "r", 0, 1), "a directory");
	cr_assert(strstr(lks_trace_error(), tmpdir), "%s", lks_trace_error());
	cr_assert(!strstr(strstr(lks_trace_error(), tmpdir) + 1, tmpdir), "the path once: %s",
	          lks_trace_error());
	cr_assert_null(lks_trace_open("", "c", "r", 0, 1));
	cr_assert(strstr(lks_trace_error(), "an empty database path") && !strstr(
	          lks_trace_error(), "network"), "%s", lks_trace_error());
	cr_assert_not_null(t = lks_trace_open(db, "c", "r", 0, 1), "%s", lks_trace_error());
	cr_assert_eq(lks_trace_tensor(t, "", LKS_TRACE_FORWARD, -1, &x, 1, LKS_TRACE_F32), -1);
	cr_assert_eq(lks_trace_tensor(t, "x", 7, -1, &x, 1, LKS_TRACE_F32), -1);
	cr_assert_eq(lks_trace_tensor(t, "x", LKS_TRACE_FORWARD, -1, &x, 1, 9), -1);
	cr_assert(strstr(lks_trace_error(), "dtype"), "%s", lks_trace_error());
	cr_assert_eq(lks_trace_close(t), 0, "%s", lks_trace_error());
}

/* Device tensors where this library cannot measure them (no GPU, or a build without CUDA):
   lks_trace_device says why; a device tensor is refused naming it, and the step keeps the
   others; an empty one needs no GPU and has the statistics of nothing; a half type is
   refused everywhere (widen it on the GPU). tests/trace/gpu_trace_device.c holds the
   device's records to the host's on a GPU. */
Test(trace_lib, device_tensors_without_a_gpu_are_refused_and_the_step_kept)
{
	char db[512];
	float x[4] = { 1, -2, 3, 0.5f };
	lks_trace *t;
	lks_store *s;
	lks_stored_run r;
	const lks_tentry *e;
	lks_stat_row none;
	double l2;

	if (lks_trace_device())
		cr_skip_test("a GPU is here: gpu_trace_device tests device tensors");
	cr_assert(strstr(lks_trace_error(), "device tensors"), "%s", lks_trace_error());
	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "d.db");
	cr_assert_not_null(t = lks_trace_open(db, "c", "r", 0, 1), "%s", lks_trace_error());
	cr_assert_eq(lks_trace_tensor(t, "a", LKS_TRACE_FORWARD, -1, x, 4, LKS_TRACE_F32), 0);
	cr_assert_eq(lks_trace_tensor_device(t, "b", LKS_TRACE_FORWARD, -1, x, 4, LKS_TRACE_F32,
	                                     NULL), -1);
	cr_assert(strstr(lks_trace_error(), "tensor 'b'") || strstr(lks_trace_error(),
	          "device tensors"), "%s", lks_trace_error());
	cr_assert_eq(lks_trace_tensor_device(t, "h", LKS_TRACE_FORWARD, -1, x, 4, LKS_TRACE_BF16,
	                                     NULL), -1);
	cr_assert(strstr(lks_trace_error(), "float32"), "%s", lks_trace_error());
	cr_assert_eq(lks_trace_tensor_device(t, "z", LKS_TRACE_BACKWARD, 0, NULL, 0, LKS_TRACE_F32,
	                                     NULL), 0, "%s", lks_trace_error());
	cr_assert_eq(lks_trace_step(t, 0), 0, "%s", lks_trace_error());
	cr_assert_eq(lks_trace_close(t), 0, "%s", lks_trace_error());
	load(db, &s, &r);
	cr_assert_eq(lks_tensor_trace_step(r.tt, 0), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 0, &e), 2, "a and z, not b or h");
	none = model_row(x, 0);
	l2 = stat_of(r.tt, &e[1], "l2")->value;
	cr_assert(!memcmp(&l2, &none.l2, sizeof(l2)));
	cr_assert_eq(e[1].hash, none.hash);
	lks_stored_run_release(&r);
	lks_store_close(s);
}
