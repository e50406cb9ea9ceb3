/*
 * test_nvml.c: GPU health through NVML (kernels/nvml/nvml.h), on the CPU.
 *
 * No GPU and no NVML here: the library is a fake (tests/kernels/fake_nvml.c, built as a shared
 * library in four variants) whose answers the test sets through 'fake_nvml', found
 * with dlsym in the very library lks_nvml_open loads. What is checked: an absent library
 * is "absent" with the reason and not an error; readings of two devices; a rise of ECC
 * counts and an XID are findings, clocks or temperature that moved are not; NVML's error
 * codes come with NVML's strings; a library lacking a function, or having only the first
 * PCI info call; the devices selected by UUID read in the selection's order, however
 * NVML orders them, each with its own PCI bus id, serial and clocks. The GPU health of a
 * run is test_gpu_health.c's; both share nvml_fixture.h. What a real NVML answers on a
 * real GPU is not checked here.
 */#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nvml/nvml.h"
#include "nvml_fixture.h"

static void *fake_lib;

fake_nvml_state *fake_open(const char *path)
{
	fake_nvml_state *s;

	fake_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert(fake_lib, "cannot load the fake '%s': %s", path, dlerror());
	s = dlsym(fake_lib, "fake_nvml");
	cr_assert(s);
	memset(s, 0, sizeof(*s));
	s->ndev = 2;
	for (int i = 0; i < 2; i++) {
		s->dev[i].temperature = 40 + (unsigned)i;
		s->dev[i].power_mw = 300000 + 1000 * (unsigned)i;
		s->dev[i].mem_total = 80ULL << 30;
		s->dev[i].mem_used = (1ULL << 30) * (unsigned)(i + 1);
		s->dev[i].throttle = 0x4;
	}
	return s;
}

lks_nvml *nvml_open(const char *path)
{
	lks_nvml *h = NULL;

	cr_assert_eq(lks_nvml_open(path, &h), 0);
	cr_assert(h);
	return h;
}

Test(nvml, an_absent_library_is_absent_with_the_reason_not_an_error)
{
	lks_nvml *h = nvml_open("/nonexistent/libnvidia-ml.so.1");
	lks_nvml_snap snap = { .ndev = 7 };
	lks_nvml_xid x[2];
	int n = 5;

	cr_expect_not(lks_nvml_present(h));
	cr_expect(strstr(lks_nvml_reason(h), "no NVML library"), "%s", lks_nvml_reason(h));
	cr_expect(strstr(lks_nvml_reason(h), "/nonexistent/libnvidia-ml.so.1"));
	cr_expect_eq(lks_nvml_snapshot(h, &snap), 0);
	cr_expect_eq(snap.ndev, 0);
	cr_expect_eq(lks_nvml_poll_xid(h, x, 2, &n), 0);
	cr_expect_eq(n, 0);
	lks_nvml_close(h);
}

Test(nvml, the_library_path_comes_from_the_environment_when_not_given)
{
	lks_nvml *h;

	setenv("LKS_NVML_LIB", "/nonexistent/from-env.so", 1);
	h = nvml_open(NULL);
	cr_expect_str_eq(lks_nvml_path(h), "/nonexistent/from-env.so");
	cr_expect(strstr(lks_nvml_reason(h), "from-env.so"));
	lks_nvml_close(h);
	unsetenv("LKS_NVML_LIB");
	h = nvml_open(NULL);
	cr_expect_str_eq(lks_nvml_path(h), "libnvidia-ml.so.1");
	lks_nvml_close(h);
}

Test(nvml, a_fake_with_two_devices_reads_right)
{
	fake_nvml_state *s = fake_open(FAKE_NVML);
	lks_nvml_snap snap;
	lks_nvml *h;

	s->dev[1].ecc_corrected = 3;
	s->dev[1].ecc_uncorrected = 1;
	s->dev[0].retired_sbe = 2;
	s->dev[0].retired_dbe = 5;
	s->dev[1].remap_corr = 6;
	s->dev[1].remap_unc = 7;
	s->dev[1].remap_pending = 1;
	h = nvml_open(FAKE_NVML);
	cr_assert(lks_nvml_present(h), "%s", lks_nvml_reason(h));
	cr_expect_str_eq(lks_nvml_reason(h), "");
	cr_assert_eq(lks_nvml_snapshot(h, &snap), 0);
	cr_assert_eq(snap.ndev, 2);
	cr_expect_str_eq(snap.dev[1].name, "Fake GPU 1");
	cr_expect_str_eq(snap.dev[0].uuid, "GPU-fake-0");
	cr_expect_eq(snap.dev[0].v[LKS_NVML_ECC_CORRECTED], 0);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_ECC_CORRECTED], 3);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_ECC_UNCORRECTED], 1);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_RETIRED_PAGES], 7);   /* both causes */
	cr_expect_eq(snap.dev[1].v[LKS_NVML_RETIRED_PAGES], 0);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_REMAP_CORRECTED], 6);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_REMAP_UNCORRECTED], 7);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_REMAP_PENDING], 1);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_REMAP_FAILED], 0);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_THROTTLE], 0x4);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_TEMPERATURE], 41);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_POWER], 301000);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_MEM_USED], 2LL << 30);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_MEM_TOTAL], 80LL << 30);
	cr_expect_str_eq(snap.dev[0].errors, "");
	cr_expect_eq(s->inits, 1);
	lks_nvml_close(h);
	cr_expect_eq(s->shutdowns, 1);
}

Test(nvml, a_rise_in_ecc_between_snapshots_is_a_finding)
{
	fake_nvml_state *s = fake_open(FAKE_NVML);
	lks_nvml_snap before, after;
	lks_nvml *h = nvml_open(FAKE_NVML);
	char text[512];

	s->dev[0].clock_sm = s->dev[1].clock_sm = 1410;
	s->dev[1].clock_mem = 1593;
	s->dev[1].ecc_uncorrected = 2;
	lks_nvml_snapshot(h, &before);
	lks_nvml_snapshot(h, &after);
	cr_expect_eq(lks_nvml_findings(&before, &after, NULL, 0, NULL, text, sizeof(text)), 0);
	cr_expect_str_eq(text, "");
	s->dev[1].ecc_uncorrected = 5;
	s->dev[0].remap_unc = 1;
	s->dev[0].temperature = 90;   /* warmer is no finding */
	s->dev[0].clock_sm = 1980;    /* nor are clocks that moved, either way */
	s->dev[1].clock_sm = 345;
	s->dev[1].clock_mem = 405;
	lks_nvml_snapshot(h, &after);
	cr_assert_eq(after.dev[0].v[LKS_NVML_CLOCK_SM], 1980);
	cr_expect_eq(lks_nvml_findings(&before, &after, NULL, 0, NULL, text, sizeof(text)), 2);
	cr_expect(strstr(text, "gpu 1: uncorrected ECC errors rose from 2 to 5\n"), "%s", text);
	cr_expect(strstr(text, "gpu 0: rows remapped (uncorrectable) rose from 0 to 1\n"), "%s",
	          text);
	lks_nvml_close(h);
}

Test(nvml, xid_events_are_polled_without_blocking_and_are_findings)
{
	fake_nvml_state *s = fake_open(FAKE_NVML);
	lks_nvml *h = nvml_open(FAKE_NVML);
	lks_nvml_snap snap;
	lks_nvml_xid x[4];
	const char *both[] = { "GPU-fake-0", "GPU-fake-1" };
	char text[256];
	int n = -1;

	cr_expect_eq(lks_nvml_poll_xid(h, x, 4, &n), 0);  /* no device selected: none watched */
	cr_expect_eq(n, 0);
	cr_expect_eq(s->dev[0].watched + s->dev[1].watched, 0);
	cr_assert_eq(lks_nvml_select(h, both, 2), 0);
	s->nevents = 3;
	s->event_dev[0] = 1, s->event_xid[0] = 79;
	s->event_dev[1] = 0, s->event_xid[1] = 48;
	s->event_dev[2] = 1, s->event_xid[2] = 94;
	cr_expect_eq(lks_nvml_poll_xid(h, x, 2, &n), 0);  /* no more than cap */
	cr_assert_eq(n, 2);
	cr_expect_eq(x[0].device, 1);
	cr_expect_eq(x[0].xid, 79);
	cr_expect_eq(x[1].device, 0);
	cr_expect_eq(x[1].xid, 48);
	lks_nvml_poll_xid(h, x, 4, &n);
	cr_assert_eq(n, 1);
	cr_expect_eq(x[0].xid, 94);
	lks_nvml_snapshot(h, &snap);
	cr_expect_eq(lks_nvml_findings(&snap, &snap, x, 1, NULL, text, sizeof(text)), 1);
	cr_expect_str_eq(text, "gpu 1: XID 94\n");
	lks_nvml_close(h);
}

Test(nvml, an_nvml_error_is_reported_with_its_string)
{
	fake_nvml_state *s = fake_open(FAKE_NVML);
	lks_nvml_snap snap;
	lks_nvml *h;

	s->init_rc = 9;
	h = nvml_open(FAKE_NVML);
	cr_expect_not(lks_nvml_present(h));
	cr_expect(strstr(lks_nvml_reason(h), "nvmlInit_v2 failed: nvml error 9 (Driver Not Loaded)"),
	          "%s", lks_nvml_reason(h));
	lks_nvml_close(h);
	cr_expect_eq(s->shutdowns, 0);  /* nothing to shut down after a failed init */

	s->init_rc = 0;
	s->dev[0].temperature_rc = 15;  /* an error, kept with its string */
	s->dev[1].temperature_rc = 3;   /* not supported: no reading, no error */
	h = nvml_open(FAKE_NVML);
	lks_nvml_snapshot(h, &snap);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_TEMPERATURE], LKS_NVML_NONE);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_TEMPERATURE], LKS_NVML_NONE);
	cr_expect_str_eq(snap.dev[0].errors, "temperature_c: nvml error 15 (GPU is lost)");
	cr_expect_str_eq(snap.dev[1].errors, "");
	cr_expect_eq(snap.dev[0].v[LKS_NVML_POWER], 300000);  /* the others go on */
	lks_nvml_close(h);
}

Test(nvml, no_device_is_absent)
{
	fake_nvml_state *s = fake_open(FAKE_NVML);
	lks_nvml *h;

	s->ndev = 0;
	h = nvml_open(FAKE_NVML);
	cr_expect_not(lks_nvml_present(h));
	cr_expect(strstr(lks_nvml_reason(h), "no GPU"), "%s", lks_nvml_reason(h));
	lks_nvml_close(h);
	cr_expect_eq(s->shutdowns, 1);  /* initialised, so shut down */
}

Test(nvml, a_library_lacking_init_is_absent_naming_the_function)
{
	lks_nvml *h;

	fake_open(FAKE_NVML_NO_INIT);
	h = nvml_open(FAKE_NVML_NO_INIT);
	cr_expect_not(lks_nvml_present(h));
	cr_expect(strstr(lks_nvml_reason(h), "lacks nvmlInit_v2"), "%s", lks_nvml_reason(h));
	lks_nvml_close(h);
}

Test(nvml, a_library_lacking_an_optional_function_reads_the_rest)
{
	fake_nvml_state *s = fake_open(FAKE_NVML_NO_REMAP);
	lks_nvml_snap snap;
	lks_nvml_xid x[2];
	lks_nvml *h;
	int n = -1;

	s->dev[0].ecc_corrected = 11;
	s->dev[0].remap_corr = 4;     /* not readable: the function is not there */
	h = nvml_open(FAKE_NVML_NO_REMAP);
	cr_assert(lks_nvml_present(h), "%s", lks_nvml_reason(h));
	lks_nvml_snapshot(h, &snap);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_REMAP_CORRECTED], LKS_NVML_NONE);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_REMAP_FAILED], LKS_NVML_NONE);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_ECC_CORRECTED], 11);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_RETIRED_PAGES], 0);
	for (int i = 0; i < 2; i++) {   /* no PCI, serial or clock calls: empty, NONE */
		cr_expect_eq(snap.dev[i].v[LKS_NVML_CLOCK_SM], LKS_NVML_NONE, "dev %d", i);
		cr_expect_eq(snap.dev[i].v[LKS_NVML_CLOCK_MEM], LKS_NVML_NONE, "dev %d", i);
		cr_expect_str_eq(snap.dev[i].pci, "", "dev %d", i);
		cr_expect_str_eq(snap.dev[i].serial, "", "dev %d", i);
		cr_expect_str_eq(snap.dev[i].errors, "", "dev %d", i);
	}
	cr_expect_str_eq(snap.dev[1].uuid, "GPU-fake-1");  /* the rest is read */
	cr_expect_eq(snap.dev[1].v[LKS_NVML_TEMPERATURE], 41);
	cr_assert_eq(lks_nvml_select(h, (const char *[]){ "GPU-fake-0" }, 1), 0);
	s->nevents = 1;               /* no event functions: no events, no error */
	cr_expect_eq(lks_nvml_poll_xid(h, x, 2, &n), 0);
	cr_expect_eq(n, 0);
	lks_nvml_close(h);
}

/* A library with only the first nvmlDeviceGetPciInfo (no _v2, no _v3) fills no busId; the
   bus id is written from domain, bus and device as nvidia-smi shows it, the domain in 8
   digits (the legacy string has 4), for the device of each UUID. */
Test(nvml, the_first_pci_info_call_gives_the_bus_id_as_nvidia_smi_writes_it)
{
	fake_nvml_state *s = fake_open(FAKE_NVML_PCI_V1);
	const char *uuids[] = { "GPU-fake-1", "GPU-fake-0" };
	lks_nvml_snap snap;
	lks_nvml *h;

	s->dev[1].pci_domain = 0x10002;
	s->dev[1].clock_sm = 1980;
	h = nvml_open(FAKE_NVML_PCI_V1);
	cr_assert(lks_nvml_present(h), "%s", lks_nvml_reason(h));
	cr_assert_eq(lks_nvml_select(h, uuids, 2), 0);
	lks_nvml_snapshot(h, &snap);
	cr_assert_eq(snap.ndev, 2);
	cr_expect_str_eq(snap.dev[0].pci, "00010002:11:00.0");
	cr_expect_str_eq(snap.dev[1].pci, "00000000:10:00.0");
	cr_expect_str_eq(snap.dev[0].serial, "fake-serial-1");
	cr_expect_eq(snap.dev[0].v[LKS_NVML_CLOCK_SM], 1980);
	cr_expect_str_eq(snap.dev[0].errors, "");
	lks_nvml_close(h);
}

Test(nvml, key_names)
{
	cr_expect_str_eq(lks_nvml_key_name(LKS_NVML_ECC_UNCORRECTED), "ecc_uncorrected");
	cr_expect_str_eq(lks_nvml_key_name(LKS_NVML_MEM_USED), "memory_used");
	/* the clocks came last: every stored name before them keeps its key */
	cr_expect_str_eq(lks_nvml_key_name(LKS_NVML_MEM_TOTAL), "memory_total");
	cr_expect_eq(LKS_NVML_MEM_TOTAL, 11);
	cr_expect_str_eq(lks_nvml_key_name(LKS_NVML_CLOCK_SM), "clock_sm_mhz");
	cr_expect_str_eq(lks_nvml_key_name(LKS_NVML_CLOCK_MEM), "clock_mem_mhz");
	cr_expect_eq(LKS_NVML_CLOCK_MEM + 1, LKS_NVML_NKEYS);
	for (int k = 0; k < LKS_NVML_NKEYS; k++)
		cr_expect(lks_nvml_key_name((lks_nvml_key)k), "key %d has no name", k);
	cr_expect_null(lks_nvml_key_name(LKS_NVML_NKEYS));
}

/* ---- the run's GPUs, matched by UUID (nvml.h's selection) ---- */

fake_nvml_state *fake_four(void)
{
	fake_nvml_state *s = fake_open(FAKE_NVML);

	s->ndev = 4;
	for (int i = 0; i < 4; i++) {
		s->dev[i].temperature = 40 + (unsigned)i;
		s->dev[i].mem_total = 80ULL << 30;
		s->dev[i].clock_sm = 1755 + 75 * (unsigned)i;
		s->dev[i].clock_mem = 2619;
	}
	s->dev[0].serial_rc = 3;      /* NVML_ERROR_NOT_SUPPORTED */
	return s;
}

void queue_xid(fake_nvml_state *s, int dev, unsigned long long xid)
{
	s->event_dev[s->nevents] = dev;
	s->event_xid[s->nevents++] = xid;
}

Test(nvml, the_selected_devices_are_read_by_uuid_in_the_order_given)
{
	fake_nvml_state *s = fake_four();
	const char *uuids[] = { "GPU-fake-2", "GPU-fake-0" };
	lks_nvml *h = nvml_open(FAKE_NVML);
	lks_nvml_snap snap;

	lks_nvml_snapshot(h, &snap);   /* before a selection: the machine, NVML's order */
	cr_expect_eq(snap.ndev, 4);
	cr_assert_eq(lks_nvml_select(h, uuids, 2), 0);
	lks_nvml_snapshot(h, &snap);
	cr_assert_eq(snap.ndev, 2);
	cr_expect_str_eq(snap.dev[0].uuid, "GPU-fake-2");
	cr_expect_str_eq(snap.dev[0].name, "Fake GPU 2");
	cr_expect_eq(snap.dev[0].v[LKS_NVML_TEMPERATURE], 42);
	cr_expect_str_eq(snap.dev[1].uuid, "GPU-fake-0");
	cr_expect_eq(snap.dev[1].v[LKS_NVML_TEMPERATURE], 40);
	/* as operators name them: the PCI bus id and serial of the device of that UUID */
	cr_expect_str_eq(snap.dev[0].pci, "00000000:12:00.0");
	cr_expect_str_eq(snap.dev[0].serial, "fake-serial-2");
	cr_expect_str_eq(snap.dev[1].pci, "00000000:10:00.0");
	cr_expect_eq(snap.dev[0].v[LKS_NVML_CLOCK_SM], 1905);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_CLOCK_MEM], 2619);
	cr_expect_eq(snap.dev[1].v[LKS_NVML_CLOCK_SM], 1755);
	cr_expect_str_eq(snap.dev[1].serial, "", "no serial (not supported): empty, no error");
	cr_expect_str_eq(snap.dev[1].errors, "");
	cr_expect_eq(lks_nvml_present(h), 4);   /* still what NVML sees */
	cr_expect_neq(lks_nvml_select(h, uuids, LKS_NVML_MAX_DEVICES + 1), 0);
	lks_nvml_close(h);
	(void)s;
}

Test(nvml, xids_are_watched_on_the_selected_devices_only)
{
	fake_nvml_state *s = fake_four();
	lks_nvml *h = nvml_open(FAKE_NVML);
	lks_nvml_snap snap;
	lks_nvml_xid x[4];
	char text[256];
	int n = -1;

	cr_assert_eq(lks_nvml_select(h, (const char *[]){ "GPU-fake-3" }, 1), 0);
	cr_expect_eq(s->dev[3].watched, 1);
	cr_expect_eq(s->dev[0].watched + s->dev[1].watched + s->dev[2].watched, 0);
	queue_xid(s, 1, 13);            /* another job's GPU */
	queue_xid(s, 3, 79);
	lks_nvml_poll_xid(h, x, 4, &n);
	cr_assert_eq(n, 1);
	cr_expect_eq(x[0].device, 0);   /* the selection's index, not NVML's */
	cr_expect_eq(x[0].xid, 79);
	lks_nvml_snapshot(h, &snap);
	lks_nvml_findings(&snap, &snap, x, n, (const char *[]){ "gpu 0 GPU-fake-3" }, text,
	                  sizeof(text));
	cr_expect_str_eq(text, "gpu 0 GPU-fake-3: XID 79\n");
	/* a new selection watches its own devices, and no longer the old ones */
	cr_assert_eq(lks_nvml_select(h, (const char *[]){ "GPU-fake-1" }, 1), 0);
	cr_expect_eq(s->dev[3].watched, 0);
	cr_expect_eq(s->dev[1].watched, 1);
	lks_nvml_close(h);
	cr_expect_eq(s->dev[1].watched, 0);
}

Test(nvml, a_uuid_nvml_does_not_find_is_read_as_its_error)
{
	fake_nvml_state *s = fake_four();
	lks_nvml *h = nvml_open(FAKE_NVML);
	lks_nvml_snap snap;

	cr_assert_eq(lks_nvml_select(h, (const char *[]){ "GPU-fake-1", "GPU-elsewhere" }, 2), 0);
	lks_nvml_snapshot(h, &snap);
	cr_assert_eq(snap.ndev, 2);
	cr_expect_eq(snap.dev[0].v[LKS_NVML_TEMPERATURE], 41);
	cr_expect_str_eq(snap.dev[1].uuid, "GPU-elsewhere");
	cr_expect_str_eq(snap.dev[1].errors, "nvmlDeviceGetHandleByUUID: nvml error 6 (Not Found)");
	for (int k = 0; k < LKS_NVML_NKEYS; k++)
		cr_expect_eq(snap.dev[1].v[k], LKS_NVML_NONE, "%s", lks_nvml_key_name(k));
	cr_expect_eq(s->dev[1].watched, 1);
	lks_nvml_close(h);
}
