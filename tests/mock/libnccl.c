/*
 * Mock libnccl.so.2 for the tests. Ranks of a communicator share a file (FTBPF_MOCK_DIR, default
 * /tmp, named after the unique id). Every collective is numbered per communicator, as NCCL
 * matches them; it is queued on the caller's stream and completes when every rank's device has
 * reached the collective with the same number, and only if all of them issued the same call
 * with the same count and type (a mismatch hangs, as NCCL often does). Data are not moved.
 * ncclCommInitRank waits until every rank joined. Point-to-point calls complete at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "mock_gpu.h"

#define MAX_RANKS 64
#define RING	  256

enum { OP_ALLREDUCE = 1, OP_BROADCAST, OP_REDUCE, OP_ALLGATHER, OP_REDUCESCATTER };

struct shared {
	uint32_t nranks;
	uint32_t joined;
	struct {
		uint64_t reached; /* the device reached (issued, nothing hung before) */
		struct {
			uint32_t op, dtype;
			uint64_t count;
		} ring[RING];
	} r[MAX_RANKS];
};

struct ncclComm {
	struct shared *sh;
	int rank, nranks;
	uint64_t seq;
};

static int group_depth;

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

/* Collective seq is complete: every rank's device reached it, and all issued the same call. */
static int coll_done(void *arg, uint64_t seq)
{
	struct ncclComm *c = arg;
	const struct shared *sh = c->sh;
	unsigned slot = seq % RING;

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

static ncclResult_t collective(int op, size_t count, ncclDataType_t dt, ncclComm_t c,
			       cudaStream_t stream)
{
	uint64_t seq;
	unsigned slot;

	if (!c)
		return ncclInvalidArgument;
	seq = ++c->seq;
	slot = seq % RING;
	c->sh->r[c->rank].ring[slot].op = (uint32_t)op;
	c->sh->r[c->rank].ring[slot].dtype = (uint32_t)dt;
	c->sh->r[c->rank].ring[slot].count = count;
	if (ftbpf_mock_stream_enqueue(stream, coll_done, c, seq))
		__atomic_store_n(&c->sh->r[c->rank].reached, seq, __ATOMIC_RELEASE);
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
