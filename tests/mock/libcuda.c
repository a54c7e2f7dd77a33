/*
 * Mock libcuda.so.1 for the tests: a "device" per process whose streams are queues of work. It
 * behaves as a real NVIDIA driver was measured to (../shared/design/GPU-FACTS.md):
 *  - synchronisation (cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize, synchronous
 *    copies) spins on the CPU in the default schedule mode: no syscall while it waits, except a
 *    driver ioctl on the device file about once per second of waiting, on the waiting thread;
 *  - cuGetProcAddress (what the CUDA runtime uses to reach the driver) hands out the newest
 *    versioned entry point: cuCtxSynchronize_v2 for CUDA 12+, exported apart from
 *    cuCtxSynchronize at another address, as the real library does.
 * The device file is FTBPF_MOCK_GPU_DEV (default /dev/null): the tests register its major as
 * a GPU's (--gpu-majors 1). Kernels take FTBPF_MOCK_KERNEL_US of device time (default 0); the
 * FTBPF_MOCK_HANG_AT_LAUNCH=N-th launch never finishes, so that everything after it on that
 * stream never runs and a synchronisation on it never returns (what a kernel that spins
 * forever does). Work queued by the mock NCCL completes when every rank's device has reached
 * the same collective. Memory is host memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

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
static long launches, hang_at = -1, kernel_us;
static int inited, devfd = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO: no syscall */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spin until done(arg, seq), as the driver does, with its ioctl once a second of waiting. */
static void spin_wait(ftbpf_mock_done_fn done, void *arg, uint64_t seq)
{
	uint64_t next = mono_ns() + 1000000000ull;
	int n;

	while (!done || !done(arg, seq)) {
		if (mono_ns() >= next) {
			if (devfd >= 0 && ioctl(devfd, FIONREAD, &n) < 0)
				(void)0; /* the device file need not know the request */
			next += 1000000000ull;
		}
	}
}

/* For the tests: when the hung kernel was launched (wall clock), in FTBPF_MOCK_DIR/hang.ts. */
static void note_hang(void)
{
	const char *dir = getenv("FTBPF_MOCK_DIR");
	struct timespec ts;
	char p[512], line[64];
	int fd, n;

	if (!dir || !*dir)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(p, sizeof(p), "%s/hang.ts", dir);
	n = snprintf(line, sizeof(line), "%ld.%03ld\n", (long)ts.tv_sec, ts.tv_nsec / 1000000);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n)
			(void)0;
		close(fd);
	}
}

/* A kernel's work is done once the device clock passes its end. */
static int time_reached(void *arg, uint64_t end_ns)
{
	(void)arg;
	return mono_ns() >= end_ns;
}

static CUstream S(CUstream s)
{
	return s ? s : &default_stream;
}

CUresult cuInit(unsigned int flags)
{
	const char *h = getenv("FTBPF_MOCK_HANG_AT_LAUNCH"), *k = getenv("FTBPF_MOCK_KERNEL_US");
	const char *dev = getenv("FTBPF_MOCK_GPU_DEV");

	(void)flags;
	if (h && *h)
		hang_at = atol(h);
	if (k && *k)
		kernel_us = atol(k);
	if (devfd < 0)
		devfd = open(dev && *dev ? dev : "/dev/null", O_RDWR | O_CLOEXEC);
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
		spin_wait(NULL, NULL, 0); /* the kernel in front never finishes */
	for (int i = 0; i < s->n; i++)
		spin_wait(s->q[i].done, s->q[i].arg, s->q[i].seq);
	s->n = 0;
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream)
{
	return sync_stream(stream);
}

CUresult cuStreamSynchronize_ptsz(CUstream stream)
{
	return sync_stream(stream);
}

static CUresult ctx_sync(void)
{
	sync_stream(&default_stream);
	for (int i = 0; i < nstreams; i++)
		sync_stream(streams[i]);
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
	return ctx_sync();
}

/* What cuGetProcAddress gives CUDA 12+ callers: a function of its own, at its own address. */
CUresult cuCtxSynchronize_v2(void)
{
	return ctx_sync();
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
	if (++launches == hang_at) {
		S(stream)->hung = 1;
		note_hang();
	} else if (kernel_us > 0) {
		CUstream st = S(stream);
		uint64_t start = mono_ns();

		/* the device runs the stream's work in order: this kernel starts after the last */
		if (st->n && st->q[st->n - 1].done == time_reached && st->q[st->n - 1].seq > start)
			start = st->q[st->n - 1].seq;
		ftbpf_mock_stream_enqueue(stream, time_reached, NULL,
					  start + (uint64_t)kernel_us * 1000);
	}
	return CUDA_SUCCESS;
}

/* The driver's entry points by name, as the CUDA runtime asks for them: the newest version. */
static const struct {
	const char *name;
	void *fn;
} procs[] = {
    {"cuInit", (void *)cuInit},
    {"cuDriverGetVersion", (void *)cuDriverGetVersion},
    {"cuDeviceGet", (void *)cuDeviceGet},
    {"cuDeviceGetCount", (void *)cuDeviceGetCount},
    {"cuCtxCreate", (void *)cuCtxCreate_v2},
    {"cuCtxSynchronize", (void *)cuCtxSynchronize_v2},
    {"cuStreamCreate", (void *)cuStreamCreate},
    {"cuStreamSynchronize", (void *)cuStreamSynchronize},
    {"cuEventSynchronize", (void *)cuEventSynchronize},
    {"cuMemAlloc", (void *)cuMemAlloc_v2},
    {"cuMemcpyDtoH", (void *)cuMemcpyDtoH_v2},
    {"cuMemcpyHtoD", (void *)cuMemcpyHtoD_v2},
    {"cuLaunchKernel", (void *)cuLaunchKernel},
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
			     unsigned long long flags, int *symbolStatus)
{
	(void)flags;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
		if (!strcmp(procs[i].name, symbol)) {
			*pfn = procs[i].fn;
			if (!strcmp(symbol, "cuCtxSynchronize") && cudaVersion < 12000)
				*pfn = (void *)cuCtxSynchronize;
			if (symbolStatus)
				*symbolStatus = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
			return CUDA_SUCCESS;
		}
	*pfn = NULL;
	if (symbolStatus)
		*symbolStatus = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
	return CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  unsigned long long flags)
{
	return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
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
