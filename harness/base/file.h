/*
 * file.h: reading an input file (a case, a combos file, a golden file, a tolerances.ini)
 * whole, within a limit. Only a regular file is read: a FIFO would block forever and
 * /dev/zero never ends, so anything else is refused before a byte is read, as is a file
 * over the limit.
 */
#ifndef LKS_HARNESS_FILE_H
#define LKS_HARNESS_FILE_H

#include <stddef.h>

#include "harness/base/status.h"

/* The limits, stated in harness/README.md (Input limits and names): a case or combos file
   is text a person writes (the largest shipped case is 3 KB); a golden file holds a row per
   step, rank and tensor (the largest shipped one is 0.4 MB; 256 MiB is a 1000-step, 8-rank
   trace of 300 tensors). */
#define LKS_CASE_FILE_MAX ((size_t)1 << 20)
#define LKS_COMBOS_FILE_MAX ((size_t)1 << 20)
#define LKS_GOLDEN_FILE_MAX ((size_t)256 << 20)
/* A golden class's tolerances.ini: a section per recipe, each value with a comment saying
   what measured it, written by a person or pasted from 'lockstep golden measure' (a few
   KB): the case files' limit. */
#define LKS_TOLERANCES_FILE_MAX ((size_t)1 << 20)
/* The report's HTML template (report --templates DIR): a page of style around the body,
   1.4 KB as shipped. */
#define LKS_TEMPLATE_FILE_MAX ((size_t)1 << 20)

/*
 * The file at path into *text (malloc'd, NUL-terminated; free it) and its length into *len
 * (it may hold NUL bytes: the caller decides). what names the kind of file in messages ("a
 * case file"). Errors (lks_err, -1): not a regular file, larger than max bytes, cannot be
 * read; LKS_E_MISSING when there is no such file.
 */
int lks_file_read(const char *path, size_t max, const char *what, char **text, size_t *len);

#endif
