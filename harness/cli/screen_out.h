/*
 * screen_out.h: what 'lockstep screen' says of its devices (screen_out.c): a line per
 * device on the terminal, the node's JSON document for fleets, JUnit.
 */
#ifndef LKS_HARNESS_CLI_SCREEN_OUT_H
#define LKS_HARNESS_CLI_SCREEN_OUT_H

#include "harness/probe/screen.h"

/* Prints every device's verdict and writes json and junit (each NULL: not written);
   returns the exit code: 0 every device passed, 1 one failed or is undecided, 3 a
   device's runs could not be made (or an output could not be written). */
int lks_screen_out(const lks_screen_opts *o, const char *mode, const lks_screen_dev *devs,
                   int n, const char *json, const char *junit);
/* Removes the devices' databases (and the run across them) from the temporary folder dir,
   and dir. */
void lks_screen_out_clean(const char *dir, const lks_screen_dev *devs, int n);

#endif
