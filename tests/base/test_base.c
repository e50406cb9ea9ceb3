/*
 * test_base.c: what every room shares (harness/base/): the status codes' exit codes and the
 * growable string.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/status.h"
#include "harness/base/strbuf.h"

Test(base, status_maps_to_the_exit_codes)
{
	cr_expect_eq(lks_exit_code(LKS_OK), 0);
	cr_expect_eq(lks_exit_code(LKS_E_BAD_INPUT), 2);
	cr_expect_eq(lks_exit_code(LKS_E_MISSING), 2);
	cr_expect_eq(lks_exit_code(LKS_E_INFRA), 3);
	cr_expect_eq(lks_exit_code(-7), 3, "an unknown failure is infrastructure's");
}

Test(base, strbuf_grows_past_its_first_allocation)
{
	lks_strbuf sb = LKS_STRBUF_INIT;
	char *s;

	cr_expect_str_eq(sb.buf, "");
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(lks_strbuf_addf(&sb, "%d,", i % 10), 0);
	cr_expect_eq(sb.len, 2000);
	cr_expect_eq(strncmp(sb.buf, "0,1,2,", 6), 0);
	cr_expect_eq(sb.buf[sb.len], '\0');
	s = lks_strbuf_detach(&sb);
	cr_expect_eq(strlen(s), 2000);
	cr_expect_str_eq(sb.buf, "", "detach leaves it empty");
	free(s);
	lks_strbuf_release(&sb);
}

Test(base, strbuf_join_and_an_empty_detach)
{
	const char *v[] = { "a", "", "c" };
	lks_strbuf sb = LKS_STRBUF_INIT;
	char *s;

	lks_strbuf_adds(&sb, "x: ");
	lks_strbuf_join(&sb, v, 3, " ");
	cr_expect_str_eq(sb.buf, "x: a  c");
	lks_strbuf_release(&sb);
	s = lks_strbuf_detach(&sb);
	cr_assert_not_null(s, "an empty text is \"\", not NULL");
	cr_expect_str_eq(s, "");
	free(s);
}
