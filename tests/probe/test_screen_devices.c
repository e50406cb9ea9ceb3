/*
 * test_screen_devices.c: the screen's path for GPUs, on the CPU: standin_link.h's backend,
 * whose memory is not the host's and whose contexts name a GPU each (describe: uuid
 * GPU-standin-<slot>), stands in for CUDA. Each device's runs are placed on it (its
 * index as the runner's local rank), its UUID and name read from its own context before
 * any run, and a fault planted on one is named on that one only, and replayed persistent.
 * Their runs are reference mode, so they are held to golden/cpu, as a GPU's are. With the
 * fake NVML of the tests (its devices named as the stand-ins), each device's PCI bus id,
 * serial and readings are NVML's of the device of its UUID.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "standin_link.h"
#include "harness/probe/screen.h"

static lks_screen_coll coll;

/* The screen of n stand-in GPUs (gpus 0: the CPU's stand-ins instead; with collective, the
   run across them too, into coll). */
static void screen_run(const char *plant, lks_screen_dev *devs, int n, int collective,
                       int gpus)
{
	static lks_backend be;
	char dir[] = "/tmp/lks_screen_dev_XXXXXX", cmd[128];
	lks_screen_opts o = {
		.case_path = LKS_SRC "/cases/screen/screen_quick.ini", .golden = LKS_SRC "/golden",
		.gemm = LKS_GEMM_REFERENCE, .threads = 1, .inject = plant,
		.collective = collective, .coll = &coll,
	};

	standin_reset();
	be = standin_backend();
	o.be = gpus ? &be : NULL;
	cr_assert_not_null(mkdtemp(dir));
	o.workdir = dir;
	memset(devs, 0, sizeof(*devs) * (size_t)n);
	for (int i = 0; i < n; i++)
		devs[i].index = i;
	cr_assert_eq(lks_screen_run(&o, devs, n), 0, "%s", lks_errmsg());
	lks_screen_release(devs, n);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static void screen_standins(const char *plant, lks_screen_dev *devs, int n)
{
	screen_run(plant, devs, n, 0, 1);
}

Test(screen_devices, each_device_named_by_its_context_and_held_to_the_others, .timeout = 300)
{
	lks_screen_dev devs[3];
	char want[48];

	screen_standins(NULL, devs, 3);
	for (int i = 0; i < 3; i++) {
		snprintf(want, sizeof(want), "GPU-standin-%d", i);
		cr_assert_eq(devs[i].standin, 0);
		cr_assert_str_eq(devs[i].uuid, want);
		cr_assert_str_eq(devs[i].name, "stand-in GPU");
		cr_assert_eq(devs[i].verdict, LKS_SCREEN_PASS, "device %d: %s", i, devs[i].error);
		cr_assert_eq(devs[i].golden, 1, "reference mode: the cpu class's goldens");
	}
}

/* NVML's devices in another order than the screen's: each is matched by its UUID */
Test(screen_devices, nvml_names_each_device_by_its_uuid, .timeout = 300)
{
	lks_screen_dev devs[2];

	setenv("LKS_NVML_LIB", FAKE_NVML, 1);
	setenv("FAKE_NVML_UUID", "GPU-standin-", 1);
	setenv("FAKE_NVML_DEVICES", "3", 1);
	screen_standins(NULL, devs, 2);
	for (int i = 0; i < 2; i++) {
		char pci[32], serial[32];

		snprintf(pci, sizeof(pci), "00000000:%02X:00.0", 0x10 + i);
		snprintf(serial, sizeof(serial), "fake-serial-%d", i);
		cr_assert_eq(devs[i].nvml, 1, "device %d read by NVML", i);
		cr_assert_str_eq(devs[i].pci, pci);
		cr_assert_str_eq(devs[i].serial, serial);
		cr_assert_str_eq(devs[i].before.uuid, devs[i].uuid);
		cr_assert_str_eq(devs[i].findings, "");
	}
}

Test(screen_devices, a_faulty_device_is_named_and_replayed_persistent, .timeout = 300)
{
	lks_screen_dev devs[3];

	screen_standins("bitflip step=4 rank=0 tensor=blocks.1.mlp.down.out element=11 bit=17 "
	                "device=2", devs, 3);
	cr_assert_eq(devs[0].verdict, LKS_SCREEN_PASS);
	cr_assert_eq(devs[1].verdict, LKS_SCREEN_PASS);
	cr_assert_eq(devs[2].verdict, LKS_SCREEN_FAIL);
	cr_assert_eq(devs[2].div.step, 4);
	cr_assert_str_eq(devs[2].div.tensor, "blocks.1.mlp.down.out");
	cr_assert_eq(devs[2].cls, LKS_REPLAY_PERSISTENT, "%s", devs[2].replay);
}

/* --mode full's run across the GPUs: a rank each, the all-reduce on the stand-ins' device
   link, bit for bit the CPU's threads; a flip in the sum one rank receives names that
   GPU, which alone gave the known answer. */
Test(screen_devices, the_run_across_the_gpus_matches_the_cpu_and_names_a_bad_link,
     .timeout = 300)
{
	lks_screen_dev devs[3];

	screen_run(NULL, devs, 3, 1, 1);
	cr_assert_eq(coll.ran, 1, "%s", coll.note);
	cr_assert_eq(coll.failed, 0, "step %d rank %d '%s'", coll.div.step, coll.div.rank,
	             coll.div.tensor);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(devs[i].verdict, LKS_SCREEN_PASS);
	screen_run("bitflip_allreduce_out step=3 rank=2 element=100 bit=26", devs, 3, 1, 1);
	cr_assert_eq(coll.ran, 1, "%s", coll.note);
	cr_assert_eq(coll.failed, 1);
	cr_assert_eq(coll.gpu, 2);
	cr_assert_eq(coll.div.step, 3);
	cr_assert_eq(devs[0].verdict, LKS_SCREEN_PASS);
	cr_assert_eq(devs[1].verdict, LKS_SCREEN_PASS);
	cr_assert_eq(devs[2].verdict, LKS_SCREEN_FAIL);
	cr_assert_not_null(strstr(devs[2].run, "across the GPUs"), "%s", devs[2].run);
	/* stand-ins of the CPU have no device communicator: not run, and why */
	screen_run(NULL, devs, 2, 1, 0);
	cr_assert_eq(coll.ran, 0);
	cr_assert_not_null(strstr(coll.note, "stand-ins share the CPU"), "%s", coll.note);
}
