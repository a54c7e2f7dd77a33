/* Warnings at most once per interval: see ratelimit.h. */
#include "lib/ratelimit.h"

int ratelimit_pass(struct ratelimit *rl, uint64_t now, uint64_t *ret_held)
{
	if (rl->last_ns && now - rl->last_ns < rl->interval_ns) {
		rl->held++;
		return 0;
	}
	*ret_held = rl->held;
	rl->held = 0;
	rl->last_ns = now ? now : 1;
	return 1;
}
