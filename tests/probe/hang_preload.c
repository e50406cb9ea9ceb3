/*
 * hang_preload.c: a shared library that stops whatever loads it, for the tests of probes
 * that never end or crash (test_combo_cli.c): a combo sets env.LD_PRELOAD to it, and the
 * probe's 'lockstep check' hangs before its main, as one stuck in a driver call would. It
 * ignores SIGTERM too, so that the probe's timeout has to end it with SIGKILL. With
 * LKS_TEST_PRELOAD=segv in the environment it dies of SIGSEGV instead, as a broken library
 * would, whatever handler the program has installed (AddressSanitizer's, in ci/sanitize,
 * would turn the signal into a report and exit code 1).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void lks_hang(void)
{
	const char *mode = getenv("LKS_TEST_PRELOAD");

	if (mode && !strcmp(mode, "segv")) {
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
	}
	signal(SIGTERM, SIG_IGN);
	for (;;)
		pause();
}
