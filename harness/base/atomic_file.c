/*
 * atomic_file.c: files and folders written aside and put in place whole (atomic_file.h).
 *
 * Leftovers: a temporary is named .NAME.tmp-XXXXXXXX (a file) or .NAME.new-XXXXXXXX (a
 * folder), and .NAME.old-XXXXXXXX is an old folder renamed aside where the file system
 * cannot exchange two names. Its writer holds an flock on it as long as it lives, and the
 * kernel drops that lock when the writer dies, however it dies. So a temporary that can be
 * locked belongs to nobody: opening a new temporary for the same path removes those (an
 * old folder nobody holds goes back into place if the path is missing: its writer died
 * between the two renames). A writer that finds its own temporary removed by such a sweep
 * (in the instant between creating and locking it) makes another.
 */
#include "harness/base/atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernels/err.h"

/* renameat2's flag (linux/fs.h), spelt here so that no kernel header is needed */
#define LKS_RENAME_EXCHANGE (1 << 1)

/* Names tried before giving up: each is random, so a clash means something is wrong. */
#define LKS_ATOMIC_TRIES 100

/* A folder and the last part of path, trailing slashes dropped: "a/b/" -> "a", "b". */
static int lks_atomic_split(const char *path, char *dir, size_t dsize, char *base, size_t bsize)
{
	size_t n = strlen(path), cut;

	while (n > 1 && path[n - 1] == '/')
		n--;
	for (cut = n; cut > 0 && path[cut - 1] != '/'; cut--)
		;
	if (n == cut || n - cut >= bsize || cut >= dsize)
		return lks_err("cannot write '%s' whole: it names no file or folder", path);
	snprintf(base, bsize, "%.*s", (int)(n - cut), path + cut);
	if (!strcmp(base, ".") || !strcmp(base, ".."))
		return lks_err("cannot write '%s' whole: it names no file or folder", path);
	if (cut <= 1)
		snprintf(dir, dsize, "%s", cut ? "/" : ".");
	else
		snprintf(dir, dsize, "%.*s", (int)(cut - 1), path);
	return 0;
}

/* dir/.base.kind-XXXXXXXX with eight hex digits that differ per call, process and time. */
static int lks_atomic_name(char *buf, size_t size, const char *dir, const char *base,
                           const char *kind)
{
	static _Atomic uint64_t counter;
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40)
	    ^ (counter++ * 0x9e3779b97f4a7c15u);
	/* splitmix64's finalizer: the eight digits depend on every bit above */
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
	x ^= x >> 31;
	if ((size_t)snprintf(buf, size, "%s/.%s.%s-%08x", dir, base, kind, (unsigned)x) >= size)
		return lks_err("path too long: '%s/%s'", dir, base);
	return 0;
}

/* Removes name in dirfd and, for a folder, everything in it; symlinks are removed, never
   followed. Errors are ignored: what is left is found again by the next sweep. */
static void lks_atomic_rm(int dirfd, const char *name, int depth)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *e;

	if (fd < 0) {
		unlinkat(dirfd, name, 0);
		return;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && depth < 16)
			lks_atomic_rm(fd, e->d_name, depth + 1);
	closedir(d);
	unlinkat(dirfd, name, AT_REMOVEDIR);
}

void lks_atomic_remove(const char *path)
{
	lks_atomic_rm(AT_FDCWD, path, 0);
}

/* 0 when name is a temporary of base of this kind: .base.kind-XXXXXXXX */
static int lks_atomic_ours(const char *name, const char *base, const char *kind)
{
	size_t nb = strlen(base), nk = strlen(kind);

	if (name[0] != '.' || strncmp(name + 1, base, nb) || name[1 + nb] != '.'
	    || strncmp(name + 2 + nb, kind, nk) || name[2 + nb + nk] != '-')
		return -1;
	name += 3 + nb + nk;
	return strlen(name) == 8 && strspn(name, "0123456789abcdef") == 8 ? 0 : -1;
}

/* Removes the temporaries of dir/base of these kinds that no live writer holds; an old
   folder goes back into place instead where the path is missing. */
static void lks_atomic_sweep(const char *dir, const char *base, const char *const *kinds)
{
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	struct stat st;

	if (dirfd < 0 || !(d = fdopendir(dirfd))) {
		if (dirfd >= 0)
			close(dirfd);
		return;
	}
	while ((e = readdir(d))) {
		int k, fd;

		for (k = 0; kinds[k] && lks_atomic_ours(e->d_name, base, kinds[k]); k++)
			;
		if (!kinds[k])
			continue;
		/* O_NONBLOCK: a FIFO planted at such a name must not hang the sweep. A symlink
		   there (ELOOP) is removed, not followed; what cannot be opened to try its lock
		   (another user's) is left alone. */
		fd = openat(dirfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno != ELOOP)
			continue;
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
			close(fd);  /* a live writer's */
			continue;
		}
		if (fd >= 0 && !strcmp(kinds[k], "old") && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)
		    && fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT
		    && renameat(dirfd, e->d_name, dirfd, base) == 0) {
			close(fd);
			continue;
		}
		lks_atomic_rm(dirfd, e->d_name, 0);
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
}

/* Flushes the folder's entries (a rename in it) to disk. A file system that cannot sync a
   folder (EINVAL) leaves the rename as durable as that file system makes any. */
static void lks_atomic_sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Takes the writer's lock on fd, a temporary just made; 1 when a sweep removed it before
   the lock was taken (make another), 0 when held. */
static int lks_atomic_lock(int fd)
{
	struct stat st;

	while (flock(fd, LOCK_EX) != 0)
		if (errno != EINTR)
			return 0;  /* no flock here (some network file systems): no sweep either */
	return fstat(fd, &st) == 0 && st.st_nlink == 0;
}

/* The temporary of path, created and locked: a file, open for writing, or a folder, open
   to hold its lock; its descriptor, or -1. */
static const char *const lks_file_kinds[] = { "tmp", NULL };
static const char *const lks_folder_kinds[] = { "new", "old", NULL };

static int lks_atomic_create(lks_atomic *a, const char *path, int folder)
{
	char dir[1024], base[256];
	int fd = -1;

	memset(a, 0, sizeof(*a));
	a->lock_fd = -1;
	if ((size_t)snprintf(a->path, sizeof(a->path), "%s", path) >= sizeof(a->path))
		return lks_err("path too long: '%s'", path);
	if (lks_atomic_split(path, dir, sizeof(dir), base, sizeof(base)))
		return -1;
	lks_atomic_sweep(dir, base, folder ? lks_folder_kinds : lks_file_kinds);
	for (int i = 0; fd < 0 && i < LKS_ATOMIC_TRIES; i++) {
		if (lks_atomic_name(a->tmp, sizeof(a->tmp), dir, base, folder ? "new" : "tmp"))
			return -1;
		if (!folder) {
			fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		} else if (mkdir(a->tmp, 0777) == 0
		           && (fd = open(a->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			int e = errno;

			/* ENOENT: another writer's sweep removed the folder, not yet locked: make
			   another */
			if (e == ENOENT)
				continue;
			rmdir(a->tmp);
			errno = e;
		}
		if (fd < 0 && errno != EEXIST)
			break;
		if (fd >= 0 && lks_atomic_lock(fd)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		lks_err("cannot create '%s' to write '%s': %s", a->tmp, path, strerror(errno));
		a->tmp[0] = 0;
	}
	return fd;
}

int lks_atomic_open(lks_atomic *a, const char *path)
{
	struct stat st;
	int fd;

	/* a symlink (/dev/stdout), a pipe or a device: renamed over, it would be replaced, not
	   written (and /dev/stdout gone for everyone): written through instead */
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		memset(a, 0, sizeof(*a));
		a->lock_fd = -1;
		snprintf(a->path, sizeof(a->path), "%s", path);
		if (!(a->f = fopen(path, "w")))
			return lks_err("cannot write '%s': %s", path, strerror(errno));
		a->through = 1;
		return 0;
	}
	if ((fd = lks_atomic_create(a, path, 0)) < 0)
		return -1;
	if (!(a->f = fdopen(fd, "w"))) {
		close(fd);
		lks_atomic_abort(a);
		return lks_err("cannot write '%s': out of memory", path);
	}
	return 0;
}

int lks_atomic_commit(lks_atomic *a)
{
	char dir[1024], base[256];
	int bad, e;

	bad = fflush(a->f) != 0 || ferror(a->f);
	e = errno;
	if (a->through) {
		bad = fclose(a->f) != 0 || bad;
		a->f = NULL;
		return bad ? lks_err("cannot write '%s': %s", a->path, strerror(e)) : 0;
	}
	if (!bad && fsync(fileno(a->f)) != 0)
		bad = 1, e = errno;
	if (bad) {
		lks_atomic_abort(a);
		return lks_err("cannot write '%s': %s", a->path, strerror(e));
	}
	if (rename(a->tmp, a->path) != 0) {
		e = errno;
		lks_atomic_abort(a);
		return lks_err("cannot rename a temporary file to '%s': %s", a->path, strerror(e));
	}
	/* the lock goes with the close, once the temporary's name is gone */
	bad = fclose(a->f) != 0;
	a->f = NULL;
	a->tmp[0] = 0;
	if (!lks_atomic_split(a->path, dir, sizeof(dir), base, sizeof(base)))
		lks_atomic_sync_dir(dir);
	return bad ? lks_err("cannot write '%s'", a->path) : 0;
}

void lks_atomic_abort(lks_atomic *a)
{
	if (a->tmp[0])
		unlink(a->tmp);
	if (a->f)
		fclose(a->f);
	a->f = NULL;
	a->tmp[0] = 0;
}

/* ---- folders ---- */

int lks_atomic_dir_open(lks_atomic *a, const char *path)
{
	return (a->lock_fd = lks_atomic_create(a, path, 1)) < 0 ? -1 : 0;
}

/* fsync of every file in the folder, then of the folder. */
static int lks_atomic_sync_tree(const char *path)
{
	int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
	DIR *d;
	struct dirent *e;

	if (dirfd < 0 || !(d = fdopendir(dirfd))) {
		if (dirfd >= 0)
			close(dirfd);
		return lks_err("cannot read the folder '%s': %s", path, strerror(errno));
	}
	while (rc == 0 && (e = readdir(d))) {
		int fd = openat(dirfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;

		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fsync(fd) != 0)
			rc = lks_err("cannot write '%s/%s': %s", path, e->d_name, strerror(errno));
		close(fd);
	}
	if (rc == 0 && fsync(dirfd) != 0 && errno != EINVAL)
		rc = lks_err("cannot write the folder '%s': %s", path, strerror(errno));
	closedir(d);
	return rc;
}

/* Swaps the names of a and b in one step; -1 with errno EINVAL or ENOSYS where the
   kernel or the file system cannot. */
static int lks_atomic_exchange(const char *a, const char *b)
{
#ifdef SYS_renameat2
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, LKS_RENAME_EXCHANGE);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* The old folder renamed aside (and held there, so that no sweep puts it back), the new
   one renamed into place, the old one removed. */
static int lks_atomic_swap_aside(lks_atomic *a, const char *dir, const char *base)
{
	char old[1100];
	int fd = -1, rc = -1, e;

	for (int i = 0; i < LKS_ATOMIC_TRIES; i++) {
		if (lks_atomic_name(old, sizeof(old), dir, base, "old"))
			return -1;
		if (access(old, F_OK) != 0)
			break;
	}
	if ((fd = open(a->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
		flock(fd, LOCK_EX);
	if (rename(a->path, old) != 0) {
		lks_err("cannot move '%s' aside to replace it: %s", a->path, strerror(errno));
		goto out;
	}
	if (rename(a->tmp, a->path) != 0) {
		e = errno;
		rename(old, a->path);
		lks_err("cannot rename '%s' to '%s': %s", a->tmp, a->path, strerror(e));
		goto out;
	}
	a->tmp[0] = 0;
	lks_atomic_rm(AT_FDCWD, old, 0);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

int lks_atomic_dir_commit(lks_atomic *a)
{
	char dir[1024], base[256];
	struct stat st;
	int rc = -1;

	if (lks_atomic_split(a->path, dir, sizeof(dir), base, sizeof(base))
	    || lks_atomic_sync_tree(a->tmp))
		goto out;
	if (lstat(a->path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		lks_err("'%s' is not a folder: not replaced", a->path);
		goto out;
	}
	if (lstat(a->path, &st) != 0) {
		if (rename(a->tmp, a->path) != 0) {
			lks_err("cannot rename '%s' to '%s': %s", a->tmp, a->path, strerror(errno));
			goto out;
		}
		a->tmp[0] = 0;
	} else if (lks_atomic_exchange(a->tmp, a->path) == 0) {
		lks_atomic_rm(AT_FDCWD, a->tmp, 0);  /* the old folder, under the temporary name */
		a->tmp[0] = 0;
	} else if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
		if (lks_atomic_swap_aside(a, dir, base))
			goto out;
	} else {
		lks_err("cannot put '%s' in place of '%s': %s", a->tmp, a->path, strerror(errno));
		goto out;
	}
	lks_atomic_sync_dir(dir);
	/* again at the end: a temporary still locked at the start may have lost its writer
	   since (a killed writer's child, forked and not yet gone, held its lock a moment) */
	lks_atomic_sweep(dir, base, lks_folder_kinds);
	rc = 0;
out:
	lks_atomic_dir_abort(a);
	return rc;
}

void lks_atomic_dir_abort(lks_atomic *a)
{
	if (a->tmp[0])
		lks_atomic_rm(AT_FDCWD, a->tmp, 0);
	a->tmp[0] = 0;
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	a->lock_fd = -1;
}
