/*
 * test_import_tb_read.c: the TensorBoard reader takes a file's bytes a chunk (1 MiB) at a
 * time (import_tensorboard.c): records that straddle a chunk's end, and a record larger
 * than a chunk, read as any other; a file cut inside a record is still refused at that
 * record's byte offset. And a file read in parts at once (cut where a record's CRCs check
 * and the step changes: lks_tb_cut) stores and says what one reader does.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.h"
#include "tb_events.h"
#include "harness/import/import.h"
#include "kernels/err.h"

#define NSCALARS 60000  /* about 2.3 MB of records: two chunk ends at offsets of no choice */

struct last {
	long n;
	int step;
	double loss;
};

static int keep_last(void *arg, const lks_metric_row *m)
{
	struct last *l = arg;

	if (!strcmp(m->name, "loss")) {
		l->n++;
		l->step = m->step;
		l->loss = m->value;
	}
	return 0;
}

Test(import_tb_read, records_across_chunk_ends_and_one_bigger_than_a_chunk)
{
	struct tb_scalar *s = calloc(NSCALARS, sizeof(*s));
	char a[512], big[512], b[512], all[512], db[512], cmd[2200];
	const char *files[] = { all };
	lks_import_opts o = { .fmt = lks_import_format_find("tensorboard"), .case_name = "c",
	                      .run_name = "r" };
	lks_import_result res;
	struct last l = { 0 };
	lks_store *st;
	struct stat sb;
	char at[64];

	cr_assert_not_null(s);
	mkdir_tmp();
	for (int i = 0; i < NSCALARS; i++)  /* steps 0.., two tags a step */
		s[i] = (struct tb_scalar){ i / 2, i % 2 ? "grad-norm" : "lm loss",
		                           1.0f / (float)(i + 3) };
	path_in_tmp(a, sizeof(a), "a.tfevents");
	path_in_tmp(big, sizeof(big), "big.tfevents");
	path_in_tmp(b, sizeof(b), "b.tfevents");
	path_in_tmp(all, sizeof(all), "events.out.tfevents.all");
	tb_write(a, s, NSCALARS / 2);
	tb_write_big(big, "wb", -1, 3u << 20);  /* ignored by the import */
	tb_write(b, s + NSCALARS / 2, NSCALARS / 2);
	snprintf(cmd, sizeof(cmd), "cat '%s' '%s' '%s' > '%s'", a, big, b, all);
	cr_assert_eq(system(cmd), 0);
	path_in_tmp(db, sizeof(db), "tb.db");
	cr_assert_eq(lks_store_open(db, &st), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(st, &o, files, 1, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.counts.lines, NSCALARS + 1);
	cr_assert_eq(res.counts.ignored, 1, "the big record holds no summary");
	cr_assert_eq(lks_store_get_metrics(st, res.run_id, "loss", keep_last, &l), 0);
	cr_assert_eq(l.n, NSCALARS / 2);
	cr_assert_eq(l.step, NSCALARS / 2 - 1);
	cr_assert_eq(l.loss, (double)(1.0f / (float)(NSCALARS - 2 + 3)), "bit for bit");
	lks_store_close(st);

	/* the last record's CRC cut short, as a writer killed while writing it leaves it: the
	   records before it are read (in parts too: the last part ends in it), the file counted
	   with the record's offset. That record (step 29999 in 3 varint bytes, tag
	   "grad-norm") is 12 + 24 + 4 bytes */
	cr_assert_eq(stat(all, &sb), 0);
	snprintf(at, sizeof(at), "at byte %lld", (long long)sb.st_size - 40);
	snprintf(cmd, sizeof(cmd), "truncate -s -5 '%s'", all);
	cr_assert_eq(system(cmd), 0);
	path_in_tmp(db, sizeof(db), "cut.db");
	cr_assert_eq(lks_store_open(db, &st), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(st, &o, files, 1, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.counts.cut, 1);
	cr_assert_not_null(strstr(res.counts.cut_first, at), "%s: %s", at, res.counts.cut_first);
	cr_assert_eq(res.counts.lines, NSCALARS, "the cut record is not read");
	l.n = 0;
	cr_assert_eq(lks_store_get_metrics(st, res.run_id, "loss", keep_last, &l), 0);
	cr_assert_eq(l.n, NSCALARS / 2);
	lks_store_close(st);
	free(s);
	rm_tmp();
}

/* Every metric row of run, in the store's order, as text: step, rank, name, value bits. */
struct dump {
	char *text;
	size_t len, cap;
};

static int dump_row(void *arg, const lks_metric_row *m)
{
	struct dump *d = arg;
	uint64_t bits;
	char line[160];
	int n;

	memcpy(&bits, &m->value, 8);
	n = snprintf(line, sizeof(line), "%d %d %s %016llx\n", m->step, m->rank, m->name,
	             (unsigned long long)bits);
	if (d->len + (size_t)n + 1 > d->cap) {
		d->cap = (d->cap + (size_t)n + 1) * 2;
		d->text = realloc(d->text, d->cap);
		cr_assert_not_null(d->text);
	}
	memcpy(d->text + d->len, line, (size_t)n + 1);
	d->len += (size_t)n;
	return 0;
}

/* Imports path into a new database named db (parts: the most parts, 1 one reader): its
   answer, its rows into *d (where it stored), its result. */
static int import_parts(const char *path, const char *db, int parts, struct dump *d,
                        lks_import_result *res, char *msg, size_t msize)
{
	const char *files[] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find("tensorboard"), .case_name = "c",
	                      .run_name = "r" };
	char n[16], where[512];
	lks_store *st;
	int rc;

	snprintf(n, sizeof(n), "%d", parts);
	setenv("LKS_IMPORT_PARTS", n, 1);
	setenv("LKS_IMPORT_SPLIT_MIN", "1", 1);
	path_in_tmp(where, sizeof(where), db);
	cr_assert_eq(lks_store_open(where, &st), 0, "%s", lks_errmsg());
	rc = lks_import_files(st, &o, files, 1, res);
	snprintf(msg, msize, "%s", rc ? lks_errmsg() : "");
	if (!rc)
		cr_assert_eq(lks_store_get_metrics(st, res->run_id, NULL, dump_row, d), 0);
	lks_store_close(st);
	unsetenv("LKS_IMPORT_PARTS");
	unsetenv("LKS_IMPORT_SPLIT_MIN");
	return rc;
}

Test(import_tb_read, a_file_read_in_parts_stores_and_says_what_one_reader_does)
{
	struct tb_scalar *s = calloc(NSCALARS, sizeof(*s));
	char a[512], b[512], all[512], head[512], cmd[2200], m1[512], m3[512];
	struct dump one = { 0 }, three = { 0 };
	lks_import_result r1, r3;

	cr_assert_not_null(s);
	mkdir_tmp();
	/* steps 0.., four tags a step (a step's events may straddle a cut) */
	for (int i = 0; i < NSCALARS; i++)
		s[i] = (struct tb_scalar){ i / 4, (const char *[]){ "lm loss", "grad-norm",
		                                                    "learning-rate", "x" }[i % 4],
		                           (float)i / 7.0f };
	path_in_tmp(a, sizeof(a), "a.tfevents");
	path_in_tmp(b, sizeof(b), "b.tfevents");
	path_in_tmp(all, sizeof(all), "all.tfevents");
	tb_write(a, s, NSCALARS);
	cr_assert_eq(import_parts(a, "one.db", 1, &one, &r1, m1, sizeof(m1)), 0, "%s", m1);
	cr_assert_eq(import_parts(a, "three.db", 3, &three, &r3, m3, sizeof(m3)), 0, "%s", m3);
	cr_assert_eq(r1.parts, 1);
	cr_assert_eq(r3.parts, 3, "read in parts");
	cr_assert_eq(r1.counts.lines, r3.counts.lines);
	cr_assert_eq(r1.counts.records, r3.counts.records);
	cr_assert_eq(r1.counts.records, NSCALARS / 4);
	cr_assert_eq(one.len, three.len);
	cr_assert(!strcmp(one.text, three.text), "the same rows, bit for bit");

	/* two thirds of the steps, then the first third again with other values: a step that
	   goes back within a file with other values is bad input, said at the same record by
	   the parts (the seam not clean: read again by one reader) as by one reader */
	path_in_tmp(head, sizeof(head), "head.tfevents");
	tb_write(head, s, 2 * NSCALARS / 3);
	for (int i = 0; i < NSCALARS / 3; i++)
		s[i].value += 1.0f;
	tb_write(b, s, NSCALARS / 3);
	snprintf(cmd, sizeof(cmd), "cat '%s' '%s' > '%s'", head, b, all);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(import_parts(all, "bad1.db", 1, &one, &r1, m1, sizeof(m1)), LKS_E_BAD_INPUT);
	cr_assert_eq(import_parts(all, "bad3.db", 3, &three, &r3, m3, sizeof(m3)), LKS_E_BAD_INPUT);
	cr_assert_str_eq(m1, m3);
	cr_assert_not_null(strstr(m1, ":40001:"), "the first record of the step again: %s", m1);
	free(one.text);
	free(three.text);
	free(s);
	rm_tmp();
}

/* The records of src appended to dst, as a writer's flush adds them to a live file. */
static void append_file(const char *src, const char *dst)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "cat '%s' >> '%s'", src, dst);
	cr_assert_eq(system(cmd), 0);
}

/* A followed event file (import --follow, a stream whose reads wait for the file to grow)
   is read record by record, not a chunk at a time: step 5's loss, 1 apart from the
   reference's, is found once step 6's event closes it, long before a chunk (1 MiB) or
   the idle time (30 s) would come. */
Test(import_tb_read, a_followed_event_file_is_compared_step_by_step)
{
	struct tb_scalar ref[6], one;
	char refp[512], live[512], scratch[512], db[512], out[512], cmd[3000], text[4096];
	int status = -1;
	pid_t pid;
	FILE *f;

	mkdir_tmp();
	for (int i = 0; i < 6; i++)
		ref[i] = (struct tb_scalar){ i + 1, "lm loss", 10.0f / (float)(i + 2) };
	path_in_tmp(refp, sizeof(refp), "ref.tfevents");
	path_in_tmp(live, sizeof(live), "live.tfevents");
	path_in_tmp(scratch, sizeof(scratch), "one.tfevents");
	path_in_tmp(db, sizeof(db), "f.db");
	path_in_tmp(out, sizeof(out), "out.txt");
	tb_write(refp, ref, 6);
	cr_assert_not_null(f = fopen(live, "w"));
	fclose(f);
	snprintf(cmd, sizeof(cmd), "exec '%s' import --follow --format tensorboard '%s' --case c "
	         "--run live --reference-file 'tensorboard:%s' --db '%s' --idle 30 > '%s' 2>&1",
	         LKS_BIN, live, refp, db, out);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 6; i++) {
		one = ref[i];
		if (one.step == 5)
			one.value += 1.0f;
		tb_write(scratch, &one, 1);
		append_file(scratch, live);
		usleep(100000);
	}
	for (int t = 0; t < 1000 && waitpid(pid, &status, WNOHANG) == 0; t++)
		usleep(10000);  /* 10 s at most: an unloaded machine takes a few ms */
	if (status == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		cr_assert_fail("still following 10 s after step 6 was written");
	}
	f = fopen(out, "r");
	cr_assert_not_null(f);
	text[fread(text, 1, sizeof(text) - 1, f)] = 0;
	fclose(f);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s", text);
	cr_assert_not_null(strstr(text, "diverged at step 5 rank 0 metric loss"), "%s", text);
	rm_tmp();
}

/* Megatron-LM logs each scalar twice (training.py's training_log): at the iteration, and
   as "NAME vs samples" at the samples consumed so far, a step far ahead of the iteration.
   The second is the same value against another axis: ignored, so that the steps of the
   file are the iterations (read as steps they went backwards: bad input). Writers that
   clean tags write "lm_loss_vs_samples"; forks add " vs tokens". And NeMo 2's and Composer's
   names of the loss. */
static int count_rows(void *arg, const lks_metric_row *m)
{
	(void)m;
	++*(long *)arg;
	return 0;
}

Test(import_tb_read, megatron_scalars_against_samples_are_not_steps)
{
	struct tb_scalar s[5 * 6 + 3];
	char path[512], db[512];
	const char *files[] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find("tensorboard"), .case_name = "c",
	                      .run_name = "r" };
	lks_import_result res;
	struct last l = { 0 };
	lks_store *st;
	int n = 0;
	long nrows;

	mkdir_tmp();
	for (int it = 1; it <= 5; it++) {
		s[n++] = (struct tb_scalar){ it, "learning-rate", 1e-4f };
		s[n++] = (struct tb_scalar){ it * 64, "learning-rate vs samples", 1e-4f };
		s[n++] = (struct tb_scalar){ it, "lm loss", 10.0f / (float)it };
		s[n++] = (struct tb_scalar){ it * 64, "lm_loss_vs_samples", 10.0f / (float)it };
		s[n++] = (struct tb_scalar){ it * 131072, "lm loss vs tokens", 10.0f / (float)it };
		s[n++] = (struct tb_scalar){ it, "versus samples", 1.0f };  /* a name of its own */
	}
	/* NeMo 2's names, as its log lines print them (Lightning's logger writes them so) */
	s[n++] = (struct tb_scalar){ 6, "reduced_train_loss", 1.5f };
	s[n++] = (struct tb_scalar){ 6, "train_step_timing in s", 2.25f };
	/* Composer's loss at its own step */
	s[n++] = (struct tb_scalar){ 7, "loss/train/total", 1.25f };
	path_in_tmp(path, sizeof(path), "events.out.tfevents.mg");
	path_in_tmp(db, sizeof(db), "mg.db");
	tb_write(path, s, n);
	cr_assert_eq(lks_store_open(db, &st), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(st, &o, files, 1, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.steps, 7);
	cr_assert_eq(res.counts.ignored, 15, "3 scalars of another axis an iteration");
	cr_assert_eq(lks_store_get_metrics(st, res.run_id, "loss", keep_last, &l), 0);
	cr_assert_eq(l.n, 7, "NeMo's reduced_train_loss and Composer's loss/train/total too");
	cr_assert_eq(l.step, 7);
	cr_assert_eq(l.loss, 1.25);
	nrows = 0;
	cr_assert_eq(lks_store_get_metrics(st, res.run_id, "iteration_time_s", count_rows, &nrows),
	             0);
	cr_assert_eq(nrows, 1, "NeMo's train_step_timing in s is the iteration time");
	nrows = 0;
	cr_assert_eq(lks_store_get_metrics(st, res.run_id, "versus_samples", count_rows, &nrows), 0);
	cr_assert_eq(nrows, 5, "a tag that only looks alike is a metric of its own");
	lks_store_close(st);
	rm_tmp();
}
