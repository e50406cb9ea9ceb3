/*
 * nightly.h: night over night. When a suite is stored into a database that holds an
 * earlier one ('lockstep run', 'lockstep check', ci/nightly), every complete run of it is
 * compared with the same case and run in the most recent earlier whole suite made with the
 * same settings:
 *
 *   whole suite    one whose runs are all complete. A suite with a run 'incomplete' (its
 *                  process was killed, or is still writing it beside tonight's) or
 *                  'failed' is passed over, its complete runs too, and said so ("passed
 *                  over: suite N, whose run M ... is incomplete"), where it would have been
 *                  compared with; so is a run of tonight that is not complete. A suite
 *                  read between two of its runs looks whole: it then holds complete runs,
 *                  as good to compare with as any; its runs not yet begun are not gone.
 *                  The runs, their status and rows, and the prune marks are read in one
 *                  snapshot (lks_store_read_begin), as other processes write meanwhile.
 *
 *   same settings  the case name and run name, and what the run was asked to be: recipe,
 *                  options (checkpointing, GEMM, amax history, the --set overrides that
 *                  reach it, as the run stored them: not a check's, nor another run's),
 *                  backend, world size, steps, seed and combo (an imported run's world
 *                  size and steps are what its log held: not settings, so a log that
 *                  stops early is 'changed').
 *                  The fingerprint is not a setting: it is what is compared beside the
 *                  bits. Nor is the case text, compared as the pseudo-key 'case.text'
 *                  beside the fingerprint keys, nor a planted fault in the options: it
 *                  shows as the pseudo-key 'inject', and its run is changed.
 *
 * Verdicts (stored in the nightly table, trace_store.h, lks_nightly_rec):
 *   unchanged  bit for bit: the bitwise walk (walk.h, the one 'lockstep diff' and the
 *              bitwise check use) finds no divergence in any stat row (hashes included)
 *              or any step row's loss and grad norm (its lr follows from the settings,
 *              its step time is performance), and both runs stored as many tensors,
 *              step rows and stat rows
 *   changed    the first divergence, as the walk names it (step, tensor, rank, field)
 *   (pruned)   where 'lockstep prune' removed stat rows of either run (its suite is
 *              marked pruned, lks_check_run_pruned: all of them, or some where a prune
 *              stopped), unchanged and changed are decided on what is left, as 'lockstep
 *              diff' does: the loss and grad norm of every step row, bit for bit, and as
 *              many tensors and step rows (lks_check_bitwise_kept); the message says the
 *              tensors were pruned
 *   new        no earlier suite has this case and run with these settings
 *   gone       the latest earlier suite that ran this case had this run with these
 *              settings, and tonight's did not (a case tonight did not run at all has no
 *              gone runs: tonight did not ask for it)
 * Beside each compared run: the fingerprint keys that differ (versions, commit, compiler,
 * env.VAR, ...; lks_fingerprint_json_keys), but env.LOCKSTEP_INJECT (a fault planted in
 * another run changes nothing in this one), 'inject' when the fault planted in the run
 * differs, and 'case.text' when the case file changed in what the run trains (the model,
 * the optimizer, the case's world size: not a comment, a check or another run).
 * A change with nothing differing there is the alarm: the same software gave other bits
 * (hardware, or a non-determinism); it is printed first.
 */
#ifndef LKS_HARNESS_NIGHTLY_H
#define LKS_HARNESS_NIGHTLY_H

#include <stdint.h>
#include <stdio.h>

#include "harness/store/trace_store.h"

typedef struct lks_nightly_tally {
	int compared;             /* 0: the database holds no earlier suite; nothing stored */
	int unchanged, changed, silent, added, gone;  /* silent: changed with fp_equal */
	int passed;               /* passed over: tonight's runs not complete, and earlier
	                             suites not whole that would have been compared with */
} lks_nightly_tally;

/*
 * Compares the runs of suite suite_id with earlier suites of s, stores a verdict per run
 * and prints them to out (NULL: nothing): the alarms first, then the other changes with
 * the keys that differ and the command that narrows them down ('lockstep reduce' or
 * 'lockstep bisect'), new and gone runs, and the counts. db names the database in the
 * commands printed. -1 (lks_err) only when the store cannot be read or written.
 */
int lks_nightly_compare(lks_store *s, int64_t suite_id, const char *db, FILE *out,
                        lks_nightly_tally *t);

/* A run's options as a setting (malloc'd; NULL: out of memory): without a planted fault
   (" inject: SPEC"), which the key 'inject' shows, so that a fault makes a run changed
   rather than another training. */
char *lks_nightly_settings(const char *options);

#endif
