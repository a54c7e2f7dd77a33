/*
 * The CUDA driver, NCCL and MPI entry points that ftbpf probes: their names, which library
 * exports them, the uprobe cookie each gets (enum ftbpf_api and argument positions), and names
 * for NCCL data types and reduction ops. Pure tables, no I/O.
 */
#ifndef FTBPF_GPUAPI_H
#define FTBPF_GPUAPI_H

#include <stddef.h>
#include <stdint.h>

enum gpuapi_lib {
	GPUAPI_LIB_CUDA = 1, /* libcuda.so* */
	GPUAPI_LIB_NCCL = 2, /* libnccl.so* (or a library with NCCL linked in) */
	GPUAPI_LIB_MPI = 3,  /* libmpi.so* (Open MPI, MPICH, Intel MPI), libmpich.so* */
	GPUAPI_LIB_PROF = 4, /* ftbpf's NCCL profiler plugin (libnccl-profiler-ftbpf.so) */
};

struct gpuapi_sym {
	const char *name;
	enum gpuapi_lib lib;
	uint64_t cookie;
	int launch; /* a kernel launch: probed only with gpu_probe_launch */
};

extern const struct gpuapi_sym gpuapi_syms[];
extern const size_t gpuapi_nsyms;

/* The gpuapi_syms entry a library symbol is (CUDA: the base name or a variant of it such as
 * cuCtxSynchronize_v2 or cuMemcpyDtoH_v2_ptds; NCCL: the exact name), or -1. */
int gpuapi_match(const char *name, int kind);
/* "cuStreamSynchronize", "ncclAllReduce", "MPI_Allreduce"...; "?" for an unknown id. */
const char *gpuapi_name(unsigned api);
/* "CUDA", "NCCL", "MPI", "NCCL profiler" for a gpuapi_lib; "?" otherwise. */
const char *gpuapi_lib_name(int kind);
/* "float32"... for an ncclDataType_t; "?" when unknown. */
const char *gpuapi_dtype_name(unsigned dtype);
/* Size in bytes of an ncclDataType_t element; 0 when unknown. */
unsigned gpuapi_dtype_size(unsigned dtype);
/* "sum"... for an ncclRedOp_t; "?" when unknown. */
const char *gpuapi_redop_name(unsigned op);
/* Which library a mapped file is, by its base name: a gpuapi_lib, or 0 for none. */
int gpuapi_lib_of(const char *path);

#endif
