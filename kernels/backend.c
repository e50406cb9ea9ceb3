/*
 * backend.c: the registry of backends (backend.h): the names '--backend NAME' takes. A
 * backend added to this build is one row of the table. 'cuda' is listed when the build has
 * the CUDA Toolkit, device or not: on a machine without one its open fails, saying why.
 *
 * The cuda backend lives in a shared module (kernels/cuda/module.h) that the program does
 * not link: its row here starts with open and open_rank only, which load the module at
 * the first call and copy its methods into the row. A program that never opens cuda never
 * loads a CUDA library.
 */
#include "kernels/backend.h"

#include "kernels/cpu/backend_cpu.h"
#ifdef LKS_HAVE_CUDA
#include "kernels/cuda/module.h"
#include <pthread.h>
#endif

#include <stdio.h>
#include <string.h>

#ifdef LKS_HAVE_CUDA
static int lks_cuda_row_open(const lks_backend *be, int threads, void **ctx);
static int lks_cuda_row_open_rank(const lks_backend *be, int threads, int local, void **ctx);

/* Until the module is loaded, a row that can only open. Its open and open_rank are never
   written again (a thread may be calling them while another loads); the other methods are
   written once, under lks_cuda_row_once, and read by a caller only after an open of its
   own returned, so after they were. */
static lks_backend lks_cuda_row = {
	.version = LKS_BACKEND_VERSION,
	.size = (int)sizeof(lks_backend),
	.name = "cuda",
	.open = lks_cuda_row_open,
	.open_rank = lks_cuda_row_open_rank,
};
static pthread_once_t lks_cuda_row_once = PTHREAD_ONCE_INIT;
static const lks_backend *lks_cuda_table;  /* the module's own, once copied */
#endif

static const lks_backend *const lks_backends[] = {
	&lks_backend_cpu,
#ifdef LKS_HAVE_CUDA
	&lks_cuda_row,
#endif
};

#define LKS_NBACKENDS (sizeof(lks_backends) / sizeof(lks_backends[0]))

#ifdef LKS_HAVE_CUDA
/* Every method of the module's table (its loader checked its version and size: the same
   struct as ours) into the row, but open and open_rank: the bytes before, between and
   after those two. */
static void lks_cuda_row_fill(void)
{
	const lks_cuda_module *m = lks_cuda_module_load();
	const size_t open_end = offsetof(lks_backend, open) + sizeof(lks_cuda_row.open);
	const size_t rank_at = offsetof(lks_backend, open_rank);
	const size_t rank_end = rank_at + sizeof(lks_cuda_row.open_rank);
	char *row = (char *)&lks_cuda_row;
	const char *mod;

	if (!m)
		return;
	mod = (const char *)m->backend;
	memcpy(row + open_end, mod + open_end, rank_at - open_end);
	memcpy(row + rank_end, mod + rank_end, sizeof(lks_backend) - rank_end);
	lks_cuda_table = m->backend;
}

/* The module's table, the row filled from it; NULL (lks_err: where the module was looked
   for, and why it did not load) */
static const lks_backend *lks_cuda_row_load(void)
{
	pthread_once(&lks_cuda_row_once, lks_cuda_row_fill);
	if (!lks_cuda_table)
		lks_cuda_module_load();  /* its reason, in this thread too */
	return lks_cuda_table;
}

/* the module's open and open_rank, given the row (be) as every later method is */
static int lks_cuda_row_open(const lks_backend *be, int threads, void **ctx)
{
	const lks_backend *t = lks_cuda_row_load();

	return t ? t->open(be, threads, ctx) : -1;
}

static int lks_cuda_row_open_rank(const lks_backend *be, int threads, int local, void **ctx)
{
	const lks_backend *t = lks_cuda_row_load();

	return t ? t->open_rank(be, threads, local, ctx) : -1;
}
#endif

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
