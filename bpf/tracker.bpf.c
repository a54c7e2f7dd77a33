// SPDX-License-Identifier: GPL-2.0
/*
 * ftbpf rank tracker: follows the threads of rank processes from syscall, signal and
 * process-lifecycle tracepoints. Non-rank processes pay one inlined bitmap test.
 * Every program exists twice (tp_btf and raw_tp); the agent autoloads one set after probing.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ftbpf/abi.h"
#include "ftbpf/slot.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the agent before load. */
const volatile __u32 agent_tgid = 0;
/*
 * Syscall-path clock. A clocksource read (bpf_ktime_get_ns) costs ~70 ns under kvm-clock, twice
 * per syscall; jiffies cost a load. With ns_per_jiffy set (from CONFIG_HZ), syscall times are
 * jiffies * ns_per_jiffy + jiffies_offset_ns, i.e. CLOCK_MONOTONIC to within one tick, which is
 * plenty for durations measured in seconds. The task iterator (run by the agent before the
 * syscall programs are attached, then every scan) keeps the offset calibrated. 0: precise clock.
 */
const volatile __u64 ns_per_jiffy = 0;
volatile __u64 jiffies_offset_ns = 0;
/* Set by the agent: timers expire with SIGTERM; the agent sends SIGKILL after its grace. */
const volatile __u32 timer_term_first = 0;
/*
 * What one rank (with its children) may make us send: events past the budget are folded
 * (counted in its procs entry). Execs of untracked processes have a budget per user; the agent
 * rescans /proc when it sees folded execs. The rank's own exit is never folded.
 */
const volatile __u64 ev_interval_ns = 62500000; /* 16 events a second, sustained */
const volatile __u64 ev_burst = 64;
const volatile __u64 exec_interval_ns = 3906250; /* 256 execs a second per user */
const volatile __u64 exec_burst = 1024;
const volatile __u32 max_children = 4096; /* tracked descendants of one rank */
const volatile __u32 max_threads = 4096;  /* thread records of one process */
/* procs entries kept for ranks: children are not tracked past FTBPF_MAX_PROCS - this */
const volatile __u32 children_reserve = 1024;
/* ioctl's and mmap's syscall numbers on this architecture (set by the agent) */
/* collective arrivals recorded (make bench turns them off to measure what they cost) */
const volatile __u32 arrivals_on = 1;
const volatile __s32 ioctl_nr = -1;
const volatile __s32 mmap_nr = -1;

/* Character-device majors of GPU drivers (nvidia*, DRM, kfd, configured ones): major -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 64);
} gpu_majors SEC(".maps");

/* One bit per tgid: is this process tracked (rank or rank child)? Mapped by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 512); /* resized to pid_max / 64 before load */
} rank_bits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct ftbpf_proc);
	__uint(max_entries, FTBPF_MAX_PROCS);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct ftbpf_thread);
	__uint(max_entries, FTBPF_MAX_THREADS);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, FTBPF_MAX_SYSCALLS);
} sysclass SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, FTBPF_STAT__MAX);
} stats SEC(".maps");

/* One bit per tgid: mapped a file executable since the agent last looked (libraries to probe). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 512); /* resized with rank_bits */
} maps_dirty SEC(".maps");

/* NCCL communicators of tracked processes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct ftbpf_comm_key);
	__type(value, struct ftbpf_comm);
	__uint(max_entries, 4096);
} comms SEC(".maps");

/* When each collective was issued, per communicator record (key as in comms). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct ftbpf_comm_key);
	__type(value, struct ftbpf_arrivals);
	__uint(max_entries, 1024);
} arrivals SEC(".maps");

/* A zeroed record to create arrivals entries from (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct ftbpf_arrivals);
	__uint(max_entries, 1);
} arrivals_zero SEC(".maps");

/* Arguments of a communicator creation in flight, from entry to return; key: tid. */
struct comm_stash {
	__u64 out; /* ncclComm_t *: where the new communicator is stored */
	__u64 id;
	__s32 rank;
	__s32 nranks;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct comm_stash);
	__uint(max_entries, 1024);
} comm_init SEC(".maps");

/* Slots of registered processes: tgid -> that process's own one-entry mmapable array. */
struct slot_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__uint(value_size,
	       sizeof(struct ftbpf_slot)); /* libbpf 1.1 cannot size a typed inner value */
	__uint(max_entries, 1);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, FTBPF_MAX_PROCS);
	__type(key, __u32);
	__array(values, struct slot_map);
} slots SEC(".maps");

/* One bit per tgid: has a slot (gates the slots lookup on the syscall path). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 512); /* resized with rank_bits */
} slot_bits SEC(".maps");

/* Exec-event budget per user: uid -> the limiter's theoretical arrival time. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1024);
} exec_budget SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct ftbpf_timer_key);
	__type(value, struct ftbpf_timer_val);
	__uint(max_entries, 4096);
} timer_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct ftbpf_task_snap);
	__uint(max_entries, 1);
} snap_scratch SEC(".maps");

/* Written by the agent through the skeleton before reading the task iterator. */
volatile __u32 iter_want_stacks = 0;

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline __u64 *stat_ptr(__u32 idx)
{
	return bpf_map_lookup_elem(&stats, &idx);
}

/* Generic cell-rate limiter: may one more event go at now? (racy across CPUs: approximate) */
static __always_inline int budget_take(__u64 *tat, __u64 interval, __u64 burst, __u64 now)
{
	__u64 t = *tat;

	if (t < now)
		t = now;
	if (t > now + burst * interval)
		return 0;
	*tat = t + interval;
	return 1;
}

/* The rank a tracked process belongs to (its own entry for a rank). */
static __always_inline struct ftbpf_proc *owner_of(struct ftbpf_proc *pp)
{
	struct ftbpf_proc *op;
	__u32 o;

	if (pp->owner == pp->tgid)
		return pp;
	o = pp->owner;
	op = bpf_map_lookup_elem(&procs, &o);
	return op ? op : pp;
}

/* May an event about this process go out, within its rank's budget? Else count it folded. */
static __always_inline int ev_allowed(struct ftbpf_proc *pp)
{
	struct ftbpf_proc *op = owner_of(pp);

	if (budget_take(&op->ev_tat, ev_interval_ns, ev_burst, bpf_ktime_get_ns()))
		return 1;
	__sync_fetch_and_add(&op->ev_folded, 1);
	stat_inc(FTBPF_STAT_FOLDED);
	return 0;
}

static __always_inline int tracked(__u32 tgid)
{
	__u32 idx = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(&rank_bits, &idx);

	return w && (*w & (1ULL << (tgid & 63)));
}

/*
 * The syscall path's cache. A syscall tracepoint fires for every thread of the host, so the
 * question "is the current process tracked?" is asked twice per syscall of every process. It
 * is answered per CPU for the last task seen there, identified by its pt_regs pointer (the top
 * of its kernel stack: unique while it lives): a non-rank process making syscalls in a loop
 * pays one per-CPU load and compare instead of a helper call and a lookup. The answer holds
 * while track_gen is unchanged; it changes whenever what is tracked may have (a bit set or
 * cleared by us or the agent; a thread of a tracked process created or gone, whose stack may be
 * reused).
 */
volatile __u64 track_gen = 0;

struct syscall_cache {
	__u64 regs;
	__u64 gen;
	__u64 pid_tgid; /* of the task, when tracked */
	__u64 tracked;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct syscall_cache);
	__uint(max_entries, 1);
} syscall_cache SEC(".maps");

static __always_inline void track_changed(void)
{
	__sync_fetch_and_add(&track_gen, 1);
}

static __always_inline void track(__u32 tgid)
{
	__u32 idx = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(&rank_bits, &idx);

	if (w)
		__sync_fetch_and_or(w, 1ULL << (tgid & 63));
	track_changed();
}

static __always_inline void untrack(__u32 tgid)
{
	__u32 idx = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(&rank_bits, &idx);

	if (w)
		__sync_fetch_and_and(w, ~(1ULL << (tgid & 63)));
	track_changed();
}

/* pid_tgid of the current task if its process is tracked, else 0 (see syscall_cache). */
static __always_inline __u64 current_tracked(const void *regs)
{
	__u32 zero = 0;
	struct syscall_cache *c = bpf_map_lookup_elem(&syscall_cache, &zero);
	__u64 gen = track_gen, pid_tgid;
	int tr;

	if (c && c->regs == (__u64)regs && c->gen == gen)
		return c->tracked ? c->pid_tgid : 0;
	pid_tgid = bpf_get_current_pid_tgid();
	tr = tracked(pid_tgid >> 32);
	if (c) {
		c->regs = (__u64)regs;
		c->gen = gen;
		c->pid_tgid = pid_tgid;
		c->tracked = tr;
	}
	return tr ? pid_tgid : 0;
}

static __always_inline __u64 hot_now(void)
{
	if (ns_per_jiffy)
		return bpf_jiffies64() * ns_per_jiffy + jiffies_offset_ns;
	return bpf_ktime_get_ns();
}

static __always_inline int has_slot(__u32 tgid)
{
	__u32 idx = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(&slot_bits, &idx);

	return w && (*w & (1ULL << (tgid & 63)));
}

/* Is the slot the current process's? (its owner's start time, see slot.h) */
static __always_inline int slot_is_ours(const struct ftbpf_slot *s)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 st = BPF_CORE_READ(task, group_leader, start_boottime), o = s->owner_start_ns;

	return !o || (st > o ? st - o : o - st) < FTBPF_START_SLACK_NS;
}

/*
 * Kernel-side timer enforcement: a process entering a syscall after one of its deadlines is
 * signalled at once. The diagnosis record goes to the ring buffer before the signal.
 */
static __always_inline void check_slot(__u32 tgid, __u32 tid, long nr)
{
	struct ftbpf_slot *s;
	struct ftbpf_event *e;
	__u32 zero = 0;
	__u64 now;
	void *inner;

	inner = bpf_map_lookup_elem(&slots, &tgid);
	if (!inner)
		return;
	s = bpf_map_lookup_elem(inner, &zero);
	if (!s || !s->earliest_ns)
		return;
	now = bpf_ktime_get_ns();
	if (now < s->earliest_ns)
		return;
	for (int i = 0; i < FTBPF_SLOT_TIMERS; i++) {
		struct ftbpf_slot_timer *t = &s->timers[i];
		__u32 sig;

		if (t->state != (__u64)FTBPF_TS_ARMED || !t->deadline_ns || t->deadline_ns > now)
			continue;
		if (!slot_is_ours(s))
			return; /* an earlier process's slot at this pid: never fire at this one */
		if (__sync_val_compare_and_swap(&t->state, (__u64)FTBPF_TS_ARMED,
						(__u64)FTBPF_TS_FIRED) != (__u64)FTBPF_TS_ARMED)
			continue;
		sig = timer_term_first ? 15 /* SIGTERM */ : t->sig;
		__sync_fetch_and_add(&s->fired, 1);
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (e) {
			__builtin_memset(e, 0, sizeof(*e));
			e->type = FTBPF_EV_TIMER;
			e->ts_ns = now;
			e->tgid = tgid;
			e->tid = tid;
			e->sig = sig;
			e->code = (__s32)nr;
			e->result = (__s32)((now - t->deadline_ns) / 1000); /* late, in us */
			bpf_get_current_comm(e->comm, sizeof(e->comm));
			bpf_probe_read_kernel_str(e->filename, FTBPF_SLOT_SCOPE_LEN, t->scope);
			bpf_ringbuf_submit(e, 0);
		} else {
			stat_inc(FTBPF_STAT_RB_DROPS);
		}
		bpf_send_signal(sig);
		stat_inc(FTBPF_STAT_SIGNALS_SENT);
		return;
	}
}

/* An ioctl of a tracked thread: is its fd a GPU device file? (fd -> file -> inode -> rdev) */
static __always_inline void gpu_ioctl_enter(struct ftbpf_thread *t, struct pt_regs *regs, __u64 now)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	unsigned int fd = (unsigned int)PT_REGS_PARM1_CORE_SYSCALL(regs);
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *file = NULL;
	__u32 major;

	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return;
	major = BPF_CORE_READ(file, f_inode, i_rdev) >> 20; /* MINORBITS */
	if (!major || !bpf_map_lookup_elem(&gpu_majors, &major))
		return;
	t->gpu_ioctls++;
	t->gpu_since_ns = now;
	t->gpu_req = (__u32)PT_REGS_PARM2_CORE_SYSCALL(regs);
}

/* The thread's record, created at its first event. A process may hold max_threads records
 * (its main thread always gets one), so that no process can fill the map for the others. */
static __always_inline struct ftbpf_thread *thread_get(__u32 tgid, __u32 tid, __u64 now)
{
	struct ftbpf_thread *t = bpf_map_lookup_elem(&threads, &tid);
	struct ftbpf_proc *pp;

	if (!t) {
		struct ftbpf_thread init = {
		    .tgid = tgid, .cur_nr = -1, .last_nr = -1, .first_ns = now};

		pp = bpf_map_lookup_elem(&procs, &tgid);
		if (pp && tid != tgid && pp->nthreads >= max_threads) {
			stat_inc(FTBPF_STAT_THREAD_CAP);
			return NULL;
		}
		if (bpf_map_update_elem(&threads, &tid, &init, BPF_NOEXIST) == 0 && pp)
			__sync_fetch_and_add(&pp->nthreads, 1);
		t = bpf_map_lookup_elem(&threads, &tid);
		if (!t)
			stat_inc(FTBPF_STAT_THREAD_FULL);
	}
	return t;
}

static __always_inline void set_bit(void *bits, __u32 tgid)
{
	__u32 idx = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(bits, &idx);

	if (w && !(*w & (1ULL << (tgid & 63))))
		__sync_fetch_and_or(w, 1ULL << (tgid & 63));
}

#include "cadence.bpf.h"
#include "gpu.bpf.h"

static __always_inline void on_sys_enter(struct pt_regs *regs, long id)
{
	__u64 pid_tgid = current_tracked(regs);
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct ftbpf_thread *t;
	__u64 now;

	if (!pid_tgid)
		return;
	now = hot_now();
	t = thread_get(tgid, tid, now);
	if (!t)
		return;
	t->cur_nr = (__s32)id;
	t->enter_ns = now;
	if (tid == tgid)
		cad_enter(t, regs, id);
	if (id == ioctl_nr)
		gpu_ioctl_enter(t, regs, now);
	else if (id == mmap_nr && (PT_REGS_PARM3_CORE_SYSCALL(regs) & 4 /* PROT_EXEC */) &&
		 (int)PT_REGS_PARM5_CORE_SYSCALL(regs) >= 0)
		t->mmap_exec = 1;
	if (has_slot(tgid))
		check_slot(tgid, tid, id);
}

static __always_inline void on_sys_exit(struct pt_regs *regs, long ret)
{
	__u64 pid_tgid = current_tracked(regs);
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct ftbpf_thread *t;
	__u64 now;
	__s32 nr;
	__u8 cls;

	if (!pid_tgid)
		return;
	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t)
		return;
	now = hot_now();
	nr = t->cur_nr;
	t->last_nr = nr;
	t->last_ret = ret;
	t->cur_nr = -1;
	t->last_exit_ns = now;
	t->syscalls++;
	if (t->gpu_since_ns) {
		t->gpu_last_ns = now;
		t->gpu_since_ns = 0;
	}
	if (t->mmap_exec) {
		t->mmap_exec = 0;
		set_bit(&maps_dirty, tgid);
	}
	/* A syscall made above the frame of the probed call in flight: that call returned
	 * without its return probe (see gpu.bpf.h). */
	if (t->api && PT_REGS_SP_CORE(regs) > t->api_sp)
		api_lost(t);
	if (tid != tgid)
		return;
	cls = syscall_class(nr);
	cad_exit(t, tgid);
	/* Inside a probed CUDA/NCCL call (one with a return probe) the driver's own syscalls are
	 * not the program's progress: a wait on the GPU completes an ioctl about once a second
	 * for as long as it waits. The call's return is the progress (gpu_exit). */
	if (!t->api) {
		__u8 c = cls & FTBPF_SC_MASK;

		if (c == FTBPF_SC_PROGRESS || (c == FTBPF_SC_WAIT && ret > 0) ||
		    (c == FTBPF_SC_FUTEX && ret >= 0)) {
			t->progress_ns = now;
			t->progress++;
		}
	}
}

static __always_inline struct ftbpf_event *ev_reserve(__u32 type)
{
	struct ftbpf_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		stat_inc(FTBPF_STAT_RB_DROPS);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = type;
	e->ts_ns = bpf_ktime_get_ns();
	return e;
}

static __always_inline void on_exec(struct task_struct *p, struct linux_binprm *bprm)
{
	struct ftbpf_event *e;
	const char *fn;
	__u32 tgid = BPF_CORE_READ(p, tgid);

	if (tgid == agent_tgid)
		return;
	if (tracked(tgid)) { /* a rank's child ran a program: within its rank's budget */
		struct ftbpf_proc *pp = bpf_map_lookup_elem(&procs, &tgid);

		if (pp && !ev_allowed(pp))
			return;
	} else { /* a candidate rank: within its user's budget */
		__u32 uid = (__u32)bpf_get_current_uid_gid();
		__u64 now = bpf_ktime_get_ns(), *tat = bpf_map_lookup_elem(&exec_budget, &uid);

		if (!tat) {
			bpf_map_update_elem(&exec_budget, &uid, &now, BPF_NOEXIST);
			tat = bpf_map_lookup_elem(&exec_budget, &uid);
		}
		if (tat && !budget_take(tat, exec_interval_ns, exec_burst, now)) {
			stat_inc(FTBPF_STAT_EXEC_FOLDED);
			return;
		}
	}
	e = ev_reserve(FTBPF_EV_EXEC);
	if (!e)
		return;
	e->tgid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	e->ppid = BPF_CORE_READ(p, real_parent, tgid);
	e->flags = tracked(tgid);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	fn = BPF_CORE_READ(bprm, filename);
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), fn);
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct ftbpf_proc *pp, np = {};
	struct ftbpf_event *e;

	struct ftbpf_proc *op;
	__u64 *live;

	if (!tracked(ptgid))
		return;
	if (ptgid == ctgid) { /* a new thread: its stack may be one the cache remembers */
		track_changed();
		return;
	}
	pp = bpf_map_lookup_elem(&procs, &ptgid);
	if (!pp)
		return;
	op = owner_of(pp);
	live = stat_ptr(FTBPF_STAT_CHILDREN);
	if (op->nchildren >= max_children ||
	    (live && *live >= FTBPF_MAX_PROCS - children_reserve)) {
		stat_inc(FTBPF_STAT_CHILD_CAP);
		return;
	}
	np.tgid = ctgid;
	np.owner = pp->owner;
	np.ppid = ptgid;
	np.flags = FTBPF_PROC_CHILD;
	np.rank = pp->rank;
	np.local_rank = pp->local_rank;
	np.world_size = pp->world_size;
	np.uid = pp->uid;
	np.source = pp->source;
	np.adopted_ns = bpf_ktime_get_ns();
	np.start_ns = BPF_CORE_READ(child, start_boottime);
	__builtin_memcpy(np.job, pp->job, sizeof(np.job));
	bpf_probe_read_kernel_str(np.comm, sizeof(np.comm), child->comm);
	if (bpf_map_update_elem(&procs, &ctgid, &np, BPF_ANY)) {
		stat_inc(FTBPF_STAT_PROC_FULL);
		return;
	}
	track(ctgid);
	__sync_fetch_and_add(&op->nchildren, 1);
	if (live)
		__sync_fetch_and_add(live, 1);
	if (!ev_allowed(pp))
		return;
	e = ev_reserve(FTBPF_EV_FORK);
	if (!e)
		return;
	e->tgid = ctgid;
	e->tid = ctgid;
	e->ppid = ptgid;
	e->owner = np.owner;
	e->flags = FTBPF_PROC_CHILD;
	__builtin_memcpy(e->comm, np.comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void clear_bit(void *bits, __u32 tgid)
{
	__u32 idx = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(bits, &idx);

	if (w && (*w & (1ULL << (tgid & 63))))
		__sync_fetch_and_and(w, ~(1ULL << (tgid & 63)));
}

/*
 * A thread ends: its record goes. The last thread of a group: the process is untracked and its
 * slot disarmed (a later process at the pid must not inherit either); a rank's exit is recorded
 * in its procs entry and always sent; a child's is sent within its rank's budget and its entry
 * deleted here (the event names its rank), so children cannot fill the map.
 */
static __always_inline void on_exit(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);
	struct ftbpf_proc *pp, *op = NULL;
	struct ftbpf_event *e;
	int child, send = 1;

	if (!tracked(tgid))
		return;
	track_changed(); /* its stack may be reused by a task the cache would take for it */
	pp = bpf_map_lookup_elem(&procs, &tgid);
	if (bpf_map_delete_elem(&threads, &tid) == 0 && pp && pp->nthreads)
		__sync_fetch_and_add(&pp->nthreads, (__u32)-1);
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return; /* not the last thread of the group */
	untrack(tgid);
	clear_bit(&slot_bits, tgid);
	bpf_map_delete_elem(&cadence, &tgid);
	child = pp && (pp->flags & FTBPF_PROC_CHILD);
	if (pp && child) {
		__u64 *live = stat_ptr(FTBPF_STAT_CHILDREN);

		op = owner_of(pp);
		if (op != pp && op->nchildren)
			__sync_fetch_and_add(&op->nchildren, (__u32)-1);
		if (live && *live)
			__sync_fetch_and_add(live, (__u64)-1);
		send = ev_allowed(pp);
	} else if (pp) {
		pp->flags |= FTBPF_PROC_EXITED;
		pp->exit_ns = bpf_ktime_get_ns();
		pp->exit_code = BPF_CORE_READ(p, exit_code);
	}
	e = send ? ev_reserve(FTBPF_EV_EXIT) : NULL;
	if (e) {
		e->tgid = tgid;
		e->tid = tid;
		e->code = BPF_CORE_READ(p, exit_code);
		e->sig = e->code & 0x7f;
		if (pp) {
			e->flags = pp->flags;
			e->owner = pp->owner;
			if (e->sig && pp->fatal_sig == (__u32)e->sig) {
				e->sender_pid = pp->fatal_sender_pid;
				__builtin_memcpy(e->sender_comm, pp->fatal_sender_comm,
						 sizeof(e->sender_comm));
			}
		}
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
		bpf_ringbuf_submit(e, 0);
	}
	if (child)
		bpf_map_delete_elem(&procs, &tgid);
}

/* Signals whose default action ends the process. */
static __always_inline int fatal_by_default(int sig)
{
	switch (sig) {
	case 1:
	case 2:
	case 3:
	case 4:
	case 5:
	case 6:
	case 7:
	case 8:
	case 9:
	case 10:
	case 11:
	case 12:
	case 13:
	case 14:
	case 15:
	case 24:
	case 25:
	case 26:
	case 27:
	case 31:
		return 1;
	}
	return 0;
}

static __always_inline void on_signal_generate(int sig, struct kernel_siginfo *info,
					       struct task_struct *target, int result)
{
	__u32 tgid = BPF_CORE_READ(target, tgid);
	__u64 sender = bpf_get_current_pid_tgid();
	struct ftbpf_proc *pp;
	struct ftbpf_event *e;
	int si_code = 0;

	if (!tracked(tgid))
		return;
	if ((unsigned long)info > 1)
		si_code = BPF_CORE_READ(info, si_code);
	pp = bpf_map_lookup_elem(&procs, &tgid);
	if (!pp)
		return;
	__sync_fetch_and_add(&pp->sig_generated, 1);
	if (result == 0 && fatal_by_default(sig)) {
		pp->fatal_sig = sig;
		pp->fatal_sender_pid = sender >> 32;
		pp->fatal_si_code = si_code;
		pp->fatal_ns = bpf_ktime_get_ns();
		bpf_get_current_comm(pp->fatal_sender_comm, sizeof(pp->fatal_sender_comm));
	}
	if (result != 0) { /* ignored, or merged with one pending: nothing happens to the rank */
		stat_inc(FTBPF_STAT_SIG_IGNORED);
		return;
	}
	if (!ev_allowed(pp))
		return;
	e = ev_reserve(FTBPF_EV_SIGNAL);
	if (!e)
		return;
	e->tgid = tgid;
	e->tid = BPF_CORE_READ(target, pid);
	e->sig = sig;
	e->code = si_code;
	e->result = result;
	e->sender_pid = sender >> 32;
	e->sender_tid = (__u32)sender;
	bpf_get_current_comm(e->sender_comm, sizeof(e->sender_comm));
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), target->comm);
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void on_signal_deliver(int sig, struct kernel_siginfo *info)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct ftbpf_proc *pp;
	struct ftbpf_event *e;

	if (!tracked(tgid))
		return;
	/* a group exit kills the other threads: SIGKILL with no siginfo, sent by nobody */
	if (sig == 9 && (unsigned long)info == 0)
		return;
	pp = bpf_map_lookup_elem(&procs, &tgid);
	if (!pp)
		return;
	__sync_fetch_and_add(&pp->sig_delivered, 1);
	if (!ev_allowed(pp))
		return;
	e = ev_reserve(FTBPF_EV_DELIVER);
	if (!e)
		return;
	e->tgid = tgid;
	e->tid = (__u32)id;
	e->sig = sig;
	if ((unsigned long)info > 1)
		e->code = BPF_CORE_READ(info, si_code);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void on_mark_victim(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ftbpf_proc *pp;
	struct ftbpf_event *e;

	if (!tracked(tgid))
		return;
	pp = bpf_map_lookup_elem(&procs, &tgid);
	if (pp)
		pp->flags |= FTBPF_PROC_OOM;
	e = ev_reserve(FTBPF_EV_OOM);
	if (!e)
		return;
	e->tgid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	bpf_ringbuf_submit(e, 0);
}

/*
 * Every handler is attached as tp_btf where the kernel can, raw_tp otherwise: one body, two
 * program types (btf_NAME, raw_NAME); the agent autoloads one set after probing. In raw_tp
 * programs pointer arguments are untrusted, which is why the handlers read through CO-RE.
 */
#define FTBPF_TP(tp, name, call, ...)                                                              \
	SEC("tp_btf/" #tp)                                                                         \
	int BPF_PROG(btf_##name, __VA_ARGS__)                                                      \
	{                                                                                          \
		call;                                                                              \
		return 0;                                                                          \
	}                                                                                          \
	SEC("raw_tp/" #tp)                                                                         \
	int BPF_PROG(raw_##name, __VA_ARGS__)                                                      \
	{                                                                                          \
		call;                                                                              \
		return 0;                                                                          \
	}

FTBPF_TP(sys_enter, sys_enter, on_sys_enter(regs, id), struct pt_regs *regs, long id)
FTBPF_TP(sys_exit, sys_exit, on_sys_exit(regs, ret), struct pt_regs *regs, long ret)
FTBPF_TP(sched_process_exec, exec, on_exec(p, bprm), struct task_struct *p, pid_t old_pid,
	 struct linux_binprm *bprm)
FTBPF_TP(sched_process_fork, fork, on_fork(parent, child), struct task_struct *parent,
	 struct task_struct *child)
FTBPF_TP(sched_process_exit, exit, on_exit(p), struct task_struct *p)
FTBPF_TP(signal_generate, signal_generate, on_signal_generate(sig, info, task, result), int sig,
	 struct kernel_siginfo *info, struct task_struct *task, int group, int result)
FTBPF_TP(signal_deliver, signal_deliver, on_signal_deliver(sig, info), int sig,
	 struct kernel_siginfo *info)
FTBPF_TP(mark_victim, mark_victim, on_mark_victim(p), struct task_struct *p)

/* ---- task iterator: one record per thread of a tracked process ---- */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

SEC("iter/task")
int dump_task(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct ftbpf_task_snap *s;
	__u32 zero = 0;

	if (ns_per_jiffy)
		jiffies_offset_ns = bpf_ktime_get_ns() - bpf_jiffies64() * ns_per_jiffy;
	if (!task || !tracked(task->tgid))
		return 0;
	s = bpf_map_lookup_elem(&snap_scratch, &zero);
	if (!s)
		return 0;
	s->tid = task->pid;
	s->tgid = task->tgid;
	if (bpf_core_field_exists(task->__state)) {
		s->state = BPF_CORE_READ(task, __state);
	} else {
		struct task_struct___old *old = (void *)task;

		s->state = BPF_CORE_READ(old, state);
	}
	s->exit_state = task->exit_state;
	s->utime_ns = task->utime;
	s->stime_ns = task->stime;
	s->nvcsw = task->nvcsw;
	s->nivcsw = task->nivcsw;
	s->on_cpu = BPF_CORE_READ(task, on_cpu);
	s->nr_stack = 0;
	if (iter_want_stacks) {
		long n = bpf_get_task_stack(task, s->stack, sizeof(s->stack), 0);

		s->nr_stack = n < 0 ? (__s32)n : (__s32)((__u64)n / 8);
	}
	bpf_probe_read_kernel_str(s->comm, sizeof(s->comm), task->comm);
	bpf_seq_write(seq, s, sizeof(*s));
	return 0;
}
