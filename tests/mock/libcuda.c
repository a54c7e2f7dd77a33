/*
 * Mock libcuda.so.1 for the tests: a device per process, with a thread of its own that runs
 * the work queued on its streams, in order, while the host goes on. It behaves as the real
 * NVIDIA driver was measured to (../shared/design/GPU-FACTS.md):
 *  - launches and collectives return at once (asynchronous): the device runs them later;
 *  - a synchronisation (cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize, a
 *    synchronous copy) spins on the CPU in the default schedule mode: no syscall while it
 *    waits, except a driver ioctl on the device file about once per second of waiting;
 *  - cuGetProcAddress (how the CUDA runtime reaches the driver) hands out the newest versioned
 *    entry point: cuCtxSynchronize_v2 for CUDA 12+, exported apart from cuCtxSynchronize;
 *  - work captured from a stream (cuStreamBeginCapture_v2 .. cuStreamEndCapture) is replayed
 *    by cuGraphLaunch without any call on the host: captured NCCL collectives run again on the
 *    device, numbered there.
 * A kernel takes FTBPF_MOCK_KERNEL_US of device time when that is set, else gridX x gridY x
 * gridZ microseconds (a bigger grid, more work); gridX 0x7fffffff is a kernel that never ends,
 * and so is the FTBPF_MOCK_HANG_AT_LAUNCH=N-th launch: nothing queued after it ever runs, and a
 * synchronisation on it never returns. When the device reaches a kernel that never ends it
 * writes the wall clock to FTBPF_MOCK_DIR/hang.ts (for the tests' timings). The device file is
 * FTBPF_MOCK_GPU_DEV (default /dev/null; the tests register its major as a GPU's). Work queued
 * by the mock NCCL runs when the device reaches it and completes when every rank's device has
 * reached the same collective. Memory is host memory.
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

#define HANG_GRID 0x7fffffffu
#define GRAPH_MAX 4096

enum { K_KERNEL = 1, K_HANG, K_WORK };

struct item {
	int kind;
	uint64_t dur_ns; /* K_KERNEL */
	const struct ftbpf_mock_work_ops *ops;
	void *arg;
	uint64_t tag, seq; /* K_WORK: opaque to the device; seq 0: numbered when reached */
};

struct qitem {
	struct item it;
	uint64_t id; /* enqueue order: the device completes items in this order */
	struct qitem *next;
};

struct CUgraph_st {
	int n;
	struct item items[GRAPH_MAX];
};

struct CUstream_st {
	uint64_t last_id;
	struct CUgraph_st *capture; /* capturing into it, NULL when not */
};

struct CUevent_st {
	uint64_t id;
};

struct CUctx_st {
	int dev;
};

static struct CUstream_st default_stream;
static long launches, hang_at = -1, kernel_us = -1;
static int inited, devfd = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct qitem *qhead, *qtail;
static uint64_t enqueued;	 /* ids given out (under mu) */
static uint64_t done_id;	 /* the device completed every item up to this id (atomic) */
static pthread_t device;
static int device_started;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO: no syscall */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* For the tests: when the device reached a kernel that never ends (wall clock). */
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

/* The device: runs the queue in order, sleeping while kernels run and while a collective waits
 * for the other ranks' devices (a thread of its own: the host's main thread never sees it). */
static void *device_main(void *unused)
{
	uint64_t busy_until = 0;

	(void)unused;
	for (;;) {
		struct qitem *q;

		pthread_mutex_lock(&mu);
		while (!qhead)
			pthread_cond_wait(&cv, &mu);
		q = qhead;
		qhead = q->next;
		if (!qhead)
			qtail = NULL;
		pthread_mutex_unlock(&mu);
		if (busy_until < mono_ns())
			busy_until = mono_ns();
		if (q->it.kind == K_HANG) {
			note_hang();
			for (;;)
				pause(); /* a kernel that spins forever: nothing after it runs */
		} else if (q->it.kind == K_KERNEL) {
			busy_until += q->it.dur_ns;
			sleep_until(busy_until);
		} else {
			const struct ftbpf_mock_work_ops *o = q->it.ops;
			uint64_t seq = q->it.seq;

			if (o->reach)
				o->reach(q->it.arg, q->it.tag, &seq);
			while (o->done && !o->done(q->it.arg, q->it.tag, seq))
				sleep_until(mono_ns() + 100000); /* the peers' devices: 0.1 ms polls */
			busy_until = mono_ns() + o->cost_ns;
			if (o->cost_ns)
				sleep_until(busy_until);
			if (o->finish)
				o->finish(q->it.arg, q->it.tag, seq);
		}
		__atomic_store_n(&done_id, q->id, __ATOMIC_RELEASE);
		free(q);
	}
	return NULL;
}

static CUstream S(CUstream s)
{
	return s ? s : &default_stream;
}

/* Queue an item (or capture it into the stream's graph). */
static int enqueue(CUstream stream, const struct item *it)
{
	CUstream s = S(stream);
	struct qitem *q;

	if (s->capture) {
		if (s->capture->n == GRAPH_MAX)
			return -1;
		s->capture->items[s->capture->n++] = *it;
		return 0;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -1;
	q->it = *it;
	pthread_mutex_lock(&mu);
	if (!device_started) {
		if (pthread_create(&device, NULL, device_main, NULL)) {
			pthread_mutex_unlock(&mu);
			free(q);
			return -1;
		}
		pthread_detach(device);
		device_started = 1;
	}
	q->id = ++enqueued;
	s->last_id = q->id;
	if (qtail)
		qtail->next = q;
	else
		qhead = q;
	qtail = q;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	return 0;
}

/* Spin until the device completed item id, as the driver does, with its ioctl once a second. */
static void spin_until(uint64_t id)
{
	uint64_t next = mono_ns() + 1000000000ull;
	int n;

	while (__atomic_load_n(&done_id, __ATOMIC_ACQUIRE) < id) {
		if (mono_ns() >= next) {
			if (devfd >= 0 && ioctl(devfd, FIONREAD, &n) < 0)
				(void)0; /* the device file need not know the request */
			next += 1000000000ull;
		}
	}
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
	*stream = calloc(1, sizeof(**stream));
	return *stream ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuStreamDestroy_v2(CUstream stream)
{
	free(stream);
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream)
{
	spin_until(S(stream)->last_id);
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize_ptsz(CUstream stream)
{
	return cuStreamSynchronize(stream);
}

static CUresult ctx_sync(void)
{
	uint64_t id;

	pthread_mutex_lock(&mu);
	id = enqueued;
	pthread_mutex_unlock(&mu);
	spin_until(id);
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
	(void)stream, (void)event, (void)flags; /* one queue per device: already in order */
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
	event->id = S(stream)->last_id;
	return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event)
{
	spin_until(event->id);
	return CUDA_SUCCESS;
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
	ctx_sync();
	memcpy((void *)(uintptr_t)dst, src, bytes);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
	ctx_sync();
	memcpy(dst, (void *)(uintptr_t)src, bytes);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	ctx_sync();
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
	struct item it = {.kind = K_KERNEL};

	(void)f, (void)blockX, (void)blockY, (void)blockZ, (void)sharedMemBytes;
	(void)kernelParams, (void)extra;
	if (++launches == hang_at || gridX == HANG_GRID)
		it.kind = K_HANG;
	else
		it.dur_ns = (kernel_us >= 0 ? (uint64_t)kernel_us
					    : (uint64_t)gridX * (gridY ? gridY : 1) * (gridZ ? gridZ : 1)) *
			    1000;
	return enqueue(stream, &it) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

/* ---- graphs: capture a stream's work once, replay it ---- */
CUresult cuStreamBeginCapture_v2(CUstream stream, int mode)
{
	CUstream s = S(stream);

	(void)mode;
	if (s->capture)
		return CUDA_ERROR_INVALID_VALUE;
	s->capture = calloc(1, sizeof(*s->capture));
	return s->capture ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph)
{
	CUstream s = S(stream);

	if (!s->capture)
		return CUDA_ERROR_INVALID_VALUE;
	*graph = s->capture;
	s->capture = NULL;
	return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags)
{
	(void)flags;
	*exec = (CUgraphExec)graph;
	return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream)
{
	const struct CUgraph_st *g = (const struct CUgraph_st *)exec;

	for (int i = 0; i < g->n; i++) {
		struct item it = g->items[i];

		if (it.kind == K_WORK)
			it.seq = 0; /* a replayed collective is numbered by the device */
		if (enqueue(stream, &it))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec exec)
{
	(void)exec; /* the same object as its graph */
	return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph graph)
{
	free(graph);
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
    {"cuStreamBeginCapture", (void *)cuStreamBeginCapture_v2},
    {"cuStreamEndCapture", (void *)cuStreamEndCapture},
    {"cuGraphInstantiate", (void *)cuGraphInstantiateWithFlags},
    {"cuGraphLaunch", (void *)cuGraphLaunch},
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

int ftbpf_mock_stream_enqueue(CUstream stream, const struct ftbpf_mock_work_ops *ops, void *arg,
			      uint64_t tag, uint64_t seq)
{
	struct item it = {.kind = K_WORK, .ops = ops, .arg = arg, .tag = tag, .seq = seq};

	return enqueue(stream, &it);
}

int ftbpf_mock_stream_capturing(CUstream stream)
{
	return S(stream)->capture != NULL;
}
