/*
 * atomic_file.h: files and folders written aside and put in place whole, so that their
 * path holds the old content or the new one at every instant, whatever kills the writer.
 *
 * A file PATH is written into DIR/.NAME.tmp-XXXXXXXX beside it, a folder into
 * PARENT/.NAME.new-XXXXXXXX. The temporary is created exclusively (O_CREAT|O_EXCL, which
 * also refuses a symlink planted at that name) under a fresh random name, so neither a
 * symlink nor the leftover of a killed writer is ever followed, read or in the way. It is
 * flushed to disk (fsync) before the rename, the folder after it, so that a crash also
 * leaves the old or the new content. Every error path removes the temporary; a writer
 * killed with SIGKILL cannot, so the writer holds an flock on its temporary for its life,
 * and the next writer of the same path removes temporaries nobody holds.
 */
#ifndef LKS_HARNESS_ATOMIC_FILE_H
#define LKS_HARNESS_ATOMIC_FILE_H

#include <stdio.h>

typedef struct lks_atomic {
	FILE *f;                  /* a file: write here */
	char path[1024];          /* where the result goes */
	char tmp[1100];           /* the temporary: the file, or the folder to fill */
	int lock_fd;              /* a folder: the open temporary, flocked; -1: none */
	int through;              /* a file: path itself is written (lks_atomic_open) */
} lks_atomic;

/* Creates the temporary file of path (its folder must exist); a->f is open for writing.
   A path that is a symlink, a pipe or a device (-o /dev/stdout) is not replaced but
   written through: opened itself, its writes not atomic. */
int lks_atomic_open(lks_atomic *a, const char *path);
/* Flushes, syncs and renames the temporary over path; the temporary is gone either way. */
int lks_atomic_commit(lks_atomic *a);
/* Closes and removes the temporary; path stays as it was. Safe to call twice. */
void lks_atomic_abort(lks_atomic *a);

/* Creates the empty temporary folder a->tmp beside path (its parent must exist). */
int lks_atomic_dir_open(lks_atomic *a, const char *path);
/* Syncs what a->tmp holds (files only, no sub-folders) and swaps it in as path: with one
   atomic exchange where the kernel and file system have it (renameat2 RENAME_EXCHANGE),
   else the old folder renamed aside first; the old folder and all it holds are then
   removed, so the caller decides beforehand that path may be replaced. A path that is
   not a folder (a file, a symlink) is refused. The temporary is gone either way. */
int lks_atomic_dir_commit(lks_atomic *a);
/* Removes the temporary folder and what it holds; path stays as it was. */
void lks_atomic_dir_abort(lks_atomic *a);

/* Removes path, a file or a folder with what it holds (symlinks removed, never followed;
   16 levels deep at most); what cannot be removed is left. */
void lks_atomic_remove(const char *path);

#endif
