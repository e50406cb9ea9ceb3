/*
 * gpu_health.h: GPU health around a run, read through NVML (kernels/nvml/nvml.h) and
 * stored in the health table (trace_store.h, schema version 5).
 *
 * Only the GPUs the run used, and each by the process that used it: every process of a
 * job names its ranks' GPUs by UUID as the backend found them (lks_gpu_health_use, from
 * the runner's on_devices), reads them before the first step (the XIDs already waiting
 * read and dropped: they belong to no run of ours) and after the last, and sends what it
 * read to process 0 (lks_gpu_health_gather), which stores both phases for every GPU with
 * its CUDA ordinal, UUID, ranks and host. What rose on a GPU (ECC, retired pages,
 * remapped rows) or an XID seen on it during the run is a finding, stored as an event of
 * kind 'gpu_health' (one per finding) that names the GPU by ordinal and UUID, and is
 * returned in words. Another job's GPU on the same node is never read.
 *
 * The health table's device column is the GPU's number in the run: the GPUs of process 0
 * in the order its ranks met them, then those of process 1, and so on; the rows
 * 'cuda_ordinal', 'uuid', 'ranks' and 'host' say which GPU it is, and NVML's 'name', 'pci'
 * (the PCI bus id) and 'serial', where it gave them, name it as operators do; each reading
 * is a row under its key's name (lks_nvml_key_name). A process without NVML
 * (no library, no GPU in NVML's eyes) stores those rows and, per phase, one row with
 * device NULL, key 'absent', NVML's reason and its host as the value: absent is recorded,
 * and is not an error. A run whose backend named no GPU (the cpu backend) stores one row
 * per phase, device NULL, key 'no_gpu': no reading of the node's GPUs is blamed on it.
 */
#ifndef LKS_HARNESS_STORE_GPU_HEALTH_H
#define LKS_HARNESS_STORE_GPU_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "harness/store/trace_store.h"
#include "kernels/comm.h"
#include "kernels/nvml/nvml.h"

#define LKS_GPU_HEALTH_XIDS 64   /* XIDs kept per process and run; more is a finding anyway */

/* A GPU of the run, as the run knows it */
typedef struct lks_gpu_used {
	char uuid[48];          /* "GPU-8d5e..." as CUDA and nvidia-smi write it */
	int ordinal;            /* CUDA's in its process (after CUDA_VISIBLE_DEVICES); -1: not said */
	char ranks[40];         /* the run's ranks on it: "3", "0,2" */
	char host[40];          /* the host of its process */
} lks_gpu_used;

/* One process's GPU health around one run. Plain bytes, no pointer: gathered to process
   0 as they are (every process of a job runs the same build). */
typedef struct lks_gpu_health {
	int ndev;                                  /* the GPUs of this process's ranks */
	lks_gpu_used used[LKS_NVML_MAX_DEVICES];   /* (ndev) distinct UUIDs */
	char absent[320];                          /* why they were not read; "" when read */
	lks_nvml_snap before, after;               /* dev[i]: used[i] */
	int nxid;
	lks_nvml_xid xid[LKS_GPU_HEALTH_XIDS];     /* device: an index into used */
} lks_gpu_health;

/* g emptied, for a run: no GPU yet. */
void lks_gpu_health_reset(lks_gpu_health *g);
/* The GPU of one of this process's ranks: uuid (none: nothing), its CUDA ordinal, the
   rank and the host. A UUID already named adds the rank to it. -1 (lks_err) when the
   process names more than LKS_NVML_MAX_DEVICES GPUs: that one is not read. */
int lks_gpu_health_use(lks_gpu_health *g, const char *uuid, int ordinal, int rank,
                       const char *host);
/* Before the run, once its GPUs are named: h reads g's GPUs from now on, found by UUID,
   watches them alone for XIDs (those waiting are dropped) and reads g->before; without
   NVML, g->absent says why. Nothing when g names no GPU. */
void lks_gpu_health_before(lks_nvml *h, lks_gpu_health *g);
/* After the run: the XIDs seen on g's GPUs, and g->after. */
void lks_gpu_health_after(lks_nvml *h, lks_gpu_health *g);
/* Every process's g to process 0 (collective over job: every process calls it once per
   run, also one without GPU or NVML; job NULL: a process alone). There *all is a malloc'd
   array of *n, one per process in process order (free() it); elsewhere NULL and 0. -1
   (lks_err) when the exchange fails or a process sent something else. */
int lks_gpu_health_gather(lks_comm *job, const lks_gpu_health *g, lks_gpu_health **all,
                          int *n);
/* Process 0, after run_id: stores both phases of every process's GPUs (all[0..n)) and
   the findings, their text into buf (may be ""). Returns 0, or -1 when the store fails. */
int lks_gpu_health_store(lks_store *s, int64_t run_id, const lks_gpu_health *all, int n,
                         char *buf, size_t size);

#endif
