/*
 * opt.h: what every command line shares: options declared once in a table per command,
 * which both parses them and prints the usage (as git's parse_options), and the parsing of
 * option values, with messages that name who asked (the exit codes are status.h's).
 */
#ifndef LKS_HARNESS_OPT_H
#define LKS_HARNESS_OPT_H

#include <stdio.h>

#include "harness/base/status.h"

/* Prints "lockstep: <msg>" to stderr and returns LKS_EXIT_USAGE, for 'return lks_usage(...)'. */
int lks_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on lks_usage prints nothing (quiet 1) or prints again (0): a job's processes
   but process 0, which says once what all of them refuse. */
void lks_usage_quiet(int quiet);

/* Option values for subcommands; on bad input they print a usage message naming who
   ("bench gemm") and the option, and return LKS_EXIT_USAGE. */
int lks_opt_int(const char *who, const char *opt, const char *val, int lo, int hi, int *out);
int lks_opt_double(const char *who, const char *opt, const char *val, double lo, double hi,
                   double *out);
/* A path option's value (a file, a folder) as *out; an empty one is bad usage: it names
   nothing, and what it reaches would take it for something ("" opens a temporary SQLite
   database, stands for the default folder, or fails as a write). */
int lks_opt_path(const char *who, const char *opt, const char *val, const char **out);
/* Parses an ISA path name and forces it (LKS_ISA's effect, for one command). */
int lks_opt_isa(const char *who, const char *val);

/* ---- a command's options, declared once ---- */

enum lks_opt_kind {
	LKS_OPT_END = 0,
	LKS_OPT_FLAG,     /* no value: *(int *)value = 1 */
	LKS_OPT_INT,      /* *(int *)value: an integer in [lo, hi] */
	LKS_OPT_DOUBLE,   /* *(double *)value: a number in [lo, hi] */
	LKS_OPT_STRING,   /* *(const char **)value: the argument as given */
	LKS_OPT_PATH,     /* as STRING; an empty one is bad usage (lks_opt_path) */
	LKS_OPT_LIST,     /* repeatable: appended to *(lks_opt_list *)value */
	LKS_OPT_CHOICE,   /* one of choices (NULL-ended): *(int *)value = its index */
	LKS_OPT_CALL,     /* fn(the row, the name as typed, the argument or NULL, ctx) */
	LKS_OPT_TEXT,     /* no option: help lines shown as they are */
	LKS_OPT_INCLUDE,  /* the rows of another table (value: a const lks_option *) */
};

/* Strings gathered in order (a repeatable option, the arguments); v is malloc'd: free it. */
typedef struct lks_opt_list {
	const char **v;
	int n;
} lks_opt_list;

typedef struct lks_option lks_option;
typedef struct lks_opt_cmd lks_opt_cmd;
struct lks_option {
	enum lks_opt_kind kind;
	const char *name;         /* "--db"; several spellings as "-o, --out" */
	const char *arg;          /* its value in the usage ("FILE"); NULL: it takes none */
	void *value;
	/* The usage: lines joined by '\n', set at the help column; a leading '\n' starts them
	   on the line under the name. NULL: not shown (the usage's text says it). */
	const char *help;
	double lo, hi;            /* INT, DOUBLE */
	const char *const *choices;  /* CHOICE */
	/* CALL: 0, or an exit code after saying why (cmd->who first); name (as typed) lasts
	   only the call */
	int (*fn)(const lks_opt_cmd *cmd, const lks_option *o, const char *name, const char *arg);
};

#define LKS_OPT_FLAG(n, v, h) { LKS_OPT_FLAG, n, NULL, v, h, 0, 0, NULL, NULL }
#define LKS_OPT_INT(n, a, v, l, u, h) { LKS_OPT_INT, n, a, v, h, l, u, NULL, NULL }
#define LKS_OPT_DOUBLE(n, a, v, l, u, h) { LKS_OPT_DOUBLE, n, a, v, h, l, u, NULL, NULL }
#define LKS_OPT_STRING(n, a, v, h) { LKS_OPT_STRING, n, a, v, h, 0, 0, NULL, NULL }
#define LKS_OPT_PATH(n, a, v, h) { LKS_OPT_PATH, n, a, v, h, 0, 0, NULL, NULL }
#define LKS_OPT_LIST(n, a, v, h) { LKS_OPT_LIST, n, a, v, h, 0, 0, NULL, NULL }
#define LKS_OPT_CHOICE(n, a, v, c, h) { LKS_OPT_CHOICE, n, a, v, h, 0, 0, c, NULL }
#define LKS_OPT_CALL(n, a, f, h) { LKS_OPT_CALL, n, a, NULL, h, 0, 0, NULL, f }
/* --isa scalar|avx2|avx512: the CPU kernels' path forced (lks_opt_isa) */
int lks_opt_isa_call(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                     const char *arg);
#define LKS_OPT_ISA(h) LKS_OPT_CALL("--isa", "scalar|avx2|avx512", lks_opt_isa_call, h)
#define LKS_OPT_TEXT(h) { LKS_OPT_TEXT, NULL, NULL, NULL, h, 0, 0, NULL, NULL }
#define LKS_OPT_INCLUDE(t) { LKS_OPT_INCLUDE, NULL, NULL, (void *)(t), NULL, 0, 0, NULL, NULL }
#define LKS_OPT_END() { LKS_OPT_END, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL }

/* A command: who it is in messages ("run", "golden update"), the text of its --help above
   the options (through "options:\n") and below them, and the column its options' help
   starts at (2 + width + 1). */
struct lks_opt_cmd {
	const char *who;
	const char *usage, *tail;
	int width;
	void (*more)(FILE *out);   /* NULL, or what follows usage before the options (tables) */
	void (*after)(FILE *out);  /* NULL, or what follows the options before tail */
	void *ctx;                 /* for CALL rows */
};

/* lks_opt_parse's answer after --help: the usage was printed; exit 0. */
#define LKS_OPT_HELP (-1)

/* Parses argv[1..argc) by the table opts (ended by LKS_OPT_END): each option into its
   value ("--name value" or "--name=value"); the other arguments, and all after "--", into
   *args in order (NULL: an argument is bad usage). Returns 0; LKS_OPT_HELP after printing the usage
   on stdout (-h, --help); else the exit code after a message that names the command and
   the option: an unknown option, a missing or bad value. */
int lks_opt_parse(const lks_opt_cmd *cmd, const lks_option *opts, int argc, char **argv,
                  lks_opt_list *args);
/* The --help text: usage, a line per option (and its help), tail. */
void lks_opt_usage(const lks_opt_cmd *cmd, const lks_option *opts, FILE *out);
/* The exit code of lks_opt_parse's nonzero answer: 0 after --help. */
static inline int lks_opt_exit(int rc)
{
	return rc == LKS_OPT_HELP ? LKS_EXIT_OK : rc;
}

#endif
