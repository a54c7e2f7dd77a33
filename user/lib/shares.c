/* The table of per-user shares: see shares.h. */
#include "lib/shares.h"

#include <string.h>

static const struct share_info shares[SHARE__N] = {
    [SHARE_PROCS] = {"procs", FTBPF_MAX_PROCS, 4096, 2048,
		     "a rank, live or exited until its exit is judged, or a rank's child"},
    [SHARE_THREADS] = {"threads", FTBPF_MAX_THREADS, 16384, 8192,
		       "a thread of a tracked process (a main thread is never over the share)"},
    [SHARE_COMMS] = {"comms", FTBPF_MAX_COMMS, 1024, 512, "an NCCL communicator"},
    [SHARE_CADENCE] = {"cadence", FTBPF_MAX_CADENCE, 1024, 512, "a live rank's step cadence"},
    [SHARE_STASH] = {"comm_init", FTBPF_MAX_STASH, 256, 128,
		     "a thread inside ncclCommInitRank or ncclCommSplit"},
    [SHARE_ARRIVALS] = {"arrivals", FTBPF_MAX_ARRIVALS, 256, 128,
			"a communicator record's collective issue times (with its comms entry)"},
    [SHARE_RANKS] = {"ranks", 0, 1024, 0,
		     "a rank the agent knows, live or ended (the oldest ended is forgotten)"},
    [SHARE_ENDED] = {"ended_ranks", 0, 256, 0,
		     "an ended rank the agent keeps to show (the oldest is forgotten)"},
};

const struct share_info *share_info(int t)
{
	return t >= 0 && t < SHARE__N ? &shares[t] : NULL;
}

int share_by_name(const char *name)
{
	for (int t = 0; name && t < SHARE__N; t++)
		if (!strcmp(shares[t].name, name))
			return t;
	return -1;
}

int share_admit(int t, uid_t uid, int64_t user_held, int64_t total_held)
{
	const struct share_info *s = share_info(t);

	if (!s)
		return 0;
	if (s->size && total_held >= (int64_t)s->size)
		return 0;
	if (uid == 0)
		return 1;
	if (s->size && total_held >= (int64_t)s->size - (int64_t)s->reserve)
		return 0;
	return user_held < (int64_t)s->share;
}
