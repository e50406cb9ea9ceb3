/*
 * test_mesh.c: the mesh's bit-for-bit promises on layouts the suite's cases leave out, run
 * as a user would (LKS_BIN, tests/engine/CMakeLists.txt): FSDP against DP on 2 ranks under
 * every recipe of the table (cases/fsdp.ini has 4 ranks under each, 2 under one), with the
 * FP8 all-gather where the recipe has it (a weight scaled per tensor), and fsdp 2 x tp 2
 * against dp 2 x tp 2 under every recipe (cases/tp.ini has two). Each pair is one bitwise
 * check over every traced tensor of every step; a pair that differs names where.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fault_fixture.h"
#include "fault_run_fixture.h"
#include "run_bin.h"
#include "harness/engine/recipe.h"

/* whether a recipe scales the forward's weight per tensor in FP8 (fp8_all_gather fits) */
static int weight_per_tensor(lks_recipe r)
{
	const lks_operand_rule *w = &lks_recipe_rules_of(r)->op[LKS_ROLE_FWD][1];

	return (w->dtype == LKS_E4M3 || w->dtype == LKS_E5M2) && w->scaling == LKS_SCALE_TENSOR;
}

/* One case of world_size ranks: for every recipe a run of the base layout (base: run keys)
   and one of the sharded layout (sharded), and a bitwise check of each pair; with ag, also
   the sharded layout with the FP8 all-gather where it fits. Every check must pass. */
static void pairs(int world_size, const char *base, const char *sharded, int ag)
{
	static char text[32768];
	char dir[] = "/tmp/lks_mesh_XXXXXX", path[600], db[600], args[1400], out[65536];
	size_t len = 0;
	int checks = 0;
	struct verdicts v;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/m.ini", dir);
	snprintf(db, sizeof(db), "%s/m.db", dir);
	case_add(text, sizeof(text), &len, "[case]\nsteps = 4\nworld_size = %d\n"
	    "[model]\nvocab = 64\nhidden = 32\nffn = 64\nlayers = 2\nseq = 8\nbatch = 1\n"
	    "attention = causal\nheads = 2\n", world_size);
	for (int r = 0; r < LKS_RECIPE_COUNT; r++) {
		const char *name = lks_recipe_name((lks_recipe)r);

		case_add(text, sizeof(text), &len, "[run base_%s]\nrecipe = %s\n%s\n"
		    "[run sharded_%s]\nrecipe = %s\n%s\n"
		    "[check caught_%s]\nkind = bitwise\na = sharded_%s\nb = base_%s\n",
		    name, name, base, name, name, sharded, name, name, name);
		checks++;
		if (!ag || !weight_per_tensor((lks_recipe)r))
			continue;
		case_add(text, sizeof(text), &len, "[run ag_%s]\nrecipe = %s\n%s\nfp8_all_gather = on\n"
		    "[check caught_ag_%s]\nkind = bitwise\na = ag_%s\nb = base_%s\n",
		    name, name, sharded, name, name, name);
		checks++;
	}
	write_file(path, text);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	read_verdicts(db, &v);
	cr_assert_eq(v.pass, checks, "%s", out);
	cr_assert_geq(checks, 6, "every recipe, and the FP8 all-gather of two");
	remove_db(db);
	unlink(path);
	rmdir(dir);
}

Test(mesh, fsdp_2_is_dp_2_under_every_recipe, .timeout = 300)
{
	pairs(2, "", "fsdp = 2", 1);
}

Test(mesh, fsdp_2_x_tp_2_is_dp_2_x_tp_2_under_every_recipe, .timeout = 300)
{
	pairs(4, "tp = 2", "tp = 2\nfsdp = 2", 1);
}
