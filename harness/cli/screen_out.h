/*
 * screen_out.h: what 'lockstep screen' says of its devices (screen_out.c): a line per
 * device on the terminal, the node's JSON document for fleets, JUnit.
 */
#ifndef LKS_HARNESS_CLI_SCREEN_OUT_H
#define LKS_HARNESS_CLI_SCREEN_OUT_H

#include "harness/probe/screen.h"

#include "harness/store/trace_store.h"

/* Where a screen's outcome goes besides the terminal (each NULL: not there). */
typedef struct lks_screen_sink {
	const char *json, *junit;
	lks_store *db;            /* the JSON document kept in the store (table screens) */
	char started[32];         /* when the screen started, ISO 8601 UTC with milliseconds */
	double seconds;           /* how long it took */
} lks_screen_sink;

/* sink->started: now. */
void lks_screen_sink_start(lks_screen_sink *sink);
/* Prints every device's verdict and writes the sink's outputs; returns the exit code: 0
   every device passed, 1 one failed or is undecided, 3 a device's runs could not be made
   (or an output could not be written). */
int lks_screen_out(const lks_screen_opts *o, const char *mode, const lks_screen_dev *devs,
                   int n, const lks_screen_sink *sink);
/* Removes the devices' databases (and the run across them) from the temporary folder dir,
   and dir. */
void lks_screen_out_clean(const char *dir, const lks_screen_dev *devs, int n);

#endif
