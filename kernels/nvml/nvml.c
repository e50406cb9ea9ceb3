/*
 * nvml.c: GPU health through NVML, loaded with dlopen (kernels/nvml/nvml.h).
 *
 * The declarations below are the project's own, written from NVIDIA's public NVML API
 * reference: the return codes, the enum values and the layout of nvmlMemory_t,
 * nvmlPciInfo_t and nvmlEventData_t that this file uses, nothing more. Every function is looked up with
 * dlsym; the six without which nothing can be read (init, shutdown, count, the handles by
 * index and by UUID, error string) make NVML absent when missing, the others leave their
 * readings LKS_NVML_NONE. Plain C, built with or without the CUDA Toolkit.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/err.h"
#include "kernels/nvml/nvml.h"

/* ---- NVML, as much as is used here ---- */
typedef int nvml_ret;                   /* nvmlReturn_t */
typedef struct nvml_dev_st *nvml_dev;   /* nvmlDevice_t, opaque */
typedef struct nvml_set_st *nvml_set;   /* nvmlEventSet_t, opaque */
enum {
	NVML_OK = 0,
	NVML_NOT_SUPPORTED = 3,
	NVML_INSUFFICIENT_SIZE = 7,
	NVML_TIMEOUT = 10,
};
enum { NVML_ECC_CORRECTED = 0, NVML_ECC_UNCORRECTED = 1 };  /* nvmlMemoryErrorType_t */
enum { NVML_VOLATILE_ECC = 0 };                             /* nvmlEccCounterType_t */
enum { NVML_TEMP_GPU = 0 };                                 /* nvmlTemperatureSensors_t */
enum { NVML_RETIRE_MULTI_SBE = 0, NVML_RETIRE_DBE = 1 };    /* nvmlPageRetirementCause_t */
#define NVML_EVENT_XID 0x8ULL                              /* nvmlEventTypeXidCriticalError */

/* nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 and _v2 fill it: NVML's API reference,
   "nvmlPciInfo_t Struct Reference" (docs.nvidia.com/deploy/nvml-api/
   structnvmlPciInfo__t.html): busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16],
   domain, bus, device, pciDeviceId, pciSubSystemId, busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
   = 32]. The first nvmlDeviceGetPciInfo filled the struct of before busId was added: the
   same first 36 bytes (its busId where busIdLegacy is now, in the 4-digit domain form),
   then four reserved words (zero), so through it bus_id stays "" and the id is written from
   domain, bus and device in NVML_DEVICE_PCI_BUS_ID_FMT, as nvidia-smi shows it. */
typedef struct nvml_pci {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
} nvml_pci;
#define NVML_DEVICE_PCI_BUS_ID_FMT "%08X:%02X:%02X.0"
/* nvmlClockType_t: GRAPHICS 0, SM 1, MEM 2, VIDEO 3 (NVML's reference, "nvmlClockType_t") */
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

typedef struct nvml_memory {            /* nvmlMemory_t (v1) */
	unsigned long long total, free, used;
} nvml_memory;

typedef struct nvml_event {             /* nvmlEventData_t */
	nvml_dev device;
	unsigned long long type, data;
	unsigned int gpu_instance, compute_instance;
} nvml_event;

struct lks_nvml_fns {
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	nvml_ret (*count)(unsigned int *);
	nvml_ret (*handle)(unsigned int, nvml_dev *);
	nvml_ret (*by_uuid)(const char *, nvml_dev *);
	const char *(*error_string)(nvml_ret);
	nvml_ret (*name)(nvml_dev, char *, unsigned int);
	nvml_ret (*uuid)(nvml_dev, char *, unsigned int);
	nvml_ret (*ecc)(nvml_dev, int, int, unsigned long long *);
	nvml_ret (*retired)(nvml_dev, int, unsigned int *, unsigned long long *);
	nvml_ret (*remapped)(nvml_dev, unsigned int *, unsigned int *, unsigned int *,
	                     unsigned int *);
	nvml_ret (*throttle)(nvml_dev, unsigned long long *);
	nvml_ret (*temperature)(nvml_dev, int, unsigned int *);
	nvml_ret (*power)(nvml_dev, unsigned int *);
	nvml_ret (*memory)(nvml_dev, nvml_memory *);
	nvml_ret (*pci)(nvml_dev, nvml_pci *);
	nvml_ret (*serial)(nvml_dev, char *, unsigned int);
	nvml_ret (*clock)(nvml_dev, int, unsigned int *);
	nvml_ret (*set_create)(nvml_set *);
	nvml_ret (*set_free)(nvml_set);
	nvml_ret (*register_events)(nvml_dev, unsigned long long, nvml_set);
	nvml_ret (*set_wait)(nvml_set, nvml_event *, unsigned int);
};

struct lks_nvml {
	void *lib;
	int initialised, ndev;              /* ndev: the GPUs NVML sees */
	struct lks_nvml_fns f;
	/* the devices a snapshot reads: every one by index, or those lks_nvml_select found */
	int nsel, selected;
	nvml_dev dev[LKS_NVML_MAX_DEVICES];
	nvml_ret found[LKS_NVML_MAX_DEVICES];      /* selected: NVML's answer to the UUID */
	char uuid[LKS_NVML_MAX_DEVICES][96];       /* selected: the UUID asked for */
	nvml_set events;                    /* the selection's XIDs; NULL: none watched */
	char path[256], reason[320];
};

static const char *const lks_nvml_keys[LKS_NVML_NKEYS] = {
	[LKS_NVML_ECC_CORRECTED] = "ecc_corrected",
	[LKS_NVML_ECC_UNCORRECTED] = "ecc_uncorrected",
	[LKS_NVML_RETIRED_PAGES] = "retired_pages",
	[LKS_NVML_REMAP_CORRECTED] = "remapped_corrected",
	[LKS_NVML_REMAP_UNCORRECTED] = "remapped_uncorrected",
	[LKS_NVML_REMAP_PENDING] = "remap_pending",
	[LKS_NVML_REMAP_FAILED] = "remap_failed",
	[LKS_NVML_THROTTLE] = "throttle_reasons",
	[LKS_NVML_TEMPERATURE] = "temperature_c",
	[LKS_NVML_POWER] = "power_mw",
	[LKS_NVML_MEM_USED] = "memory_used",
	[LKS_NVML_MEM_TOTAL] = "memory_total",
	[LKS_NVML_CLOCK_SM] = "clock_sm_mhz",
	[LKS_NVML_CLOCK_MEM] = "clock_mem_mhz",
};

const char *lks_nvml_key_name(lks_nvml_key k)
{
	return (unsigned)k < LKS_NVML_NKEYS ? lks_nvml_keys[k] : NULL;
}

/* The symbol, or the first of two names found (a function NVIDIA renamed); NULL: none. */
static void *lks_nvml_sym(void *lib, const char *name, const char *alt)
{
	void *p = dlsym(lib, name);

	return p || !alt ? p : dlsym(lib, alt);
}

/* A function pointer from dlsym's data pointer (POSIX guarantees they convert), copied
   so that no cast between the two kinds of pointer is needed; 1 when found. */
static int lks_nvml_bind(void *field, void *p)
{
	memcpy(field, &p, sizeof(p));
	return p != NULL;
}

#define LKS_NVML_LOAD(h, field, name, alt) \
	lks_nvml_bind(&(h)->f.field, lks_nvml_sym((h)->lib, name, alt))

static void lks_nvml_absent(lks_nvml *h, const char *fmt, ...) LKS_PRINTF(2, 3);
static void lks_nvml_absent(lks_nvml *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->reason, sizeof(h->reason), fmt, ap);
	va_end(ap);
}

/* The six functions without which nothing is read; returns the first missing, or NULL. */
static const char *lks_nvml_load(lks_nvml *h)
{
	if (!LKS_NVML_LOAD(h, init, "nvmlInit_v2", NULL))
		return "nvmlInit_v2";
	if (!LKS_NVML_LOAD(h, shutdown, "nvmlShutdown", NULL))
		return "nvmlShutdown";
	if (!LKS_NVML_LOAD(h, count, "nvmlDeviceGetCount_v2", NULL))
		return "nvmlDeviceGetCount_v2";
	if (!LKS_NVML_LOAD(h, handle, "nvmlDeviceGetHandleByIndex_v2", NULL))
		return "nvmlDeviceGetHandleByIndex_v2";
	if (!LKS_NVML_LOAD(h, by_uuid, "nvmlDeviceGetHandleByUUID", NULL))
		return "nvmlDeviceGetHandleByUUID";
	if (!LKS_NVML_LOAD(h, error_string, "nvmlErrorString", NULL))
		return "nvmlErrorString";
	LKS_NVML_LOAD(h, name, "nvmlDeviceGetName", NULL);
	LKS_NVML_LOAD(h, uuid, "nvmlDeviceGetUUID", NULL);
	LKS_NVML_LOAD(h, ecc, "nvmlDeviceGetTotalEccErrors", NULL);
	LKS_NVML_LOAD(h, retired, "nvmlDeviceGetRetiredPages", NULL);
	LKS_NVML_LOAD(h, remapped, "nvmlDeviceGetRemappedRows", NULL);
	/* renamed in R535; the old name stays exported, with the same arguments */
	LKS_NVML_LOAD(h, throttle, "nvmlDeviceGetCurrentClocksEventReasons",
	              "nvmlDeviceGetCurrentClocksThrottleReasons");
	LKS_NVML_LOAD(h, temperature, "nvmlDeviceGetTemperature", NULL);
	LKS_NVML_LOAD(h, power, "nvmlDeviceGetPowerUsage", NULL);
	LKS_NVML_LOAD(h, memory, "nvmlDeviceGetMemoryInfo", NULL);
	/* the newest of three; the first (unversioned) leaves busId unwritten */
	if (!LKS_NVML_LOAD(h, pci, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"))
		LKS_NVML_LOAD(h, pci, "nvmlDeviceGetPciInfo", NULL);
	LKS_NVML_LOAD(h, serial, "nvmlDeviceGetSerial", NULL);
	LKS_NVML_LOAD(h, clock, "nvmlDeviceGetClockInfo", NULL);
	LKS_NVML_LOAD(h, set_create, "nvmlEventSetCreate", NULL);
	LKS_NVML_LOAD(h, set_free, "nvmlEventSetFree", NULL);
	LKS_NVML_LOAD(h, register_events, "nvmlDeviceRegisterEvents", NULL);
	LKS_NVML_LOAD(h, set_wait, "nvmlEventSetWait_v2", NULL);
	return NULL;
}

static const char *lks_nvml_errstr(const lks_nvml *h, nvml_ret r)
{
	const char *s = h->f.error_string(r);

	return s ? s : "?";
}

static void lks_nvml_unwatch(lks_nvml *h)
{
	if (h->events && h->f.set_free)
		h->f.set_free(h->events);
	h->events = NULL;
}

/* An event set with every selected device that accepts XID events; none: no set. A
   device that refuses (not supported, e.g. on some consumer boards) is simply not
   watched. */
static void lks_nvml_watch(lks_nvml *h)
{
	int watched = 0;

	lks_nvml_unwatch(h);
	if (!h->f.set_create || !h->f.set_wait || !h->f.register_events
	    || h->f.set_create(&h->events) != NVML_OK) {
		h->events = NULL;
		return;
	}
	for (int i = 0; i < h->nsel; i++)
		watched += h->found[i] == NVML_OK
		        && h->f.register_events(h->dev[i], NVML_EVENT_XID, h->events) == NVML_OK;
	if (!watched)
		lks_nvml_unwatch(h);
}

/* NVML initialised, its devices counted and their handles taken (the selection until
   lks_nvml_select, not watched); else the reason. */
static void lks_nvml_start(lks_nvml *h)
{
	unsigned int n = 0;
	const char *missing;
	nvml_ret r;

	if ((missing = lks_nvml_load(h))) {
		lks_nvml_absent(h, "'%s' lacks %s", h->path, missing);
		return;
	}
	if ((r = h->f.init()) != NVML_OK) {
		lks_nvml_absent(h, "nvmlInit_v2 failed: nvml error %d (%s)", r, lks_nvml_errstr(h, r));
		return;
	}
	h->initialised = 1;
	if ((r = h->f.count(&n)) != NVML_OK) {
		lks_nvml_absent(h, "nvmlDeviceGetCount_v2 failed: nvml error %d (%s)", r,
		                lks_nvml_errstr(h, r));
		return;
	}
	if (n > LKS_NVML_MAX_DEVICES)
		n = LKS_NVML_MAX_DEVICES;
	for (unsigned int i = 0; i < n; i++)
		if ((r = h->f.handle(i, &h->dev[i])) != NVML_OK) {
			lks_nvml_absent(h, "nvmlDeviceGetHandleByIndex_v2(%u) failed: nvml error %d (%s)",
			                i, r, lks_nvml_errstr(h, r));
			return;
		}
	if (n == 0) {
		lks_nvml_absent(h, "no GPU (NVML counts 0 devices)");
		return;
	}
	h->ndev = h->nsel = (int)n;
}

int lks_nvml_open(const char *path, lks_nvml **out)
{
	lks_nvml *h = calloc(1, sizeof(*h));
	const char *env = getenv("LKS_NVML_LIB");

	*out = NULL;
	if (!h)
		return lks_err("out of memory");
	if (!path)
		path = env && *env ? env : "libnvidia-ml.so.1";
	snprintf(h->path, sizeof(h->path), "%s", path);
	h->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h->lib) {
		const char *why = dlerror();

		lks_nvml_absent(h, "no NVML library: %s", why ? why : path);
	} else {
		lks_nvml_start(h);
	}
	*out = h;
	return 0;
}

int lks_nvml_present(const lks_nvml *h)
{
	return h ? h->ndev : 0;
}

const char *lks_nvml_reason(const lks_nvml *h)
{
	return !h ? "not opened" : h->ndev > 0 ? "" : h->reason;
}

const char *lks_nvml_path(const lks_nvml *h)
{
	return h ? h->path : "";
}

int lks_nvml_select(lks_nvml *h, const char *const *uuids, int n)
{
	if (n < 0 || n > LKS_NVML_MAX_DEVICES)
		return lks_err("cannot watch %d GPUs: at most %d", n, LKS_NVML_MAX_DEVICES);
	if (!lks_nvml_present(h))
		return 0;
	for (int i = 0; i < n; i++) {
		snprintf(h->uuid[i], sizeof(h->uuid[i]), "%s", uuids[i]);
		h->dev[i] = NULL;
		if ((h->found[i] = h->f.by_uuid(h->uuid[i], &h->dev[i])) != NVML_OK)
			h->dev[i] = NULL;
	}
	h->nsel = n;
	h->selected = 1;
	lks_nvml_watch(h);
	return 0;
}

/* Records a failed reading in d->errors; "not supported" is no error, only NONE. */
static void lks_nvml_note(const lks_nvml *h, lks_nvml_device *d, const char *what, nvml_ret r)
{
	size_t len = strlen(d->errors);

	if (r == NVML_OK || r == NVML_NOT_SUPPORTED || len + 1 >= sizeof(d->errors))
		return;
	snprintf(d->errors + len, sizeof(d->errors) - len, "%s%s: nvml error %d (%s)",
	         len ? "; " : "", what, r, lks_nvml_errstr(h, r));
}

static void lks_nvml_read_ecc(const lks_nvml *h, nvml_dev dev, lks_nvml_device *d)
{
	unsigned long long c;
	nvml_ret r;

	if (!h->f.ecc)
		return;
	if ((r = h->f.ecc(dev, NVML_ECC_CORRECTED, NVML_VOLATILE_ECC, &c)) == NVML_OK)
		d->v[LKS_NVML_ECC_CORRECTED] = (int64_t)c;
	lks_nvml_note(h, d, "ecc_corrected", r);
	if ((r = h->f.ecc(dev, NVML_ECC_UNCORRECTED, NVML_VOLATILE_ECC, &c)) == NVML_OK)
		d->v[LKS_NVML_ECC_UNCORRECTED] = (int64_t)c;
	lks_nvml_note(h, d, "ecc_uncorrected", r);
}

/* Retired pages (before Ampere) and remapped rows (Ampere on): a GPU supports one. */
static void lks_nvml_read_rows(const lks_nvml *h, nvml_dev dev, lks_nvml_device *d)
{
	unsigned int corr, unc, pending, failed, pages[2] = { 0, 0 };
	nvml_ret r, r2;

	if (h->f.retired) {
		/* a count of 0 asks for the number only; "insufficient size" says there are more */
		r = h->f.retired(dev, NVML_RETIRE_MULTI_SBE, &pages[0], NULL);
		r2 = h->f.retired(dev, NVML_RETIRE_DBE, &pages[1], NULL);
		r = r == NVML_INSUFFICIENT_SIZE ? NVML_OK : r;
		r2 = r2 == NVML_INSUFFICIENT_SIZE ? NVML_OK : r2;
		if (r == NVML_OK && r2 == NVML_OK)
			d->v[LKS_NVML_RETIRED_PAGES] = (int64_t)pages[0] + pages[1];
		lks_nvml_note(h, d, "retired_pages", r != NVML_OK ? r : r2);
	}
	if (h->f.remapped) {
		if ((r = h->f.remapped(dev, &corr, &unc, &pending, &failed)) == NVML_OK) {
			d->v[LKS_NVML_REMAP_CORRECTED] = corr;
			d->v[LKS_NVML_REMAP_UNCORRECTED] = unc;
			d->v[LKS_NVML_REMAP_PENDING] = pending;
			d->v[LKS_NVML_REMAP_FAILED] = failed;
		}
		lks_nvml_note(h, d, "remapped_rows", r);
	}
}

static void lks_nvml_read_state(const lks_nvml *h, nvml_dev dev, lks_nvml_device *d)
{
	unsigned long long reasons;
	unsigned int u;
	nvml_memory mem;
	nvml_ret r;

	if (h->f.throttle) {
		if ((r = h->f.throttle(dev, &reasons)) == NVML_OK)
			d->v[LKS_NVML_THROTTLE] = (int64_t)reasons;
		lks_nvml_note(h, d, "throttle_reasons", r);
	}
	if (h->f.temperature) {
		if ((r = h->f.temperature(dev, NVML_TEMP_GPU, &u)) == NVML_OK)
			d->v[LKS_NVML_TEMPERATURE] = u;
		lks_nvml_note(h, d, "temperature_c", r);
	}
	if (h->f.power) {
		if ((r = h->f.power(dev, &u)) == NVML_OK)
			d->v[LKS_NVML_POWER] = u;
		lks_nvml_note(h, d, "power_mw", r);
	}
	if (h->f.memory) {
		if ((r = h->f.memory(dev, &mem)) == NVML_OK) {
			d->v[LKS_NVML_MEM_USED] = (int64_t)mem.used;
			d->v[LKS_NVML_MEM_TOTAL] = (int64_t)mem.total;
		}
		lks_nvml_note(h, d, "memory", r);
	}
}

/* How operators name the board (its PCI bus id and serial), and its clocks now. Not
   supported (a serial on a consumer board): left empty, no error. */
static void lks_nvml_read_ident(const lks_nvml *h, nvml_dev dev, lks_nvml_device *d)
{
	unsigned int mhz;
	nvml_pci pci;
	nvml_ret r;

	if (h->f.pci) {
		memset(&pci, 0, sizeof(pci));
		if ((r = h->f.pci(dev, &pci)) == NVML_OK && pci.bus_id[0])
			snprintf(d->pci, sizeof(d->pci), "%.*s", (int)sizeof(pci.bus_id) - 1, pci.bus_id);
		else if (r == NVML_OK)
			snprintf(d->pci, sizeof(d->pci), NVML_DEVICE_PCI_BUS_ID_FMT, pci.domain, pci.bus,
			         pci.device);
		lks_nvml_note(h, d, "pci", r);
	}
	if (h->f.serial) {
		if ((r = h->f.serial(dev, d->serial, sizeof(d->serial))) != NVML_OK)
			d->serial[0] = '\0';
		d->serial[sizeof(d->serial) - 1] = '\0';
		lks_nvml_note(h, d, "serial", r);
	}
	if (h->f.clock) {
		if ((r = h->f.clock(dev, NVML_CLOCK_SM, &mhz)) == NVML_OK)
			d->v[LKS_NVML_CLOCK_SM] = mhz;
		lks_nvml_note(h, d, "clock_sm", r);
		if ((r = h->f.clock(dev, NVML_CLOCK_MEM, &mhz)) == NVML_OK)
			d->v[LKS_NVML_CLOCK_MEM] = mhz;
		lks_nvml_note(h, d, "clock_mem", r);
	}
}

/* A selected UUID NVML did not find: the UUID and the error, no reading. */
static void lks_nvml_unfound(const lks_nvml *h, int i, lks_nvml_device *d)
{
	snprintf(d->uuid, sizeof(d->uuid), "%s", h->uuid[i]);
	snprintf(d->errors, sizeof(d->errors), "nvmlDeviceGetHandleByUUID: nvml error %d (%s)",
	         h->found[i], lks_nvml_errstr(h, h->found[i]));
}

int lks_nvml_snapshot(lks_nvml *h, lks_nvml_snap *snap)
{
	snap->ndev = 0;
	if (!lks_nvml_present(h))
		return 0;
	for (int i = 0; i < h->nsel; i++) {
		lks_nvml_device *d = &snap->dev[i];
		nvml_ret r;

		memset(d, 0, sizeof(*d));
		for (int k = 0; k < LKS_NVML_NKEYS; k++)
			d->v[k] = LKS_NVML_NONE;
		if (h->selected && h->found[i] != NVML_OK) {
			lks_nvml_unfound(h, i, d);
			continue;
		}
		if (h->f.name && (r = h->f.name(h->dev[i], d->name, sizeof(d->name))) != NVML_OK)
			lks_nvml_note(h, d, "name", r), d->name[0] = '\0';
		if (h->f.uuid && (r = h->f.uuid(h->dev[i], d->uuid, sizeof(d->uuid))) != NVML_OK)
			lks_nvml_note(h, d, "uuid", r), d->uuid[0] = '\0';
		d->name[sizeof(d->name) - 1] = d->uuid[sizeof(d->uuid) - 1] = '\0';
		lks_nvml_read_ecc(h, h->dev[i], d);
		lks_nvml_read_rows(h, h->dev[i], d);
		lks_nvml_read_state(h, h->dev[i], d);
		lks_nvml_read_ident(h, h->dev[i], d);
	}
	snap->ndev = h->nsel;
	return 0;
}

int lks_nvml_poll_xid(lks_nvml *h, lks_nvml_xid *out, int cap, int *n)
{
	nvml_event ev;

	*n = 0;
	if (!lks_nvml_present(h) || !h->events)
		return 0;
	/* timeout 0: what is waiting, without blocking; "timeout" says nothing more is */
	while (*n < cap) {
		memset(&ev, 0, sizeof(ev));
		if (h->f.set_wait(h->events, &ev, 0) != NVML_OK)
			break;
		if (!(ev.type & NVML_EVENT_XID))
			continue;
		out[*n].device = -1;
		for (int i = 0; i < h->nsel; i++)
			if (h->dev[i] && h->dev[i] == ev.device)
				out[*n].device = i;
		out[(*n)++].xid = ev.data;
	}
	return 0;
}

void lks_nvml_close(lks_nvml *h)
{
	if (!h)
		return;
	lks_nvml_unwatch(h);
	if (h->initialised)
		h->f.shutdown();
	if (h->lib)
		dlclose(h->lib);
	free(h);
}

/* ---- findings ---- */

struct lks_nvml_rise {
	lks_nvml_key key;
	const char *what;
};

/* The counters whose rise during a run is a finding. */
static const struct lks_nvml_rise lks_nvml_rises[] = {
	{ LKS_NVML_ECC_CORRECTED, "corrected ECC errors" },
	{ LKS_NVML_ECC_UNCORRECTED, "uncorrected ECC errors" },
	{ LKS_NVML_RETIRED_PAGES, "retired pages" },
	{ LKS_NVML_REMAP_CORRECTED, "rows remapped (correctable)" },
	{ LKS_NVML_REMAP_UNCORRECTED, "rows remapped (uncorrectable)" },
	{ LKS_NVML_REMAP_PENDING, "pending row remappings" },
	{ LKS_NVML_REMAP_FAILED, "failed row remappings" },
};

static void lks_nvml_line(char *buf, size_t size, size_t *len, const char *fmt, ...)
	LKS_PRINTF(4, 5);
static void lks_nvml_line(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*len >= size)
		return;
	va_start(ap, fmt);
	w = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	*len = w < 0 ? size : *len + (size_t)w;
}

/* Device i as findings name it: names[i], or "gpu i" */
static const char *lks_nvml_named(const char *const *names, int i, int ndev, char *buf,
                                  size_t size)
{
	if (names && i >= 0 && i < ndev && names[i])
		return names[i];
	snprintf(buf, size, "gpu %d", i);
	return buf;
}

int lks_nvml_findings(const lks_nvml_snap *before, const lks_nvml_snap *after,
                      const lks_nvml_xid *xids, int nxid, const char *const *names,
                      char *buf, size_t size)
{
	int n = 0, ndev = before->ndev < after->ndev ? before->ndev : after->ndev;
	size_t len = 0;
	char gpu[24];

	if (size)
		buf[0] = '\0';
	for (int i = 0; i < ndev; i++) {
		if (strcmp(before->dev[i].uuid, after->dev[i].uuid))
			continue;           /* not the same device: nothing to compare */
		for (size_t k = 0; k < sizeof(lks_nvml_rises) / sizeof(lks_nvml_rises[0]); k++) {
			int64_t a = before->dev[i].v[lks_nvml_rises[k].key];
			int64_t b = after->dev[i].v[lks_nvml_rises[k].key];

			if (a == LKS_NVML_NONE || b == LKS_NVML_NONE || b <= a)
				continue;
			lks_nvml_line(buf, size, &len, "%s: %s rose from %lld to %lld\n",
			              lks_nvml_named(names, i, ndev, gpu, sizeof(gpu)),
			              lks_nvml_rises[k].what, (long long)a, (long long)b);
			n++;
		}
	}
	for (int i = 0; i < nxid; i++, n++)
		lks_nvml_line(buf, size, &len, "%s: XID %llu\n",
		              lks_nvml_named(names, xids[i].device, after->ndev, gpu, sizeof(gpu)),
		              (unsigned long long)xids[i].xid);
	if (size && len >= size)
		buf[size - 1] = '\0';
	return n;
}
