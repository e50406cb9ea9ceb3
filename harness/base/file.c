/*
 * file.c: input files read whole, within a limit (see file.h). The file is opened with
 * O_NONBLOCK, so that opening a FIFO returns at once (to be refused by fstat) instead of
 * waiting for a writer; a regular file reads the same with it. The read stops one byte past
 * the limit, so a file that grows after fstat is still refused rather than read on.
 */
#include "harness/base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/err.h"

static int lks_file_open(const char *path, size_t max, const char *what, size_t *size)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0) {
		int missing = errno == ENOENT;

		lks_err("cannot open '%s': %s", path, strerror(errno));
		return missing ? LKS_E_MISSING : -1;
	}
	if (fstat(fd, &sb) != 0) {
		lks_err("cannot read '%s': %s", path, strerror(errno));
	} else if (!S_ISREG(sb.st_mode)) {
		lks_err("'%s' is not a regular file (%s): want %s", path,
		        S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO"
		        : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : "a socket", what);
	} else if ((unsigned long long)sb.st_size > max) {
		lks_err("'%s' is %lld bytes, over the limit of %zu bytes for %s", path,
		        (long long)sb.st_size, max, what);
	} else {
		*size = (size_t)sb.st_size;
		return fd;
	}
	close(fd);
	return -1;
}

int lks_file_read(const char *path, size_t max, const char *what, char **text, size_t *len)
{
	size_t size = 0, n = 0, cap;
	char *buf = NULL;
	int fd, rc = 0;

	*text = NULL;
	*len = 0;
	if ((fd = lks_file_open(path, max, what, &size)) < 0)
		return fd;
	cap = size + 2;  /* one byte more than fstat said, to see a file that grew */
	if (!(buf = malloc(cap))) {
		rc = lks_err("out of memory reading '%s'", path);
		goto out;
	}
	for (;;) {
		ssize_t got;

		if (n + 1 == cap) {  /* full: max + 1 bytes is enough to refuse the file */
			char *grown;

			if (n > max)
				break;
			cap = cap * 2 < max + 2 ? cap * 2 : max + 2;
			if (!(grown = realloc(buf, cap))) {
				rc = lks_err("out of memory reading '%s'", path);
				goto out;
			}
			buf = grown;
		}
		got = read(fd, buf + n, cap - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = lks_err("cannot read '%s': %s", path, strerror(errno));
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	if (n > max) {
		rc = lks_err("'%s' grew over the limit of %zu bytes for %s while it was read", path,
		             max, what);
		goto out;
	}
	buf[n] = 0;
	*text = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}
