/*
 * test_golden_update.c: golden files written whole and safely, and the program run as a
 * user would for 'golden update' and 'run --golden' (golden_fixture.h). A file is written
 * aside and renamed in (harness/base/atomic_file.h): a symlink at the old temporary name
 * or at a temporary's name is never followed, the temporary of a killed writer is removed
 * by the next write, and a failed write leaves no temporary. A bad golden makes 'lockstep
 * run' exit 2 naming file:line; 'golden update' refuses an incomplete run and reads a
 * read-only database without writing beside it.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_bin.h"
#include "golden_fixture.h"
#include "harness/store/golden.h"
#include "harness/store/trace_store.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

/* ---- written whole and safely ---- */

/* How many entries of dir begin with prefix. */
static int entries_with(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d, "cannot list '%s'", dir);
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write '%s'", path);
	fputs(text, f);
	fclose(f);
}

/* A killed writer's temporary (nobody holds it) is removed by the next write; a live
   writer's (held: flock) is left alone; a write that fails removes its own. */
Test(golden, leftovers_of_a_killed_writer_are_removed)
{
	struct fx f;
	lks_stored_run g, back;
	char path[256], dead[300], live[256], folder[160];
	int fd;

	fx_setup(&f);
	write_golden(&f, "a", path, sizeof(path));
	snprintf(folder, sizeof(folder), "%s/cpu/tiny", f.golden);
	snprintf(dead, sizeof(dead), "%s/.a.tsv.tmp-deadbeef", folder);
	snprintf(live, sizeof(live), "%s/.a.tsv.tmp-00c0ffee", folder);
	put_file(dead, "# lockstep golden 1\n# case: cut short by kill -9\n");
	put_file(live, "being written\n");
	cr_assert_geq(fd = open(live, O_RDONLY), 0);
	cr_assert_eq(flock(fd, LOCK_EX), 0);
	write_golden(&f, "a", path, sizeof(path));
	cr_expect_eq(access(dead, F_OK), -1, "the leftover of a killed writer is still there");
	cr_expect_eq(access(live, F_OK), 0, "a live writer's temporary was removed");
	close(fd);
	load_whole(&f, id_of(&f, "a"), &g);
	cr_assert_eq(lks_golden_read(path, &back), 0, "%s", lks_errmsg());
	expect_equal(&g, &back);
	lks_stored_run_release(&back);
	lks_stored_run_release(&g);

	/* the rename fails (a folder holds the name): the temporary goes, nothing else changes */
	snprintf(path, sizeof(path), "%s/bf.tsv", folder);
	cr_assert_eq(mkdir(path, 0777), 0);
	snprintf(dead, sizeof(dead), "%s/keep", path);
	put_file(dead, "x");
	load_whole(&f, id_of(&f, "bf"), &g);
	cr_assert_neq(lks_golden_write(&g, path), 0);
	cr_expect(strstr(lks_errmsg(), "bf.tsv"), "%s", lks_errmsg());
	lks_stored_run_release(&g);
	cr_expect_eq(entries_with(folder, ".bf.tsv"), 0, "a temporary file was left behind");
	cr_expect_eq(entries_with(folder, ".a.tsv"), 1, "only the live writer's temporary stays");
	fx_teardown(&f);
}

/* ---- the program ---- */

/* Runs "cd dir && lockstep ARGS" with stdout and stderr into dir/out; the exit code. */
static int lockstep(const char *dir, const char *fmt, ...)
{
	char args[512], cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "cd '%s' && env -u LKS_GOLDEN_DIR '%s' %s >out 2>&1", dir, LKS_BIN,
	         args);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int out_has(const char *dir, const char *s)
{
	char path[128], buf[65536];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/out", dir);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strstr(buf, s) != NULL;
}

Test(golden, cli_update_run_and_corrupt)
{
	char dir[] = "/tmp/lks-test-golden-cli-XXXXXX", path[160], cmd[256];
	struct text t;
	lks_store *s;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	put_file(path, case_text);
	cr_assert_eq(lockstep(dir, "golden --help"), 0);
	cr_assert(out_has(dir, "golden update"));
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db t.db"), 2);
	cr_assert(out_has(dir, "lockstep run"), "no database: says to run first");
	/* no golden yet: the golden checks fail, naming the command */
	cr_assert_eq(lockstep(dir, "run tiny.ini --db t.db --quiet"), 1);
	cr_assert(out_has(dir, "lockstep golden update tiny.ini --run a"));
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db t.db --run nosuch"), 2);
	cr_assert_eq(lockstep(dir, "golden update nosuch.ini --db t.db"), 2);
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db t.db"), 0);
	cr_assert(out_has(dir, "wrote golden/cpu/tiny/a.tsv"));
	cr_assert(out_has(dir, "wrote golden/cpu/tiny/bf.tsv"));
	/* the set is replaced only once every file is written: bf.tsv cannot be (a link to
	   the full device), so a.tsv, before it in the case, keeps its old bytes */
	snprintf(path, sizeof(path), "%s/golden/cpu/tiny/a.tsv", dir);
	put_file(path, "old\n");
	snprintf(cmd, sizeof(cmd), "cd '%s/golden/cpu/tiny' && mv bf.tsv bf.keep && "
	         "ln -s /dev/full bf.tsv", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db t.db"), 3);
	cr_assert(out_has(dir, "No space left on device"));
	text_read(&t, path);
	cr_assert(t.n == 1 && !strcmp(t.line[0], "old\n"), "a.tsv replaced alone");
	text_free(&t);
	snprintf(cmd, sizeof(cmd), "cd '%s/golden/cpu/tiny' && rm bf.tsv && mv bf.keep bf.tsv",
	         dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db t.db"), 0);
	cr_assert_eq(lockstep(dir, "run tiny.ini --db t.db --quiet"), 0);
	cr_assert(out_has(dir, "2 checks: 2 passed, 0 failed"));
	/* --golden elsewhere: missing there, and the hint names the folder */
	cr_assert_eq(lockstep(dir, "run tiny.ini --db t.db --quiet --golden elsewhere"), 1);
	cr_assert(out_has(dir, "--golden elsewhere"));
	/* a corrupt golden: exit 2 with file:line */
	snprintf(path, sizeof(path), "%s/golden/cpu/tiny/a.tsv", dir);
	text_read(&t, path);
	text_set(&t, 14, 2, "1.5.5");
	text_write(&t, path, t.n, -1);
	text_free(&t);
	cr_assert_eq(lockstep(dir, "run tiny.ini --db t.db --quiet"), 2);
	cr_assert(out_has(dir, "golden/cpu/tiny/a.tsv:15: bad number '1.5.5'"));
	/* a run made with --steps is passed over (its golden check fails on steps, and a.tsv is
	   still corrupt: exit 2); only incomplete ones: refused */
	cr_assert_eq(lockstep(dir, "run tiny.ini --db s.db --quiet --steps 2"), 2);
	cr_assert(out_has(dir, "steps bf=2 golden=3"));
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db s.db"), 2);
	cr_assert(out_has(dir, "made with --steps"));
	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0);
	cr_assert_eq(sqlite3_exec(lks_store_db(s), "UPDATE runs SET status = 'incomplete'", NULL, NULL,
	                          NULL), SQLITE_OK);
	lks_store_close(s);
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db t.db"), 2);
	cr_assert(out_has(dir, "incomplete"));
	cr_assert(out_has(dir, "refusing"));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Only the case's run as its file now declares it gives a golden: a run resumed with
   --resume-from (its golden held steps 3 on only), one with a fault LOCKSTEP_INJECT
   planted, and one made before the case file was edited are passed over (each wrote its
   golden, the edited case's of the old model). A run whose case plants a fault is refused
   before any file is written (the clean run's golden was written first, then exit 3). */
Test(golden, update_passes_over_runs_the_case_does_not_declare, .timeout = 120)
{
	char dir[] = "/tmp/lks-test-golden-pick-XXXXXX", path[160], cmd[256];
	const char *inject = "LOCKSTEP_INJECT='bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out "
	                     "element=1 bit=3'";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	put_file(path, case_text);
	cr_assert_eq(lockstep(dir, "run tiny.ini --db t.db --quiet --run a --keep-state 1"), 1);
	cr_assert_eq(lockstep(dir, "run tiny.ini --db t.db --quiet --run a --resume-from 1@1"), 1);
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db t.db --run a"), 0);
	cr_assert(out_has(dir, "wrote golden/cpu/tiny/a.tsv: run 1 "), "the resumed run was taken");
	snprintf(cmd, sizeof(cmd), "cd '%s' && %s '%s' run tiny.ini --db i.db --quiet --run a "
	         ">out 2>&1", dir, inject, LKS_BIN);
	cr_assert_eq(WEXITSTATUS(system(cmd)), 1);
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db i.db --run a"), 2);
	cr_assert(out_has(dir, "LOCKSTEP_INJECT"));
	/* the case edited: its runs of before are not its runs */
	snprintf(cmd, sizeof(cmd), "sed -i 's/hidden = 16/hidden = 32/' '%s/tiny.ini'", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db t.db --run a"), 2);
	cr_assert(out_has(dir, "before the case file was edited"));
	/* a fault the case plants: refused before the clean run's golden is written */
	snprintf(path, sizeof(path), "%s/f.ini", dir);
	put_file(path, "[case]\nsteps = 2\n[model]\nvocab = 32\nhidden = 16\nffn = 32\n"
	         "layers = 1\nseq = 4\nbatch = 2\n[run clean]\nrecipe = bf16\n"
	         "[run flipped]\nrecipe = bf16\ninject = bitflip step=1 rank=0 "
	         "tensor=blocks.0.mlp.up.out element=1 bit=3\n");
	cr_assert_leq(lockstep(dir, "run f.ini --db f.db --quiet"), 1);
	cr_assert_eq(lockstep(dir, "golden update f.ini --db f.db --golden g2"), 2);
	cr_assert(out_has(dir, "planted fault"));
	snprintf(path, sizeof(path), "%s/g2", dir);
	cr_assert_neq(access(path, F_OK), 0, "a golden was written before the refusal");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* A symlink committed at the name of the old temporary file (golden/.../a.tsv.tmp) or at
   one of the new names: 'golden update' must follow neither, and must not write through
   either into the file the link points to. */
/* An imported log's steps are its last step's number (steps 0 to 2: 2), not a count: the
   line golden update prints says "steps up to 2" (it said "2 steps" of a file of three). */
Test(golden, update_of_an_import_says_its_steps_as_up_to)
{
	char dir[] = "/tmp/lks-test-golden-imp-XXXXXX", path[160], cmd[256];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/three.jsonl", dir);
	put_file(path, "{\"step\":0,\"loss\":1}\n{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":3}\n");
	snprintf(path, sizeof(path), "%s/three.ini", dir);
	put_file(path, "[case]\n[run a]\nimport = jsonl:three.jsonl\n");
	cr_assert_eq(lockstep(dir, "run three.ini --db t.db --quiet"), 0);
	cr_assert_eq(lockstep(dir, "golden update three.ini --db t.db"), 0);
	cr_assert(out_has(dir, "wrote golden/import/three/a.tsv: run 1 of 't.db', steps up to 2 x 1 "
	                       "rank, 1 metrics, 3 metric rows"));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(golden, update_never_follows_a_symlink)
{
	char dir[] = "/tmp/lks-test-golden-link-XXXXXX", path[300], cmd[512];
	struct stat st;
	lks_stored_run g;
	struct text t;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	put_file(path, case_text);
	cr_assert_eq(lockstep(dir, "run tiny.ini --db t.db --quiet"), 1);
	snprintf(path, sizeof(path), "%s/victim", dir);
	put_file(path, "precious\n");
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/golden/cpu/tiny' && cd '%s/golden/cpu/tiny' && "
	         "ln -s ../../../victim a.tsv.tmp && ln -s ../../../victim .a.tsv.tmp-0123abcd",
	         dir, dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(lockstep(dir, "golden update tiny.ini --db t.db --run a"), 0);
	text_read(&t, path);
	cr_expect_eq(t.n, 1, "the file behind the link was written: %d lines", t.n);
	cr_expect_str_eq(t.line[0], "precious\n", "the file behind the link was written");
	text_free(&t);
	snprintf(path, sizeof(path), "%s/golden/cpu/tiny/a.tsv", dir);
	cr_assert_eq(lstat(path, &st), 0);
	cr_expect(S_ISREG(st.st_mode), "a.tsv is not a regular file");
	cr_expect_eq(lks_golden_read(path, &g), 0, "%s", lks_errmsg());
	lks_stored_run_release(&g);
	/* the link at a temporary's name was a leftover: removed, not followed */
	snprintf(path, sizeof(path), "%s/golden/cpu/tiny/.a.tsv.tmp-0123abcd", dir);
	cr_expect_neq(lstat(path, &st), 0, "the link at a temporary's name is still there");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* 'golden update' reads the database read-only: on read-only media (a folder and file made
   read-only, and for root a run as nobody) it writes the golden, and nothing in the
   database's folder changes or appears; an empty file is not a database and stays empty. */
Test(golden, update_reads_a_read_only_database)
{
	char dir[] = "/tmp/lks-test-golden-ro-XXXXXX", gold[] = "/tmp/lks-test-golden-out-XXXXXX";
	char path[300], args[512], out[4096], *before, *after;
	const char *who;
	lks_stored_run g;

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_not_null(mkdtemp(gold));
	cr_assert_eq(chmod(gold, 0777), 0);
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	put_file(path, case_text);
	cr_assert_eq(lockstep(dir, "run tiny.ini --db t.db --quiet"), 1);
	snprintf(path, sizeof(path), "%s/empty.db", dir);
	put_file(path, "");
	before = lks_dir_state(dir);
	who = lks_read_only(dir);
	snprintf(args, sizeof(args), "golden update '%s/tiny.ini' --db '%s/t.db' --golden '%s'",
	         dir, dir, gold);
	cr_expect_eq(lks_run_bin(who, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "golden update '%s/tiny.ini' --db '%s' --golden '%s'", dir,
	         path, gold);
	cr_expect_eq(lks_run_bin(who, args, out, sizeof(out)), 2, "%s", out);
	cr_expect_not_null(strstr(out, "not a lockstep database (an empty file)"), "%s", out);
	snprintf(args, sizeof(args), "chmod -R u+w '%s'", dir);
	cr_assert_eq(system(args), 0);
	after = lks_dir_state(dir);
	cr_expect_str_eq(after, before, "the database's folder changed");
	snprintf(path, sizeof(path), "%s/cpu/tiny/a.tsv", gold);
	cr_expect_eq(lks_golden_read(path, &g), 0, "%s", lks_errmsg());
	lks_stored_run_release(&g);
	free(before);
	free(after);
	snprintf(args, sizeof(args), "rm -rf '%s' '%s'", dir, gold);
	cr_assert_eq(system(args), 0);
}
