/*
 * run_arg.c: RUN on a command line, an id or CASE/RUN (run_arg.h).
 */
#include "harness/cli/run_arg.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/opt.h"
#include "harness/base/shell.h"
#include "harness/engine/case.h"

struct lks_run_find {
	const char *case_name, *run_name;  /* CASE/RUN */
	int64_t id;               /* the latest such run; 0: none */
	char case_path[512];      /* where the case's runs were read from, for the hint */
	char names[256];          /* the case's stored run names, a few ("a, b, ...") */
};

static int lks_run_find_one(void *arg, const lks_run_rec *rec)
{
	struct lks_run_find *f = arg;
	size_t len = strlen(f->names), n = strlen(rec->info.run_name);
	const char *p = f->names;

	if (strcmp(rec->info.case_name, f->case_name))
		return 0;
	if (!strcmp(rec->info.run_name, f->run_name))
		f->id = rec->run_id;  /* runs come in the order they began: the last wins */
	if (rec->info.case_path && *rec->info.case_path)
		snprintf(f->case_path, sizeof(f->case_path), "%s", rec->info.case_path);
	/* each name once: "a, b" holds b where it is preceded by start or ", " and followed by
	   ',' or the end */
	while ((p = strstr(p, rec->info.run_name))
	       && !((p == f->names || p[-1] == ' ') && (p[n] == ',' || !p[n])))
		p++;
	if (!p && len + n + 6 < sizeof(f->names))
		snprintf(f->names + len, sizeof(f->names) - len, "%s%s", len ? ", " : "",
		         rec->info.run_name);
	else if (!p && !strstr(f->names, ", ..."))
		snprintf(f->names + len, sizeof(f->names) - len, ", ...");
	return 0;
}

static int lks_is_id(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

int lks_run_arg_resolve(lks_store *s, const char *cmd, const char *db, const char *arg,
                        int64_t *id)
{
	struct lks_run_find f = { 0 };
	char buf[2 * LKS_NAME_MAX + 2], path[LKS_NAME_MAX + 16], qpath[4 * sizeof(path)], qdb[1024];
	const char *slash = strchr(arg, '/');

	*id = 0;
	if (lks_is_id(arg)) {
		char status[32];

		f.id = strtoll(arg, NULL, 10);
		/* a load fails alike for a missing run and a failing store: ask first */
		if (f.id <= 0 || lks_store_run_status(s, f.id, status, sizeof(status)))
			return lks_usage("%s: no run %s in '%s' (a run is an id or CASE/RUN)", cmd, arg,
			                 db);
		*id = f.id;
		return 0;
	}
	if (!slash || slash == arg || !slash[1] || strchr(slash + 1, '/')
	    || strlen(arg) >= sizeof(buf))
		return lks_usage("%s: '%s' is neither a run id nor CASE/RUN", cmd, arg);
	memcpy(buf, arg, strlen(arg) + 1);
	buf[slash - arg] = 0;
	f.case_name = buf;
	f.run_name = buf + (slash - arg) + 1;
	if (lks_store_get_runs(s, lks_run_find_one, &f))
		return -1;
	if (!f.id && f.names[0])  /* the case is there: the run name is what is wrong */
		return lks_usage("%s: no stored run '%s' in '%s': case '%s' has runs %s", cmd, arg,
		                 db, f.case_name, f.names);
	if (!f.id) {
		snprintf(path, sizeof(path), "cases/%s.ini", f.case_name);
		return lks_usage("%s: no stored run '%s' in '%s' (run its case first: lockstep run "
		                 "%s --db %s)", cmd, arg, db, lks_shell_quote(path, qpath, sizeof(qpath)),
		                 lks_shell_quote(db, qdb, sizeof(qdb)));
	}
	*id = f.id;
	return 0;
}
