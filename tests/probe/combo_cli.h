/*
 * combo_cli.h: what the tests of the commands that probe combos (test_combo_cli.c,
 * test_combo_cli_edges.c) share: the built program run as a user would, and queries of
 * the database it wrote in the test's folder (combo_fixture.h).
 */
#ifndef LKS_TESTS_COMBO_CLI_H
#define LKS_TESTS_COMBO_CLI_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "combo_fixture.h"
#include "run_bin.h"

#define FIXTURES LKS_COMBOS

/* Runs LKS_BIN with the arguments fmt makes (tests/run_bin.h): the exit code, and stdout
   and stderr together in out. */
static inline int lockstep(char *out, size_t n, const char *fmt, ...)
{
	char args[3072];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return lks_run_bin(NULL, args, out, n);
}

/* The one integer an SQL query over tmpdir/db gives. */
static inline long long sql_int(const char *db, const char *sql)
{
	char path[512];
	sqlite3 *h;
	sqlite3_stmt *st;
	long long v;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, db);
	cr_assert_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
	cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
	             sqlite3_errmsg(h));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

/* The text an SQL query over tmpdir/db gives ("(null)" for NULL). */
static inline void sql_text(const char *db, const char *sql, char *buf, size_t n)
{
	char path[512];
	sqlite3 *h;
	sqlite3_stmt *st;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, db);
	cr_assert_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
	cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
	             sqlite3_errmsg(h));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	snprintf(buf, n, "%s", sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0)
	                                                : "(null)");
	sqlite3_finalize(st);
	sqlite3_close(h);
}

/* How many lines of text, from the one with 'from' up to the one with 'to' (NULL: the end),
   contain needle. */
static inline int lines_with(const char *text, const char *from, const char *to, const char *needle)
{
	const char *p = strstr(text, from), *end = p && to ? strstr(p, to) : NULL;
	int n = 0;

	if (!end)
		end = text + strlen(text);
	for (; p && p < end; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : end) {
		size_t len = strcspn(p, "\n");
		const char *hit = strstr(p, needle);

		n += hit && hit < p + len;
	}
	return n;
}

#endif
