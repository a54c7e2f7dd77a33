/*
 * LD_PRELOAD shim for the fault-injection tests (tests/integration/decide_faults.sh): steps a
 * process's wall clock (CLOCK_REALTIME, time, gettimeofday) by the number of milliseconds in
 * the file FTBPF_CLOCK_SHIFT_FILE names, read again every 50 ms; CLOCK_MONOTONIC and the
 * others are left alone, as an NTP step leaves them. The host's clock is shared with other
 * tests, so the step is made in the agents' view of it only.
 *
 *   cc -shared -fPIC -o clockshift.so clockshift.c -ldl
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

typedef int (*cgt_fn)(clockid_t, struct timespec *);

static cgt_fn real_cgt;
static long long shift_ms, read_at_ns;

static long long shift(void)
{
	struct timespec m;
	long long now;

	if (!real_cgt)
		real_cgt = (cgt_fn)dlsym(RTLD_NEXT, "clock_gettime");
	real_cgt(CLOCK_MONOTONIC, &m);
	now = m.tv_sec * 1000000000ll + m.tv_nsec;
	if (now - read_at_ns > 50000000ll) {
		const char *p = getenv("FTBPF_CLOCK_SHIFT_FILE");
		FILE *f = p ? fopen(p, "re") : NULL;
		long long v = 0;

		if (f) {
			if (fscanf(f, "%lld", &v) != 1)
				v = 0;
			fclose(f);
		}
		__atomic_store_n(&shift_ms, v, __ATOMIC_RELAXED);
		read_at_ns = now;
	}
	return __atomic_load_n(&shift_ms, __ATOMIC_RELAXED);
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	int r;

	if (!real_cgt)
		real_cgt = (cgt_fn)dlsym(RTLD_NEXT, "clock_gettime");
	r = real_cgt(clk, ts);
	if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
		long long ns = ts->tv_sec * 1000000000ll + ts->tv_nsec + shift() * 1000000ll;

		ts->tv_sec = ns / 1000000000ll;
		ts->tv_nsec = ns % 1000000000ll;
	}
	return r;
}

int gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec ts;

	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
