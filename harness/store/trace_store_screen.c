/*
 * trace_store_screen.c: a node's screen kept in the store (table screens, schema 13):
 * 'lockstep screen --db' puts its JSON document here whole, and the report reads it back
 * (harness/report/screen.c). The store keeps the text; it does not read it.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

int lks_store_put_screen(lks_store *s, const lks_screen_rec *rec, int64_t *id)
{
	const char *const text[] = { rec->started, rec->host, rec->mode, rec->result,
	                             rec->document };
	sqlite3_stmt *st;

	if (lks_store_stmt(s, LKS_Q_SCREEN, &st))
		return -1;
	for (int i = 0; i < 5; i++)
		sqlite3_bind_text(st, i + 1, text[i] ? text[i] : "", -1, SQLITE_STATIC);
	if (lks_store_done(s, st)) {
		sqlite3_clear_bindings(st);
		return lks_err("%s, keeping a screen", lks_errmsg());
	}
	sqlite3_clear_bindings(st);
	if (id)
		*id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

static char *lks_column_dup(sqlite3_stmt *st, int col)
{
	const char *t = (const char *)sqlite3_column_text(st, col);

	return strdup(t ? t : "");
}

int lks_store_get_screen(lks_store *s, int64_t screen_id, const char *before,
                         lks_screen_rec *out)
{
	sqlite3_stmt *st;
	int rc;

	memset(out, 0, sizeof(*out));
	if (lks_store_stmt(s, LKS_Q_GET_SCREEN, &st))
		return -1;
	sqlite3_bind_int64(st, 1, screen_id);
	if (before)
		sqlite3_bind_text(st, 2, before, -1, SQLITE_STATIC);
	rc = LKS_SQL(s->db, sqlite3_step(st));
	if (rc == SQLITE_ROW) {
		out->screen_id = sqlite3_column_int64(st, 0);
		out->started = lks_column_dup(st, 1);
		out->host = lks_column_dup(st, 2);
		out->mode = lks_column_dup(st, 3);
		out->result = lks_column_dup(st, 4);
		out->document = lks_column_dup(st, 5);
		rc = out->started && out->host && out->mode && out->result && out->document ? 0
		     : lks_err("out of memory reading a screen");
		if (rc)
			lks_screen_rec_free(out);
	} else if (rc == SQLITE_DONE) {
		rc = screen_id > 0 ? lks_err("no screen %lld in '%s'", (long long)screen_id,
		                             lks_store_path(s))
		     : lks_err("'%s' holds no screen%s%s", lks_store_path(s),
		               before ? " before " : "", before ? before : "");
		rc = LKS_E_MISSING;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc;
}

void lks_screen_rec_free(lks_screen_rec *r)
{
	free(r->started);
	free(r->host);
	free(r->mode);
	free(r->result);
	free(r->document);
	memset(r, 0, sizeof(*r));
}
