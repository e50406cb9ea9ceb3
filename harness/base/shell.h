/*
 * shell.h: commands that lockstep prints for a person to paste into a shell ("create it
 * with: lockstep golden update 'my cases/x.ini' --run a"). Every such word goes through
 * lks_shell_quote, so that a path with a blank, a quote or a '$' pastes as one word and
 * runs nothing else.
 */
#ifndef LKS_HARNESS_SHELL_H
#define LKS_HARNESS_SHELL_H

#include <stddef.h>

/*
 * s as one shell word into buf (size bytes), returned for use in printf: s itself when
 * it holds only letters, digits and _ - . / , : = + @ % (and is not empty); else in single
 * quotes, a ' inside written '\''; a word with control characters in $'...' with \xNN
 * escapes, so that the command stays on one line and sends no control character to the
 * terminal (bash, zsh, ksh and busybox sh read it; dash before 0.5.13 does not, and no
 * POSIX quoting holds a control character on one line).
 * A word that does not fit is cut with its quotes closed.
 */
const char *lks_shell_quote(const char *s, char *buf, size_t size);

#endif
