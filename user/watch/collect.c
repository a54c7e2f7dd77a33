/* What the agent shows of a process beyond its sample, read into plain structs: see collect.h. */
#include "watch/collect.h"

#include <stdio.h>
#include <string.h>

#include "ftbpf/slot.h"
#include "lib/timers.h"
#include "os/procfs.h"
#include "watch/sample.h"
#include "watch/tracker.h"

/* A comm of at most FTBPF_COMM_LEN bytes, NUL-terminated or not, into out. */
static void copy_comm(char *out, size_t len, const char *comm)
{
	snprintf(out, len, "%.*s", FTBPF_COMM_LEN, comm);
}

/* Thread tid of pid, its state, CPU time and comm known: the rest is read here. */
static int thread_one(struct tracker *tr, struct sampler *sp, int pid, int tid, char state,
		      uint64_t cpu_ns, const char *comm, collect_thread_fn fn, void *ctx)
{
	struct collect_thread t = {.tid = tid, .state = state, .cpu_ns = cpu_ns, .nr = -1};
	struct ftbpf_thread tt;

	copy_comm(t.comm, sizeof(t.comm), comm);
	if (tracker_thread_get(tr, (uint32_t)tid, &tt) == 0) {
		t.tracked = 1;
		t.nr = tt.cur_nr;
		t.enter_ns = tt.enter_ns;
		t.syscalls = tt.syscalls;
		t.last_exit_ns = tt.last_exit_ns;
	}
	procfs_wchan(pid, tid, t.wchan, sizeof(t.wchan)); /* unreadable: "" */
	(void)sampler_kstack(sp, pid, tid, &t.kstack);	  /* unreadable: no frame */
	return fn(ctx, &t);
}

struct proc_walk {
	struct tracker *tr;
	struct sampler *sp;
	int pid;
	collect_thread_fn fn;
	void *ctx;
};

static int proc_thread(void *ctx, int tid)
{
	struct proc_walk *w = ctx;
	struct proc_stat st;

	if (procfs_stat(w->pid, tid, &st) < 0)
		return 0; /* gone meanwhile */
	return thread_one(w->tr, w->sp, w->pid, tid, st.state, st.utime_ns + st.stime_ns, st.comm,
			  w->fn, w->ctx);
}

int collect_threads(struct tracker *tr, struct sampler *sp, int pid, collect_thread_fn fn,
		    void *ctx)
{
	struct proc_walk w = {tr, sp, pid, fn, ctx};
	int r = 0, found = 0;

	if (!tracker_features(tr)->task_iter)
		return procfs_foreach_pid(pid, proc_thread, &w);
	for (size_t i = 0; i < sp->nsnap && !r; i++) {
		const struct ftbpf_task_snap *s = &sp->snap[i];

		if (s->tgid == (uint32_t)pid) {
			found = 1;
			r = thread_one(tr, sp, pid, (int)s->tid, sampler_state_char(s),
				       s->utime_ns + s->stime_ns, s->comm, fn, ctx);
		}
	}
	/* a process the kernel side does not track (ftbpf stacks PID): /proc's threads */
	return found ? r : procfs_foreach_pid(pid, proc_thread, &w);
}

int collect_kstack(struct sampler *sp, int pid, int tid, struct kstack *ret)
{
	return sampler_kstack(sp, pid, tid, ret);
}

void collect_proc(struct tracker *tr, int pid, struct collect_proc *ret)
{
	struct ftbpf_thread th;
	struct proc_stat st;
	char buf[4096];

	memset(ret, 0, sizeof(*ret));
	kstack_init(&ret->kstack);
	if (procfs_stat(pid, pid, &st) == 0) {
		ret->has_stat = 1;
		ret->state = st.state;
		copy_comm(ret->comm, sizeof(ret->comm), st.comm);
	}
	if (tracker_thread_get(tr, (uint32_t)pid, &th) == 0 && th.cur_nr >= 0) {
		ret->in_syscall = 1;
		ret->nr = th.cur_nr;
		ret->enter_ns = th.enter_ns;
	}
	procfs_wchan(pid, pid, ret->wchan, sizeof(ret->wchan));
	if (procfs_kstack(pid, pid, buf, sizeof(buf)) == 0) {
		ret->has_kstack = 1;
		(void)kstack_parse_proc(&ret->kstack, buf, 0); /* a full read always fits */
	}
}

void collect_gpu(struct tracker *tr, const struct sampler *sp, int pid, struct collect_gpu *ret)
{
	struct ftbpf_thread t;
	uint64_t n = 0, last = 0;

	for (size_t i = 0; i < sp->nsnap; i++)
		if (sp->snap[i].tgid == (uint32_t)pid &&
		    tracker_thread_get(tr, sp->snap[i].tid, &t) == 0) {
			n += t.gpu_ioctls;
			if (t.gpu_last_ns > last)
				last = t.gpu_last_ns;
		}
	if (!sp->nsnap && tracker_thread_get(tr, (uint32_t)pid, &t) == 0) {
		n = t.gpu_ioctls;
		last = t.gpu_last_ns;
	}
	ret->ioctls = n;
	ret->last_ns = last;
}

struct child_walk {
	int owner;
	collect_child_fn fn;
	void *ctx;
};

static int child_one(void *ctx, uint32_t tgid, const struct ftbpf_proc *p)
{
	struct child_walk *w = ctx;
	struct collect_child c = {.pid = tgid, .ppid = p->ppid};

	if ((int)p->owner != w->owner || (p->flags & FTBPF_PROC_RANK))
		return 0;
	copy_comm(c.comm, sizeof(c.comm), p->comm);
	c.exited = !!(p->flags & FTBPF_PROC_EXITED);
	return w->fn(w->ctx, &c);
}

int collect_children(struct tracker *tr, int owner, collect_child_fn fn, void *ctx)
{
	struct child_walk w = {owner, fn, ctx};

	return tracker_foreach_proc(tr, child_one, &w);
}

void collect_slot(const struct ftbpf_slot *s, struct collect_slot *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->ping_ns = __atomic_load_n(&s->ping_ns, __ATOMIC_RELAXED);
	ret->step_ns = __atomic_load_n(&s->step_ns, __ATOMIC_RELAXED);
	ret->step = __atomic_load_n(&s->step, __ATOMIC_RELAXED);
	for (int j = 0; j < FTBPF_SLOT_TIMERS; j++) {
		uint64_t d = timers_slot_armed(&s->timers[j]);

		if (!d)
			continue;
		ret->timers++;
		if (!ret->earliest_ns || d < ret->earliest_ns)
			ret->earliest_ns = d;
	}
}

void collect_stats(struct tracker *tr, uint64_t ret[FTBPF_STAT__MAX])
{
	for (int i = 0; i < FTBPF_STAT__MAX; i++)
		ret[i] = tracker_stat(tr, (enum ftbpf_stat)i);
}
