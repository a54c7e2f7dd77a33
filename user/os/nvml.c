/* NVML at run time: see nvml.h. The few entry points used are looked up by name; the structs
 * are NVML's documented ABI (nvml.h: nvmlProcessInfo_v1_t, nvmlProcessInfo_t,
 * nvmlProcessUtilizationSample_t), declared here so that no header of the driver is needed. */
#include "os/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NVML_SUCCESS		     0
#define NVML_ERROR_NOT_FOUND	     6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define MAX_DEVICES		     64
#define MAX_PROCS		     4096

typedef void *nvml_device;

struct pinfo_v1 { /* nvmlProcessInfo_v1_t */
	unsigned int pid;
	unsigned long long used;
};

struct pinfo_v2 { /* nvmlProcessInfo_t (_v2 and _v3 calls) */
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
};

struct usample { /* nvmlProcessUtilizationSample_t */
	unsigned int pid;
	unsigned long long ts_us;
	unsigned int sm, mem, enc, dec;
};

struct nvml {
	void *lib;
	int (*shutdown)(void);
	int (*handle)(unsigned int, nvml_device *);
	int (*procs_v3)(nvml_device, unsigned int *, struct pinfo_v2 *);
	int (*procs_v1)(nvml_device, unsigned int *, struct pinfo_v1 *);
	int (*util)(nvml_device, struct usample *, unsigned int *, unsigned long long);
	int ndev;
	unsigned long long last_ts[MAX_DEVICES];
};

static struct nvml_proc *proc_of(struct nvml_proc **arr, int *n, int *cap, int pid)
{
	for (int i = 0; i < *n; i++)
		if ((*arr)[i].pid == pid)
			return &(*arr)[i];
	if (*n == *cap) {
		int c = *cap ? *cap * 2 : 16;
		struct nvml_proc *a = realloc(*arr, (size_t)c * sizeof(*a));

		if (!a)
			return NULL;
		*arr = a;
		*cap = c;
	}
	(*arr)[*n] = (struct nvml_proc){.pid = pid, .sm_pct = -1};
	return &(*arr)[(*n)++];
}

int nvml_open(struct nvml **ret)
{
	struct nvml *n = calloc(1, sizeof(*n));
	int (*init)(void);
	int (*count)(unsigned int *);
	unsigned int c = 0;

	*ret = NULL;
	if (!n)
		return -ENOMEM;
	n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		free(n);
		return -ENOENT;
	}
	*(void **)&init = dlsym(n->lib, "nvmlInit_v2");
	*(void **)&count = dlsym(n->lib, "nvmlDeviceGetCount_v2");
	*(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
	*(void **)&n->handle = dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&n->procs_v3 = dlsym(n->lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	*(void **)&n->procs_v1 = dlsym(n->lib, "nvmlDeviceGetComputeRunningProcesses");
	*(void **)&n->util = dlsym(n->lib, "nvmlDeviceGetProcessUtilization");
	/* the first call's layout (nvmlProcessInfo_v1_t) is the one that never changed; the _v3
	 * call's struct grew without a new name in some drivers (R535): only without the first */
	if (n->procs_v1)
		n->procs_v3 = NULL;
	if (!init || !count || !n->shutdown || !n->handle || (!n->procs_v3 && !n->procs_v1)) {
		dlclose(n->lib);
		free(n);
		return -ENOENT;
	}
	if (init() != NVML_SUCCESS) { /* a library without a driver, or no device */
		dlclose(n->lib);
		free(n);
		return -ENOENT;
	}
	if (count(&c) != NVML_SUCCESS) {
		n->shutdown();
		dlclose(n->lib);
		free(n);
		return -EIO;
	}
	n->ndev = c > MAX_DEVICES ? MAX_DEVICES : (int)c;
	*ret = n;
	return 0;
}

/* The memory each process holds on device d. */
static int device_procs(struct nvml *n, nvml_device d, struct nvml_proc **arr, int *np, int *cap)
{
	unsigned int cnt = MAX_PROCS;
	struct pinfo_v2 *p2 = n->procs_v3 ? calloc(cnt, sizeof(*p2)) : NULL;
	struct pinfo_v1 *p1 = n->procs_v3 ? NULL : calloc(cnt, sizeof(*p1));
	int r = (p2 || p1) ? 0 : -ENOMEM;

	if (r == 0)
		r = p2 ? n->procs_v3(d, &cnt, p2) : n->procs_v1(d, &cnt, p1);
	if (r != 0) { /* an error, or more than MAX_PROCS processes: none from this device */
		free(p2);
		free(p1);
		return r == -ENOMEM ? r : -EIO;
	}
	for (unsigned int i = 0; i < cnt && i < MAX_PROCS; i++) {
		int pid = (int)(p2 ? p2[i].pid : p1[i].pid);
		unsigned long long used = p2 ? p2[i].used : p1[i].used;
		struct nvml_proc *x = proc_of(arr, np, cap, pid);

		if (!x)
			break;
		x->gpus++;
		/* NVML_VALUE_NOT_AVAILABLE (all ones) where it cannot tell */
		if (used != ~0ull)
			x->mem_bytes += used;
	}
	free(p2);
	free(p1);
	return 0;
}

/* Each process's newest SM utilisation on device i since the last call, added up. */
static void device_util(struct nvml *n, int i, nvml_device d, struct nvml_proc **arr, int *np,
			int *cap)
{
	unsigned int cnt = 0;
	struct usample *s;
	unsigned long long newest = n->last_ts[i];
	int r;

	if (!n->util)
		return;
	r = n->util(d, NULL, &cnt, n->last_ts[i]);
	if ((r != NVML_ERROR_INSUFFICIENT_SIZE && r != NVML_SUCCESS) || !cnt)
		return; /* NVML_ERROR_NOT_FOUND: no sample since then */
	if (cnt > MAX_PROCS)
		cnt = MAX_PROCS;
	if (!(s = calloc(cnt, sizeof(*s))))
		return;
	if (n->util(d, s, &cnt, n->last_ts[i]) == NVML_SUCCESS) {
		for (unsigned int k = 0; k < cnt && k < MAX_PROCS; k++) {
			struct nvml_proc *x = proc_of(arr, np, cap, (int)s[k].pid);

			if (!x)
				break;
			x->sm_pct =
			    (x->sm_pct < 0 ? 0 : x->sm_pct) + (int)(s[k].sm > 100 ? 100 : s[k].sm);
			if (s[k].ts_us > newest)
				newest = s[k].ts_us;
		}
		n->last_ts[i] = newest;
	}
	free(s);
}

int nvml_sample(struct nvml *n, struct nvml_proc **ret, int *ret_n)
{
	struct nvml_proc *arr = NULL;
	int np = 0, cap = 0, r = 0;

	*ret = NULL;
	*ret_n = 0;
	for (int i = 0; i < n->ndev; i++) {
		nvml_device d;

		if (n->handle((unsigned int)i, &d) != NVML_SUCCESS)
			continue;
		if ((r = device_procs(n, d, &arr, &np, &cap)) == -ENOMEM)
			break;
		device_util(n, i, d, &arr, &np, &cap);
		r = 0;
	}
	for (int k = 0; k < np && n->util; k++)
		if (arr[k].gpus && arr[k].sm_pct < 0)
			arr[k].sm_pct = 0; /* holds memory, ran no kernel since the last look */
	if (r < 0) {
		free(arr);
		return r;
	}
	*ret = arr;
	*ret_n = np;
	return 0;
}

int nvml_devices(const struct nvml *n)
{
	return n ? n->ndev : 0;
}

void nvml_close(struct nvml *n)
{
	if (!n)
		return;
	n->shutdown();
	dlclose(n->lib);
	free(n);
}
