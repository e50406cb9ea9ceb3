/*
 * test_screen.c: 'lockstep screen' on CPU stand-ins, as an operator runs it (LKS_BIN; the
 * screen's cases and goldens of the source tree, LKS_SRC): a clean node passes; a fault
 * planted on one stand-in (random step, tensor, element and bit) is named on that one and
 * only that one, at its step and tensor; replay names each class on its planted fault
 * (once only: transient; every time on one device: persistent; every device, even once
 * only: software; never the CPU, the replay's reference);
 * without goldens the odd device out is still found, and two that disagree, or a device
 * alone, are undecided;
 * the JSON and JUnit say the same; bad usage and bad plants exit 2. And 'bench detect
 * --flips' on a few flips: each caught at its step and tensor, no clean repeat differs;
 * on a case of its own, within each run's ranks, or refused up front.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_bin.h"

struct screen {
	char dir[64], json[128], junit[128];
	json_t *doc;
	char out[16384];
	int rc;
};

/* lockstep screen --backend cpu with args, the plant spec (NULL: none); the JSON read
   back where one was written. */
static void screen(struct screen *s, const char *plant, const char *args)
{
	char env[512] = "", cmd[1600];
	json_error_t e;

	snprintf(s->dir, sizeof(s->dir), "/tmp/lks_screen_test_XXXXXX");
	cr_assert_not_null(mkdtemp(s->dir));
	snprintf(s->json, sizeof(s->json), "%s/node.json", s->dir);
	snprintf(s->junit, sizeof(s->junit), "%s/node.xml", s->dir);
	if (plant)
		snprintf(env, sizeof(env), "LOCKSTEP_INJECT='%s'", plant);
	snprintf(cmd, sizeof(cmd), "cd '%s' && %s '%s' screen --backend cpu --json '%s' "
	         "--junit '%s' %s 2>&1", LKS_SRC, env, LKS_BIN, s->json, s->junit, args);
	s->rc = lks_run_sh(cmd, s->out, sizeof(s->out));
	s->doc = access(s->json, F_OK) == 0 ? json_load_file(s->json, 0, &e) : NULL;
}

static void screen_done(struct screen *s)
{
	char cmd[200];

	json_decref(s->doc);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
	cr_assert_eq(system(cmd), 0);
}

static json_t *gpu(const struct screen *s, int i)
{
	json_t *g = json_array_get(json_object_get(s->doc, "gpus"), (size_t)i);

	cr_assert_not_null(g, "no gpus[%d] in %s", i, s->out);
	return g;
}

static const char *str_at(json_t *o, const char *k1, const char *k2)
{
	json_t *v = json_object_get(o, k1);

	if (k2)
		v = json_object_get(v, k2);
	return json_is_string(v) ? json_string_value(v) : "";
}

static long long int_at(json_t *o, const char *k1, const char *k2)
{
	return json_integer_value(json_object_get(json_object_get(o, k1), k2));
}

/* Every stand-in passed but those in failed (a bit per index). */
static void only_failed(const struct screen *s, int n, unsigned failed)
{
	for (int i = 0; i < n; i++)
		cr_assert_str_eq(str_at(gpu(s, i), "verdict", NULL), failed >> i & 1 ? "fail" : "pass",
		                 "stand-in %d: %s", i, s->out);
}

/* A clean node passes; its devices' databases hold no training state (each run's state
   after every step, 100 MB a stand-in in the quick mode, took 70% of the screen's time:
   a replay now makes the one it needs). */
Test(screen, a_clean_node_passes_against_its_goldens, .timeout = 120)
{
	char work[] = "/tmp/lks_screen_work_XXXXXX", args[200], cmd[400], out[256];
	struct screen s;

	cr_assert_not_null(mkdtemp(work));
	snprintf(args, sizeof(args), "--standins 4 --dir '%s'", work);
	screen(&s, NULL, args);
	cr_assert_eq(s.rc, 0, "%s", s.out);
	for (int i = 0; i < 4; i++) {
		snprintf(cmd, sizeof(cmd), "sqlite3 '%s/gpu%d.db' 'SELECT count(*) FROM states; "
		         "SELECT count(*) > 0 FROM stats' 2>&1", work, i);
		cr_assert_eq(lks_run_sh(cmd, out, sizeof(out)), 0, "%s", out);
		cr_assert_str_eq(out, "0\n1\n", "stand-in %d: states, stats: %s", i, out);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
	cr_assert_eq(system(cmd), 0);
	cr_assert_str_eq(str_at(s.doc, "result", NULL), "pass");
	cr_assert_eq(json_array_size(json_object_get(s.doc, "gpus")), 4);
	only_failed(&s, 4, 0);
	for (int i = 0; i < 4; i++) {
		cr_assert_str_eq(str_at(gpu(&s, i), "known_answer", NULL), "golden");
		cr_assert_eq(json_integer_value(json_object_get(gpu(&s, i), "index")), i);
	}
	screen_done(&s);
}

/* A random fault on a random stand-in of four: that one fails and no other, located at
   the planted step and tensor; the replay calls it persistent. Four draws; under the
   sanitizers (ci/sanitize sets LKS_TEST_RERUNS=1) the first alone: the draws vary the
   place, not the code that runs. */
Test(screen, a_planted_faulty_standin_is_named_and_only_it, .timeout = 300)
{
	static const char *const tensors[] = {
		"blocks.0.mlp.up.out", "blocks.1.attn.qkv.weight", "blocks.0.mlp.down.weight",
		"blocks.1.attn.proj.out", "blocks.0.attn_norm.out", "head.weight",
		"blocks.1.mlp.up.weight.grad", "blocks.0.mlp.up.weight.adam_m",
		"blocks.1.attn.qkv.weight.adam_v", "blocks.0.attn_norm.weight.grad_sum",
	};
	const char *env = getenv("LKS_TEST_RERUNS");
	int trials = env && atoi(env) == 1 ? 1 : 4;
	unsigned seed = 34;

	for (int trial = 0; trial < trials; trial++) {
		int dev = (int)(rand_r(&seed) % 4), step = 1 + (int)(rand_r(&seed) % 5);
		const char *t = tensors[rand_r(&seed) % (sizeof(tensors) / sizeof(tensors[0]))];
		char plant[256];
		struct screen s;

		snprintf(plant, sizeof(plant), "bitflip step=%d rank=0 tensor=%s element=%u bit=%u "
		         "device=%d", step, t, rand_r(&seed) % 64, rand_r(&seed) % 32, dev);
		screen(&s, plant, "--standins 4");
		cr_assert_eq(s.rc, 1, "%s: %s", plant, s.out);
		only_failed(&s, 4, 1u << dev);
		cr_assert_eq(int_at(gpu(&s, dev), "divergence", "step"), step, "%s", plant);
		cr_assert_str_eq(str_at(gpu(&s, dev), "divergence", "tensor"), t, "%s", plant);
		cr_assert_str_eq(str_at(gpu(&s, dev), "replay", "class"), "persistent", "%s: %s",
		                 plant, s.out);
		cr_assert_eq(json_integer_value(json_array_get(json_object_get(s.doc, "not_passed"),
		                                                0)), dev);
		screen_done(&s);
	}
}

/* Each replay class on its planted fault: once only, every time on one stand-in, every
   stand-in. Every stand-in departing alike is software even once only, where each one's
   replay gives the known answer (it was transient on each: a fault of no one device). */
Test(screen, replay_names_transient_persistent_and_software, .timeout = 300)
{
	static const struct { const char *keys, *cls, *words; unsigned failed; } cases[] = {
		{ "device=1 times=once", "transient", "the known answer", 2 },
		{ "device=1", "persistent", "departs again, the same bits", 2 },
		{ "", "software", "; every device departed alike", 7 },
		{ "times=once", "software", "the known answer; but every device departed alike", 7 },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char plant[256];
		struct screen s;

		snprintf(plant, sizeof(plant), "bitflip step=3 rank=0 tensor=blocks.1.mlp.up.out "
		         "element=5 bit=12 %s", cases[k].keys);
		screen(&s, plant, "--standins 3");
		cr_assert_eq(s.rc, 1, "%s", s.out);
		only_failed(&s, 3, cases[k].failed);
		for (int i = 0; i < 3; i++) {
			if (cases[k].failed >> i & 1) {
				cr_assert_str_eq(str_at(gpu(&s, i), "replay", "class"), cases[k].cls,
				                 "%s: %s", plant, s.out);
				cr_assert_not_null(strstr(str_at(gpu(&s, i), "replay", "words"),
				                          cases[k].words), "%s: %s", plant, s.out);
			}
		}
		screen_done(&s);
	}
}

/* Without goldens the devices are the known answer: the odd one of three is named; two
   that disagree leave no majority, and no verdict but undecided. */
Test(screen, without_goldens_the_majority_decides, .timeout = 300)
{
	const char *plant = "bitflip step=2 rank=0 tensor=blocks.0.mlp.up.out element=9 bit=3 "
	                    "device=1";
	char args[200];
	struct screen s;

	snprintf(args, sizeof(args), "--standins 3 --golden /nonexistent");
	screen(&s, plant, args);
	cr_assert_eq(s.rc, 1, "%s", s.out);
	only_failed(&s, 3, 2);
	cr_assert_str_eq(str_at(gpu(&s, 1), "known_answer", NULL), "majority");
	cr_assert_str_eq(str_at(gpu(&s, 1), "replay", "class"), "persistent", "%s", s.out);
	screen_done(&s);
	screen(&s, plant, "--standins 2 --golden /nonexistent");
	cr_assert_eq(s.rc, 1, "%s", s.out);
	for (int i = 0; i < 2; i++)
		cr_assert_str_eq(str_at(gpu(&s, i), "verdict", NULL), "undecided", "%s", s.out);
	screen_done(&s);
	/* a device alone is no majority, faulty or not: it agrees only with itself */
	screen(&s, plant, "--standins 3 --gpus 1 --golden /nonexistent");
	cr_assert_eq(s.rc, 1, "%s", s.out);
	cr_assert_str_eq(str_at(gpu(&s, 0), "verdict", NULL), "undecided", "%s", s.out);
	screen_done(&s);
}

/* A device screened alone, its golden departed from: the CPU gives the known answer from
   its state, so the fault is the device's (persistent); it was called software, "every
   device departed alike", on a node of one GPU. */
Test(screen, a_device_alone_is_replayed_against_the_cpu, .timeout = 120)
{
	struct screen s;

	screen(&s, "bitflip step=2 rank=0 tensor=blocks.0.mlp.up.out element=7 bit=22 device=2",
	       "--standins 4 --gpus 2");
	cr_assert_eq(s.rc, 1, "%s", s.out);
	cr_assert_str_eq(str_at(gpu(&s, 0), "verdict", NULL), "fail", "%s", s.out);
	cr_assert_str_eq(str_at(gpu(&s, 0), "replay", "class"), "persistent", "%s", s.out);
	screen_done(&s);
}

/* A plant without device= strikes every device screened, here one alone, and never the
   CPU, the reference its replay is held to: the CPU gives the known answer (persistent);
   the plant was in the CPU's replay too, which "departs too" (software). */
Test(screen, a_plant_on_every_device_is_not_on_the_cpu, .timeout = 120)
{
	static const char *const args[] = { "--standins 1", "--standins 4 --gpus 2" };

	for (size_t k = 0; k < sizeof(args) / sizeof(args[0]); k++) {
		struct screen s;

		screen(&s, "bitflip step=3 rank=0 tensor=blocks.0.mlp.up.out element=3 bit=22",
		       args[k]);
		cr_assert_eq(s.rc, 1, "%s: %s", args[k], s.out);
		cr_assert_str_eq(str_at(gpu(&s, 0), "verdict", NULL), "fail", "%s", s.out);
		cr_assert_str_eq(str_at(gpu(&s, 0), "replay", "class"), "persistent", "%s: %s",
		                 args[k], s.out);
		cr_assert_not_null(strstr(str_at(gpu(&s, 0), "replay", "words"),
		                          "on the CPU from that state: the known answer"), "%s",
		                   s.out);
		screen_done(&s);
	}
}

/* A departure at step 0 is replayed from the initial parameters, no device's state, and
   its words say so (they said "from stand-in 0's state"). */
Test(screen, a_replay_at_step_0_says_it_starts_from_the_initial_parameters, .timeout = 120)
{
	static const struct { const char *keys, *cls, *words; } cases[] = {
		{ "times=once", "transient",
		  "step 0 again on stand-in 2 from the initial parameters: the known answer" },
		{ "", "persistent", "step 0 again on stand-in 2 from the initial parameters: "
		  "departs again, the same bits; on stand-in 0 from them: the known answer" },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char plant[200];
		struct screen s;

		snprintf(plant, sizeof(plant), "bitflip step=0 rank=0 tensor=blocks.0.mlp.up.weight "
		         "element=5 bit=30 device=2 %s", cases[k].keys);
		screen(&s, plant, "--standins 3");
		cr_assert_eq(s.rc, 1, "%s", s.out);
		only_failed(&s, 3, 4);
		cr_assert_str_eq(str_at(gpu(&s, 2), "replay", "class"), cases[k].cls, "%s", s.out);
		cr_assert_str_eq(str_at(gpu(&s, 2), "replay", "words"), cases[k].words, "%s",
		                 s.out);
		screen_done(&s);
	}
}

/* --budget S: no replay starts after S seconds of the screen, so --budget 0 none (it was
   no bound); a device left out says so, with words (they were empty), and its progress
   line does not say "replaying". Without --budget the replays have no bound. */
Test(screen, budget_0_starts_no_replay_and_says_so, .timeout = 120)
{
	const char *plant = "bitflip step=3 rank=0 tensor=blocks.0.mlp.up.out element=3 bit=22 "
	                    "device=1";
	const char *words;
	struct screen s;

	screen(&s, plant, "--standins 2 --budget 0");
	cr_assert_eq(s.rc, 1, "%s", s.out);
	only_failed(&s, 2, 2);
	cr_assert_str_eq(str_at(gpu(&s, 1), "replay", "class"), "not replayed (budget spent)",
	                 "%s", s.out);
	words = str_at(gpu(&s, 1), "replay", "words");
	cr_assert_not_null(strstr(words, "no replay starts after 0 s"), "words '%s': %s", words,
	                   s.out);
	cr_assert_not_null(strstr(s.out, "at step 3: not replayed, the budget spent"), "%s",
	                   s.out);
	cr_assert_null(strstr(s.out, "replaying"), "%s", s.out);
	cr_assert_null(strstr(s.out, "(budget spent): \n"), "%s", s.out);
	screen_done(&s);
	screen(&s, plant, "--standins 2 --budget 1e9");
	cr_assert_eq(s.rc, 1, "%s", s.out);
	cr_assert_str_eq(str_at(gpu(&s, 1), "replay", "class"), "persistent", "%s", s.out);
	screen_done(&s);
}

/* --gpus chooses stand-ins; the JUnit file has a testcase per device, a failure for the
   faulty one. */
Test(screen, gpus_choose_and_junit_says_the_same, .timeout = 120)
{
	char *xml = NULL;
	size_t len = 0;
	FILE *f;
	struct screen s;

	screen(&s, "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out element=1 bit=30 device=3",
	       "--standins 5 --gpus 1,3");
	cr_assert_eq(s.rc, 1, "%s", s.out);
	cr_assert_eq(json_array_size(json_object_get(s.doc, "gpus")), 2);
	cr_assert_eq(json_integer_value(json_object_get(gpu(&s, 1), "index")), 3);
	only_failed(&s, 2, 2);
	cr_assert_not_null(f = fopen(s.junit, "r"));
	cr_assert_gt(getdelim(&xml, &len, 0, f), 0);
	fclose(f);
	cr_assert_not_null(strstr(xml, "tests=\"2\" failures=\"1\" errors=\"0\""), "%s", xml);
	cr_assert_not_null(strstr(xml, "name=\"stand-in 3\""), "%s", xml);
	free(xml);
	screen_done(&s);
}

Test(screen, bad_usage_and_bad_plants_exit_2, .timeout = 120)
{
	static const char *const bad[][3] = {
		{ NULL, "--standins 4 --gpus 4", "indices from 0 to 3" },
		{ NULL, "--standins 4 --gpus 1,1", "twice" },
		{ NULL, "--standins 4 --gpus 0,", "indices from 0 to 3" },
		{ NULL, "--mode fast", "quick" },
		{ NULL, "--standins 2 --db /tmp", "not a lockstep database" },
		{ NULL, "--standins 2 --db ''", "wants a path" },
		{ "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out element=1 bit=3 device=x", "",
		  "device=INDEX" },
		{ "bitflip step=1 rank=0 tensor=no.such element=1 bit=3", "", "inject" },
		{ "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out element=1 bit=3 times=twice", "",
		  "times=once" },
		/* plants that would never act, and the screen pass untested */
		{ "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out element=1 bit=3 device=7",
		  "--standins 4", "device=7 is not one of the devices screened" },
		{ "bitflip step=1 rank=0 tensor=blocks.0.mlp.up.out element=1 bit=3 device=1",
		  "--standins 3 --gpus 0,2", "device=1 is not one of the devices screened" },
		{ "stale_bwd_scale device=1", "--standins 3", "acts through what earlier steps left" },
		/* a plant no run fits says why, as run does, run= or not (it said only 'no run
		   fits') */
		{ "bitflip step=6 rank=0 tensor=blocks.0.mlp.up.out element=3 bit=9 device=1",
		  "--standins 2", "fits 'bitflip'; run 'bf16': step 6 is past the run's 6 steps" },
		{ "bitflip step=2 rank=1 tensor=blocks.0.mlp.up.out element=3 bit=9 device=1",
		  "--standins 2", "; run 'bf16': rank 1 is past the run's 1 ranks" },
		{ "bitflip step=2 rank=0 tensor=blocks.0.mlp.up.out element=99999999 bit=9",
		  "--standins 2", "; run 'bf16': element 99999999 is out of range" },
		/* a case folder that is not there: the user's input, as run says (it was 3) */
		{ NULL, "--standins 2 --cases /nonexistent", "cannot open '/nonexistent/" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct screen s;

		screen(&s, bad[i][0], bad[i][1]);
		cr_assert_eq(s.rc, 2, "%s: %s", bad[i][1], s.out);
		cr_assert_not_null(strstr(s.out, bad[i][2]), "want '%s' in: %s", bad[i][2], s.out);
		cr_assert_null(s.doc, "no JSON for bad usage");
		screen_done(&s);
	}
}

/* 'bench detect --flips': a flip in each of the five places, three times over, each caught
   where it was planted; clean repeats never differ. The seed fixes every choice, and the
   CPU's bits are the same on every machine, so the outcome is the same everywhere. Under
   the sanitizers (LKS_TEST_RERUNS=1) each place once, and one clean repeat: more draws
   vary the place, not the code that runs. */
Test(screen, bench_flips_catches_and_locates_each_flip, .timeout = 300)
{
	static const char *const places[] = { "GEMM outputs", "weights", "optimizer state (m, v)",
	                                      "all-reduce: the buffer sent",
	                                      "all-reduce: the sum received" };
	const char *env = getenv("LKS_TEST_RERUNS");
	int times = env && atoi(env) == 1 ? 1 : 3;
	char cmd[1200], out[8192], row[128];

	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' bench detect --flips %d --repeats %d 2>&1",
	         LKS_SRC, LKS_BIN, 5 * times, times);
	cr_assert_eq(lks_run_sh(cmd, out, sizeof(out)), 0, "%s", out);
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		snprintf(row, sizeof(row), "| %s | %d | %d | %d | 0 |", places[i], times, times, times);
		cr_assert_not_null(strstr(out, row), "want '%s' in: %s", row, out);
	}
	snprintf(row, sizeof(row), "clean repeats: %d, false alarms: 0", times);
	cr_assert_not_null(strstr(out, row), "%s", out);
}

/* 'bench detect --flips --case FILE' of the case file text runs (after the model): its
   output into out, its exit status returned. */
static int bench_flips_on(const char *runs, const char *args, char *out, size_t n)
{
	char dir[] = "/tmp/lks_flips_case_XXXXXX", path[128], cmd[600];
	FILE *f;
	int rc;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.ini", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fprintf(f, "[case]\nsteps = 3\nworld_size = 2\n[model]\nvocab = 64\nhidden = 32\n"
	        "ffn = 64\nlayers = 1\nseq = 8\nbatch = 2\n%s", runs);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' bench detect --dir '%s' --case '%s' %s 2>&1", LKS_BIN,
	         dir, path, args);
	rc = lks_run_sh(cmd, out, n);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	return rc;
}

/* The flips are drawn within each run's own ranks and tensors, and the banner says them
   (it said "on 2 ranks" of every case, drew ranks 0 and 1 and a GEMM output's elements
   of 2 ranks in every run: a run of 1 rank, or 4 with a smaller slice of the batch, was
   refused mid-way as an infrastructure failure, exit 3). A case they cannot be drawn in
   is refused before any run, exit 2, saying why (not "(after --set)": the user gave none). */
Test(screen, bench_flips_draws_within_each_runs_ranks_or_refuses_the_case, .timeout = 300)
{
	static const struct { const char *runs, *want; } bad[] = {
		{ "[run dp]\nrecipe = bf16\n[run sharded]\nrecipe = bf16\nfsdp = 2\n",
		  "run 'sharded' shards its tensors over its ranks (fsdp = 2)" },
		{ "[run a]\nrecipe = bf16\nworld_size = 1\n[run b]\nrecipe = bf16\n"
		  "world_size = 1\n", "no run of 2 ranks or more" },
		{ "[run a]\nrecipe = bf16\n[run b]\nrecipe = bf16\nresume_from = a@1\n",
		  "run 'b' resumes from run 'a'" },
	};
	char out[8192];
	int rc;

	rc = bench_flips_on("[run two]\nrecipe = bf16\n[run one]\nrecipe = bf16\n"
	                    "world_size = 1\n[run four]\nrecipe = fp8_rowwise\n"
	                    "world_size = 4\n", "--flips 20 --seed 7", out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_not_null(strstr(out, "3 runs, ranks: two on 2, one on 1, four on 4; 20 flips"),
	                   "%s", out);
	cr_assert_not_null(strstr(out, "| all-reduce: the sum received | 4 |"), "%s", out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = bench_flips_on(bad[i].runs, "--flips 5", out, sizeof(out));
		cr_assert_eq(rc, 2, "%s", out);
		cr_assert_not_null(strstr(out, bad[i].want), "want '%s' in: %s", bad[i].want, out);
		cr_assert_null(strstr(out, "--set"), "%s", out);
		cr_assert_null(strstr(out, "| planted in |"), "%s", out);
	}
}

/* --repeats M without flips: the clean runs alone, no table of flips (it printed one of
   zeros, where --help said --flips 0 was the fault cases instead). */
Test(screen, bench_repeats_alone_runs_the_clean_runs_only, .timeout = 120)
{
	char out[8192];
	int rc;

	rc = bench_flips_on("[run a]\nrecipe = bf16\n", "--flips 0 --repeats 2", out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_not_null(strstr(out, "clean repeats: 2, false alarms: 0"), "%s", out);
	cr_assert_null(strstr(out, "| planted in |"), "%s", out);
}
