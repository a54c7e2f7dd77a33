/*
 * A stand-in for NVIDIA's libnvidia-ml.so.1 where the host has no GPU (tests only): the entry
 * points os/nvml.c looks up, answering from FAKE_NVML_PROCS ("PID:MIB:SM,..."), on
 * FAKE_NVML_DEVICES devices (1 by default; every process on each). Built as
 * build/workloads/fakenvml/libnvidia-ml.so.1 and found through LD_LIBRARY_PATH, as dlopen finds
 * the driver's.
 */
#include <stdlib.h>
#include <string.h>

struct pinfo { /* nvmlProcessInfo_t */
	unsigned int pid;
	unsigned long long used;
	unsigned int gi, ci;
};

struct usample { /* nvmlProcessUtilizationSample_t */
	unsigned int pid;
	unsigned long long ts;
	unsigned int sm, mem, enc, dec;
};

struct fake {
	unsigned int pid, sm;
	unsigned long long mib;
};

static unsigned long long now_ts = 1000;

static int procs(struct fake *f, int max)
{
	const char *s = getenv("FAKE_NVML_PROCS");
	int n = 0;

	while (s && *s && n < max) {
		char *e;

		f[n].pid = (unsigned int)strtoul(s, &e, 10);
		if (*e != ':')
			break;
		f[n].mib = strtoull(e + 1, &e, 10);
		if (*e != ':')
			break;
		f[n].sm = (unsigned int)strtoul(e + 1, &e, 10);
		n++;
		s = *e == ',' ? e + 1 : e;
	}
	return n;
}

int nvmlInit_v2(void)
{
	return 0;
}

int nvmlShutdown(void)
{
	return 0;
}

int nvmlDeviceGetCount_v2(unsigned int *c)
{
	const char *d = getenv("FAKE_NVML_DEVICES");

	*c = d ? (unsigned int)atoi(d) : 1;
	return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h)
{
	*h = (void *)(unsigned long)(i + 1);
	return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, struct pinfo *p)
{
	struct fake f[64];
	int n = procs(f, 64);

	(void)dev;
	if (*count < (unsigned int)n) {
		*count = (unsigned int)n;
		return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	for (int i = 0; i < n; i++)
		p[i] = (struct pinfo){f[i].pid, f[i].mib << 20, 0, 0};
	*count = (unsigned int)n;
	return 0;
}

struct pinfo_v1 { /* nvmlProcessInfo_v1_t: the unversioned call's */
	unsigned int pid;
	unsigned long long used;
};

int nvmlDeviceGetComputeRunningProcesses(void *dev, unsigned int *count, struct pinfo_v1 *p)
{
	struct fake f[64];
	int n = procs(f, 64);

	(void)dev;
	if (*count < (unsigned int)n) {
		*count = (unsigned int)n;
		return 7;
	}
	for (int i = 0; i < n; i++)
		p[i] = (struct pinfo_v1){f[i].pid, f[i].mib << 20};
	*count = (unsigned int)n;
	return 0;
}

int nvmlDeviceGetProcessUtilization(void *dev, struct usample *s, unsigned int *count,
				    unsigned long long last)
{
	struct fake f[64];
	int n = procs(f, 64);

	(void)dev;
	(void)last;
	if (!s || *count < (unsigned int)n) {
		*count = (unsigned int)n;
		return 7;
	}
	now_ts += 1000;
	for (int i = 0; i < n; i++)
		s[i] = (struct usample){f[i].pid, now_ts, f[i].sm, 0, 0, 0};
	*count = (unsigned int)n;
	return 0;
}
