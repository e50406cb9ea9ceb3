/*
 * test_fuzz.c: the fuzz driver (tests/fuzz/fuzz.c) and its seed corpora, without AFL++:
 * every target the driver lists has seeds in tests/fuzz/seeds/<target>/, small ones, and
 * its parser accepts each ok_* seed and rejects each bad_* seed as bad input. So ci/fuzz
 * starts from inputs that reach both the accepting and the rejecting paths of each parser,
 * and a parser added to the driver without seeds fails here.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "run_bin.h"

/* AFL++ mutates small inputs fastest and its documentation asks for seeds under 1 KB; a
   few KiB still keeps a golden file's header, step rows and some stats rows. */
#define LKS_SEED_MAX 4096

/* Checks the seeds of one target; returns how many there are. */
static int check_seeds(const char *target)
{
	char dir[1024], path[2048], args[4096], out[4096];
	int nok = 0, nbad = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/tests/fuzz/seeds/%s", LKS_SRC, target);
	d = opendir(dir);
	cr_assert_not_null(d, "target '%s' has no seeds folder '%s'", target, dir);
	while ((e = readdir(d))) {
		struct stat sb;
		int ok = !strncmp(e->d_name, "ok_", 3), code;

		if (e->d_name[0] == '.')
			continue;
		cr_assert(ok || !strncmp(e->d_name, "bad_", 4), "seed '%s/%s' is named neither "
		          "ok_* nor bad_*", dir, e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		cr_assert_eq(stat(path, &sb), 0);
		cr_assert_leq(sb.st_size, LKS_SEED_MAX, "seed '%s' has %lld bytes", path,
		              (long long)sb.st_size);
		snprintf(args, sizeof(args), "%s '%s'", target, path);
		code = lks_run_bin(NULL, args, out, sizeof(out));
		cr_assert_eq(code, ok ? 0 : 2, "%s: exit %d, want %d: %s", path, code, ok ? 0 : 2, out);
		nok += ok;
		nbad += !ok;
	}
	closedir(d);
	cr_assert(nok > 0 && nbad > 0, "target '%s': %d ok_* and %d bad_* seeds, want some of "
	          "each", target, nok, nbad);
	return nok + nbad;
}

Test(fuzz, every_target_has_seeds_its_parser_accepts_or_rejects_as_named)
{
	char list[1024], *line, *save = NULL;
	int ntargets = 0;

	cr_assert_eq(lks_run_bin(NULL, "--list", list, sizeof(list)), 0);
	for (line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char target[64], file[64];

		cr_assert_eq(sscanf(line, "%63s %63s", target, file), 2, "bad --list line '%s'", line);
		check_seeds(target);
		ntargets++;
	}
	/* case files, combos files and golden files, at least */
	cr_assert_geq(ntargets, 3, "%d targets", ntargets);
}

Test(fuzz, driver_rejects_an_unknown_target)
{
	cr_assert_eq(lks_run_bin(NULL, "nosuch /dev/null", NULL, 0), 2);
	cr_assert_eq(lks_run_bin(NULL, "", NULL, 0), 2);
}
