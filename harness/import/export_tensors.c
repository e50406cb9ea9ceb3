/*
 * export_tensors.c: a tensor trace written as tensor-jsonl (lockstep export --format
 * tensor-jsonl; import.h): an imported one, or one lockstep-trace stored. One object a
 * tensor record (of every rank, or of the one asked for), by step, rank and the order the
 * run met them: step, rank, micro (where said), phase, tensor, its statistics as stored
 * and its hash (16 hex digits). Values read back as the same doubles (jansson's 17
 * digits; NaN and the infinities as "nan", "inf", "-inf"), so importing the export stores
 * the trace again, bit for bit.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import.h"
#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "kernels/err.h"

static json_t *lks_tvalue(double v)
{
	if (isnan(v))
		return json_string("nan");
	if (isinf(v))
		return json_string(v > 0 ? "inf" : "-inf");
	return json_real(v);
}

/* One record as a line. */
static int lks_export_tentry(const lks_stored_run *r, int step, int rank, const lks_tentry *e,
                             FILE *out)
{
	const lks_tensor_trace *t = r->tt;
	json_t *o = json_object();
	char hash[17], *text = NULL;
	int rc = -1;

	if (!o)
		return lks_err("out of memory");
	if (json_object_set_new(o, "step", json_integer(step))
	    || json_object_set_new(o, "rank", json_integer(rank))
	    || (e->micro >= 0 && json_object_set_new(o, "micro", json_integer(e->micro)))
	    || json_object_set_new(o, "phase", json_string(lks_phase_name(r->phases[e->tensor])))
	    || json_object_set_new(o, "tensor", json_string(r->names[e->tensor])))
		goto out;
	for (int i = 0; i < e->n; i++) {
		const lks_tval *v = &t->val[e->first + i];

		if (json_object_set_new(o, t->stats[v->stat], lks_tvalue(v->value)))
			goto out;
	}
	snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)e->hash);
	if (e->has_hash && json_object_set_new(o, "hash", json_string(hash)))
		goto out;
	if (!(text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		goto out;
	if (fprintf(out, "%s\n", text) < 0) {
		rc = lks_err("cannot write the export: %s", strerror(errno));
		goto done;
	}
	rc = 0;
	goto done;
out:
	lks_err("out of memory");
done:
	free(text);
	json_decref(o);
	return rc;
}

int lks_export_tensors(lks_store *s, int64_t run_id, int rank, FILE *out, long *written)
{
	lks_stored_run r;
	int rc;

	*written = 0;
	if ((rc = lks_stored_run_load(s, run_id, LKS_LOAD_TRACE, &r)))
		goto out;
	if (!r.tt) {
		rc = (lks_err("run %lld holds no tensor trace (its metrics: export --format jsonl)",
		              (long long)run_id), LKS_E_BAD_INPUT);
		goto out;
	}
	for (int step = r.tt->first_step; !rc && step <= r.tt->last_step; step++) {
		if ((rc = lks_tensor_trace_step(r.tt, step)))
			break;
		for (int k = rank < 0 ? 0 : rank; !rc && k < r.tt->nranks; k++) {
			const lks_tentry *e;
			size_t n = lks_tensor_trace_rank(r.tt, k, &e);

			for (size_t i = 0; !rc && i < n; i++, (*written)++)
				rc = lks_export_tentry(&r, step, k, &e[i], out);
			if (rank >= 0)
				break;
		}
	}
	/* nothing written is refused: an empty file read back as no trace */
	if (!rc && !*written)
		rc = (rank < 0 ? lks_err("run %lld holds no tensor record", (long long)run_id)
		      : lks_err("run %lld holds no tensor record of rank %d", (long long)run_id, rank),
		      LKS_E_MISSING);
	if (!rc && fflush(out))
		rc = lks_err("cannot write the export: %s", strerror(errno));
out:
	lks_stored_run_release(&r);
	return rc;
}
