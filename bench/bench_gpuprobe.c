/*
 * Cost of the CUDA/NCCL uprobes per call, on the mock libraries: times N calls of one entry
 * point (the mock returns at once) and prints ns per call. bench.sh runs it as a rank with and
 * without the agent's probes attached and reports the ratio.
 *   bench_gpuprobe sync N      cuStreamSynchronize on an idle stream (probed by default)
 *   bench_gpuprobe launch N    cuLaunchKernel (probed only with gpu_probe_launch)
 *   bench_gpuprobe coll N      ncclAllReduce on a communicator of one rank (entry probe: the
 *                              collective numbered, its arrival recorded); FTBPF_MOCK_DIR set
 *   bench_gpuprobe wait SECS   stay alive (lets the agent adopt it and probe the libraries)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mock_gpu.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	CUstream s;
	long n;
	double t0, t1;

	if (argc != 3) {
		fprintf(stderr, "usage: bench_gpuprobe sync|launch|wait N\n");
		return 2;
	}
	n = atol(argv[2]);
	if (cuInit(0) || cuStreamCreate(&s, 0))
		return 1;
	if (!strcmp(argv[1], "wait")) {
		sleep((unsigned)n);
		return 0;
	}
	if (!strcmp(argv[1], "coll")) {
		ncclUniqueId id;
		ncclComm_t c;
		float x = 0;

		if (ncclGetUniqueId(&id) || ncclCommInitRank(&c, 1, id, 0))
			return 1;
		for (int i = 0; i < 1000; i++)
			ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, c, s);
		t0 = now();
		for (long i = 0; i < n; i++)
			ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, c, s);
		t1 = now();
		printf("%.1f\n", (t1 - t0) * 1e9 / n);
		fflush(stdout);
		_exit(0); /* the mock device has a backlog to run: not waited for */
	}
	/* warm up: the first calls fault pages in */
	for (int i = 0; i < 1000; i++)
		cuStreamSynchronize(s);
	t0 = now();
	if (!strcmp(argv[1], "sync"))
		for (long i = 0; i < n; i++)
			cuStreamSynchronize(s);
	else
		for (long i = 0; i < n; i++)
			cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
	t1 = now();
	printf("%.1f\n", (t1 - t0) * 1e9 / n);
	return 0;
}
