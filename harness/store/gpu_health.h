/*
 * gpu_health.h: GPU health around a run, read through NVML (kernels/nvml/nvml.h) and
 * stored in the health table (trace_store.h, schema version 5).
 *
 * Before a run: a snapshot, and the XID events already waiting read and dropped (they
 * belong to no run of ours). After it: a second snapshot; both are stored with the run,
 * and what rose (ECC, retired pages, remapped rows) or an XID seen during the run is a
 * finding, stored as an event of kind 'gpu_health' (one per finding) and returned in words.
 * Without NVML (no library, no GPU) each phase stores one row, device NULL, key 'absent',
 * the reason as its value: absent is recorded, and is not an error.
 */
#ifndef LKS_HARNESS_STORE_GPU_HEALTH_H
#define LKS_HARNESS_STORE_GPU_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "harness/store/trace_store.h"
#include "kernels/nvml/nvml.h"

/* The health rows of one snapshot (name, uuid, every reading there is, NVML's errors), or
   the one 'absent' row when h is absent; rows point into snap and h. Returns the number
   of rows (at most cap). */
int lks_gpu_health_rows(const lks_nvml *h, const lks_nvml_snap *snap, const char *phase,
                        lks_health_row *rows, int cap);
/* Before a run: *before filled, the XIDs waiting dropped. */
void lks_gpu_health_before(lks_nvml *h, lks_nvml_snap *before);
/* After run_id: stores both phases and the findings; their text into buf (may be "").
   Returns 0, or -1 when the store fails. */
int lks_gpu_health_after(lks_nvml *h, lks_store *s, int64_t run_id,
                         const lks_nvml_snap *before, char *buf, size_t size);

#endif
