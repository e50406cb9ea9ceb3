/*
 * import_tensorboard.c: TensorBoard event files (import.h), events.out.tfevents.*, the
 * full-precision trace of most runs: the float32 each scalar was logged as.
 *
 * A file is TFRecords (tensorflow's core/lib/io/record_writer.cc): a uint64 length,
 * little-endian, the masked CRC32C of those 8 bytes, the data, the masked CRC32C of the
 * data (mask: rotate right by 15, add 0xa282ead8). Every CRC is checked: a bad one, or
 * data that is no Event, is bad input naming the file and the byte offset of the record,
 * and nothing is stored; a file that ends within a record is read to the record before
 * (lks_tb_cut_at_end). The data is an Event
 * (harness/import/tensorboard.proto, the fields lockstep reads, decoded by protobuf-c); its
 * summary's values are scalars: simple_value (a float), or a tensor of one element, float,
 * double, half, bfloat16, int32 or int64 (torch.utils.tensorboard and tensorboardX write
 * simple_value; TF 2 and newer writers a float tensor). Other values (images, histograms,
 * text), events without a summary, and Megatron-LM's scalars against the samples consumed
 * ("lm loss vs samples", whose step is no iteration: lks_tb_other_axis) are counted as
 * ignored. The value is stored as written: a float32 is that float exactly.
 *
 * A run's folder is read as its event files in name order, each a file, and a folder
 * named rank_N holds rank N's events (import_folder.c).
 *
 * Tags map to lockstep's metric names through the table below (Megatron-LM's "lm loss",
 * Hugging Face's "train/loss", MaxText's "learning/loss", ...); any other tag is its own
 * name ('/' and ' ' made '_'). The values of one step, in the file's order of events, make
 * one record; steps go forward. A tag written again at its step with the same bits is one
 * value (Hugging Face writes train/epoch again with each evaluation and with the run's
 * summary), with another value bad input.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensorboard.pb-c.h"
#include "harness/import/import_impl.h"
#include "kernels/element/cast.h"
#include "kernels/err.h"

/* An event larger than this is bad input: a scalar's event is under 100 bytes, and a
   record's length is read before its CRC is checked. */
#define LKS_TB_RECORD_MAX ((uint64_t)64 << 20)

static const lks_import_label_row lks_tb_labels[] = {
	{ "lm loss", "loss" },
	{ "lm_loss", "loss" },  /* tensorboardX and older torch writers clean a tag's blanks */
	{ "loss", "loss" },
	{ "train/loss", "loss" },
	{ "learning/loss", "loss" },
	{ "loss_metrics/global_avg_loss", "loss" },
	{ "grad-norm", "grad_norm" },
	{ "grad_norm", "grad_norm" },
	{ "train/grad_norm", "grad_norm" },
	{ "learning/grad_norm", "grad_norm" },
	{ "learning-rate", "lr" },
	{ "lr", "lr" },
	{ "train/learning_rate", "lr" },
	{ "learning/current_learning_rate", "lr" },
	{ "train/epoch", "epoch" },  /* Hugging Face's: its console's and trainer_state's name */
	{ "loss-scale", "loss_scale" },
	{ "num-zeros", "num_zeros" },
	{ "params-norm", "params_norm" },
	{ "iteration-time", "iteration_time_s" },
	/* Composer's TensorboardLogger: its metrics' names, as its console prints them
	   (import_composer.c) */
	{ "loss/train/total", "loss" },
	/* NeMo 2 (Lightning's logger): the names its log lines print (import_nemo.c) */
	{ "reduced_train_loss", "loss" },
	{ "train_step_timing in s", "iteration_time_s" },
	{ "train_step_timing_in_s", "iteration_time_s" },
	{ "perf/step_time_seconds", "iteration_time_s" },
	{ "batch-size", "global_batch_size" },
	{ NULL, NULL },
};

/* CRC32C (Castagnoli, reflected 0x82f63b78), a table made once (no Debian package of
   bookworm offers it; it is the polynomial's table and a loop) */
static uint32_t lks_crc32c_table[256];
static pthread_once_t lks_crc32c_once = PTHREAD_ONCE_INIT;

static void lks_crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		lks_crc32c_table[i] = c;
	}
}

#if defined(__x86_64__)
/* SSE 4.2's crc32 instruction is this CRC (Castagnoli's), 8 bytes at a time */
__attribute__((target("sse4.2"))) static uint32_t lks_crc32c_hw(const uint8_t *p, size_t n)
{
	uint64_t c = 0xffffffffu, w;

	for (; n >= 8; n -= 8, p += 8) {
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	while (n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c ^ 0xffffffffu;
}
#endif

static uint32_t lks_crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return lks_crc32c_hw(p, n);
#endif
	pthread_once(&lks_crc32c_once, lks_crc32c_init);
	while (n--)
		c = lks_crc32c_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

uint32_t lks_tfrecord_crc(const void *data, size_t n)
{
	const uint8_t *p = data;

	uint32_t c = lks_crc32c(p, n);

	return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint64_t lks_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* A scalar summary value into *x: 1, 0 when it holds none (an image, a histogram, text, a
   tensor of more than one element) */
static int lks_tb_scalar(const LksTb__Summary__Value *v, double *x)
{
	const LksTb__TensorProto *t = v->tensor;
	const uint8_t *b;
	size_t one = 1;

	if (v->value_case == LKS_TB__SUMMARY__VALUE__VALUE_SIMPLE_VALUE) {
		*x = v->simple_value;
		return 1;
	}
	if (v->value_case != LKS_TB__SUMMARY__VALUE__VALUE_TENSOR || !t)
		return 0;
	for (size_t i = 0; t->tensor_shape && i < t->tensor_shape->n_dim; i++)
		one *= (size_t)(t->tensor_shape->dim[i]->size > 0 ? t->tensor_shape->dim[i]->size : 0);
	if (one != 1)
		return 0;
	b = t->tensor_content.data;
	switch (t->dtype) {
	case 1:  /* DT_FLOAT */
		if (t->n_float_val == 1) {
			*x = t->float_val[0];
			return 1;
		}
		if (t->tensor_content.len == 4) {
			uint32_t u = (uint32_t)lks_le(b, 4);
			float f;

			memcpy(&f, &u, 4);
			*x = f;
			return 1;
		}
		return 0;
	case 2:  /* DT_DOUBLE */
		if (t->n_double_val == 1) {
			*x = t->double_val[0];
			return 1;
		}
		if (t->tensor_content.len == 8) {
			uint64_t u = lks_le(b, 8);

			memcpy(x, &u, 8);
			return 1;
		}
		return 0;
	case 19:  /* DT_HALF */
	case 14:  /* DT_BFLOAT16 */
	{
		uint32_t h;
		float f;

		if (t->n_half_val == 1)
			h = (uint32_t)t->half_val[0] & 0xffffu;
		else if (t->tensor_content.len == 2)
			h = (uint32_t)lks_le(b, 2);
		else
			return 0;
		if (t->dtype == 19) {
			f = lks_f16_to_f32((uint16_t)h);
		} else {
			h <<= 16;
			memcpy(&f, &h, 4);
		}
		*x = f;
		return 1;
	}
	case 3:  /* DT_INT32 */
		if (t->n_int_val == 1 || t->tensor_content.len == 4) {
			*x = t->n_int_val == 1 ? t->int_val[0] : (int32_t)(uint32_t)lks_le(b, 4);
			return 1;
		}
		return 0;
	case 9:  /* DT_INT64 */
		if (t->n_int64_val == 1 || t->tensor_content.len == 8) {
			*x = (double)(t->n_int64_val == 1 ? t->int64_val[0] : (int64_t)lks_le(b, 8));
			return 1;
		}
		return 0;
	default:
		return 0;
	}
}

/* The decoder's memory: an arena emptied after each record's Event (a scalar's is a few
   small blocks), so that decoding one costs no malloc; a block larger than the arena's
   room comes from malloc, and is freed. */
struct lks_tb_arena {
	unsigned char *base;
	size_t used, cap;
	int spilled;              /* blocks of this Event's from malloc: it must be freed */
};

static void *lks_tb_alloc(void *data, size_t size)
{
	struct lks_tb_arena *a = data;
	size_t at = (a->used + 15) & ~(size_t)15;

	if (at + size <= a->cap) {
		a->used = at + size;
		return a->base + at;
	}
	a->spilled = 1;
	return malloc(size ? size : 1);
}

static void lks_tb_free(void *data, void *p)
{
	struct lks_tb_arena *a = data;

	if (p && ((unsigned char *)p < a->base || (unsigned char *)p >= a->base + a->cap))
		free(p);
}

struct lks_tb_read {
	lks_import_rec *rec;
	int open;
	const char *path;
	lks_import_sink sink;
	void *arg;
	lks_import_counts *c;
	const char *series;       /* an add_scalars series folder's name: tags read as
	                             lks_tb_series_tag makes them; NULL: as written */
	char tag[512];            /* a series' tag (a map may name a long one shortly) */
};

/* The tag of add_scalars' value of chart tag (len bytes) in the series folder x->series
   (its path below the run's folder): "<tag>/<key>", the key the folder's path after
   "<tag, '/' made '_'>_" (torch/utils/tensorboard/writer.py, torch 2.15.0: fw_logdir +
   "/" + main_tag.replace("/", "_") + "_" + tag) or after "<tag>/" (tensorboardX 2.6.5,
   tensorboardX/writer.py: os.path.join(fw_logdir, main_tag, tag)), so both writers' series
   have one name; "<tag>/<folder's path>" where it begins with neither. *len its length.
   NULL where that is too long for a name. */
static const char *lks_tb_series_tag(struct lks_tb_read *x, const char *tag, size_t *len)
{
	const char *key = x->series;
	size_t k = 0;

	while (k < *len && (key[k] == tag[k] || (tag[k] == '/' && key[k] == '_')))
		k++;
	if (k == *len && (key[k] == '_' || key[k] == '/') && key[k + 1])
		key += k + 1;
	if (*len + 1 + strlen(key) >= sizeof(x->tag))
		return NULL;
	*len = (size_t)snprintf(x->tag, sizeof(x->tag), "%.*s/%s", (int)*len, tag, key);
	return x->tag;
}

static int lks_tb_flush(struct lks_tb_read *x)
{
	return lks_import_rec_close(x->rec, &x->open, x->sink, x->arg, x->c);
}

/* Whether tag is a scalar logged again against another x axis than the iteration:
   Megatron-LM writes each of its scalars twice, "lm loss" at the iteration and "lm loss vs
   samples" at the samples consumed so far (megatron/training/training.py, training_log, at
   NVIDIA/Megatron-LM 001b00c; forks add " vs tokens"), with blanks made '_' by writers that
   clean tags. Its step is no step of the run's: the iteration's value is the one read. */
static int lks_tb_other_axis(const char *tag, size_t n)
{
	static const char *const ends[] = { " vs samples", " vs tokens", NULL };

	for (int i = 0; ends[i]; i++) {
		size_t k = strlen(ends[i]), j;

		for (j = 0; n > k && j < k; j++) {
			char a = tag[n - k + j], b = ends[i][j];

			if (a != b && !(b == ' ' && a == '_'))
				break;
		}
		if (n > k && j == k)
			return 1;
	}
	return 0;
}

/* Lightning's placeholder: its TensorBoardLogger (default_hp_metric, log_hyperparams) logs
   hp_metric = -1 at step 0 as every launch begins, no value of the training; read, a
   resumed launch's step 0 was a restart that dropped the launch before. */
static int lks_tb_placeholder(const char *tag, size_t len, int64_t step, double x)
{
	return step == 0 && x == -1.0 && len == 9 && !memcmp(tag, "hp_metric", 9);
}

/* Whether summary value v of an Event at step is a scalar of the iteration this import
   reads: its value in *x, its tag's length in *len. A tag the map names is read whatever
   its words. */
static int lks_tb_wanted(const LksTb__Summary__Value *v, int64_t step, double *x, size_t *len)
{
	/* the map is looked up only for a tag passed over, after the cheap tests */
	if (!v->tag || !(*len = strlen(v->tag))
	    || (lks_tb_other_axis(v->tag, *len) && !lks_import_label_mapped(v->tag, *len))
	    || !lks_tb_scalar(v, x))
		return 0;
	return !lks_tb_placeholder(v->tag, *len, step, *x) || lks_import_label_mapped(v->tag, *len);
}

/* After tag's value v was refused at the record of its step: 1 when the record holds its
   metric already with the same bits (a tag written twice at a step: Hugging Face's
   TensorBoard callback writes train/epoch with the step's log and again with an
   evaluation's or the run's summary at the same step; or two tags of one metric alike),
   else 0, with why where the other is another value. */
static int lks_tb_again(struct lks_tb_read *x, const char *tag, double v)
{
	lks_import_rec *one = malloc(sizeof(*one));
	int same = 0;

	if (!one)
		return 0;
	memset(one, 0, sizeof(*one));
	one->line = x->rec->line;
	if (lks_import_rec_add_dec(one, LKS_IMPORT_TENSORBOARD, tag, strlen(tag), v,
	                           LKS_IMPORT_NO_DEC, x->path) == 0)
		for (int i = 0; i < x->rec->n; i++) {
			const struct lks_import_mval *m = &x->rec->m[i];

			if (strcmp(m->name, one->m[0].name))
				continue;
			same = !memcmp(&m->value, &v, sizeof(v));
			if (!same)
				lks_err("'%s':%ld: metric '%s' given twice at step %d: %.17g, then %.17g "
				        "by tag '%s'%s", x->path, x->rec->line, m->name, x->rec->step,
				        m->value, v, tag, x->rec->step ? "" : " (a writer not told the "
				        "step, add_scalar without global_step, writes every value at step 0)");
			break;
		}
	free(one);
	return same;
}

/* One Event's scalars into the record of its step; an Event of none (the file's version,
   an image, a scalar against samples) counted as ignored, its step not read */
static int lks_tb_event(struct lks_tb_read *x, const LksTb__Event *e, long at)
{
	const LksTb__Summary *s = e->what_case == LKS_TB__EVENT__WHAT_SUMMARY ? e->summary : NULL;
	int rc, step = (int)e->step;
	size_t first = 0, len = 0;
	double v;

	while (s && first < s->n_value && !lks_tb_wanted(s->value[first], e->step, &v, &len))
		first++;
	if (!s || first == s->n_value) {
		x->c->ignored++;
		return 0;
	}
	if (e->step < 0 || e->step > LKS_IMPORT_MAX_STEP) {  /* said as the driver says it */
		char digits[24];

		snprintf(digits, sizeof(digits), "%lld", (long long)e->step);
		return lks_import_bad_step(x->path, at, "step", digits, strlen(digits));
	}
	if (x->open && step != x->rec->step && (rc = lks_tb_flush(x)))
		return rc;
	if (!x->open) {
		lks_tb_rec_start(x->rec, step, at);
		x->open = 1;
	}
	for (size_t i = first; i < s->n_value; i++) {
		const char *tag = s->value[i]->tag;

		if (i > first && !lks_tb_wanted(s->value[i], e->step, &v, &len))
			continue;
		if (x->series && !(tag = lks_tb_series_tag(x, tag, &len)))
			return lks_err("'%s':%ld: tag '%s' of the series folder '%s' is too long",
			               x->path, at, s->value[i]->tag, x->series),
			       LKS_E_BAD_INPUT;
		/* a binary value: it is what was logged, no decimal printed it */
		if ((rc = lks_import_rec_add_dec(x->rec, LKS_IMPORT_TENSORBOARD, tag, len, v,
		                                 LKS_IMPORT_NO_DEC, x->path))
		    && !(rc == LKS_E_BAD_INPUT && lks_tb_again(x, tag, v)))
			return rc;
	}
	return 0;
}

/* The file's bytes a chunk at a time (a record's 12 + len + 4 bytes are read through it,
   not with a call each: three freads a record cost more than its decoding). */
struct lks_tb_in {
	FILE *f;
	uint8_t *buf;
	size_t at, end, cap;
	int exact;                /* a stream without a place (a pipe, a followed log: its
	                             reads wait for bytes to come): read no byte past the record,
	                             else a step would wait for a chunk's worth of later ones */
};

#define LKS_TB_CHUNK ((size_t)1 << 20)

/* n bytes from the input's position, *p to them (valid until the next call): 1; 0 at the
   end of the file with none; -1 cut short (errno: a read error, ferror) or out of memory. */
static int lks_tb_take(struct lks_tb_in *in, size_t n, const uint8_t **p)
{
	if (in->end - in->at < n) {
		size_t have = in->end - in->at, want = n > LKS_TB_CHUNK ? n : LKS_TB_CHUNK;

		if (want > in->cap) {
			uint8_t *b = malloc(want);

			if (!b)
				return -1;
			if (have)  /* none at first, before the buffer is made */
				memcpy(b, in->buf + in->at, have);
			free(in->buf);
			in->buf = b;
			in->cap = want;
		} else if (have) {
			memmove(in->buf, in->buf + in->at, have);
		}
		in->at = 0;
		in->end = have + fread(in->buf + have, 1, (in->exact ? n : in->cap) - have, in->f);
		if (in->end < n)
			return in->end == 0 && !ferror(in->f) ? 0 : -1;
	}
	*p = in->buf + in->at;
	in->at += n;
	return 1;
}

/* The file ends within a record: a writer killed while writing it (its buffer reaches the
   file at its own sizes). Read as TensorBoard reads it, to the record before; counted. */
static int lks_tb_cut_at_end(lks_import_counts *c, const char *path, long long at)
{
	if (!c->cut++)
		snprintf(c->cut_first, sizeof(c->cut_first), "'%s' at byte %lld", path, at);
	return 0;
}

/* import_impl.h */
int lks_tb_parse(const char *path, FILE *f, long line, uint64_t limit, const char *series,
                 lks_import_sink sink, void *arg, lks_import_counts *c)
{
	struct lks_tb_read x = { calloc(1, sizeof(lks_import_rec)), 0, path, sink, arg, c,
	                         series, "" };
	struct lks_tb_arena arena = { malloc(65536), 0, 65536, 0 };
	ProtobufCAllocator alloc = { lks_tb_alloc, lks_tb_free, &arena };
	off_t from = lseek(fileno(f), 0, SEEK_CUR);
	struct lks_tb_in in = { f, NULL, 0, 0, 0, from < 0 };
	long long at = from > 0 ? (long long)from : 0;
	int rc = 0;

	/* f's own buffer to where its descriptor was put (a part's start); a pipe has none */
	if (from >= 0 && fseeko(f, from, SEEK_SET))
		return lks_err("cannot read '%s' at byte %lld", path, at);
	if (!x.rec || !arena.base) {
		free(x.rec);
		free(arena.base);
		return lks_err("out of memory");
	}
	while ((uint64_t)(at - (from > 0 ? from : 0)) < limit) {
		const uint8_t *head, *data;
		int got = lks_tb_take(&in, 12, &head);
		uint64_t len;
		LksTb__Event *e;

		if (got == 0)
			break;
		if (got < 0) {
			rc = ferror(f) ? lks_err("cannot read '%s'", path)
			   : !in.buf ? lks_err("out of memory") : lks_tb_cut_at_end(c, path, at);
			break;
		}
		len = lks_le(head, 8);
		if ((uint32_t)lks_le(head + 8, 4) != lks_tfrecord_crc(head, 8)) {
			lks_err("'%s': byte %lld: bad CRC of the record's length: not a TFRecord "
			        "(an event file?), or corrupted", path, at);
			rc = LKS_E_BAD_INPUT;
			break;
		}
		if (len > LKS_TB_RECORD_MAX) {
			lks_err("'%s': byte %lld: a record of %llu bytes (more than %llu)", path, at,
			        (unsigned long long)len, (unsigned long long)LKS_TB_RECORD_MAX);
			rc = LKS_E_BAD_INPUT;
			break;
		}
		if (lks_tb_take(&in, len + 4, &data) != 1) {
			rc = ferror(f) ? lks_err("cannot read '%s'", path)
			   : !in.buf || in.cap < len + 4 ? lks_err("out of memory")
			   : lks_tb_cut_at_end(c, path, at);
			break;
		}
		if ((uint32_t)lks_le(data + len, 4) != lks_tfrecord_crc(data, len)) {
			lks_err("'%s': byte %lld: bad CRC of the record's %llu bytes of data: corrupted",
			        path, at, (unsigned long long)len);
			rc = LKS_E_BAD_INPUT;
			break;
		}
		c->lines++;
		line++;
		arena.used = 0;
		arena.spilled = 0;
		if (!(e = lks_tb__event__unpack(&alloc, len, data))) {
			lks_err("'%s': byte %lld: the record is no TensorBoard Event", path, at);
			rc = LKS_E_BAD_INPUT;
			break;
		}
		rc = lks_tb_event(&x, e, line);
		/* all of it in the arena, emptied for the next: nothing to free (a walk of the
		   message that frees nothing costs as much as its decoding's allocations) */
		if (arena.spilled)
			lks_tb__event__free_unpacked(e, &alloc);
		if (rc)
			break;
		at += (long long)(12 + len + 4);
	}
	if (rc == 0)
		rc = lks_tb_flush(&x);
	free(in.buf);
	free(arena.base);
	free(x.rec);
	return rc;
}

static int lks_tb_parse_at(const char *path, FILE *f, long line, uint64_t limit,
                           lks_import_sink sink, void *arg, lks_import_counts *c)
{
	return lks_tb_parse(path, f, line, limit, NULL, sink, arg, c);
}

static int lks_import_parse_tensorboard(const char *path, FILE *f, lks_import_sink sink,
                                        void *arg, lks_import_counts *c)
{
	return lks_tb_parse(path, f, c->lines, UINT64_MAX, NULL, sink, arg, c);
}

/* The step of the Event data[0..len), or -1 where it holds no scalar the reader takes
   (the file's version, an image, a scalar against samples: lks_tb_event ignores it, its
   step no step of the run's) or is none. */
static int64_t lks_tb_step_of(const uint8_t *data, size_t len)
{
	LksTb__Event *e = lks_tb__event__unpack(NULL, len, data);
	const LksTb__Summary *s = e && e->what_case == LKS_TB__EVENT__WHAT_SUMMARY ? e->summary
	                          : NULL;
	int64_t step = -1;
	double v;
	size_t taglen;

	for (size_t i = 0; s && i < s->n_value && step < 0; i++)
		if (lks_tb_wanted(s->value[i], e->step, &v, &taglen))
			step = e->step;

	if (e)
		lks_tb__event__free_unpacked(e, NULL);
	return step;
}

/* import_impl.h */
int64_t lks_tb_head_len(const uint8_t *h)
{
	uint64_t len = lks_le(h, 8);

	if ((uint32_t)lks_le(h + 8, 4) != lks_tfrecord_crc(h, 8) || len > LKS_TB_RECORD_MAX)
		return -1;
	return (int64_t)len;
}

/* import_impl.h */
int64_t lks_tb_record_len(const uint8_t *w, size_t n, size_t p)
{
	int64_t len;

	if (p + 16 > n || (len = lks_tb_head_len(w + p)) < 0 || (uint64_t)len > n - p - 16
	    || (uint32_t)lks_le(w + p + 12 + len, 4) != lks_tfrecord_crc(w + p + 12, len))
		return -1;
	return (int64_t)len;
}

/* Where a part starting near byte at may start: at a record whose length's and data's
   CRCs both check (found by trying each byte from at: a false one passes two CRC32Cs, 1 in
   2^64), and then at the first record after it whose step is not the step before, so that
   no step's events are split between parts (a part's reader gathers a step's events into
   one record). Looked for within a window of 1 MiB from at: 0 where that finds none (fewer
   parts). */
static off_t lks_tb_cut(int fd, off_t at, off_t size)
{
	(void)size;  /* the window ends where the file does */
	size_t cap = LKS_TB_CHUNK, n;
	uint8_t *w = malloc(cap);
	ssize_t got = w ? pread(fd, w, cap, at) : -1;
	int64_t prev = -1;        /* the step of the record before; -1: none yet */
	off_t cut = 0;

	if (got <= 0) {
		free(w);
		return 0;
	}
	n = (size_t)got;
	for (size_t p = 0, synced = 0; p + 16 <= n && !cut;) {
		int64_t len = lks_tb_record_len(w, n, p), step;

		if (len < 0) {
			if (synced)
				break;  /* a damaged record: the reader of the part before says it */
			p++;
			continue;
		}
		synced = 1;
		/* a record of no step (the file's version) leaves the step before as it was */
		if ((step = lks_tb_step_of(w + p + 12, (size_t)len)) >= 0) {
			if (prev >= 0 && step != prev)
				cut = at + (off_t)p;
			prev = step;
		}
		p += 12 + (size_t)len + 4;
	}
	free(w);
	return cut;
}

const lks_import_format lks_import_tensorboard_format = {
	.id = LKS_IMPORT_TENSORBOARD,
	.name = "tensorboard",
	.what = "TensorBoard event files (events.out.tfevents.*: each scalar as the float32 "
	        "logged)",
	.parse = lks_import_parse_tensorboard,
	.parse_at = lks_tb_parse_at,
	.cut = lks_tb_cut,
	.labels = lks_tb_labels,
};
