/* Process start times: one rule for "the same process start" wherever a pid is checked against
 * the start time it was recorded with (a pid reused by another process fails it). Pure. */
#ifndef FTBPF_STARTTIME_H
#define FTBPF_STARTTIME_H

#include <stdint.h>

/* Are two start times (since boot, ns) of one process? /proc has clock ticks (10 ms, rounded),
 * the kernel nanoseconds: one tick apart is equal. */
static inline int starttime_same(uint64_t x, uint64_t y)
{
	return (x > y ? x - y : y - x) < 20000000ull;
}

#endif
