/*
 * hang_preload.c: a shared library that stops whatever loads it, for the tests of probes
 * that never end or crash (test_combo_cli.c): a combo sets env.LD_PRELOAD to it, and the
 * probe's 'lockstep check' hangs before its main, as one stuck in a driver call would. It
 * ignores SIGTERM too, so that the probe's timeout has to end it with SIGKILL. With
 * LKS_TEST_PRELOAD=segv in the environment it dies of SIGSEGV instead, as a broken library
 * would, whatever handler the program has installed (AddressSanitizer's, in ci/sanitize,
 * would turn the signal into a report and exit code 1). With LKS_TEST_PRELOAD=flaky:FILE:CYCLE
 * it is a flaky library instead: it counts the processes that load it in FILE, and each
 * takes its turn of CYCLE, a comma-separated list repeated: an exit code, with which it
 * exits before main (1 a bad verdict, 125 could not test), or 'run': it runs as it would.
 * '1,run,run' fails the first of every three; '125,125,run' cannot test two of three.
 * With LKS_TEST_PRELOAD=pidfile:FILE it hangs as above, after writing its pid to FILE: the
 * test then knows the probe has started, and which process it is.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <string.h>
#include <unistd.h>

/* The turn'th entry (from 0) of cycle, the list repeated: exits with its code, or returns
   for 'run'; an entry that is neither exits 3 (a crash), never 0, which would pass */
static void lks_flaky_turn(const char *cycle, long turn)
{
	long len = 1, code;
	const char *p = cycle;
	char *end;

	for (const char *c = cycle; *c; c++)
		len += *c == ',';
	for (turn %= len; turn > 0; turn--)
		p = strchr(p, ',') + 1;
	if (!strncmp(p, "run", 3) && (!p[3] || p[3] == ','))
		return;
	code = strtol(p, &end, 10);
	_exit(end != p && (!*end || *end == ',') ? (int)code : 3);
}

/* flaky:FILE:CYCLE: this process's count in FILE (under a lock: probes may start at once)
   picks its turn of CYCLE */
static void lks_flaky(const char *spec)
{
	char path[512], buf[32] = "";
	const char *colon = strrchr(spec, ':');
	int fd;
	long count;
	ssize_t got;

	if (!colon || !colon[1] || (size_t)(colon - spec) >= sizeof(path))
		_exit(3);
	memcpy(path, spec, (size_t)(colon - spec));
	path[colon - spec] = 0;
	if ((fd = open(path, O_RDWR | O_CREAT, 0644)) < 0 || flock(fd, LOCK_EX))
		_exit(3);
	got = read(fd, buf, sizeof(buf) - 1);
	count = (got > 0 ? atol(buf) : 0) + 1;
	snprintf(buf, sizeof(buf), "%ld\n", count);
	if (lseek(fd, 0, SEEK_SET) || write(fd, buf, strlen(buf)) < 0)
		_exit(3);
	close(fd);
	lks_flaky_turn(colon + 1, count - 1);
}

__attribute__((constructor)) static void lks_hang(void)
{
	const char *mode = getenv("LKS_TEST_PRELOAD");

	if (mode && !strncmp(mode, "flaky:", 6)) {
		lks_flaky(mode + 6);
		return;
	}
	if (mode && !strncmp(mode, "pidfile:", 8)) {
		FILE *f = fopen(mode + 8, "w");

		if (!f)
			_exit(3);
		fprintf(f, "%ld\n", (long)getpid());
		fclose(f);
	}
	if (mode && !strcmp(mode, "segv")) {
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
	}
	signal(SIGTERM, SIG_IGN);
	for (;;)
		pause();
}
