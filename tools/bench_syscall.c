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

#include "bench_util.h"

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
		double t0 = bench_now_ns();

		for (long i = 0; i < iters; i++)
			syscall(SYS_getppid);
		r[b] = (bench_now_ns() - t0) / iters;
	}
	printf("%.2f\n", bench_median(r, batches));
	return 0;
}
