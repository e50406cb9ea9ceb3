/*
 * err.h: the last error message of this thread.
 *
 * Functions that can fail return int (0 = ok) and record why with lks_err(); the caller
 * that decides (in the end only main) reads it with lks_errmsg(). Messages are lowercase,
 * without a full stop, with the subject in quotes: "cannot open 'x.db'".
 */
#ifndef LKS_KERNELS_ERR_H
#define LKS_KERNELS_ERR_H

#if defined(__GNUC__)
#define LKS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define LKS_PRINTF(f, a)
#endif

/* Records a message and returns -1, so that 'return lks_err(...)' reads naturally. */
int lks_err(const char *fmt, ...) LKS_PRINTF(1, 2);
const char *lks_errmsg(void);

#endif
