/*
 * hang_preload.c: a shared library that stops whatever loads it, for the tests of probes
 * that never end or crash (test_combo_cli.c): a combo sets env.LD_PRELOAD to it, and the
 * probe's 'lockstep check' hangs before its main, as one stuck in a driver call would. It
 * ignores SIGTERM too, so that the probe's timeout has to end it with SIGKILL. With
 * LKS_TEST_PRELOAD=segv in the environment it dies of SIGSEGV instead, as a broken library
 * would, whatever handler the program has installed (AddressSanitizer's, in ci/sanitize,
 * would turn the signal into a report and exit code 1). With LKS_TEST_PRELOAD=flaky:FILE:N
 * it is a flaky library instead: it counts the processes that load it in FILE, and the
 * first of every N exits 1 (a bad verdict) before main, the others run as they would.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <string.h>
#include <unistd.h>

/* flaky:FILE:N: this process's count in FILE (under a lock: probes may start at once);
   the first of every N exits 1 */
static void lks_flaky(const char *spec)
{
	char path[512], buf[32] = "";
	const char *colon = strrchr(spec, ':');
	int fd, every = colon ? atoi(colon + 1) : 0;
	long count;
	ssize_t got;

	if (!colon || every < 1 || (size_t)(colon - spec) >= sizeof(path))
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
	if (count % every == 1 % every)
		_exit(1);
}

__attribute__((constructor)) static void lks_hang(void)
{
	const char *mode = getenv("LKS_TEST_PRELOAD");

	if (mode && !strncmp(mode, "flaky:", 6)) {
		lks_flaky(mode + 6);
		return;
	}
	if (mode && !strcmp(mode, "segv")) {
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
	}
	signal(SIGTERM, SIG_IGN);
	for (;;)
		pause();
}
