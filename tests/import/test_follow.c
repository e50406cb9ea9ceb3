/*
 * test_follow.c: 'lockstep import --follow' on a log that grows while it reads it: this
 * test writes the log a line at a time with pauses while the program (LKS_BIN, a child
 * process) follows it. A difference from the reference is reported at the step it is
 * written, before the step after the next one exists; an equal log ends at --end-step,
 * at the end of standard input, or when the file stays quiet for --idle seconds; a bad
 * line exits 2 and leaves the steps before it stored. The reference may be a golden file
 * of class import (--golden), as 'lockstep golden update' writes one for an imported run.
 * A log truncated, rotated or rewritten under the follower (it is stopped meanwhile, or
 * known from /proc to have read the file to its end) is read again from its start.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run_bin.h"
#include "store_fixture.h"
#include "harness/store/golden.h"
#include "harness/store/run.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

#define STEPS 10

/* The loss of a step: a value whose 17 digits matter, as a real loss's do. */
static double loss_of(int step)
{
	return 10.0 / (1.0 + 0.37 * step) + 1e-13 * step;
}

/* Rank r's torchtitan line of a step; bump changes the loss in its last digit. */
static void titan_line(char *buf, size_t n, int step, int rank, int bump)
{
	snprintf(buf, n, "[rank%d]:[titan] 2026-01-05 10:00:0%d,000 - root - INFO - step: %d  "
	         "loss: %.17g  grad_norm: %.17g  memory:  2.47GiB(3.12%%)  tps: 3,50%d\n", rank,
	         step % 10, step, loss_of(step) * (bump ? 1.0 + 1e-15 : 1.0), 0.5 / step, step % 10);
}

/* The log of every step and rank, the loss of rank 0 bumped at step bump (0: none). */
static void write_log(const char *path, int ranks, int bump)
{
	FILE *f = fopen(path, "w");
	char line[512];

	cr_assert_not_null(f);
	for (int s = 1; s <= STEPS; s++)
		for (int r = 0; r < ranks; r++) {
			titan_line(line, sizeof(line), s, r, s == bump && r == 0);
			fputs(line, f);
		}
	fclose(f);
}

static void append(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Starts 'LKS_BIN import --follow ...' with its output into out_path. */
static pid_t follower(const char *db, const char *log, const char *ref, const char *extra,
                      const char *out_path)
{
	char cmd[2048];
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "exec '%s' import --follow --format torchtitan '%s' --case c "
	         "--run live --reference-file 'torchtitan:%s' --db '%s' %s > '%s' 2>&1", LKS_BIN,
	         log, ref, db, extra, out_path);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* Waits up to limit_ms for pid to exit: its exit code, or -1 still running. */
static int wait_exit(pid_t pid, long limit_ms)
{
	int status;

	for (long t = 0; t <= limit_ms; t += 10) {
		pid_t got = waitpid(pid, &status, WNOHANG);

		cr_assert_geq(got, 0);
		if (got == pid) {
			cr_assert(WIFEXITED(status));
			return WEXITSTATUS(status);
		}
		sleep_ms(10);
	}
	return -1;
}

static void slurp(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t got;

	cr_assert_not_null(f);
	got = fread(buf, 1, n - 1, f);
	buf[got] = 0;
	fclose(f);
}

/* The steps stored of the last run of db. */
static int stored_steps(const char *db, int64_t run, int *world)
{
	lks_stored_run r;
	lks_store *s;
	int last = -1;

	lks_stored_run_init(&r);
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_load(s, run, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	for (int i = 0; i < r.nsteprows; i++)
		last = r.steprows[i].step > last ? r.steprows[i].step : last;
	*world = r.nsteprows;
	lks_stored_run_release(&r);
	lks_store_close(s);
	return last;
}

struct paths {
	char db[512], log[512], ref[512], out[512];
};

/* A new folder; the reference log there, of ranks ranks. */
static void setup(struct paths *p, int ranks)
{
	mkdir_tmp();
	path_in_tmp(p->db, sizeof(p->db), "t.db");
	path_in_tmp(p->log, sizeof(p->log), "live.log");
	path_in_tmp(p->ref, sizeof(p->ref), "ref.log");
	path_in_tmp(p->out, sizeof(p->out), "out.txt");
	write_log(p->ref, ranks, 0);
}

/* Two ranks; rank 1's loss differs at step 5. The follower must still run while steps 1
   to 4 are written (it follows, it does not stop at the file's end), and must have
   exited 1 naming step 5, rank 1, loss before step 7 is written: this test writes step 7
   only after it has exited (or after 10 s, an unloaded machine's 1000 polls, failing). */
Test(follow, a_growing_log_diverging_is_stopped_within_one_step)
{
	struct paths p;
	char line[512], text[4096];
	pid_t pid;
	int world;
	FILE *f;

	setup(&p, 2);
	cr_assert_not_null(f = fopen(p.log, "w"));
	fclose(f);
	pid = follower(p.db, p.log, p.ref, "--idle 30", p.out);
	for (int s = 1; s <= 6; s++) {
		if (s <= 5)
			cr_assert_eq(wait_exit(pid, 0), -1, "the follower stopped before step %d was "
			             "written", s);
		for (int r = 0; r < 2; r++) {
			titan_line(line, sizeof(line), s, r, s == 5 && r == 1);
			append(p.log, line);
		}
		sleep_ms(100);
	}
	cr_assert_eq(wait_exit(pid, 10000), 1, "no exit 1 before step 7 was written");
	titan_line(line, sizeof(line), 7, 0, 0);
	append(p.log, line);
	slurp(p.out, text, sizeof(text));
	cr_assert(strstr(text, "diverged at step 5 rank 1 metric loss"), "%s", text);
	/* steps 1 to 5 stored, each committed as it came; the run stays incomplete */
	cr_assert_eq(stored_steps(p.db, 1, &world), 5, "%s", text);
	cr_assert_eq(world, 10);
	rm_tmp();
}

/* A log equal to its reference: exit 0 when the file has been quiet for --idle seconds,
   and at --end-step without reading on. */
Test(follow, an_equal_log_ends_at_idle_or_at_the_end_step)
{
	struct paths p;
	char text[4096];
	pid_t pid;
	int world;

	setup(&p, 2);
	pid = follower(p.db, p.ref, p.ref, "--idle 0.3", p.out);
	cr_assert_eq(wait_exit(pid, 20000), 0);
	slurp(p.out, text, sizeof(text));
	cr_assert(strstr(text, "10 steps up to 10, 2 ranks, 40 values equal"), "%s", text);
	pid = follower(p.db, p.ref, p.ref, "--idle 30 --end-step 3", p.out);
	cr_assert_eq(wait_exit(pid, 20000), 0, "it did not stop at the end step");
	slurp(p.out, text, sizeof(text));
	cr_assert(strstr(text, "3 steps up to 3"), "%s", text);
	cr_assert_eq(stored_steps(p.db, 2, &world), 3);
	cr_assert_eq(world, 6);
	rm_tmp();
}

/* A gate that compared nothing has not passed: a log none of whose steps the reference
   holds (it counts from 11 here) exits 1, saying so; it exited 0 with "0 values equal".
   The log going idle before --end-step is a job that died: exit 3, the run incomplete
   (exit 0, complete, before). */
Test(follow, nothing_compared_or_the_end_step_not_reached_is_no_pass)
{
	struct paths p;
	char line[512], text[4096];
	lks_store *s;
	char status[32];
	pid_t pid;
	FILE *f;

	setup(&p, 1);
	cr_assert_not_null(f = fopen(p.log, "w"));
	for (int st = 11; st <= 12; st++) {
		titan_line(line, sizeof(line), st, 0, 0);
		fputs(line, f);
	}
	fclose(f);
	pid = follower(p.db, p.log, p.ref, "--idle 0.3", p.out);
	cr_assert_eq(wait_exit(pid, 20000), 1);
	slurp(p.out, text, sizeof(text));
	cr_assert(strstr(text, "nothing compared"), "%s", text);
	pid = follower(p.db, p.ref, p.ref, "--idle 0.3 --end-step 20", p.out);
	cr_assert_eq(wait_exit(pid, 20000), 3);
	slurp(p.out, text, sizeof(text));
	cr_assert(strstr(text, "before --end-step 20"), "%s", text);
	cr_assert_eq(lks_store_open(p.db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_run_status(s, 2, status, sizeof(status)), 0, "%s", lks_errmsg());
	cr_assert_str_eq(status, "incomplete");
	lks_store_close(s);
	rm_tmp();
}

Test(follow, stdin_bad_lines_and_bad_usage)
{
	struct paths p;
	char *db = p.db, *ref = p.ref, *log = p.log, args[2048], out[4096];

	setup(&p, 1);
	write_log(log, 1, 4);
	/* standard input: ends when closed; rtol 1e-12 takes the bump of 1e-15 (relative) */
	snprintf(args, sizeof(args), "cat '%s' | '%s' import --follow --format torchtitan - "
	         "--case c --run s --db '%s' --reference-file 'torchtitan:%s' --rtol 1e-12 2>&1",
	         log, LKS_BIN, db, ref);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "cat '%s' | '%s' import --follow --format torchtitan - "
	         "--case c --run s --db '%s' --reference-file 'torchtitan:%s' 2>&1", log, LKS_BIN,
	         db, ref);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "diverged at step 4 rank 0 metric loss"), "%s", out);
	/* a bad number at step 6: exit 2 naming the line */
	snprintf(args, sizeof(args), "sed 's/step: 6  loss: [0-9.]*/step: 6  loss: 1.2.3/' '%s' | "
	         "'%s' import --follow --format torchtitan - --case c --run s --db '%s' "
	         "--reference-file 'torchtitan:%s' 2>&1", ref, LKS_BIN, db, ref);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, ":6: bad value"), "%s", out);
	cr_assert(strstr(out, "the 5 steps before it stay stored"), "%s", out);
	/* at the first step: nothing was stored, and it is not said to be */
	snprintf(args, sizeof(args), "sed 's/step: 1  loss: [0-9.]*/step: 1  loss: 1.2.3/' '%s' | "
	         "'%s' import --follow --format torchtitan - --case c --run s1 --db '%s' "
	         "--reference-file 'torchtitan:%s' 2>&1", ref, LKS_BIN, db, ref);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "; nothing stored"), "%s", out);
	/* a whole import reads standard input as '-' too */
	snprintf(args, sizeof(args), "cat '%s' | '%s' import --format torchtitan - --case c "
	         "--run whole --db '%s' 2>&1", ref, LKS_BIN, db);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "imported c/whole") && strstr(out, "1 rank,"), "%s", out);
	snprintf(args, sizeof(args), "import --follow --format torchtitan '%s' --case c --run s "
	         "--db '%s'", ref, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	snprintf(args, sizeof(args), "import --follow --format megatron-golden '%s' --case c "
	         "--run s --db '%s' --reference 1", ref, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	snprintf(args, sizeof(args), "import --follow --format torchtitan '%s' --case c --run s "
	         "--db '%s' --reference 99", ref, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	/* a tolerance or an idle time without --follow would mean nothing, and was taken */
	for (int i = 0; i < 3; i++) {
		snprintf(args, sizeof(args), "import --format torchtitan '%s' --case c --run t "
		         "--db '%s' %s", ref, db, i == 0 ? "--rtol 0.1" : i == 1 ? "--atol 5" : "--idle 1");
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
		cr_assert_not_null(strstr(out, "--idle and --end-step go with --follow"), "%s", out);
	}
	rm_tmp();
}

/* The reference log imported as run 1 of db and written as its golden (class import) at
   gold, by the function 'lockstep golden update' writes an imported run's with. */
static void write_golden(const struct paths *p, char *gold, size_t n)
{
	char args[2048], out[4096], dir[512], cls[16];
	lks_stored_run run;
	lks_store *s;

	snprintf(args, sizeof(args), "import --format torchtitan '%s' --case c --run ref --db '%s'",
	         p->ref, p->db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(lks_store_open(p->db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_load(s, 1, LKS_LOAD_WHOLE, &run), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_golden_class_of(&run, cls, sizeof(cls)), 0, "%s", lks_errmsg());
	cr_assert_str_eq(cls, "import");
	path_in_tmp(dir, sizeof(dir), "golden");
	cr_assert_eq(lks_golden_path(dir, cls, "c", "ref", gold, n), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_golden_write(&run, gold), 0, "%s", lks_errmsg());
	lks_stored_run_release(&run);
	lks_store_close(s);
}

/* Against a golden of class import: the log it was written from meets it (exit 0, every
   numerics value compared: loss and grad_norm of 10 steps x 2 ranks; memory and tps are
   performance); one whose rank-1 loss departs at step 6 exits 1 naming step 6, rank 1,
   loss. A golden that is not there, or not of class import, is bad input (exit 2). */
Test(follow, against_a_golden_of_class_import)
{
	struct paths p;
	char gold[1024], args[4096], out[4096], cpu[1024];
	FILE *f;

	setup(&p, 2);
	write_golden(&p, gold, sizeof(gold));
	snprintf(args, sizeof(args), "import --follow --format torchtitan '%s' --case c --run a "
	         "--db '%s' --golden '%s' --idle 0.2", p.ref, p.db, gold);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "10 steps up to 10, 2 ranks, 40 values equal"), "%s", out);

	cr_assert_not_null(f = fopen(p.log, "w"));
	for (int s = 1; s <= STEPS; s++)
		for (int r = 0; r < 2; r++) {
			char line[512];

			titan_line(line, sizeof(line), s, r, s == 6 && r == 1);
			fputs(line, f);
		}
	fclose(f);
	snprintf(args, sizeof(args), "import --follow --format torchtitan '%s' --case c --run b "
	         "--db '%s' --golden '%s' --idle 0.2", p.log, p.db, gold);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "diverged at step 6 rank 1 metric loss"), "%s", out);
	/* steps 1 to 5 equal (2 values of 2 ranks each), rank 0 of step 6, and rank 1's
	   grad_norm, which comes before loss by name */
	cr_assert(strstr(out, "23 values compared before"), "%s", out);

	/* no such file; a golden of class cpu (tensors, no metrics); two references */
	snprintf(args, sizeof(args), "import --follow --format torchtitan '%s' --case c --run d "
	         "--db '%s' --golden '%s.nosuch' --idle 0.2", p.ref, p.db, gold);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "no golden file"), "%s", out);
	path_in_tmp(cpu, sizeof(cpu), "cpu.tsv");
	cr_assert_not_null(f = fopen(cpu, "w"));
	fputs("# lockstep golden 1\n# case: c\n# run: r\n# recipe: bf16\n# options: "
	      "checkpoint=none\n# backend: cpu\n# world_size: 1\n# steps: 1\n# seed: 1\n"
	      "step\trank\tloss\tgrad_norm\tlr\n0\t0\t2.5\t1\t0.001\n"
	      "step\trank\tseq\tname\tphase\tl2\tamax\tscale\tnonfinite\tunderflow\tsaturated"
	      "\thash\n# end\t1\t0\n", f);
	fclose(f);
	snprintf(args, sizeof(args), "import --follow --format torchtitan '%s' --case c --run e "
	         "--db '%s' --golden '%s' --idle 0.2", p.ref, p.db, cpu);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "not of class import"), "%s", out);
	snprintf(args, sizeof(args), "import --follow --format torchtitan '%s' --case c --run f "
	         "--db '%s' --golden '%s' --reference 1", p.ref, p.db, gold);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "one of --reference, --reference-file, --golden"), "%s", out);
	rm_tmp();
}

/* Waits up to limit_ms until process pid has read the file at path to its end: the offset
   of its descriptor of that file (by device and inode, in /proc/PID/fdinfo) is the file's
   size. What the test writes after this lands behind what the follower has read. */
static void wait_read_to_end(pid_t pid, const char *path, long limit_ms)
{
	struct stat want;

	cr_assert_eq(stat(path, &want), 0);
	for (long t = 0; t <= limit_ms; t += 10) {
		char dir[64], fd_path[384], info[384], text[256];
		DIR *d;
		struct dirent *e;
		long long pos = -1;

		snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
		for (d = opendir(dir); d && (e = readdir(d));) {
			struct stat st;
			FILE *f;

			snprintf(fd_path, sizeof(fd_path), "%s/%s", dir, e->d_name);
			if (e->d_name[0] == '.' || stat(fd_path, &st) || st.st_dev != want.st_dev
			    || st.st_ino != want.st_ino)
				continue;
			snprintf(info, sizeof(info), "/proc/%d/fdinfo/%s", (int)pid, e->d_name);
			if (!(f = fopen(info, "r")))
				continue;
			while (fgets(text, sizeof(text), f))
				if (sscanf(text, "pos: %lld", &pos) == 1)
					break;
			fclose(f);
		}
		if (d)
			closedir(d);
		if (pos == (long long)want.st_size)
			return;
		sleep_ms(10);
	}
	cr_assert_fail("the follower did not read '%s' to its end in %ld ms", path, limit_ms);
}

/* Steps from..to of ranks ranks written to path at once (opened with mode: "w" truncates),
   after the line head if not NULL; rank 0's loss bumped at step bump (0: none). */
static void write_steps(const char *path, const char *mode, const char *head, int from,
                        int to, int ranks, int bump)
{
	FILE *f = fopen(path, mode);
	char line[512];

	cr_assert_not_null(f);
	if (head)
		fputs(head, f);
	for (int s = from; s <= to; s++)
		for (int r = 0; r < ranks; r++) {
			titan_line(line, sizeof(line), s, r, s == bump && r == 0);
			fputs(line, f);
		}
	fclose(f);
}

/* The follower's --idle: 5 s is far longer than the pauses between this test's writes
   (the wait for the follower to read, 100 ms to 200 ms of sleep), so an exit at idle is
   the follower giving up on a file it no longer reads, and far shorter than the 20 s the
   test waits for an exit. */
#define IDLE "--idle 5"

/* What a restarted job writes first: its log differs from the first job's from its first
   byte, as a real one's timestamps make it (a log rewritten with the very bytes read is
   read on as the same file). */
#define BANNER "[titan] 2026-01-05 11:00:00,000 - root - INFO - Starting job\n"

/* What a test does to the log under the follower (pid) once it has read it to its end. */
typedef void (*log_change)(const struct paths *p, pid_t pid, int bump);

/* Steps 1 to steps of ranks ranks logged, followed (extra: the follower's options) until
   the follower has read them, then change(p, pid, bump): the follower's exit code, its
   output in text. */
static int follow_across(const struct paths *p, int ranks, int steps, const char *extra,
                         log_change change, int bump, char *text, size_t n)
{
	pid_t pid;
	int rc;

	write_steps(p->log, "w", NULL, 1, steps, ranks, 0);
	pid = follower(p->db, p->log, p->ref, extra, p->out);
	wait_read_to_end(pid, p->log, 10000);
	change(p, pid, bump);
	rc = wait_exit(pid, 20000);
	slurp(p->out, text, n);
	return rc;
}

/* A job restarted from step 1 with the log truncated (">"), shorter than before: steps 1
   to 3, rank 0's loss bumped at step bump. */
static void restart_short(const struct paths *p, pid_t pid, int bump)
{
	(void)pid;
	write_steps(p->log, "w", NULL, 1, 3, 1, bump);
}

/* The same, longer than before: steps 1 to 10 after its banner. */
static void restart_long(const struct paths *p, pid_t pid, int bump)
{
	(void)pid;
	write_steps(p->log, "w", BANNER, 1, 10, 1, bump);
}

/* The log rotated (moved to live.log.1; the path names no file for 200 ms, then a new
   one), the job going on in the new file with steps 6 to 10 of 2 ranks. */
static void rotate(const struct paths *p, pid_t pid, int bump)
{
	char moved[512];

	(void)pid;
	path_in_tmp(moved, sizeof(moved), "live.log.1");
	cr_assert_eq(rename(p->log, moved), 0);
	sleep_ms(200);
	write_steps(p->log, "w", NULL, 6, 7, 2, 0);
	sleep_ms(100);
	write_steps(p->log, "a", NULL, 8, 10, 2, bump);
}

/* The log rotated as logrotate's create does it: moved to live.log.1 and an empty one made
   at once; the job writes step 6 to the file it has open (the moved one) a while after,
   then reopens its log and goes on with steps 7 to 10 in the new one. */
static void rotate_create(const struct paths *p, pid_t pid, int bump)
{
	char moved[512];

	(void)pid;
	path_in_tmp(moved, sizeof(moved), "live.log.1");
	cr_assert_eq(rename(p->log, moved), 0);
	write_steps(p->log, "w", NULL, 1, 0, 2, 0);  /* no step: an empty file */
	sleep_ms(300);  /* 15 of the follower's polls: it has seen the empty file */
	write_steps(moved, "a", NULL, 6, 6, 2, bump);
	sleep_ms(300);
	write_steps(p->log, "a", NULL, 7, 10, 2, 0);
}

/* restart_long while the follower is stopped: it cannot look at the file in between. */
static void restart_long_stopped(const struct paths *p, pid_t pid, int bump)
{
	cr_assert_eq(kill(pid, SIGSTOP), 0);
	restart_long(p, pid, bump);
	cr_assert_eq(kill(pid, SIGCONT), 0);
}

/* A log truncated under the follower and written again by a job restarted from step 1
   (shorter than what was read): it is read again from its start, every step compared
   again, and step 2's difference is found (exit 1), not passed over as an idle end with
   "equal to the reference". An equal restarted log ends at the end step with every step
   of both files compared and each step stored once: the earlier file's steps from the
   restart on were dropped. */
Test(follow, a_truncated_log_is_read_again_from_its_start)
{
	struct paths p;
	char text[4096];
	int rc, world;

	setup(&p, 1);
	rc = follow_across(&p, 1, 5, IDLE, restart_short, 2, text, sizeof(text));
	cr_assert_eq(rc, 1, "no exit 1 after the truncated log's step 2: %s", text);
	cr_assert(strstr(text, "diverged at step 2 rank 0 metric loss"), "%s", text);
	cr_assert(strstr(text, "/live.log' was truncated"), "%s", text);
	cr_assert(strstr(text, "steps up to 2 stored"), "%s", text);
	/* steps 1 and 2 of the restarted job, each once: the first job's 3 to 5 dropped */
	cr_assert_eq(stored_steps(p.db, 1, &world), 2, "%s", text);
	cr_assert_eq(world, 2, "%s", text);

	rc = follow_across(&p, 1, 5, IDLE " --end-step 10", restart_long, 0, text, sizeof(text));
	cr_assert_eq(rc, 0, "no exit 0 at the restarted log's end step: %s", text);
	/* loss and grad_norm of steps 1 to 5, then of steps 1 to 10 */
	cr_assert(strstr(text, "10 steps up to 10, 1 rank, 30 values equal"), "%s", text);
	cr_assert(strstr(text, "5 steps read again"), "%s", text);
	cr_assert_eq(stored_steps(p.db, 2, &world), 10, "%s", text);
	cr_assert_eq(world, 10, "%s", text);
	rm_tmp();
}

/* A log of two ranks rotated under the follower by change, followed to its end step 10
   twice: with rank 0's loss of step bump changed (exit 1, found there), then equal (exit
   0); all 10 steps stored, of both ranks. said: what the follower must print of the
   rotation, or NULL. */
static void rotated_and_followed(log_change change, int bump, const char *said)
{
	struct paths p;
	char text[4096], where[64];
	int rc, world;

	setup(&p, 2);
	for (int b = bump; b >= 0; b -= bump) {
		rc = follow_across(&p, 2, 5, IDLE " --end-step 10", change, b, text, sizeof(text));
		cr_assert_eq(rc, b ? 1 : 0, "rotated, bump %d: %s", b, text);
		if (said)
			cr_assert(strstr(text, said), "%s", text);
		snprintf(where, sizeof(where), "diverged at step %d rank 0 metric loss", b);
		if (b)
			cr_assert(strstr(text, where), "%s", text);
		else
			cr_assert(strstr(text, "10 steps up to 10, 2 ranks, 40 values equal"), "%s",
			          text);
	}
	cr_assert_eq(stored_steps(p.db, 2, &world), 10, "%s", text);
	cr_assert_eq(world, 20, "%s", text);
	rm_tmp();
}

/* A log rotated under the follower (moved away, and a new one made at its path a while
   later, as logrotate does): the follower reads the new file from its start, as the
   rotated job goes on in it. Step 8 of rank 0 differs there (exit 1); an equal new file
   takes the run to its end step, 10 steps stored. Before, the follower read the moved
   file on and ended at idle, "equal to the reference", after step 5. */
Test(follow, a_rotated_log_is_followed_into_its_new_file)
{
	rotated_and_followed(rotate, 8, "/live.log' is a new file");
}

/* A log truncated and written again past the offset the follower had read to, while the
   follower was stopped (SIGSTOP: it cannot see the file shorter in between): the file is
   no shorter than what was read, but its bytes there differ, and it is read again from
   its start. Before, the follower read on from its old offset, in the middle of a line of
   the new file (the restarted job's banner line moves every line), and never saw step 2
   differ. */
Test(follow, a_log_rewritten_past_the_offset_read_is_read_again_from_its_start)
{
	struct paths p;
	char text[4096];
	int rc;

	setup(&p, 1);
	rc = follow_across(&p, 1, 3, IDLE " --end-step 8", restart_long_stopped, 2, text,
	                   sizeof(text));
	cr_assert_eq(rc, 1, "no exit 1 after the rewritten log's step 2: %s", text);
	cr_assert(strstr(text, "diverged at step 2 rank 0 metric loss"), "%s", text);
	cr_assert(strstr(text, "/live.log' was truncated and written again"), "%s", text);
	rm_tmp();
}

/* A log rotated with an empty new file made at once, the job writing on to the moved one
   before it reopens its log (rotate_create): the moved file's step 6 is read before the
   new file's steps, so all 10 steps are stored, and its difference (bump) is found.
   Before, the follower went over to the empty new file at once, never read step 6, and
   ended "equal to the reference" at the end step, exit 0, with step 6 missing. */
Test(follow, a_rotated_log_is_read_to_its_end_after_the_new_file_appears)
{
	rotated_and_followed(rotate_create, 6, NULL);
}
