/*
 * The agent's half of the per-user shares of the kernel's tables (abi.h's struct ftbpf_usage,
 * the numbers in lib/shares.c): every entry the agent makes or removes in a table the kernel
 * counts (procs, threads, cadence, comms) is counted here, in `usage_agent`, which only the
 * agent writes; a user holds the kernel's count plus ours. Part of the tracker (tracker_int.h).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>

#include "lib/shares.h"
#include "tracker.skel.h"
#include "watch/tracker_int.h"

void tracker_share_limits(struct tracker *t, const struct tracker_opts *o)
{
	for (int i = 0; i < SHARE_KERNEL_N && i < FTBPF_TAB__MAX; i++) {
		const struct share_info *s = share_info(i);

		t->skel->rodata->tab_size[i] = s->size;
		t->skel->rodata->tab_share[i] = o->share[i] ? o->share[i] : s->share;
		t->skel->rodata->tab_reserve[i] = s->reserve;
	}
}

static void usage_read(int fd, uint32_t uid, struct ftbpf_usage *u)
{
	if (bpf_map_lookup_elem(fd, &uid, u))
		memset(u, 0, sizeof(*u));
}

/* Our count of uid's (and everyone's) entries in table tab moves by d; a refusal is counted. */
static void agent_count(struct tracker *t, uint32_t uid, int tab, int64_t d, int refused)
{
	int fd = bpf_map__fd(t->skel->maps.usage_agent);
	uint32_t keys[2] = {uid, FTBPF_UID_ALL};

	for (int i = 0; i < 2 && (i == 0 || uid != FTBPF_UID_ALL); i++) {
		struct ftbpf_usage u;

		usage_read(fd, keys[i], &u);
		u.held[tab] += d;
		u.refused[tab] += !!refused;
		(void)bpf_map_update_elem(fd, &keys[i], &u, BPF_ANY); /* full: the count is lost */
	}
}

int tracker_share_held(const struct tracker *t, uint32_t uid, int tab, int64_t *ret_user,
		       int64_t *ret_all)
{
	int kfd = bpf_map__fd(t->skel->maps.usage), afd = bpf_map__fd(t->skel->maps.usage_agent);
	struct ftbpf_usage k, a;

	if (tab < 0 || tab >= FTBPF_TAB__MAX)
		return -EINVAL;
	usage_read(kfd, uid, &k);
	usage_read(afd, uid, &a);
	*ret_user = k.held[tab] + a.held[tab];
	usage_read(kfd, FTBPF_UID_ALL, &k);
	usage_read(afd, FTBPF_UID_ALL, &a);
	*ret_all = k.held[tab] + a.held[tab];
	return 0;
}

int tracker_share_take(struct tracker *t, uint32_t uid, int tab, int any_share)
{
	int64_t mine, all;

	if (tracker_share_held(t, uid, tab, &mine, &all) < 0)
		return -EINVAL;
	if (!share_admit(tab, uid, any_share ? 0 : mine, all)) {
		agent_count(t, uid, tab, 0, 1);
		return -EDQUOT;
	}
	agent_count(t, uid, tab, 1, 0);
	return 0;
}

void tracker_share_give(struct tracker *t, uint32_t uid, int tab)
{
	agent_count(t, uid, tab, -1, 0);
}

void tracker_share_restart(struct tracker *t)
{
	int kfd = bpf_map__fd(t->skel->maps.usage), afd = bpf_map__fd(t->skel->maps.usage_agent);
	uint32_t key, *prev = NULL;

	/* cadence, comm_init and arrivals are this agent's own maps (not pinned): they start
	 * empty, and so do their counts */
	while (bpf_map_get_next_key(kfd, prev, &key) == 0) {
		struct ftbpf_usage k, a;

		prev = &key;
		usage_read(kfd, key, &k);
		usage_read(afd, key, &a);
		a.held[FTBPF_TAB_CADENCE] = -k.held[FTBPF_TAB_CADENCE];
		a.held[FTBPF_TAB_STASH] = -k.held[FTBPF_TAB_STASH];
		a.held[FTBPF_TAB_ARRIVALS] = -k.held[FTBPF_TAB_ARRIVALS];
		(void)bpf_map_update_elem(afd, &key, &a, BPF_ANY);
	}
}

int tracker_usage_foreach(const struct tracker *t, tracker_usage_fn fn, void *ctx)
{
	int kfd = bpf_map__fd(t->skel->maps.usage), afd = bpf_map__fd(t->skel->maps.usage_agent);
	uint32_t key, *prev = NULL;
	int r = 0;

	while (!r && bpf_map_get_next_key(kfd, prev, &key) == 0) {
		struct ftbpf_usage k, a;

		prev = &key;
		usage_read(kfd, key, &k);
		usage_read(afd, key, &a);
		for (int i = 0; i < FTBPF_TAB__MAX; i++) {
			k.held[i] += a.held[i];
			k.refused[i] += a.refused[i];
		}
		r = fn(ctx, key, &k);
	}
	return r;
}

/* ---- the entries the agent makes and removes ---- */
int tracker_proc_put(struct tracker *t, uint32_t tgid, const struct ftbpf_proc *p)
{
	int fd = bpf_map__fd(t->skel->maps.procs), r;
	struct ftbpf_proc old;

	if (bpf_map_lookup_elem(fd, &tgid, &old) == 0) {
		/* an entry there already keeps its place (one of another user's moves) */
		if (old.uid != p->uid) {
			r = tracker_share_take(t, p->uid, FTBPF_TAB_PROCS, 0);
			if (r < 0)
				return r;
		}
		if (bpf_map_update_elem(fd, &tgid, p, BPF_EXIST)) {
			r = -errno; /* gone meanwhile: not made again */
			if (old.uid != p->uid)
				tracker_share_give(t, p->uid, FTBPF_TAB_PROCS);
			return r;
		}
		if (old.uid != p->uid)
			tracker_share_give(t, old.uid, FTBPF_TAB_PROCS);
		return 0;
	}
	r = tracker_share_take(t, p->uid, FTBPF_TAB_PROCS, 0);
	if (r < 0)
		return r;
	if (bpf_map_update_elem(fd, &tgid, p, BPF_NOEXIST)) {
		r = -errno;
		tracker_share_give(t, p->uid, FTBPF_TAB_PROCS);
		return r;
	}
	return 0;
}

int tracker_proc_delete(struct tracker *t, uint32_t tgid)
{
	int fd = bpf_map__fd(t->skel->maps.procs);
	struct ftbpf_proc old;

	if (bpf_map_lookup_elem(fd, &tgid, &old))
		return -errno;
	if (bpf_map_delete_elem(fd, &tgid))
		return -errno; /* the kernel's exit was first, and gave its place back */
	tracker_share_give(t, old.uid, FTBPF_TAB_PROCS);
	return 0;
}

int tracker_thread_seed(struct tracker *t, uint32_t tid, uint32_t tgid, uint32_t uid, int nr,
			uint64_t since_ns)
{
	struct ftbpf_thread init = {.tgid = tgid,
				    .uid = uid,
				    .cur_nr = nr,
				    .enter_ns = since_ns,
				    .last_nr = -1,
				    .first_ns = since_ns};
	int r = tracker_share_take(t, uid, FTBPF_TAB_THREADS, tid == tgid);

	if (r < 0)
		return r;
	/* BPF_NOEXIST: a record the kernel made since (the thread moved on) is the truth */
	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.threads), &tid, &init, BPF_NOEXIST)) {
		r = -errno;
		tracker_share_give(t, uid, FTBPF_TAB_THREADS);
		return r;
	}
	return 0;
}

int tracker_thread_delete(struct tracker *t, uint32_t tid)
{
	int fd = bpf_map__fd(t->skel->maps.threads);
	struct ftbpf_thread old;

	if (bpf_map_lookup_elem(fd, &tid, &old))
		return -errno;
	if (bpf_map_delete_elem(fd, &tid))
		return -errno;
	if (old.uid != FTBPF_UID_ALL)
		tracker_share_give(t, old.uid, FTBPF_TAB_THREADS);
	return 0;
}

int tracker_cad_add(struct tracker *t, uint32_t tgid)
{
	int fd = bpf_map__fd(t->skel->maps.cadence), r;
	struct ftbpf_proc p;
	struct ftbpf_cad c;

	if (bpf_map_lookup_elem(fd, &tgid, &c) == 0)
		return 0;
	if (tracker_proc_get(t, tgid, &p) < 0)
		return -ENOENT; /* not tracked: no cadence */
	r = tracker_share_take(t, p.uid, FTBPF_TAB_CADENCE, 0);
	if (r < 0)
		return r;
	memset(&c, 0, sizeof(c));
	if (bpf_map_update_elem(fd, &tgid, &c, BPF_NOEXIST)) {
		r = errno == EEXIST ? 0 : -errno;
		tracker_share_give(t, p.uid, FTBPF_TAB_CADENCE);
		return r;
	}
	return 0;
}

int tracker_cad_delete(struct tracker *t, uint32_t tgid, uint32_t uid)
{
	if (bpf_map_delete_elem(bpf_map__fd(t->skel->maps.cadence), &tgid))
		return -errno;
	tracker_share_give(t, uid, FTBPF_TAB_CADENCE);
	return 0;
}

int tracker_comm_delete(struct tracker *t, const struct ftbpf_comm_key *k, uint32_t uid)
{
	if (bpf_map_delete_elem(bpf_map__fd(t->skel->maps.arrivals), k) == 0)
		tracker_share_give(t, uid, FTBPF_TAB_ARRIVALS);
	if (bpf_map_delete_elem(bpf_map__fd(t->skel->maps.comms), k))
		return -errno;
	tracker_share_give(t, uid, FTBPF_TAB_COMMS);
	return 0;
}
