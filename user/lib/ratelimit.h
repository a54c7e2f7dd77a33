/*
 * A warning said at most once per interval, with how many of its kind were held back since it
 * was last said: a full table or a flood of malformed launchers must not flood the log. Pure:
 * the caller passes the clock (tests/unit/test_ratelimit.c).
 */
#ifndef FTBPF_RATELIMIT_H
#define FTBPF_RATELIMIT_H

#include <stdint.h>

struct ratelimit {
	uint64_t interval_ns;
	uint64_t last_ns; /* when it was last said; 0 never */
	uint64_t held;	  /* occurrences not said since */
};

/*
 * An occurrence at now: 1 when it is to be said (*ret_held: how many were held back before it,
 * since the last one said), 0 when it is held back (counted).
 */
int ratelimit_pass(struct ratelimit *rl, uint64_t now, uint64_t *ret_held);

#endif
