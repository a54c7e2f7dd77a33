/*
 * Cost of a countdown-timer acquire + release through libftbpf's slot fast path:
 *   bench_timers [ITERATIONS]   prints the median ns per acquire+release pair over 7 batches.
 * Needs a running ftbpfd ($FTBPF_SOCKET).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "ftbpf/ftbpf.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct ftbpf *h;
	double r[7];
	int rc = ftbpf_open(NULL, "bench-timers", 0, &h);

	if (rc < 0) {
		fprintf(stderr, "bench_timers: ftbpf_open: %s\n", strerror(-rc));
		return 1;
	}
	for (int b = 0; b < 7; b++) {
		double t0 = bench_now_ns();

		for (long i = 0; i < n; i++)
			ftbpf_timer_release(h, ftbpf_timer_acquire(h, "bench", 60, 0));
		r[b] = (bench_now_ns() - t0) / n;
	}
	printf("%.2f\n", bench_median(r, 7));
	ftbpf_close(h);
	return 0;
}
