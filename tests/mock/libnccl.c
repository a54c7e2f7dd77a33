/*
 * Mock libnccl.so.2 for the tests. Ranks of a communicator share a file (FTBPF_MOCK_DIR, default
 * /tmp, named after the unique id). A collective returns at once: it is queued on the caller's
 * stream, and when that rank's device reaches it (the mock libcuda's device thread, after the
 * work queued before it) it is numbered on the device, per communicator, as NCCL matches them;
 * it completes when every rank's device has reached the collective with the same number, and
 * only if all of them issued the same call with the same count and type (a mismatch hangs, as
 * NCCL often does). Captured into a CUDA graph, a collective runs again at each replay, with no
 * call on the host. Data are not moved. ncclCommInitRank waits until every rank joined.
 * Point-to-point calls complete at once. With NCCL_PROFILER_PLUGIN set (a path, or NAME for
 * libnccl-profiler-NAME.so), the plugin is loaded as NCCL 2.26+ loads it, and told of each
 * collective when the device begins it (a Coll event, then a KernelCh event under it).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "mock_gpu.h"
#include "mock_ras.h"
#include "plugin/ncclprof_abi.h"

#define MAX_RANKS 64
#define RING	  256

enum { OP_ALLREDUCE = 1, OP_BROADCAST, OP_REDUCE, OP_ALLGATHER, OP_REDUCESCATTER };

struct shared {
	uint32_t nranks;
	uint32_t joined;
	struct {
		uint64_t reached; /* collectives its device began */
		struct {
			uint32_t op, dtype;
			uint64_t count;
		} ring[RING];
	} r[MAX_RANKS];
	struct mock_ras_rank ras[MAX_RANKS]; /* what the RAS service reports (nccl_ras.c) */
};

struct ncclComm {
	struct shared *sh;
	int rank, nranks;
	uint64_t seq;	       /* collectives the host issued */
	uint64_t dev;	       /* collectives the device began (the device thread's) */
	uint64_t fseq[8];      /* per function, as NCCL's profiler numbers them */
	uint64_t hash;	       /* the communicator's id (from its unique id) */
	void *prof;	       /* the profiler plugin's context, NULL without one */
	void *coll_h[RING];    /* profiler handles of the collectives on the device */
	void *kch_h[RING];
};
static int group_depth;

/* ---- the profiler plugin, as NCCL 2.26+ loads it ---- */
static pthread_once_t prof_once = PTHREAD_ONCE_INIT;
static const struct ncclprof_v5 *prof5;
static const struct ncclprof_v4 *prof4;

static void prof_load(void)
{
	const char *name = getenv("NCCL_PROFILER_PLUGIN");
	char lib[512];
	void *h;

	if (!name || !*name)
		return;
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(lib, sizeof(lib), "libnccl-profiler-%s.so", name);
		h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h) {
		fprintf(stderr, "mock NCCL: profiler plugin %s: %s\n", name, dlerror());
		return;
	}
	prof5 = dlsym(h, "ncclProfiler_v5");
	if (!prof5)
		prof4 = dlsym(h, "ncclProfiler_v4");
}

static void prof_init(struct ncclComm *c)
{
	int mask = 0;

	pthread_once(&prof_once, prof_load);
	if (prof5 && prof5->init(&c->prof, c->hash, &mask, "", 1, c->nranks, c->rank, NULL))
		c->prof = NULL;
	else if (!prof5 && prof4 &&
		 prof4->init(&c->prof, &mask, "", c->hash, 1, c->nranks, c->rank, NULL))
		c->prof = NULL;
}

static const char *func_name(int op)
{
	static const char *n[] = {"", "AllReduce", "Broadcast", "Reduce", "AllGather",
				  "ReduceScatter"};

	return op > 0 && op < 6 ? n[op] : "";
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

ncclResult_t ncclGetVersion(int *version)
{
	*version = 22105;
	return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
	return r == ncclSuccess ? "no error" : "mock NCCL error";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	memset(id, 0, sizeof(*id));
	if (getrandom(id->internal, 16, 0) != 16)
		return ncclSystemError;
	return ncclSuccess;
}

static ncclResult_t init(ncclComm_t *ret, int nranks, const ncclUniqueId *id, int rank)
{
	const char *dir = getenv("FTBPF_MOCK_DIR");
	struct ncclComm *c;
	uint64_t key;
	char path[512];
	int fd;

	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	memcpy(&key, id->internal, sizeof(key));
	snprintf(path, sizeof(path), "%s/nccl-mock-%016llx", dir && *dir ? dir : "/tmp",
		 (unsigned long long)key);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct shared)) < 0) {
		perror(path);
		return ncclSystemError;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return ncclSystemError;
	c->sh = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (c->sh == MAP_FAILED) {
		free(c);
		return ncclSystemError;
	}
	c->rank = rank;
	c->nranks = nranks;
	c->hash = key;
	prof_init(c);
	__atomic_store_n(&c->sh->nranks, (uint32_t)nranks, __ATOMIC_RELEASE);
	__atomic_add_fetch(&c->sh->joined, 1, __ATOMIC_ACQ_REL);
	for (int i = 0; __atomic_load_n(&c->sh->joined, __ATOMIC_ACQUIRE) < (uint32_t)nranks; i++) {
		if (i > 120000) { /* 2 minutes, like a bootstrap timeout */
			munmap(c->sh, sizeof(struct shared));
			free(c);
			return ncclRemoteError;
		}
		nap_ms(1);
	}
	mock_ras_add(c->hash, nranks, rank, c->sh->ras);
	*ret = c;
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	return init(comm, nranks, &commId, rank);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	(void)config;
	return init(comm, nranks, &commId, rank);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config)
{
	(void)comm, (void)color, (void)key, (void)newcomm, (void)config;
	fprintf(stderr, "mock NCCL: ncclCommSplit is not modelled\n");
	return ncclInvalidUsage;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	if (comm->prof)
		(prof5 ? prof5->finalize : prof4->finalize)(comm->prof);
	mock_ras_remove(comm->sh->ras);
	munmap(comm->sh, sizeof(struct shared));
	free(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	return ncclCommDestroy(comm);
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	*count = comm->nranks;
	return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	*rank = comm->rank;
	return ncclSuccess;
}

#define TAG(op, dt, count) ((uint64_t)(op) | (uint64_t)(dt) << 8 | (uint64_t)(count) << 16)
#define TAG_OP(t)	   ((uint32_t)((t)&0xff))
#define TAG_DT(t)	   ((uint32_t)(((t) >> 8) & 0xff))
#define TAG_COUNT(t)	   ((t) >> 16)

/* The device began the collective: number it, say so to the other ranks (and the profiler). */
static void coll_reach(void *arg, uint64_t tag, uint64_t *seq)
{
	struct ncclComm *c = arg;
	uint64_t s = ++c->dev;
	unsigned slot = s % RING;
	struct timespec ts;

	*seq = s;
	c->sh->r[c->rank].ring[slot].op = TAG_OP(tag);
	c->sh->r[c->rank].ring[slot].dtype = TAG_DT(tag);
	c->sh->r[c->rank].ring[slot].count = TAG_COUNT(tag);
	__atomic_store_n(&c->sh->r[c->rank].reached, s, __ATOMIC_RELEASE);
	if (c->prof) {
		struct ncclprof_descr d = {.type = NCCLPROF_COLL, .rank = c->rank};
		ncclprof_result_t (*start)(void *, void **, struct ncclprof_descr *) =
		    prof5 ? prof5->start_event : prof4->start_event;

		d.coll.seq_number = c->fseq[TAG_OP(tag) & 7]++;
		d.coll.func = func_name((int)TAG_OP(tag));
		d.coll.count = TAG_COUNT(tag);
		d.coll.datatype = "";
		c->coll_h[slot] = NULL;
		c->kch_h[slot] = NULL;
		start(c->prof, &c->coll_h[slot], &d);
		memset(&d, 0, sizeof(d));
		d.type = NCCLPROF_KERNEL_CH;
		d.parent = c->coll_h[slot];
		d.rank = c->rank;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		d.kernel_ch.ptimer = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		start(c->prof, &c->kch_h[slot], &d);
	}
}

/* Collective seq may complete: every rank's device began it, and all issued the same call. */
static int coll_done(void *arg, uint64_t tag, uint64_t seq)
{
	struct ncclComm *c = arg;
	const struct shared *sh = c->sh;
	unsigned slot = seq % RING;

	(void)tag;
	for (int j = 0; j < c->nranks; j++) {
		if (__atomic_load_n(&sh->r[j].reached, __ATOMIC_ACQUIRE) < seq)
			return 0;
		if (sh->r[j].ring[slot].op != sh->r[c->rank].ring[slot].op ||
		    sh->r[j].ring[slot].count != sh->r[c->rank].ring[slot].count ||
		    sh->r[j].ring[slot].dtype != sh->r[c->rank].ring[slot].dtype)
			return 0; /* mismatched collectives: never completes */
	}
	return 1;
}

static void coll_finish(void *arg, uint64_t tag, uint64_t seq)
{
	struct ncclComm *c = arg;
	unsigned slot = seq % RING;
	union ncclprof_state_args a = {{0}};
	struct timespec ts;

	(void)tag;
	if (!c->prof)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	a.kernel_ch.ptimer = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (c->kch_h[slot]) {
		(prof5 ? prof5->record_event_state : prof4->record_event_state)(
		    c->kch_h[slot], NCCLPROF_STATE_KERNEL_CH_STOP, &a);
		(prof5 ? prof5->stop_event : prof4->stop_event)(c->kch_h[slot]);
	}
	if (c->coll_h[slot])
		(prof5 ? prof5->stop_event : prof4->stop_event)(c->coll_h[slot]);
}

/* About the time a small all-reduce takes once every device is there. */
static const struct ftbpf_mock_work_ops coll_ops = {coll_reach, coll_done, coll_finish, 200000};

static ncclResult_t collective(int op, size_t count, ncclDataType_t dt, ncclComm_t c,
			       cudaStream_t stream)
{
	if (!c)
		return ncclInvalidArgument;
	if (!ftbpf_mock_stream_capturing(stream)) {
		c->seq++; /* the host's count; a captured one is issued at each replay instead */
		__atomic_add_fetch(&c->sh->ras[c->rank].launched[op], 1, __ATOMIC_RELAXED);
	}
	if (ftbpf_mock_stream_enqueue(stream, &coll_ops, c, TAG(op, dt, count), 0))
		return ncclSystemError;
	return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)op;
	return collective(OP_ALLREDUCE, count, datatype, comm, stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)root;
	return collective(OP_BROADCAST, count, datatype, comm, stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)op, (void)root;
	return collective(OP_REDUCE, count, datatype, comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return collective(OP_ALLGATHER, sendcount, datatype, comm, stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)op;
	return collective(OP_REDUCESCATTER, recvcount, datatype, comm, stream);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)count, (void)datatype, (void)peer, (void)stream;
	return comm ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	(void)recvbuff, (void)count, (void)datatype, (void)peer, (void)stream;
	return comm ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t ncclGroupStart(void)
{
	group_depth++;
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
	if (group_depth == 0)
		return ncclInvalidUsage;
	group_depth--;
	return ncclSuccess;
}

/* The real library defines each entry point once and exports it twice (NCCL_API: the weak
 * public name and the p-prefixed profiling one, at the same address). So does the mock. */
#define ALIAS(f) __typeof__(f) p##f __attribute__((alias(#f)))
ALIAS(ncclAllReduce);
ALIAS(ncclBroadcast);
ALIAS(ncclReduce);
ALIAS(ncclAllGather);
ALIAS(ncclReduceScatter);
ALIAS(ncclSend);
ALIAS(ncclRecv);
ALIAS(ncclGroupStart);
ALIAS(ncclGroupEnd);
ALIAS(ncclCommInitRank);
ALIAS(ncclCommInitRankConfig);
ALIAS(ncclCommDestroy);
ALIAS(ncclCommAbort);
