/*
 * printed.h: how precise an imported value is, and whether two values agree at it
 * (printed.c). A log's text rounds: torchtitan prints a loss with 4 decimals, Megatron-LM
 * with 6 significant digits. The store keeps with each value the decimals it was written
 * with (lks_metric_row.printed: 1 + d, 0 when none were said: a binary value, an event
 * file's float32, or text at full precision), so that 'bitwise' on two logs can say what
 * it compared, "equal to the printed precision (4 decimals)", and 'lockstep diff' can
 * hold a log's text against the event file of the same run at the text's precision.
 */
#ifndef LKS_HARNESS_VERIFY_PRINTED_H
#define LKS_HARNESS_VERIFY_PRINTED_H

#include <stddef.h>

/* The decimals two values are compared at: the fewer of those printed, where either is
   (printed as above); -1 where neither is (full precision, bit for bit). */
int lks_printed_common(int pa, int pb);

/* Whether a and b agree at their common precision d (lks_printed_common):
   - neither printed: the same bits (every NaN alike);
   - one printed with d decimals, the other finer (printed with more, or full): the finer
     rounded to d decimals, as a correctly rounding printf or Python's format does (ties to
     even on its exact binary value), gives the other's d-decimal digits. Two printed: the
     finer's digits rounded to d, a tie (a 5 then zeros past d) agreeing either way, since
     the value it was printed from may have been on either side;
   - a NaN or an infinity agrees only with the same. */
int lks_printed_agree(double a, int pa, double b, int pb);

/* "4 decimals", "4 to 6 decimals" (dmin, dmax decimals) into buf. */
void lks_printed_words(char *buf, size_t size, int dmin, int dmax);

/* One side's precision in words into buf: "printed to 4 decimals", or "at full
   precision" (printed 0). */
void lks_printed_side(char *buf, size_t size, int printed);

#endif
