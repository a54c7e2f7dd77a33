/*
 * CUDA and NCCL uprobes: finds libcuda.so* / libnccl.so* (or NCCL inside libtorch_cuda.so) in
 * the maps of rank processes and attaches the tracker's entry and return programs to the
 * synchronisation and collective entry points (user/gpuapi.c), once per library file: the
 * probes then fire in every process that maps that file. Owns its links.
 *
 * The files are named by the ranks' owners, so: opened as the rank maps them (os/mapfile.h:
 * regular files only, no path followed, never a FIFO), parsed into private memory with bounds
 * (os/elfsym.h), probed through /proc/self/fd/N (the very inode checked, never a path that
 * could be switched under us), and bounded per user: a user's ranks may bring at most
 * GPUPROBE_LIBS_PER_UID libraries, and the last GPUPROBE_ROOT_RESERVE places are root's, so no
 * user's fake libcuda.so files keep root's real library from being probed. gpuprobe_scan runs
 * on the inspector's thread (watch/inspector.h); the table is locked for readers.
 */
#ifndef FTBPF_GPUPROBE_H
#define FTBPF_GPUPROBE_H

#include <stdint.h>
#include <sys/types.h>

#define GPUPROBE_MAX_LIBS     64
#define GPUPROBE_LIBS_PER_UID 8
#define GPUPROBE_ROOT_RESERVE 16

struct tracker;
struct gpuprobe;

struct gpuprobe_lib_info {
	char path[512]; /* as the first process that mapped it sees it */
	int kind;	/* enum gpuapi_lib */
	int probes;	/* functions probed (entry and return) */
	int err;	/* 0, or the -errno of the first attach that failed */
	uid_t uid;	/* the owner of the rank that brought it */
};

/* launch: also probe kernel launches (cuLaunchKernel*), which costs on every launch. */
int gpuprobe_new(struct tracker *tr, int launch, struct gpuprobe **ret);
void gpuprobe_free(struct gpuprobe *g);
/* Probe the libraries pid (checked against pidfd, borrowed; -1 none) maps that are not probed
 * yet, on behalf of uid (the rank's owner). Returns how many were newly probed, or -errno when
 * the process could not be read (it is gone). */
int gpuprobe_scan(struct gpuprobe *g, int pid, int pidfd, uid_t uid);
int gpuprobe_count(struct gpuprobe *g);
/* A copy of library i's state: 0, or -ENOENT past the last. */
int gpuprobe_info(struct gpuprobe *g, int i, struct gpuprobe_lib_info *ret);
/* Libraries refused because their user (or the table) was full. */
uint64_t gpuprobe_refused(struct gpuprobe *g);

#endif
