/* meter.cu: traced tensors downloaded beside the compute stream (meter.h). */
#include "kernels/cuda/meter.h"

#include <pthread.h>
#include <stdlib.h>

#include "kernels/cuda/ops_cuda.h"

extern "C" {
#include "kernels/err.h"
}

struct lks_meter_slot {
	void *dev;              /* the pieces, copied on the device */
	void *host;             /* pinned: the same, downloaded */
	size_t cap;             /* bytes of each */
	cudaEvent_t copied;     /* on the compute stream, after the copy */
	cudaEvent_t landed;     /* on the side stream, after the download */
	cudaStream_t side;      /* the side stream of this take */
	lks_meter_slot *next;   /* in the free list, or in the list of all */
	lks_meter_slot *all;
};

#define LKS_METER_STREAMS 8  /* side streams, taken in turn: measurements run side by side */

struct lks_meter {
	cudaStream_t side[LKS_METER_STREAMS];
	unsigned turn;          /* the next take's side stream */
	pthread_mutex_t lock;   /* take runs on a rank's thread, give on the tracer's */
	pthread_cond_t given;   /* a slot came back */
	lks_meter_slot *free;   /* slots not in use */
	lks_meter_slot *all;    /* every slot, for close */
	size_t held, budget;    /* device bytes of all slots (as many pinned); the most */
	int inuse;              /* slots taken and not given back */
	void (*account)(void *arg, long long delta);
	void *arg;
};

size_t lks_meter_offset(const size_t *bytes, int i)
{
	size_t at = 0;

	for (int k = 0; k < i; k++)
		at += (bytes[k] + 15) & ~(size_t)15;
	return at;
}

int lks_meter_open(size_t budget, void (*account)(void *arg, long long delta), void *arg,
                   lks_meter **out)
{
	lks_meter *m = (lks_meter *)calloc(1, sizeof(*m));
	const char *env = getenv("LKS_CUDA_METER_MB");

	*out = NULL;
	if (!m)
		return lks_err("out of memory for a cuda meter");
	if (budget == 0 && env && *env) {
		char *end;
		unsigned long long mb = strtoull(env, &end, 10);

		if (*end || mb == 0 || mb > (1ull << 30)) {
			free(m);
			return lks_err("LKS_CUDA_METER_MB='%s': not a number of MiB from 1", env);
		}
		budget = (size_t)mb << 20;
	}
	m->budget = budget ? budget : (size_t)512 << 20;
	m->account = account;
	m->arg = arg;
	for (int i = 0; i < LKS_METER_STREAMS; i++)
		if (LKS_CUDA(cudaStreamCreateWithFlags(&m->side[i], cudaStreamNonBlocking),
		             "cannot create the meter's streams")) {
			while (i-- > 0)
				cudaStreamDestroy(m->side[i]);
			free(m);
			return -1;
		}
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->given, NULL);
	*out = m;
	return 0;
}

/* (m->lock held, or at close) */
static void lks_meter_slot_buffers_free(lks_meter *m, lks_meter_slot *s)
{
	cudaFree(s->dev);
	cudaFreeHost(s->host);
	s->dev = s->host = NULL;
	if (s->cap && m->account)
		m->account(m->arg, -(long long)s->cap);
	m->held -= s->cap;
	s->cap = 0;
}

void lks_meter_close(lks_meter *m)
{
	if (!m)
		return;
	for (int i = 0; i < LKS_METER_STREAMS; i++)
		cudaStreamSynchronize(m->side[i]);
	for (lks_meter_slot *s = m->all, *nx; s; s = nx) {
		nx = s->all;
		lks_meter_slot_buffers_free(m, s);
		cudaEventDestroy(s->copied);
		cudaEventDestroy(s->landed);
		free(s);
	}
	for (int i = 0; i < LKS_METER_STREAMS; i++)
		cudaStreamDestroy(m->side[i]);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->given);
	free(m);
}

/* A slot of at least bytes, as lks_meter_choose says: a free one that fits, one grown or
   new, after dropping free ones to stay in the budget, or after waiting for one. The
   buffers are made under the lock (cudaFree waits for the device: it happens while the
   slots grow, in the first step, or when a larger tensor comes). */
static int lks_meter_slot_get(lks_meter *m, size_t bytes, lks_meter_slot **out)
{
	lks_meter_slot *s = NULL;
	int rc = 0;

	*out = NULL;
	pthread_mutex_lock(&m->lock);
	for (;;) {
		size_t cap[256];
		lks_meter_slot **at[256];
		int nfree = 0, k;
		enum lks_meter_act act;

		for (lks_meter_slot **p = &m->free; *p && nfree < 256; p = &(*p)->next) {
			cap[nfree] = (*p)->cap;
			at[nfree++] = p;
		}
		act = lks_meter_choose(cap, nfree, m->held, m->inuse, bytes, m->budget, &k);
		if (act == LKS_METER_WAIT) {
			pthread_cond_wait(&m->given, &m->lock);
			continue;
		}
		if (act == LKS_METER_DROP) {
			lks_meter_slot_buffers_free(m, *at[k]);
			continue;
		}
		if (k >= 0) {  /* USE or GROW a free one: out of the free list */
			s = *at[k];
			*at[k] = s->next;
		}
		break;
	}
	if (!s) {
		if (!(s = (lks_meter_slot *)calloc(1, sizeof(*s)))) {
			pthread_mutex_unlock(&m->lock);
			return lks_err("out of memory for a cuda meter slot");
		}
		if (LKS_CUDA(cudaEventCreateWithFlags(&s->copied, cudaEventDisableTiming),
		             "meter event")
		    || LKS_CUDA(cudaEventCreateWithFlags(&s->landed, cudaEventDisableTiming),
		                "meter event")) {
			pthread_mutex_unlock(&m->lock);
			free(s);
			return -1;
		}
		s->all = m->all;
		m->all = s;
	}
	m->inuse++;
	s->side = m->side[m->turn++ % LKS_METER_STREAMS];
	if (s->cap < bytes) {
		lks_meter_slot_buffers_free(m, s);
		if (LKS_CUDA(cudaMalloc(&s->dev, bytes), "meter device buffer")
		    || LKS_CUDA(cudaMallocHost(&s->host, bytes), "meter pinned buffer")) {
			cudaFree(s->dev);
			cudaFreeHost(s->host);
			s->dev = s->host = NULL;
			rc = -1;
		} else {
			s->cap = bytes;
			m->held += bytes;
			if (m->account)
				m->account(m->arg, (long long)bytes);
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (rc) {
		lks_meter_give(m, s);
		return -1;
	}
	*out = s;
	return 0;
}

/* the pieces into s's device buffer on compute, and s's side stream behind them */
static int lks_meter_copy(lks_meter_slot *s, cudaStream_t compute, const void *const *src,
                          const size_t *bytes, int n)
{
	for (int i = 0; i < n; i++)
		if (bytes[i] && LKS_CUDA(cudaMemcpyAsync((char *)s->dev + lks_meter_offset(bytes, i),
		                                         src[i], bytes[i],
		                                         cudaMemcpyDeviceToDevice, compute),
		                         "meter copy"))
			return -1;
	return LKS_CUDA(cudaEventRecord(s->copied, compute), "meter copy")
	    || LKS_CUDA(cudaStreamWaitEvent(s->side, s->copied, 0), "meter copy") ? -1 : 0;
}

int lks_meter_take(lks_meter *m, cudaStream_t compute, const void *const *src,
                   const size_t *bytes, int n, lks_meter_slot **out)
{
	size_t total = lks_meter_offset(bytes, n);
	lks_meter_slot *s = NULL;

	*out = NULL;
	if (lks_meter_slot_get(m, total ? total : 16, &s))
		return -1;
	if (lks_meter_copy(s, compute, src, bytes, n)
	    || LKS_CUDA(cudaMemcpyAsync(s->host, s->dev, total, cudaMemcpyDeviceToHost,
	                                s->side), "meter download")
	    || LKS_CUDA(cudaEventRecord(s->landed, s->side), "meter download"))
		goto fail;
	*out = s;
	return 0;
fail:
	lks_meter_give(m, s);
	return -1;
}

int lks_meter_take_dev(lks_meter *m, cudaStream_t compute, const void *const *src,
                       const size_t *bytes, int n, size_t extra, lks_meter_slot **out,
                       void **dev, cudaStream_t *side)
{
	size_t total = lks_meter_offset(bytes, n) + extra;
	lks_meter_slot *s = NULL;

	*out = NULL;
	if (lks_meter_slot_get(m, total ? total : 16, &s))
		return -1;
	if (lks_meter_copy(s, compute, src, bytes, n)) {
		lks_meter_give(m, s);
		return -1;
	}
	*out = s;
	*dev = s->dev;
	*side = s->side;
	return 0;
}

int lks_meter_send(lks_meter *m, lks_meter_slot *s, size_t at, size_t n)
{
	(void)m;
	return LKS_CUDA(cudaMemcpyAsync(s->host, (char *)s->dev + at, n, cudaMemcpyDeviceToHost,
	                                s->side), "meter download")
	    || LKS_CUDA(cudaEventRecord(s->landed, s->side), "meter download") ? -1 : 0;
}

int lks_meter_land(lks_meter_slot *s, const unsigned char **host)
{
	*host = (const unsigned char *)s->host;
	return LKS_CUDA(cudaEventSynchronize(s->landed), "meter download");
}

void lks_meter_give(lks_meter *m, lks_meter_slot *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&m->lock);
	s->next = m->free;
	m->free = s;
	m->inuse--;
	pthread_cond_broadcast(&m->given);
	pthread_mutex_unlock(&m->lock);
}
