/*
 * Syscall-cost microbenchmark: times a loop of getppid() (never cached by libc) and prints the
 * median ns per syscall over several batches. Run as a rank (FTBPF_RANK set) or not.
 *   bench_syscall [ITERATIONS] [BATCHES] [WARMUP_MS] [getppid|yield|step]
 * yield: sched_yield() instead (a wait on the peers for the step cadence); step: a yield, then
 * a 1.1 ms sleep (each iteration closes one wait span: a step's cadence bookkeeping).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 1000000;
	int batches = argc > 2 ? atoi(argv[2]) : 7;
	int warmup_ms = argc > 3 ? atoi(argv[3]) : 0;
	const char *mode = argc > 4 ? argv[4] : "getppid";
	int yield = !strcmp(mode, "yield"), step = !strcmp(mode, "step");
	struct timespec pause = {0, 1100000};
	double r[64];

	if (batches < 1 || batches > 64 || iters < 1) {
		fprintf(stderr, "usage: bench_syscall [ITERATIONS] [BATCHES<=64] [WARMUP_MS]\n");
		return 2;
	}
	if (warmup_ms)
		usleep(warmup_ms * 1000); /* lets an agent adopt us first */
	for (int b = 0; b < batches; b++) {
		double t0 = bench_now_ns();

		for (long i = 0; i < iters; i++) {
			if (yield || step)
				syscall(SYS_sched_yield);
			else
				syscall(SYS_getppid);
			if (step)
				nanosleep(&pause, NULL);
		}
		r[b] = (bench_now_ns() - t0) / iters;
	}
	printf("%.2f\n", bench_median(r, batches));
	return 0;
}
