/*
 * report_dir.c: where a report goes (report_impl.h, lks_report_target). The report replaces
 * its folder whole, so the folder must be missing, empty or recognisably a report's: its
 * index.html, its report.md (which opens with the page's title, "# lockstep report"), the
 * trend's numbers, and only the SVG files that report.md shows. Anything else in it is
 * someone's (an architecture.svg beside a page of their own) and would be lost: refused.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/report/report_impl.h"
#include "harness/store/run.h"
#include "kernels/err.h"

/* What report.md opens with, whatever the suite (report.c, lks_page_title). */
static const char lks_md_title[] = "# " LKS_REPORT_TITLE;

/* The entries of a folder that are a report's by name: the two pages, the trend's numbers
   (trend_plots.c), and plots (*.svg), which report.md must show as well. */
struct lks_dir_scan {
	struct lks_dir_svg {
		char *name;
		int shown;            /* report.md shows it */
	} *svg;                   /* (nsvg) the plots */
	size_t nsvg, cap;
	int index, md;            /* index.html and report.md are there */
};

static void lks_dir_scan_release(struct lks_dir_scan *d)
{
	for (size_t i = 0; i < d->nsvg; i++)
		free(d->svg[i].name);
	free(d->svg);
}

static int lks_is_svg(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && !strcmp(name + n - 4, ".svg") && name[0] != '.';
}

/* name into d: 1 when a report writes no such name. */
static int lks_dir_scan_add(struct lks_dir_scan *d, const char *name)
{
	if (!strcmp(name, "index.html") || !strcmp(name, "report.md")) {
		d->index |= name[0] == 'i';
		d->md |= name[0] == 'r';
		return 0;
	}
	if (!strcmp(name, "nightly_trend.tsv"))
		return 0;
	if (!lks_is_svg(name))
		return 1;
	if (lks_room_for((void **)&d->svg, &d->cap, d->nsvg, sizeof(*d->svg)))
		return -1;
	if (!(d->svg[d->nsvg].name = strdup(name)))
		return lks_err("out of memory");
	d->svg[d->nsvg++].shown = 0;
	return 0;
}

/* The plots report.md shows ("](NAME.svg)", plot.c) marked; 1 when it does not open as a
   lockstep report's does. Read a line at a time: its size is the suite's. */
static int lks_dir_scan_md(struct lks_dir_scan *d, const char *folder)
{
	char path[PATH_MAX + 16], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int rc = 1;

	snprintf(path, sizeof(path), "%s/report.md", folder);
	if (!(f = fopen(path, "r")))
		return lks_err("cannot read '%s': %s", path, strerror(errno));
	for (int first = 1; (len = getline(&line, &cap, f)) >= 0; first = 0) {
		if (first && strncmp(line, lks_md_title, sizeof(lks_md_title) - 1) != 0)
			break;
		rc = 0;
		for (char *p = line; (p = strstr(p, "](")); p += 2) {
			char *end = strchr(p + 2, ')');

			for (size_t i = 0; end && i < d->nsvg; i++)
				d->svg[i].shown |= (size_t)(end - p - 2) == strlen(d->svg[i].name)
				                   && !strncmp(p + 2, d->svg[i].name, (size_t)(end - p - 2));
		}
	}
	free(line);
	if (ferror(f))
		rc = lks_err("cannot read '%s'", path);
	fclose(f);
	return rc;
}

/* 0: folder (real path) holds nothing or a report alone; LKS_E_BAD_INPUT (said, with dir
   as the user named it) when it holds anything else; -1 when it cannot be read. */
static int lks_report_folder(const char *dir, const char *folder)
{
	static const char whole[] = "a report replaces its folder whole, so it goes into an "
	                            "empty folder or one holding a report";
	struct lks_dir_scan d = { 0 };
	struct dirent *e;
	DIR *dp;
	int rc = 0, any = 0;

	if (!(dp = opendir(folder)))
		return lks_err("cannot read the folder '%s': %s", dir, strerror(errno));
	while (rc == 0 && (e = readdir(dp))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		any = 1;
		if ((rc = lks_dir_scan_add(&d, e->d_name)) > 0) {
			lks_err("'%s' holds '%s', which no report writes: %s", dir, e->d_name, whole);
			rc = LKS_E_BAD_INPUT;
		}
	}
	closedir(dp);
	if (rc == 0 && any && (!d.index || !d.md)) {
		lks_err("'%s' holds no report (its index.html and report.md): %s", dir, whole);
		rc = LKS_E_BAD_INPUT;
	}
	if (rc == 0 && any && (rc = lks_dir_scan_md(&d, folder)) > 0) {
		lks_err("'%s/report.md' is not a lockstep report's: %s", dir, whole);
		rc = LKS_E_BAD_INPUT;
	}
	for (size_t i = 0; rc == 0 && i < d.nsvg; i++)
		if (!d.svg[i].shown) {
			lks_err("'%s' holds '%s', which its report.md does not show: %s", dir,
			        d.svg[i].name, whole);
			rc = LKS_E_BAD_INPUT;
		}
	lks_dir_scan_release(&d);
	return rc;
}

int lks_report_target(const char *dir, char *out, size_t size)
{
	struct stat st;

	if (stat(dir, &st) != 0) {
		if (errno != ENOENT)
			return lks_err("cannot write the report to '%s': %s", dir, strerror(errno));
		if ((size_t)snprintf(out, size, "%s", dir) >= size)
			return lks_err("path too long: '%s'", dir);
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return lks_err("'%s' is not a folder: the report goes into a folder of its own",
		               dir), LKS_E_BAD_INPUT;
	if (size < PATH_MAX || !realpath(dir, out))
		return lks_err("cannot write the report to '%s': %s", dir, strerror(errno));
	return lks_report_folder(dir, out);
}
