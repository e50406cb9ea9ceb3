/*
 * test_fault.c: planted faults (harness/engine/fault.h) are caught and located exactly.
 *
 * The specs parse and refuse what is wrong; each fault changes the data exactly as it
 * says; a fault aimed where it cannot act is refused when the case is read, and the model's
 * table of tensors is what a rank really traces; the SQNR of a known error. The program
 * run as a user would, with the fault cases of cases/faults: test_fault_cli.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_fixture.h"
#include "harness/engine/case.h"
#include "harness/engine/fault.h"
#include "harness/engine/model.h"
#include "harness/engine/runner.h"
#include "harness/verify/sqnr.h"
#include "harness/store/trace_store.h"
#include "kernels/cpu/quant.h"
#include "kernels/err.h"

/* ---- the spec ---- */

Test(fault, parse_and_format_round_trip)
{
	static const char *const specs[] = {
		"bitflip step=3 rank=1 tensor=blocks.0.mlp.up.out element=100 bit=22",
		"nan step=2 rank=0 tensor=head.logits",
		"nan step=2 rank=0 tensor=head.logits element=9",
		"stale_bwd_scale",
		"skip_allreduce step=4 rank=3",
		"scale_round_up",
		"scale_round_up step=2 rank=1",
		"rs_drop_tail step=2 rank=1",
		"rs_drop_tail step=2 rank=1 count=7",
		"ag_stale step=3 rank=0",
	};

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		lks_fault f, g;
		char buf[256];

		cr_assert_eq(lks_fault_parse(specs[i], 0, &f), 0, "%s: %s", specs[i], lks_errmsg());
		lks_fault_format(&f, buf, sizeof(buf));
		cr_assert_str_eq(buf, specs[i]);
		cr_assert_eq(lks_fault_parse(buf, 0, &g), 0);
		cr_assert_eq(memcmp(&f, &g, sizeof(f)), 0, "%s", specs[i]);
	}
}

Test(fault, bad_specs_say_why)
{
	static const struct { const char *spec, *why; } bad[] = {
		{ "", "empty" },
		{ "flip step=1", "unknown fault 'flip'" },
		{ "bitflip step=1 rank=0 tensor=x element=0", "needs bit=" },
		{ "bitflip step=1 rank=0 tensor=x element=0 bit=32", "bad bit '32'" },
		{ "nan step=1 rank=0", "needs tensor=" },
		{ "nan step=-1 rank=0 tensor=x", "bad step '-1'" },
		{ "skip_allreduce step=1 rank=0 tensor=x", "takes no tensor=" },
		{ "stale_bwd_scale step=2", "takes no step=" },
		{ "skip_allreduce step=1 step=2 rank=0", "given twice" },
		{ "skip_allreduce step=1 rank", "not key=value" },
		{ "skip_allreduce step=1 rank=0 run=a", "unknown key 'run'" },  /* env only */
		{ "rs_drop_tail step=1", "needs rank=" },
		{ "ag_stale step=1 rank=0 count=3", "takes no count=" },
		{ "rs_drop_tail step=1 rank=0 count=x", "bad count 'x'" },
	};
	lks_fault f;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(lks_fault_parse(bad[i].spec, 0, &f), -1, "'%s' parsed", bad[i].spec);
		cr_assert_not_null(strstr(lks_errmsg(), bad[i].why), "'%s': %s", bad[i].spec,
		                   lks_errmsg());
	}
	cr_assert_eq(lks_fault_parse("skip_allreduce step=1 rank=0 run=a", 1, &f), 0);
	cr_assert_str_eq(f.run, "a");
}

/* A run's mesh: world size, fsdp, tp, sequence parallel (its other keys zero); the one
   returned last (a static). */
static const lks_run_cfg *mesh(int world_size, int fsdp, int tp, int sp)
{
	static lks_run_cfg r;

	memset(&r, 0, sizeof(r));
	r.world_size = world_size;
	r.fsdp = fsdp;
	r.tp = tp;
	r.sp = sp;
	return &r;
}

Test(fault, fits_only_where_it_can_act)
{
	lks_fault f;

	cr_assert_eq(lks_fault_parse("stale_bwd_scale", 0, &f), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_DELAYED, 1, 1, 5), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_DELAYED, 0, 1, 5), -1);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_ROWWISE, 1, 1, 5), -1);
	cr_assert_eq(lks_fault_parse("skip_allreduce step=4 rank=1", 0, &f), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_BF16, 0, 2, 5), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_BF16, 0, 1, 5), -1, "one rank");
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_BF16, 0, 2, 4), -1, "step 4 of 4");
	cr_assert_eq(lks_fault_parse("scale_round_up", 0, &f), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_ROWWISE, 0, 1, 5), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_TENSORWISE, 0, 1, 5), -1,
	             "tensorwise scales are not powers of two");
	/* the collectives' faults: ag_stale needs a step before; the mesh each needs */
	cr_assert_eq(lks_fault_parse("ag_stale step=0 rank=1", 0, &f), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_BF16, 0, 2, 5), -1, "no step before 0");
	cr_assert_not_null(strstr(lks_errmsg(), "needs step >= 1"), "%s", lks_errmsg());
	cr_assert_eq(lks_fault_parse("rs_drop_tail step=1 rank=1", 0, &f), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 4, 1, 0)), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 2, 1, 0)), 0, "HSDP: the fsdp group's");
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 1, 1, 0)), -1, "DP has no reduce-scatter");
	cr_assert_not_null(strstr(lks_errmsg(), "needs fsdp > 1 or tp > 1"), "%s", lks_errmsg());
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 1, 2, 1)), 0, "sequence parallel's");
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 1, 2, 0)), -1, "tp all-reduces its sums");
	cr_assert_not_null(strstr(lks_errmsg(), "needs sequence_parallel = on"), "%s",
	                   lks_errmsg());
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 2, 2, 0)), 0, "the fsdp group's under tp");
	cr_assert_eq(lks_fault_parse("ag_stale step=1 rank=1", 0, &f), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 1, 2, 0)), 0, "tp gathers weight gradients");
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 1, 1, 0)), -1, "DP gathers nothing");
	cr_assert_eq(lks_fault_parse("skip_allreduce step=1 rank=1", 0, &f), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 1, 1, 0)), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 4, 1, 0)), -1, "FSDP has no all-reduce of its own");
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 1, 2, 0)), -1, "not built under tp");
	cr_assert_not_null(strstr(lks_errmsg(), "not built for tensor-parallel runs"), "%s",
	                   lks_errmsg());
	/* under tp a NaN strikes a tensor a rank holds whole, not a gathered copy */
	cr_assert_eq(lks_fault_parse("nan step=1 rank=1 tensor=blocks.0.attn_norm.out", 0, &f), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(2, 1, 2, 0)), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(2, 1, 2, 1)), -1, "sequence parallel gathers it");
	cr_assert_eq(lks_fault_parse("nan step=1 rank=1 tensor=blocks.0.mlp.up.out", 0, &f), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(2, 1, 1, 0)), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(2, 1, 2, 0)), -1, "traced gathered under tp");
	cr_assert_not_null(strstr(lks_errmsg(), "gathered from the group's shards"), "%s",
	                   lks_errmsg());
	{
		lks_run_cfg own = *mesh(2, 1, 2, 0);

		own.trace_shards = 1;  /* its own shard, traced where it lives */
		cr_assert_eq(lks_fault_fits_mesh(&f, &own), 0);
	}
	/* amax_local: an FP8 operand of a tp run, with a recipe that scales by this step */
	cr_assert_eq(lks_fault_parse("amax_local tensor=blocks.0.mlp.up.fwd.w rank=1", 0, &f), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 1, 2, 0)), 0);
	cr_assert_eq(lks_fault_fits_mesh(&f, mesh(4, 1, 1, 0)), -1, "no tp group");
	cr_assert_not_null(strstr(lks_errmsg(), "needs tp > 1"), "%s", lks_errmsg());
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_TENSORWISE, 0, 4, 5), 0);
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_FP8_DELAYED, 0, 4, 5), -1, "a history's scale");
	cr_assert_eq(lks_fault_fits(&f, LKS_RECIPE_BF16, 0, 4, 5), -1, "no FP8");
	cr_assert_eq(lks_fault_parse("amax_local rank=1", 0, &f), -1, "its operand is required");
}

/* ---- what each fault does to the data ---- */

Test(fault, bitflip_and_nan_change_one_element)
{
	float x[64], y[64];
	lks_fault f;

	for (int i = 0; i < 64; i++)
		x[i] = y[i] = 0.25f * (float)(i + 1);
	cr_assert_eq(lks_fault_parse("bitflip step=3 rank=1 tensor=t element=17 bit=22", 0, &f), 0);
	cr_assert_eq(lks_fault_tensor(&f, 2, 1, "t", x, 64), 0, "other step");
	cr_assert_eq(lks_fault_tensor(&f, 3, 0, "t", x, 64), 0, "other rank");
	cr_assert_eq(lks_fault_tensor(&f, 3, 1, "u", x, 64), 0, "other tensor");
	cr_assert_eq(memcmp(x, y, sizeof(x)), 0);
	cr_assert_eq(lks_fault_tensor(&f, 3, 1, "t", x, 64), 1);
	for (int i = 0; i < 64; i++) {
		uint32_t a, b;

		memcpy(&a, &x[i], 4);
		memcpy(&b, &y[i], 4);
		cr_assert_eq(a ^ b, i == 17 ? 1u << 22 : 0u, "element %d", i);
	}
	cr_assert_eq(lks_fault_tensor(&f, 3, 1, "t", x, 17), -1, "element 17 of 17");

	cr_assert_eq(lks_fault_parse("nan step=0 rank=0 tensor=t element=5", 0, &f), 0);
	memcpy(x, y, sizeof(x));
	cr_assert_eq(lks_fault_tensor(&f, 0, 0, "t", x, 64), 1);
	for (int i = 0; i < 64; i++)
		cr_assert(i == 5 ? isnan(x[i]) : x[i] == y[i], "element %d", i);
}

Test(fault, scale_round_up_is_the_next_power_of_two)
{
	/* amax 448 / 2^k gives an exact power-of-two scale, which rounding leaves alone */
	for (int k = -10; k <= 10; k++) {
		float amax = ldexpf(448.0f, k);

		cr_assert_eq(lks_fp8_scale(amax, LKS_FP8_E4M3, LKS_POW2_UP),
		             lks_fp8_scale(amax, LKS_FP8_E4M3, 1), "amax %g", amax);
	}
	/* any other amax: up is exactly twice down, and the exact scale lies between */
	for (float amax = 1e-3f; amax < 1e4f; amax *= 1.37f) {
		float down = lks_fp8_scale(amax, LKS_FP8_E4M3, 1);
		float up = lks_fp8_scale(amax, LKS_FP8_E4M3, LKS_POW2_UP);
		float exact = lks_fp8_scale(amax, LKS_FP8_E4M3, 0);

		if (exact == down)
			continue;
		cr_assert_eq(up, 2.0f * down, "amax %g", amax);
		cr_assert(down < exact && exact < up, "amax %g", amax);
	}
}

/* ---- case files ---- */

Test(fault, case_file_errors_name_the_run_line)
{
	char path[] = "/tmp/lks_fault_case_XXXXXX";
	int fd = mkstemp(path);
	lks_case c;

	cr_assert_geq(fd, 0);
	close(fd);
	write_file(path, "[case]\nsteps = 4\n[model]\nvocab = 16\nhidden = 8\nffn = 16\n"
	                 "layers = 1\nseq = 4\nbatch = 1\n\n[run a]\nrecipe = bf16\n"
	                 "inject = stale_bwd_scale\n");
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), -1);
	cr_assert_not_null(strstr(lks_errmsg(), ":11: run 'a': inject: stale_bwd_scale needs"),
	                   "%s", lks_errmsg());
	write_file(path, "[case]\nsteps = 4\n[model]\nvocab = 16\nhidden = 8\nffn = 16\n"
	                 "layers = 1\nseq = 4\nbatch = 1\n\n[run a]\nrecipe = bf16\n"
	                 "inject = bitflip step=1\n");
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), -1);
	cr_assert_not_null(strstr(lks_errmsg(), ":13: inject: bitflip needs rank="), "%s",
	                   lks_errmsg());
	unlink(path);
}

/* A case of text at path: "" when it loads, else the message. */
static const char *load_text(const char *path, const char *text)
{
	static char msg[1024];
	lks_case c;

	write_file(path, text);
	if (lks_case_load(path, NULL, 0, &c))
		return snprintf(msg, sizeof(msg), "%s", lks_errmsg()), msg;
	lks_case_release(&c);
	return "";
}

/* The fault in the run of a small case: "" when it loads, else the message. */
static const char *load_fault(const char *path, const char *run_keys, const char *inject)
{
	char text[1024];

	snprintf(text, sizeof(text), "[case]\nsteps = 4\nworld_size = 2\n[model]\nvocab = 16\n"
	         "hidden = 8\nffn = 16\nlayers = 1\nseq = 4\nbatch = 1\n\n[run a]\n%sinject = %s\n",
	         run_keys, inject);
	return load_text(path, text);
}

/* A bitflip or NaN aimed where it cannot act is bad input when the case is read (exit 2,
   file:line), not an infrastructure failure after the other runs have trained. */
Test(fault, tensor_and_element_checked_when_the_case_is_read)
{
	static const struct { const char *keys, *inject, *why; } t[] = {
		/* FP8 operands are codes and scales: no float to flip */
		{ "recipe = fp8_rowwise\n", "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.fwd.x element=0 bit=3",
		  ":12: run 'a': inject: 'blocks.0.mlp.up.fwd.x' is an FP8 operand (codes and scales): "
		  "bitflip acts on float tensors, such as the layer's output 'blocks.0.mlp.up.out'" },
		{ "recipe = fp8_delayed\n", "nan step=1 rank=1 tensor=blocks.0.mlp.down.wgrad.dy",
		  ":12: run 'a': inject: 'blocks.0.mlp.down.wgrad.dy' is an FP8 operand" },
		/* names the model does not have: a typo, a layer past the last */
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.0.mlp.upp.out",
		  ":12: run 'a': inject: the model has no tensor 'blocks.0.mlp.upp.out'" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.1.mlp.up.out",
		  ":12: run 'a': inject: the model has no tensor 'blocks.1.mlp.up.out'" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.01.mlp.up.out",
		  ":12: run 'a': inject: the model has no tensor 'blocks.01.mlp.up.out'" },
		/* a rank takes 1 sequence of 4 tokens: up.out is (4, 16), 64 elements */
		{ "recipe = bf16\n", "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out element=64 bit=3",
		  ":12: run 'a': inject: element 64 is out of range: 'blocks.0.mlp.up.out' has 64 "
		  "elements on a rank" },
		/* one rank takes the whole batch: 128 */
		{ "recipe = bf16\nworld_size = 1\n", "nan step=1 rank=0 tensor=blocks.0.mlp.up.out "
		  "element=128", ":12: run 'a': inject: element 128 is out of range: "
		  "'blocks.0.mlp.up.out' has 128 elements on a rank" },
		/* parameters and their gradients: head (16, 8), a norm's gain (8) */
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=head.weight.grad element=128",
		  ":12: run 'a': inject: element 128 is out of range: 'head.weight.grad' has 128" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.0.norm.weight element=8",
		  ":12: run 'a': inject: element 8 is out of range: 'blocks.0.norm.weight' has 8" },
		/* the flat gradient: embed 0-127, blocks.0.norm 128-135, its padding to 144, up
		   144-271, down 272-399, final_norm 400-407, padding, head 416-543 */
		{ "recipe = bf16\n", "bitflip_allreduce step=1 rank=1 element=140 bit=30",
		  ":12: run 'a': inject: element 140 lies in the padding between "
		  "'blocks.0.norm.weight' (places 128 to 135) and 'blocks.0.mlp.up.weight' (from "
		  "144), which holds no parameter's gradient" },
		{ "recipe = bf16\n", "bitflip_allreduce_out step=1 rank=0 element=408 bit=30",
		  ":12: run 'a': inject: element 408 lies in the padding between "
		  "'final_norm.weight' (places 400 to 407) and 'head.weight' (from 416)" },
		{ "recipe = bf16\n", "bitflip_allreduce step=1 rank=0 element=544 bit=3",
		  ":12: run 'a': inject: element 544 is out of range: the flat gradient has 544 "
		  "places, its 528 parameters' and the padding that starts each tensor at a "
		  "multiple of 16 floats" },
	};
	static const struct { const char *keys, *inject; } ok[] = {
		{ "recipe = bf16\n", "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out element=63 bit=3" },
		{ "recipe = bf16\nworld_size = 1\n", "nan step=1 rank=0 tensor=blocks.0.mlp.up.out element=127" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=head.weight.grad element=127" },
		{ "recipe = bf16\n", "nan step=1 rank=0 tensor=blocks.0.norm.weight element=7" },
		{ "recipe = fp8_rowwise\ncheckpoint = blocks\n", "nan step=1 rank=1 tensor=head.logits.grad" },
		{ "recipe = fp8_rowwise\n", "skip_allreduce step=1 rank=1" },
		{ "recipe = bf16\n", "bitflip_allreduce step=1 rank=1 element=135 bit=30" },
		{ "recipe = bf16\n", "bitflip_allreduce_out step=1 rank=1 element=144 bit=30" },
		{ "recipe = bf16\n", "bitflip_allreduce step=1 rank=1 element=543 bit=30" },
	};
	char path[] = "/tmp/lks_fault_model_XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *msg = load_fault(path, t[i].keys, t[i].inject);

		cr_assert(msg[0] && !strncmp(msg, path, strlen(path))
		          && !strncmp(msg + strlen(path), t[i].why, strlen(t[i].why)),
		          "%s: want '%s', got '%s'", t[i].inject, t[i].why, msg);
	}
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert_str_eq(load_fault(path, ok[i].keys, ok[i].inject), "", "%s", ok[i].inject);
	unlink(path);
}

/* A fault that could never act is refused when the case is read (file:line of the run), as
   one aimed past the model is: where the tail rs_drop_tail drops from a shard is padding,
   in a resumed run at a step before the steps it trains, amax_local or amax_group on an
   operand whose amax no tp group reduces (the recipe's scale group and the layout).
   The model's flat vector (layers = 2): embed 0-127, blocks.0.norm 128-135, padding to 144,
   up 144-271, down 272-399, blocks.1.norm 400-407, padding to 416, up 416-543, down
   544-671, final_norm 672-679, padding to 688, head 688-815, 816 places; fsdp = 2: shards
   of 416, the second's last 16 places padding past the vector's end. */
#define NEVER_CASE(ws) "[case]\nsteps = 4\nworld_size = " #ws "\n[model]\nvocab = 16\n" \
	"hidden = 8\nffn = 16\nlayers = 2\nseq = 4\nbatch = 1\n[run a]\nrecipe = bf16\n"
Test(fault, a_fault_that_never_acts_is_refused_when_the_case_is_read)
{
	static const struct { const char *text, *why; } t[] = {
		{ NEVER_CASE(2) "fsdp = 2\ninject = rs_drop_tail step=1 rank=1\n",
		  ":11: run 'a': inject: rs_drop_tail drops the last 1 place of rank 1's shard (to 831 "
		  "of the flat gradient), padding after 'head.weight', no parameter's: count=17 is "
		  "the smallest that reaches one on that rank" },
		{ NEVER_CASE(2) "fsdp = 2\ninject = rs_drop_tail step=1 rank=0 count=8\n",
		  ":11: run 'a': inject: rs_drop_tail drops the last 8 places of rank 0's shard (to "
		  "415 of the flat gradient), padding after 'blocks.1.norm.weight', no parameter's: "
		  "count=9 is" },
		/* HSDP: rank 3 holds shard 1 of its fsdp group; under tp rank 2 (shard 2 / 2 % 2) */
		{ NEVER_CASE(4) "fsdp = 2\ninject = rs_drop_tail step=1 rank=3 count=16\n",
		  ":11: run 'a': inject: rs_drop_tail drops the last 16 places of rank 3's shard" },
		{ NEVER_CASE(4) "fsdp = 2\ntp = 2\ninject = rs_drop_tail step=1 rank=2\n",
		  ":11: run 'a': inject: rs_drop_tail drops the last 1 place of rank 2's shard (to 831" },
		/* 16 shards of 64: the last three past the vector's end */
		{ NEVER_CASE(16) "fsdp = 16\ninject = rs_drop_tail step=1 rank=13 count=64\n",
		  ":11: run 'a': inject: rank 13's shard (places 832 to 895 of the flat gradient) is "
		  "all padding, no parameter's: rs_drop_tail never acts there" },
		/* vocab 15: head.weight 416-535, padded to 544 */
		{ "[case]\nsteps = 4\nworld_size = 2\n[model]\nvocab = 15\nhidden = 8\nffn = 16\n"
		  "layers = 1\nseq = 4\nbatch = 1\n[run a]\nrecipe = bf16\n"
		  "inject = bitflip_allreduce step=1 rank=0 element=540 bit=30\n",
		  ":11: run 'a': inject: element 540 lies in the padding after 'head.weight' (places "
		  "416 to 535), the last tensor, which holds no parameter's gradient" },
		/* a run resumed after step 2 trains steps 3 on: a fault of one step before */
		{ NEVER_CASE(2) "[run b]\nrecipe = bf16\nresume_from = a@2\ninject = bitflip step=1 "
		  "rank=1 tensor=blocks.0.mlp.up.out element=5 bit=22\n",
		  ":13: run 'b': inject: bitflip at step 1 never acts: the run resumes after step 2 "
		  "and trains only the steps after it" },
		{ NEVER_CASE(2) "[run b]\nrecipe = bf16\nresume_from = a@2\n"
		  "inject = skip_allreduce step=2 rank=0\n",
		  ":13: run 'b': inject: skip_allreduce at step 2 never acts" },
		/* nor one of what the steps before did */
		{ NEVER_CASE(2) "fsdp = 2\n[run b]\nrecipe = bf16\nfsdp = 2\nresume_from = a@1\n"
		  "inject = ag_stale step=3 rank=1\n",
		  ":14: run 'b': inject: ag_stale keeps what the steps before the resumed one did, so "
		  "it cannot be planted in a resumed run" },
		/* an operand whose amax no tp group reduces (up: column-parallel, down: row-) */
		{ NEVER_CASE(2) "tp = 2\n[run b]\nrecipe = fp8_tensorwise\ntp = 2\n"
		  "inject = amax_local tensor=blocks.0.mlp.up.fwd.x rank=1\n",
		  ":14: run 'b': inject: amax_local never acts on 'blocks.0.mlp.up.fwd.x' in this run: "
		  "no tensor-parallel group reduces its amax (fp8_tensorwise's scale group for it is "
		  "none: it is whole on every rank of the tp group)" },
		{ NEVER_CASE(2) "tp = 2\n[run b]\nrecipe = fp8_rowwise\ntp = 2\n"
		  "inject = amax_local tensor=blocks.1.mlp.up.fwd.w\n",
		  ":14: run 'b': inject: amax_local never acts on 'blocks.1.mlp.up.fwd.w' in this run: "
		  "no tensor-parallel group reduces its amax (fp8_rowwise's scale group for it is "
		  "none: its scales are per row or column across the split, each whole on one rank)" },
		{ NEVER_CASE(2) "tp = 2\n[run b]\nrecipe = fp8_rowwise_gw_hp\ntp = 2\n"
		  "inject = amax_local tensor=blocks.0.mlp.down.wgrad.dy\n",
		  ":14: run 'b': inject: amax_local never acts on 'blocks.0.mlp.down.wgrad.dy' in this "
		  "run: no tensor-parallel group reduces its amax (fp8_rowwise_gw_hp's scale group "
		  "for it is none: the recipe keeps it in BF16)" },
		{ NEVER_CASE(4) "tp = 2\nfsdp = 2\n[run b]\nrecipe = fp8_tensorwise\ntp = 2\n"
		  "fsdp = 2\nfp8_all_gather = on\ninject = amax_local tensor=blocks.0.mlp.down.fwd.w\n",
		  ":15: run 'b': inject: amax_local never acts on 'blocks.0.mlp.down.fwd.w' in this run: "
		  "no tensor-parallel group reduces its amax (fp8_tensorwise's scale group for it is "
		  "none: fp8_all_gather = on casts it from the fsdp shards" },
		{ NEVER_CASE(4) "tp = 2\n[run b]\nrecipe = fp8_tensorwise\ntp = 2\n"
		  "inject = amax_group tensor=blocks.0.mlp.down.dgrad.dy step=1\n",
		  ":14: run 'b': inject: amax_group never acts on 'blocks.0.mlp.down.dgrad.dy' in this "
		  "run" },
	};
	static const char *const ok[] = {
		NEVER_CASE(2) "fsdp = 2\ninject = rs_drop_tail step=1 rank=1 count=17\n",
		NEVER_CASE(2) "fsdp = 2\ninject = rs_drop_tail step=1 rank=0 count=9\n",
		NEVER_CASE(4) "fsdp = 2\ninject = rs_drop_tail step=1 rank=2 count=9\n",
		NEVER_CASE(4) "fsdp = 2\ntp = 2\ninject = rs_drop_tail step=1 rank=1 count=9\n",
		NEVER_CASE(16) "fsdp = 16\ninject = rs_drop_tail step=1 rank=12 count=17\n",
		/* sequence parallel's rows are no padded vector */
		NEVER_CASE(2) "tp = 2\nsequence_parallel = on\ninject = rs_drop_tail step=1 rank=1\n",
		/* after the resumed step, every step, or from a step on */
		NEVER_CASE(2) "[run b]\nrecipe = bf16\nresume_from = a@1\n"
		"inject = nan step=2 rank=0 tensor=head.logits\n",
		NEVER_CASE(2) "[run r]\nrecipe = fp8_rowwise\n[run b]\nrecipe = fp8_rowwise\n"
		"resume_from = r@2\ninject = scale_round_up\n",
		NEVER_CASE(2) "[run r]\nrecipe = fp8_rowwise\n[run b]\nrecipe = fp8_rowwise\n"
		"resume_from = r@2\ninject = scale_round_up step=1 rank=0\n",
		/* amax_local and amax_group where the tp group reduces the operand's amax */
		NEVER_CASE(2) "tp = 2\n[run b]\nrecipe = fp8_tensorwise\ntp = 2\n"
		"inject = amax_local tensor=blocks.0.mlp.up.fwd.w\n",
		NEVER_CASE(2) "tp = 2\n[run b]\nrecipe = fp8_rowwise\ntp = 2\n"
		"inject = amax_local tensor=blocks.1.mlp.down.fwd.x\n",
		NEVER_CASE(2) "tp = 2\n[run b]\nrecipe = fp8_rowwise_gw_hp\ntp = 2\n"
		"inject = amax_local tensor=blocks.0.mlp.up.dgrad.dy\n",
		NEVER_CASE(4) "tp = 2\nfsdp = 2\n[run b]\nrecipe = fp8_tensorwise\ntp = 2\n"
		"fsdp = 2\nfp8_all_gather = on\ninject = amax_local tensor=blocks.0.mlp.down.dgrad.w\n",
		NEVER_CASE(4) "tp = 2\n[run b]\nrecipe = fp8_tensorwise\ntp = 2\n"
		"inject = amax_group tensor=blocks.0.mlp.down.fwd.x step=1\n",
	};
	char path[] = "/tmp/lks_fault_never_XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *msg = load_text(path, t[i].text);

		cr_assert(msg[0] && !strncmp(msg, path, strlen(path))
		          && !strncmp(msg + strlen(path), t[i].why, strlen(t[i].why)),
		          "%s: want '%s', got '%s'", t[i].text, t[i].why, msg);
	}
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert_str_eq(load_text(path, ok[i]), "", "%s", ok[i]);
	unlink(path);
}

struct traced {
	char names[256][128];
	int n, nonfinite[256];
};

/* the names of step 0's tensors, and which had a non-finite value on rank 0 */
static void traced_on_step(void *arg, const lks_step_row *steps, int nsteps,
                           const lks_stat_row *stats, size_t nstats, char *const *names, int nnames)
{
	struct traced *t = arg;

	(void)steps, (void)nsteps;
	cr_assert_leq(nnames, 256);
	t->n = nnames;
	for (int i = 0; i < nnames; i++)
		snprintf(t->names[i], sizeof(t->names[i]), "%s", names[i]);
	for (size_t i = 0; i < nstats; i++)
		if (stats[i].step == 0 && stats[i].rank == 0)
			t->nonfinite[stats[i].seq] += stats[i].nonfinite > 0;
}

static int seen_before(const struct traced *t, int i)
{
	for (int j = 0; j < i; j++)
		if (!strcmp(t->names[j], t->names[i]))
			return 1;
	return 0;
}

/* One step of run with fault f planted (none: kind NONE); its tensors into t. */
static int run_traced(lks_case *c, lks_run_cfg *run, const lks_fault *f, struct traced *t)
{
	lks_runner_opts o = { .steps = 1, .threads = 1, .on_step = traced_on_step, .on_step_arg = t };
	lks_run_result res;

	memset(t, 0, sizeof(*t));
	run->inject = *f;
	return lks_run(c, run, NULL, &o, &res);
}

/* The model's table of tensors (lks_model_tensor, which the case check reads) is what a
   rank really traces: every traced name is in it, as float tensor or FP8 operand, and each
   float tensor has exactly the elements the table says: a NaN at the last one shows in
   that tensor's row, one past it is refused by the running model itself. */
Test(fault, tensor_table_is_what_the_model_traces, .timeout = 120)
{
	/* the model's keys beyond the sizes, and a run; with attention 2 heads of 10 (D 20, Q 60:
	   sizes unlike the others too) */
	static const struct { const char *model, *run; int attention; } runs[] = {
		{ "", "[run a]\nrecipe = fp8_rowwise\nworld_size = 2\n", 0 },
		{ "", "[run a]\nrecipe = fp8_delayed\ncheckpoint = blocks\nworld_size = 1\n", 0 },
		{ "attention = causal\nheads = 2\nhead_dim = 10\n",
		  "[run a]\nrecipe = fp8_delayed\ncheckpoint = blocks\nworld_size = 2\n", 1 },
	};
	char path[] = "/tmp/lks_fault_table_XXXXXX", text[1024];
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		struct traced clean, hit;
		lks_fault none = { .kind = LKS_FAULT_NONE, .step = -1, .rank = -1 };
		long long tokens;
		lks_case c;
		int nfloat = 0, nfp8 = 0;

		/* sizes all different, so that a wrong dimension shows */
		snprintf(text, sizeof(text), "[case]\nsteps = 2\nworld_size = 2\n[model]\nvocab = 24\n"
		         "hidden = 8\nffn = 12\nlayers = 2\nseq = 5\nbatch = 1\n%s%s", runs[k].model,
		         runs[k].run);
		write_file(path, text);
		cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
		tokens = 2LL * 5 / c.runs[0].world_size;
		cr_assert_eq(run_traced(&c, &c.runs[0], &none, &clean), 0, "%s", lks_errmsg());
		for (int i = 0; i < clean.n; i++) {
			const char *name = clean.names[i];
			lks_fault f = { .kind = LKS_FAULT_NAN, .step = 0, .rank = 0 };
			size_t n = 0;
			int kind = lks_model_tensor(&c.model, tokens, name, &n);

			cr_assert(kind == LKS_TENSOR_FLOAT || kind == LKS_TENSOR_FP8, "%s: not in the table",
			          name);
			nfp8 += kind == LKS_TENSOR_FP8;
			if (kind != LKS_TENSOR_FLOAT || seen_before(&clean, i))
				continue;  /* the recompute repeats the forward's names; the fault strikes
				              the forward */
			nfloat++;
			snprintf(f.tensor, sizeof(f.tensor), "%s", name);
			f.element = (int64_t)n - 1;
			cr_assert_eq(run_traced(&c, &c.runs[0], &f, &hit), 0, "%s: %s", name, lks_errmsg());
			cr_assert_geq(hit.nonfinite[i], 1, "%s: a NaN at element %zu did not show", name,
			              n - 1);
			f.element = (int64_t)n;
			cr_assert_neq(run_traced(&c, &c.runs[0], &f, &hit), 0, "%s: element %zu exists", name, n);
		}
		/* 2 layers: per block 5 forward and 7 backward float tensors, 3 parameters, 12 FP8
		   operands (2 per GEMM), and with attention as many more float tensors and
		   parameters (its backward: 4 gradients of activations, 3 of weights) and 12 FP8
		   operands more; outside them 8 float tensors and 3 parameters */
		cr_assert_eq(nfloat, 2 * (5 + 7 + 3) * (runs[k].attention ? 2 : 1) + 8 + 3,
		             "%s: %d float tensors", runs[k].run, nfloat);
		cr_assert_geq(nfp8, 2 * (runs[k].attention ? 24 : 12), "%s", runs[k].run);
		lks_case_release(&c);
	}
	unlink(path);
}

/* ---- what the sqnr check measures (harness/verify/sqnr.h) ---- */

/* The SQNR of a gradient: b the reference, a = b (1 + e) everywhere gives -20 log10 |e|. */
Test(fault, sqnr_db_of_a_known_error)
{
	float a[257], b[257];

	for (int i = 0; i < 257; i++) {
		b[i] = (float)(i - 128) / 64.0f;
		a[i] = b[i] * (1.0f + 0x1p-7f);  /* exact: b has few significant bits */
	}
	cr_assert_float_eq(lks_sqnr_db(a, b, 257), -20.0 * log10(0x1p-7), 1e-9);
	cr_assert(isinf(lks_sqnr_db(b, b, 257)) && lks_sqnr_db(b, b, 257) > 0, "equal: +inf");
	memset(b, 0, sizeof(b));
	cr_assert(isinf(lks_sqnr_db(a, b, 257)) && lks_sqnr_db(a, b, 257) < 0, "zero reference");
}

/* ---- skip_allreduce as a communicator (fault_comm.c) ---- */

struct skip_case {
	lks_comm *c[3];
	int step[3];
	float x[3][4][2];       /* [rank][step] the two elements after the all-reduce */
	int rc[3];
};

struct skip_arg {
	struct skip_case *k;
	int rank;
};

static void *skip_rank(void *p)
{
	struct skip_arg *a = p;
	struct skip_case *k = a->k;

	for (int s = 0; s < 4 && !k->rc[a->rank]; s++) {
		float *x = k->x[a->rank][s];

		k->step[a->rank] = s;
		x[0] = (float)(a->rank + 1) + 10.0f * (float)s;
		x[1] = -x[0];
		k->rc[a->rank] = lks_comm_allreduce_sum(k->c[a->rank], x, 2);
	}
	return NULL;
}

/* Rank 1, struck at step 2, keeps its own gradient then; the others get the sum, its part
   included; every other step is the sum everywhere. */
Test(fault, skip_allreduce_wraps_the_struck_ranks_communicator)
{
	struct skip_case k = { 0 };
	struct skip_arg a[3];
	pthread_t th[3];
	lks_fault f;

	cr_assert_eq(lks_fault_parse("skip_allreduce step=2 rank=1", 0, &f), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_comm_threads(3, k.c), 0);
	cr_assert_eq(lks_fault_comm(&f, &k.step[1], k.c[1], &k.c[1]), 0);
	cr_assert_eq(k.c[1]->rank, 1);
	cr_assert_eq(k.c[1]->size, 3);
	for (int r = 0; r < 3; r++) {
		a[r] = (struct skip_arg){ &k, r };
		pthread_create(&th[r], NULL, skip_rank, &a[r]);
	}
	for (int r = 0; r < 3; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < 3; r++) {
		cr_assert_eq(k.rc[r], 0, "rank %d", r);
		for (int s = 0; s < 4; s++) {
			float sum = 6.0f + 30.0f * (float)s, own = 2.0f + 10.0f * (float)s;
			float want = r == 1 && s == 2 ? own : sum;

			cr_expect_eq(k.x[r][s][0], want, "rank %d step %d: %g, not %g", r, s, k.x[r][s][0], want);
			cr_expect_eq(k.x[r][s][1], -want, "rank %d step %d", r, s);
		}
	}
	for (int r = 0; r < 3; r++)
		lks_comm_close(k.c[r]);
}
