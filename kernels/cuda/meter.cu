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
	lks_meter_slot *next;   /* in the free list, or in the list of all */
	lks_meter_slot *all;
};

struct lks_meter {
	cudaStream_t side;
	pthread_mutex_t lock;   /* take runs on a rank's thread, give on the tracer's */
	lks_meter_slot *free;   /* slots not in use */
	lks_meter_slot *all;    /* every slot, for close */
};

size_t lks_meter_offset(const size_t *bytes, int i)
{
	size_t at = 0;

	for (int k = 0; k < i; k++)
		at += (bytes[k] + 15) & ~(size_t)15;
	return at;
}

int lks_meter_open(lks_meter **out)
{
	lks_meter *m = (lks_meter *)calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return lks_err("out of memory for a cuda meter");
	if (LKS_CUDA(cudaStreamCreateWithFlags(&m->side, cudaStreamNonBlocking),
	             "cannot create the download stream")) {
		free(m);
		return -1;
	}
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

static void lks_meter_slot_buffers_free(lks_meter_slot *s)
{
	cudaFree(s->dev);
	cudaFreeHost(s->host);
	s->dev = s->host = NULL;
	s->cap = 0;
}

void lks_meter_close(lks_meter *m)
{
	if (!m)
		return;
	cudaStreamSynchronize(m->side);
	for (lks_meter_slot *s = m->all, *nx; s; s = nx) {
		nx = s->all;
		lks_meter_slot_buffers_free(s);
		cudaEventDestroy(s->copied);
		cudaEventDestroy(s->landed);
		free(s);
	}
	cudaStreamDestroy(m->side);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* A slot of at least bytes: a free one that is big enough, else a free one grown, else a
   new one. */
static int lks_meter_slot_get(lks_meter *m, size_t bytes, lks_meter_slot **out)
{
	lks_meter_slot *s = NULL, **pick = NULL;

	pthread_mutex_lock(&m->lock);
	for (lks_meter_slot **p = &m->free; *p; p = &(*p)->next)
		if (!pick || (*p)->cap >= bytes) {
			pick = p;
			if ((*p)->cap >= bytes)
				break;
		}
	if (pick) {
		s = *pick;
		*pick = s->next;
	}
	pthread_mutex_unlock(&m->lock);
	if (!s) {
		if (!(s = (lks_meter_slot *)calloc(1, sizeof(*s))))
			return lks_err("out of memory for a cuda meter slot");
		if (LKS_CUDA(cudaEventCreateWithFlags(&s->copied, cudaEventDisableTiming),
		             "meter event")
		    || LKS_CUDA(cudaEventCreateWithFlags(&s->landed, cudaEventDisableTiming),
		                "meter event")) {
			free(s);
			return -1;
		}
		pthread_mutex_lock(&m->lock);
		s->all = m->all;
		m->all = s;
		pthread_mutex_unlock(&m->lock);
	}
	if (s->cap < bytes) {
		/* cudaFree waits for the device: this happens while the slots grow, in the first
		   step */
		lks_meter_slot_buffers_free(s);
		if (LKS_CUDA(cudaMalloc(&s->dev, bytes), "meter device buffer")
		    || LKS_CUDA(cudaMallocHost(&s->host, bytes), "meter pinned buffer")) {
			lks_meter_slot_buffers_free(s);
			lks_meter_give(m, s);
			return -1;
		}
		s->cap = bytes;
	}
	*out = s;
	return 0;
}

int lks_meter_take(lks_meter *m, cudaStream_t compute, const void *const *src,
                   const size_t *bytes, int n, lks_meter_slot **out)
{
	size_t total = lks_meter_offset(bytes, n);
	lks_meter_slot *s = NULL;

	*out = NULL;
	if (lks_meter_slot_get(m, total ? total : 16, &s))
		return -1;
	for (int i = 0; i < n; i++)
		if (bytes[i] && LKS_CUDA(cudaMemcpyAsync((char *)s->dev + lks_meter_offset(bytes, i),
		                                         src[i], bytes[i],
		                                         cudaMemcpyDeviceToDevice, compute),
		                         "meter copy"))
			goto fail;
	if (LKS_CUDA(cudaEventRecord(s->copied, compute), "meter copy")
	    || LKS_CUDA(cudaStreamWaitEvent(m->side, s->copied, 0), "meter download")
	    || LKS_CUDA(cudaMemcpyAsync(s->host, s->dev, total, cudaMemcpyDeviceToHost,
	                                m->side), "meter download")
	    || LKS_CUDA(cudaEventRecord(s->landed, m->side), "meter download"))
		goto fail;
	*out = s;
	return 0;
fail:
	lks_meter_give(m, s);
	return -1;
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
	pthread_mutex_unlock(&m->lock);
}
