/*
 * The tables a user's processes grow, in the kernel and in the agent: each with its size, the
 * share one user other than root may hold, and the reserve no user but root may take. One
 * table: the kernel's limits are set from it before the programs load, the agent checks its
 * own entries against it, status and docs/security.md show it. No I/O.
 */
#ifndef FTBPF_SHARES_H
#define FTBPF_SHARES_H

#include <stdint.h>
#include <sys/types.h>

#include "ftbpf/abi.h"

/* The kernel's tables first, by their enum ftbpf_table index; then the agent's own. */
enum share_table {
	SHARE_PROCS = FTBPF_TAB_PROCS,
	SHARE_THREADS = FTBPF_TAB_THREADS,
	SHARE_COMMS = FTBPF_TAB_COMMS,
	SHARE_CADENCE = FTBPF_TAB_CADENCE,
	SHARE_STASH = FTBPF_TAB_STASH,
	SHARE_ARRIVALS = FTBPF_TAB_ARRIVALS,
	SHARE_KERNEL_N,		      /* tables of the kernel above, of the agent below */
	SHARE_RANKS = SHARE_KERNEL_N, /* the agent's rank table: live and ended ranks */
	SHARE_ENDED,		      /* ... of which ended (their exit judged) */
	SHARE__N,
};

struct share_info {
	const char *name;  /* as in status, events and docs */
	uint32_t size;	   /* places in all; 0: as many as memory allows */
	uint32_t share;	   /* what one user other than root may hold */
	uint32_t reserve;  /* the last places: root's alone */
	const char *holds; /* what takes a place */
};

/* Row t; NULL past the table. */
const struct share_info *share_info(int t);
/* The row named name, -1 none. */
int share_by_name(const char *name);
/*
 * May uid take one more place of table t while it holds user_held of it and every user
 * together total_held? Root: while the table has room; others: under their share and outside
 * root's reserve. 1 or 0.
 */
int share_admit(int t, uid_t uid, int64_t user_held, int64_t total_held);

#endif
