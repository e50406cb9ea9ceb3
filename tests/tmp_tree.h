/*
 * tmp_tree.h: removing a test's scratch folder with everything under it, files and folders
 * alike, without following links (a test may plant one). Returns 0, or -1 when something
 * could not be removed (errno says why); a folder already gone is not an error.
 */
#ifndef LKS_TESTS_TMP_TREE_H
#define LKS_TESTS_TMP_TREE_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline int lks_test_rmtree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char sub[4096];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= (int)sizeof(sub)) {
			errno = ENAMETOOLONG;
			rc = -1;
			continue;
		}
		if (lks_test_rmtree(sub))
			rc = -1;
	}
	closedir(d);
	return rmdir(path) || rc ? -1 : 0;
}

#endif
