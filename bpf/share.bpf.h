// SPDX-License-Identifier: GPL-2.0
/*
 * Part of tracker.bpf.c (one BPF object; included there, before the programs that make
 * entries): the per-user shares of the tables a user's processes grow (struct ftbpf_usage in
 * abi.h, the numbers in user/lib/shares.c). A place is taken before an entry is made and given
 * back when it goes; a user other than root holds at most its share of a table, and only root
 * takes the last reserve places, so that no user can fill a table for the others.
 */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct ftbpf_usage);
	__uint(max_entries, FTBPF_USAGE_USERS);
} usage SEC(".maps");

/* The agent's half of the counts (entries it made or removed); only it writes this map. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct ftbpf_usage);
	__uint(max_entries, FTBPF_USAGE_USERS);
} usage_agent SEC(".maps");

/* Set by the agent before load, from user/lib/shares.c: per table, its size, one user's share
 * and root's reserve. */
const volatile __u32 tab_size[FTBPF_TAB__MAX] = {FTBPF_MAX_PROCS, FTBPF_MAX_THREADS,
						 FTBPF_MAX_COMMS, FTBPF_MAX_CADENCE,
						 FTBPF_MAX_STASH, FTBPF_MAX_ARRIVALS};
const volatile __u32 tab_share[FTBPF_TAB__MAX] = {4096, 16384, 1024, 1024, 256, 256};
const volatile __u32 tab_reserve[FTBPF_TAB__MAX] = {2048, 8192, 512, 512, 128, 128};

/* A new user's count starts from this (never written: a global, not 128 bytes of stack). */
static struct ftbpf_usage usage_zero;

static __always_inline struct ftbpf_usage *usage_get(__u32 uid)
{
	struct ftbpf_usage *u = bpf_map_lookup_elem(&usage, &uid);

	if (!u) {
		bpf_map_update_elem(&usage, &uid, &usage_zero, BPF_NOEXIST);
		u = bpf_map_lookup_elem(&usage, &uid);
	}
	return u;
}

/* What uid holds of table tab, once one more place was counted in u. */
static __always_inline __s64 held_after(struct ftbpf_usage *u, __u32 uid, __u32 tab)
{
	struct ftbpf_usage *a = bpf_map_lookup_elem(&usage_agent, &uid);
	__s64 n = __sync_fetch_and_add(&u->held[tab & (FTBPF_TAB__MAX - 1)], 1);

	return n + (a ? a->held[tab & (FTBPF_TAB__MAX - 1)] : 0);
}

/* Take a place of table tab for uid's new entry (past the user's share too with any_share, never
 * into root's reserve): 1, or 0 (refused and counted). */
static __always_inline int share_take(__u32 uid, __u32 tab, int any_share)
{
	__u32 all = FTBPF_UID_ALL, t = tab & (FTBPF_TAB__MAX - 1);
	struct ftbpf_usage *tot = usage_get(all), *u;
	__s64 n, m;

	if (!tot)
		return uid == 0;
	u = usage_get(uid);
	n = held_after(tot, all, t);
	m = u ? held_after(u, uid, t) : 0;
	if (uid == 0 || (u && n < (__s64)tab_size[t] - (__s64)tab_reserve[t] &&
			 (any_share || m < (__s64)tab_share[t])))
		return 1;
	__sync_fetch_and_add(&tot->held[t], -1);
	__sync_fetch_and_add(&tot->refused[t], 1);
	if (u) {
		__sync_fetch_and_add(&u->held[t], -1);
		__sync_fetch_and_add(&u->refused[t], 1);
	}
	return 0;
}

/* The entry that held a place of table tab for uid is gone. */
static __always_inline void share_give(__u32 uid, __u32 tab)
{
	__u32 all = FTBPF_UID_ALL, t = tab & (FTBPF_TAB__MAX - 1);
	struct ftbpf_usage *u = bpf_map_lookup_elem(&usage, &all);

	if (u)
		__sync_fetch_and_add(&u->held[t], -1);
	u = bpf_map_lookup_elem(&usage, &uid);
	if (u && uid != all)
		__sync_fetch_and_add(&u->held[t], -1);
}

/* The owner whose share a process's entries hold: its procs entry's user (a child's is its
 * rank's), else whoever runs now. */
static __always_inline __u32 share_uid(__u32 tgid)
{
	struct ftbpf_proc *pp = bpf_map_lookup_elem(&procs, &tgid);

	return pp ? pp->uid : (__u32)bpf_get_current_uid_gid();
}

/* A thread's record goes (its thread ended, exec'd as another thread, or its tid is reused). */
static __always_inline void thread_drop(__u32 tid, struct ftbpf_thread *t, struct ftbpf_proc *pp)
{
	__u32 uid = t->uid;

	if (bpf_map_delete_elem(&threads, &tid))
		return;
	if (uid != FTBPF_UID_ALL)
		share_give(uid, FTBPF_TAB_THREADS);
	if (pp && pp->nthreads)
		__sync_fetch_and_add(&pp->nthreads, (__u32)-1);
}

/* ---- NCCL communicators and their creations in flight (the calls are in gpu.bpf.h) ---- */
/* Record a communicator: a new one takes a place of its process's owner. 0 or -1. */
static __always_inline int comm_put(const struct ftbpf_comm_key *k, const struct ftbpf_comm *c,
				    __u64 flags)
{
	struct ftbpf_proc *pp;
	__u32 tgid = k->tgid, uid;

	if (bpf_map_lookup_elem(&comms, k))
		return flags == BPF_NOEXIST
			   ? -1
			   : (bpf_map_update_elem(&comms, k, c, BPF_EXIST) ? -1 : 0);
	pp = bpf_map_lookup_elem(&procs, &tgid);
	uid = pp ? pp->uid : (__u32)bpf_get_current_uid_gid();
	if (!share_take(uid, FTBPF_TAB_COMMS, 0))
		return -1;
	if (bpf_map_update_elem(&comms, k, c, BPF_NOEXIST)) {
		share_give(uid, FTBPF_TAB_COMMS);
		return -1;
	}
	if (pp && !(pp->flags & FTBPF_PROC_COMMS))
		pp->flags |= FTBPF_PROC_COMMS; /* only ever set: a lost race sets it again */
	return 0;
}

/* A record and its arrivals go together, each giving back its place. */
static __always_inline void comm_drop(const struct ftbpf_comm_key *k)
{
	__u32 uid = share_uid(k->tgid);

	if (bpf_map_delete_elem(&arrivals, k) == 0)
		share_give(uid, FTBPF_TAB_ARRIVALS);
	if (bpf_map_delete_elem(&comms, k) == 0)
		share_give(uid, FTBPF_TAB_COMMS);
}

struct comm_gone {
	__u32 tgid, uid;
};

static long comm_gone_one(struct bpf_map *map, struct ftbpf_comm_key *k, struct ftbpf_comm *c,
			  struct comm_gone *g)
{
	if (k->tgid != g->tgid)
		return 0;
	if (bpf_map_delete_elem(&arrivals, k) == 0)
		share_give(g->uid, FTBPF_TAB_ARRIVALS);
	if (bpf_map_delete_elem(&comms, k) == 0)
		share_give(g->uid, FTBPF_TAB_COMMS);
	return 0;
}

/* A process that made communicators ended: they go with it. */
static __always_inline void comms_of_gone(__u32 tgid, struct ftbpf_proc *pp)
{
	struct comm_gone g = {tgid, pp->uid};

	if (pp->flags & FTBPF_PROC_COMMS)
		bpf_for_each_map_elem(&comms, comm_gone_one, &g, 0);
}

/* A thread's communicator creation in flight (comm_init, keyed by tid). */
static __always_inline void stash_put(__u32 tgid, __u32 tid, const struct comm_stash *st)
{
	__u32 uid;

	if (bpf_map_lookup_elem(&comm_init, &tid)) {
		bpf_map_update_elem(&comm_init, &tid, st, BPF_EXIST);
		return;
	}
	uid = share_uid(tgid);
	if (!share_take(uid, FTBPF_TAB_STASH, 0))
		return;
	if (bpf_map_update_elem(&comm_init, &tid, st, BPF_NOEXIST))
		share_give(uid, FTBPF_TAB_STASH);
}

static __always_inline void stash_drop(__u32 tgid, __u32 tid)
{
	if (bpf_map_delete_elem(&comm_init, &tid) == 0)
		share_give(share_uid(tgid), FTBPF_TAB_STASH);
}
