/*
 * import.h: runs of other training frameworks read from their logs (lockstep import;
 * DESIGN.md, Imported runs). A format is one row of the table in import.c: its name and its
 * parser, which reads one file and hands each (step, rank) it finds to a sink as a record
 * of named metrics. The driver (lks_import_files) checks the records (steps only forward
 * per rank, a step repeated only with the same values, every rank with steps, at most
 * LKS_IMPORT_MAX_NAMES metric names) and stores them as one run in one transaction: any bad
 * line stores nothing.
 *
 * Metrics have canonical names and a kind, numerics or performance, from one table (the
 * store's, import_rec.h), with each format's labels for them (import_label.c); a name no
 * row knows is stored as the log wrote it (letters, digits and '_' kept, anything else
 * '_'), as performance where its words say time, speed, memory or power ("step_time_ms",
 * "tokens/s"), else numerics.
 *
 * Parsers stream: lines read a block at a time (lks_import_reader), so a log of any length
 * goes through in constant memory. A megatron-golden file is one JSON document and is read
 * whole (it holds one value per metric and step, not a log).
 */
#ifndef LKS_HARNESS_IMPORT_IMPORT_H
#define LKS_HARNESS_IMPORT_IMPORT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "harness/store/import_rec.h"
#include "harness/store/tensor_trace.h"
#include "harness/store/trace_store.h"

/* A line longer than this is bad input: no framework writes one, and a bound keeps the
   memory constant. */
#define LKS_IMPORT_LINE_MAX 65536
/* A parser's or the driver's return for bad input (the message names file:line) is
   LKS_E_BAD_INPUT (harness/base/status.h): exit 2. */

/* The formats, in the order of their ids (an id is never stored: a run names its format as
   its backend, 'import:<name>'): X(ID, row), the row defined in the format's own file
   (import_<format>.c). Adding a format is its file, its line here and its source in
   CMakeLists.txt. */
#define LKS_IMPORT_FORMATS(X) \
	X(LKS_IMPORT_TORCHTITAN, lks_import_torchtitan_format) \
	X(LKS_IMPORT_MEGATRON_LOG, lks_import_megatron_log_format) \
	X(LKS_IMPORT_MEGATRON_GOLDEN, lks_import_megatron_golden_format) \
	X(LKS_IMPORT_JSONL, lks_import_jsonl_format) \
	X(LKS_IMPORT_NANOGPT, lks_import_nanogpt_format) \
	X(LKS_IMPORT_MAXTEXT, lks_import_maxtext_format) \
	X(LKS_IMPORT_TITAN_LOSSES, lks_import_titan_losses_format) \
	X(LKS_IMPORT_NEMO, lks_import_nemo_format) \
	X(LKS_IMPORT_COMPOSER, lks_import_composer_format) \
	X(LKS_IMPORT_HF_TRAINER, lks_import_hf_trainer_format) \
	X(LKS_IMPORT_TENSORBOARD, lks_import_tensorboard_format) \
	X(LKS_IMPORT_TENSOR_JSONL, lks_import_tensor_jsonl_format) \
	X(LKS_IMPORT_TITAN_NUMERICS, lks_import_titan_numerics_format) \
	X(LKS_IMPORT_MEGATRON_TENSORS, lks_import_megatron_tensors_format) \
	X(LKS_IMPORT_TE_DEBUG, lks_import_te_debug_format) \
	X(LKS_IMPORT_DEBUGMODE, lks_import_debugmode_format)

typedef enum lks_import_fmt {
#define LKS_IMPORT_FMT_ID(id, row) id,
	LKS_IMPORT_FORMATS(LKS_IMPORT_FMT_ID)
#undef LKS_IMPORT_FMT_ID
	LKS_IMPORT_NFMT
} lks_import_fmt;

/* The row whose label in fmt is label (len bytes), or NULL: the format's own labels
   (import_label.c), then the other spellings of forks and versions. */
const lks_import_metric *lks_import_metric_label(lks_import_fmt fmt, const char *label,
                                                 size_t len);
/* The label fmt writes for canonical name, or NULL when it has none (an export's). */
const char *lks_import_label_of(lks_import_fmt fmt, const char *name);
/* Whether label (len bytes) in fmt is a performance metric of the table. Such a metric
   may be "not measured" at a step, and then no value of it is stored there: torchtitan
   prints "mfu: N/A" where FP8 or MX quantization would make MFU misleading, and a jsonl
   writer may give null. A numerics metric holds a number, or nan. */
int lks_import_label_performance(lks_import_fmt fmt, const char *label, size_t len);
/* The words (NULL ended) that make a name the table lacks performance, as one word of its
   label in any case; so does a rate "/s". */
extern const char *const lks_import_perf_words[];

/* A label a format's lines gave at one place of their records, and the metric it stands
   for: what lks_import_rec_add remembers, per format and place, of the lines before. */
typedef struct lks_import_label {
	char label[48];
	size_t len;                       /* 0: none remembered */
	char name[LKS_IMPORT_NAME_MAX];   /* NUL padded */
	size_t nlen;
	lks_metric_kind kind;
} lks_import_label;

/* This thread's remembered labels of fmt, LKS_IMPORT_MAX_METRICS places. A record whose
   metrics 0 .. n - 1 have those places' labels, in that order, is what lks_import_rec_add
   makes of them: the entries' names and kinds (no name twice among them). *changes: the
   entries' state, this thread's, a number that changes whenever an entry of any format
   does, to one that no entries of any thread have had (what was learnt of the entries
   holds while it stays; 0: none learnt yet). */
const lks_import_label *lks_import_labels(lks_import_fmt fmt, const uint64_t **changes);

/* The entry's name and kind and the value into rec's place, as its last metric (rec->n
   place + 1). The entry is read whole before the record is written (a store through the
   name's bytes could otherwise be the entry's, read again after each); a short name goes
   in as two words (it is NUL padded). */
static inline void lks_import_rec_put(lks_import_rec *rec, int place, const lks_import_label *e,
                                      double value, int64_t dec)
{
	int nlen = (int)e->nlen;
	lks_metric_kind kind = e->kind;

	if (nlen < 16) {
		uint64_t n0, n1;

		memcpy(&n0, e->name, 8);
		memcpy(&n1, e->name + 8, 8);
		memcpy(rec->m[place].name, &n0, 8);
		memcpy(rec->m[place].name + 8, &n1, 8);
	} else {
		memcpy(rec->m[place].name, e->name, (size_t)nlen + 1);
	}
	rec->m[place].nlen = nlen;
	rec->m[place].kind = kind;
	rec->m[place].value = value;
	rec->m[place].dec = dec;
	rec->n = place + 1;
}

/* Adds a metric to rec by its label in fmt (len bytes): the canonical name and kind from
   the table, or the label made a name. A second value of one name, or more than
   LKS_IMPORT_MAX_METRICS, is bad input: lks_err naming path:line, LKS_E_BAD_INPUT. The
   _dec form takes the value's decimal as read too (dec: LKS_IMPORT_NO_DEC, or as the
   number readers give it): the decimals the log printed it with, its precision as the
   store keeps it (import_block.h); a value of text is given with it. */
int lks_import_rec_add(lks_import_rec *rec, lks_import_fmt fmt, const char *label, size_t len,
                       double value, const char *path);
/* lks_import_rec_add takes a value without its text (a JSON document's number, which
   jansson gives as a double) as written in its shortest form, the form Python's json
   writes: its decimal as lks_import_rec_add_dec takes it, the fewest decimals (0 to 14,
   at most 15 digits) that give v back, or LKS_IMPORT_NO_DEC (import_number.c). */
int64_t lks_import_shortest_dec(double v);
/* dec (as lks_import_rec_add_dec takes it) with at least frac decimals: a writer that
   rounds to frac decimals and drops the zeros after (Python's round() then repr: "10.5"
   for 10.5000) printed that many; as it was where it has more, or where the digits would
   pass 15 or frac 14. */
int64_t lks_import_dec_widen(int64_t dec, int frac);
/* The same for a writer of sig significant digits (Python's '{:.4}', zeros dropped): the
   decimals sig digits of v need; a number written with no decimals stays whole. */
int64_t lks_import_dec_sig(int64_t dec, double v, int sig);
int lks_import_rec_add_dec(lks_import_rec *rec, lks_import_fmt fmt, const char *label,
                           size_t len, double value, int64_t dec, const char *path);

/* What a parse counted: lines read, records handed on, lines that held no metrics. */
typedef struct lks_import_counts {
	long lines, records, ignored, repeated;
	long restarts;             /* ranks a later file took back to a step logged before */
	long cut;                  /* event files whose last record is cut short at their end
	                              (a writer killed while writing it): that record unread */
	char cut_first[320];       /* the first such: "'FILE' at byte N" */
} lks_import_counts;

/* Called for each record; returns 0 to go on, else the parse stops and returns that. */
typedef int (*lks_import_sink)(void *arg, const lks_import_rec *rec);

/* The record of one line (len bytes at s, NUL ended; rank and line already in rec): 1, 0
   when the line holds no metrics, or LKS_E_BAD_INPUT. */
typedef int (*lks_import_line_fn)(const char *s, size_t len, lks_import_rec *rec,
                                  const char *path);

/* A tensor trace format's sink: each tensor's record (tensor_trace.h), in the order read;
   0 to go on, else the parse stops and returns that. */
/* A record's step that says: the file's place among the files of its rank, 1 for the first
   (a dump that says no step, one file a step: the driver gives the files in the order
   given, a folder's in name order); the driver sets it at the file's first record. */
#define LKS_TENSOR_STEP_OF_FILE (-2)
typedef int (*lks_tensor_sink)(void *arg, const lks_tensor_rec *t);

/* A format's label and the canonical name of the table it stands for (import_rec.h). */
typedef struct lks_import_label_row {
	const char *label, *name;
} lks_import_label_row;

/* A format: one row, in the format's own file (import_<format>.c), listed in the table of
   import.c. A parser returns 0, LKS_E_BAD_INPUT (bad input, lks_err "'path':line: ..."),
   -1 (any other failure) or what the sink returned. */
typedef struct lks_import_format {
	lks_import_fmt id;
	const char *name;
	const char *what;
	/* a whole file (lks_import_format_parse); NULL: a line format, read by the loop of the
	   line formats (lks_import_lines) over its line */
	int (*parse)(const char *path, FILE *f, lks_import_sink sink, void *arg,
	             lks_import_counts *c);
	lks_import_line_fn line;  /* a line format's line (lks_import_lines_at); NULL: not one */
	int json_lines;           /* every line one record (JSON Lines): a line too long is bad
	                             input, and the last may lack its newline */
	/* its labels for the table's metrics, the first of a name the one an export writes,
	   NULL ended (NULL: the table's names are its labels); then other spellings (forks,
	   versions), NULL: none */
	const lks_import_label_row *labels, *aliases;
	const struct lks_import_quick *quick;  /* its common lines read at once (import_impl.h);
	                                          NULL: none */
	/* a whole-file format read in parts at once (import_parts.c), as a line format is:
	   parse_at reads from where f's descriptor is (a record's start) at most limit bytes
	   of records begun (UINT64_MAX: to the end), numbering them on from line; cut gives
	   where a part starting near byte at of the file fd (size bytes) may start, 0 where
	   none may before the end. NULL: read whole, by one reader */
	int (*parse_at)(const char *path, FILE *f, long line, uint64_t limit,
	                lks_import_sink sink, void *arg, lks_import_counts *c);
	off_t (*cut)(int fd, off_t at, off_t size);
	/* a tensor trace's format (tensor_trace.h; import_tensors.c drives it): reads a whole
	   file, each tensor's record to sink; NULL: a format of steps' records */
	int (*tensor_parse)(const char *path, FILE *f, lks_tensor_sink sink, void *arg,
	                    lks_import_counts *c);
	const char *tensor_files; /* a folder given: its files whose names match (fnmatch) one
	                             of these patterns, '|' between two ("*.json|*.txt") */
	const char *tensor_folder; /* a folder given that holds none: this subfolder's, where
	                              the framework's log folder keeps them; NULL: none */
} lks_import_format;

/* The rows, one per format's file. */
#define LKS_IMPORT_FMT_ROW(id, row) extern const lks_import_format row;
LKS_IMPORT_FORMATS(LKS_IMPORT_FMT_ROW)
#undef LKS_IMPORT_FMT_ROW

/* The format called name, or NULL (lks_err listing the known ones); the i-th (its id); the
   one whose line function is line, NULL for none (a test's own). */
const lks_import_format *lks_import_format_find(const char *name);
const lks_import_format *lks_import_format_at(int i);
/* The masked CRC32C a TFRecord (a TensorBoard event file's record) keeps of its length's 8
   bytes and of its data (import_tensorboard.c). */
uint32_t lks_tfrecord_crc(const void *data, size_t n);
const lks_import_format *lks_import_format_of_line(lks_import_line_fn line);

/* A whole file f (named path) read as fmt, each record to sink: its parse, or a line
   format's loop over its line. */
int lks_import_format_parse(const lks_import_format *fmt, const char *path, FILE *f,
                            lks_import_sink sink, void *arg, lks_import_counts *c);

/* What lks_import_number and lks_import_step say of text they do not take, besides -1
   (no number): a number beyond what they hold. For a double, both ways: a magnitude over
   DBL_MAX reads as an infinity, and one that is not 0 but under half the least subnormal
   (4.9e-324) reads as 0; strtod calls both a range error. Neither is a value a log writer
   prints from a double (it prints an infinity as "inf", a 0 as "0", and a subnormal as a
   number that reads back as that subnormal, which is taken), so both are bad input, said
   alike in every format (lks_import_number_why). */
#define LKS_IMPORT_NUMBER_OVER (-3)
#define LKS_IMPORT_NUMBER_UNDER (-4)

/* A number as a log writes it, the len bytes at s whole: strtod's decimal forms (1.5,
   1.234E+00, a subnormal), "nan", "inf", "-inf" (any case); thousands separators ','
   when commas is set (torchtitan's tps: 3,502). 0, -1 when it is not one number, or
   LKS_IMPORT_NUMBER_OVER / _UNDER. */
int lks_import_number(const char *s, size_t len, int commas, double *out);
/* The same, with the number's decimal where the fast path reads it (*dec, as
   lks_import_decimal_prefix gives it), else LKS_IMPORT_NO_DEC. */
int lks_import_number_dec(const char *s, size_t len, int commas, double *out, int64_t *dec);
/* Why lks_import_number refused a number, from its answer, as the end of a message that
   quotes it: ": ..." (which way, and why no logged double reads so) for
   LKS_IMPORT_NUMBER_OVER / _UNDER, "" for any other. */
const char *lks_import_number_why(int answer);
/* A step or iteration number as a log writes it, the len bytes at s whole: digits only.
   0, -1 when it is none, LKS_IMPORT_NUMBER_OVER when it is over LKS_IMPORT_MAX_STEP. */
int lks_import_step(const char *s, size_t len, int *step);
/* The decimal that starts s (n bytes at most), when Clinger's fast path reads it exactly:
   its digits ('-', digits with commas between two of the integer part's when commas is
   set, '.', digits, an exponent) make an integer m < 2^53 (15 digits at most) and its
   power of ten e is within +-22; then m and 10^e are exact doubles, and the one product or
   quotient of the two is rounded once, to nearest, which is what strtod returns. Its
   length, and *out; 0 for anything else (strtod's work). */
size_t lks_import_number_prefix(const char *s, size_t n, int commas, double *out);
/* The same, with the number's decimal (*dec, as lks_import_rec_add_dec takes it): the
   digits' integer and the count of digits after the point, where the exponent leaves that
   count from 0 to 14 and the number is not -0 (the layout reads a 0 back as +0);
   else LKS_IMPORT_NO_DEC. */
size_t lks_import_decimal_prefix(const char *s, size_t n, int commas, double *out,
                                 int64_t *dec);
/* lks_import_decimal_prefix of the NUL-ended s, where the number has no exponent (a
   line's values are read in place, up to the NUL after the line: no length checked a
   digit); 0 where it has one, or is none, or not one the fast path reads. In
   import_lines.c; the readers have it inlined (import_impl.h). */
size_t lks_import_decimal_z(const char *s, int commas, double *out, int64_t *dec);

/* Lines of a file read a block at a time (import_reader.c). With a file descriptor under
   f (a file, a pipe; nothing read through f before) each read() takes what is there, up to
   a block: a pipe's line reaches the parser as soon as it is written. A stream without one
   (fileno -1: lockstep import --follow's, whose reads wait for the file to grow; fmemopen)
   is read up to one newline at a time, so that a line is handed on once it is whole. The
   memory is one block, whatever the length of the file or its lines. */
typedef struct lks_import_reader {
	const char *path;
	FILE *f;
	int fd;                   /* -1: f read up to a newline at a time */
	char *buf;                /* (cap + 1 + LKS_IMPORT_SLACK) lines being read: [beg, end)
	                             not yet handed on */
	size_t cap, beg, end, chunk;
	size_t nul;               /* the first NUL byte in [beg, end), or SIZE_MAX */
	int eof;
	int cut;                  /* the line handed on was longer than LKS_IMPORT_LINE_MAX - 1
	                             bytes and cut at its carriage returns */
	int over;                 /* the line being read: what follows its last carriage return
	                             so far is longer than a line may be (and was dropped) */
	long line;                /* lines handed on (and before: see lks_import_lines_at) */
	uint64_t limit;           /* bytes still to read through fd (UINT64_MAX: no end) */
} lks_import_reader;

/* The most bytes before the first carriage return of a line cut (lks_import_reader_next)
   that are kept: a prefix naming the rank, srun's "12: " or torchrun's "[default0]:". */
#define LKS_IMPORT_LINE_HEAD 256

/* Bytes that may be read past the NUL of a line a reader hands on (they are the reader's,
   set, of no line): a label of up to 48 bytes is compared a word at a time however short
   the line. */
#define LKS_IMPORT_SLACK 64

/* Where bytes s[0..n) begin as a compressed file does (gzip, zstd, xz, bzip2): the command
   that decompresses it ("zcat", ...), else NULL: a log given compressed is named as such. */
const char *lks_import_compressed(const char *s, size_t n);

/* The bytes every reader of this process has read so far, added to as each block is read
   (a part read again counts again): what 'lockstep import' shows its progress by. */
uint64_t lks_import_bytes_read(void);

/* Opens a reader of f; chunk: 0, or the most bytes one read takes with the least buffer
   (a test's: lines cut anywhere and moved to the buffer's start often). 0, or -1 (no
   memory). */
int lks_import_reader_open(lks_import_reader *r, const char *path, FILE *f, size_t chunk);
void lks_import_reader_close(lks_import_reader *r);
/* The next line, without its newline: *s (NUL ended, the reader's until the next call,
   the caller may change it) and *len. Returns 1 a line ('\r' before its newline dropped),
   2 the last line, not ended by a newline (a parser says it is truncated if it holds
   metrics), 3 a line of LKS_IMPORT_LINE_MAX - 1 bytes or more, read past (*s, *len: none),
   0 end of file, LKS_E_BAD_INPUT a line with a NUL byte (lks_err names path:line), -1 a read
   error. r->line counts the lines. A line of LKS_IMPORT_LINE_MAX - 1 bytes or more that a
   progress bar redrew ('\r' between its draws: tqdm's, with a metric line written after
   it) is handed on as what a terminal shows of it, cut in constant memory: its head
   before its first '\r' (a rank prefix; dropped where over LKS_IMPORT_LINE_HEAD bytes),
   a '\r', and what follows its last '\r' (r->cut set; 3 where that is too long still). */
int lks_import_reader_next(lks_import_reader *r, char **s, size_t *len);

/* The loop of the line formats (import_lines.c): each line read, cleaned of ANSI colour
   codes, its "[rankN]:" prefix taken as the rank, its record handed to sink. */
int lks_import_lines(const char *path, FILE *f, lks_import_sink sink, void *arg,
                     lks_import_counts *c, lks_import_line_fn line_fn);
/* The same over a part of a file: from where f's descriptor is (it must have one, at the
   start of a line), the lines numbered on from line (the lines before), at most limit
   bytes (UINT64_MAX: to the end; a limit ends after a newline). */
int lks_import_lines_at(const char *path, FILE *f, long line, uint64_t limit,
                        lks_import_sink sink, void *arg, lks_import_counts *c,
                        lks_import_line_fn line_fn);
/* The line functions of torchtitan and megatron-log (import_torchtitan.c,
   import_megatron_log.c). */
int lks_import_titan_line(const char *s, size_t len, lks_import_rec *rec, const char *path);
int lks_import_mega_line(const char *s, size_t len, lks_import_rec *rec, const char *path);
/* jsonl's line (import_jsonl.c): the one line format whose last line may lack its newline. */
int lks_import_jsonl_line(const char *s, size_t len, lks_import_rec *rec, const char *path);

/* What lks_import_files stores, and what it found. */
typedef struct lks_import_opts {
	const lks_import_format *fmt;
	const char *case_name, *run_name;
	int64_t suite_id;         /* 0: none */
	const char *case_path, *case_text;  /* a case's run (import = FMT:PATH): its file and
	                                       text, stored as a trained run's; else NULL */
	const char *ranks;        /* the ranks a log of some ranks only holds ("0,8", "0-3,8":
	                             each must have steps, no other may appear; the run keeps
	                             their numbers); NULL: every rank from 0 to the last */
	const struct lks_import_tag_map *tag_map;  /* the user's own labels; NULL: none */
} lks_import_opts;

/* ---- a user's own labels (lockstep import --tag-map, a case run's import_tag_map;
   import_tag_map.c) ---- */

/* LABEL=NAME pairs. LABEL is a label as the log writes it, in any format (a TensorBoard
   tag "my/train_loss", a log line's label, a JSON key), byte for byte; NAME the metric it is
   read as: a name of the table (its kind the table's), or any other name of letters,
   digits and '_', its kind the one written after it (":numerics", ":performance"), else
   what its words say (lks_import_perf_words). A label of the map is read so before the
   format's own labels; two labels of one record read as one name are that name twice (bad
   input, as in any log). */
typedef struct lks_import_tag_map lks_import_tag_map;

/* The map of text, "LABEL=NAME[,LABEL=NAME...]" or "@FILE" (one LABEL=NAME a line, blank
   lines and lines that start with '#' skipped; FILE relative to dir, where dir is not NULL
   and FILE not absolute), blanks around each side dropped, into *out (free it with
   lks_import_tag_map_free). 0; LKS_E_BAD_INPUT (lks_err naming the pair, or FILE:line): no
   '=', an empty side, a NAME that is no metric name or gives a table's metric another
   kind, a kind word that is neither, a LABEL twice, FILE not read; -1 (no memory). */
int lks_import_tag_map_parse(const char *text, const char *dir, lks_import_tag_map **out);
void lks_import_tag_map_free(lks_import_tag_map *m);
/* How many of m's labels named no tag read since it was made, the first few of them
   quoted into buf ("'a', 'b' and 3 more"): a misspelt label is no error, but said. */
int lks_import_tag_map_unused(const lks_import_tag_map *m, char *buf, size_t size);

/* 0 when text is ranks as lks_import_opts.ranks takes them, else LKS_E_BAD_INPUT (lks_err). */
int lks_import_ranks_valid(const char *text);

typedef struct lks_import_result {
	int64_t run_id;
	int steps, world_size;    /* the last step, the ranks */
	int parts;                /* the most parts a file was read in at once (1: one reader) */
	double commit_s;          /* seconds from the last record read to the import committed
	                             (the part of an import no number of cores shortens) */
	lks_import_counts counts; /* summed over the files */
	int unread;               /* tensorboard: event files of folders within a run's folder
	                             (add_scalars' series) that no launch of the run's own event
	                             files wrote (import_folder.c), not read */
	char unread_first[512];   /* the first of them by name */
	int hparams;              /* tensorboard: event files of folders within a run's folder
	                             that add_hparams wrote (its "_hparams_/" summaries and its
	                             metric_dict's scalars at one step), not read */
	char hparams_first[512];  /* the first of them by name */
} lks_import_result;

/* What an import left unread, as a sentence for its user (buf, n bytes), or NULL where it
   left nothing (res->unread and res->hparams 0). */
const char *lks_import_unread_note(const lks_import_result *res, char *buf, size_t n);

/* Parses the files in order as one run and stores it (store NULL: checks only, for the
   fuzz driver). Returns 0, LKS_E_BAD_INPUT or -1; on failure nothing is stored. A tensor
   trace's format goes to lks_import_tensor_files. */
int lks_import_files(lks_store *store, const lks_import_opts *o, const char *const *paths,
                     int npaths, lks_import_result *res);
/* The same for a tensor trace's format (import_tensors.c): each (step, rank)'s tensors
   come together in one file, a rank's steps in order (a step of a rank again is bad
   input at its line); every rank from 0 to the last holds some. A folder given is its
   files that match the format's tensor_files, in name order. */
int lks_import_tensor_files(lks_store *store, const lks_import_opts *o,
                            const char *const *paths, int npaths, lks_import_result *res);
/* The canonical name of a tensor statistic as a format labels it (len bytes): lockstep's
   own (l2, amax, scale, nonfinite, underflow, saturated, min, max, mean, std, l1,
   dynamic_range, underflow_pct, scale_inv_min, scale_inv_max, mse, numel, nan_count,
   inf_count), else the label made a name (letters, digits, '_' kept; '%' "pct"; others
   '_') into buf (LKS_IMPORT_NAME_MAX). NULL: an empty or too long label. */
const char *lks_tensor_stat_name(const char *label, size_t len, char *buf);
/* Statistic label (len bytes) = value (its decimal dec as the readers give it, or
   LKS_IMPORT_NO_DEC) added to t under its canonical name: 0; LKS_E_BAD_INPUT (lks_err
   naming path:line) for a bad label, a statistic twice in one record, more than
   LKS_IMPORT_MAX_METRICS. */
int lks_tensor_rec_stat(lks_tensor_rec *t, const char *label, size_t len, double value,
                        int64_t dec, const char *path);

/* ---- lockstep import --follow ---- */

/* What a step function returns to stop a followed import (0: go on), and what the import
   returns when it reaches its end step. */
#define LKS_IMPORT_DIVERGED 2
#define LKS_IMPORT_REACHED 3

/* The records of a step just stored and committed (every rank that wrote it, in the order
   read): 0 to go on, or LKS_IMPORT_DIVERGED (or -1) to stop the import there. */
typedef int (*lks_import_step_fn)(void *arg, const lks_import_rec *recs, int n);

/* Asked at each end of a followed log's stream: 1 when the stream goes on from the start
   of the log's file again (truncated, or another file at its path: tail -F), 0 when the
   input ends. */
typedef int (*lks_import_more_fn)(void *arg);

/* Reads the log f (path names it in messages; a line format or jsonl) as it is written,
   as one run: each step stored in its own transaction as soon as it is complete (a later
   step's line, every rank of the first complete step, or the end of input) and then
   handed to fn. Where more (NULL: never) says that f goes on from a file's start, what
   follows is read as the next file of a whole import: where it logs a rank's step again,
   the run was restarted, and the steps stored of that rank from that step on are dropped
   (and logged, stored and handed to fn again). Stops at the end of f (0), after step
   end_step (-1: none; LKS_IMPORT_REACHED), when fn stops it (what fn returned), or at bad
   input (LKS_E_BAD_INPUT) or a failure (-1). Steps stored before stay stored: the run is
   complete after 0 or LKS_IMPORT_REACHED, else incomplete. res: what was read (steps: the
   last step stored). */
int lks_import_follow(lks_store *store, const lks_import_opts *o, const char *path, FILE *f,
                      int end_step, lks_import_step_fn fn, lks_import_more_fn more, void *arg,
                      lks_import_result *res);

/* ---- lockstep export (export.c) ---- */

/* Writes stored run run_id to out in fmt (LKS_IMPORT_JSONL or LKS_IMPORT_MEGATRON_GOLDEN):
   an imported run's metrics, or a lockstep run's loss, grad_norm and lr per step and rank;
   the values of rank alone (a golden file holds one rank; jsonl -1: every rank). Values
   read back bit for bit through the format's importer. *written: the lines (jsonl) or
   metrics (golden) written. 0; LKS_E_MISSING (lks_err, nothing written) when the run holds
   no values, or none of rank; LKS_E_BAD_INPUT what the format cannot hold; or -1 (lks_err:
   no such run, the store, a write). */
int lks_export_run(lks_store *s, int64_t run_id, lks_import_fmt fmt, int rank, FILE *out,
                   long *written);
/* Writes the tensor trace of stored run run_id to out as tensor-jsonl (export_tensors.c): a
   record a line, by step, rank and order, of rank alone (-1: every rank); values read back
   bit for bit. *written: the lines. 0; LKS_E_BAD_INPUT (no tensor trace) or LKS_E_MISSING
   (no record of rank; nothing written), lks_err; or -1 (lks_err: no such run, the store, a
   write). */
int lks_export_tensors(lks_store *s, int64_t run_id, int rank, FILE *out, long *written);

#endif
