/*
 * err.h: the last error message of this thread.
 *
 * Functions that can fail return int (0 = ok) and record why with lks_err(); the caller
 * that decides (in the end only main) reads it with lks_errmsg(). Messages are lowercase,
 * without a full stop, with the subject in quotes: "cannot open 'x.db'".
 */
#ifndef LKS_KERNELS_ERR_H
#define LKS_KERNELS_ERR_H

#include <stddef.h>

#if defined(__GNUC__)
#define LKS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define LKS_PRINTF(f, a)
#endif

/* Records a message and returns -1, so that 'return lks_err(...)' reads naturally. The
   message goes through lks_escape: text from an input file never reaches a terminal raw. */
int lks_err(const char *fmt, ...) LKS_PRINTF(1, 2);
const char *lks_errmsg(void);

/* src into dst (size bytes, always terminated) with every control character (below 0x20,
   and 0x7f) written as \xNN, so that a message can carry text from any input file. Other
   bytes (UTF-8 included) and backslashes are kept, so escaping twice changes nothing.
   Returns the length the whole escaped text needs, as snprintf does. */
size_t lks_escape(char *dst, size_t size, const char *src);

#endif
