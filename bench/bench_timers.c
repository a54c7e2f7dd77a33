/*
 * Cost of a countdown-timer acquire + release through libftbpf's slot fast path:
 *   bench_timers [ITERATIONS]   prints the median ns per acquire+release pair over 7 batches.
 *   bench_timers ITERATIONS should_save
 *                               prints the median ns of ftbpf_should_save() at a step boundary
 *                               and of the floor (a relaxed atomic store of the step, what the
 *                               loop must do anyway), over 7 batches: "NS FLOOR_NS".
 * Needs a running ftbpfd ($FTBPF_SOCKET).
 */
#include <stdint.h>
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
	if (argc > 2 && !strcmp(argv[2], "should_save")) {
		static volatile int64_t sink;
		double f[7];
		long saves = 0;

		for (int b = 0; b < 7; b++) {
			double t0 = bench_now_ns();

			for (long i = 0; i < n; i++)
				saves += ftbpf_should_save(h, i) == 1;
			r[b] = (bench_now_ns() - t0) / n;
			t0 = bench_now_ns();
			for (long i = 0; i < n; i++)
				__atomic_store_n(&sink, i, __ATOMIC_RELAXED);
			f[b] = (bench_now_ns() - t0) / n;
		}
		printf("%.2f %.2f\n", bench_median(r, 7), bench_median(f, 7));
		ftbpf_close(h);
		return saves > 0; /* nothing was requested: never 1 */
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
