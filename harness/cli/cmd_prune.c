/*
 * cmd_prune.c: 'lockstep prune': retention of a database (harness/store/prune.h). Keeps the
 * latest suites whole and removes the per-tensor stat rows of older ones that are not
 * pinned, in bounded transactions, then VACUUMs; prints the file's size before and after.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/cli/cmd.h"
#include "harness/store/prune.h"
#include "kernels/err.h"

static const char lks_prune_usage[] =
	"usage: lockstep prune [--db FILE] (--keep N | --keep-days D) [--pin ID]... [--unpin ID]...\n"
	"       lockstep prune [--db FILE] (--pin ID | --unpin ID)...\n"
	"\n"
	"Keeps the latest suites whole. An older suite keeps its runs, step rows (loss, grad\n"
	"norm, step time), events, checks and verdicts, and loses its per-tensor stat rows, the\n"
	"bulk of the file, and the training states its runs kept ('run --keep-state',\n"
	"'resume_from'), unless it is pinned. A pruned run still diffs, reports and checks on\n"
	"loss and grad norm; what it lost is the first divergence by tensor. The rows go a few\n"
	"thousand per transaction, so other lockstep commands read (and write) the database\n"
	"meanwhile; then VACUUM gives the space back to the file system (it waits only for\n"
	"writers, never for readers).\n"
	"\n";

static const char lks_prune_tail[] =
	"\n"
	"exit codes: 0 done, 2 bad usage, no such suite, no such file or not a lockstep\n"
	"database, 3 could not write it\n";

struct lks_prune_args {
	const char *db;
	lks_prune_opts o;
	const char **pins;        /* "+ID" to pin, "-ID" to unpin, in order given */
	int npins;
};

static int lks_prune_days(const char *v, double *out)
{
	char *end = NULL;

	*out = v ? strtod(v, &end) : -1;
	if (!v || end == v || *end || !(*out >= 0))
		return lks_usage("prune: --keep-days wants a number of days >= 0, not '%s'",
		                 v ? v : "");
	return 0;
}

/* --pin ID, --unpin ID: in the order given, the option's name before each id */
static int lks_prune_pin_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                             const char *arg)
{
	struct lks_prune_args *a = cmd->ctx;
	const char **v = realloc(a->pins, (size_t)(a->npins + 2) * sizeof(*v));

	(void)name;
	if (!v)
		return fprintf(stderr, "lockstep: out of memory\n"), LKS_EXIT_INFRA;
	v[a->npins++] = o->name;
	v[a->npins++] = arg;
	a->pins = v;
	return 0;
}

/* --keep-days D */
static int lks_prune_days_opt(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                              const char *arg)
{
	struct lks_prune_args *a = cmd->ctx;

	(void)o; (void)name;
	return lks_prune_days(arg, &a->o.keep_days);
}

/* 0: go on; LKS_OPT_HELP: help was printed; else an exit code */
static int lks_prune_parse(int argc, char **argv, struct lks_prune_args *a)
{
	const lks_option opts[] = {
		LKS_OPT_STRING("--db", "FILE", &a->db, "the database (default lockstep.db)"),
		LKS_OPT_INT("--keep", "N", &a->o.keep, 1, 1 << 30,
		            "the latest N suites (by id) are kept whole"),
		LKS_OPT_CALL("--keep-days", "D", lks_prune_days_opt,
		             "suites begun within the last D days are kept whole (with --keep: a\n"
		             "suite either keeps is kept); the latest suite is kept whole always,\n"
		             "and so is the latest whose runs all completed (a night killed or\n"
		             "still running is not what the next one is compared with), and one\n"
		             "whose 'lockstep run' has not ended, until a day after its last run\n"
		             "or verdict (killed)"),
		LKS_OPT_CALL("--pin", "ID", lks_prune_pin_opt,
		             "suite ID keeps its stat rows whatever its age (a release), first"),
		LKS_OPT_CALL("--unpin", "ID", lks_prune_pin_opt,
		             "suite ID is pruned like any other again, first"),
		LKS_OPT_INT("--batch", "N", &a->o.batch, 1, 1 << 30,
		            "stat rows per transaction (default 4000)"),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "prune", .usage = lks_prune_usage, .tail = lks_prune_tail,
	                          .width = 15, .ctx = a };
	int rc;

	a->db = "lockstep.db";
	a->o = (lks_prune_opts){ .keep = -1, .keep_days = -1 };
	if ((rc = lks_opt_parse(&cmd, opts, argc, argv, NULL)) != 0)
		return rc;
	if (a->o.keep < 0 && a->o.keep_days < 0 && !a->npins)
		return lks_usage("prune: how much to keep? (--keep N or --keep-days D; 'lockstep "
		                 "prune --help')");
	return 0;
}

/* The database's bytes on disk, its write-ahead log included; those of the log in *wal_n. */
static long long lks_prune_size(const char *db, long long *wal_n)
{
	char wal[4096];
	struct stat st;
	long long n = 0;

	*wal_n = 0;
	if (!stat(db, &st))
		n += st.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", db);
	if (!stat(wal, &st))
		*wal_n = st.st_size;
	return n + *wal_n;
}

static int lks_prune_pins(lks_store *s, const struct lks_prune_args *a)
{
	for (int i = 0; i < a->npins; i += 2) {
		char *end = NULL;
		long long id = strtoll(a->pins[i + 1], &end, 10);
		int rc;

		if (end == a->pins[i + 1] || *end || id <= 0)
			return lks_usage("prune: %s wants a suite id, not '%s'", a->pins[i],
			                 a->pins[i + 1]);
		if ((rc = lks_store_pin(s, id, a->pins[i][2] == 'p')) != 0) {
			fprintf(stderr, "lockstep: prune: %s\n", lks_errmsg());
			return lks_exit_code(rc);
		}
		printf("suite %lld %s\n", id, a->pins[i][2] == 'p' ? "pinned" : "unpinned");
	}
	return 0;
}

int cmd_prune(int argc, char **argv)
{
	struct lks_prune_args a = { 0 };
	lks_prune_result res;
	lks_store *store = NULL;
	long long before, after, wal;
	int rc, open_rc;

	if ((rc = lks_prune_parse(argc, argv, &a)) != 0) {
		rc = lks_opt_exit(rc);
		goto out;
	}
	if (access(a.db, F_OK)) {  /* a misspelt --db is not a new, empty history */
		rc = lks_usage("prune: no database '%s'", a.db);
		goto out;
	}
	/* an empty file: SQLite would make it a new, empty history, as a misspelt name */
	if ((before = lks_prune_size(a.db, &wal)) == 0) {
		rc = lks_usage("prune: '%s' is empty: no lockstep database", a.db);
		goto out;
	}
	if ((open_rc = lks_store_open(a.db, &store)) != 0) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		rc = lks_exit_code(open_rc);
		goto out;
	}
	if ((rc = lks_prune_pins(store, &a)) != 0 || (a.o.keep < 0 && a.o.keep_days < 0))
		goto out;
	rc = LKS_EXIT_INFRA;
	if (lks_store_prune(store, &a.o, &res) || lks_store_vacuum(store)) {
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
		goto out;
	}
	lks_store_close(store);
	store = NULL;
	printf("pruned %d suite%s: %lld stat rows removed in %lld transactions\n", res.suites,
	       res.suites == 1 ? "" : "s", (long long)res.rows, (long long)res.transactions);
	after = lks_prune_size(a.db, &wal);
	/* another connection open (a run writing) keeps the log, VACUUM's copy of the file in
	   it: the bytes are freed when the last connection closes, not yet */
	printf("'%s': %lld bytes before, %lld after", a.db, before, after);
	if (wal)
		printf(" (%lld of them the write-ahead log, which another open connection keeps: it "
		       "goes when the last one closes)", wal);
	printf("\n");
	rc = LKS_EXIT_OK;
out:
	lks_store_close(store);
	free(a.pins);
	return rc;
}
