/*
 * probe.c: probes: a child 'lockstep check' under a combo, with a timeout (see probe.h).
 *
 * The child gets stdin from /dev/null and stdout and stderr in one pipe, which the parent
 * reads while it waits: a child that fills a pipe nobody reads would block, and would be
 * taken for a hung one. The wait is a loop of poll() on the pipe with a short timeout and
 * waitpid(WNOHANG), so that the deadline is kept whether the child writes, exits, or does
 * neither. Signals go to the child's process group, so anything it started goes too; on
 * Linux the child is killed when this process is (PR_SET_PDEATHSIG).
 */
#include "harness/probe/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

#include "harness/base/strbuf.h"
#include "harness/engine/case.h"
#include "kernels/err.h"
#include "kernels/clock.h"

extern char **environ;

/* How often the wait loop looks at the child when it prints nothing: the deadline is kept
   to within this, and an exit is seen this late at most. */
#define LKS_PROBE_TICK_MS 20

const char *lks_outcome_name(lks_outcome o)
{
	static const char *const names[LKS_OUTCOME_COUNT] = {
		"good", "bad", "skip", "crash", "timeout",
	};

	return (unsigned)o < LKS_OUTCOME_COUNT ? names[o] : "?";
}

static void lks_utc_now(char *buf, size_t n)
{
	struct timespec ts;
	struct tm tm;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	len = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + len, n - len, ".%03dZ", (int)(ts.tv_nsec / 1000000));
}

/* ---- one child ---- */

static volatile sig_atomic_t lks_interrupted;

static void lks_on_interrupt(int sig)
{
	lks_interrupted = sig;
}

static const int lks_stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define LKS_NSTOP ((int)(sizeof(lks_stop_signals) / sizeof(lks_stop_signals[0])))

/* While a probe runs, a Ctrl-C reaches only lockstep (the probe has its own process group):
   catch it, so that the probe is killed rather than left behind. */
static void lks_catch_stop(struct sigaction *old)
{
	struct sigaction sa = { .sa_handler = lks_on_interrupt };

	sigemptyset(&sa.sa_mask);
	lks_interrupted = 0;
	for (int i = 0; i < LKS_NSTOP; i++)
		sigaction(lks_stop_signals[i], &sa, &old[i]);
}

static void lks_restore_stop(const struct sigaction *old)
{
	for (int i = 0; i < LKS_NSTOP; i++)
		sigaction(lks_stop_signals[i], &old[i], NULL);
}

/* Keeps the last LKS_PROBE_TAIL - 1 bytes of what the child printed. */
static void lks_tail_add(char *tail, const char *buf, size_t n)
{
	size_t have = strlen(tail), cap = LKS_PROBE_TAIL - 1;

	if (n >= cap) {
		buf += n - cap;
		n = cap;
	}
	if (have + n > cap) {
		memmove(tail, tail + (have + n - cap), cap - n);
		have = cap - n;
	}
	memcpy(tail + have, buf, n);
	tail[have + n] = 0;
}

/* The child's side of lks_spawn, between fork and exec (async-signal-safe calls only); on
   a failure its errno goes up errfd. */
static void lks_spawn_child(const char *exe, char *const *argv, char *const *envp, int wfd,
                            int errfd, pid_t parent)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int fd, e;

	setpgid(0, 0);  /* a group of its own, named by its pid */
#ifdef __linux__
	/* a probe must not outlive a matrix, bisect or reduce that is SIGKILLed (a CI job's
	   kill, timeout -s KILL): nothing would end it at its timeout. (It is the forking
	   thread's death that counts: these commands have one.) A parent dead before the prctl
	   is found by getppid(): the probe ends then. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		goto fail;
	if (getppid() != parent)
		_exit(127);
#else
	(void)parent;
#endif
	/* the handlers of lks_catch_stop end at exec; an ignored signal would not */
	sigemptyset(&dfl.sa_mask);
	for (int i = 0; i < LKS_NSTOP; i++)
		sigaction(lks_stop_signals[i], &dfl, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if ((fd = open("/dev/null", O_RDONLY)) < 0 || dup2(fd, 0) < 0 || dup2(wfd, 1) < 0
	    || dup2(wfd, 2) < 0)
		goto fail;
	if (fd > 2)
		close(fd);
	execve(exe, argv, envp);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) != (ssize_t)sizeof(e))
		e = 0;  /* nothing more to do: the parent sees exit 127 */
	_exit(127);
}

/* fork and exec rather than posix_spawn, which cannot tie the child's life to ours. The
   child's errno comes up a pipe that exec closes, so a program that cannot be run is an
   error here, as posix_spawn made it, not a probe that crashed. */
static int lks_spawn(pid_t *pid, const char *exe, char *const *argv, char *const *envp, int wfd)
{
	pid_t parent = getpid();
	int ep[2], e = 0;
	ssize_t got;

	if (pipe(ep))
		return lks_err("cannot make a pipe: %s", strerror(errno));
	fcntl(ep[0], F_SETFD, FD_CLOEXEC);
	fcntl(ep[1], F_SETFD, FD_CLOEXEC);
	if ((*pid = fork()) < 0) {
		e = errno;
		close(ep[0]);
		close(ep[1]);
		return lks_err("cannot run '%s': %s", exe, strerror(e));
	}
	if (*pid == 0)
		lks_spawn_child(exe, argv, envp, wfd, ep[1], parent);
	close(ep[1]);
	setpgid(*pid, *pid);  /* as the child does: a signal to the group may come first */
	do
		got = read(ep[0], &e, sizeof(e));
	while (got < 0 && errno == EINTR);
	close(ep[0]);
	if (got == (ssize_t)sizeof(e)) {
		waitpid(*pid, NULL, 0);
		return lks_err("cannot run '%s': %s", exe, strerror(e));
	}
	return 0;
}

/* The state of one wait. */
struct lks_wait {
	pid_t pid;
	int fd;                   /* the read end; -1 at end of file */
	int status, exited;
	double deadline, kill_at; /* monotonic seconds; kill_at 0: no SIGTERM sent yet */
	int timed_out, killed;
};

/* Reads what is there; at end of file closes the pipe. */
static void lks_wait_read(struct lks_wait *w, FILE *echo, lks_probe_result *res)
{
	char buf[4096];
	ssize_t n = read(w->fd, buf, sizeof(buf));

	if (n > 0) {
		lks_tail_add(res->output, buf, (size_t)n);
		if (echo)
			fwrite(buf, 1, (size_t)n, echo);
	} else if (n == 0 || errno != EINTR) {
		close(w->fd);
		w->fd = -1;
	}
}

/* SIGTERM at the deadline, SIGKILL after the grace. */
static void lks_wait_deadline(struct lks_wait *w, double now)
{
	if (!w->timed_out && now >= w->deadline) {
		w->timed_out = 1;
		w->kill_at = now + LKS_PROBE_GRACE;
		kill(-w->pid, SIGTERM);
	} else if (w->timed_out && !w->killed && now >= w->kill_at) {
		w->killed = 1;
		kill(-w->pid, SIGKILL);
	}
}

/* 0 when the child has exited and its output is read; -1 when interrupted. */
static int lks_wait(struct lks_wait *w, FILE *echo, lks_probe_result *res)
{
	while (!w->exited || w->fd >= 0) {
		struct pollfd p = { .fd = w->fd, .events = POLLIN };

		if (lks_interrupted) {
			kill(-w->pid, SIGKILL);
			if (!w->exited)
				waitpid(w->pid, &w->status, 0);
			res->interrupted = (int)lks_interrupted;
			return lks_err("interrupted (signal %d): the probe was killed", (int)lks_interrupted);
		}
		if (!w->exited && waitpid(w->pid, &w->status, WNOHANG) == w->pid) {
			w->exited = 1;
			/* what it left running in its group would hold the pipe open */
			kill(-w->pid, SIGKILL);
		}
		lks_wait_deadline(w, lks_now());
		if (poll(&p, w->fd >= 0 ? 1 : 0, LKS_PROBE_TICK_MS) > 0)
			lks_wait_read(w, echo, res);
	}
	return 0;
}

static void lks_classify(const struct lks_wait *w, lks_probe_result *res)
{
	res->exit_code = WIFEXITED(w->status) ? WEXITSTATUS(w->status) : -1;
	res->signal = WIFSIGNALED(w->status) ? WTERMSIG(w->status) : 0;
	if (w->timed_out)
		res->outcome = LKS_OUTCOME_TIMEOUT;
	else if (res->exit_code == 0)
		res->outcome = LKS_OUTCOME_GOOD;
	else if (res->exit_code == 1)
		res->outcome = LKS_OUTCOME_BAD;
	else if (res->exit_code == 125)
		res->outcome = LKS_OUTCOME_SKIP;
	else
		res->outcome = LKS_OUTCOME_CRASH;
}

int lks_probe_exec(const char *exe, char *const *argv, char *const *envp, double timeout,
                   FILE *echo, lks_probe_result *res)
{
	struct sigaction old[LKS_NSTOP];
	struct lks_wait w = { .fd = -1 };
	int fds[2], rc;
	double t0;

	memset(res, 0, sizeof(*res));
	lks_utc_now(res->started, sizeof(res->started));
	if (pipe(fds))
		return lks_err("cannot make a pipe: %s", strerror(errno));
	/* the child has them as 1 and 2 only; later probes must not inherit them either */
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	lks_catch_stop(old);
	t0 = lks_now();
	rc = lks_spawn(&w.pid, exe, argv, envp, fds[1]);
	close(fds[1]);
	if (rc) {
		close(fds[0]);
		lks_restore_stop(old);
		return -1;
	}
	w.fd = fds[0];
	w.deadline = t0 + timeout;
	rc = lks_wait(&w, echo, res);
	res->seconds = lks_now() - t0;
	if (w.fd >= 0)
		close(w.fd);
	lks_restore_stop(old);
	lks_classify(&w, res);
	if (rc && res->interrupted) {
		char note[96];

		snprintf(note, sizeof(note), "\n[lockstep was interrupted (signal %d): the probe was "
		         "killed]\n", res->interrupted);
		lks_tail_add(res->output, note, strlen(note));
	}
	return rc ? -1 : 0;
}

/* ---- the common options ---- */

int lks_probe_cfg_init(lks_probe_cfg *cfg, int argc)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->db = "lockstep.db";
	cfg->timeout = LKS_PROBE_TIMEOUT;
	cfg->cases = calloc((size_t)argc + 1, sizeof(char *));
	cfg->checks = calloc((size_t)argc + 1, sizeof(char *));
	cfg->pass = calloc((size_t)argc + 1, sizeof(char *));
	if (!cfg->cases || !cfg->checks || !cfg->pass)
		return lks_err("out of memory");
	return 0;
}

void lks_probe_cfg_release(lks_probe_cfg *cfg)
{
	free(cfg->cases);
	free(cfg->checks);
	free(cfg->pass);
	memset(cfg, 0, sizeof(*cfg));
}

lks_mark lks_probe_mark(const lks_probe_cfg *cfg, lks_outcome o)
{
	if (o == LKS_OUTCOME_GOOD)
		return LKS_MARK_GOOD;
	if (o == LKS_OUTCOME_BAD)
		return LKS_MARK_BAD;
	if (o == LKS_OUTCOME_SKIP)
		return LKS_MARK_SKIP;
	return cfg->on_crash_bad ? LKS_MARK_BAD : LKS_MARK_SKIP;
}

/* ---- the session ---- */

/* The strings joined by blanks; NULL for none (or out of memory). */
static char *lks_join(const char *const *v, int n)
{
	lks_strbuf sb = LKS_STRBUF_INIT;

	if (n == 0)
		return NULL;
	lks_strbuf_join(&sb, v, n, " ");
	return lks_strbuf_detach(&sb);
}

int lks_probe_session_open(lks_probe_session *ps, const lks_probe_cfg *cfg, const char *kind,
                           int argc, char **argv, FILE *out)
{
	char *args, *command;
	ssize_t n;
	int rc;

	memset(ps, 0, sizeof(*ps));
	ps->cfg = cfg;
	ps->out = out;
	if (lks_combos_load(cfg->combos_path, &ps->combos))
		return LKS_E_BAD_INPUT;
	n = readlink("/proc/self/exe", ps->exe, sizeof(ps->exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(ps->exe) - 1)
		return lks_err("cannot find this program (/proc/self/exe): %s", strerror(errno));
	ps->exe[n] = 0;
	if ((rc = lks_store_open(cfg->db, &ps->store)) != 0)
		return rc == LKS_E_BAD_INPUT ? LKS_E_BAD_INPUT : -1;
	args = lks_join((const char *const *)argv, argc);
	command = malloc(strlen(args ? args : "") + 10);
	if (!command) {
		free(args);
		return lks_err("out of memory");
	}
	sprintf(command, "lockstep %s", args ? args : "");
	rc = lks_store_begin_session(ps->store, kind, command, cfg->combos_path, &ps->session_id);
	free(args);
	free(command);
	return rc;
}

void lks_probe_session_close(lks_probe_session *ps, const char *result)
{
	char stopped[1100];

	/* NULL would say "none (yet)" of a session that has ended */
	if (!result) {
		snprintf(stopped, sizeof(stopped), "stopped: %s", lks_errmsg());
		result = stopped;
	}
	if (ps->store && ps->session_id)
		lks_store_end_session(ps->store, ps->session_id, result);
	lks_store_close(ps->store);
	lks_combos_release(&ps->combos);
	memset(ps, 0, sizeof(*ps));
}

/* The combo's overrides as --set takes them: "SECTION.KEY=value"; *n of them. */
static char **lks_combo_sets(const lks_combo *c, int *n)
{
	char **sets = calloc((size_t)c->nitems + 1, sizeof(*sets));

	*n = 0;
	for (int i = 0; sets && i < c->nitems; i++) {
		const lks_combo_item *it = &c->items[i];
		size_t len = strlen(it->target) + strlen(it->value) + 2;

		if (it->kind != LKS_COMBO_SET)
			continue;
		if (!(sets[*n] = malloc(len))) {
			lks_strv_free(sets);
			return NULL;
		}
		snprintf(sets[(*n)++], len, "%s=%s", it->target + 4, it->value);
	}
	if (!sets)
		lks_err("out of memory");
	return sets;
}

/* "file:line: combo 'NAME'" for messages about a combo. */
static void lks_combo_where(const lks_probe_session *ps, const lks_combo *c, char *buf, size_t n)
{
	if (c->line > 0)
		snprintf(buf, n, "%s:%d: combo '%s'", ps->combos.path, c->line, c->name);
	else
		snprintf(buf, n, "combo '%s'", c->name);
}

/* Each set. item of c (sets: lks_combo_sets's, in item order) on its own against the cases
   as their files say: one the cases refuse (an unknown key, a bad value) is named at its
   own line. */
static int lks_probe_sets_each(lks_probe_session *ps, const lks_combo *c, char **sets)
{
	const lks_probe_cfg *cfg = ps->cfg;
	char msg[1024];
	lks_case *cases = NULL;
	int ncases = 0, rc, j = 0;

	rc = lks_cases_load(cfg->cases, cfg->ncases, NULL, 0, &cases, &ncases);
	for (int i = 0; !rc && i < c->nitems; i++) {
		if (c->items[i].kind != LKS_COMBO_SET)
			continue;
		for (int k = 0; !rc && k < ncases; k++)
			if ((rc = lks_case_override(&cases[k], sets[j]))) {
				snprintf(msg, sizeof(msg), "%s", lks_errmsg());
				rc = lks_err("%s:%d: combo '%s': %s", ps->combos.path, c->items[i].line,
				             c->name, msg);
			}
		j++;
	}
	lks_cases_release(cases, ncases);
	return rc;
}

int lks_probe_session_validate(lks_probe_session *ps, const lks_combo *c)
{
	const lks_probe_cfg *cfg = ps->cfg;
	char where[600], msg[1024];
	const char *unknown;
	lks_case *cases = NULL;
	int nsets, ncases = 0, rc = 0;
	char **sets = lks_combo_sets(c, &nsets);

	if (!sets)
		return -1;
	lks_combo_where(ps, c, where, sizeof(where));
	/* an item the cases refuse is named at its line; what is left is the items together */
	if (c->line > 0 && lks_probe_sets_each(ps, c, sets)) {
		rc = -1;
	} else if (lks_cases_load(cfg->cases, cfg->ncases, (const char *const *)sets, nsets, &cases,
	                          &ncases)) {
		snprintf(msg, sizeof(msg), "%s", lks_errmsg());
		rc = lks_err("%s: %s", where, msg);
	}
	/* a name that selects nothing would make every probe pass (or skip) */
	if (!rc && (unknown = lks_cases_unknown(cases, ncases, cfg->checks, cfg->nchecks, 1)))
		rc = lks_err("no case has a check named '%s'", unknown);
	for (int i = 0; !rc && i + 1 < cfg->npass; i += 2)
		if (!strcmp(cfg->pass[i], "--run")
		    && lks_cases_unknown(cases, ncases, &cfg->pass[i + 1], 1, 0))
			rc = lks_err("no case has a run named '%s'", cfg->pass[i + 1]);
	lks_cases_release(cases, ncases);
	lks_strv_free(sets);
	return rc ? LKS_E_BAD_INPUT : 0;
}

/* exe check CASE... --db DB --quiet --combo NAME --same-fingerprint-change warn
   [--set S.K=V]... [--check N]... [pass]...: a probe is good or bad by its checks; night over
   night (verify/nightly.h) only reports, as a probe's combo changes numerics on purpose */
static char **lks_probe_argv(const lks_probe_session *ps, const lks_combo *c,
                             const char *const *cases, int ncases, char **sets, int nsets)
{
	const lks_probe_cfg *cfg = ps->cfg;
	size_t cap = (size_t)(10 + ncases + 2 * nsets + 2 * cfg->nchecks + cfg->npass);
	const char **argv = calloc(cap, sizeof(*argv));
	int n = 0;

	if (!argv)
		return NULL;
	argv[n++] = ps->exe;
	argv[n++] = "check";
	for (int i = 0; i < ncases; i++)
		argv[n++] = cases[i];
	argv[n++] = "--db";
	argv[n++] = cfg->db;
	argv[n++] = "--quiet";
	argv[n++] = "--combo";
	argv[n++] = c->name;
	argv[n++] = "--same-fingerprint-change";
	argv[n++] = "warn";
	for (int i = 0; i < nsets; i++) {
		argv[n++] = "--set";
		argv[n++] = sets[i];
	}
	for (int i = 0; i < cfg->nchecks; i++) {
		argv[n++] = "--check";
		argv[n++] = cfg->checks[i];
	}
	for (int i = 0; i < cfg->npass; i++)
		argv[n++] = cfg->pass[i];
	return (char **)argv;
}

/* The last lines of a probe's output, indented, for one that did not give a verdict. */
static void lks_print_tail(FILE *out, const char *tail)
{
	const char *p = tail + strlen(tail);
	int lines = 0;

	/* at most 6 lines: enough for the error and what led to it */
	while (p > tail && lines < 7)
		if (*--p == '\n')
			lines++;
	if (*p == '\n')
		p++;
	while (*p) {
		size_t len = strcspn(p, "\n");

		fprintf(out, "    | %.*s\n", (int)len, p);
		p += len + (p[len] == '\n');
	}
}

/* Whether a probe's line names its cases: where there are several, or where they are not
   the one argument given (a case of a folder matrix probes alone). */
static int lks_probe_names_cases(const lks_probe_cfg *cfg, const char *const *cases, int n)
{
	return cfg->ncases > 1 || n != 1 || strcmp(cases[0], cfg->cases[0]);
}

static void lks_print_probe(lks_probe_session *ps, const lks_combo *c, const char *cases,
                            int named, const lks_probe_result *res)
{
	FILE *out = ps->out;

	fprintf(out, "probe %-3d %-24s %-7s %7.2f s", ps->nprobes, c->name,
	        lks_outcome_name(res->outcome), res->seconds);
	if (named)
		fprintf(out, "  %s", cases);
	if (res->outcome == LKS_OUTCOME_TIMEOUT)
		fprintf(out, "  (killed at the %g s timeout)", ps->cfg->timeout);
	else if (res->signal)
		fprintf(out, "  (signal %d: %s)", res->signal, strsignal(res->signal));
	else if (res->outcome == LKS_OUTCOME_CRASH || res->outcome == LKS_OUTCOME_SKIP)
		fprintf(out, "  (exit %d)", res->exit_code);
	fputc('\n', out);
	if (res->outcome >= LKS_OUTCOME_SKIP && !ps->cfg->verbose)
		lks_print_tail(out, res->output);
	fflush(out);
}

/* Stores the probe; the suite it wrote is the latest with a run of its combo since before. */
static int lks_probe_store(lks_probe_session *ps, const lks_combo *c, const char *cases,
                           const lks_probe_result *res, int64_t before, int64_t *suite_id)
{
	const lks_probe_cfg *cfg = ps->cfg;
	char *checks = lks_join(cfg->checks, cfg->nchecks);
	lks_probe_rec rec = {
		.session_id = ps->session_id, .combo = c->name, .cases = cases,
		.check_name = checks, .outcome = lks_outcome_name(res->outcome),
		.exit_code = res->exit_code, .signal = res->signal, .seconds = res->seconds,
		.output = res->output, .started = res->started,
	};
	int rc;

	if (cfg->nchecks && !checks)
		return lks_err("out of memory");
	rc = lks_store_combo_suite(ps->store, c->name, before, &rec.suite_id);
	if (!rc)
		rc = lks_store_probe(ps->store, &rec, NULL);
	if (suite_id)
		*suite_id = rec.suite_id;
	free(checks);
	return rc;
}

int lks_probe_session_run(lks_probe_session *ps, const lks_combo *c, const char *const *cases,
                          int ncases, lks_probe_result *res, int64_t *suite_id)
{
	char **sets = NULL, **argv = NULL, **envp = NULL, *joined = NULL;
	int nsets, rc = -1;
	int64_t before;

	if (!cases) {
		cases = ps->cfg->cases;
		ncases = ps->cfg->ncases;
	}
	if (!(sets = lks_combo_sets(c, &nsets)) || lks_combo_environ(c, environ, &envp))
		goto out;
	if (!(argv = lks_probe_argv(ps, c, cases, ncases, sets, nsets))
	    || !(joined = lks_join(cases, ncases))) {
		lks_err("out of memory");
		goto out;
	}
	if (lks_store_last_suite(ps->store, &before))
		goto out;
	if (lks_probe_exec(ps->exe, argv, envp, ps->cfg->timeout, ps->cfg->verbose ? stderr : NULL,
	                   res)) {
		/* a probe killed as lockstep was interrupted is stored too; the error stays */
		char msg[256];

		snprintf(msg, sizeof(msg), "%s", lks_errmsg());
		if (res->interrupted && !lks_probe_store(ps, c, joined, res, before, suite_id))
			ps->nprobes++;
		lks_err("%s", msg);
		goto out;
	}
	ps->nprobes++;
	lks_print_probe(ps, c, joined, lks_probe_names_cases(ps->cfg, cases, ncases), res);
	rc = lks_probe_store(ps, c, joined, res, before, suite_id);
out:
	lks_strv_free(sets);
	lks_strv_free(envp);
	free(argv);
	free(joined);
	return rc;
}
