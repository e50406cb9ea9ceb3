/*
 * cmd_probe.c: what 'lockstep matrix', 'bisect' and 'reduce' share on the command line:
 * their options (harness/probe/probe.h, lks_probe_opt) and the start of their session.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cmd.h"
#include "harness/probe/probe.h"
#include "kernels/err.h"

/* --timeout SECONDS: > 0 */
static int lks_probe_timeout_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                                 const char *arg)
{
	struct lks_probe_cfg *cfg = cmd->ctx;
	char *end;

	(void)o;
	cfg->timeout = strtod(arg, &end);
	if (end == arg || *end || !isfinite(cfg->timeout) || cfg->timeout <= 0)
		return lks_usage("%s: %s wants seconds > 0, not '%s'", cmd->who, name, arg);
	return 0;
}

static int lks_probe_check_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                               const char *arg)
{
	struct lks_probe_cfg *cfg = cmd->ctx;

	(void)o; (void)name;
	cfg->checks[cfg->nchecks++] = arg;
	return 0;
}

/* --steps N, --run NAME, --threads N, --golden DIR: given to every probe as they are,
   their values checked here as 'lockstep run' checks them (and an empty path, which it
   would take for the default folder): a bad one is bad usage before any probe, not a
   probe that could not test under every combo */
static int lks_probe_pass_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                              const char *arg)
{
	struct lks_probe_cfg *cfg = cmd->ctx;
	int n;

	if (!strcmp(name, "--golden") && lks_opt_path(cmd->who, name, arg, &arg))
		return LKS_EXIT_USAGE;
	if (!strcmp(name, "--steps") && lks_opt_int(cmd->who, name, arg, 1, LKS_RUN_STEPS_MAX, &n))
		return LKS_EXIT_USAGE;
	if (!strcmp(name, "--threads")
	    && lks_opt_int(cmd->who, name, arg, 1, LKS_RUN_THREADS_MAX, &n))
		return LKS_EXIT_USAGE;
	cfg->pass[cfg->npass++] = o->name;
	cfg->pass[cfg->npass++] = arg;
	return 0;
}

/* --on-crash skip|bad */
static int lks_probe_crash_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                               const char *arg)
{
	struct lks_probe_cfg *cfg = cmd->ctx;

	(void)o;
	if (strcmp(arg, "skip") && strcmp(arg, "bad"))
		return lks_usage("%s: %s wants skip or bad, not '%s'", cmd->who, name, arg);
	cfg->on_crash_bad = !strcmp(arg, "bad");
	return 0;
}

/* 0 ok, LKS_OPT_HELP help printed, else the exit code. */
static int lks_probe_args(const char *who, int argc, char **argv, const char *usage,
                          const char *tail, const lks_option *extra, struct lks_probe_cfg *cfg)
{
	const lks_option none[] = { LKS_OPT_END() };
	lks_opt_list cases = { 0 };
	const lks_option opts[] = {
		LKS_OPT_INCLUDE(extra ? extra : none),
		LKS_OPT_PATH("--combos", "FILE", &cfg->combos_path,
		             "the combos: [combo NAME] sections with env.VAR = value,\n"
		             "unset.VAR =, library_path = DIR[:DIR], set.SECTION.KEY = value"),
		LKS_OPT_PATH("--db", "FILE", &cfg->db,
		             "the database the probes store in (default lockstep.db)"),
		LKS_OPT_CALL("--timeout", "SECONDS", lks_probe_timeout_opt,
		             "a probe still running then gets SIGTERM, SIGKILL 2 s later, and\n"
		             "is recorded as a timeout (default 600)"),
		LKS_OPT_CALL("--on-crash", "skip|bad", lks_probe_crash_opt,
		             "a probe that crashes or times out counts as skip (default: it\n"
		             "says nothing about numerics) or as bad"),
		LKS_OPT_CALL("--check", "NAME", lks_probe_check_opt,
		             "the verdict of this check alone (repeatable; matrix leaves\n"
		             "out a case that lacks one)"),
		LKS_OPT_TEXT("  --steps N, --run NAME, --threads N, --golden DIR   given to every probe\n"
		             "                     (matrix leaves out a case without the run)\n"),
		LKS_OPT_CALL("--steps", "N", lks_probe_pass_opt, NULL),
		LKS_OPT_CALL("--run", "NAME", lks_probe_pass_opt, NULL),
		LKS_OPT_CALL("--threads", "N", lks_probe_pass_opt, NULL),
		LKS_OPT_CALL("--golden", "DIR", lks_probe_pass_opt, NULL),
		LKS_OPT_FLAG("--verbose", &cfg->verbose,
		             "every probe's output as it comes (else the end of it is shown\n"
		             "for a probe that crashed, timed out or could not test)"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = who, .usage = usage, .tail = tail, .width = 18,
	                          .ctx = cfg };
	int rc;

	if (lks_probe_cfg_init(cfg, argc))
		return lks_usage("%s: %s", who, lks_errmsg());
	rc = lks_opt_parse(&cmd, opts, argc, argv, &cases);
	for (int i = 0; i < cases.n; i++)
		cfg->cases[cfg->ncases++] = cases.v[i];
	free(cases.v);
	if (rc)
		return rc;
	if (!cfg->combos_path)
		return lks_usage("%s: which combos? (--combos FILE)", who);
	if (cfg->ncases == 0)
		return lks_usage("%s: which cases? (a case file or a directory of them)", who);
	/* a STRING row has no default; the others start at theirs */
	for (; extra && extra->kind != LKS_OPT_END; extra++)
		if (extra->kind == LKS_OPT_STRING && !*(const char **)extra->value)
			return lks_usage("%s: %s is required", who, extra->name);
	return 0;
}

int lks_probe_fail(int rc)
{
	fprintf(stderr, "lockstep: %s\n", lks_errmsg());
	return lks_exit_code(rc);
}

int lks_probe_start(const char *who, int argc, char **argv, const char *usage, const char *tail,
                    const lks_option *extra, struct lks_probe_cfg *cfg,
                    struct lks_probe_session *ps, int *rc)
{
	int r = lks_probe_args(who, argc, argv, usage, tail, extra, cfg);

	if (r) {
		*rc = lks_opt_exit(r);
		return 1;
	}
	if ((r = lks_probe_session_open(ps, cfg, who, argc, argv, stdout))) {
		*rc = lks_probe_fail(r);
		return 1;
	}
	return 0;
}
