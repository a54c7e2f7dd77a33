/*
 * NVIDIA's management library (NVML), loaded at run time where the host has it (the driver
 * installs libnvidia-ml.so.1): what each process uses of the GPUs, as nvidia-smi and nvtop
 * show it. Nothing links against it: a host without a driver simply has no GPU columns.
 */
#ifndef FTBPF_NVML_H
#define FTBPF_NVML_H

#include <stdint.h>

struct nvml;

/* One process's use of the GPUs, summed over the devices it runs on. */
struct nvml_proc {
	int pid;
	uint64_t mem_bytes; /* GPU memory it holds (0 unknown: NVML may not tell, in containers) */
	int sm_pct;	    /* its SM utilisation in the last sample period, % (-1 no sample) */
	int gpus;	    /* devices it runs on */
};

/* Load the library and initialise it: 0, or -ENOENT (no library or no driver: no GPUs here),
 * -EIO (NVML answered an error). */
int nvml_open(struct nvml **ret);
/* The processes on every device now: *ret (owned by the caller, free()) and *ret_n. 0 or
 * -errno. Utilisation is of the samples since the last call (the first: those NVML kept). */
int nvml_sample(struct nvml *n, struct nvml_proc **ret, int *ret_n);
/* The number of devices (0 after an error). */
int nvml_devices(const struct nvml *n);
void nvml_close(struct nvml *n);

#endif
