/*
 * nvml.h: GPU health through NVML, loaded at run time (issue 14, Build 4).
 *
 * libnvidia-ml.so.1 is opened with dlopen, never linked, and its functions are called
 * through declarations of our own (kernels/nvml/nvml.c): no nvml.h is needed to build,
 * and a machine without the library (or without a GPU) gets "absent" with the reason,
 * which is not an error. A snapshot reads, per device, how operators name it (name, UUID,
 * PCI bus id, serial) and the ECC counts, retired pages, remapped rows, throttle reasons,
 * temperature, power, memory and SM and memory clocks; two snapshots and the XID events
 * seen between them become findings in words (lks_nvml_findings): counters that rose,
 * never a reading that merely moved (clocks, temperature, power).
 *
 * Which devices: NVML counts every GPU of the node in its own (PCI) order, which is not
 * CUDA's and knows nothing of CUDA_VISIBLE_DEVICES. So a run names the GPUs it used by
 * their UUIDs (lks_nvml_select), and from then on only those are read, and only those
 * are watched for XIDs: another job's GPU on the same node is none of the run's business.
 * Until a selection, a snapshot reads every GPU NVML sees (the machine, for 'env').
 *
 * A reading the device does not support, or a function the library lacks, is left
 * LKS_NVML_NONE; any other NVML error is kept with its code and NVML's string in the
 * device's 'errors' text, and the other readings go on.
 */
#ifndef LKS_KERNELS_NVML_NVML_H
#define LKS_KERNELS_NVML_NVML_H

#include <stddef.h>
#include <stdint.h>

#define LKS_NVML_MAX_DEVICES 16
#define LKS_NVML_NONE INT64_MIN    /* a reading not available */

/* The readings of one device, in the order of lks_nvml_key_name. A new key goes at the end:
   the store keeps readings by name (one health row per key), so a name keeps its meaning. */
typedef enum lks_nvml_key {
	LKS_NVML_ECC_CORRECTED = 0,    /* volatile (since the driver loaded) */
	LKS_NVML_ECC_UNCORRECTED,
	LKS_NVML_RETIRED_PAGES,        /* pages retired, both causes (before Ampere) */
	LKS_NVML_REMAP_CORRECTED,      /* rows remapped for correctable errors (Ampere on) */
	LKS_NVML_REMAP_UNCORRECTED,
	LKS_NVML_REMAP_PENDING,        /* 1: a remapping waits for a reset */
	LKS_NVML_REMAP_FAILED,         /* 1: a remapping has failed */
	LKS_NVML_THROTTLE,             /* the clocks' throttle (event) reasons, a bitmask */
	LKS_NVML_TEMPERATURE,          /* degrees C, the GPU die */
	LKS_NVML_POWER,                /* milliwatts */
	LKS_NVML_MEM_USED,             /* bytes */
	LKS_NVML_MEM_TOTAL,
	LKS_NVML_CLOCK_SM,             /* MHz, now */
	LKS_NVML_CLOCK_MEM,
	LKS_NVML_NKEYS
} lks_nvml_key;

typedef struct lks_nvml_device {
	char name[96], uuid[96];
	char pci[32];                  /* the PCI bus id, "00000000:1B:00.0"; "": not read */
	char serial[32];               /* the board's serial; "": not read (consumer boards) */
	int64_t v[LKS_NVML_NKEYS];     /* LKS_NVML_NONE: not available */
	char errors[256];              /* NVML errors of this snapshot, "" when none */
} lks_nvml_device;

typedef struct lks_nvml_snap {
	int ndev;
	lks_nvml_device dev[LKS_NVML_MAX_DEVICES];
} lks_nvml_snap;

typedef struct lks_nvml_xid {
	int device;                    /* the device's index in a snapshot; -1: none of them */
	uint64_t xid;
} lks_nvml_xid;

typedef struct lks_nvml lks_nvml;

/* "ecc_corrected", ...: the key's name, as stored; NULL out of range. */
const char *lks_nvml_key_name(lks_nvml_key k);

/* Loads the library (path, or env LKS_NVML_LIB, or "libnvidia-ml.so.1" when NULL) and
   initialises NVML; no device is watched for XIDs yet. *out is always set: a handle that
   is present, or absent with the reason (no library, a function it lacks, nvmlInit failed
   with NVML's error, no device). Returns 0 either way; -1 (lks_err) only when out of
   memory. */
int lks_nvml_open(const char *path, lks_nvml **out);
/* The number of GPUs NVML sees; 0 when absent. */
int lks_nvml_present(const lks_nvml *h);
/* Why it is absent ("" when present). */
const char *lks_nvml_reason(const lks_nvml *h);
/* The library's path as opened (or tried). */
const char *lks_nvml_path(const lks_nvml *h);
/* The devices to read from now on: uuids[0..n) ("GPU-8d5e..." as CUDA and nvidia-smi
   write them), each found with nvmlDeviceGetHandleByUUID, whatever NVML's index; XID
   events are watched on these only (the XIDs of an earlier selection are dropped). A UUID
   NVML does not find stays in the selection: its snapshot has the UUID, no reading and
   NVML's error. Absent: nothing. -1 (lks_err) when n is above LKS_NVML_MAX_DEVICES. */
int lks_nvml_select(lks_nvml *h, const char *const *uuids, int n);
/* Reads the selected devices in their order, or every device in NVML's order before any
   selection. Absent: ndev 0, and 0 returned. */
int lks_nvml_snapshot(lks_nvml *h, lks_nvml_snap *snap);
/* The XID events waiting on the selected devices, without blocking: at most cap into
   out, *n the number read. Absent, no selection, or events not supported: *n = 0. */
int lks_nvml_poll_xid(lks_nvml *h, lks_nvml_xid *out, int cap, int *n);
void lks_nvml_close(lks_nvml *h);

/* What changed for the worse from 'before' to 'after' (a device compared with the one of
   the same index and UUID), and the XIDs seen, one line each, the device named by
   names[i] ("gpu 1 GPU-8d5e... (rank 3 on n01): uncorrected ECC errors rose from 0 to
   2\n"; names NULL: "gpu i", its index) into buf (always terminated, cut if too small).
   Returns the number of findings. */
int lks_nvml_findings(const lks_nvml_snap *before, const lks_nvml_snap *after,
                      const lks_nvml_xid *xids, int nxid, const char *const *names,
                      char *buf, size_t size);

#endif
