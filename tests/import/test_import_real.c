/*
 * test_import_real.c: files a framework wrote itself, not after its source: a Hugging Face
 * Trainer run of transformers 5.24.0 (data/hf_real/, make_hf_run.py), 8 steps, resumed from
 * step 4 in a second launch. Its three outputs read alike: the TensorBoard events (given as
 * the output folder: a folder per launch below runs/, in the order they started, its
 * checkpoint folders passed over), trainer_state.json, and the console, whose floats
 * transformers 5 prints as strings of 4 digits, behind tqdm's bar by default. And the two things that real run showed a
 * TensorBoard reader must take: a tag written twice at one step (train/epoch, with each
 * evaluation and the run's summary), and launch folders named by a month's name.
 * And NeMo 2's own ProgressPrinter under Lightning (data/nemo_real/, make_nemo_run.py), whose
 * console reads as the same run's TensorBoard events (Lightning's TensorBoardLogger) to the
 * 4 significant digits it prints. And torch's SummaryWriter's other ways of writing a scalar
 * (data/tb_torch_variants/, make_tb_variants.py): float32 and float64 tensors, and
 * add_scalars' folder a series, which the import leaves and says it left. And
 * add_hparams' folder, no series (data/tb_hparams/), and two ranks writing to one folder at
 * once, refused (data/tb_ranks_one_dir/).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run_bin.h"
#include "store_fixture.h"
#include "tb_events.h"
#include "harness/import/import.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

#define HF LKS_IMPORT_DIR "/hf_real"
#define NEMO LKS_IMPORT_DIR "/nemo_real"
#define VARIANTS LKS_IMPORT_DIR "/tb_torch_variants"
#define STEPS 8         /* the Hugging Face run's */
#define NEMO_STEPS 12   /* the NeMo run's, iterations 0 to 11 */
#define MAX_STEP 15

/* A run's values of one metric by step (NaN: none), the last stored of a step. */
struct series {
	double v[MAX_STEP + 1];
	int n;
};

static int keep(void *arg, const lks_metric_row *m)
{
	struct series *s = arg;

	if (m->step >= 0 && m->step <= MAX_STEP)
		s->v[m->step] = m->value;
	s->n++;
	return 0;
}

static struct series series_of(lks_store *st, int64_t run, const char *name)
{
	struct series s;

	for (int i = 0; i <= MAX_STEP; i++)
		s.v[i] = NAN;
	s.n = 0;
	cr_assert_eq(lks_store_get_metrics(st, run, name, keep, &s), 0, "%s", lks_errmsg());
	return s;
}

/* paths[0..n) imported as run name in format fmt into st: 0 or the import's error */
static int import_as(lks_store *st, const char *fmt, const char *name, const char **paths,
                     int n, lks_import_result *res)
{
	lks_import_opts o = { .fmt = lks_import_format_find(fmt), .case_name = "hf",
	                      .run_name = name };

	cr_assert_not_null(o.fmt);
	return lks_import_files(st, &o, paths, n, res);
}

static lks_store *fresh_store(void)
{
	char db[512];
	lks_store *st;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "real.db");
	cr_assert_eq(lks_store_open(db, &st), 0, "%s", lks_errmsg());
	return st;
}

Test(import_real, hugging_faces_own_run_reads_alike_from_its_three_outputs)
{
	lks_store *st = fresh_store();
	const char *tb[] = { HF "/output" }, *state[] = { HF "/output/checkpoint-8/trainer_state.json" };
	const char *console[] = { HF "/console.log" };
	lks_import_result rt, rs, rc;
	struct series tl, sl, cl, te, se, tr, sr;

	cr_assert_eq(import_as(st, "tensorboard", "tb", tb, 1, &rt), 0, "%s", lks_errmsg());
	cr_assert_eq(import_as(st, "hf-trainer", "state", state, 1, &rs), 0, "%s", lks_errmsg());
	cr_assert_eq(import_as(st, "hf-trainer", "console", console, 1, &rc), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(rt.steps, STEPS);
	cr_assert_eq(rt.counts.records, STEPS + 4, "steps 1-8, then 5-8 of the resumed launch");
	cr_assert_eq(rt.counts.restarts, 1, "the second launch's folder read second");
	cr_assert_eq(rs.steps, STEPS);
	cr_assert_eq(rc.counts.records, STEPS, "a line with a 'loss' a step; evaluations and "
	             "the summary ignored");
	tl = series_of(st, rt.run_id, "loss");
	sl = series_of(st, rs.run_id, "loss");
	cl = series_of(st, rc.run_id, "loss");
	te = series_of(st, rt.run_id, "epoch");
	se = series_of(st, rs.run_id, "epoch");
	tr = series_of(st, rt.run_id, "lr");
	sr = series_of(st, rs.run_id, "lr");
	for (int s = 1; s <= STEPS; s++) {
		/* the loss is a float32 tensor's .item(): trainer_state.json's double is that
		   float, the event file's float32 too */
		cr_assert_eq(tl.v[s], sl.v[s], "step %d: event file %.17g, trainer_state %.17g", s,
		             tl.v[s], sl.v[s]);
		/* the console's '3.915': f"{v:.4g}", 4 significant digits of the same loss, so
		   within half a unit of the 4th (the loss is between 1 and 10) */
		cr_assert_leq(fabs(cl.v[s] - sl.v[s]), 0.5e-3, "step %d: console %.17g", s, cl.v[s]);
		cr_assert_eq(te.v[s], se.v[s], "step %d: train/epoch is the epoch", s);
		/* the learning rate is a Python float: the event file holds it as float32 */
		cr_assert_eq(tr.v[s], (double)(float)sr.v[s], "step %d: lr", s);
	}
	cr_assert_eq(te.n, STEPS, "train/epoch, written again with each evaluation and the "
	             "summary, is one value a step (the resumed launch's steps 5-8 replace the "
	             "first's)");
	lks_store_close(st);
	rm_tmp();
}

/* The console as transformers prints it by default (ProgressCallback, through tqdm: each
   dict after the bar and a carriage return on its line) reads as PrinterCallback's does. */
Test(import_real, the_console_behind_tqdms_bar_reads_as_without_it)
{
	lks_store *st = fresh_store();
	const char *plain[] = { HF "/console.log" }, *bar[] = { HF "/console_tqdm.log" };
	lks_import_result rp, rb;
	struct series lp, lb;

	cr_assert_eq(import_as(st, "hf-trainer", "plain", plain, 1, &rp), 0, "%s", lks_errmsg());
	cr_assert_eq(import_as(st, "hf-trainer", "bar", bar, 1, &rb), 0, "%s", lks_errmsg());
	cr_assert_eq(rb.counts.records, STEPS, "a line behind the bar not read");
	lp = series_of(st, rp.run_id, "loss");
	lb = series_of(st, rb.run_id, "loss");
	for (int s = 1; s <= STEPS; s++)
		cr_assert_eq(lb.v[s], lp.v[s], "step %d", s);
	lks_store_close(st);
	rm_tmp();
}

/* The launch folders named so that name order is not time order (a month's name: Dec
   before Nov): they are read in the order their event files say they started, so the
   resumed launch's summary at step 8 is the one that stands. */
Test(import_real, launch_folders_read_in_the_order_they_started)
{
	lks_store *st = fresh_store();
	char dir[600], cmd[4096];
	const char *paths[] = { dir };
	lks_import_result r;
	struct series rt;

	path_in_tmp(dir, sizeof(dir), "output");
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/runs' && cp -r '%s/output/runs/Nov29_04-43-44_vm' "
	         "'%s/runs/Nov29_b' && cp -r '%s/output/runs/Nov29_04-43-54_vm' '%s/runs/Dec01_a' "
	         "&& mkdir '%s/checkpoint-4'", dir, HF, dir, HF, dir, dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(import_as(st, "tensorboard", "tb", paths, 1, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.counts.restarts, 1);
	rt = series_of(st, r.run_id, "train_train_runtime");
	/* the summaries' train/train_runtime at step 8: 0.4126 s in the first launch, 0.2506 s
	   in the resumed one (console.log, console_resumed.log) */
	cr_assert_lt(fabs(rt.v[8] - 0.2506), 0.5e-4, "step 8's runtime %.17g: not the resumed "
	             "launch's", rt.v[8]);
	lks_store_close(st);
	rm_tmp();
}

/* A tag again at its step: the same bits are one value; another value is bad input
   naming the tag and the step, and nothing is stored. */
Test(import_real, a_tag_written_twice_at_a_step_is_one_value_or_refused)
{
	lks_store *st = fresh_store();
	char path[512];
	const char *paths[] = { path };
	struct tb_scalar ok[] = {
		{ 1, "train/loss", 3.5f }, { 1, "train/epoch", 0.25f }, { 1, "train/epoch", 0.25f },
		{ 2, "train/loss", 3.25f }, { 2, "train/epoch", 0.5f },
	};
	struct tb_scalar bad[] = {
		{ 1, "train/loss", 3.5f }, { 2, "train/epoch", 0.5f }, { 2, "train/epoch", 0.75f },
	};
	struct tb_scalar nostep[] = { { 0, "loss", 1.0f }, { 0, "loss", 0.5f } };
	lks_import_result r;
	struct series e;

	path_in_tmp(path, sizeof(path), "events.out.tfevents.1.ok");
	tb_write(path, ok, 5);
	cr_assert_eq(import_as(st, "tensorboard", "ok", paths, 1, &r), 0, "%s", lks_errmsg());
	e = series_of(st, r.run_id, "epoch");
	cr_assert_eq(e.n, 2);
	cr_assert_eq(e.v[1], 0.25);
	path_in_tmp(path, sizeof(path), "events.out.tfevents.2.bad");
	tb_write(path, bad, 3);
	cr_assert_eq(import_as(st, "tensorboard", "bad", paths, 1, &r), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "metric 'epoch' given twice at step 2: 0.5, then 0.75 by "
	                 "tag 'train/epoch'"), "%s", lks_errmsg());
	cr_assert_eq(sql_int(st, "SELECT count(*) FROM runs WHERE run_name = 'bad'"), 0);
	/* every value at step 0: the writer was not given the step, and the error says so */
	path_in_tmp(path, sizeof(path), "events.out.tfevents.3.nostep");
	tb_write(path, nostep, 2);
	cr_assert_eq(import_as(st, "tensorboard", "nostep", paths, 1, &r), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "given twice at step 0: 1, then 0.5 by tag 'loss' (a "
	                 "writer not told the step, add_scalar without global_step"), "%s",
	          lks_errmsg());
	lks_store_close(st);
	rm_tmp();
}

/* NeMo's console ("Training epoch 0, iteration 0/11 | reduced_train_loss: 1.391 | ...",
   f"{v:.4}" of each value, a whole one as an int) and Lightning's event files of the same
   run, given as the folder above its version_0 folder (which holds hparams.yaml beside the
   events): the same iterations, 0 to 11, and the same values to the console's digits. */
Test(import_real, nemos_console_reads_as_its_event_files_to_the_printed_digits)
{
	lks_store *st = fresh_store();
	const char *console[] = { NEMO "/console.log" }, *tb[] = { NEMO "/tb" };
	static const char *const same[] = { "global_step", "consumed_samples" };
	static const char *const close[] = { "loss", "lr", "iteration_time_s" };
	lks_import_result rc, rt;

	cr_assert_eq(import_as(st, "nemo", "console", console, 1, &rc), 0, "%s", lks_errmsg());
	cr_assert_eq(import_as(st, "tensorboard", "tb", tb, 1, &rt), 0, "%s", lks_errmsg());
	cr_assert_eq(rc.counts.records, NEMO_STEPS, "a line an iteration; the model's table, "
	             "the validation lines and Lightning's tip ignored");
	cr_assert_eq(rt.counts.records, NEMO_STEPS);
	cr_assert_eq(rc.steps, NEMO_STEPS - 1);
	cr_assert_eq(rt.steps, NEMO_STEPS - 1);
	for (size_t k = 0; k < sizeof(same) / sizeof(same[0]); k++) {
		struct series c = series_of(st, rc.run_id, same[k]), t = series_of(st, rt.run_id, same[k]);

		for (int s = 0; s < NEMO_STEPS; s++)  /* whole numbers: printed as ints, exact */
			cr_assert_eq(c.v[s], t.v[s], "%s at %d: console %.17g, events %.17g", same[k],
			             s, c.v[s], t.v[s]);
		cr_assert_eq(c.v[3], k ? 32 : 3);
	}
	for (size_t k = 0; k < sizeof(close) / sizeof(close[0]); k++) {
		struct series c = series_of(st, rc.run_id, close[k]), t = series_of(st, rt.run_id, close[k]);

		cr_assert_eq(c.n, NEMO_STEPS, "%s", close[k]);
		for (int s = 0; s < NEMO_STEPS; s++) {
			/* 4 significant digits: within half a unit of the 4th, relative to the value's
			   decade (1e-3 of it at most, as 1.000 to 9.999 are) */
			double unit = pow(10, floor(log10(fabs(t.v[s]))) - 3);

			cr_assert_leq(fabs(c.v[s] - t.v[s]), 0.5 * unit, "%s at %d: console %.17g, "
			              "events %.17g", close[k], s, c.v[s], t.v[s]);
		}
	}
	lks_store_close(st);
	rm_tmp();
}

/* add_scalar(new_style=True) writes a float32 tensor, with double_precision=True a float64
   one, by default a simple_value (the float32 of a Python float): each is stored as the
   value logged, bit for bit (make_tb_variants.py printed them). add_scalars("Loss",
   {"train": v, "val": 2v}) wrote run/Loss_train/ and run/Loss_val/, a file each by
   writers of torch's process (vm.32630.1 and .2 beside the run's .0): read with the run's
   file as Loss/train and Loss/val, at their steps. */
Test(import_real, torchs_tensor_scalars_and_add_scalars_series_read_exactly)
{
	lks_store *st = fresh_store();
	const char *run[] = { VARIANTS "/run" };
	static const double loss[] = { 0, 8.90109920501709, 4.7093024253845215,
	                               3.2015810012817383, 2.42514967918396, 1.9518072605133057 };
	char args[1024], out[4096];
	lks_import_result r;
	struct series l, g, lr, tr, va;

	cr_assert_eq(import_as(st, "tensorboard", "tb", run, 1, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.counts.records, 5, "the series' values in the records of their steps");
	cr_assert_eq(r.unread, 0, "%s", r.unread_first);
	l = series_of(st, r.run_id, "loss");
	g = series_of(st, r.run_id, "grad_norm");
	lr = series_of(st, r.run_id, "lr");
	tr = series_of(st, r.run_id, "Loss_train");  /* the tag Loss/train, '/' made '_' */
	va = series_of(st, r.run_id, "Loss_val");
	cr_assert_eq(tr.n, 5);
	cr_assert_eq(va.n, 5);
	for (int s = 1; s <= 5; s++) {
		cr_assert_eq(l.v[s], loss[s], "step %d: %.17g", s, l.v[s]);
		cr_assert_eq(g.v[s], 1.0 + s / 3.0, "step %d: %.17g, not the float64 logged", s, g.v[s]);
		cr_assert_eq(lr.v[s], (double)(float)(1e-4 * s), "step %d", s);
		cr_assert_eq(tr.v[s], loss[s], "step %d: %.17g", s, tr.v[s]);
		cr_assert_eq(va.v[s], (double)(float)(loss[s] * 2), "step %d: %.17g", s, va.v[s]);
	}
	lks_store_close(st);

	/* the command names a series' tag through --tag-map, and says nothing is left */
	snprintf(args, sizeof(args), "import --db '%s/cli.db' --format tensorboard --case v --run "
	         "all --tag-map Loss/val=val_loss '%s/run'", tmpdir, VARIANTS);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "5 metric lines") && !strstr(out, "not read"), "%s", out);
	snprintf(args, sizeof(args), "export --db '%s/cli.db' --format jsonl v/all", tmpdir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "\"step\":3,\"rank\":0,\"Loss_train\":3.2015810012817383,"
	                 "\"grad_norm\":2.0,\"loss\":3.2015810012817383,\"lr\":"
	                 "0.00030000001424923539,\"val_loss\":6.4031620025634766}"), "%s", out);
	/* a case's import reads them too */
	snprintf(args, sizeof(args), "printf '[case]\\ndescription = v\\n[run r]\\nimport = "
	         "tensorboard:%s/run\\n[check f]\\nkind = finite\\na = r\\n' > '%s/v.ini'",
	         VARIANTS, tmpdir);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "run --db '%s/cli.db' '%s/v.ini'", tmpdir, tmpdir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(!strstr(out, "not read"), "%s", out);
	snprintf(args, sizeof(args), "export --db '%s/cli.db' --format jsonl v/r", tmpdir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "\"Loss_val\":9.418604850769043"), "%s", out);
	rm_tmp();
}

/* tensorboardX 2.6.5 and torch 2.15.0 each wrote two launches of a training into one
   folder (tb_add_scalars/make_runs.py: launch 1, then 2, a restart from step 3, each a
   process), each with add_scalars("Loss", {"train", "val"}): tensorboardX into Loss/train/
   and Loss/val/, its files named by start and host alone; torch into Loss_train/ and
   Loss_val/, named with the pid too. Each series file is read with the run's file of its
   launch: launch 2 takes the series back from step 3 with the run, and each value is the
   float32 of what the script printed, from either writer. */
static const char *const add_scalars_writers[] = { "tensorboardX", "torch" };

ParameterizedTestParameters(import_real, add_scalars_restart_with_their_launch)
{
	static int k[] = { 0, 1 };

	return cr_make_param_array(int, k, 2);
}

ParameterizedTest(int *k, import_real, add_scalars_restart_with_their_launch)
{
	const char *writer = add_scalars_writers[*k];
	lks_store *st = fresh_store();
	char folder[512];
	const char *run[] = { folder };
	/* step: loss, train, val (NAN: not logged) as make_runs.py printed them, launch 1's
	   steps 1-2, launch 2's 3-6 */
	static const double want[][3] = {
		{ 0, 0, 0 },
		{ 8.90109920501709, 13.351648807525635, NAN },
		{ 4.7093024253845215, 7.063953638076782, 11.773256063461304 },
		{ 3.079847812652588, 4.619771718978882, NAN },
		{ 2.3546512126922607, 3.531976819038391, 5.886628031730652 },
		{ 1.9058823585510254, 2.858823537826538, NAN },
		{ 1.6007905006408691, 2.4011857509613037, 4.001976251602173 },
	};
	lks_import_result r;
	struct series l, tr, va;

	snprintf(folder, sizeof(folder), "%s/tb_add_scalars/%s", LKS_IMPORT_DIR, writer);
	cr_assert_eq(import_as(st, "tensorboard", writer, run, 1, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.unread, 0, "%s", r.unread_first);
	cr_assert_eq(r.counts.restarts, 1, "launch 2");
	cr_assert_eq(r.steps, 6);
	l = series_of(st, r.run_id, "loss");
	tr = series_of(st, r.run_id, "Loss_train");
	va = series_of(st, r.run_id, "Loss_val");
	cr_assert_eq(l.n, 6);
	cr_assert_eq(tr.n, 6);
	cr_assert_eq(va.n, 3, "val at steps 2, 4, 6");
	for (int s = 1; s <= 6; s++) {
		cr_assert_eq(l.v[s], (double)(float)want[s][0], "step %d: %.17g", s, l.v[s]);
		cr_assert_eq(tr.v[s], (double)(float)want[s][1], "step %d: %.17g", s, tr.v[s]);
		if (s % 2 == 0)
			cr_assert_eq(va.v[s], (double)(float)want[s][2], "step %d: %.17g", s, va.v[s]);
		else
			cr_assert(isnan(va.v[s]), "step %d: %.17g", s, va.v[s]);
	}
	lks_store_close(st);
	rm_tmp();
}

/* Lightning 2.6.6's TensorBoardLogger of a training resumed from its checkpoint of step 2
   (lightning_add_scalars/make_lightning_run.py): version_0/ and version_1/, each with the
   Loss_train/ and Loss_half/ series of logger.log_metrics({"Loss": {...}}), which Lightning
   hands to add_scalars. The logs' folder reads as launch 1's steps 0-1, then launch 2's
   2-5 (its restart), each series with its launch: every value the float32 bits the script
   printed (launch1.txt, launch2.txt: launch, step, loss, train, half). */
Test(import_real, lightnings_resumed_run_with_add_scalars_series)
{
	lks_store *st = fresh_store();
	const char *run[] = { LKS_IMPORT_DIR "/lightning_add_scalars/lightning_logs" };
	static const char *const names[] = { "train_loss", "Loss_train", "Loss_half" };
	lks_import_result r;
	struct series got[3];
	unsigned want[6][3];
	int seen = 0;

	for (int launch = 1; launch <= 2; launch++) {
		char path[512];
		FILE *f;
		int l, step;
		unsigned b[3];

		snprintf(path, sizeof(path), "%s/lightning_add_scalars/launch%d.txt", LKS_IMPORT_DIR,
		         launch);
		cr_assert_not_null(f = fopen(path, "r"), "%s", path);
		while (fscanf(f, "%d %d %u %u %u", &l, &step, &b[0], &b[1], &b[2]) == 5) {
			cr_assert(l == launch && step >= 0 && step < 6);
			if (launch == 2 || step < 2) {  /* launch 2 resumed at step 2 */
				memcpy(want[step], b, sizeof(b));
				seen |= 1 << step;
			}
		}
		fclose(f);
	}
	cr_assert_eq(seen, 0x3f, "steps 0 to 5 printed");
	cr_assert_eq(import_as(st, "tensorboard", "lightning", run, 1, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.unread, 0, "%s", r.unread_first);
	cr_assert_eq(r.counts.restarts, 1, "version_1 resumed at step 2");
	for (int k = 0; k < 3; k++) {
		got[k] = series_of(st, r.run_id, names[k]);
		cr_assert_eq(got[k].n, 6, "%s", names[k]);
		for (int s = 0; s < 6; s++) {
			float v = (float)got[k].v[s];
			unsigned bits;

			memcpy(&bits, &v, 4);
			cr_assert_eq((double)v, got[k].v[s], "%s at %d: no float32", names[k], s);
			cr_assert_eq(bits, want[s][k], "%s at %d: %.9g", names[k], s, got[k].v[s]);
		}
	}
	lks_store_close(st);
	rm_tmp();
}

/* tensorboardX 2.6.5 wrote one training through two writers at once, exp/train/ and
   exp/val/ (tb_two_writers/make_two_writers.py), its names of start and host alone: the
   import refuses the folder by the events' wall times (val's first before train's last)
   rather than read val/ as a restart that drops train's steps 2 to 6. */
Test(import_real, tensorboardx_writers_at_once_are_refused)
{
	lks_store *st = fresh_store();
	const char *exp[] = { LKS_IMPORT_DIR "/tb_two_writers/tensorboardX/exp" };
	lks_import_result r;

	cr_assert_eq(import_as(st, "tensorboard", "two", exp, 1, &r), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "/exp/val' began (its first event at ")
	          && strstr(lks_errmsg(), "/exp/train' ended (its last at ")
	          && strstr(lks_errmsg(), "two runs written at once"), "%s", lks_errmsg());
	lks_store_close(st);
	rm_tmp();
}

/* The Trainer launched by torchrun --tee, 2 processes: every line of its console has its
   process's prefix, and torchrun writes a bar's pieces (each ended by a carriage return)
   without a newline, so the dicts of steps 3 and 5 follow a bar on its line, each after a
   prefix of its own ("[default0]: 88%|...| 7/8 [...][default0]:{'loss': ...}"). Every step
   is read, at its place: the console's n-th loss is trainer_state.json's step n. */
Test(import_real, the_console_under_torchrun_reads_every_step_at_its_place)
{
	lks_store *st = fresh_store();
	const char *console[] = { HF "/torchrun/console.log" };
	const char *state[] = { HF "/torchrun/trainer_state.json" };
	lks_import_result rc, rs;
	struct series cl, sl, ce, se;

	cr_assert_eq(import_as(st, "hf-trainer", "console", console, 1, &rc), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(import_as(st, "hf-trainer", "state", state, 1, &rs), 0, "%s", lks_errmsg());
	cr_assert_eq(rc.counts.records, STEPS, "a record a step, none lost behind a bar");
	cr_assert_eq(rc.world_size, 1);
	cl = series_of(st, rc.run_id, "loss");
	sl = series_of(st, rs.run_id, "loss");
	ce = series_of(st, rc.run_id, "epoch");
	se = series_of(st, rs.run_id, "epoch");
	for (int s = 1; s <= STEPS; s++) {
		/* 4 significant digits of a loss between 1 and 10 */
		cr_assert_leq(fabs(cl.v[s] - sl.v[s]), 0.5e-3, "step %d: console %.17g, state %.17g",
		              s, cl.v[s], sl.v[s]);
		cr_assert_eq(ce.v[s], se.v[s], "step %d: the epoch (s / 8) places the line", s);
	}
	lks_store_close(st);
	rm_tmp();
}

/* torch's and tensorboardX's add_hparams (data/tb_hparams/, make_hparams.py): its folder
   log_dir/<time.time()>/ is no add_scalars series: the run is its three steps of
   train/loss alone, no record at step 0 of hparam names with the folder's time in them,
   and the import names the folder's file as not read. */
ParameterizedTestParameters(import_real, add_hparams_is_no_series)
{
	static int k[] = { 0, 1 };  /* the index of the writer (a pointer would not cross) */

	return cr_make_param_array(int, k, 2);
}

ParameterizedTest(int *k, import_real, add_hparams_is_no_series)
{
	static const char *writer[] = { "torch", "tensorboardX" };
	lks_store *st = fresh_store();
	char dir[512], note[2048];
	const char *one[] = { dir };
	lks_import_result r;
	struct series all;

	snprintf(dir, sizeof(dir), "%s/tb_hparams/%s", LKS_IMPORT_DIR, writer[*k]);
	cr_assert_eq(import_as(st, "tensorboard", writer[*k], one, 1, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.hparams, 1);
	cr_assert_eq(r.unread, 0, "%s", r.unread_first);
	cr_assert_eq(r.counts.restarts, 0);
	all = series_of(st, r.run_id, NULL);
	cr_assert_eq(all.n, 3, "train/loss at steps 1 to 3, nothing else");
	cr_assert(isnan(all.v[0]), "no step 0");
	cr_assert_eq(all.v[2], 0.5);
	cr_assert(strstr(lks_import_unread_note(&r, note, sizeof(note)), "event file of "
	                 "add_hparams"), "%s", note);
	lks_store_close(st);
	rm_tmp();
}

/* Two torch processes, as torchrun's ranks, writing to one log_dir at once
   (data/tb_ranks_one_dir/, make_ranks_one_dir.py): their files differ by pid alone and
   their events overlap in time, so the folder is refused, naming both, not read as a launch
   and its restart that drops the first's values. */
Test(import_real, ranks_writing_to_one_folder_are_refused)
{
	lks_store *st = fresh_store();
	const char *dir[] = { LKS_IMPORT_DIR "/tb_ranks_one_dir/shared" };
	lks_import_result r;

	cr_assert_eq(import_as(st, "tensorboard", "ranks", dir, 1, &r), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "/shared/events.out.tfevents.1795978997.vm.24435.0' began")
	          && strstr(lks_errmsg(), "/shared/events.out.tfevents.1795978996.vm.24434.0' ended")
	          && strstr(lks_errmsg(), "two runs written at once"), "%s", lks_errmsg());
	lks_store_close(st);
	rm_tmp();
}
