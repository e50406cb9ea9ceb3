/*
 * name.h: the one rule for the names a user gives things: cases (the file name without
 * .ini), runs, checks and combos. A name ends up in file names (golden/<class>/<case>/
 * <run>.tsv), in --set run.NAME.key=value, in SQL rows, reports and printed commands, so it
 * must be safe in all of them:
 *
 *   1 to LKS_NAME_RULE_MAX characters: letters, digits, '_', '-', '.' and '+'
 *   (cuda-12.4, fp8_w2, gcc+lto), the first a letter, a digit or '_'
 *
 * which leaves out empty names, '.', '..' and hidden names, '/', blanks, quotes and control
 * characters, and names that a command line would take for an option.
 */
#ifndef LKS_HARNESS_NAME_H
#define LKS_HARNESS_NAME_H

#include <stddef.h>

#define LKS_NAME_RULE_MAX 63

/* 0 when the len bytes at s make a good name; else -1 with lks_err "bad <what> name '...':
   want ..." (what: "run", "check", "combo", "case"). */
int lks_name_check(const char *what, const char *s, size_t len);

/* "a, b, c": the names of the rows of a table (recipes, check kinds, choices of a key), for
   messages and help. rows: n rows of stride bytes, each with its name as a const char * at
   offset off (n < 0: the rows up to a NULL name), into buf. */
const char *lks_names_join(const void *rows, size_t stride, size_t off, int n, char *buf,
                           size_t size);

#endif
