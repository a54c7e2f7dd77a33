/* The clocks every module reads: monotonic (deadlines, ages), real (wire, logs), boot (process
 * start times). */
#ifndef FTBPF_CLOCK_H
#define FTBPF_CLOCK_H

#include <stdint.h>
#include <time.h>

#define CLOCK_NS_PER_S 1000000000ull

/* CLOCK_MONOTONIC in ns (the clock of bpf_ktime_get_ns and of every deadline). */
static inline uint64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * CLOCK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME in ns. */
static inline uint64_t clock_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * CLOCK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* CLOCK_BOOTTIME in ns (the clock of a process's start time in /proc/PID/stat). */
static inline uint64_t clock_boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * CLOCK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

#endif
