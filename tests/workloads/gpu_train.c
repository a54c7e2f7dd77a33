/*
 * A data-parallel training job on the mock libcuda.so.1 / libnccl.so.2 (tests/mock), shaped as a
 * torch DDP job on a GPU was measured (../shared/design/GPU-FACTS.md, H200 under torchrun): each
 * step launches the forward kernels, the backward kernels with an all-reduce of each gradient
 * bucket as it is ready (4 buckets of 4,196,352 float32 by default), the optimizer, then reads
 * the loss (a synchronous copy: the host spins in the driver until its device is done, ~98% of
 * the step), and does ~1 ms of its own CPU work. It never sleeps between steps: the device's
 * time sets the pace. Options (times of the device in microseconds):
 *   --rank R --world N --dir D [--seconds S | --steps K] [--init-delay-ms M]
 *   --fwd-us 25000 --bwd-us 50000 --layers 6 --buckets 4 --bucket-count 4196352 --host-us 1000
 *   --eval-every N --eval-seconds S   every N steps every rank evaluates for S seconds (kernels
 *                                     and a synchronisation each, no collective)
 *   --save-every N --save-seconds S   every N steps rank 0 writes a checkpoint for S seconds (1 MiB
 *                                     writes, fdatasync) while the others wait at a barrier (an
 *                                     all-reduce of one element, then a synchronisation)
 *   --slow-rank R --slow-pct P --slow-after A --slow-kind gpu|cpu|data   from A seconds on, rank
 *                                     R does P% more work a step: on its GPU (an extra kernel and
 *                                     a cuCtxSynchronize before the step, as measured), on its
 *                                     CPU, or waiting for its input (a loader process that makes
 *                                     a batch in P% more than a step's device time)
 *   --fault KIND --fault-rank R --fault-after A   at A seconds rank R: gpu-hang (a kernel that
 *                                     never ends, then cuCtxSynchronize, after the step's
 *                                     all-reduces), gpu-hang-before (that kernel before the step:
 *                                     it issues the step's all-reduces anyway, as every rank),
 *                                     sleep, spin (a CPU loop) or stop (SIGSTOP itself)
 *   --graph                          capture one step (kernels and all-reduces) into a CUDA
 *                                     graph and replay it each step with cuGraphLaunch
 * Writes to D: ncclid (rank 0), stop_at (the step every rank stops before, set by rank 0 when
 * --seconds are up), pid.R, steps.R (steps done, at exit), slow.ts (when rank R
 * slowed down), fault.ts (when a host-side fault began; the mock writes hang.ts when a device
 * reaches a kernel that never ends).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../mock/mock_gpu.h"

#define HANG_GRID 0x7fffffffu /* the mock's kernel that never ends */

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		int r_ = (int)(x);                                                                 \
		if (r_) {                                                                          \
			fprintf(stderr, "gpu_train: %s failed: %d\n", #x, r_);                     \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

struct opts {
	int rank, world, layers, buckets, graph;
	long steps, eval_every, save_every;
	double seconds, eval_s, save_s, slow_after, fault_after;
	long fwd_us, bwd_us, host_us, bucket_count, init_delay_ms;
	int slow_rank, fault_rank;
	double slow_pct;
	const char *slow_kind, *fault, *dir;
};

static CUstream stream;
static ncclComm_t comm;
static CUdeviceptr grad, loss;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* CPU work without a syscall (the vDSO clock). */
static void spin_us(long us)
{
	double end = now_s() + us / 1e6;
	volatile unsigned long x = 0;

	while (now_s() < end)
		x++;
}

/* The step every rank stops before (0: not decided), shared through a file the ranks map: rank
 * 0 decides when its --seconds are up, two steps ahead, so that every rank runs the same
 * steps (each deciding by its own clock, one rank could start a step the others never do, and
 * wait for its collectives forever). Read from memory: no syscall in the loop. */
static volatile long *stop_at_map(const char *dir)
{
	char path[512];
	void *m;
	int fd;

	snprintf(path, sizeof(path), "%s/stop_at", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(long)) < 0) {
		perror(path);
		exit(2);
	}
	m = mmap(NULL, sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		perror(path);
		exit(2);
	}
	return m;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path)) {
		perror(path);
		exit(2);
	}
}

static void stamp(const char *dir, const char *name)
{
	struct timespec ts;
	char line[64];

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(line, sizeof(line), "%ld.%03ld\n", (long)ts.tv_sec, ts.tv_nsec / 1000000);
	write_file(dir, name, line);
}

static void kernel_us(long us)
{
	CHECK(cuLaunchKernel(NULL, (unsigned)(us > 0 ? us : 1), 1, 1, 128, 1, 1, 0, stream, NULL,
			     NULL));
}

/* One step's device work: forward, backward with its buckets' all-reduces, the optimizer. */
static void step_work(const struct opts *o)
{
	int per = o->layers / o->buckets > 0 ? o->layers / o->buckets : 1;

	for (int l = 0; l < o->layers; l++)
		kernel_us(o->fwd_us / o->layers);
	for (int l = 0, b = 0; l < o->layers; l++) {
		kernel_us(o->bwd_us / o->layers);
		if ((l + 1) % per == 0 && b < o->buckets) {
			CHECK(ncclAllReduce((void *)grad, (void *)grad, (size_t)o->bucket_count,
					    ncclFloat32, ncclSum, comm, stream));
			b++;
		}
	}
	kernel_us(500);
}

/* The data loader: a child writing one batch a step into a pipe, `delay_us` late each. */
static int loader(long delay_us, pid_t *ret_pid)
{
	int p[2];
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char batch[64] = {0};

		close(p[0]);
		for (;;) {
			if (delay_us)
				nap_ms(delay_us / 1000);
			if (write(p[1], batch, sizeof(batch)) != (ssize_t)sizeof(batch))
				_exit(0);
		}
	}
	close(p[1]);
	*ret_pid = pid;
	return p[0];
}

static void evaluate(const struct opts *o)
{
	double end = now_s() + o->eval_s;

	while (now_s() < end) {
		kernel_us(10000);
		CHECK(cuStreamSynchronize(stream));
	}
}

/* Rank 0 writes a checkpoint while the others wait at the barrier that follows it. */
static void save(const struct opts *o)
{
	static char chunk[1 << 20];
	char path[512];
	double end = now_s() + o->save_s;
	long written = 0;
	int fd;

	if (o->rank == 0) {
		snprintf(path, sizeof(path), "%s/ckpt.0", o->dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			perror(path);
			exit(2);
		}
		while (now_s() < end) {
			if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk)) {
				perror("checkpoint write");
				exit(2);
			}
			if (++written % 16 == 0 &&
			    (fdatasync(fd) < 0 || lseek(fd, 0, SEEK_SET) < 0)) {
				perror("checkpoint sync");
				exit(2);
			}
		}
		close(fd);
	}
	CHECK(ncclAllReduce((void *)loss, (void *)loss, 1, ncclFloat32, ncclSum, comm, stream));
	CHECK(cuStreamSynchronize(stream));
}

static void fault(const struct opts *o, int before)
{
	const char *f = o->fault;

	if (!strcmp(f, "gpu-hang") && !before) {
		CHECK(cuLaunchKernel(NULL, HANG_GRID, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
		CHECK(cuCtxSynchronize_v2());
	} else if (!strcmp(f, "gpu-hang-before") && before) {
		CHECK(cuLaunchKernel(NULL, HANG_GRID, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
	} else if (before && !strcmp(f, "sleep")) {
		stamp(o->dir, "fault.ts");
		for (;;)
			nap_ms(3600 * 1000);
	} else if (before && !strcmp(f, "spin")) {
		stamp(o->dir, "fault.ts");
		for (;;)
			spin_us(1000000);
	} else if (before && !strcmp(f, "stop")) {
		stamp(o->dir, "fault.ts");
		raise(SIGSTOP);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: gpu_train --rank R --world N --dir D [--seconds S] [--steps K] "
			"[--fwd-us U] [--bwd-us U] [--layers L] [--buckets B] [--bucket-count C] "
			"[--host-us U] [--eval-every N --eval-seconds S] [--save-every N "
			"--save-seconds S] [--slow-rank R --slow-pct P --slow-after A --slow-kind "
			"gpu|cpu|data] [--fault gpu-hang|gpu-hang-before|sleep|spin|stop "
			"--fault-rank R --fault-after A] [--graph 1] [--init-delay-ms M]\n");
	exit(2);
}

static void parse(struct opts *o, int argc, char **argv)
{
	*o = (struct opts){.world = 1,
			   .layers = 6,
			   .buckets = 4,
			   .fwd_us = 25000,
			   .bwd_us = 50000,
			   .host_us = 1000,
			   .bucket_count = 4196352,
			   .slow_rank = -1,
			   .fault_rank = -1,
			   .slow_kind = "gpu",
			   .fault = "",
			   .dir = "."};
	for (int i = 1; i < argc; i += 2) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(k, "--rank"))
			o->rank = atoi(v);
		else if (!strcmp(k, "--world"))
			o->world = atoi(v);
		else if (!strcmp(k, "--dir"))
			o->dir = v;
		else if (!strcmp(k, "--seconds"))
			o->seconds = atof(v);
		else if (!strcmp(k, "--steps"))
			o->steps = atol(v);
		else if (!strcmp(k, "--fwd-us"))
			o->fwd_us = atol(v);
		else if (!strcmp(k, "--bwd-us"))
			o->bwd_us = atol(v);
		else if (!strcmp(k, "--layers"))
			o->layers = atoi(v);
		else if (!strcmp(k, "--buckets"))
			o->buckets = atoi(v);
		else if (!strcmp(k, "--bucket-count"))
			o->bucket_count = atol(v);
		else if (!strcmp(k, "--host-us"))
			o->host_us = atol(v);
		else if (!strcmp(k, "--eval-every"))
			o->eval_every = atol(v);
		else if (!strcmp(k, "--eval-seconds"))
			o->eval_s = atof(v);
		else if (!strcmp(k, "--save-every"))
			o->save_every = atol(v);
		else if (!strcmp(k, "--save-seconds"))
			o->save_s = atof(v);
		else if (!strcmp(k, "--slow-rank"))
			o->slow_rank = atoi(v);
		else if (!strcmp(k, "--slow-pct"))
			o->slow_pct = atof(v);
		else if (!strcmp(k, "--slow-after"))
			o->slow_after = atof(v);
		else if (!strcmp(k, "--slow-kind"))
			o->slow_kind = v;
		else if (!strcmp(k, "--fault"))
			o->fault = v;
		else if (!strcmp(k, "--fault-rank"))
			o->fault_rank = atoi(v);
		else if (!strcmp(k, "--fault-after"))
			o->fault_after = atof(v);
		else if (!strcmp(k, "--graph"))
			o->graph = atoi(v);
		else if (!strcmp(k, "--init-delay-ms"))
			o->init_delay_ms = atol(v);
		else
			usage();
	}
	if (o->world < 1 || o->rank < 0 || o->rank >= o->world || o->layers < 1 || o->buckets < 1 ||
	    o->buckets > o->layers ||
	    (strcmp(o->slow_kind, "gpu") && strcmp(o->slow_kind, "cpu") &&
	     strcmp(o->slow_kind, "data")))
		usage();
}

static void nccl_init(const struct opts *o)
{
	char path[512];
	ncclUniqueId id;

	snprintf(path, sizeof(path), "%s/ncclid", o->dir);
	if (o->rank == 0) {
		FILE *f;
		char tmp[520];

		CHECK(ncclGetUniqueId(&id));
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		f = fopen(tmp, "w");
		if (!f || fwrite(&id, 1, sizeof(id), f) != sizeof(id) || fclose(f) ||
		    rename(tmp, path)) {
			perror(path);
			exit(2);
		}
	} else {
		FILE *f;

		while (!(f = fopen(path, "r")))
			nap_ms(10);
		if (fread(&id, 1, sizeof(id), f) != sizeof(id)) {
			fprintf(stderr, "gpu_train: short unique id\n");
			exit(2);
		}
		fclose(f);
	}
	CHECK(ncclCommInitRank(&comm, o->world, id, o->rank));
}

int main(int argc, char **argv)
{
	struct opts o;
	CUcontext ctx;
	CUdevice dev;
	CUgraphExec exec = NULL;
	double start, slow_noted = 0;
	long step;
	volatile long *stop_at;
	float host = 0;
	char line[64];
	int batches = -1;
	pid_t loader_pid = 0;

	parse(&o, argc, argv);
	nap_ms(o.init_delay_ms); /* importing a framework, loading data */
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate_v2(&ctx, 0, dev));
	CHECK(cuStreamCreate(&stream, 0));
	CHECK(cuMemAlloc_v2(&grad, 1024 * sizeof(float)));
	CHECK(cuMemAlloc_v2(&loss, sizeof(float)));
	stop_at = stop_at_map(o.dir);
	if (o.rank == 0) /* a run before in this directory: before any rank can read it */
		__atomic_store_n(stop_at, 0, __ATOMIC_RELEASE);
	nccl_init(&o); /* every rank joined: rank 0's reset is done */
	if (!strcmp(o.slow_kind, "data") && o.slow_rank >= 0) /* every rank reads its input */
		batches = loader(0, &loader_pid);
	snprintf(line, sizeof(line), "%d\n", (int)getpid());
	{
		char name[32];

		snprintf(name, sizeof(name), "pid.%d", o.rank);
		write_file(o.dir, name, line);
	}
	start = now_s();
	for (step = 0;; step++) {
		long stop = __atomic_load_n(stop_at, __ATOMIC_ACQUIRE);

		if ((o.steps && step >= o.steps) || (stop && step >= stop))
			break;
		if (o.seconds && !stop && now_s() - start >= o.seconds) {
			long want = step + 2, none = 0;

			if (o.rank == 0)
				__atomic_compare_exchange_n(stop_at, &none, want, 0,
							    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
			else if (now_s() - start >= o.seconds + 60)
				break; /* rank 0 is gone: do not spin forever */
		}
		double t = now_s() - start;
		int slow = o.rank == o.slow_rank && o.slow_pct > 0 && t >= o.slow_after;
		int faulty = o.rank == o.fault_rank && *o.fault && t >= o.fault_after;
		long extra = (long)((double)(o.fwd_us + o.bwd_us) * o.slow_pct / 100);
		char b[64];

		if (slow && !slow_noted) {
			slow_noted = t;
			stamp(o.dir, "slow.ts");
			if (!strcmp(o.slow_kind, "data")) {
				/* from now its loader makes a batch in P% more than a step's device
				 * time: the rank waits for its input every step */
				kill(loader_pid, SIGKILL);
				waitpid(loader_pid, NULL, 0);
				close(batches);
				batches = loader(o.fwd_us + o.bwd_us + extra, &loader_pid);
			}
		}
		if (faulty)
			fault(&o, 1);
		if (batches >= 0 && read(batches, b, sizeof(b)) != (ssize_t)sizeof(b)) {
			fprintf(stderr, "gpu_train: the loader ended\n");
			return 2;
		}
		if (slow && !strcmp(o.slow_kind, "gpu")) { /* more work on its device, waited for */
			kernel_us(extra);
			CHECK(cuCtxSynchronize_v2());
		} else if (slow && !strcmp(o.slow_kind, "cpu")) {
			spin_us(extra);
		}
		if (o.graph && step == 1) { /* step 0 ran eagerly; the rest replay its capture */
			CUgraph g;

			CHECK(cuStreamBeginCapture_v2(stream, 0));
			step_work(&o);
			CHECK(cuStreamEndCapture(stream, &g));
			CHECK(cuGraphInstantiateWithFlags(&exec, g, 0));
		}
		if (exec)
			CHECK(cuGraphLaunch(exec, stream));
		else
			step_work(&o);
		if (faulty)
			fault(&o, 0);
		CHECK(cuMemcpyDtoH_v2(&host, loss, sizeof(host))); /* loss.item() */
		spin_us(o.host_us);
		if (o.eval_every && step > 0 && step % o.eval_every == 0)
			evaluate(&o);
		if (o.save_every && step > 0 && step % o.save_every == 0)
			save(&o);
	}
	snprintf(line, sizeof(line), "%ld\n", step);
	{
		char name[32];

		snprintf(name, sizeof(name), "steps.%d", o.rank);
		write_file(o.dir, name, line);
	}
	if (loader_pid)
		kill(loader_pid, SIGKILL);
	CHECK(ncclCommDestroy(comm));
	printf("rank %d done after %ld steps\n", o.rank, step);
	return 0;
}
