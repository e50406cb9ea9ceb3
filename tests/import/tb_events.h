/*
 * tb_events.h: TensorBoard event files written by a test, for folders of its own (a rank
 * per folder, a restart's file). Each record is TFRecord-framed (length, masked CRC32C of
 * it, data, masked CRC32C of the data: lks_tfrecord_crc), its data an Event written field
 * by field after tensorboard.proto (wall_time = 1 where given, step = 2, summary = 5
 * holding value = 1 with tag = 1 and simple_value = 2): written by hand, not by the protobuf-c the importer reads with,
 * so that the two do not agree by sharing code.
 */
#ifndef LKS_TESTS_IMPORT_TB_EVENTS_H
#define LKS_TESTS_IMPORT_TB_EVENTS_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import.h"

/* A scalar event: its step, its tag and its float32 (a tag "_hparams_/..." written alone,
   no value: add_hparams' summaries hold metadata, no scalar). */
struct tb_scalar {
	int step;
	const char *tag;
	float value;
};

static inline size_t tb_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

static inline void tb_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

/* The Event event[0..en) as one TFRecord at the end of f: its length, the masked CRC32C
   of the length, the data, the masked CRC32C of the data. */
static inline void tb_put_record(FILE *f, const uint8_t *event, size_t en)
{
	uint8_t head[12], tail[4];

	tb_le(head, en, 8);
	tb_le(head + 8, lks_tfrecord_crc(head, 8), 4);
	tb_le(tail, lks_tfrecord_crc(event, en), 4);
	cr_assert(fwrite(head, 1, 12, f) == 12 && fwrite(event, 1, en, f) == en
	          && fwrite(tail, 1, 4, f) == 4);
}

/* Writes the n scalars to path, one Event each, in order, each at its wall time wall[i]
   in seconds (wall NULL: none written). */
static inline void tb_write_at(const char *path, const struct tb_scalar *s, const double *wall,
                               int n)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f, "cannot write '%s'", path);
	for (int i = 0; i < n; i++) {
		uint8_t value[300], summary[310], event[340];
		size_t tl = strlen(s[i].tag), vn = 0, sn = 0, en = 0;
		uint32_t bits;

		cr_assert_lt(tl, 256);
		value[vn++] = 0x0a;  /* tag, field 1, bytes */
		vn += tb_varint(value + vn, tl);
		memcpy(value + vn, s[i].tag, tl);
		vn += tl;
		if (strncmp(s[i].tag, "_hparams_/", 10)) {
			value[vn++] = 0x15;  /* simple_value, field 2, 32 bits */
			memcpy(&bits, &s[i].value, 4);
			tb_le(value + vn, bits, 4);
			vn += 4;
		}
		summary[sn++] = 0x0a;  /* value, field 1 */
		sn += tb_varint(summary + sn, vn);
		memcpy(summary + sn, value, vn);
		sn += vn;
		if (wall) {
			uint64_t w;

			memcpy(&w, &wall[i], 8);
			event[en++] = 0x09;  /* wall_time, field 1, 64 bits */
			tb_le(event + en, w, 8);
			en += 8;
		}
		event[en++] = 0x10;  /* step, field 2, varint */
		en += tb_varint(event + en, (uint64_t)s[i].step);
		event[en++] = 0x2a;  /* summary, field 5 */
		en += tb_varint(event + en, sn);
		memcpy(event + en, summary, sn);
		en += sn;
		tb_put_record(f, event, en);
	}
	cr_assert_eq(fclose(f), 0);
}

/* An Event of no summary whose file_version (field 3) is n bytes, at wall time wall (< 0:
   none written), written to path (mode "wb") or after what it holds ("ab"): a record
   bigger than the reader's chunk, or than what is read at a file's end for its last wall
   time (an add_image's); the import counts it as ignored. */
static inline void tb_write_big(const char *path, const char *mode, double wall, size_t n)
{
	FILE *f = fopen(path, mode);
	uint8_t *ev = malloc(n + 32);
	size_t en = 0;

	cr_assert(f && ev);
	if (wall >= 0) {
		uint64_t w;

		memcpy(&w, &wall, 8);
		ev[en++] = 0x09;  /* wall_time, field 1, 64 bits */
		tb_le(ev + en, w, 8);
		en += 8;
	}
	ev[en++] = 0x1a;  /* file_version, field 3 */
	en += tb_varint(ev + en, n);
	memset(ev + en, 'v', n);
	en += n;
	tb_put_record(f, ev, en);
	cr_assert_eq(fclose(f), 0);
	free(ev);
}

static inline void tb_write(const char *path, const struct tb_scalar *s, int n)
{
	tb_write_at(path, s, NULL, n);
}

#endif
