/*
 * backend_cuda.cu: the CUDA backend's context, buffers, description and method table
 * (backend_cuda.h); the ops' kernels are in ops.cu.
 *
 * The GEMM runs the run's choice (lks_gemm.impl): the reference kernel, the CPU's order
 * (quant_gemm.cu), or cuBLASLt (gemm_lt.cu), whose context is made at the first library
 * GEMM; a descriptor cuBLASLt refuses runs on the reference kernel, counted. Quantize is
 * quant_gemm.cu's.
 *
 * The statistics (stats_f32, stats_quant, and a traced tensor's through measure_begin/end),
 * the gradient's sum of squares and the optimizer step are made on the device with the
 * CPU's bits (devstats.cu, update.cu), only a small record coming home. With
 * LKS_CUDA_DEVICE_PATHS=0 the tensors are downloaded and the CPU backend's own methods run
 * on the host copies instead (the same code, so the same bits), as before issue 35: ci/gpu
 * holds the two paths to each other (its host-* steps). A traced tensor goes through measure_begin/end
 * instead: copied on the device, downloaded into pinned memory beside the compute stream
 * (meter.h), measured on the tracer's thread while the step goes on. Device reductions in
 * the CPU's lane order may come later.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/meter.h"
#include "kernels/cuda/ops_cuda.h"

extern "C" {
#include "kernels/cpu/backend_cpu.h"
#include "kernels/cuda/comm_nccl.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/quant_gemm.h"
#include "kernels/err.h"
}

struct lks_cuda_ctx {
	int device;
	cudaStream_t stream;
	void *scratch;         /* lks_cuda_scratch's device buffer */
	size_t scratch_bytes;
	lks_lt_ctx *lt;        /* cuBLASLt's, from the first library GEMM; NULL before */
	/* what alloc handed out, for mem_peak: its blocks, the bytes in use (with the meter's
	   slots) and the most */
	pthread_mutex_t mem_lock;
	struct lks_cuda_block { void *p; size_t bytes; } *blocks;
	int nblocks, cap;
	int64_t in_use, peak;
	long long lt_gemms, lt_fallbacks;  /* library GEMMs asked for; refused, run on the
	                                      reference kernel */
	lks_meter *meter;      /* traced tensors on their way to the host (measure_begin) */
	pthread_mutex_t plan_lock;         /* guards plans, noted by every rank's GEMMs */
	lks_lt_plans plans;                /* what ran the library GEMMs, for gemm_plans */
	struct lks_cuda_upd *upd;          /* update.cu's, from its first use */
};

struct lks_cuda_upd **lks_cuda_ctx_upd(void *ctx)
{
	return &((lks_cuda_ctx *)ctx)->upd;
}

cudaStream_t lks_cuda_enter(void *ctx)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;

	cudaSetDevice(c->device);  /* cannot fail for the device open set */
	return c->stream;
}

int lks_cuda_grow(cudaStream_t st, size_t bytes, void **buf, size_t *cap, const char *what)
{
	if (bytes <= *cap)
		return 0;
	/* the old buffer may still be read by queued work */
	if (LKS_CUDA(cudaStreamSynchronize(st), what))
		return -1;
	cudaFree(*buf);
	*buf = NULL;
	*cap = 0;
	if (LKS_CUDA(cudaMalloc(buf, bytes), what))
		return -1;
	*cap = bytes;
	return 0;
}

int lks_cuda_scratch(void *ctx, size_t bytes, void **p)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;

	if (lks_cuda_grow(c->stream, bytes, &c->scratch, &c->scratch_bytes, "scratch"))
		return -1;
	*p = c->scratch;
	return 0;
}

extern "C" int lks_cuda_ctx_device(const lks_cuda_ctx *ctx)
{
	return ctx->device;
}

extern "C" void *lks_cuda_ctx_stream(const lks_cuda_ctx *ctx)
{
	return (void *)ctx->stream;
}

/* LKS_CUDA_DEVICE, or 0 when unset; -1 (lks_err) when it is not a device number */
static int lks_cuda_device_wanted(int count)
{
	const char *env = getenv("LKS_CUDA_DEVICE");
	char *end;
	long d;

	if (!env || !*env)
		return 0;
	d = strtol(env, &end, 10);
	if (*end || d < 0 || d >= count)
		return lks_err("cuda: LKS_CUDA_DEVICE='%s' is not a device of this machine (it has %d)",
		               env, count);
	return (int)d;
}

/* the meter's slots' device bytes, counted with alloc's for mem_peak */
static void lks_cuda_account(void *arg, long long delta)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)arg;

	pthread_mutex_lock(&c->mem_lock);
	c->in_use += delta;
	c->peak = c->in_use > c->peak ? c->in_use : c->peak;
	pthread_mutex_unlock(&c->mem_lock);
}

/* A context on the device of the process's rank of index local (lks_cuda_rank_device),
   with a stream of its own; threads is ignored (the GPU's threads are its own). */
static int lks_cuda_open_rank(const lks_backend *be, int threads, int local, void **ctx)
{
	lks_cuda_ctx *c;
	int count = 0, dev;

	(void)be; (void)threads;
	if (LKS_CUDA(cudaGetDeviceCount(&count), "no usable CUDA device"))
		return -1;
	if (count == 0)
		return lks_err("cuda: no usable CUDA device: the driver reports none");
	if ((dev = lks_cuda_device_wanted(count)) < 0)
		return -1;
	dev = lks_cuda_rank_device(dev, local, count);
	if (!(c = (lks_cuda_ctx *)calloc(1, sizeof(*c))))
		return lks_err("out of memory for a cuda context");
	c->device = dev;
	pthread_mutex_init(&c->mem_lock, NULL);
	pthread_mutex_init(&c->plan_lock, NULL);
	if (LKS_CUDA(cudaSetDevice(dev), "cannot use the device")
	    || LKS_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking),
	                "cannot create a stream")) {
		free(c);
		return -1;
	}
	if (lks_meter_open(0, lks_cuda_account, c, &c->meter)) {
		cudaStreamDestroy(c->stream);
		free(c);
		return -1;
	}
	*ctx = c;
	return 0;
}

static int lks_cuda_open(const lks_backend *be, int threads, void **ctx)
{
	return lks_cuda_open_rank(be, threads, 0, ctx);
}

#ifdef LKS_HAVE_NCCL
/* NCCL between the ranks' devices (comm_nccl.h), on this context's device and stream */
static int lks_cuda_comm(const lks_backend *be, void *ctx, lks_comm *host,
                         const lks_devcomm_opts *o, lks_comm **out)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;
	int count = 0;

	(void)be;
	if (LKS_CUDA(cudaGetDeviceCount(&count), "cannot count the devices")) {
		lks_comm_abort(host, lks_errmsg());  /* the others wait for this rank's answer */
		return -1;
	}
	return lks_comm_nccl(host, c->device, (void *)c->stream, count, o, out);
}
#endif

static void lks_cuda_close(const lks_backend *be, void *ctx)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;

	(void)be;
	if (!c)
		return;
	lks_cuda_enter(c);
	cudaStreamSynchronize(c->stream);
	lks_meter_close(c->meter);
	cudaFree(c->scratch);
	lks_cuda_upd_free(c->upd);
	lks_lt_ctx_destroy(c->lt);
	cudaStreamDestroy(c->stream);
	pthread_mutex_destroy(&c->mem_lock);
	pthread_mutex_destroy(&c->plan_lock);
	lks_lt_plans_release(&c->plans);
	free(c->blocks);
	free(c);
}

/* the device's UUID as nvidia-smi writes it: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx */
static void lks_cuda_uuid(const cudaDeviceProp *prop, char *buf, size_t size)
{
	const unsigned char *u = (const unsigned char *)prop->uuid.bytes;
	size_t len = (size_t)snprintf(buf, size, "GPU-");

	for (int i = 0; i < 16 && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%02x",
		                        i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
}

static void lks_cuda_describe(const lks_backend *be, void *ctx, lks_describe_fn put, void *arg)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;
	cudaDeviceProp prop;
	char buf[64];
	int v = 0;

	put(arg, "backend", be->name);
	if (c && cudaGetDeviceProperties(&prop, c->device) == cudaSuccess) {
		put(arg, "device", prop.name);
		snprintf(buf, sizeof(buf), "%d", c->device);
		put(arg, "ordinal", buf);  /* CUDA's, after CUDA_VISIBLE_DEVICES */
		lks_cuda_uuid(&prop, buf, sizeof(buf));
		put(arg, "uuid", buf);
		snprintf(buf, sizeof(buf), "%d", prop.multiProcessorCount);
		put(arg, "sm_count", buf);
		snprintf(buf, sizeof(buf), "%d.%d", prop.major, prop.minor);
		put(arg, "compute_capability", buf);
	}
	cudaDriverGetVersion(&v);
	snprintf(buf, sizeof(buf), "%d.%d", v / 1000, v % 1000 / 10);
	put(arg, "cuda_driver", buf);
	cudaRuntimeGetVersion(&v);
	snprintf(buf, sizeof(buf), "%d.%d", v / 1000, v % 1000 / 10);
	put(arg, "cuda_runtime", buf);
	if (c && c->lt_gemms) {  /* a run with gemm = cublaslt, so far */
		snprintf(buf, sizeof(buf), "%lld", c->lt_gemms);
		put(arg, "cublaslt_gemms", buf);
		snprintf(buf, sizeof(buf), "%lld", c->lt_fallbacks);
		put(arg, "cublaslt_fallbacks", buf);
	}
}

/* ---- buffers ---- */

static int lks_cuda_alloc(const lks_backend *be, void *ctx, size_t bytes, void **out)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;
	int rc = 0;

	(void)be;
	lks_cuda_enter(ctx);
	/* cudaMalloc aligns to 256 bytes; a zero-byte buffer is still a pointer */
	if (LKS_CUDA(cudaMalloc(out, bytes ? bytes : 64), "device memory for a buffer")) {
		*out = NULL;
		return -1;
	}
	pthread_mutex_lock(&c->mem_lock);
	if (c->nblocks == c->cap) {
		int cap = c->cap ? 2 * c->cap : 64;
		void *b = realloc(c->blocks, (size_t)cap * sizeof(*c->blocks));

		if (b) {
			c->blocks = (struct lks_cuda_ctx::lks_cuda_block *)b;
			c->cap = cap;
		}
	}
	if (c->nblocks < c->cap) {
		c->blocks[c->nblocks++] = { *out, bytes };
		c->in_use += (int64_t)bytes;
		c->peak = c->in_use > c->peak ? c->in_use : c->peak;
	} else {
		rc = lks_err("out of memory for the cuda backend's list of buffers");
	}
	pthread_mutex_unlock(&c->mem_lock);
	if (rc) {
		cudaFree(*out);
		*out = NULL;
	}
	return rc;
}

static void lks_cuda_free(const lks_backend *be, void *ctx, void *p)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;

	(void)be;
	lks_cuda_enter(c);
	cudaStreamSynchronize(c->stream);  /* queued work may still read it */
	cudaFree(p);
	pthread_mutex_lock(&c->mem_lock);
	for (int i = 0; i < c->nblocks; i++)
		if (c->blocks[i].p == p) {
			c->in_use -= (int64_t)c->blocks[i].bytes;
			c->blocks[i] = c->blocks[--c->nblocks];
			break;
		}
	pthread_mutex_unlock(&c->mem_lock);
}

static int lks_cuda_mem_peak(const lks_backend *be, void *ctx, int64_t *bytes)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;

	(void)be;
	pthread_mutex_lock(&c->mem_lock);
	*bytes = c->peak;
	pthread_mutex_unlock(&c->mem_lock);
	return 0;
}

/* a copy of kind on ctx's stream, waited for when wait */
static int lks_cuda_memcpy(void *ctx, void *dst, const void *src, size_t bytes,
                           cudaMemcpyKind kind, int wait, const char *what)
{
	cudaStream_t st = lks_cuda_enter(ctx);

	if (bytes == 0)
		return 0;
	if (LKS_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, st), what))
		return -1;
	return wait ? LKS_CUDA(cudaStreamSynchronize(st), what) : 0;
}

static int lks_cuda_upload(const lks_backend *be, void *ctx, void *dst, const void *src,
                           size_t bytes)
{
	(void)be;
	return lks_cuda_memcpy(ctx, dst, src, bytes, cudaMemcpyHostToDevice, 1, "upload");
}

static int lks_cuda_download(const lks_backend *be, void *ctx, void *dst, const void *src,
                             size_t bytes)
{
	(void)be;
	return lks_cuda_memcpy(ctx, dst, src, bytes, cudaMemcpyDeviceToHost, 1, "download");
}

static int lks_cuda_copy(const lks_backend *be, void *ctx, void *dst, const void *src,
                         size_t bytes)
{
	(void)be;
	return lks_cuda_memcpy(ctx, dst, src, bytes, cudaMemcpyDeviceToDevice, 0, "copy");
}

static int lks_cuda_sync(const lks_backend *be, void *ctx)
{
	(void)be;
	return LKS_CUDA(cudaStreamSynchronize(lks_cuda_enter(ctx)), "sync");
}

static int lks_cuda_zero(const lks_backend *be, void *ctx, void *p, size_t bytes)
{
	(void)be;
	if (bytes == 0)
		return 0;
	return LKS_CUDA(cudaMemsetAsync(p, 0, bytes, lks_cuda_enter(ctx)), "zero");
}

/* ---- the statistics: downloaded, then the CPU backend's methods on the host copy ---- */

/* *host <- a malloc'd copy of the n bytes at device src */
static int lks_cuda_fetch(void *ctx, const void *src, size_t bytes, void **host)
{
	if (!(*host = malloc(bytes ? bytes : 1)))
		return lks_err("out of memory for %zu bytes", bytes);
	if (lks_cuda_download(&lks_backend_cuda, ctx, *host, src, bytes)) {
		free(*host);
		*host = NULL;
		return -1;
	}
	return 0;
}

int lks_cuda_device_paths(void)
{
	const char *e = getenv("LKS_CUDA_DEVICE_PATHS");

	return !(e && !strcmp(e, "0"));
}

int lks_cuda_sumsq_host(void *ctx, const float *x, size_t n, double *out)
{
	void *h;
	int rc;

	if (lks_cuda_fetch(ctx, x, n * sizeof(float), &h))
		return -1;
	rc = lks_backend_cpu.sumsq(&lks_backend_cpu, NULL, (const float *)h, n, out);
	free(h);
	return rc;
}

/* stats_f32: on the device (devstats.cu), or with LKS_CUDA_DEVICE_PATHS=0 downloaded and
   measured with the CPU's code */
static int lks_cuda_stats_f32_m(const lks_backend *be, void *ctx, const float *x, size_t n,
                                lks_tensor_stats *s)
{
	void *h;
	int rc;

	if (lks_cuda_device_paths())
		return lks_cuda_stats_f32(be, ctx, x, n, s);
	if (lks_cuda_fetch(ctx, x, n * sizeof(float), &h))
		return -1;
	rc = lks_backend_cpu.stats_f32(&lks_backend_cpu, NULL, (const float *)h, n, s);
	free(h);
	return rc;
}

/* The bytes a quantized tensor's statistics read: its codes (rows of ldq, the last one cols
   long) and its scales. */
static void lks_cuda_quant_bytes(const lks_quant *q, size_t *codes, size_t *scales)
{
	*codes = q->rows > 0 && q->cols > 0 ? (size_t)(q->rows - 1) * q->ldq + (size_t)q->cols : 0;
	*scales = lks_quant_nscales(q) * sizeof(float);
}

/* The CPU's statistics of q's codes and scales, at host copies of them. */
static int lks_cuda_stats_quant_host(const lks_quant *q, const void *codes, const void *scales,
                                     lks_tensor_stats *s)
{
	lks_quant h = *q;

	h.x = NULL;
	h.amax = NULL;
	h.q = (uint8_t *)codes;
	h.scale = (float *)scales;
	return lks_backend_cpu.stats_quant(&lks_backend_cpu, NULL, &h, s);
}

/* the codes and the scales downloaded, then the CPU's method on the host copies */
static int lks_cuda_stats_quant(const lks_backend *be, void *ctx, const lks_quant *q,
                                lks_tensor_stats *s)
{
	size_t nq, ns;
	void *codes = NULL, *scales = NULL;
	int rc = -1;

	(void)be;
	if (lks_cuda_devstat_quant_ok(q) && lks_cuda_device_paths())
		return lks_cuda_stats_quant_dev(ctx, q, s);
	lks_cuda_quant_bytes(q, &nq, &ns);
	if (lks_cuda_fetch(ctx, q->q, nq, &codes) || lks_cuda_fetch(ctx, q->scale, ns, &scales))
		goto out;
	rc = lks_cuda_stats_quant_host(q, codes, scales, s);
out:
	free(codes);
	free(scales);
	return rc;
}

/* ---- measuring while the GPU goes on (measure_begin, measure_end; meter.h) ---- */

struct lks_cuda_measure {
	lks_meter_slot *slot;
	size_t n;               /* a float tensor's elements */
	int quant;              /* else a quantized tensor, q, its scales then its codes */
	int dev;                /* measured on the device: only its record comes home */
	lks_quant q;
	size_t bytes[2];
};

/* x (n floats), or q's codes and scales, copied into a slot on the compute stream,
   measured on the slot's side stream (devstats.cu), the record downloaded */
static int lks_cuda_measure_dev(lks_cuda_ctx *c, struct lks_cuda_measure *j, const float *x)
{
	const void *src[2];
	size_t at;
	cudaStream_t side;
	void *dev;
	int rc;

	if (x) {
		src[0] = x;
		j->bytes[0] = j->n * sizeof(float);
	} else {
		src[0] = j->q.q;
		src[1] = j->q.scale;
		lks_cuda_quant_bytes(&j->q, &j->bytes[0], &j->bytes[1]);
	}
	at = lks_meter_offset(j->bytes, x ? 1 : 2);
	if (lks_meter_take_dev(c->meter, lks_cuda_enter(c), src, j->bytes, x ? 1 : 2,
	                       x ? lks_cuda_devstat_scratch(j->n)
	                         : lks_cuda_devstat_scratch_q(&j->q), &j->slot, &dev, &side))
		return -1;
	rc = x ? lks_cuda_devstat_queue(side, (const float *)dev, j->n, (char *)dev + at)
	       : lks_cuda_devstat_queue_q(side, (const uint8_t *)dev,
	                                  (const float *)((char *)dev +
	                                                  lks_meter_offset(j->bytes, 1)),
	                                  &j->q, (char *)dev + at);
	if (rc || lks_meter_send(c->meter, j->slot, at, LKS_CUDA_DEVSTAT_REC)) {
		const unsigned char *h;

		lks_meter_land(j->slot, &h);  /* what was queued ends */
		lks_meter_give(c->meter, j->slot);
		return -1;
	}
	return 0;
}

static int lks_cuda_measure_begin(const lks_backend *be, void *ctx, const float *x, size_t n,
                                  const lks_quant *q, void **job)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;
	struct lks_cuda_measure *j = (struct lks_cuda_measure *)calloc(1, sizeof(*j));
	const void *src[2];

	(void)be;
	*job = NULL;
	if (!j)
		return lks_err("out of memory for a measurement");
	if (lks_cuda_device_paths() && (x || lks_cuda_devstat_quant_ok(q))) {
		j->n = n;
		j->dev = 1;
		j->quant = !x;
		if (!x)
			j->q = *q;
		if (lks_cuda_measure_dev(c, j, x)) {
			free(j);
			return -1;
		}
		*job = j;
		return 0;
	}
	if (x) {
		src[0] = x;
		j->n = n;
		j->bytes[0] = n * sizeof(float);
	} else {
		j->quant = 1;
		j->q = *q;
		src[0] = q->scale;
		src[1] = q->q;
		lks_cuda_quant_bytes(q, &j->bytes[1], &j->bytes[0]);
	}
	if (lks_meter_take(c->meter, lks_cuda_enter(ctx), src, j->bytes, j->quant ? 2 : 1,
	                   &j->slot)) {
		free(j);
		return -1;
	}
	*job = j;
	return 0;
}

static int lks_cuda_measure_end(const lks_backend *be, void *ctx, void *job,
                                lks_tensor_stats *s)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;
	struct lks_cuda_measure *j = (struct lks_cuda_measure *)job;
	const unsigned char *h;
	int rc;

	(void)be;
	lks_cuda_enter(ctx);
	rc = lks_meter_land(j->slot, &h);
	if (rc == 0 && j->dev && j->quant)
		lks_cuda_devstat_fill_q(h, &j->q, s);
	else if (rc == 0 && j->dev)
		lks_cuda_devstat_fill(h, s);
	else if (rc == 0)
		rc = j->quant ? lks_cuda_stats_quant_host(&j->q, h + lks_meter_offset(j->bytes, 1), h, s)
		              : lks_backend_cpu.stats_f32(&lks_backend_cpu, NULL, (const float *)h, j->n,
		                                          s);
	lks_meter_give(c->meter, j->slot);
	free(j);
	return rc;
}

static int lks_cuda_gemm(const lks_backend *be, void *ctx, const lks_gemm *g)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;
	cudaStream_t s = lks_cuda_enter(ctx);

	(void)be;
	if (g->impl != LKS_GEMM_REFERENCE) {
		lks_lt_algo used;
		int rc;

		if (!c->lt && lks_lt_ctx_create(0, &c->lt))
			return -1;
		c->lt_gemms++;
		if ((rc = lks_cuda_gemm_lt(c->lt, s, g, &used)) < 0)
			return rc;
		pthread_mutex_lock(&c->plan_lock);
		int noted = lks_lt_plans_note(&c->plans, g, &used);
		pthread_mutex_unlock(&c->plan_lock);
		if (noted || rc == 0)
			return noted;
		c->lt_fallbacks++;  /* used.reason says why */
	}
	return lks_cuda_gemm_ref((void *)s, g);
}

static int lks_cuda_gemm_plans(const lks_backend *be, void *ctx, lks_plan_fn put, void *arg)
{
	lks_cuda_ctx *c = (lks_cuda_ctx *)ctx;
	int rc = 0;

	(void)be;
	pthread_mutex_lock(&c->plan_lock);
	for (int i = 0; !rc && i < c->plans.n; i++)
		rc = put(arg, &c->plans.v[i]);
	pthread_mutex_unlock(&c->plan_lock);
	return rc;
}

/* on the context's scratch: no allocation per call */
static int lks_cuda_quantize_m(const lks_backend *be, void *ctx, lks_quant *q)
{
	void *scratch;

	(void)be;
	if (lks_cuda_scratch(ctx, LKS_CUDA_QUANT_SCRATCH, &scratch))
		return -1;
	return lks_cuda_quantize_in((void *)lks_cuda_enter(ctx), q, scratch);
}

const lks_backend lks_backend_cuda = {
	/* .version = */ LKS_BACKEND_VERSION,
	/* .size = */ (int)sizeof(lks_backend),
	/* .name = */ "cuda",
	/* .app = */ NULL,
	/* .open = */ lks_cuda_open,
	/* .close = */ lks_cuda_close,
	/* .describe = */ lks_cuda_describe,
	/* .alloc = */ lks_cuda_alloc,
	/* .free = */ lks_cuda_free,
	/* .upload = */ lks_cuda_upload,
	/* .download = */ lks_cuda_download,
	/* .sync = */ lks_cuda_sync,
	/* .copy = */ lks_cuda_copy,
	/* .zero = */ lks_cuda_zero,
	/* .gemm = */ lks_cuda_gemm,
	/* .quantize = */ lks_cuda_quantize_m,
	/* .round_bf16 = */ lks_cuda_round_bf16,
	/* .to_bf16 = */ lks_cuda_to_bf16,
	/* .transpose_u8 = */ lks_cuda_transpose_u8,
	/* .transpose_f32 = */ lks_cuda_transpose_f32,
	/* .transpose_bf16 = */ lks_cuda_transpose_bf16,
	/* .rmsnorm_fwd = */ lks_cuda_rmsnorm_fwd,
	/* .rmsnorm_bwd = */ lks_cuda_rmsnorm_bwd,
	/* .relu2_fwd = */ lks_cuda_relu2_fwd,
	/* .relu2_bwd = */ lks_cuda_relu2_bwd,
	/* .cross_entropy = */ lks_cuda_cross_entropy,
	/* .embed_gather = */ lks_cuda_embed_gather,
	/* .embed_scatter_add = */ lks_cuda_embed_scatter_add,
	/* .add = */ lks_cuda_add,
	/* .adamw = */ lks_cuda_adamw,
	/* .sumsq = */ lks_cuda_sumsq,
	/* .clip = */ lks_cuda_clip,
	/* .stats_f32 = */ lks_cuda_stats_f32_m,
	/* .stats_quant = */ lks_cuda_stats_quant,
	/* .nonfinite = */ lks_cuda_nonfinite,
	/* .host_memory = */ NULL,  /* device memory: the runner stages its all-reduce */
	/* .mem_peak = */ lks_cuda_mem_peak,
	/* .measure_begin = */ lks_cuda_measure_begin,
	/* .measure_end = */ lks_cuda_measure_end,
	/* .gemm_plans = */ lks_cuda_gemm_plans,
	/* .open_rank = */ lks_cuda_open_rank,
#ifdef LKS_HAVE_NCCL
	/* .comm = */ lks_cuda_comm,  /* with it the runner's ranks all-reduce on their GPUs */
#else
	/* .comm = */ NULL,  /* no NCCL: the runner stages its all-reduce through the host */
#endif
	/* .traced = */ NULL,  /* a wrapper's window on the trace: none here */
	/* .update = */ lks_cuda_update,
	/* .attn_fwd = */ lks_cuda_attn_fwd,
	/* .attn_bwd = */ lks_cuda_attn_bwd,
};
