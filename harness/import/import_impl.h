/*
 * import_impl.h: what the parsers of the import room share, and nothing outside the room
 * includes: the pieces of a line that every line format reads alike (import_lines.c), the
 * JSON values of the JSON formats (import_json.c), and a format's quick reader of its
 * common lines. Inlined where a line's bytes are read.
 */
#ifndef LKS_HARNESS_IMPORT_IMPORT_IMPL_H
#define LKS_HARNESS_IMPORT_IMPORT_IMPL_H

#include <float.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import.h"

/* Past the escape sequences at r (the line NUL ended, no NUL inside): ESC '[',
   parameters, one final byte 0x40-0x7e; any other ESC with the byte after it. The one
   reading of a sequence: lks_strip_ansi's and lks_titan_fast's. */
static inline __attribute__((always_inline)) const char *lks_esc_skip(const char *r)
{
	while (*r == 0x1b) {
		/* a colour, ESC '[' two digits 'm', the most common at once */
		if (r[1] == '[' && (unsigned)(r[2] - '0') < 10 && (unsigned)(r[3] - '0') < 10
		    && r[4] == 'm') {
			r += 5;
			continue;
		}
		if (*++r == '[')
			for (r++; *r && (unsigned char)(*r - 0x40) > 0x3e; r++)
				;
		if (*r)
			r++;
	}
	return r;
}

/* "step" and "rank": what a record is keyed by, and jsonl's keys for it (export.c writes a
   metric beside them, which would overwrite them): no metric's name. */
static inline int lks_import_name_reserved(const char *name, size_t len)
{
	return len == 4 && (!memcmp(name, "step", 4) || !memcmp(name, "rank", 4));
}

/* ASCII classes, as <ctype.h>'s in the C locale (lockstep sets no other) without a call
   for the table a byte: a prefix is read on every line. */
static inline int lks_digit(char c) { return (unsigned)(c - '0') < 10; }
static inline int lks_alpha(char c) { return (unsigned)((c | 0x20) - 'a') < 26; }

/* Digits at p as *rank, then what follows them; NULL where there are none. Digits over
   LKS_IMPORT_MAX_RANK are a rank still, LKS_IMPORT_MAX_RANK + 1, which a line that is a
   record may not name (lks_import_lines_at): stored as rank 0 it would pass unseen. */
static inline const char *lks_rank_digits(const char *p, int *rank)
{
	long r = 0;

	if (!lks_digit(*p))
		return NULL;
	for (; lks_digit(*p); p++)
		if (r <= LKS_IMPORT_MAX_RANK)  /* no further: it is too big already */
			r = r * 10 + (*p - '0');
	*rank = r > LKS_IMPORT_MAX_RANK ? LKS_IMPORT_MAX_RANK + 1 : (int)r;
	return p;
}

/* lks_import_decimal_z, here where a line's values are read: inlined into the readers
   of each format, for whom commas is a constant. */
static inline __attribute__((always_inline)) size_t lks_decimal_z(const char *s, int commas,
                                                                  double *out, int64_t *dec)
{
	const char *p = s + (*s == '-');
	uint64_t m = 0;
	int digits = 0, frac = 0;
	unsigned d;

#if FLT_EVAL_METHOD != 0
	return 0;
#endif
	for (;;) {  /* the NUL ends the digits: no length to check */
		for (; (d = (unsigned)(*p - '0')) < 10; p++, digits++)
			m = m * 10 + d;
		if (!(commas && *p == ',' && digits && (unsigned)(p[1] - '0') < 10))
			break;
		p++;
	}
	if (*p == '.') {
		const char *f = ++p;

		for (; (d = (unsigned)(*p - '0')) < 10; p++)
			m = m * 10 + d;
		frac = (int)(p - f);
		digits += frac;
	}
	if (digits == 0 || digits > 15 || *p == 'e' || *p == 'E')
		return 0;  /* 15 digits: m < 10^15 < 2^53, so frac <= 15 */
	*out = frac ? (double)m / lks_import_pow10[frac] : (double)m;
	*dec = frac <= 14 && !(m == 0 && *s == '-')
	       ? (int64_t)((uint64_t)(*s == '-' ? -(int64_t)m : (int64_t)m) << 4) | frac
	       : LKS_IMPORT_NO_DEC;
	if (*s == '-')
		*out = -*out;
	return (size_t)(p - s);
}

/* The rank a line's prefix names, and the text after it (import_lines.c):
   - "[rankN]:", "[defaultN]:": torchrun's --tee prefix, its role's name (letters or '_')
     and the global rank; the line names its rank (*ranked 1);
   - "N: ": srun --label's task number, blanks before it allowed; a torchrun prefix after it
     gives the rank, else N stands for it, but not as a name: a task may run several
     ranks that print alike (*ranked 0);
   - neither: rank 0, *ranked 0. */
const char *lks_import_rank_prefix(const char *s, int *rank, int *ranked);
/* Where the torchrun prefix ("[rank3]:", "[default0]:") that begins last in s[0, len)
   begins, its length in *plen; -1 where none does. torchrun writes a line's pieces that a
   carriage return ended (a progress bar's) with their prefix and no newline, so one line
   of its output may hold several, of several processes (import_lines.c). */
long lks_import_last_prefix(const char *s, size_t len, size_t *plen);
/* Whether a name the table lacks (len bytes) is performance by its words
   (lks_import_perf_words, or a rate "/s"): import_label.c's rule, a tag map's too. */
int lks_import_sounds_performance(const char *label, size_t len);
/* The metric a tag map reads label (len bytes) as, or NULL (import_tag_map.c); the map's
   number, which no other map of the process has had (0 for NULL). */
const lks_import_metric *lks_import_tag_map_find(const lks_import_tag_map *m, const char *label,
                                                 size_t len);
uint64_t lks_import_tag_map_id(const lks_import_tag_map *m);
/* Whether the map of this thread's import names label (len bytes): a tag the reader would
   pass over by its words (Megatron's " vs samples") is read when the map names it. */
int lks_import_label_mapped(const char *label, size_t len);
/* A performance metric's value "N/A": not measured (lks_import_label_performance). */
int lks_import_unmeasured(lks_import_fmt fmt, const char *l, size_t llen, const char *v,
                          size_t vlen);
/* Bad input at path:line, LKS_E_BAD_INPUT: a label's value (answer: lks_import_number's,
   which says why where the number is beyond a double); a step (what) the log writes as the
   digits v, over LKS_IMPORT_MAX_STEP or none, as jsonl's "step" says it. */
int lks_import_bad_value(const char *path, long line, const char *label, size_t llen,
                         const char *v, size_t vlen, int answer);
int lks_import_bad_step(const char *path, long line, const char *what, const char *v,
                        size_t vlen);
/* The fields of a line from p to end, "LABEL<sep>VALUE[UNIT]" separated by delim (',',
   '|'; blanks around each; sep ' ': the value is the field's last word), each added to rec
   under its label (fmt's table, import_label.c) with the decimals it was written with; a
   unit (letters, '%', '/': ms, %, ...) after the number is the label's metric's. A value
   is any number lks_import_number takes, "nan" and "inf" too (Python's format prints a NaN
   loss so: a NaN is stored, the first sign of what a check looks for). A performance value
   below 0 is one not measured yet, and left out. 1; a field without its
   value, or a bad number, is bad input at path:line (LKS_E_BAD_INPUT). */
int lks_import_fields(lks_import_rec *rec, lks_import_fmt fmt, const char *p,
                      const char *end, char delim, char sep, const char *path);
/* The rest of f (path names it) into *text (*len bytes, NUL ended; free it), a document
   read whole (what: "a golden file") within the limit of LKS_GOLDEN_FILE_MAX
   (harness/base/file.h), from a file or a pipe ('zcat FILE | lockstep import ... -'): 0;
   LKS_E_BAD_INPUT (lks_err) for a device, which may never end (/dev/zero), a socket, or
   more than the limit, a file over it before a byte is read, a pipe at the first byte over
   it; -1 (no memory, a read error). (import_json.c) */
int lks_import_json_slurp(FILE *f, const char *path, const char *what, char **text,
                          size_t *len);
/* Python's json module writes NaN, Infinity and -Infinity bare (allow_nan, its default),
   which JSON lacks: s with each such word outside a string written as the string lockstep
   reads ("nan", "inf", "-inf"), malloc'd, or NULL when there is none (or no memory); for
   a document jansson refused (import_json.c). */
char *lks_import_json_bare_nonfinite(const char *s);
/* The same with a bare NaN written as the JSON text nan_as (a golden file's "nan" is a step
   not logged, its bare NaN a NaN logged: "\"" LKS_JSON_LOGGED_NAN "\""). */
char *lks_import_json_bare_nonfinite_as(const char *s, const char *nan_as);
#define LKS_JSON_LOGGED_NAN "NaN, logged"
/* A record a whole-file format gathers from several lines or events (import_composer.c,
   import_tensorboard.c), while *open: to sink, counted, where it holds metrics; then
   closed. 0, or the sink's answer. */
int lks_import_rec_close(lks_import_rec *rec, int *open, lks_import_sink sink, void *arg,
                         lks_import_counts *c);
/* An event file of an add_scalars series (SummaryWriter.add_scalars writes each series of
   a chart into a folder of its own within the run's, under the chart's tag), and the
   name of that folder, which names the series. */
typedef struct lks_import_series {
	const char *path;
	const char *folder;
} lks_import_series;
/* The TensorBoard event file f (at path) read with the n series files its writer's process
   wrote beside it (import_folder.c pairs them): each series' tag read as "<tag>/<series>"
   (then mapped as any tag), its values in the records of their steps, a step the file
   lacks a record of its own, all in step order (import_tb_series.c). A series' value
   of a metric the file holds at that step must be the same bits. Each series file is
   checked as any event file, before the run's file, and its values held in memory (a
   chart's few, 32 bytes each) while the run's file streams through; 0, LKS_E_BAD_INPUT,
   or the sink's answer. */
int lks_import_tensorboard_series(const char *path, FILE *f, const lks_import_series *series,
                                  int n, lks_import_sink sink, void *arg,
                                  lks_import_counts *c);
/* The records of TensorBoard event file f (at path) from where its descriptor is (a
   record's start: byte 0, or a part's start), those begun within limit bytes, numbered on
   from line, to sink (import_tensorboard.c). series: an add_scalars series folder's path
   below the run's folder, its tags read as "<tag>/<key>"; NULL: as written. 0,
   LKS_E_BAD_INPUT (naming the file and byte offset), or the sink's answer. */
int lks_tb_parse(const char *path, FILE *f, long line, uint64_t limit, const char *series,
                 lks_import_sink sink, void *arg, lks_import_counts *c);
/* rec begun empty at step, read at line: its header set, its metrics left as they are
   (none counts: each is written whole as it is added; a memset of the 3 KiB was some 6%
   of an import's CPU) */
static inline void lks_tb_rec_start(lks_import_rec *rec, int step, long line)
{
	rec->line = line;
	rec->step = step;
	rec->rank = 0;
	rec->ranked = 0;
	rec->counted = 0;
	rec->n = 0;
	rec->layout = 0;
}

/* The length of the data of the TFRecord whose 12-byte header is h, where the header's
   CRC checks and the length is no more than an event's most; else -1 (import_tensorboard.c) */
int64_t lks_tb_head_len(const uint8_t *h);
/* The length of the data of the record at w[p] where it ends within w[0..n) and both its
   CRCs check, else -1 (the header's CRC first: most places that are no record fail it) */
int64_t lks_tb_record_len(const uint8_t *w, size_t n, size_t p);
/* The wall times of the event file at path (import_tb_peek.c): its first record's and its
   last record's, in seconds. 0; 1 where the file says no time (it is empty, or its writer
   wrote none: then *first and *last are -1); LKS_E_BAD_INPUT where it has records and a
   time is not known (a damaged record, no record ending where the file does, no Event) or
   it cannot be read, the message naming the file; -1 (out of memory). */
int lks_tb_wall_span(const char *path, double *first, double *last);
/* Whether the event file at path is a record of add_hparams (import_tb_peek.c): 1 where one
   of its first records holds a summary tagged "_hparams_/...", else 0 */
int lks_tb_hparams(const char *path);
/* "dir/name", malloc'd (free it): a file or folder of a folder given; NULL out of memory */
static inline char *lks_import_path_in(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* A whole-file format's lines (import_titan_losses.c, import_composer.c,
   import_hf_trainer.c): each line of f as lks_import_reader_next hands it on (a NUL, or a
   line too long after its last carriage return: bad input at path:line), its newline and
   '\r' taken off, and what a progress bar drew before a carriage return or a cursor moved
   up in it, to fn with its length and its number in the file (c->lines counts them) until
   fn returns other than 0, which is returned. The _at form numbers them on from at (the
   lines a format read of f before). */
int lks_import_each_line(const char *path, FILE *f, lks_import_counts *c,
                         int (*fn)(void *arg, char *line, size_t len, long at), void *arg);
int lks_import_each_line_at(const char *path, FILE *f, long at, lks_import_counts *c,
                            int (*fn)(void *arg, char *line, size_t len, long at), void *arg);
/* A step's digits at d, then term, then the fields after it (lks_import_fields): 0
   where d holds no digits or term does not follow them (no metric line); a step too big
   is bad input, named as what. */
int lks_import_step_fields(lks_import_rec *rec, lks_import_fmt fmt, const char *d,
                           const char *end, char term, char delim, char sep, const char *what,
                           const char *path);

/* A JSON Lines line at (of path) as one object (import_json.c): *out the object (decref it),
   or NULL for a blank line; Python's bare NaN, Infinity and -Infinity read as the strings
   lockstep takes. 0, or LKS_E_BAD_INPUT (lks_err naming path:at): not JSON, not an object,
   or a key twice. */
int lks_import_json_object_line(const char *path, long at, const char *line, json_t **out);

/* The step and rank a tensor dump's path says, for a format whose files do not
   (import_tensors.c): the step the number after the last "step" or "iteration" in the path
   ("step_2/", "step-2", "iteration3"; not both), else none_step (0, or
   LKS_TENSOR_STEP_OF_FILE: the file's place, import.h); the rank the number after "rank" in
   the file's name ("rank_3_activations.log", "rank3.json"), else 0. 0, or LKS_E_BAD_INPUT
   (lks_err naming path) where either is too big or both words give a step. */
int lks_tensor_path_place(const char *path, int none_step, int *step, int *rank);

/* A format's quick reader of its common lines (lks_import_format.quick), tried on each
   line before the whole way (lks_import_lines_at): its state, size bytes, zeroed and
   opened once per reader of a file; line gives 1 a record, 0 no metric line, -1 not its
   to say (rec is then of no use: the whole way reads the line, and missed is told). */
struct lks_import_quick {
	size_t size;
	void (*open)(void *state);
	int (*line)(void *state, const char *s, size_t len, lks_import_rec *rec);
	void (*missed)(void *state);
};

/* The JSON formats' values (import_json.c). A JSON value as a metric: a number, or a
   string that spells NaN or an infinity ("nan", "-NaN", "+nan", "inf", "-inf":
   Megatron-LM's golden checker takes any sign and case); a number in a string is not one. */
int lks_import_json_number(const json_t *v, double *out);
/* A whole number lo..hi: a JSON integer, or (a line read with every integer as a double,
   JSON_DECODE_INT_AS_REAL in flags) a double that is one. */
int lks_import_json_int(const json_t *v, int lo, int hi, size_t flags, int *out);
/* A number of the JSON text s (n bytes, its first line line) that no double holds as bad
   input at its file:line (LKS_E_BAD_INPUT); 0 where there is none. jansson reads one nearer
   0 than the least double as 0, and fails one over the largest ("real number overflow")
   without saying which. */
int lks_import_json_range_err(const char *path, long line, const char *s, size_t n);

#endif
