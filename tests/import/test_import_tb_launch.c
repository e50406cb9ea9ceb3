/*
 * test_import_tb_launch.c: which event files of a TensorBoard folder are launches of one
 * run (import_folder.c, import_tb_peek.c): add_hparams' folder is no add_scalars series;
 * the event files of one folder whose events overlap in time (every rank writing to one
 * log_dir) are refused, as folders that do are, while a launch and its restart are read;
 * a file's last wall time is found past a last record larger than 64 KiB, an empty file
 * hides no other's time, a file cut within its last record ends at the record before, and
 * a time that cannot be known refuses the folder.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store_fixture.h"
#include "run_bin.h"
#include "tb_events.h"
#include "harness/import/import.h"
#include "kernels/err.h"

#define T0 1767600000.0  /* 2026-01-05 08:00:00 UTC */

/* tmpdir/rel (a folder made where dir is set) into buf */
static const char *at_tmp(char *buf, size_t n, const char *rel, int dir)
{
	path_in_tmp(buf, n, rel);
	if (dir)
		cr_assert_eq(mkdir(buf, 0700), 0, "%s", buf);
	return buf;
}

/* n scalars "loss" = first + i at steps from + i, wall times start + i * gap, into
   tmpdir/rel */
static void put_run(const char *rel, int from, int n, float first, double start, double gap)
{
	struct tb_scalar s[32];
	double wall[32];
	char path[512];

	cr_assert_leq(n, 32);
	for (int i = 0; i < n; i++) {
		s[i] = (struct tb_scalar){ from + i, "loss", first + (float)i };
		wall[i] = start + i * gap;
	}
	tb_write_at(at_tmp(path, sizeof(path), rel, 0), s, wall, n);
}

static int import_dir(lks_store *st, const char *dir, const char *name, lks_import_result *res)
{
	lks_import_opts o = { .fmt = lks_import_format_find("tensorboard"), .case_name = "c",
	                      .run_name = name };

	return lks_import_files(st, &o, &dir, 1, res);
}

struct seen {
	int n, hparam;
	double loss[32];  /* by step; 0: none */
};

static int see(void *arg, const lks_metric_row *m)
{
	struct seen *x = arg;

	x->n++;
	x->hparam += strstr(m->name, "hparam") != NULL;
	if (!strcmp(m->name, "loss") && m->step >= 0 && m->step < 32)
		x->loss[m->step] = m->value;
	return 0;
}

static lks_store *store_in_tmp(void)
{
	char db[512];
	lks_store *st;

	cr_assert_eq(lks_store_open(at_tmp(db, sizeof(db), "t.db", 0), &st), 0, "%s",
	             lks_errmsg());
	return st;
}

/* add_hparams writes into log_dir/<time.time()>/ an event file of "_hparams_/..." summaries
   and metric_dict's scalars at step 0: not read as a series (its step 0 a record of invented
   names; in a run resumed, the second launch's taking the run back to step 0), but counted
   and named as not read; the launch and its restart read as they are. */
Test(import_tb_launch, add_hparams_folders_are_no_series)
{
	static const struct tb_scalar hp1[] = {
		{ 0, "_hparams_/experiment", 0 }, { 0, "_hparams_/session_start_info", 0 },
		{ 0, "_hparams_/session_end_info", 0 }, { 0, "hparam/accuracy", 0.75f },
	};
	static const struct tb_scalar hp2[] = {
		{ 0, "_hparams_/experiment", 0 }, { 0, "hparam/accuracy", 0.5f },
	};
	static const double w1[] = { T0 + 5, T0 + 5, T0 + 5, T0 + 5 }, w2[] = { T0 + 106, T0 + 106 };
	char run[512], path[512], note[2048];
	lks_import_result res;
	struct seen x = { 0 };
	lks_store *st;

	mkdir_tmp();
	at_tmp(run, sizeof(run), "run", 1);
	put_run("run/events.out.tfevents.1767600000.node.7.0", 0, 5, 1.0f, T0, 1.0);
	at_tmp(path, sizeof(path), "run/1767600005.25", 1);
	tb_write_at(at_tmp(path, sizeof(path),
	                   "run/1767600005.25/events.out.tfevents.1767600005.node.7.1", 0),
	            hp1, w1, 4);
	put_run("run/events.out.tfevents.1767600100.node.8.0", 3, 4, 103.0f, T0 + 100, 1.0);
	at_tmp(path, sizeof(path), "run/1767600106.5", 1);
	tb_write_at(at_tmp(path, sizeof(path),
	                   "run/1767600106.5/events.out.tfevents.1767600106.node.8.1", 0),
	            hp2, w2, 2);
	st = store_in_tmp();
	cr_assert_eq(import_dir(st, run, "r", &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.hparams, 2);
	cr_assert_eq(res.unread, 0, "%s", res.unread_first);
	cr_assert(strstr(res.hparams_first, "/run/1767600005.25/events.out.tfevents."),
	          "%s", res.hparams_first);
	cr_assert(strstr(lks_import_unread_note(&res, note, sizeof(note)),
	                 "not read: 2 event files of add_hparams, such as '"), "%s", note);
	cr_assert_eq(res.counts.restarts, 1, "the second launch from step 3");
	cr_assert_eq(lks_store_get_metrics(st, res.run_id, NULL, see, &x), 0, "%s", lks_errmsg());
	cr_assert_eq(x.hparam, 0, "no metric of add_hparams stored");
	cr_assert_eq(x.n, 7, "steps 0..6, a loss each");
	cr_assert_eq(x.loss[0], 1.0, "the first launch's step 0 kept");
	cr_assert_eq(x.loss[2], 3.0);
	cr_assert_eq(x.loss[3], 103.0, "the restart's from step 3");
	lks_store_close(st);
	rm_tmp();
}

/* Two writers at once into one folder (every rank of a torchrun given one log_dir: files
   that differ by pid alone) are refused, naming both, and nothing is stored; a later
   launch begun after the earlier's last event is its restart; two files of one process
   one after the other (Lightning's fit() and test()) are read in turn. */
Test(import_tb_launch, writers_at_once_in_one_folder_are_refused)
{
	char dir[512], args[1200], out[4096];
	lks_import_result res;
	lks_store *st;

	mkdir_tmp();
	at_tmp(dir, sizeof(dir), "shared", 1);
	put_run("shared/events.out.tfevents.1767600000.node.100.0", 0, 5, 1.0f, T0, 1.0);
	put_run("shared/events.out.tfevents.1767600000.node.101.0", 0, 5, 2.0f, T0 + 0.5, 1.0);
	st = store_in_tmp();
	cr_assert_eq(import_dir(st, dir, "at_once", &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "/shared/events.out.tfevents.1767600000.node.101.0' began "
	                 "(its first event at 2026-01-05 08:00:00.500 UTC) before '")
	          && strstr(lks_errmsg(), "/shared/events.out.tfevents.1767600000.node.100.0' ended "
	                    "(its last at 2026-01-05 08:00:04.000 UTC): two runs written at once"),
	          "%s", lks_errmsg());
	lks_store_close(st);
	snprintf(args, sizeof(args), "import --db '%s/cli.db' --format tensorboard --case c --run w "
	         "'%s'", tmpdir, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "import each as a run of its own; nothing stored"), "%s", out);

	/* the second begun after the first's last event: a restart, read */
	put_run("shared/events.out.tfevents.1767600000.node.101.0", 2, 3, 20.0f, T0 + 4.25, 1.0);
	st = store_in_tmp();
	cr_assert_eq(import_dir(st, dir, "restart", &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.counts.restarts, 1);
	/* one process's second writer after its first (fit, then test after fit's last step) */
	path_in_tmp(args, sizeof(args), "shared/events.out.tfevents.1767600000.node.101.0");
	cr_assert_eq(unlink(args), 0);
	put_run("shared/events.out.tfevents.1767600004.node.100.1", 5, 1, 9.0f, T0 + 4.25, 1.0);
	cr_assert_eq(import_dir(st, dir, "fit_test", &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.counts.restarts, 0);
	cr_assert_eq(res.steps, 5);
	lks_store_close(st);
	rm_tmp();
}

/* A launch killed while writing its last record, and its restart, in one folder: the cut
   file's last whole record gives its last wall time (the headers walked to it), so the two
   are a launch and its restart, read; the folder was refused ("when the file was written
   is not known") though the reader reads such a file to the record before. */
Test(import_tb_launch, a_launch_cut_within_its_last_record_and_its_restart_are_read)
{
	char dir[512], path[512];
	lks_import_result res;
	struct stat sb;
	lks_store *st;

	mkdir_tmp();
	at_tmp(dir, sizeof(dir), "cut", 1);
	put_run("cut/events.out.tfevents.1767600000.node.100.0", 0, 5, 1.0f, T0, 1.0);
	path_in_tmp(path, sizeof(path), "cut/events.out.tfevents.1767600000.node.100.0");
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(truncate(path, sb.st_size - 5), 0);  /* step 4's record cut */
	put_run("cut/events.out.tfevents.1767600010.node.101.0", 3, 3, 30.0f, T0 + 10, 1.0);
	st = store_in_tmp();
	cr_assert_eq(import_dir(st, dir, "cut", &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.counts.cut, 1);
	cr_assert_eq(res.counts.restarts, 1, "the second launch from step 3");
	cr_assert_eq(res.steps, 5);
	lks_store_close(st);
	rm_tmp();
}

/* Folders of runs written at once are refused whatever hides their times: the first's last
   record of 200 KB (found by walking the records' headers), an empty file beside it, an
   overlap of half a second (the tolerance of a second let it through); a file whose last
   time cannot be known (a header's CRC bad) refuses the folder, naming the file and byte. */
Test(import_tb_launch, a_time_not_found_near_the_end_is_walked_to_or_refused)
{
	char top[512], path[512];
	lks_import_result res;
	struct stat sb;
	lks_store *st;
	int byte;
	FILE *f;

	mkdir_tmp();
	at_tmp(top, sizeof(top), "big", 1);
	at_tmp(path, sizeof(path), "big/rank-0", 1);
	at_tmp(path, sizeof(path), "big/rank-1", 1);
	put_run("big/rank-0/events.out.tfevents.1767600000.node.1.0", 0, 5, 1.0f, T0, 0.5);
	path_in_tmp(path, sizeof(path), "big/rank-0/events.out.tfevents.1767600000.node.1.0");
	cr_assert_eq(stat(path, &sb), 0);  /* where the big record begins */
	tb_write_big(path, "ab", T0 + 3, 200 << 10);  /* an add_image of 200 KB, last */
	at_tmp(path, sizeof(path), "big/rank-0/events.out.tfevents.1767600003.node.1.1", 0);
	cr_assert_not_null(f = fopen(path, "w"));  /* empty: a writer that wrote nothing */
	cr_assert_eq(fclose(f), 0);
	put_run("big/rank-1/events.out.tfevents.1767600001.node.2.0", 0, 5, 2.0f, T0 + 2.5, 0.5);
	st = store_in_tmp();
	cr_assert_eq(import_dir(st, top, "big", &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "/big/rank-1' began (its first event at 2026-01-05 "
	                 "08:00:02.500 UTC) before '") && strstr(lks_errmsg(), "/big/rank-0' ended "
	                 "(its last at 2026-01-05 08:00:03.000 UTC)"), "%s", lks_errmsg());

	/* the length's CRC of rank-0's last record made bad: its time is not known */
	path_in_tmp(path, sizeof(path), "big/rank-0/events.out.tfevents.1767600000.node.1.0");
	cr_assert_not_null(f = fopen(path, "r+b"));
	cr_assert_eq(fseek(f, (long)sb.st_size + 8, SEEK_SET), 0);  /* its length's CRC */
	byte = fgetc(f);
	cr_assert_eq(fseek(f, (long)sb.st_size + 8, SEEK_SET), 0);
	cr_assert_eq(fputc(byte ^ 0x55, f), byte ^ 0x55);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(import_dir(st, top, "bad", &res), LKS_E_BAD_INPUT);
	snprintf(path, sizeof(path), "/big/rank-0/events.out.tfevents.1767600000.node.1.0': "
	         "byte %lld: ", (long long)sb.st_size);
	cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "so when the file was "
	          "written is not known"), "%s", lks_errmsg());
	lks_store_close(st);
	rm_tmp();
}
