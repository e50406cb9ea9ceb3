/*
 * cmd_probe.c: what 'lockstep matrix', 'bisect' and 'reduce' share on the command line:
 * their options (harness/probe/probe.h, lks_probe_opt) and the start of their session.
 */
#include <stdio.h>
#include <string.h>

#include "harness/cli/cmd.h"
#include "harness/probe/probe.h"
#include "kernels/err.h"

/* 1: argv[*i] was one of extra (its value taken); 0: it is not; else an exit code. */
static int lks_probe_extra_opt(const char *who, const struct lks_probe_extra *extra, int argc,
                               char **argv, int *i)
{
	for (; extra && extra->opt; extra++) {
		if (strcmp(argv[*i], extra->opt))
			continue;
		if (*i + 1 >= argc)
			return lks_usage("%s: %s needs a value", who, extra->opt);
		*extra->val = argv[++*i];
		return 1;
	}
	return 0;
}

/* 0 ok, -1 help printed, else the exit code. */
static int lks_probe_args(const char *who, int argc, char **argv, const char *help,
                          const struct lks_probe_extra *extra, struct lks_probe_cfg *cfg)
{
	if (lks_probe_cfg_init(cfg, argc))
		return lks_usage("%s: %s", who, lks_errmsg());
	for (int i = 1; i < argc; i++) {
		int r;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(help, stdout);
			return -1;
		}
		if ((r = lks_probe_extra_opt(who, extra, argc, argv, &i)) == 1)
			continue;
		if (r)
			return r;
		if ((r = lks_probe_opt(cfg, argc, argv, &i)) < 0)
			return lks_usage("%s: %s", who, lks_errmsg());
		if (r == 0)
			return lks_usage("%s: bad option '%s' (or it lacks its value)", who, argv[i]);
	}
	if (!cfg->combos_path)
		return lks_usage("%s: which combos? (--combos FILE)", who);
	if (cfg->ncases == 0)
		return lks_usage("%s: which cases? (a case file or a directory of them)", who);
	for (; extra && extra->opt; extra++)
		if (!*extra->val)
			return lks_usage("%s: %s is required", who, extra->opt);
	return 0;
}

int lks_probe_fail(int rc)
{
	fprintf(stderr, "lockstep: %s\n", lks_errmsg());
	return lks_exit_code(rc);
}

int lks_probe_start(const char *who, int argc, char **argv, const char *help,
                    const struct lks_probe_extra *extra, struct lks_probe_cfg *cfg,
                    struct lks_probe_session *ps, int *rc)
{
	int r = lks_probe_args(who, argc, argv, help, extra, cfg);

	if (r) {
		*rc = r < 0 ? LKS_EXIT_OK : r;
		return 1;
	}
	if ((r = lks_probe_session_open(ps, cfg, who, argc, argv, stdout))) {
		*rc = lks_probe_fail(r);
		return 1;
	}
	return 0;
}
