/*
 * test_report_swap.c: the report is swapped in whole. Killed with SIGKILL at 20 random
 * moments, 'lockstep report' leaves the previous report whole every time and the next
 * report removes what the killed ones left (a temporary still locked when it starts, by a
 * killed writer's child not yet gone, at its end); a folder holding more than a report is not
 * replaced, nor one that only looks like one (a user's SVG beside a report's plots); on read-only media the report is written from the database and nothing in its
 * folder changes; where renameat2 cannot exchange (a preloaded library, LKS_NOEXCHANGE_LIB,
 * makes it fail) the swap takes two renames, and a report left aside between them is put
 * back by the next report. The cases and their folder: report_fixture.h.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report_fixture.h"
#include "harness/base/atomic_file.h"
#include "kernels/err.h"
#include "run_bin.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Starts 'lockstep report' of dir/t.db into dir/r, with TMPDIR dir/tmp; its pid. */
static pid_t start_report(const char *dir)
{
	char db[300], out[300], tmp[300];
	pid_t pid;

	snprintf(db, sizeof(db), "%s/t.db", dir);
	snprintf(out, sizeof(out), "%s/r", dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		setenv("TMPDIR", tmp, 1);
		execl(LKS_BIN, LKS_BIN, "report", "--db", db, "-o", out, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* How many entries of dir begin with prefix; the name of the last one into last. */
static int entries_with(const char *dir, const char *prefix, char *last, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d, "cannot list '%s'", dir);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)) && strcmp(e->d_name, ".")
		    && strcmp(e->d_name, "..")) {
			n++;
			if (last)
				snprintf(last, size, "%s", e->d_name);
		}
	closedir(d);
	return n;
}

/* dir/r is the report whose page and Markdown are html0 and md0, whole: both files as they
   were, and every plot report.md shows there. */
static void expect_previous_report(const char *dir, const char *html0, const char *md0, int kill)
{
	char path[300], svg[200];
	char *html, *md;
	size_t n;

	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html = slurp(path);
	n = strlen(html);
	cr_expect(!strcmp(html, html0), "kill %d: index.html is not the previous page (%zu bytes, "
	          "ends '%s')", kill, n, html + (n > 20 ? n - 20 : 0));
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md = slurp(path);
	cr_expect(!strcmp(md, md0), "kill %d: report.md is not the previous one", kill);
	for (const char *p = md; (p = strstr(p, "](")); p++)
		if (sscanf(p, "](%199[^)])", svg) == 1) {
			snprintf(path, sizeof(path), "%s/r/%s", dir, svg);
			cr_expect_gt(file_size(path), 0, "kill %d: report.md shows '%s', which is missing",
			             kill, svg);
		}
	free(html);
	free(md);
}

/* 'lockstep report' killed (SIGKILL) at 20 random moments while it replaces a report: the
   previous report stays whole every time, and the next report removes what the killed
   ones left (beside the report, and nothing in TMPDIR). About 20 report runs: 10-30 s with
   gnuplot (each run draws nine plots), under a second without. */
Test(report, kill9_leaves_the_previous_report_whole, .timeout = 300)
{
	char dir[64], path[300], left[256], before[256] = "", *html0, *md0;
	double t0, full;
	int st, mid = 0, finished = 0;
	pid_t pid;

	setup(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/tmp", dir);
	cr_assert_eq(mkdir(path, 0777), 0);
	/* the previous report, and how long writing one takes */
	t0 = now();
	pid = start_report(dir);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	full = now() - t0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the first report failed");
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html0 = slurp(path);
	cr_assert(strlen(html0) > 7 && !strcmp(html0 + strlen(html0) - 8, "</html>\n"));
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md0 = slurp(path);

	srand(11);
	for (int i = 0; i < 20; i++) {
		pid = start_report(dir);
		/* anywhere from the start to the time a whole report took */
		usleep((useconds_t)(full * 1e6 * rand() / RAND_MAX));
		kill(pid, SIGKILL);
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		finished += WIFEXITED(st);
		/* a folder it was writing, not one an earlier kill left */
		if (entries_with(dir, ".r.new-", left, sizeof(left)) && strcmp(left, before))
			mid++;
		snprintf(before, sizeof(before), "%s", left);
		expect_previous_report(dir, html0, md0, i);
	}
	cr_log_info("20 kills of 'lockstep report' (%.2f s each): %d while it wrote its folder, "
	            "%d after it had finished", full, mid, finished);
	/* the moments were spread over the writing: some kills must have landed in it */
	cr_expect_gt(mid, 0, "no kill landed while a report was being written");

	pid = start_report(dir);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the report after the kills failed");
	expect_previous_report(dir, html0, md0, 20);
	cr_expect_eq(entries_with(dir, ".r.", NULL, 0), 0, "the killed reports' folders are still there");
	snprintf(path, sizeof(path), "%s/tmp", dir);
	cr_expect_eq(entries_with(path, "", NULL, 0), 0, "the killed reports left files in TMPDIR");
	free(html0);
	free(md0);
	teardown(dir);
}

/* A killed writer's temporary can still be locked when the next writer starts (a child it
   forked holds the lock a moment longer): the start's sweep must leave it, and the end's
   removes it, so that one whole write after a kill leaves nothing behind. Here a process
   of its own holds the lock over the start and is gone before the commit. */
Test(report, a_temporary_locked_at_the_start_is_removed_at_the_end)
{
	char dir[] = "/tmp/lks_test_sweep_XXXXXX", out[300], left[300], file[1200];
	int locked[2], done[2], st;
	lks_atomic a;
	pid_t pid;
	char c = 0;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/r", dir);
	snprintf(left, sizeof(left), "%s/.r.new-0badf00d", dir);
	cr_assert_eq(mkdir(left, 0777), 0);
	cr_assert_eq(pipe(locked), 0);
	cr_assert_eq(pipe(done), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {  /* the lingering holder: locks it, says so, waits to be let go */
		int fd = open(left, O_RDONLY | O_DIRECTORY);

		close(done[1]);
		if (fd < 0 || flock(fd, LOCK_EX) || write(locked[1], &c, 1) != 1)
			_exit(10);
		(void)!read(done[0], &c, 1);  /* returns when the parent closes its end */
		_exit(0);
	}
	close(locked[1]);
	close(done[0]);
	cr_assert_eq(read(locked[0], &c, 1), 1, "the holder did not lock");
	cr_assert_eq(lks_atomic_dir_open(&a, out), 0, "%s", lks_errmsg());
	cr_assert_eq(access(left, F_OK), 0, "the start's sweep removed a locked temporary");
	snprintf(file, sizeof(file), "%s/index.html", a.tmp);
	cr_assert_not_null(f = fopen(file, "w"));
	fputs("<html></html>\n", f);
	cr_assert_eq(fclose(f), 0);
	close(done[1]);  /* the holder goes */
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the holder failed");
	cr_assert_eq(lks_atomic_dir_commit(&a), 0, "%s", lks_errmsg());
	cr_assert_neq(access(left, F_OK), 0, "the temporary whose holder is gone was left");
	snprintf(file, sizeof(file), "%s/index.html", out);
	cr_assert_eq(access(file, F_OK), 0, "the folder was not put in place");
	cr_assert_eq(entries_with(dir, ".r.", NULL, 0), 0);
	close(locked[0]);
	lks_atomic_remove(dir);
}

/* A report replaces its folder whole, so only a folder that holds nothing but a report (or
   nothing) is replaced; a symlink to one leads there and stays a symlink. */
Test(report, replaces_only_a_report_folder)
{
	char dir[64], path[300];
	struct stat st;

	setup(dir, sizeof(dir));
	cr_assert_eq(sh("mkdir '%s/own' && echo keep > '%s/own/notes.txt'", dir, dir), 0);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/own' 2>/dev/null",
	                LKS_BIN, dir, dir), 2, "a folder holding a file no report writes");
	snprintf(path, sizeof(path), "%s/own/notes.txt", dir);
	cr_expect_eq(file_size(path), 5, "the folder's file was touched");
	snprintf(path, sizeof(path), "%s/own/index.html", dir);
	cr_expect_eq(file_size(path), -1);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/tiny.ini' 2>/dev/null",
	                LKS_BIN, dir, dir), 2, "a file");
	cr_expect_eq(sh("ls -a '%s' | grep -q '^\\.own\\.\\|^\\.tiny'", dir), 1, "a folder left behind");

	cr_assert_eq(sh("mkdir '%s/real' && ln -s real '%s/link'", dir, dir), 0);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/link' >/dev/null",
	                LKS_BIN, dir, dir), 0, "an empty folder through a symlink");
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/link' >/dev/null",
	                LKS_BIN, dir, dir), 0, "a report folder through a symlink");
	snprintf(path, sizeof(path), "%s/link", dir);
	cr_expect(lstat(path, &st) == 0 && S_ISLNK(st.st_mode), "the symlink was replaced");
	snprintf(path, sizeof(path), "%s/real/index.html", dir);
	cr_expect_gt(file_size(path), 0, "no report where the symlink leads");
	teardown(dir);
}

/* A write that fails says why and names the file where it was to go, not the hidden
   folder the report is written in (a tmpfs filled to its last byte: root; skipped where
   mount is refused). */
Test(report, a_full_disk_is_named_with_the_report_path)
{
	char dir[64], path[300], *out;

	setup(dir, sizeof(dir));
	if (sh("mkdir '%s/full' && mount -t tmpfs -o size=256k tmpfs '%s/full' 2>/dev/null", dir,
	       dir) != 0) {
		teardown(dir);
		cr_skip_test("cannot mount a tmpfs here");
	}
	sh("dd if=/dev/zero of='%s/full/filler' bs=1k count=1024 2>/dev/null", dir);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/full/rep' > "
	                "'%s/out' 2>&1", LKS_BIN, dir, dir, dir), 3);
	snprintf(path, sizeof(path), "%s/out", dir);
	out = slurp(path);
	snprintf(path, sizeof(path), "'%s/full/rep/", dir);
	cr_expect(strstr(out, "No space left on device") && strstr(out, path), "%s", out);
	cr_expect_null(strstr(out, ".rep.new-"), "%s", out);
	free(out);
	cr_assert_eq(sh("umount '%s/full'", dir), 0);
	teardown(dir);
}

/* A folder is a report's only by its pages and the plots its report.md shows: a user's SVG
   among them, or an index.html and report.md that lockstep did not write, are refused
   (exit 2) and kept. */
Test(report, refuses_a_folder_that_only_looks_like_a_report)
{
	char dir[64], path[300];

	setup(dir, sizeof(dir));
	cr_assert_eq(sh("mkdir '%s/figs' && echo '<svg/>' > '%s/figs/architecture.svg'", dir, dir), 0);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/figs' 2>/dev/null",
	                LKS_BIN, dir, dir), 2, "a folder of SVG files alone");
	snprintf(path, sizeof(path), "%s/figs/architecture.svg", dir);
	cr_expect_eq(file_size(path), 7, "the user's SVG was lost");

	cr_assert_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/r' >/dev/null", LKS_BIN,
	                dir, dir), 0);
	cr_assert_eq(sh("cp '%s/figs/architecture.svg' '%s/r/'", dir, dir), 0);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/r' 2>/dev/null",
	                LKS_BIN, dir, dir), 2, "an SVG its report.md does not show");
	snprintf(path, sizeof(path), "%s/r/architecture.svg", dir);
	cr_expect_eq(file_size(path), 7, "the user's SVG in a report folder was lost");

	cr_assert_eq(sh("mkdir '%s/site' && echo '<p>' > '%s/site/index.html' && "
	                "echo '# notes' > '%s/site/report.md'", dir, dir, dir), 0);
	cr_expect_eq(sh("PATH=/nonexistent '%s' report --db '%s/t.db' -o '%s/site' 2>/dev/null",
	                LKS_BIN, dir, dir), 2, "pages lockstep did not write");
	snprintf(path, sizeof(path), "%s/site/report.md", dir);
	cr_expect_eq(file_size(path), 8, "the user's report.md was lost");
	teardown(dir);
}

/* On read-only media (here: a folder and file made read-only, and for root a run as
   nobody) the report is written from the database, and nothing in its folder changes or
   appears. */
Test(report, reads_a_read_only_database)
{
	char dir[64], out[] = "/tmp/lks-test-report-out-XXXXXX", args[512], text[4096];
	char *before, *after;
	const char *who;

	setup(dir, sizeof(dir));
	cr_assert_not_null(mkdtemp(out));
	cr_assert_eq(chmod(out, 0777), 0);
	before = lks_dir_state(dir);
	who = lks_read_only(dir);
	snprintf(args, sizeof(args), "report --db '%s/t.db' -o '%s/r'", dir, out);
	cr_expect_eq(lks_run_bin(who, args, text, sizeof(text)), 0, "%s", text);
	cr_expect_not_null(strstr(text, "suite 1: 2 cases, 2 checks, 1 failed"), "%s", text);
	sh("chmod -R u+w '%s'", dir);
	after = lks_dir_state(dir);
	cr_expect_str_eq(after, before, "the database's folder changed");
	free(before);
	free(after);
	teardown(out);
	teardown(dir);
}

/* Where the file system cannot exchange two names (renameat2 made to fail by a preloaded
   library), the old report is renamed aside and the new one into place. A writer that died
   between those two renames left the old report aside and none in place: the next report
   puts it back first, so that it is there even when that report fails. */
Test(report, swaps_without_rename_exchange)
{
	char dir[64], path[300], args[512], out[4096], *html0, *html;

	setup(dir, sizeof(dir));
	cr_assert_eq(sh("'%s' report --db '%s/t.db' -o '%s/r' >/dev/null", LKS_BIN, dir, dir), 0);
	/* tables only this time: a page that differs from the one it replaces */
	snprintf(args, sizeof(args), "report --db '%s/t.db' -o '%s/r'", dir, dir);
	snprintf(path, sizeof(path), "PATH=/nonexistent LD_PRELOAD='%s'", LKS_NOEXCHANGE_LIB);
	cr_assert_eq(lks_run_bin(path, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "noexchange: renameat2 refused"), "the other way was not "
	                   "taken: %s", out);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html0 = slurp(path);
	cr_expect_not_null(strstr(html0, "plots need gnuplot"), "the report was not replaced");
	cr_expect_eq(sh("ls -a '%s' | grep -q '^\\.r\\.'", dir), 1, "a folder left beside it");
	cr_expect_eq(sh("ls '%s/r' | grep -q svg", dir), 1, "the old report's plots are still in it");

	/* killed between the renames; then a report that fails (no templates) */
	cr_assert_eq(sh("mv '%s/r' '%s/.r.old-0123abcd'", dir, dir), 0);
	cr_expect_eq(sh("'%s' report --db '%s/t.db' -o '%s/r' --templates '%s/none' 2>/dev/null",
	                LKS_BIN, dir, dir, dir), 3);
	html = slurp(path);
	cr_expect_str_eq(html, html0, "the report aside was not put back");
	cr_expect_eq(sh("ls -a '%s' | grep -q '^\\.r\\.'", dir), 1, "a folder left beside it");
	free(html0);
	free(html);
	teardown(dir);
}
