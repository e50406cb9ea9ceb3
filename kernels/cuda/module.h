/*
 * module.h: the CUDA backend as a shared module, lockstep-cuda.so, loaded (dlopen) when
 * something first needs it. Plain C: the loader (module.c) is built wherever the CUDA
 * backend is, into the program and the tests, which link no CUDA library themselves.
 *
 * The module holds kernels/cuda/ (cudart, cuBLASLt and NCCL where found) and offers one
 * symbol, lks_cuda_module_entry. Two callers load it: the registry's 'cuda' row
 * (kernels/backend.c), at its first open, and the fingerprint (lks_cuda_module_info), which
 * a run and 'lockstep env' make. import, report, diff, list or --help never load it, so
 * never start cuBLASLt (its static constructors took ~75% of 80 ms and ~200 MB of every
 * command while the program linked it).
 *
 * Where it is looked for, in order:
 *   1. $LKS_CUDA_MODULE, a file; when set, there only
 *   2. lockstep-cuda.so beside the shared library that holds the loader, where that is not
 *      the program: liblockstep-trace.so in build/, loaded by a Python process
 *   3. lockstep-cuda.so beside the program (the folder of /proc/self/exe): build/
 *   4. lockstep-cuda.so one folder up: the tests in build/tests/
 * A module that is found but does not load (a CUDA library missing, say) is an error, not
 * a reason to look further. Loaded once per process, it stays loaded.
 *
 * The module links its own copy of the code it calls (the CPU backend, errors, the
 * cuBLASLt plan). A program that loads it exports its lks_* symbols (module.dyn, a link
 * option of the loader's library), so that the dynamic linker binds the module's calls to
 * the program's own copy: one error message per thread (lks_errmsg reads what the module
 * said) and one ISA choice (LKS_ISA).
 */
#ifndef LKS_KERNELS_CUDA_MODULE_H
#define LKS_KERNELS_CUDA_MODULE_H

#ifdef __cplusplus
extern "C" {
#endif

#include "kernels/backend.h"
#include "kernels/cuda/cuda_info.h"

/* raised when lks_cuda_module changes; a module of another value is refused */
#define LKS_CUDA_MODULE_VERSION 2

typedef struct lks_cuda_module {
	int version;                             /* LKS_CUDA_MODULE_VERSION */
	const lks_backend *backend;              /* lks_backend_cuda (backend_cuda.h) */
	void (*info_get)(lks_cuda_info *info);   /* lks_cuda_info_get (cuda_info.h) */
	/* lockstep-trace's device tensors (trace_dev.h): lks_cuda_trace_measure, _collect,
	   _close; version 2 */
	int (*trace_measure)(void **ctx, const void *x, size_t n, void *stream, size_t *slot,
	                     char *why, size_t wsize);
	int (*trace_collect)(void *ctx, lks_tensor_stats *out, size_t n, char *why,
	                     size_t wsize);
	void (*trace_close)(void *ctx);
} lks_cuda_module;

/* In the module only (module_entry.c): what the loader takes with dlsym. */
extern const lks_cuda_module lks_cuda_module_entry;

/* The module, loaded at the first call (thread-safe); NULL where it cannot be found or
   loaded, or is of another lockstep (another version, or a backend struct of another
   version or size), lks_err saying where it looked and dlerror's text, at every call. */
const lks_cuda_module *lks_cuda_module_load(void);

/* lks_cuda_info_get through the module: 0, or -1 (lks_err) where it cannot be loaded. */
int lks_cuda_module_info(lks_cuda_info *info);

#ifdef __cplusplus
}
#endif

#endif
