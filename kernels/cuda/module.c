/*
 * module.c: finds and loads the CUDA backend's module, lockstep-cuda.so (module.h says
 * where it looks and why the program exports its lks_* symbols). Plain C, no CUDA header:
 * built into every program that may open 'cuda', none of which links a CUDA library.
 */
#define _GNU_SOURCE  /* dladdr */
#include "kernels/cuda/module.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LKS_CUDA_MODULE_FILE "lockstep-cuda.so"

static pthread_once_t lks_module_once = PTHREAD_ONCE_INIT;
static const lks_cuda_module *lks_module;   /* loaded, or NULL and ... */
static char lks_module_why[2048];           /* ... why not (lks_err keeps 1023 bytes) */

static const char *lks_dlerror(void)
{
	const char *e = dlerror();

	return e ? e : "unknown dlerror";
}

/* The module at path, dlopen'ed and checked, or NULL with *why: dlerror's text, or what
   is not lockstep's about it. Never closed: it stays for the process's life. */
static const lks_cuda_module *lks_module_open(const char *path, char *why, size_t size)
{
	const lks_cuda_module *m;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(why, size, "%s", lks_dlerror());
		return NULL;
	}
	if (!(m = dlsym(h, "lks_cuda_module_entry"))) {
		snprintf(why, size, "'%s' is not lockstep's cuda backend: %s", path, lks_dlerror());
		return NULL;
	}
	if (m->version != LKS_CUDA_MODULE_VERSION || m->backend->version != LKS_BACKEND_VERSION
	    || m->backend->size != (int)sizeof(lks_backend)) {
		snprintf(why, size, "'%s' is the cuda backend of another lockstep build "
		         "(module %d, backend %d of %d bytes; this program has %d, %d of %zu)",
		         path, m->version, m->backend->version, m->backend->size,
		         LKS_CUDA_MODULE_VERSION, LKS_BACKEND_VERSION, sizeof(lks_backend));
		return NULL;
	}
	return m;
}

/* path = the folder of the running program, up folders up, + the module's file name; -1
   with *why where there is none */
static int lks_module_beside(char *path, size_t size, int up, char *why, size_t wsize)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n < 0) {
		snprintf(why, wsize, "cannot read '/proc/self/exe': %s", strerror(errno));
		return -1;
	}
	exe[n] = 0;
	for (int i = 0; i <= up; i++) {
		if (!(slash = strrchr(exe, '/'))) {
			snprintf(why, wsize, "the program has no folder %d up", up);
			return -1;
		}
		*slash = 0;
	}
	snprintf(path, size, "%s/%s", exe, LKS_CUDA_MODULE_FILE);
	return 0;
}

/* path = the folder of the shared library that holds this code + the module's file name;
   -1 where this code is the program's (or dladdr cannot say) */
static int lks_module_beside_lib(char *path, size_t size)
{
	char exe[PATH_MAX], lib[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *slash;
	Dl_info info;

	if (n < 0 || !dladdr((void *)lks_module_beside_lib, &info) || !info.dli_fname
	    || !strchr(info.dli_fname, '/') || !realpath(info.dli_fname, lib))
		return -1;
	exe[n] = 0;
	if (!strcmp(exe, lib) || !(slash = strrchr(lib, '/')))
		return -1;
	snprintf(path, size, "%.*s/%s", (int)(slash - lib), lib, LKS_CUDA_MODULE_FILE);
	return 0;
}

/* Once per process: $LKS_CUDA_MODULE, else beside the library holding the loader, else
   beside the program, else one folder up. */
static void lks_module_find(void)
{
	const char *env = getenv("LKS_CUDA_MODULE");
	char path[PATH_MAX + 32], why[2][480];

	if (env && *env) {
		if (!(lks_module = lks_module_open(env, why[0], sizeof(why[0]))))
			snprintf(lks_module_why, sizeof(lks_module_why), "cannot load the cuda "
			         "backend from LKS_CUDA_MODULE='%s': %s", env, why[0]);
		return;
	}
	if (lks_module_beside_lib(path, sizeof(path)) == 0 && access(path, F_OK) == 0) {
		if (!(lks_module = lks_module_open(path, why[0], sizeof(why[0]))))
			snprintf(lks_module_why, sizeof(lks_module_why), "cannot load the cuda "
			         "backend: %s", why[0]);
		return;
	}
	for (int up = 0; up < 2; up++) {
		if (lks_module_beside(path, sizeof(path), up, why[up], sizeof(why[up])))
			continue;
		if ((lks_module = lks_module_open(path, why[up], sizeof(why[up]))))
			return;
		if (access(path, F_OK) == 0) {  /* there, but it does not load */
			snprintf(lks_module_why, sizeof(lks_module_why), "cannot load the cuda "
			         "backend: %s", why[up]);
			return;
		}
	}
	snprintf(lks_module_why, sizeof(lks_module_why), "cannot find the cuda backend "
	         "(" LKS_CUDA_MODULE_FILE " beside the program, then one folder up; "
	         "LKS_CUDA_MODULE names another): %s; %s", why[0], why[1]);
}

const lks_cuda_module *lks_cuda_module_load(void)
{
	pthread_once(&lks_module_once, lks_module_find);
	if (!lks_module)
		lks_err("%s", lks_module_why);
	return lks_module;
}

int lks_cuda_module_info(lks_cuda_info *info)
{
	const lks_cuda_module *m = lks_cuda_module_load();

	if (!m)
		return -1;
	m->info_get(info);
	return 0;
}
