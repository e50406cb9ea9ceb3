/*
 * hang_preload.c: a shared library that hangs whatever loads it, for the test of a probe
 * that never ends (test_combo.c): a combo sets env.LD_PRELOAD to it, and the probe's
 * 'lockstep check' hangs before its main, as one stuck in a driver call would. It ignores
 * SIGTERM too, so that the probe's timeout has to end it with SIGKILL.
 */
#include <signal.h>
#include <unistd.h>

__attribute__((constructor)) static void lks_hang(void)
{
	signal(SIGTERM, SIG_IGN);
	for (;;)
		pause();
}
