#include "lib/gpuapi.h"

#include <string.h>

#include "ftbpf/abi.h"

/* clang-format off */
#define RET FTBPF_COOKIE_RET
#define CU(n, api)      {n, GPUAPI_LIB_CUDA, FTBPF_COOKIE(api, 0, 0, 0, 0) | RET, 0}
#define LAUNCH(n)       {n, GPUAPI_LIB_CUDA, FTBPF_COOKIE(FTBPF_API_CU_LAUNCH, 0, 0, 0, 0), 1}
#define NC(n, api, ...) {n, GPUAPI_LIB_NCCL, FTBPF_COOKIE(api, __VA_ARGS__), 0}
#define NCR(n, api)     {n, GPUAPI_LIB_NCCL, FTBPF_COOKIE(api, 0, 0, 0, 0) | RET, 0}
#define MB(n, api, comm, count) {n, GPUAPI_LIB_MPI, FTBPF_COOKIE(api, comm, count, 0, 0) | RET, 0}
#define MI(n, api, comm, count) {n, GPUAPI_LIB_MPI, FTBPF_COOKIE(api, comm, count, 0, 0), 0}
/* clang-format on */

/*
 * CUDA entries are base names: the driver exports versioned and per-thread-stream variants
 * (cuCtxSynchronize_v2, cuStreamSynchronize_ptsz, cuMemcpyDtoH_v2_ptds...), and the runtime
 * calls whichever cuGetProcAddress hands it (CUDA 13 gets cuCtxSynchronize_v2). Every variant a
 * library's symbol table has is probed (gpuapi_match). NCCL entries are exact names.
 * NCCL argument positions (1-based) from nccl.h: comm, count, datatype, op (0: none).
 */
const struct gpuapi_sym gpuapi_syms[] = {
    CU("cuStreamSynchronize", FTBPF_API_CU_STREAM_SYNC),
    CU("cuCtxSynchronize", FTBPF_API_CU_CTX_SYNC),
    CU("cuEventSynchronize", FTBPF_API_CU_EVENT_SYNC),
    CU("cuStreamWaitEvent", FTBPF_API_CU_STREAM_WAIT_EVENT),
    CU("cuMemcpy", FTBPF_API_CU_MEMCPY),
    CU("cuMemcpyDtoH", FTBPF_API_CU_MEMCPY),
    CU("cuMemcpyHtoD", FTBPF_API_CU_MEMCPY),
    CU("cuMemcpyDtoD", FTBPF_API_CU_MEMCPY),
    CU("cuMemcpyPeer", FTBPF_API_CU_MEMCPY),
    CU("cuMemcpy2D", FTBPF_API_CU_MEMCPY),
    CU("cuMemcpy3D", FTBPF_API_CU_MEMCPY),
    LAUNCH("cuLaunchKernel"),
    LAUNCH("cuLaunchKernelEx"),
    /* (sendbuff, recvbuff, count, datatype, op, comm, stream) */
    NC("ncclAllReduce", FTBPF_API_NCCL_ALLREDUCE, 6, 3, 4, 5),
    /* (sendbuff, recvbuff, sendcount, datatype, comm, stream) */
    NC("ncclAllGather", FTBPF_API_NCCL_ALLGATHER, 5, 3, 4, 0),
    /* (sendbuff, recvbuff, recvcount, datatype, op, comm, stream) */
    NC("ncclReduceScatter", FTBPF_API_NCCL_REDUCESCATTER, 6, 3, 4, 5),
    /* (sendbuff, recvbuff, count, datatype, root, comm, stream) */
    NC("ncclBroadcast", FTBPF_API_NCCL_BROADCAST, 6, 3, 4, 0),
    /* (buff, count, datatype, root, comm, stream) */
    NC("ncclBcast", FTBPF_API_NCCL_BROADCAST, 5, 2, 3, 0),
    /* (sendbuff, recvbuff, count, datatype, op, root, comm, stream) */
    NC("ncclReduce", FTBPF_API_NCCL_REDUCE, 7, 3, 4, 5),
    /* (buff, count, datatype, peer, comm, stream) */
    NC("ncclSend", FTBPF_API_NCCL_SEND, 5, 2, 3, 0),
    NC("ncclRecv", FTBPF_API_NCCL_RECV, 5, 2, 3, 0),
    /* ncclGroupStart only opens a group: not probed; ncclGroupEnd launches it, may block */
    NCR("ncclGroupEnd", FTBPF_API_NCCL_GROUP_END),
    /* (comm *, nranks, ncclUniqueId by value, rank[, config]) */
    NCR("ncclCommInitRank", FTBPF_API_NCCL_COMM_INIT),
    NCR("ncclCommInitRankConfig", FTBPF_API_NCCL_COMM_INIT),
    /* (comm, color, key, newcomm *, config) */
    NCR("ncclCommSplit", FTBPF_API_NCCL_COMM_SPLIT),
    NCR("ncclCommAbort", FTBPF_API_NCCL_COMM_ABORT),
    NCR("ncclCommDestroy", FTBPF_API_NCCL_COMM_DESTROY),
    /* a graph replays its captured collectives without NCCL calls: its launches are numbered */
    {"cuGraphLaunch", GPUAPI_LIB_CUDA, FTBPF_COOKIE(FTBPF_API_CU_GRAPH_LAUNCH, 0, 0, 0, 0), 0},
    /* ftbpf's NCCL profiler plugin: (comm hash, collectives begun, call, count, rank, nranks) */
    {"ftbpf_nccl_device_reached", GPUAPI_LIB_PROF, FTBPF_COOKIE(FTBPF_API_DEV_REACHED, 0, 0, 0, 0),
     0},
    /* MPI (mpi.h): exact names; PMPI_ twins share the address. Blocking calls get a return
     * probe (a return is progress); MPI's datatypes are handles: not kept. (comm, count) */
    MB("MPI_Allreduce", FTBPF_API_MPI_ALLREDUCE, 6, 3),
    MB("MPI_Bcast", FTBPF_API_MPI_BCAST, 5, 2),
    MB("MPI_Reduce", FTBPF_API_MPI_REDUCE, 7, 3),
    MB("MPI_Allgather", FTBPF_API_MPI_ALLGATHER, 7, 2),
    MB("MPI_Alltoall", FTBPF_API_MPI_ALLTOALL, 7, 2),
    MB("MPI_Barrier", FTBPF_API_MPI_BARRIER, 1, 0),
    MB("MPI_Gather", FTBPF_API_MPI_GATHER, 8, 2),
    MB("MPI_Scatter", FTBPF_API_MPI_SCATTER, 8, 2),
    MB("MPI_Reduce_scatter", FTBPF_API_MPI_REDUCE_SCATTER, 6, 0),
    MB("MPI_Reduce_scatter_block", FTBPF_API_MPI_REDUCE_SCATTER, 6, 3),
    MB("MPI_Scan", FTBPF_API_MPI_SCAN, 6, 3),
    MB("MPI_Exscan", FTBPF_API_MPI_COLL, 6, 3),
    MB("MPI_Allgatherv", FTBPF_API_MPI_COLL, 8, 2),
    MB("MPI_Alltoallv", FTBPF_API_MPI_COLL, 9, 0),
    MB("MPI_Gatherv", FTBPF_API_MPI_COLL, 9, 2),
    MB("MPI_Scatterv", FTBPF_API_MPI_COLL, 9, 6),
    MI("MPI_Iallreduce", FTBPF_API_MPI_ALLREDUCE, 6, 3),
    MI("MPI_Ibcast", FTBPF_API_MPI_BCAST, 5, 2),
    MI("MPI_Ireduce", FTBPF_API_MPI_REDUCE, 7, 3),
    MI("MPI_Iallgather", FTBPF_API_MPI_ALLGATHER, 7, 2),
    MI("MPI_Ialltoall", FTBPF_API_MPI_ALLTOALL, 7, 2),
    MI("MPI_Ibarrier", FTBPF_API_MPI_BARRIER, 1, 0),
    MB("MPI_Send", FTBPF_API_MPI_SEND, 6, 2),
    MB("MPI_Ssend", FTBPF_API_MPI_SEND, 6, 2),
    MB("MPI_Recv", FTBPF_API_MPI_RECV, 6, 2),
    MB("MPI_Sendrecv", FTBPF_API_MPI_SENDRECV, 11, 2),
    MI("MPI_Isend", FTBPF_API_MPI_ISEND, 6, 2),
    MI("MPI_Irecv", FTBPF_API_MPI_IRECV, 6, 2),
    MB("MPI_Probe", FTBPF_API_MPI_PROBE, 3, 0),
    /* MPI-4's large-count variants (mpi4py 4 calls them where the library has them) */
    MB("MPI_Allreduce_c", FTBPF_API_MPI_ALLREDUCE, 6, 3),
    MB("MPI_Bcast_c", FTBPF_API_MPI_BCAST, 5, 2),
    MB("MPI_Reduce_c", FTBPF_API_MPI_REDUCE, 7, 3),
    MB("MPI_Allgather_c", FTBPF_API_MPI_ALLGATHER, 7, 2),
    MB("MPI_Alltoall_c", FTBPF_API_MPI_ALLTOALL, 7, 2),
    MB("MPI_Gather_c", FTBPF_API_MPI_GATHER, 8, 2),
    MB("MPI_Scatter_c", FTBPF_API_MPI_SCATTER, 8, 2),
    MB("MPI_Send_c", FTBPF_API_MPI_SEND, 6, 2),
    MB("MPI_Recv_c", FTBPF_API_MPI_RECV, 6, 2),
    MB("MPI_Sendrecv_c", FTBPF_API_MPI_SENDRECV, 11, 2),
    MI("MPI_Isend_c", FTBPF_API_MPI_ISEND, 6, 2),
    MI("MPI_Irecv_c", FTBPF_API_MPI_IRECV, 6, 2),
    MI("MPI_Iallreduce_c", FTBPF_API_MPI_ALLREDUCE, 6, 3),
    /* a communicator freed: its record goes */
    MI("MPI_Comm_free", FTBPF_API_MPI_COMM_FREE, 0, 0),
    MB("MPI_Wait", FTBPF_API_MPI_WAIT, 0, 0),
    MB("MPI_Waitall", FTBPF_API_MPI_WAIT, 0, 0),
    MB("MPI_Waitany", FTBPF_API_MPI_WAIT, 0, 0),
    MB("MPI_Waitsome", FTBPF_API_MPI_WAIT, 0, 0),
};
const size_t gpuapi_nsyms = sizeof(gpuapi_syms) / sizeof(gpuapi_syms[0]);

/* A run of driver variant suffixes: "_v2", "_v3", "_ptsz", "_ptds", in any order. */
static int variant_suffix(const char *s)
{
	while (*s) {
		if (s[0] != '_')
			return 0;
		if (s[1] == 'v' && s[2] >= '0' && s[2] <= '9') {
			s += 2;
			while (*s >= '0' && *s <= '9')
				s++;
		} else if (!strncmp(s, "_ptsz", 5) || !strncmp(s, "_ptds", 5)) {
			s += 5;
		} else {
			return 0;
		}
	}
	return 1;
}

int gpuapi_match(const char *name, int kind)
{
	for (size_t k = 0; k < gpuapi_nsyms; k++) {
		const struct gpuapi_sym *g = &gpuapi_syms[k];
		size_t n = strlen(g->name);

		if ((int)g->lib != kind || strncmp(name, g->name, n))
			continue;
		if (!name[n] || (kind == GPUAPI_LIB_CUDA && variant_suffix(name + n)))
			return (int)k;
	}
	return -1;
}

static const char *mpi_name(unsigned api)
{
	switch (api) {
	case FTBPF_API_MPI_ALLREDUCE:
		return "MPI_Allreduce";
	case FTBPF_API_MPI_BCAST:
		return "MPI_Bcast";
	case FTBPF_API_MPI_REDUCE:
		return "MPI_Reduce";
	case FTBPF_API_MPI_ALLGATHER:
		return "MPI_Allgather";
	case FTBPF_API_MPI_ALLTOALL:
		return "MPI_Alltoall";
	case FTBPF_API_MPI_BARRIER:
		return "MPI_Barrier";
	case FTBPF_API_MPI_GATHER:
		return "MPI_Gather";
	case FTBPF_API_MPI_SCATTER:
		return "MPI_Scatter";
	case FTBPF_API_MPI_REDUCE_SCATTER:
		return "MPI_Reduce_scatter";
	case FTBPF_API_MPI_SCAN:
		return "MPI_Scan";
	case FTBPF_API_MPI_COLL:
		return "an MPI collective";
	case FTBPF_API_MPI_SEND:
		return "MPI_Send";
	case FTBPF_API_MPI_RECV:
		return "MPI_Recv";
	case FTBPF_API_MPI_SENDRECV:
		return "MPI_Sendrecv";
	case FTBPF_API_MPI_ISEND:
		return "MPI_Isend";
	case FTBPF_API_MPI_IRECV:
		return "MPI_Irecv";
	case FTBPF_API_MPI_PROBE:
		return "MPI_Probe";
	case FTBPF_API_MPI_WAIT:
		return "MPI_Wait";
	}
	return "?";
}

const char *gpuapi_name(unsigned api)
{
	switch (api) {
	case FTBPF_API_CU_STREAM_SYNC:
		return "cuStreamSynchronize";
	case FTBPF_API_CU_CTX_SYNC:
		return "cuCtxSynchronize";
	case FTBPF_API_CU_EVENT_SYNC:
		return "cuEventSynchronize";
	case FTBPF_API_CU_STREAM_WAIT_EVENT:
		return "cuStreamWaitEvent";
	case FTBPF_API_CU_MEMCPY:
		return "cuMemcpy";
	case FTBPF_API_CU_LAUNCH:
		return "cuLaunchKernel";
	case FTBPF_API_NCCL_ALLREDUCE:
		return "ncclAllReduce";
	case FTBPF_API_NCCL_ALLGATHER:
		return "ncclAllGather";
	case FTBPF_API_NCCL_REDUCESCATTER:
		return "ncclReduceScatter";
	case FTBPF_API_NCCL_BROADCAST:
		return "ncclBroadcast";
	case FTBPF_API_NCCL_REDUCE:
		return "ncclReduce";
	case FTBPF_API_NCCL_SEND:
		return "ncclSend";
	case FTBPF_API_NCCL_RECV:
		return "ncclRecv";
	case FTBPF_API_NCCL_GROUP_START:
		return "ncclGroupStart";
	case FTBPF_API_NCCL_GROUP_END:
		return "ncclGroupEnd";
	case FTBPF_API_NCCL_COMM_INIT:
		return "ncclCommInitRank";
	case FTBPF_API_NCCL_COMM_SPLIT:
		return "ncclCommSplit";
	case FTBPF_API_NCCL_COMM_ABORT:
		return "ncclCommAbort";
	case FTBPF_API_NCCL_COMM_DESTROY:
		return "ncclCommDestroy";
	case FTBPF_API_CU_GRAPH_LAUNCH:
		return "cuGraphLaunch";
	case FTBPF_API_DEV_REACHED:
		return "ftbpf_nccl_device_reached";
	}
	return mpi_name(api);
}

const char *gpuapi_lib_name(int kind)
{
	switch (kind) {
	case GPUAPI_LIB_CUDA:
		return "CUDA";
	case GPUAPI_LIB_NCCL:
		return "NCCL";
	case GPUAPI_LIB_MPI:
		return "MPI";
	case GPUAPI_LIB_PROF:
		return "NCCL profiler";
	}
	return "?";
}

/* ncclDataType_t, nccl.h order */
static const struct {
	const char *name;
	unsigned size;
} dtypes[] = {{"int8", 1},    {"uint8", 1},    {"int32", 4},	  {"uint32", 4},
	      {"int64", 8},   {"uint64", 8},   {"float16", 2},	  {"float32", 4},
	      {"float64", 8}, {"bfloat16", 2}, {"float8e4m3", 1}, {"float8e5m2", 1}};

const char *gpuapi_dtype_name(unsigned dtype)
{
	return dtype < sizeof(dtypes) / sizeof(dtypes[0]) ? dtypes[dtype].name : "?";
}

unsigned gpuapi_dtype_size(unsigned dtype)
{
	return dtype < sizeof(dtypes) / sizeof(dtypes[0]) ? dtypes[dtype].size : 0;
}

const char *gpuapi_redop_name(unsigned op)
{
	static const char *n[] = {"sum", "prod", "max", "min", "avg"};

	return op < sizeof(n) / sizeof(n[0]) ? n[op] : "?";
}

int gpuapi_lib_of(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (!strncmp(b, "libcuda.so", 10))
		return GPUAPI_LIB_CUDA;
	/* NCCL as its own library, or linked statically into PyTorch's CUDA library */
	if (!strncmp(b, "libnccl.so", 10) || !strncmp(b, "libtorch_cuda.so", 16))
		return GPUAPI_LIB_NCCL;
	if (!strncmp(b, "libmpi.so", 9) || !strncmp(b, "libmpich.so", 11))
		return GPUAPI_LIB_MPI;
	if (!strncmp(b, "libnccl-profiler-ftbpf.so", 25))
		return GPUAPI_LIB_PROF;
	return 0;
}
