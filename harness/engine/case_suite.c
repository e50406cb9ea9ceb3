/*
 * case_suite.c: cases as a suite: the expansion of 'lockstep list|run CASE|DIR...' into
 * sorted case paths, loading them all, the names that --run and --check give, and the
 * fault of LOCKSTEP_INJECT planted in the runs it fits.
 */
#include "harness/engine/case_parse.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "kernels/err.h"

const char *lks_cases_unknown(const lks_case *cases, int ncases, const char *const *names,
			      int n, int checks)
{
	for (int i = 0; i < n; i++) {
		int known = 0;

		for (int j = 0; j < ncases && !known; j++)
			for (int k = 0; k < (checks ? cases[j].nchecks : cases[j].nruns) && !known; k++)
				known = !strcmp(names[i], checks ? cases[j].checks[k].name
								 : cases[j].runs[k].name);
		if (!known)
			return names[i];
	}
	return NULL;
}

/* ---- case paths ---- */

static int lks_strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int lks_paths_add(char ***paths, int *n, int *cap, char *p)
{
	char **grown;

	if (!p)
		return lks_err("out of memory");
	if (*n == *cap) {
		if (!(grown = realloc(*paths, (size_t)(*cap ? *cap * 2 : 16) * sizeof(*grown)))) {
			free(p);
			return lks_err("out of memory");
		}
		*paths = grown;
		*cap = *cap ? *cap * 2 : 16;
	}
	(*paths)[(*n)++] = p;
	return 0;
}

/* The *.ini entries of dir (not hidden ones), sorted by name so that a suite runs in the
   same order on every machine. One that is no regular file (a directory, a symlink that
   leads nowhere or in a loop) is kept, so that loading it names it: a case left out of a
   suite without a word would leave its checks to pass unseen. */
static int lks_paths_dir(const char *dir, char ***paths, int *n, int *cap)
{
	size_t dlen = strlen(dir);
	const char *sep = dlen && dir[dlen - 1] == '/' ? "" : "/";
	DIR *d = opendir(dir);
	struct dirent *e;
	int first = *n, rc = 0;

	if (!d)
		return lks_err("cannot open directory '%s': %s", dir, strerror(errno));
	while (!rc && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char *p;

		if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 4, ".ini") != 0)
			continue;
		if (!(p = malloc(dlen + len + 2))) {
			rc = lks_err("out of memory");
			break;
		}
		sprintf(p, "%s%s%s", dir, sep, e->d_name);
		rc = lks_paths_add(paths, n, cap, p);
	}
	closedir(d);
	if (rc)
		return rc;
	if (*n == first)
		return lks_err("no case files (*.ini) in '%s'", dir);
	qsort(*paths + first, (size_t)(*n - first), sizeof(**paths), lks_strcmp_p);
	return 0;
}

int lks_case_paths(const char *const *args, int nargs, char ***paths, int *npaths)
{
	int n = 0, cap = 0, rc = 0;
	char **out = NULL;

	for (int i = 0; i < nargs && !rc; i++) {
		struct stat sb;

		if (stat(args[i], &sb) != 0)
			rc = lks_err("cannot open '%s': %s", args[i], strerror(errno));
		else if (S_ISDIR(sb.st_mode))
			rc = lks_paths_dir(args[i], &out, &n, &cap);
		else
			rc = lks_paths_add(&out, &n, &cap, strdup(args[i]));
	}
	if (rc) {
		lks_case_paths_free(out, n);
		out = NULL;
		n = 0;
	}
	*paths = out;
	*npaths = n;
	return rc;
}

void lks_case_paths_free(char **paths, int npaths)
{
	for (int i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
}

int lks_cases_load(const char *const *args, int nargs, const char *const *sets, int nsets,
                   lks_case **cases, int *ncases)
{
	char **paths = NULL;
	int npaths = 0, rc = -1;

	*cases = NULL;
	*ncases = 0;
	if (lks_case_paths(args, nargs, &paths, &npaths))
		return -1;
	if (!(*cases = calloc((size_t)npaths + 1, sizeof(**cases)))) {
		lks_err("out of memory");
		goto out;
	}
	for (int i = 0; i < npaths; i++, (*ncases)++) {
		if (lks_case_load(paths[i], sets, nsets, &(*cases)[i]))
			goto out;
		/* a case is known by its file's name (its golden files' folder, CASE/RUN, the
		   runs night over night compares): two of one name would be taken for each other */
		for (int j = 0; j < i; j++)  /* in any case: their golden folders on macOS */
			if (!strcasecmp((*cases)[j].name, (*cases)[i].name)) {
				lks_err("two cases named '%s': '%s' and '%s' (a case is known by its file's "
				        "name: its golden files, CASE/RUN, night over night); give each "
				        "once, under a name of its own", (*cases)[i].name, paths[j], paths[i]);
				(*ncases)++;
				goto out;
			}
	}
	rc = lks_cases_inject_env(*cases, *ncases, 1);
out:
	lks_case_paths_free(paths, npaths);
	return rc;
}

/* LOCKSTEP_INJECT: the fault goes to the run it names, or to every run it fits that has
   no fault of its own (a run's own fault is what its case tests; replaced unasked, a fault
   case's checks would test another). */
int lks_cases_inject_env(lks_case *cases, int ncases, int need)
{
	const char *spec = getenv(LKS_INJECT_ENV);
	char why[600] = "";  /* why the first run it did not fit refused it */
	lks_fault f;
	int planted = 0;

	if (!spec || !*spec)
		return 0;
	if (lks_fault_parse(spec, 1, &f))
		return lks_err_prefix(LKS_INJECT_ENV);
	for (int i = 0; i < ncases; i++)
		for (int j = 0; j < cases[i].nruns; j++) {
			lks_run_cfg *r = &cases[i].runs[j];

			if (f.run[0] ? strcmp(f.run, r->name) != 0 : r->inject.kind != LKS_FAULT_NONE)
				continue;
			if (lks_run_fault_fits(&cases[i], r, &f)) {
				if (!why[0])
					snprintf(why, sizeof(why), "; run '%s': %s", r->name, lks_errmsg());
				if (!f.run[0])
					continue;
				lks_err_prefix(r->name);
				return lks_err_prefix(LKS_INJECT_ENV);
			}
			r->inject = f;
			planted++;
		}
	if (!planted && need)
		return lks_err("%s: no run %s '%s'%s", LKS_INJECT_ENV,
		               f.run[0] ? "is called" : "without a fault of its own fits",
		               f.run[0] ? f.run : spec, why);
	return 0;
}

void lks_cases_release(lks_case *cases, int ncases)
{
	for (int i = 0; i < ncases; i++)
		lks_case_release(&cases[i]);
	free(cases);
}
