/*
 * CUDA and NCCL uprobes: finds libcuda.so* / libnccl.so* (or NCCL inside libtorch_cuda.so) in
 * the maps of rank processes and attaches the tracker's entry and return programs to the
 * synchronisation and collective entry points (user/gpuapi.c), once per library file: the
 * probes then fire in every process that maps that file. Owns its links.
 */
#ifndef FTBPF_GPUPROBE_H
#define FTBPF_GPUPROBE_H

struct tracker;
struct gpuprobe;

struct gpuprobe_lib_info {
	const char *path; /* as the first process that mapped it sees it */
	int kind;	  /* enum gpuapi_lib */
	int probes;	  /* functions probed (entry and return) */
	int err;	  /* 0, or the -errno of the first attach that failed */
};

/* launch: also probe kernel launches (cuLaunchKernel*), which costs on every launch. */
int gpuprobe_new(struct tracker *tr, int launch, struct gpuprobe **ret);
void gpuprobe_free(struct gpuprobe *g);
/* Probe the libraries pid maps that are not probed yet. Returns how many were newly probed,
 * or -errno when the maps could not be read (the process is gone). */
int gpuprobe_scan(struct gpuprobe *g, int pid);
int gpuprobe_count(const struct gpuprobe *g);
int gpuprobe_info(const struct gpuprobe *g, int i, struct gpuprobe_lib_info *ret);

#endif
