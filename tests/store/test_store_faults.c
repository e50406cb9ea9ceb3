/*
 * test_store_faults.c: the trace store where the machine is against it. A full file
 * system and read-only media (a tmpfs mounted for the test: root, skipped where mount is
 * refused) are named as such, not as "disk I/O error" or "unable to open"; a database an
 * open made and could not give a schema is not left behind as an empty file; a -wal and
 * -shm that this user cannot write (another user's read left them) are named with their
 * owner before any write fails as "attempt to write a readonly database".
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>

#include "store_fixture.h"

static char mnt[sizeof(tmpdir) + 8];

/* A tmpfs of size bytes at tmpdir/m; skips the test where it cannot be had. */
static void mount_tmpfs(const char *size)
{
	char opts[64];

	snprintf(mnt, sizeof(mnt), "%s/m", tmpdir);
	cr_assert_eq(mkdir(mnt, 0777), 0);
	snprintf(opts, sizeof(opts), "size=%s", size);
	if (mount("tmpfs", mnt, "tmpfs", 0, opts) != 0) {
		mnt[0] = 0;
		rm_tmp();
		cr_skip_test("cannot mount a tmpfs here: %s", strerror(errno));
	}
}

static void unmount_tmpfs(void)
{
	if (mnt[0])
		cr_assert_eq(umount2(mnt, MNT_DETACH), 0, "%s", strerror(errno));
	mnt[0] = 0;
}

/* Fills the file system of mnt to its last byte. */
static void fill(void)
{
	char path[sizeof(mnt) + 16], block[4096] = { 0 };
	int fd;

	snprintf(path, sizeof(path), "%s/filler", mnt);
	cr_assert_geq(fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), 0);
	while (write(fd, block, sizeof(block)) > 0)
		;
	for (size_t n = sizeof(block) / 2; n; n /= 2)  /* the last part block */
		while (write(fd, block, n) > 0)
			;
	cr_assert_eq(errno, ENOSPC);
	close(fd);
}

Test(trace_store, a_full_disk_is_named_and_a_new_file_not_left)
{
	char path[sizeof(mnt) + 16], fresh[sizeof(mnt) + 16];
	lks_store *s = NULL;

	mkdir_tmp();
	mount_tmpfs("1m");
	snprintf(path, sizeof(path), "%s/p.db", mnt);
	snprintf(fresh, sizeof(fresh), "%s/new.db", mnt);
	make_db(path);
	fill();
	/* a writer and a reader of the database there: the file system is full, not failing */
	cr_assert_neq(lks_store_open(path, &s), 0);
	cr_assert(strstr(lks_errmsg(), "no space left") && strstr(lks_errmsg(), path), "%s",
	          lks_errmsg());
	cr_assert_neq(lks_store_open_readonly(path, &s), 0);
	cr_assert(strstr(lks_errmsg(), "no space left"), "%s", lks_errmsg());
	/* a database the open made and could not fill is gone, its journal too */
	cr_assert_neq(lks_store_open(fresh, &s), 0);
	cr_assert(strstr(lks_errmsg(), "full") || strstr(lks_errmsg(), "no space left"), "%s",
	          lks_errmsg());
	cr_assert_not(exists(fresh), "an empty database left behind");
	cr_assert_eq(access(fresh, F_OK), -1);
	strcat(fresh, "-journal");
	cr_assert_not(exists(fresh));
	unmount_tmpfs();
	rm_tmp();
}

Test(trace_store, a_read_only_file_system_is_named)
{
	char path[sizeof(mnt) + 16];
	lks_store *s = NULL;

	mkdir_tmp();
	mount_tmpfs("1m");
	snprintf(path, sizeof(path), "%s/a.db", mnt);
	make_db(path);
	cr_assert_eq(mount("tmpfs", mnt, "tmpfs", MS_REMOUNT | MS_RDONLY, NULL), 0, "%s",
	             strerror(errno));
	cr_assert_neq(lks_store_open(path, &s), 0);
	cr_assert(strstr(lks_errmsg(), "read-only") && strstr(lks_errmsg(), path), "%s",
	          lks_errmsg());
	/* readers go on */
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 1);
	lks_store_close(s);
	unmount_tmpfs();
	rm_tmp();
}

/* The -wal and -shm of a read by another user: root's here, opened by nobody (for a user
   other than root, whom modes stop, they are made read-only instead). */
Test(trace_store, side_files_of_another_user_are_named_with_their_owner)
{
	char path[512], side[600], msg[2048] = "";
	int fds[2], st;
	pid_t pid;
	ssize_t n;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "h.db");
	make_db(path);
	cr_assert_eq(chmod(tmpdir, 0777), 0);
	cr_assert_eq(chmod(path, 0666), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(side, sizeof(side), "%s%s", path, i ? "-shm" : "-wal");
		cr_assert_geq(st = open(side, O_WRONLY | O_CREAT | O_EXCL, 0444), 0);
		close(st);
	}
	cr_assert_eq(pipe(fds), 0);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		lks_store *s;

		close(fds[0]);
		if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(102);
		if (lks_store_open(path, &s) == 0)
			_exit(100);
		if (write(fds[1], lks_errmsg(), strlen(lks_errmsg())) < 0)
			_exit(103);
		_exit(101);
	}
	close(fds[1]);
	n = read(fds[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = 0;
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 102, "could not become nobody");
	cr_assert_eq(WEXITSTATUS(st), 101, "the writer opened it: %s", msg);
	snprintf(side, sizeof(side), "'%s-wal' belongs to user", path);
	cr_assert(strstr(msg, side) && strstr(msg, "remove"), "%s", msg);
	rm_tmp();
}
