/*
 * Mock libcuda.so.1 for the tests: a "device" per process whose streams are queues of work.
 * Kernel launches complete at once, unless the test makes one hang: FTBPF_MOCK_HANG_AT_LAUNCH=N
 * makes the Nth cuLaunchKernel of the process never finish, so that everything queued after it
 * on that stream never runs and cuStreamSynchronize on it never returns (what a GPU kernel
 * spinning forever does). Work queued by the mock NCCL completes when every rank's device has
 * reached the same collective. Memory is host memory. Synchronisation waits like the driver's
 * blocking-sync mode: it sleeps (1 ms polls) instead of returning.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock_gpu.h"

#define QUEUE 1024
#define MAX_STREAMS 64

struct CUstream_st {
	int hung;
	int n;
	struct {
		ftbpf_mock_done_fn done;
		void *arg;
		uint64_t seq;
	} q[QUEUE];
};

struct CUevent_st {
	CUstream stream;
};

struct CUctx_st {
	int dev;
};

static struct CUstream_st default_stream;
static CUstream streams[MAX_STREAMS];
static int nstreams;
static long launches, hang_at = -1;
static int inited;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static CUstream S(CUstream s)
{
	return s ? s : &default_stream;
}

CUresult cuInit(unsigned int flags)
{
	const char *h = getenv("FTBPF_MOCK_HANG_AT_LAUNCH");

	(void)flags;
	if (h && *h)
		hang_at = atol(h);
	inited = 1;
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version)
{
	*version = 12040;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	*count = 1;
	return inited ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_VALUE;
	*device = 0;
	return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	(void)flags;
	*pctx = calloc(1, sizeof(**pctx));
	if (!*pctx)
		return CUDA_ERROR_OUT_OF_MEMORY;
	(*pctx)->dev = dev;
	return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	free(ctx);
	return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned int flags)
{
	(void)flags;
	pthread_mutex_lock(&mu);
	if (nstreams == MAX_STREAMS) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*stream = calloc(1, sizeof(**stream));
	if (*stream)
		streams[nstreams++] = *stream;
	pthread_mutex_unlock(&mu);
	return *stream ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuStreamDestroy_v2(CUstream stream)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nstreams; i++)
		if (streams[i] == stream)
			streams[i] = streams[--nstreams];
	pthread_mutex_unlock(&mu);
	free(stream);
	return CUDA_SUCCESS;
}

static CUresult sync_stream(CUstream s)
{
	s = S(s);
	if (s->hung)
		for (;;)
			nap_ms(50); /* the kernel in front never finishes */
	for (int i = 0; i < s->n; i++)
		while (!s->q[i].done(s->q[i].arg, s->q[i].seq))
			nap_ms(1);
	s->n = 0;
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream)
{
	return sync_stream(stream);
}

CUresult cuCtxSynchronize(void)
{
	sync_stream(&default_stream);
	for (int i = 0; i < nstreams; i++)
		sync_stream(streams[i]);
	return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags)
{
	(void)stream, (void)event, (void)flags; /* a device-side wait: returns at once */
	return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int flags)
{
	(void)flags;
	*event = calloc(1, sizeof(**event));
	return *event ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuEventRecord(CUevent event, CUstream stream)
{
	event->stream = S(stream);
	return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event)
{
	return event->stream ? sync_stream(event->stream) : CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent event)
{
	free(event);
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
	void *p = calloc(1, bytes ? bytes : 1);

	*dptr = (CUdeviceptr)(uintptr_t)p;
	return p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	free((void *)(uintptr_t)dptr);
	return CUDA_SUCCESS;
}

/* Synchronous copies wait for the legacy default stream, as the driver's do. */
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
	sync_stream(&default_stream);
	memcpy((void *)(uintptr_t)dst, src, bytes);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
	sync_stream(&default_stream);
	memcpy(dst, (void *)(uintptr_t)src, bytes);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	sync_stream(&default_stream);
	memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, bytes);
	return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	return cuMemcpyDtoD_v2(dst, src, bytes);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridX, unsigned int gridY, unsigned int gridZ,
			unsigned int blockX, unsigned int blockY, unsigned int blockZ,
			unsigned int sharedMemBytes, CUstream stream, void **kernelParams,
			void **extra)
{
	(void)f, (void)gridX, (void)gridY, (void)gridZ, (void)blockX, (void)blockY, (void)blockZ;
	(void)sharedMemBytes, (void)kernelParams, (void)extra;
	if (++launches == hang_at)
		S(stream)->hung = 1;
	return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **str)
{
	*str = error == CUDA_SUCCESS ? "no error" : "mock error";
	return CUDA_SUCCESS;
}

int ftbpf_mock_stream_enqueue(CUstream stream, ftbpf_mock_done_fn done, void *arg, uint64_t seq)
{
	CUstream s = S(stream);

	if (s->n == QUEUE)
		sync_stream(s);
	s->q[s->n].done = done;
	s->q[s->n].arg = arg;
	s->q[s->n].seq = seq;
	s->n++;
	return !s->hung;
}
