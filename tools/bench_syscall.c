/*
 * Syscall-cost microbenchmark: times a loop of getppid() (never cached by libc) and prints the
 * median ns per syscall over several batches. Run as a rank (FTBPF_RANK set) or not.
 *   bench_syscall [ITERATIONS] [BATCHES] [WARMUP_MS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 1000000;
	int batches = argc > 2 ? atoi(argv[2]) : 7;
	int warmup_ms = argc > 3 ? atoi(argv[3]) : 0;
	double r[64];

	if (batches < 1 || batches > 64 || iters < 1) {
		fprintf(stderr, "usage: bench_syscall [ITERATIONS] [BATCHES<=64] [WARMUP_MS]\n");
		return 2;
	}
	if (warmup_ms)
		usleep(warmup_ms * 1000); /* lets an agent adopt us first */
	for (int b = 0; b < batches; b++) {
		double t0 = now();

		for (long i = 0; i < iters; i++)
			syscall(SYS_getppid);
		r[b] = (now() - t0) / iters;
	}
	qsort(r, batches, sizeof(r[0]), cmp);
	printf("%.2f\n", r[batches / 2]);
	return 0;
}
