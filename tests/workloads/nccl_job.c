/*
 * A data-parallel training loop on the mock libcuda.so.1 / libnccl.so.2 (tests/mock), linked
 * like a real CUDA program. One rank per process; every step:
 *   forward kernel, cuStreamSynchronize (loss check),
 *   ncclAllReduce(gradients: 1024 x float32), ncclAllReduce(loss: 1 x float32),
 *   cuStreamSynchronize, cuMemcpyDtoH (loss.item()).
 * Faults: --skip-at K: this rank skips the gradient all-reduce at step K (a rank that took
 * another code path); --stall-step K: at step K, before its all-reduces, it sleeps (a data
 * loader that never returns). A hung kernel comes from the mock (FTBPF_MOCK_HANG_AT_LAUNCH=K).
 * --init-delay-ms M: time before CUDA/NCCL init (what importing a framework takes).
 * Rank 0 writes the NCCL unique id to DIR/ncclid; the others read it (as torch's store would).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../mock/mock_gpu.h"

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		int r_ = (int)(x);                                                                 \
		if (r_) {                                                                          \
			fprintf(stderr, "nccl_job: %s failed: %d\n", #x, r_);                      \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void write_file(const char *dir, const char *name, const void *buf, size_t len)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(tmp, "w");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) || rename(tmp, path)) {
		perror(path);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	int rank = 0, world = 1, interval_ms = 20, init_delay_ms = 0;
	long steps = 0, skip_at = -1, stall_step = -1;
	const char *dir = ".";
	char name[64], path[512];
	ncclUniqueId id;
	ncclComm_t comm;
	CUcontext ctx;
	CUdevice dev;
	CUstream stream;
	CUdeviceptr grad, loss;
	float host = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rank"))
			rank = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--world"))
			world = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--steps"))
			steps = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--skip-at"))
			skip_at = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--stall-step"))
			stall_step = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--init-delay-ms"))
			init_delay_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--interval-ms"))
			interval_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--dir"))
			dir = argv[i + 1];
		else {
			fprintf(stderr, "usage: nccl_job --rank R --world N [--steps S] [--skip-at "
					"K] [--stall-step K] "
					"[--interval-ms M] [--init-delay-ms M] [--dir D]\n");
			return 2;
		}
	}
	nap_ms(init_delay_ms); /* a real job imports and loads data before it creates its comms */
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate_v2(&ctx, 0, dev));
	CHECK(cuStreamCreate(&stream, 0));
	CHECK(cuMemAlloc_v2(&grad, 1024 * sizeof(float)));
	CHECK(cuMemAlloc_v2(&loss, sizeof(float)));
	snprintf(path, sizeof(path), "%s/ncclid", dir);
	if (rank == 0) {
		CHECK(ncclGetUniqueId(&id));
		write_file(dir, "ncclid", &id, sizeof(id));
	} else {
		FILE *f;

		while (!(f = fopen(path, "r")))
			nap_ms(10);
		if (fread(&id, 1, sizeof(id), f) != sizeof(id)) {
			fprintf(stderr, "nccl_job: short unique id\n");
			return 2;
		}
		fclose(f);
	}
	CHECK(ncclCommInitRank(&comm, world, id, rank));
	snprintf(name, sizeof(name), "pid.%d", rank);
	snprintf(path, sizeof(path), "%d\n", (int)getpid());
	write_file(dir, name, path, strlen(path));
	for (long step = 0; !steps || step < steps; step++) {
		CHECK(cuLaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
		CHECK(cuStreamSynchronize(stream));
		if (step == stall_step)
			nap_ms(3600 * 1000);
		if (step != skip_at)
			CHECK(ncclAllReduce((void *)grad, (void *)grad, 1024, ncclFloat32, ncclSum,
					    comm, stream));
		CHECK(ncclAllReduce((void *)loss, (void *)loss, 1, ncclFloat32, ncclSum, comm,
				    stream));
		CHECK(cuStreamSynchronize(stream));
		CHECK(cuMemcpyDtoH_v2(&host, loss, sizeof(host)));
		if (interval_ms)
			nap_ms(interval_ms);
	}
	CHECK(ncclCommDestroy(comm));
	printf("rank %d done after %ld steps\n", rank, steps);
	return 0;
}
