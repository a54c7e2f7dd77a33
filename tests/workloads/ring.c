/*
 * A real multi-process "training job" for the integration tests: each rank computes a little,
 * then all-reduces one number through rank 0 over Unix stream sockets (blocking read/write,
 * like a collective). One rank can be told to misbehave after some seconds.
 *
 *   ring --rank R --world N --dir DIR [--fault sleep|spin|stop|exit|abort --fault-rank K
 *        --fault-after SEC] [--seconds S] [--hang-on-peer-loss 1] [--work N] [--interval-ms MS]
 *        [--gpu-kernel-us US] [--exit-code C]
 *
 * --exit-code: the code every rank exits with at the job's normal end (42: saved and exited
 * as a preemption asks; 93: stopped), instead of 0.
 *
 * With --gpu-kernel-us, every step also runs a GPU kernel of that length and waits for it the
 * way torch.cuda.synchronize() does: libcuda.so.1 is loaded at run time and its entry points
 * taken from cuGetProcAddress_v2 for CUDA 13 (so the wait is cuCtxSynchronize_v2), as the CUDA
 * runtime does. The tests point it at the mock driver (LD_LIBRARY_PATH), which measures like a
 * real one (tests/mock/libcuda.c).
 *
 * Writes DIR/pid.R, and DIR/fault.ts (wall-clock seconds) when the fault begins.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int rd(int fd, void *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)b + got, n - got);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		got += r;
	}
	return 0;
}

static void put_file(const char *dir, const char *name, const char *fmt, double v)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (f) {
		fprintf(f, fmt, v);
		fclose(f);
	}
}

/* The CUDA driver as the runtime reaches it (the mock's or a real one). */
typedef int (*cu_get_proc_fn)(const char *, void **, int, unsigned long long, int *);
static int (*cu_init)(unsigned);
static int (*cu_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			unsigned, void *, void **, void **);
static int (*cu_sync)(void);

static int gpu_open(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	cu_get_proc_fn gp = lib ? (cu_get_proc_fn)dlsym(lib, "cuGetProcAddress_v2") : NULL;

	if (!gp || gp("cuInit", (void **)&cu_init, 13000, 0, NULL) ||
	    gp("cuLaunchKernel", (void **)&cu_launch, 13000, 0, NULL) ||
	    gp("cuCtxSynchronize", (void **)&cu_sync, 13000, 0, NULL) || cu_init(0)) {
		fprintf(stderr, "ring: no CUDA driver: %s\n", dlerror() ? dlerror() : "");
		return -1;
	}
	return 0;
}

#define STOP (-1e300)

static volatile unsigned long sink;
static int hang_on_peer_loss;

/* A collective whose peer is gone: NCCL-like ranks hang, plain sockets would error out. */
static int lost(void)
{
	if (hang_on_peer_loss)
		for (;;)
			pause();
	return 1;
}

static void fault(const char *mode, const char *dir)
{
	put_file(dir, "fault.ts", "%.3f\n", now(CLOCK_REALTIME));
	if (!strcmp(mode, "sleep")) {
		sleep(3600);
	} else if (!strcmp(mode, "spin")) {
		for (;;)
			sink++;
	} else if (!strcmp(mode, "stop")) {
		raise(SIGSTOP);
	} else if (!strcmp(mode, "exit")) {
		exit(3);
	} else if (!strcmp(mode, "abort")) {
		abort();
	} else if (!strcmp(mode, "sleep-ignore-term")) {
		signal(SIGTERM, SIG_IGN);
		sleep(3600);
	}
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	int rank = -1, world = 0, fault_rank = -1;
	double fault_after = 0, seconds = 1e9, start;
	const char *dir = ".", *mode = NULL;
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int *peers = NULL, fd = -1, faulted = 0, interval_ms = 10, exit_code = 0;
	long work = 200000, gpu_us = -1;
	char name[32];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rank"))
			rank = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--world"))
			world = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--dir"))
			dir = argv[i + 1];
		else if (!strcmp(argv[i], "--fault"))
			mode = argv[i + 1];
		else if (!strcmp(argv[i], "--fault-rank"))
			fault_rank = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--fault-after"))
			fault_after = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--work"))
			work = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--interval-ms"))
			interval_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--hang-on-peer-loss"))
			hang_on_peer_loss = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--gpu-kernel-us"))
			gpu_us = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--exit-code"))
			exit_code = atoi(argv[i + 1]);
	}
	if (gpu_us >= 0) {
		char v[32];

		snprintf(v, sizeof(v), "%ld", gpu_us);
		setenv("FTBPF_MOCK_KERNEL_US", v, 0); /* the mock's kernel length */
		if (gpu_open() < 0)
			return 2;
	}
	if (rank < 0 && getenv("OMPI_COMM_WORLD_RANK")) { /* launched by mpirun */
		rank = atoi(getenv("OMPI_COMM_WORLD_RANK"));
		world = atoi(getenv("OMPI_COMM_WORLD_SIZE"));
	}
	if (rank < 0 || world < 1) {
		fprintf(stderr, "usage: ring --rank R --world N --dir DIR [...]\n");
		return 2;
	}
	snprintf(name, sizeof(name), "pid.%d", rank);
	put_file(dir, name, "%.0f\n", getpid());
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/ring.sock", dir);
	if (rank == 0) {
		int lfd = socket(AF_UNIX, SOCK_STREAM, 0);

		unlink(addr.sun_path);
		if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) || listen(lfd, 64)) {
			perror("bind");
			return 1;
		}
		peers = calloc(world, sizeof(int));
		for (int i = 1; i < world; i++) {
			int c = accept(lfd, NULL, NULL), r;

			if (c < 0 || rd(c, &r, sizeof(r)) || r <= 0 || r >= world)
				return 1;
			peers[r] = c;
		}
		close(lfd);
	} else {
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		for (int tries = 0; connect(fd, (struct sockaddr *)&addr, sizeof(addr)); tries++) {
			if (tries > 500)
				return 1;
			usleep(20000);
		}
		if (write(fd, &rank, sizeof(rank)) != sizeof(rank))
			return 1;
	}
	start = now(CLOCK_MONOTONIC);
	/* Rank 0 decides when the job ends and tells the others with a STOP value, so that no
	 * rank sees a peer vanish at a normal end. */
	for (unsigned long it = 0;; it++) {
		double v = rank + it, sum = v, x;

		for (long k = 0; k < work; k++) /* "compute" */
			sink += k;
		if (gpu_us >= 0 && (cu_launch(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) ||
				    cu_sync())) /* forward/backward on the GPU, then wait for it */
			return 3;
		if (interval_ms)
			usleep(interval_ms * 1000);
		if (mode && rank == fault_rank && !faulted &&
		    now(CLOCK_MONOTONIC) - start >= fault_after) {
			faulted = 1;
			fault(mode, dir);
		}
		if (rank == 0) {
			for (int i = 1; i < world; i++) {
				if (rd(peers[i], &x, sizeof(x)))
					return lost();
				sum += x;
			}
			if (now(CLOCK_MONOTONIC) - start >= seconds)
				sum = STOP;
			for (int i = 1; i < world; i++)
				if (write(peers[i], &sum, sizeof(sum)) != sizeof(sum))
					return lost();
			if (sum == STOP)
				return exit_code;
		} else {
			if (write(fd, &v, sizeof(v)) != sizeof(v) || rd(fd, &sum, sizeof(sum)))
				return lost();
			if (sum == STOP)
				return exit_code;
		}
	}
	return 0;
}
