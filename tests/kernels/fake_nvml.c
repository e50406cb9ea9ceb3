/*
 * fake_nvml.c: a fake libnvidia-ml, built as a shared library for test_nvml.
 *
 * It exports the NVML functions kernels/nvml/nvml.c looks up, with the C types of NVML's
 * API written out plainly, and answers from 'fake_nvml' (tests/kernels/fake_nvml.h), which the
 * test sets. Built four times: whole; with FAKE_NVML_NO_REMAP (no nvmlDeviceGetRemappedRows,
 * no event functions, no PCI, serial or clock: a library older than the calls); with
 * FAKE_NVML_PCI_V1 (the PCI info only through the first, unversioned nvmlDeviceGetPciInfo);
 * with FAKE_NVML_NO_INIT (no nvmlInit_v2: not an NVML at all). The event functions take a lock: the test of a
 * job's gather runs a 'process' per thread, each with its own lks_nvml and event set.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_nvml.h"

fake_nvml_state fake_nvml;

typedef struct fake_event {
	void *device;
	unsigned long long type, data;
	unsigned int gpu_instance, compute_instance;
} fake_event;


/* A device handle is the address of its state; NULL: not a device of ours. */
/* "GPU-fake-": device i's UUID is this and i; FAKE_NVML_UUID (e.g. "GPU-standin-") names
   the devices of another stand-in */
static const char *fake_uuid_prefix(void)
{
	const char *p = getenv("FAKE_NVML_UUID");

	return p && *p ? p : "GPU-fake-";
}

static fake_nvml_dev *fake_dev(void *handle)
{
	for (unsigned int i = 0; i < fake_nvml.ndev && i < FAKE_NVML_DEVICES; i++)
		if (handle == &fake_nvml.dev[i])
			return &fake_nvml.dev[i];
	return NULL;
}

static void fake_rise(fake_nvml_dev *d)
{
	fake_nvml_state *s = &fake_nvml;

	if (!getenv("FAKE_NVML_RISE") || d != &s->dev[0] || s->ndev < 2
	    || s->nevents == FAKE_NVML_EVENTS)
		return;
	s->dev[1].ecc_uncorrected++;
	s->event_dev[s->nevents] = 1;
	s->event_xid[s->nevents++] = 79;
}

#ifndef FAKE_NVML_NO_INIT
/* In a program that does not set the state (lockstep run), the environment does:
   FAKE_NVML_DEVICES=n devices, and with FAKE_NVML_RISE each snapshot (its memory reading
   of device 0, the last it takes) raises device 1's uncorrected ECC count and queues
   XID 79 on it, so that a run sees both happen between its two snapshots. */
static void fake_from_env(void)
{
	const char *n = getenv("FAKE_NVML_DEVICES");

	if (!n || fake_nvml.ndev)
		return;
	fake_nvml.ndev = (unsigned)atoi(n);
	for (unsigned int i = 0; i < fake_nvml.ndev && i < FAKE_NVML_DEVICES; i++) {
		fake_nvml.dev[i].mem_total = 80ULL << 30;
		fake_nvml.dev[i].mem_used = 1ULL << 30;
		fake_nvml.dev[i].temperature = 35;
	}
}

int nvmlInit_v2(void)
{
	fake_nvml.inits++;
	fake_from_env();
	return fake_nvml.init_rc;
}
#endif

int nvmlShutdown(void)
{
	fake_nvml.shutdowns++;
	return 0;
}

const char *nvmlErrorString(int r)
{
	switch (r) {
	case 0: return "Success";
	case 3: return "Not Supported";
	case 6: return "Not Found";
	case 9: return "Driver Not Loaded";
	case 15: return "GPU is lost";
	default: return "Unknown Error";
	}
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = fake_nvml.ndev;
	return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **handle)
{
	if (i >= fake_nvml.ndev || i >= FAKE_NVML_DEVICES)
		return 2;
	*handle = &fake_nvml.dev[i];
	return 0;
}

int nvmlDeviceGetHandleByUUID(const char *uuid, void **handle)
{
	char want[32];

	for (unsigned int i = 0; i < fake_nvml.ndev && i < FAKE_NVML_DEVICES; i++) {
		snprintf(want, sizeof(want), "%s%u", fake_uuid_prefix(), i);
		if (strcmp(uuid, want) == 0) {
			*handle = &fake_nvml.dev[i];
			return 0;
		}
	}
	return 6;                   /* NVML_ERROR_NOT_FOUND */
}

int nvmlDeviceGetName(void *handle, char *name, unsigned int len)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d)
		return 2;
	snprintf(name, len, "Fake GPU %d", (int)(d - fake_nvml.dev));
	return 0;
}

int nvmlDeviceGetUUID(void *handle, char *uuid, unsigned int len)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d)
		return 2;
	snprintf(uuid, len, "%s%d", fake_uuid_prefix(), (int)(d - fake_nvml.dev));
	return 0;
}

int nvmlDeviceGetTotalEccErrors(void *handle, int type, int counter, unsigned long long *c)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d || counter != 0)     /* the fake keeps volatile counts only */
		return 2;
	*c = type == 0 ? d->ecc_corrected : d->ecc_uncorrected;
	return 0;
}

int nvmlDeviceGetRetiredPages(void *handle, int cause, unsigned int *count,
                              unsigned long long *addresses)
{
	fake_nvml_dev *d = fake_dev(handle);
	unsigned int have;

	if (!d)
		return 2;
	have = cause == 0 ? d->retired_sbe : d->retired_dbe;
	(void)addresses;
	/* as NVML: too small a buffer says so, with the count */
	if (*count < have) {
		*count = have;
		return 7;
	}
	*count = have;
	return 0;
}

#ifndef FAKE_NVML_NO_REMAP
/* an event set's handle is the address of its mask of watched devices; 0: free */
static unsigned fake_sets[FAKE_NVML_SETS];
static int fake_set_used[FAKE_NVML_SETS];
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned *fake_set(void *set)
{
	for (int i = 0; i < FAKE_NVML_SETS; i++)
		if (set == &fake_sets[i] && fake_set_used[i])
			return &fake_sets[i];
	return NULL;
}

int nvmlDeviceGetSerial(void *handle, char *serial, unsigned int len)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d)
		return 2;
	if (d->serial_rc)
		return d->serial_rc;
	snprintf(serial, len, "fake-serial-%d", (int)(d - fake_nvml.dev));
	return 0;
}

int nvmlDeviceGetClockInfo(void *handle, int type, unsigned int *mhz)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d || (type != 1 && type != 2))  /* NVML_CLOCK_SM, NVML_CLOCK_MEM */
		return 2;
	*mhz = type == 1 ? d->clock_sm : d->clock_mem;
	return 0;
}

int nvmlDeviceGetRemappedRows(void *handle, unsigned int *corr, unsigned int *unc,
                              unsigned int *pending, unsigned int *failed)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d)
		return 2;
	*corr = d->remap_corr;
	*unc = d->remap_unc;
	*pending = d->remap_pending;
	*failed = d->remap_failed;
	return 0;
}

int nvmlEventSetCreate(void **set)
{
	int rc = 12;                /* NVML_ERROR_MEMORY: no set free */

	pthread_mutex_lock(&fake_lock);
	for (int i = 0; i < FAKE_NVML_SETS && rc; i++)
		if (!fake_set_used[i]) {
			fake_set_used[i] = 1;
			fake_sets[i] = 0;
			*set = &fake_sets[i];
			rc = 0;
		}
	pthread_mutex_unlock(&fake_lock);
	return rc;
}

int nvmlEventSetFree(void *set)
{
	unsigned *mask;
	int rc = 2;

	pthread_mutex_lock(&fake_lock);
	if ((mask = fake_set(set))) {
		for (int i = 0; i < FAKE_NVML_DEVICES; i++)
			fake_nvml.dev[i].watched -= (*mask >> i) & 1;
		fake_set_used[mask - fake_sets] = 0;
		rc = 0;
	}
	pthread_mutex_unlock(&fake_lock);
	return rc;
}

int nvmlDeviceRegisterEvents(void *handle, unsigned long long types, void *set)
{
	fake_nvml_dev *d = fake_dev(handle);
	unsigned *mask, bit;
	int rc = 2;

	(void)types;
	pthread_mutex_lock(&fake_lock);
	if (d && (mask = fake_set(set)) && !(rc = d->events_rc)) {
		bit = 1u << (d - fake_nvml.dev);
		d->watched += !(*mask & bit);
		*mask |= bit;
	}
	pthread_mutex_unlock(&fake_lock);
	return rc;
}

int nvmlEventSetWait_v2(void *set, fake_event *ev, unsigned int timeout_ms)
{
	fake_nvml_state *s = &fake_nvml;
	unsigned *mask;
	int rc = 10;                /* timeout: nothing waiting for this set */

	(void)timeout_ms;
	pthread_mutex_lock(&fake_lock);
	if (!(mask = fake_set(set)))
		rc = 2;
	for (int i = 0; rc == 10 && i < s->nevents; i++) {
		if (!(*mask & (1u << s->event_dev[i])))
			continue;
		memset(ev, 0, sizeof(*ev));
		ev->device = &s->dev[s->event_dev[i]];
		ev->type = 0x8;         /* an XID */
		ev->data = s->event_xid[i];
		s->nevents--;
		memmove(s->event_dev + i, s->event_dev + i + 1, sizeof(int) * (size_t)(s->nevents - i));
		memmove(s->event_xid + i, s->event_xid + i + 1,
		        sizeof(s->event_xid[0]) * (size_t)(s->nevents - i));
		rc = 0;
	}
	pthread_mutex_unlock(&fake_lock);
	return rc;
}
#endif

#if defined(FAKE_NVML_PCI_V1) || !defined(FAKE_NVML_NO_REMAP)
/* What every nvmlPciInfo_t begins with: busIdLegacy[16] (busId[16] in the first), domain,
   bus, device, pciDeviceId, pciSubSystemId */
struct fake_pci_head {
	char legacy[16];
	unsigned int domain, bus, device, device_id, subsystem_id;
};

/* The head of device handle's PCI info; 0, or NVML's 2 when handle is none of ours */
static int fake_pci_head(void *handle, struct fake_pci_head *p)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d)
		return 2;
	memset(p, 0, sizeof(*p));
	p->domain = d->pci_domain;
	p->bus = 0x10 + (unsigned)(d - fake_nvml.dev);
	snprintf(p->legacy, sizeof(p->legacy), "%04X:%02X:00.0", p->domain & 0xffff, p->bus);
	return 0;
}
#endif

#if defined(FAKE_NVML_PCI_V1)
/* The first nvmlPciInfo_t, of before busId: the head and four reserved words, the 52
   bytes nvmlDeviceGetPciInfo fills of the caller's struct, no more. */
struct fake_pci_v1 {
	struct fake_pci_head head;
	unsigned int reserved[4];
};

int nvmlDeviceGetPciInfo(void *handle, struct fake_pci_v1 *pci)
{
	memset(pci->reserved, 0, sizeof(pci->reserved));
	return fake_pci_head(handle, &pci->head);
}
#elif !defined(FAKE_NVML_NO_REMAP)
/* nvmlPciInfo_t: the head, then busId[32] */
struct fake_pci {
	struct fake_pci_head head;
	char bus_id[32];
};

int nvmlDeviceGetPciInfo_v3(void *handle, struct fake_pci *pci)
{
	int rc = fake_pci_head(handle, &pci->head);

	if (!rc)
		snprintf(pci->bus_id, sizeof(pci->bus_id), "%08X:%02X:00.0", pci->head.domain,
		         pci->head.bus);
	return rc;
}
#endif

int nvmlDeviceGetCurrentClocksThrottleReasons(void *handle, unsigned long long *reasons)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d)
		return 2;
	*reasons = d->throttle;
	return 0;
}

int nvmlDeviceGetTemperature(void *handle, int sensor, unsigned int *t)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d || sensor != 0)
		return 2;
	if (d->temperature_rc)
		return d->temperature_rc;
	*t = d->temperature;
	return 0;
}

int nvmlDeviceGetPowerUsage(void *handle, unsigned int *mw)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d)
		return 2;
	*mw = d->power_mw;
	return 0;
}

int nvmlDeviceGetMemoryInfo(void *handle, unsigned long long *mem)
{
	fake_nvml_dev *d = fake_dev(handle);

	if (!d)
		return 2;
	mem[0] = d->mem_total;      /* nvmlMemory_t: total, free, used */
	mem[1] = d->mem_total - d->mem_used;
	mem[2] = d->mem_used;
	fake_rise(d);
	return 0;
}
