/* suite_print.c: what 'lockstep run' says of a run, and of a suite that stopped (suite.h). */
#include "harness/suite/suite.h"

#include <stdio.h>

#include "kernels/err.h"

/* "  resumed after step N" (as resume_from names it) for a run whose first step is N + 1
   (> 0); "" for 0 */
static const char *lks_resumed_at(int first_step, char *buf, size_t size)
{
	if (first_step <= 0)
		return "";
	snprintf(buf, size, "  resumed after step %d", first_step - 1);
	return buf;
}

void lks_suite_print_run(FILE *out, const lks_suite_line *r)
{
	char from[48];

	if (r->imported)
		fprintf(out, "%-20s %-16s %-18s ws %d  steps up to %d  imported, %ld %s, "
		        "%ld other lines ignored\n", r->case_name, r->run_name, r->what,
		        r->world_size, r->steps, r->records,
		        r->imported == 2 ? "tensor records" : "metric lines", r->ignored);
	else
		fprintf(out, "%-20s %-16s %-18s ws %d  %4d steps  loss %.4f -> %.4f  %6.2fs%s%s\n",
		        r->case_name, r->run_name, r->what, r->world_size, r->steps, r->first_loss,
		        r->last_loss, r->seconds, lks_resumed_at(r->first_step, from, sizeof(from)),
		        r->nonfinite_events ? "  NON-FINITE gradients (see events)" : "");
	fflush(out);
}

void lks_suite_say_stopped(const lks_suite_observer *obs, struct lks_store *store,
                           int64_t suite_id, int stopped, const char *case_name, int failed,
                           const char *db)
{
	fprintf(stderr, "lockstep: suite %lld stopped before its end (exit %d)", (long long)suite_id,
	        stopped);
	if (case_name)
		fprintf(stderr, " in case '%s'", case_name);
	fprintf(stderr, ": the checks and cases after it were not run, and no verdicts were "
	        "counted; ");
	if (failed)
		fprintf(stderr, "%d run%s failed before it (see above); ", failed, failed > 1 ? "s" : "");
	fprintf(stderr, "what it stored is in '%s'\n", db);
	if (obs->on_stored && obs->on_stored(obs->arg, store, suite_id, stopped))
		fprintf(stderr, "lockstep: %s\n", lks_errmsg());
}
