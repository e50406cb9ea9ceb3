/*
 * backend.c: the registry of backends (backend.h): the names '--backend NAME' takes. A
 * backend added to this build is one row of the table. 'cuda' is listed when the build has
 * the CUDA Toolkit, device or not: on a machine without one its open fails, saying why.
 */
#include "kernels/backend.h"

#include "kernels/cpu/backend_cpu.h"
#ifdef LKS_HAVE_CUDA
#include "kernels/cuda/backend_cuda.h"
#endif

#include <stdio.h>
#include <string.h>

static const lks_backend *const lks_backends[] = {
	&lks_backend_cpu,
#ifdef LKS_HAVE_CUDA
	&lks_backend_cuda,
#endif
};

#define LKS_NBACKENDS (sizeof(lks_backends) / sizeof(lks_backends[0]))

const char *lks_backend_names(char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < LKS_NBACKENDS && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
		                        lks_backends[i]->name);
	return buf;
}

const lks_backend *lks_backend_default(void)
{
	return lks_backends[0];
}

const lks_backend *lks_backend_find(const char *name)
{
	char names[256];

	for (size_t i = 0; i < LKS_NBACKENDS; i++)
		if (!strcmp(lks_backends[i]->name, name))
			return lks_backends[i];
	lks_err("backend '%s' is not available (this build has: %s)", name,
	        lks_backend_names(names, sizeof(names)));
	return NULL;
}
