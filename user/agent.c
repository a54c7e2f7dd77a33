/*
 * The agent: one epoll loop over the ring buffer, a scan timer, signals and the control
 * socket. Events adopt ranks and record exits and signals; each scan samples every rank,
 * runs the detector per job, and reports, signals or terminates as configured.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ftbpf/slot.h"
#include "eventlog.h"
#include "fifo_proto.h"
#include "gpuapi.h"
#include "gpuprobe.h"
#include "mesh.h"
#include "ident.h"
#include "ksyms.h"
#include "log.h"
#include "procfs.h"
#include "ranks.h"
#include "syscalls.h"
#include "timers.h"
#include "tracker.h"

#define TAG_RB		    1u
#define TAG_TIMER	    2u
#define TAG_SIGNAL	    3u
#define TAG_TIMERS	    4u
#define TAG_FIFO	    5u
#define TAG_MESH	    6u
#define TAG_MESH_TICK	    7u
#define NS		    1000000000ull
#define EXITED_RETENTION_NS (3600 * NS) /* keep a finished job visible for an hour */
#define ENVIRON_MAX	    (256 * 1024)

struct agent_counters {
	uint64_t events;
	uint64_t adopted;
	uint64_t adopt_errors; /* malformed rank variables */
	uint64_t hangs;
	uint64_t actions;
	uint64_t scans;
};

struct agent {
	struct ftbpf_config cfg;
	struct det_params dp;
	struct tracker *tr;	/* owned */
	struct gpuprobe *gp;	/* owned; NULL when CUDA/NCCL probes are off or impossible */
	struct mesh *mesh;	/* owned; NULL when the heartbeat mesh is off */
	struct eventlog *el;	/* owned */
	struct ctl_server *ctl; /* owned */
	struct ksyms *ksyms;	/* owned, loaded on first need */
	struct ranks ranks;	/* owned */
	int epfd, tfd, sfd, lockfd;
	uint64_t start_ns;
	struct agent_counters cnt;
	struct ftbpf_task_snap *snap; /* last snapshot, owned */
	size_t nsnap;
	int stop;
	char *envbuf;		 /* owned scratch */
	unsigned gpu_majors[64]; /* character-device majors treated as GPUs */
	int ngpu;
	struct timers tm; /* owned */
	int ttfd;	  /* timerfd armed at the earliest timer deadline */
	int fifo_fd;	  /* torch FileTimerClient FIFO, -1 when not configured */
	uid_t fifo_uid;	  /* its owner: requests may only target this user's processes */
	char fifo_buf[FIFO_MAX_LINE + 1];
	size_t fifo_len;
	int fifo_skip; /* dropping the rest of an over-long line */
	struct {
		uint64_t lines, bad, denied, oversized;
	} fifo_cnt;
	/* SIGKILL due after the grace: hard-timeout terminations and escalated timer expiries */
	struct pending_kill {
		int pid;
		int pidfd; /* owned */
		int rank;  /* 1: a rank terminated by a job action, 0: a timer's process */
		uint64_t at_ns;
	} pk[1024];
	int npk;
};

static void timer_rearm(struct agent *a);
static void timer_check(struct agent *a);
static int timer_forget_pid(struct agent *a, int pid);
static void rank_drop_slot(struct agent *a, struct rank *k);
static void escalate_later(struct agent *a, int pid, int rank);
static void rank_gpu(struct agent *a, const struct rank *k, uint64_t *ret_n, uint64_t *ret_last);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static double secs(uint64_t ns)
{
	return (double)ns / NS;
}

/* ---- JSON helpers ---- */
static void jstr(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, v ? json_object_new_string(v) : NULL);
}

static void jint(struct json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

static void jdbl(struct json_object *o, const char *k, double v)
{
	char s[32];

	/* millisecond precision, printed as such (not 3.1659999999999999) */
	snprintf(s, sizeof(s), "%.3f", v);
	json_object_object_add(o, k, json_object_new_double_s(v, s));
}

static void jbool(struct json_object *o, const char *k, int v)
{
	json_object_object_add(o, k, json_object_new_boolean(v));
}

static struct json_object *ev_new(const char *type)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "type", type);
	return o;
}

static void ev_rank_ids(struct json_object *o, const struct rank *k)
{
	jint(o, "pid", k->pid);
	jint(o, "rank", k->id.rank);
	jstr(o, "job", k->id.job);
	jint(o, "uid", k->uid);
	jstr(o, "comm", k->comm);
}

/* ---- process helpers ---- */
static int pidfd_open_(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int send_signal(struct rank *k, int sig)
{
	if (k->pidfd >= 0) {
		if (syscall(SYS_pidfd_send_signal, k->pidfd, sig, NULL, 0) < 0)
			return -errno;
		return 0;
	}
	return -ESRCH; /* never kill(2) by a pid we could not pin */
}

static struct ksyms *ksyms_get(struct agent *a)
{
	if (!a->ksyms)
		a->ksyms = ksyms_load();
	return a->ksyms;
}

static void adopt_event(struct agent *a, const struct rank *k, const char *how, int exited)
{
	struct json_object *o = ev_new("adopt");

	ev_rank_ids(o, k);
	jint(o, "local_rank", k->id.local_rank);
	jint(o, "world_size", k->id.world_size);
	jstr(o, "source", ident_source_name(k->id.source));
	jstr(o, "how", how);
	jbool(o, "exited", exited);
	eventlog_emit(a->el, o);
}

/* ---- adoption ---- */
static int adopt_as(struct agent *a, int pid, const struct rank_ident *idp, const char *how,
		    int registered);

static int adopt(struct agent *a, int pid, const char *how)
{
	struct rank_ident id;
	ssize_t n;
	int r;

	if (pid == getpid() || ranks_find(&a->ranks, pid))
		return 0;
	n = procfs_environ(pid, a->envbuf, ENVIRON_MAX);
	if (n <= 0)
		return n < 0 ? (int)n : -ENOENT;
	r = ident_from_environ(a->envbuf, (size_t)n, &id);
	if (r == -EINVAL) {
		a->cnt.adopt_errors++;
		log_warn("pid %d has malformed rank variables in its environment; not adopted",
			 pid);
		return r;
	}
	if (r < 0)
		return r;
	if (*a->cfg.only_jobs && fnmatch(a->cfg.only_jobs, id.job, 0))
		return -ENOENT;
	return adopt_as(a, pid, &id, how, 0);
}

/* Make pid a rank with identity id. registered: it asked (control socket), skip the checks
 * that keep a rank's children from becoming ranks of their own. */
static int adopt_as(struct agent *a, int pid, const struct rank_ident *idp, const char *how,
		    int registered)
{
	struct rank_ident id = *idp;
	struct proc_stat st;
	struct ftbpf_proc p = {};
	struct rank *k;
	uid_t uid;
	int r;

	if (procfs_stat(pid, -1, &st) < 0 || procfs_uid(pid, &uid) < 0)
		return -ESRCH;
	/* A process whose parent is already tracked is that rank's child, not a new rank. */
	if (!registered && tracker_is_tracked(a->tr, st.ppid)) {
		struct ftbpf_proc pp;

		if (tracker_proc_get(a->tr, st.ppid, &pp) == 0 && !(pp.flags & FTBPF_PROC_EXITED))
			return 0;
	}
	/* Launchers that exec the training script through a shell keep the parent's env. */
	if (!registered && ranks_find(&a->ranks, st.ppid))
		return 0;
	k = ranks_add(&a->ranks, pid);
	if (!k)
		return -ENOMEM;
	k->pidfd = pidfd_open_(pid);
	k->uid = uid;
	k->id = id;
	memcpy(k->comm, st.comm, sizeof(k->comm));
	k->adopted_ns = now_ns();
	p.tgid = pid;
	p.owner = pid;
	p.ppid = st.ppid;
	p.flags = FTBPF_PROC_RANK;
	p.rank = id.rank;
	p.local_rank = id.local_rank;
	p.world_size = id.world_size;
	p.uid = uid;
	p.source = id.source;
	p.adopted_ns = k->adopted_ns;
	p.start_ns = st.start_ns;
	memcpy(p.comm, st.comm, sizeof(p.comm));
	memcpy(p.job, id.job, sizeof(p.job));
	r = tracker_proc_put(a->tr, pid, &p);
	if (r == 0)
		r = tracker_set_tracked(a->tr, pid, 1);
	if (r < 0) {
		log_warn("cannot track pid %d: %s", pid, strerror(-r));
		ranks_remove(&a->ranks, pid);
		return r;
	}
	ranks_job(&a->ranks, id.job);
	a->cnt.adopted++;
	adopt_event(a, k, how, 0);
	return 0;
}

static int scan_one(void *ctx, int pid)
{
	adopt(ctx, pid, "scan");
	return 0;
}

/* Rebuild the table from the pinned procs map after a restart. */
static int resume_one(void *ctx, uint32_t tgid, const struct ftbpf_proc *p)
{
	struct agent *a = ctx;
	struct proc_stat st;
	struct rank *k;

	if (!(p->flags & FTBPF_PROC_RANK)) {
		/* a child that ended while no agent ran: nobody needs its entry any more */
		if (p->flags & FTBPF_PROC_EXITED)
			tracker_proc_delete(a->tr, tgid);
		return 0;
	}
	k = ranks_add(&a->ranks, (int)tgid);
	if (!k)
		return -ENOMEM;
	k->uid = p->uid;
	k->id.rank = p->rank;
	k->id.local_rank = p->local_rank;
	k->id.world_size = p->world_size;
	k->id.source = p->source;
	memcpy(k->id.job, p->job, sizeof(k->id.job));
	memcpy(k->comm, p->comm, sizeof(k->comm));
	k->adopted_ns = p->adopted_ns;
	if (!(p->flags & FTBPF_PROC_EXITED)) {
		/* Same process? start times agree within a clock tick. */
		if (procfs_stat((int)tgid, -1, &st) == 0 &&
		    (st.start_ns > p->start_ns ? st.start_ns - p->start_ns
					       : p->start_ns - st.start_ns) < 20000000ull)
			k->pidfd = pidfd_open_((int)tgid);
		if (k->pidfd >= 0)
			tracker_slot_open(a->tr, tgid, &k->slot_fd, &k->slot);
	} else {
		k->exit_reported = 1; /* the earlier agent (or the log replay) reported it */
	}
	ranks_job(&a->ranks, k->id.job);
	adopt_event(a, k, "resume", !!(p->flags & FTBPF_PROC_EXITED));
	return 0;
}

/* ---- ring-buffer events ---- */
static void exit_fields(struct json_object *o, int status, uint32_t sender, const char *scomm)
{
	int sig = status & 0x7f;
	const char *n = sig ? config_signal_name(sig) : NULL;

	if (sig) {
		json_object_object_add(o, "exit_code", NULL);
		jint(o, "signal", sig);
		jstr(o, "signal_name", n);
		jbool(o, "core_dumped", !!(status & 0x80));
	} else {
		jint(o, "exit_code", (status >> 8) & 0xff);
		json_object_object_add(o, "signal", NULL);
	}
	if (sig && sender) {
		jint(o, "sender_pid", sender);
		jstr(o, "sender_comm", scomm);
	} else {
		json_object_object_add(o, "sender_pid", NULL);
		json_object_object_add(o, "sender_comm", NULL);
	}
}

static void on_event(void *ctx, const struct ftbpf_event *e)
{
	struct agent *a = ctx;
	struct rank *k = ranks_find(&a->ranks, (int)e->tgid);
	struct json_object *o;
	char comm[17], scomm[17];

	a->cnt.events++;
	snprintf(comm, sizeof(comm), "%s", e->comm);
	snprintf(scomm, sizeof(scomm), "%s", e->sender_comm);
	switch (e->type) {
	case FTBPF_EV_EXEC:
		if (k) {
			memcpy(k->comm, comm, sizeof(k->comm));
			return;
		}
		if (!e->flags) {
			adopt(a, (int)e->tgid, "exec");
		} else { /* a rank's child ran a new program: keep its name current */
			struct ftbpf_proc p;

			if (tracker_proc_get(a->tr, e->tgid, &p) == 0) {
				memcpy(p.comm, e->comm, sizeof(p.comm));
				tracker_proc_put(a->tr, e->tgid, &p);
			}
		}
		return;
	case FTBPF_EV_FORK: {
		struct ftbpf_proc p;

		if (tracker_proc_get(a->tr, e->tgid, &p) < 0)
			return;
		o = ev_new("child");
		jint(o, "pid", e->tgid);
		jint(o, "ppid", e->ppid);
		jint(o, "owner_pid", p.owner);
		jint(o, "rank", p.rank);
		jstr(o, "job", p.job);
		jint(o, "uid", p.uid);
		eventlog_emit(a->el, o);
		return;
	}
	case FTBPF_EV_EXIT:
		if (timer_forget_pid(a, (int)e->tgid))
			timer_rearm(a);
		if (k) {
			rank_drop_slot(a, k);
			k->s.exited = 1;
			k->s.exit_code = e->code;
			k->s.exit_ns = e->ts_ns;
			k->s.sender_pid = e->sender_pid;
			memcpy(k->s.sender_comm, scomm, sizeof(k->s.sender_comm));
			k->exit_reported = 1;
			o = ev_new("exit");
			ev_rank_ids(o, k);
		} else {
			struct ftbpf_proc p;

			if (tracker_proc_get(a->tr, e->tgid, &p) < 0)
				return;
			o = ev_new("child_exit");
			jint(o, "pid", e->tgid);
			jint(o, "owner_pid", p.owner);
			jint(o, "rank", p.rank);
			jstr(o, "job", p.job);
			jint(o, "uid", p.uid);
			jstr(o, "comm", comm);
			tracker_proc_delete(a->tr, e->tgid);
		}
		exit_fields(o, e->code, e->sender_pid, scomm);
		eventlog_emit(a->el, o);
		return;
	case FTBPF_EV_SIGNAL:
	case FTBPF_EV_DELIVER: {
		struct rank_sig rs = {.ts_ns = e->ts_ns,
				      .sig = e->sig,
				      .delivered = e->type == FTBPF_EV_DELIVER,
				      .sender_pid = e->sender_pid};
		struct ftbpf_proc p;
		uint32_t uid = 0;

		memcpy(rs.sender_comm, scomm, sizeof(rs.sender_comm));
		if (k) {
			rank_add_signal(k, &rs);
			uid = k->uid;
		} else if (tracker_proc_get(a->tr, e->tgid, &p) == 0) {
			uid = p.uid;
		} else {
			return;
		}
		o = ev_new(e->type == FTBPF_EV_SIGNAL ? "signal" : "signal_delivered");
		jint(o, "pid", e->tgid);
		jint(o, "tid", e->tid);
		if (k) {
			jint(o, "rank", k->id.rank);
			jstr(o, "job", k->id.job);
		}
		jint(o, "uid", uid);
		jint(o, "signal", e->sig);
		jstr(o, "signal_name", config_signal_name(e->sig));
		jint(o, "si_code", e->code);
		if (e->type == FTBPF_EV_SIGNAL) {
			jint(o, "sender_pid", e->sender_pid);
			jstr(o, "sender_comm", scomm);
			jint(o, "result", e->result);
		}
		eventlog_emit(a->el, o);
		return;
	}
	case FTBPF_EV_TIMER: {
		char nm[32], scope[FTBPF_SLOT_SCOPE_LEN + 1];

		memcpy(scope, e->filename, FTBPF_SLOT_SCOPE_LEN);
		scope[FTBPF_SLOT_SCOPE_LEN] = 0;
		o = ev_new("timer_expired");
		jint(o, "pid", e->tgid);
		jint(o, "tid", e->tid);
		if (k) {
			jint(o, "rank", k->id.rank);
			jstr(o, "job", k->id.job);
			jint(o, "uid", k->uid);
		}
		jstr(o, "comm", comm);
		jstr(o, "scope", scope);
		jstr(o, "source", "slot");
		jstr(o, "enforced_by", "kernel");
		jint(o, "signal", e->sig);
		jstr(o, "signal_name", config_signal_name(e->sig));
		jdbl(o, "late_ms", e->result / 1000.0);
		jstr(o, "syscall", syscalls_format(e->code, nm, sizeof(nm)));
		jstr(o, "result", "sent");
		if (a->cfg.timer_escalate) /* the kernel sent SIGTERM; SIGKILL follows the grace */
			escalate_later(a, (int)e->tgid, 0);
		eventlog_emit(a->el, o);
		a->tm.expired++;
		timer_rearm(a);
		return;
	}
	case FTBPF_EV_OOM:
		o = ev_new("oom_victim");
		jint(o, "pid", e->tgid);
		if (k) {
			jint(o, "rank", k->id.rank);
			jstr(o, "job", k->id.job);
			jint(o, "uid", k->uid);
		}
		eventlog_emit(a->el, o);
		return;
	}
}

/* ---- sampling ---- */
static char state_char(uint32_t st, int exit_state)
{
	if (exit_state & 0x20)
		return 'Z';
	if (exit_state & 0x10)
		return 'X';
	if (st == 0)
		return 'R';
	if (st & 0x4)
		return 'T';
	if (st & 0x8)
		return 't';
	if ((st & 0x2) && (st & 0x400))
		return 'I';
	if (st & 0x2)
		return 'D';
	return 'S';
}

static const struct ftbpf_task_snap *snap_find(const struct agent *a, uint32_t tid)
{
	for (size_t i = 0; i < a->nsnap; i++)
		if (a->snap[i].tid == tid)
			return &a->snap[i];
	return NULL;
}

static int count_one(void *ctx, int id)
{
	(void)id;
	(*(int *)ctx)++;
	return 0;
}

static void sample_rank(struct agent *a, struct rank *k)
{
	struct ftbpf_proc p;
	struct ftbpf_thread t;
	const struct ftbpf_task_snap *sn;
	struct proc_stat st;

	k->s.pid = k->pid;
	k->s.rank = k->id.rank;
	k->s.adopted_ns = k->adopted_ns;
	if (tracker_proc_get(a->tr, k->pid, &p) == 0 && (p.flags & FTBPF_PROC_EXITED) &&
	    !k->s.exited) {
		/* exited while no agent consumed the event (restart) */
		k->s.exited = 1;
		k->s.exit_code = p.exit_code;
		k->s.exit_ns = p.exit_ns;
		if ((p.exit_code & 0x7f) && (int)p.fatal_sig == (p.exit_code & 0x7f)) {
			k->s.sender_pid = p.fatal_sender_pid;
			memcpy(k->s.sender_comm, p.fatal_sender_comm, sizeof(k->s.sender_comm));
		}
	}
	if (k->s.exited)
		return;
	if (tracker_thread_get(a->tr, k->pid, &t) == 0) {
		k->s.cur_nr = t.cur_nr;
		k->s.enter_ns = t.enter_ns;
		k->s.last_exit_ns = t.last_exit_ns;
		k->s.progress_ns = t.progress_ns;
		k->s.gpu_since_ns = t.gpu_since_ns;
		k->s.gpu_req = t.gpu_req;
		k->s.api = t.api;
		k->s.api_since_ns = t.api_since_ns;
		k->s.api_seq = t.api_seq;
		k->api_calls = t.api_calls;
		k->syscalls = t.syscalls;
		k->progress = t.progress;
	}
	if (k->slot) { /* ftbpf_ping() from the client library is progress too */
		uint64_t ping = __atomic_load_n(&k->slot->ping_ns, __ATOMIC_RELAXED);

		if (ping > k->s.progress_ns && ping <= now_ns())
			k->s.progress_ns = ping;
	}
	k->s.cpu_valid = 0;
	k->s.wchan[0] = 0;
	sn = snap_find(a, k->pid);
	if (sn) {
		k->s.task_state = state_char(sn->state, sn->exit_state);
		k->s.cpu_ns = sn->utime_ns + sn->stime_ns;
		k->s.cpu_valid = 1;
	} else if (procfs_stat(k->pid, k->pid, &st) == 0) {
		k->s.task_state = st.state;
		k->s.cpu_ns = st.utime_ns + st.stime_ns;
		k->s.cpu_valid = 1;
	} else if (procfs_stat(k->pid, -1, &st) < 0) {
		/* gone without an exit event (should not happen; events lost) */
		k->s.exited = 1;
		k->s.exit_ns = now_ns();
		return;
	}
	if (k->s.task_state == 'D' || (k->s.cur_nr >= 0 && k->d.state == RS_BLOCKED))
		procfs_wchan(k->pid, k->pid, k->s.wchan, sizeof(k->s.wchan));
	k->nthreads = 0;
	if (tracker_features(a->tr)->task_iter)
		for (size_t i = 0; i < a->nsnap; i++)
			k->nthreads += a->snap[i].tgid == (uint32_t)k->pid;
	else
		procfs_foreach_pid(k->pid, count_one, &k->nthreads);
}

static struct json_object *kstack_json(struct agent *a, int pid, int tid)
{
	struct json_object *arr = json_object_new_array();
	const struct ftbpf_task_snap *sn = NULL;
	char buf[4096], sym[160];

	for (size_t i = 0; i < a->nsnap; i++)
		if (a->snap[i].tid == (uint32_t)tid && a->snap[i].nr_stack > 0)
			sn = &a->snap[i];
	if (sn && ksyms_get(a)) {
		for (int i = 0; i < sn->nr_stack && i < FTBPF_STACK_DEPTH; i++)
			json_object_array_add(arr, json_object_new_string(ksyms_format(
						       a->ksyms, sn->stack[i], sym, sizeof(sym))));
		return arr;
	}
	if (procfs_kstack(pid, tid, buf, sizeof(buf)) == 0) {
		char *save, *line = strtok_r(buf, "\n", &save);

		for (; line; line = strtok_r(NULL, "\n", &save)) {
			char *sp = strchr(line, ' ');

			json_object_array_add(arr, json_object_new_string(sp ? sp + 1 : line));
		}
	}
	return arr;
}

/* One thread of a rank: state, syscall in flight, wait channel, kernel stack. */
static struct json_object *thread_json(struct agent *a, const struct rank *k, int tid, char state,
				       double cpu_s, const char *comm, uint64_t now)
{
	struct json_object *t = json_object_new_object();
	struct ftbpf_thread tt;
	char w[64] = "", nm[32];

	jint(t, "tid", tid);
	jstr(t, "comm", comm);
	json_object_object_add(t, "state", json_object_new_string_len(&state, 1));
	jdbl(t, "cpu_s", cpu_s);
	if (tracker_thread_get(a->tr, (uint32_t)tid, &tt) == 0) {
		jstr(t, "syscall",
		     tt.cur_nr >= 0 ? syscalls_format(tt.cur_nr, nm, sizeof(nm)) : NULL);
		jdbl(t, "in_syscall_s", tt.cur_nr >= 0 ? secs(now - tt.enter_ns) : 0);
		jint(t, "syscalls", (int64_t)tt.syscalls);
		jdbl(t, "last_exit_s_ago", tt.last_exit_ns ? secs(now - tt.last_exit_ns) : -1);
	}
	procfs_wchan(k->pid, tid, w, sizeof(w));
	jstr(t, "wchan", *w ? w : NULL);
	json_object_object_add(t, "kernel_stack", kstack_json(a, k->pid, tid));
	return t;
}

struct task_ctx {
	struct agent *a;
	const struct rank *k;
	uint64_t now;
	struct json_object *arr;
};

static int proc_thread_one(void *ctx, int tid)
{
	struct task_ctx *c = ctx;
	struct proc_stat st;

	if (procfs_stat(c->k->pid, tid, &st) == 0)
		json_object_array_add(c->arr, thread_json(c->a, c->k, tid, st.state,
							  secs(st.utime_ns + st.stime_ns), st.comm,
							  c->now));
	return 0;
}

/* Replace the task snapshot (with kernel stacks when asked); kept as is without iterators. */
static void refresh_snapshot(struct agent *a, int stacks)
{
	struct ftbpf_task_snap *snap = NULL;
	size_t n = 0;

	if (tracker_snapshot(a->tr, stacks, &snap, &n) < 0)
		return;
	free(a->snap);
	a->snap = snap;
	a->nsnap = n;
}

/* Every thread of a live rank, from the current snapshot (refreshed with stacks by the
 * caller), or from /proc without task iterators. */
static struct json_object *threads_json(struct agent *a, const struct rank *k, uint64_t now)
{
	struct task_ctx c = {a, k, now, json_object_new_array()};

	if (k->s.exited)
		return c.arr;
	if (!tracker_features(a->tr)->task_iter) {
		procfs_foreach_pid(k->pid, proc_thread_one, &c);
		return c.arr;
	}
	for (size_t i = 0; i < a->nsnap; i++) {
		const struct ftbpf_task_snap *s = &a->snap[i];

		if (s->tgid == (uint32_t)k->pid)
			json_object_array_add(
			    c.arr,
			    thread_json(a, k, (int)s->tid, state_char(s->state, s->exit_state),
					secs(s->utime_ns + s->stime_ns), s->comm, now));
	}
	return c.arr;
}

/* The probed CUDA/NCCL call in flight and the rank's NCCL communicators. */
static void gpu_call_json(struct json_object *o, const struct rank *k, uint64_t now)
{
	struct json_object *arr = json_object_new_array();
	int live = !k->s.exited && k->s.api;

	jstr(o, "gpu_call", live ? gpuapi_name(k->s.api) : NULL);
	jdbl(o, "gpu_call_s", live && now > k->s.api_since_ns ? secs(now - k->s.api_since_ns) : 0);
	jint(o, "gpu_api_calls", (int64_t)k->api_calls);
	for (int i = 0; i < k->s.ncomm; i++) {
		const struct det_comm *c = &k->s.comm[i];
		struct json_object *co = json_object_new_object();
		char id[24];

		snprintf(id, sizeof(id), "%016llx", (unsigned long long)c->id);
		jstr(co, "comm", c->id ? id : NULL);
		jint(co, "rank", c->rank);
		jint(co, "nranks", c->nranks);
		jint(co, "seq", (int64_t)c->seq);
		jstr(co, "last_op", c->seq ? gpuapi_name(c->api) : NULL);
		jint(co, "last_count", (int64_t)c->count);
		jstr(co, "last_dtype", c->seq ? gpuapi_dtype_name(c->dtype) : NULL);
		jdbl(co, "last_s_ago",
		     c->last_ns && now > c->last_ns ? secs(now - c->last_ns) : -1);
		json_object_array_add(arr, co);
	}
	json_object_object_add(o, "nccl", arr);
}

/* The deadline of a slot timer that is armed, else 0 (the slot is shared with the process and
 * the kernel: read with atomic loads). */
static uint64_t slot_timer_armed(const struct ftbpf_slot_timer *t)
{
	uint64_t d = __atomic_load_n(&t->deadline_ns, __ATOMIC_RELAXED);

	return __atomic_load_n(&t->state, __ATOMIC_RELAXED) == FTBPF_TS_ARMED ? d : 0;
}

/* Progress reported by the client library (ping, step) and the rank's armed countdown timers
 * (slot and agent-held): how many, and the time left on the earliest. */
static void rank_client_json(struct json_object *o, struct agent *a, const struct rank *k,
			     uint64_t now)
{
	uint64_t ping = 0, step_ns = 0, step = 0, earliest = 0;
	int ntimers = 0;

	if (k->slot && !k->s.exited) {
		ping = __atomic_load_n(&k->slot->ping_ns, __ATOMIC_RELAXED);
		step_ns = __atomic_load_n(&k->slot->step_ns, __ATOMIC_RELAXED);
		step = __atomic_load_n(&k->slot->step, __ATOMIC_RELAXED);
		for (int j = 0; j < FTBPF_SLOT_TIMERS; j++) {
			uint64_t d = slot_timer_armed(&k->slot->timers[j]);

			if (!d)
				continue;
			ntimers++;
			if (!earliest || d < earliest)
				earliest = d;
		}
	}
	for (int i = 0; i < a->tm.n && !k->s.exited; i++)
		if (a->tm.v[i].pid == k->pid) {
			ntimers++;
			if (!earliest || a->tm.v[i].deadline_ns < earliest)
				earliest = a->tm.v[i].deadline_ns;
		}
	jdbl(o, "ping_s_ago", ping && now > ping ? secs(now - ping) : -1);
	if (step_ns)
		jint(o, "step", (int64_t)step);
	else
		json_object_object_add(o, "step", NULL);
	jdbl(o, "step_s_ago", step_ns && now > step_ns ? secs(now - step_ns) : -1);
	jint(o, "timers", ntimers);
	if (ntimers)
		jdbl(o, "timer_left_s", earliest > now ? secs(earliest - now) : 0);
	else
		json_object_object_add(o, "timer_left_s", NULL);
}

static struct json_object *rank_json(struct agent *a, const struct rank *k, uint64_t now)
{
	struct json_object *o = json_object_new_object();
	char nm[32];

	ev_rank_ids(o, k);
	jint(o, "local_rank", k->id.local_rank);
	jint(o, "world_size", k->id.world_size);
	jstr(o, "source", ident_source_name(k->id.source));
	jstr(o, "state", det_state_name(k->d.state));
	jstr(o, "reason", k->d.reason);
	jdbl(o, "state_for_s", secs(now > k->d.state_since_ns ? now - k->d.state_since_ns : 0));
	jstr(o, "syscall",
	     k->d.syscall >= 0 && k->d.state != RS_GPU_SYNC && k->d.state != RS_NCCL
		 ? syscalls_format(k->d.syscall, nm, sizeof(nm))
		 : NULL);
	gpu_call_json(o, k, now);
	jstr(o, "wchan", *k->s.wchan ? k->s.wchan : NULL);
	jdbl(o, "no_progress_s", secs(k->d.no_progress_ns));
	jdbl(o, "cpu", k->d.cpu_frac);
	jbool(o, "hung", k->d.hung);
	jbool(o, "culprit", k->d.culprit);
	jint(o, "syscalls", (int64_t)k->syscalls);
	jint(o, "progress", (int64_t)k->progress);
	jint(o, "threads", k->nthreads);
	jdbl(o, "adopted_s_ago", secs(now - k->adopted_ns));
	{
		uint64_t gn, glast;

		rank_gpu(a, k, &gn, &glast);
		jint(o, "gpu_ioctls", (int64_t)gn);
		jdbl(o, "gpu_last_s_ago", glast && now > glast ? secs(now - glast) : -1);
	}
	rank_client_json(o, a, k, now);
	jbool(o, "exited", k->s.exited);
	if (k->s.exited) {
		exit_fields(o, k->s.exit_code, k->s.sender_pid, k->s.sender_comm);
	} else {
		json_object_object_add(o, "exit_code", NULL);
		json_object_object_add(o, "signal", NULL);
		json_object_object_add(o, "sender_pid", NULL);
		json_object_object_add(o, "sender_comm", NULL);
	}
	(void)a;
	return o;
}

static struct json_object *job_json(const struct job *j, const struct ranks *rs)
{
	struct json_object *o = json_object_new_object(), *c = json_object_new_array(),
			   *cr = json_object_new_array();
	int n = 0;

	jstr(o, "job", j->id);
	for (int i = 0; i < rs->n; i++)
		if (!strcmp(rs->v[i]->id.job, j->id)) {
			n++;
			if (rs->v[i]->d.culprit) {
				json_object_array_add(c, json_object_new_int(rs->v[i]->pid));
				json_object_array_add(cr, json_object_new_int(rs->v[i]->id.rank));
			}
		}
	jint(o, "ranks", n);
	jint(o, "live", j->res.live);
	jint(o, "exited", j->res.exited);
	jstr(o, "state",
	     j->res.hung     ? "hung"
	     : j->res.failed ? "failed"
	     : j->res.live   ? "ok"
			     : "finished");
	jbool(o, "hung", j->res.hung);
	jbool(o, "failed", j->res.failed);
	jdbl(o, "no_progress_s", secs(j->res.no_progress_ns));
	json_object_object_add(o, "culprits", c);
	json_object_object_add(o, "culprit_ranks", cr);
	jstr(o, "why", j->res.hung || j->res.failed ? j->res.why : NULL);
	return o;
}

static void hang_report(struct agent *a, struct job *j, uint64_t now)
{
	struct json_object *o = ev_new("hang"), *arr = json_object_new_array();

	refresh_snapshot(a, 1); /* with kernel stacks, for the report */
	jstr(o, "job", j->id);
	jdbl(o, "no_progress_s", secs(j->res.no_progress_ns));
	jdbl(o, "soft_timeout_s", a->cfg.soft_timeout_s);
	jstr(o, "why", j->res.why);
	struct json_object *c = json_object_new_array(), *cr = json_object_new_array();
	for (int i = 0; i < a->ranks.n; i++) {
		struct rank *k = a->ranks.v[i];
		struct json_object *r;

		if (strcmp(k->id.job, j->id))
			continue;
		r = rank_json(a, k, now);
		if (!k->s.exited)
			json_object_object_add(r, "kernel_stack", kstack_json(a, k->pid, k->pid));
		if (k->d.culprit) /* every thread of the culprit, with its stack */
			json_object_object_add(r, "threads", threads_json(a, k, now));
		json_object_array_add(arr, r);
		if (k->d.culprit) {
			json_object_array_add(c, json_object_new_int(k->pid));
			json_object_array_add(cr, json_object_new_int(k->id.rank));
		}
		if (!json_object_object_get_ex(o, "uid", NULL))
			jint(o, "uid", k->uid);
	}
	json_object_object_add(o, "culprits", c);
	json_object_object_add(o, "culprit_ranks", cr);
	json_object_object_add(o, "ranks", arr);
	eventlog_emit(a->el, o);
	a->cnt.hangs++;
}

static void act_signal(struct agent *a, struct job *j, struct rank *k, int sig, const char *why)
{
	struct json_object *o = ev_new("action");
	int r = send_signal(k, sig);

	ev_rank_ids(o, k);
	jstr(o, "action", why);
	jint(o, "signal", sig);
	jstr(o, "signal_name", config_signal_name(sig));
	jstr(o, "result", r < 0 ? strerror(-r) : "sent");
	eventlog_emit(a->el, o);
	a->cnt.actions++;
	(void)j;
}

static void job_actions(struct agent *a, struct job *j, uint64_t now)
{
	int sig = a->cfg.soft_signal;

	if (j->res.failed && !j->failed_reported) {
		struct json_object *o = ev_new("job_failed");
		const struct rank *k = NULL;

		for (int i = 0; i < a->ranks.n && !k; i++)
			if (!strcmp(a->ranks.v[i]->id.job, j->id) && a->ranks.v[i]->d.culprit)
				k = a->ranks.v[i];
		j->failed_reported = 1;
		jstr(o, "job", j->id);
		jstr(o, "why", j->res.why);
		if (k) {
			jint(o, "culprit_pid", k->pid);
			jint(o, "culprit_rank", k->id.rank);
			jint(o, "uid", k->uid);
		}
		jint(o, "live", j->res.live);
		eventlog_emit(a->el, o);
	}
	if (!j->res.hung) {
		/* progress resumed; a job whose ranks are all gone did not recover, it ended */
		if (j->reported && j->res.live > 0) {
			struct json_object *o = ev_new("recovered");

			jstr(o, "job", j->id);
			eventlog_emit(a->el, o);
		}
		j->reported = j->soft_signalled = j->action_done = 0;
		return;
	}
	if (!j->reported) {
		j->reported = 1;
		j->hung_seen_ns = now;
		hang_report(a, j, now);
	}
	if (sig && !j->soft_signalled) {
		j->soft_signalled = 1;
		for (int i = 0; i < a->ranks.n; i++) {
			struct rank *k = a->ranks.v[i];

			if (!strcmp(k->id.job, j->id) && !k->s.exited &&
			    (a->cfg.soft_signal_all || k->d.culprit))
				act_signal(a, j, k, sig, "soft_timeout");
		}
	}
	if (!j->res.hard || j->action_done)
		return;
	j->action_done = 1;
	{
		struct json_object *o = ev_new("hard_timeout");

		jstr(o, "job", j->id);
		jstr(o, "action", config_action_name(a->cfg.action));
		jdbl(o, "no_progress_s", secs(j->res.no_progress_ns));
		for (int i = 0; i < a->ranks.n; i++)
			if (!strcmp(a->ranks.v[i]->id.job, j->id)) {
				jint(o, "uid", a->ranks.v[i]->uid);
				break;
			}
		eventlog_emit(a->el, o);
	}
	if (a->cfg.action == ACTION_REPORT)
		return;
	for (int i = 0; i < a->ranks.n; i++) {
		struct rank *k = a->ranks.v[i];

		if (strcmp(k->id.job, j->id) || k->s.exited)
			continue;
		if (a->cfg.action == ACTION_TERMINATE_CULPRIT && !k->d.culprit)
			continue;
		if (a->cfg.action == ACTION_KILL) {
			act_signal(a, j, k, SIGKILL, "hard_timeout");
		} else {
			/* A stopped rank cannot act on SIGTERM: continue it first (as NVRx does). */
			if (k->d.state == RS_STOPPED)
				send_signal(k, SIGCONT);
			act_signal(a, j, k, SIGTERM, "hard_timeout");
			escalate_later(a, k->pid, 1);
		}
	}
}

static void gc(struct agent *a, uint64_t now)
{
	for (int i = 0; i < a->ranks.n;) {
		struct rank *k = a->ranks.v[i];
		struct job *j = ranks_job(&a->ranks, k->id.job);

		if (k->s.exited && j && j->res.live == 0 &&
		    now - k->s.exit_ns > EXITED_RETENTION_NS) {
			rank_drop_slot(a, k);
			tracker_proc_delete(a->tr, k->pid);
			ranks_remove(&a->ranks, k->pid);
			continue;
		}
		i++;
	}
	ranks_jobs_prune(&a->ranks);
}

static int comm_one(void *ctx, const struct ftbpf_comm_key *key, const struct ftbpf_comm *c)
{
	struct agent *a = ctx;
	struct rank *k = ranks_find(&a->ranks, (int)key->tgid);
	struct det_comm *d;

	if (!k || k->s.exited) {
		if (!tracker_is_tracked(a->tr, key->tgid))
			tracker_comm_delete(a->tr, key); /* its process is gone */
		return 0;
	}
	if (k->s.ncomm == DET_MAX_COMMS)
		return 0;
	d = &k->s.comm[k->s.ncomm++];
	d->id = c->flags & FTBPF_COMM_NO_ID ? 0 : c->id;
	d->seq = c->seq;
	d->last_ns = c->last_ns;
	d->count = c->count;
	d->dtype = c->dtype;
	d->api = c->api;
	d->rank = c->rank;
	d->nranks = c->nranks;
	return 0;
}

/* Probe the CUDA/NCCL libraries of ranks that mapped new code; collect NCCL communicators. */
static void gpu_scan(struct agent *a)
{
	for (int i = 0; i < a->ranks.n; i++) {
		struct rank *k = a->ranks.v[i];
		int dirty = tracker_maps_dirty_take(a->tr, (uint32_t)k->pid);

		k->s.ncomm = 0;
		if (!a->gp || k->s.exited || (k->maps_scanned && !dirty))
			continue;
		k->maps_scanned = 1;
		gpuprobe_scan(a->gp, k->pid);
	}
	tracker_foreach_comm(a->tr, comm_one, a);
}

/* Heartbeat mesh: peer events into the event log; our jobs' summary out to the cluster. */
static void mesh_event(void *ctx, const char *type, const struct swim_member *m)
{
	struct agent *a = ctx;
	struct json_object *o = ev_new(type);
	char addr[32];

	mesh_format_addr(&m->addr, addr, sizeof(addr));
	jstr(o, "peer", addr);
	jstr(o, "peer_state", swim_state_name(m->state));
	jint(o, "incarnation", m->incarnation);
	if (m->health) {
		jint(o, "hung_ranks", m->health->hung);
		jint(o, "dead_ranks", m->health->dead);
	}
	eventlog_emit(a->el, o);
}

static void mesh_summary(struct agent *a)
{
	struct mesh_health h = {.culprit_rank = -1};

	for (int i = 0; i < a->ranks.n; i++) {
		const struct rank *k = a->ranks.v[i];

		if (h.ranks < 0xffff)
			h.ranks++;
		if (k->s.exited) {
			h.dead += (k->s.exit_code & 0x7f) || ((k->s.exit_code >> 8) & 0xff);
			continue;
		}
		h.hung += k->d.hung;
		h.running += k->d.state == RS_RUNNING;
		h.blocked += k->d.state != RS_RUNNING;
		if (k->d.culprit && h.culprit_rank < 0)
			h.culprit_rank = k->id.rank;
	}
	h.jobs = (uint16_t)(a->ranks.njobs > 0xffff ? 0xffff : a->ranks.njobs);
	mesh_set_health(a->mesh, &h);
}

static void scan(struct agent *a)
{
	uint64_t now;

	a->cnt.scans++;
	refresh_snapshot(a, 0);
	gpu_scan(a);
	now = now_ns();
	for (int i = 0; i < a->ranks.n; i++) {
		sample_rank(a, a->ranks.v[i]);
		det_rank_update(&a->ranks.v[i]->d, &a->ranks.v[i]->s, now, &a->dp);
	}
	for (int ji = 0; ji < a->ranks.njobs; ji++) {
		struct job *j = &a->ranks.jobs[ji];
		struct det_rank d[256];
		struct det_sample s[256];
		struct rank *members[256];
		int m = 0;

		for (int i = 0; i < a->ranks.n && m < 256; i++)
			if (!strcmp(a->ranks.v[i]->id.job, j->id)) {
				members[m] = a->ranks.v[i];
				d[m] = members[m]->d;
				s[m] = members[m]->s;
				m++;
			}
		det_job_eval(d, s, m, now, &a->dp, &j->res);
		for (int i = 0; i < m; i++) {
			members[i]->d.hung = d[i].hung;
			members[i]->d.culprit = d[i].culprit;
		}
		job_actions(a, j, now);
	}
	timer_check(a);
	gc(a, now);
	if (a->mesh)
		mesh_summary(a);
}

/* ---- countdown timers ---- */
static uint64_t now_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* The pinned copy of the table, so that timers outlive an agent restart. */
static void timer_key(struct ftbpf_timer_key *k, int pid, const char *scope)
{
	memset(k, 0, sizeof(*k));
	k->pid = (uint32_t)pid;
	snprintf(k->scope, sizeof(k->scope), "%s", scope);
}

static void timer_persist(struct agent *a, int pid, const char *scope, uint64_t deadline, int sig,
			  uid_t uid, enum timer_source src)
{
	struct ftbpf_timer_key k;
	struct ftbpf_timer_val v = {
	    .deadline_ns = deadline, .sig = (uint32_t)sig, .uid = uid, .source = src};
	struct proc_stat st;

	if (procfs_stat(pid, -1, &st) == 0)
		v.start_ns = st.start_ns;
	timer_key(&k, pid, scope);
	tracker_timer_put(a->tr, &k, &v);
}

static void timer_unpersist(struct agent *a, int pid, const char *scope)
{
	struct ftbpf_timer_key k;

	timer_key(&k, pid, scope);
	tracker_timer_delete(a->tr, &k);
}

/* Drop every timer of pid, in memory and pinned. Returns how many. */
static int timer_forget_pid(struct agent *a, int pid)
{
	for (int i = 0; i < a->tm.n; i++)
		if (a->tm.v[i].pid == pid)
			timer_unpersist(a, pid, a->tm.v[i].scope);
	return timers_clear_pid(&a->tm, pid);
}

/* After a restart: re-arm the pinned timers whose process is still the same one. */
static int timer_restore_one(void *ctx, const struct ftbpf_timer_key *k,
			     const struct ftbpf_timer_val *v)
{
	struct agent *a = ctx;
	struct proc_stat st;
	char scope[TIMER_SCOPE_LEN];
	int pid = (int)k->pid, pidfd;

	memcpy(scope, k->scope, sizeof(scope));
	scope[sizeof(scope) - 1] = 0;
	if (procfs_stat(pid, -1, &st) < 0 ||
	    (st.start_ns > v->start_ns ? st.start_ns - v->start_ns : v->start_ns - st.start_ns) >
		20000000ull ||
	    (pidfd = pidfd_open_(pid)) < 0) {
		tracker_timer_delete(a->tr, k);
		return 0;
	}
	if (timers_acquire(&a->tm, pid, pidfd, v->uid, scope, v->deadline_ns, (int)v->sig,
			   (enum timer_source)v->source, now_ns()) < 0)
		close(pidfd);
	return 0;
}

/* Arm the timerfd at the earliest deadline: expiry is acted on when it happens, not at a scan. */
static uint64_t slots_next_deadline(const struct agent *a);

static void timer_rearm(struct agent *a)
{
	uint64_t d = timers_next_deadline(&a->tm), sd = slots_next_deadline(a);
	struct itimerspec its = {};

	/* slot deadlines are seen at the next scan, then acted on exactly as well */
	if (sd && (!d || sd < d))
		d = sd;
	for (int i = 0; i < a->npk; i++)
		if (!d || a->pk[i].at_ns < d)
			d = a->pk[i].at_ns;
	if (d) {
		its.it_value.tv_sec = (time_t)(d / NS);
		its.it_value.tv_nsec = (long)(d % NS);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(a->ttfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Escalation: SIGKILL pid (through a pidfd of its own) after the grace unless it is gone. */
static void escalate_later(struct agent *a, int pid, int rank)
{
	int fd;

	if (a->npk == (int)(sizeof(a->pk) / sizeof(a->pk[0]))) {
		log_warn("pid %d: too many pending SIGKILLs; its SIGTERM stands alone", pid);
		return;
	}
	fd = pidfd_open_(pid);
	if (fd < 0)
		return;
	a->pk[a->npk].pid = pid;
	a->pk[a->npk].pidfd = fd;
	a->pk[a->npk].rank = rank;
	a->pk[a->npk].at_ns = now_ns() + (uint64_t)(a->cfg.grace_s * 1e9);
	a->npk++;
}

static void escalate_due(struct agent *a, uint64_t now)
{
	for (int i = 0; i < a->npk;) {
		struct pending_kill *p = &a->pk[i];

		if (p->at_ns > now) {
			i++;
			continue;
		}
		if (p->rank) {
			struct rank *k = ranks_find(&a->ranks, p->pid);

			if (k && !k->s.exited)
				act_signal(a, NULL, k, SIGKILL, "grace_expired");
		} else if (syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0) == 0) {
			struct json_object *o = ev_new("action");

			jint(o, "pid", p->pid);
			jstr(o, "action", "timer_grace_expired");
			jint(o, "signal", SIGKILL);
			jstr(o, "signal_name", "KILL");
			jstr(o, "result", "sent");
			eventlog_emit(a->el, o);
		}
		close(p->pidfd);
		*p = a->pk[--a->npk];
	}
}

/* The signal an expiry sends: the timer's own, or SIGTERM first when escalating. */
static int expiry_signal(struct agent *a, int pid, int sig)
{
	if (!a->cfg.timer_escalate)
		return sig;
	escalate_later(a, pid, 0);
	return SIGTERM;
}

/* What the process is doing at its expiry: state, syscall in flight, wait channel, stack. */
static void timer_diagnosis(struct agent *a, struct json_object *o, int pid, uint64_t now)
{
	struct ftbpf_thread th;
	struct proc_stat st;
	char nm[32], w[64] = "", buf[4096];

	if (procfs_stat(pid, pid, &st) == 0) {
		json_object_object_add(o, "state", json_object_new_string_len(&st.state, 1));
		jstr(o, "comm", st.comm);
	}
	if (tracker_thread_get(a->tr, (uint32_t)pid, &th) == 0 && th.cur_nr >= 0) {
		jstr(o, "syscall", syscalls_format(th.cur_nr, nm, sizeof(nm)));
		jdbl(o, "in_syscall_s", secs(now - th.enter_ns));
	}
	procfs_wchan(pid, pid, w, sizeof(w));
	jstr(o, "wchan", *w ? w : NULL);
	if (procfs_kstack(pid, pid, buf, sizeof(buf)) == 0)
		jstr(o, "kernel_stack", buf);
}

/* Log what the process was doing, then reap it with the timer's signal (torch semantics). */
static void timer_fire(struct agent *a, int i, uint64_t now)
{
	struct timer *t = &a->tm.v[i];
	struct json_object *o = ev_new("timer_expired");
	int pid = t->pid, r;

	jint(o, "pid", pid);
	jint(o, "uid", t->uid);
	jstr(o, "scope", t->scope);
	jstr(o, "source", timers_source_name(t->source));
	jint(o, "signal", t->sig);
	jstr(o, "signal_name", config_signal_name(t->sig));
	jdbl(o, "late_ms", (double)(now - t->deadline_ns) / 1e6);
	jstr(o, "enforced_by", "agent");
	timer_diagnosis(a, o, pid, now);
	r = syscall(SYS_pidfd_send_signal, t->pidfd, expiry_signal(a, pid, t->sig), NULL, 0) < 0
		? -errno
		: 0;
	jstr(o, "result", r < 0 ? strerror(-r) : "sent");
	eventlog_emit(a->el, o);
	a->tm.expired++;
	timer_forget_pid(a, pid); /* a reaped worker's other timers go with it */
}

/* A slot timer that expired while its process made no syscall: the agent acts. */
static void slot_fire(struct agent *a, struct rank *k, struct ftbpf_slot_timer *t, uint64_t now)
{
	struct json_object *o = ev_new("timer_expired");
	char scope[FTBPF_SLOT_SCOPE_LEN + 1];
	int r;

	memcpy(scope, t->scope, FTBPF_SLOT_SCOPE_LEN);
	scope[FTBPF_SLOT_SCOPE_LEN] = 0;
	jint(o, "pid", k->pid);
	jint(o, "rank", k->id.rank);
	jstr(o, "job", k->id.job);
	jint(o, "uid", k->uid);
	jstr(o, "scope", scope);
	jstr(o, "source", "slot");
	jstr(o, "enforced_by", "agent");
	jint(o, "signal", (int)t->sig);
	jstr(o, "signal_name", config_signal_name((int)t->sig));
	jdbl(o, "late_ms", (double)(now - t->deadline_ns) / 1e6);
	timer_diagnosis(a, o, k->pid, now);
	r = send_signal(k, expiry_signal(a, k->pid, (int)t->sig));
	jstr(o, "result", r < 0 ? strerror(-r) : "sent");
	eventlog_emit(a->el, o);
	a->tm.expired++;
}

/* Expired armed timers in the slots (one reap per process per check). */
static void slot_check(struct agent *a, uint64_t now)
{
	for (int i = 0; i < a->ranks.n; i++) {
		struct rank *k = a->ranks.v[i];
		struct ftbpf_slot *s = k->slot;
		uint64_t e;

		if (!s || k->s.exited)
			continue;
		e = __atomic_load_n(&s->earliest_ns, __ATOMIC_ACQUIRE);
		if (!e || e > now)
			continue;
		for (int j = 0; j < FTBPF_SLOT_TIMERS; j++) {
			struct ftbpf_slot_timer *t = &s->timers[j];
			uint64_t armed = FTBPF_TS_ARMED;
			uint64_t d = __atomic_load_n(&t->deadline_ns, __ATOMIC_ACQUIRE);

			if (!d || d > now ||
			    !__atomic_compare_exchange_n(&t->state, &armed, FTBPF_TS_FIRED, 0,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				continue;
			slot_fire(a, k, t, now);
			break;
		}
	}
}

/* Earliest armed deadline over every slot (0 none). */
static uint64_t slots_next_deadline(const struct agent *a)
{
	uint64_t d = 0;

	for (int i = 0; i < a->ranks.n; i++) {
		const struct rank *k = a->ranks.v[i];
		uint64_t e;

		if (!k->slot || k->s.exited)
			continue;
		e = __atomic_load_n(&k->slot->earliest_ns, __ATOMIC_ACQUIRE);
		if (e && (!d || e < d))
			d = e;
	}
	return d;
}

static void rank_drop_slot(struct agent *a, struct rank *k)
{
	if (!k->slot)
		return;
	tracker_slot_remove(a->tr, (uint32_t)k->pid, k->slot_fd, k->slot);
	k->slot = NULL;
	k->slot_fd = -1;
}

static void timer_check(struct agent *a)
{
	uint64_t now = now_ns();
	int i;

	while ((i = timers_first_expired(&a->tm, now)) >= 0)
		timer_fire(a, i, now);
	slot_check(a, now);
	escalate_due(a, now);
	/* timers of processes that are gone (not all are tracked ranks) */
	for (i = 0; i < a->tm.n;) {
		if (syscall(SYS_pidfd_send_signal, a->tm.v[i].pidfd, 0, NULL, 0) < 0 &&
		    errno == ESRCH) {
			timer_forget_pid(a, a->tm.v[i].pid);
			i = 0;
			continue;
		}
		i++;
	}
	timer_rearm(a);
}

/* Arm or release for a target pid on behalf of uid; checks ownership. */
static int timer_request(struct agent *a, int pid, uid_t requester, const char *scope, int release,
			 uint64_t deadline, int sig, enum timer_source src)
{
	uid_t owner;
	int pidfd, r;

	if (procfs_uid(pid, &owner) < 0)
		return -ESRCH;
	if (requester != 0 && owner != requester)
		return -EPERM;
	if (release) {
		/* after expiry: a no-op, as in torch */
		if (timers_release(&a->tm, pid, scope) == 0)
			timer_unpersist(a, pid, scope);
		timer_rearm(a);
		return 0;
	}
	pidfd = pidfd_open_(pid);
	if (pidfd < 0)
		return -errno;
	r = timers_acquire(&a->tm, pid, pidfd, owner, scope, deadline, sig, src, now_ns());
	if (r < 0)
		close(pidfd);
	else
		timer_persist(a, pid, scope, deadline, sig, owner, src);
	timer_rearm(a);
	return r;
}

static void fifo_line(struct agent *a, const char *line, size_t len)
{
	struct fifo_request fr;
	char err[160];
	uint64_t deadline = 0;
	double left;
	int r;

	a->fifo_cnt.lines++;
	r = fifo_parse_line(line, len, &fr, err, sizeof(err));
	if (r < 0) {
		a->fifo_cnt.bad++;
		log_debug("timer fifo: rejected request: %s", err);
		return;
	}
	if (!fr.release) {
		left = fr.expiration_time - (double)now_real_ns() / 1e9;
		deadline = now_ns() + (left > 0 ? (uint64_t)(left * 1e9) : 0);
	}
	/* requests may only target processes of the FIFO's owner (root's FIFO: any) */
	r = timer_request(a, fr.pid, a->fifo_uid, fr.scope, fr.release, deadline, fr.sig,
			  TIMER_SRC_FIFO);
	if (r == -EPERM)
		a->fifo_cnt.denied++;
	if (r < 0)
		log_debug("timer fifo: pid %d scope %s: %s", fr.pid, fr.scope, strerror(-r));
}

static void fifo_read(struct agent *a)
{
	for (;;) {
		ssize_t n =
		    read(a->fifo_fd, a->fifo_buf + a->fifo_len, sizeof(a->fifo_buf) - a->fifo_len);
		size_t start = 0;

		if (n <= 0)
			return;
		a->fifo_len += n;
		for (size_t i = 0; i < a->fifo_len; i++) {
			if (a->fifo_buf[i] != '\n')
				continue;
			if (!a->fifo_skip)
				fifo_line(a, a->fifo_buf + start, i - start);
			a->fifo_skip = 0;
			start = i + 1;
		}
		memmove(a->fifo_buf, a->fifo_buf + start, a->fifo_len - start);
		a->fifo_len -= start;
		if (a->fifo_len == sizeof(a->fifo_buf)) { /* no newline in PIPE_BUF bytes */
			if (!a->fifo_skip)
				a->fifo_cnt.oversized++;
			a->fifo_skip = 1;
			a->fifo_len = 0;
		}
	}
}

static int fifo_open(struct agent *a, char *err, size_t errlen)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_FIFO};
	struct stat st;

	if (mkfifo(a->cfg.timer_fifo, 0600) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "create timer FIFO %s: %s", a->cfg.timer_fifo,
			 strerror(errno));
		return -errno;
	}
	/* O_RDWR: we are a writer too, so the FIFO never reports end-of-file between clients */
	a->fifo_fd = open(a->cfg.timer_fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (a->fifo_fd < 0 || fstat(a->fifo_fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		snprintf(err, errlen, "open timer FIFO %s: %s", a->cfg.timer_fifo,
			 a->fifo_fd < 0 ? strerror(errno) : "not a FIFO");
		return -EINVAL;
	}
	a->fifo_uid = st.st_uid;
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->fifo_fd, &ev);
	return 0;
}

/* ---- control requests ---- */
static struct json_object *resp_ok(void)
{
	struct json_object *o = json_object_new_object();

	jbool(o, "ok", 1);
	return o;
}

static struct json_object *resp_err(const char *code, const char *msg)
{
	struct json_object *o = json_object_new_object();

	jbool(o, "ok", 0);
	jstr(o, "code", code);
	jstr(o, "error", msg);
	return o;
}

static struct json_object *agent_json(struct agent *a, uint64_t now)
{
	const struct tracker_features *f = tracker_features(a->tr);
	const struct ctl_counters *cc = ctl_counters(a->ctl);
	struct json_object *o = json_object_new_object(), *c = json_object_new_object(),
			   *ft = json_object_new_object();

	jint(o, "pid", getpid());
	jstr(o, "version", FTBPF_VERSION);
	jdbl(o, "uptime_s", secs(now - a->start_ns));
	jdbl(o, "soft_timeout_s", a->cfg.soft_timeout_s);
	jdbl(o, "hard_timeout_s", a->cfg.hard_timeout_s);
	jstr(o, "action", config_action_name(a->cfg.action));
	jstr(ft, "programs", f->tp_btf ? "tp_btf" : "raw_tp");
	jbool(ft, "task_iter", f->task_iter);
	jbool(ft, "oom", f->oom);
	jbool(ft, "resumed", f->resumed);
	jint(ft, "syscall_clock_hz", f->hz);
	{
		struct json_object *g = json_object_new_array();

		for (int i = 0; i < a->ngpu; i++)
			json_object_array_add(g, json_object_new_int((int)a->gpu_majors[i]));
		json_object_object_add(ft, "gpu_majors", g);
	}
	jint(ft, "pid_max", f->pid_max);
	jbool(ft, "uprobes", f->uprobes);
	jbool(ft, "gpu_probes", a->gp != NULL);
	{
		struct json_object *libs = json_object_new_array();
		struct gpuprobe_lib_info li;

		for (int i = 0; gpuprobe_info(a->gp, i, &li) == 0; i++) {
			struct json_object *l = json_object_new_object();

			jstr(l, "path", li.path);
			jstr(l, "kind", li.kind == GPUAPI_LIB_CUDA ? "cuda" : "nccl");
			jint(l, "functions", li.probes);
			jstr(l, "error", li.err ? strerror(-li.err) : NULL);
			json_object_array_add(libs, l);
		}
		json_object_object_add(o, "gpu_libs", libs);
	}
	json_object_object_add(o, "features", ft);
	jint(c, "events", (int64_t)a->cnt.events);
	jint(c, "adopted", (int64_t)a->cnt.adopted);
	jint(c, "adopt_errors", (int64_t)a->cnt.adopt_errors);
	jint(c, "hangs", (int64_t)a->cnt.hangs);
	jint(c, "actions", (int64_t)a->cnt.actions);
	jint(c, "scans", (int64_t)a->cnt.scans);
	jint(c, "ringbuf_drops", (int64_t)tracker_stat(a->tr, FTBPF_STAT_RB_DROPS));
	jint(c, "thread_map_full", (int64_t)tracker_stat(a->tr, FTBPF_STAT_THREAD_FULL));
	jint(c, "proc_map_full", (int64_t)tracker_stat(a->tr, FTBPF_STAT_PROC_FULL));
	jint(c, "gpu_api_calls", (int64_t)tracker_stat(a->tr, FTBPF_STAT_API_CALLS));
	jint(c, "nccl_comm_map_full", (int64_t)tracker_stat(a->tr, FTBPF_STAT_COMM_FULL));
	jint(c, "ctl_accepted", (int64_t)cc->accepted);
	jint(c, "ctl_requests", (int64_t)cc->requests);
	jint(c, "ctl_bad_requests", (int64_t)cc->bad_requests);
	jint(c, "ctl_oversized", (int64_t)cc->oversized);
	jint(c, "ctl_truncated", (int64_t)cc->truncated);
	jint(c, "ctl_denied", (int64_t)cc->denied);
	jint(c, "ctl_dropped_slow", (int64_t)cc->dropped_slow);
	jint(c, "eventlog_write_errors", (int64_t)eventlog_write_errors(a->el));
	jint(c, "timers_active", a->tm.n);
	jint(c, "timers_acquired", (int64_t)a->tm.acquired);
	jint(c, "timers_released", (int64_t)a->tm.released);
	jint(c, "timers_expired", (int64_t)a->tm.expired);
	jint(c, "timers_rejected_full", (int64_t)a->tm.rejected_full);
	jint(c, "fifo_requests", (int64_t)a->fifo_cnt.lines);
	jint(c, "fifo_bad", (int64_t)a->fifo_cnt.bad);
	jint(c, "fifo_denied", (int64_t)a->fifo_cnt.denied);
	jint(c, "fifo_oversized", (int64_t)a->fifo_cnt.oversized);
	json_object_object_add(o, "counters", c);
	return o;
}

static int peer_may(const struct ctl_peer *p, uid_t owner)
{
	return p->uid == 0 || p->uid == owner;
}

static struct json_object *do_status(struct agent *a, const struct ctl_peer *peer)
{
	struct json_object *o = resp_ok(), *ranks = json_object_new_array(),
			   *jobs = json_object_new_array();
	uint64_t now = now_ns();

	json_object_object_add(o, "agent", agent_json(a, now));
	for (int j = 0; j < a->ranks.njobs; j++) {
		int vis = 0;

		for (int i = 0; i < a->ranks.n && !vis; i++)
			vis = !strcmp(a->ranks.v[i]->id.job, a->ranks.jobs[j].id) &&
			      peer_may(peer, a->ranks.v[i]->uid);
		if (vis)
			json_object_array_add(jobs, job_json(&a->ranks.jobs[j], &a->ranks));
	}
	for (int i = 0; i < a->ranks.n; i++)
		if (peer_may(peer, a->ranks.v[i]->uid))
			json_object_array_add(ranks, rank_json(a, a->ranks.v[i], now));
	json_object_object_add(o, "jobs", jobs);
	json_object_object_add(o, "ranks", ranks);
	json_object_object_add(o, "cluster", a->mesh ? mesh_json(a->mesh) : NULL);
	return o;
}

struct child_ctx {
	int owner;
	struct json_object *arr;
};

static int child_one(void *ctx, uint32_t tgid, const struct ftbpf_proc *p)
{
	struct child_ctx *c = ctx;
	struct json_object *o;

	if ((int)p->owner != c->owner || (p->flags & FTBPF_PROC_RANK))
		return 0;
	o = json_object_new_object();
	jint(o, "pid", tgid);
	jint(o, "ppid", p->ppid);
	jstr(o, "comm", p->comm);
	jbool(o, "exited", !!(p->flags & FTBPF_PROC_EXITED));
	json_object_array_add(c->arr, o);
	return 0;
}

static struct json_object *do_explain(struct agent *a, const struct ctl_request *req,
				      const struct ctl_peer *peer)
{
	struct rank *k = ranks_find(&a->ranks, req->pid);
	struct json_object *o, *th, *sigs, *job_ranks;
	struct ftbpf_proc p;
	struct child_ctx cc;
	uint64_t now = now_ns();

	if (!k && tracker_proc_get(a->tr, req->pid, &p) == 0)
		k = ranks_find(&a->ranks, (int)p.owner); /* a rank's child: explain its rank */
	if (!k)
		return resp_err("not_found", "no rank or rank child with that pid");
	if (!peer_may(peer, k->uid)) {
		ctl_count_denied(a->ctl);
		return resp_err("permission_denied", "that process belongs to another user");
	}
	o = resp_ok();
	json_object_object_add(o, "rank", rank_json(a, k, now));
	for (int j = 0; j < a->ranks.njobs; j++)
		if (!strcmp(a->ranks.jobs[j].id, k->id.job))
			json_object_object_add(o, "job", job_json(&a->ranks.jobs[j], &a->ranks));
	refresh_snapshot(a, 1);
	th = threads_json(a, k, now);
	json_object_object_add(o, "threads", th);
	cc.owner = k->pid;
	cc.arr = json_object_new_array();
	tracker_foreach_proc(a->tr, child_one, &cc);
	json_object_object_add(o, "children", cc.arr);
	sigs = json_object_new_array();
	for (int i = 0; i < k->nsig; i++) {
		struct json_object *s = json_object_new_object();

		jdbl(s, "s_ago", secs(now - k->sigs[i].ts_ns));
		jint(s, "signal", k->sigs[i].sig);
		jstr(s, "signal_name", config_signal_name(k->sigs[i].sig));
		jbool(s, "delivered", k->sigs[i].delivered);
		if (!k->sigs[i].delivered) {
			jint(s, "sender_pid", k->sigs[i].sender_pid);
			jstr(s, "sender_comm", k->sigs[i].sender_comm);
		}
		json_object_array_add(sigs, s);
	}
	json_object_object_add(o, "signals", sigs);
	job_ranks = json_object_new_array();
	for (int i = 0; i < a->ranks.n; i++)
		if (!strcmp(a->ranks.v[i]->id.job, k->id.job) && a->ranks.v[i] != k &&
		    peer_may(peer, a->ranks.v[i]->uid))
			json_object_array_add(job_ranks, rank_json(a, a->ranks.v[i], now));
	json_object_object_add(o, "job_ranks", job_ranks);
	return o;
}

static struct json_object *do_signal(struct agent *a, const struct ctl_request *req,
				     const struct ctl_peer *peer)
{
	struct rank *k = ranks_find(&a->ranks, req->pid);
	struct json_object *o;
	int r;

	if (!k || k->s.exited)
		return resp_err("not_found", "no live rank with that pid");
	if (!peer_may(peer, k->uid)) {
		ctl_count_denied(a->ctl);
		return resp_err("permission_denied", "that process belongs to another user");
	}
	r = send_signal(k, req->sig);
	o = ev_new("action");
	ev_rank_ids(o, k);
	jstr(o, "action", "client_signal");
	jint(o, "signal", req->sig);
	jint(o, "requester_pid", peer->pid);
	jint(o, "requester_uid", peer->uid);
	jstr(o, "result", r < 0 ? strerror(-r) : "sent");
	eventlog_emit(a->el, o);
	if (r < 0)
		return resp_err("failed", strerror(-r));
	return resp_ok();
}

/* One line of `ftbpf timers`. */
static struct json_object *timer_json(int pid, uid_t uid, const char *comm, const char *scope,
				      uint64_t deadline, uint64_t now, int sig, const char *source)
{
	struct json_object *x = json_object_new_object();

	jint(x, "pid", pid);
	jint(x, "uid", uid);
	jstr(x, "comm", comm);
	jstr(x, "scope", scope);
	jdbl(x, "time_left_s", deadline > now ? secs(deadline - now) : 0);
	jint(x, "signal", sig);
	jstr(x, "signal_name", config_signal_name(sig));
	jstr(x, "source", source);
	return x;
}

static struct json_object *do_timers(struct agent *a, const struct ctl_peer *peer)
{
	struct json_object *o = resp_ok(), *arr = json_object_new_array();
	uint64_t now = now_ns();

	for (int i = 0; i < a->tm.n; i++) {
		const struct timer *t = &a->tm.v[i];
		struct proc_stat st;

		if (!peer_may(peer, t->uid))
			continue;
		json_object_array_add(
		    arr, timer_json(t->pid, t->uid,
				    procfs_stat(t->pid, -1, &st) == 0 ? st.comm : NULL, t->scope,
				    t->deadline_ns, now, t->sig, timers_source_name(t->source)));
	}
	for (int i = 0; i < a->ranks.n; i++) {
		const struct rank *k = a->ranks.v[i];

		if (!k->slot || k->s.exited || !peer_may(peer, k->uid))
			continue;
		for (int j = 0; j < FTBPF_SLOT_TIMERS; j++) {
			const struct ftbpf_slot_timer *t = &k->slot->timers[j];
			char scope[FTBPF_SLOT_SCOPE_LEN + 1];
			uint64_t d = slot_timer_armed(t);

			if (!d)
				continue;
			memcpy(scope, t->scope, FTBPF_SLOT_SCOPE_LEN);
			scope[FTBPF_SLOT_SCOPE_LEN] = 0;
			json_object_array_add(arr, timer_json(k->pid, k->uid, k->comm, scope, d,
							      now, (int)t->sig,
							      timers_source_name(TIMER_SRC_SLOT)));
		}
	}
	json_object_object_add(o, "timers", arr);
	return o;
}

/* A process asks for its slot: adopt it (from its environment, else as the client says) and
 * pass it the slot's map fd. Only the caller itself can be registered (SO_PEERCRED). */
static struct json_object *do_register(struct agent *a, const struct ctl_request *req,
				       const struct ctl_peer *peer)
{
	struct rank *k = ranks_find(&a->ranks, peer->pid);
	struct json_object *o;
	int r;

	if (!k || k->s.exited) {
		adopt(a, peer->pid, "register");
		k = ranks_find(&a->ranks, peer->pid);
	}
	if (!k || k->s.exited) {
		struct rank_ident id = {.rank = req->rank >= 0 ? req->rank : 0,
					.local_rank = -1,
					.world_size = -1,
					.source = IDENT_CLIENT};

		if (*req->job)
			snprintf(id.job, sizeof(id.job), "%s", req->job);
		else
			snprintf(id.job, sizeof(id.job), "client:%d", peer->pid);
		r = adopt_as(a, peer->pid, &id, "register", 1);
		k = ranks_find(&a->ranks, peer->pid);
		if (r < 0 || !k)
			return resp_err("failed", r < 0 ? strerror(-r) : "not adopted");
	}
	if (!k->slot) {
		r = tracker_slot_create(a->tr, (uint32_t)k->pid, &k->slot_fd, &k->slot);
		if (r < 0)
			return resp_err("failed", strerror(-r));
	}
	o = resp_ok();
	jint(o, "pid", k->pid);
	jint(o, "rank", k->id.rank);
	jstr(o, "job", k->id.job);
	jint(o, "slot_timers", FTBPF_SLOT_TIMERS);
	ctl_reply_fd(a->ctl, k->slot_fd);
	return o;
}

static struct json_object *do_timer_req(struct agent *a, const struct ctl_request *req,
					const struct ctl_peer *peer)
{
	int pid = req->pid > 0 ? req->pid : peer->pid;
	int release = req->cmd == CTL_CMD_TIMER_RELEASE;
	uint64_t deadline = release ? 0 : now_ns() + (uint64_t)(req->expires_in * 1e9);
	int r = timer_request(a, pid, peer->uid, req->scope, release, deadline, req->sig,
			      TIMER_SRC_CTL);

	if (r == -EPERM) {
		ctl_count_denied(a->ctl);
		return resp_err("permission_denied", "that process belongs to another user");
	}
	if (r < 0)
		return resp_err(r == -ESRCH ? "not_found" : "failed", strerror(-r));
	return resp_ok();
}

static struct json_object *handle(void *ctx, const struct ctl_request *req,
				  const struct ctl_peer *peer)
{
	struct agent *a = ctx;
	struct json_object *o;

	switch (req->cmd) {
	case CTL_CMD_STATUS:
		return do_status(a, peer);
	case CTL_CMD_EXPLAIN:
		return do_explain(a, req, peer);
	case CTL_CMD_SIGNAL:
		return do_signal(a, req, peer);
	case CTL_CMD_VERSION:
		o = resp_ok();
		jstr(o, "version", FTBPF_VERSION);
		jint(o, "protocol", CTL_VERSION);
		return o;
	case CTL_CMD_TIMERS:
		return do_timers(a, peer);
	case CTL_CMD_TIMER_ACQUIRE:
	case CTL_CMD_TIMER_RELEASE:
		return do_timer_req(a, req, peer);
	case CTL_CMD_REGISTER:
		return do_register(a, req, peer);
	case CTL_CMD_PEERS:
		if (!a->mesh)
			return resp_err("mesh_off", "the heartbeat mesh is off (no --bind)");
		o = resp_ok();
		json_object_object_add(o, "cluster", mesh_json(a->mesh));
		return o;
	case CTL_CMD_EVENTS:
		break;
	}
	return resp_err("unknown_command", "unknown command");
}

/* ---- GPU device majors ---- */
static void gpu_major_add(struct agent *a, unsigned major)
{
	for (int i = 0; i < a->ngpu; i++)
		if (a->gpu_majors[i] == major)
			return;
	if (a->ngpu < (int)(sizeof(a->gpu_majors) / sizeof(a->gpu_majors[0])) &&
	    tracker_gpu_major_add(a->tr, major) == 0)
		a->gpu_majors[a->ngpu++] = major;
}

/* The majors /proc/devices gives GPU drivers (nvidia, nvidia-uvm, nvidia-caps,
 * nvidia-nvlink, DRM, AMD kfd), plus the configured ones. */
static void gpu_majors_setup(struct agent *a)
{
	unsigned extra[32];
	char line[128], name[64];
	int chars = 0, n;
	unsigned major;
	FILE *f = fopen("/proc/devices", "re");

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Character devices:", 18))
			chars = 1;
		else if (!strncmp(line, "Block devices:", 14))
			chars = 0;
		else if (chars && sscanf(line, "%u %63s", &major, name) == 2 &&
			 (!strncmp(name, "nvidia", 6) || !strcmp(name, "drm") ||
			  !strcmp(name, "kfd")))
			gpu_major_add(a, major);
	}
	if (f)
		fclose(f);
	n = config_parse_majors(a->cfg.gpu_majors, extra, 32);
	for (int i = 0; i < n; i++)
		gpu_major_add(a, extra[i]);
}

/* GPU ioctls of every thread of a rank (on demand: one map lookup per thread). */
static void rank_gpu(struct agent *a, const struct rank *k, uint64_t *ret_n, uint64_t *ret_last)
{
	struct ftbpf_thread t;

	*ret_n = *ret_last = 0;
	for (size_t i = 0; i < a->nsnap; i++)
		if (a->snap[i].tgid == (uint32_t)k->pid &&
		    tracker_thread_get(a->tr, a->snap[i].tid, &t) == 0) {
			*ret_n += t.gpu_ioctls;
			if (t.gpu_last_ns > *ret_last)
				*ret_last = t.gpu_last_ns;
		}
	if (!a->nsnap && tracker_thread_get(a->tr, (uint32_t)k->pid, &t) == 0) {
		*ret_n = t.gpu_ioctls;
		*ret_last = t.gpu_last_ns;
	}
}

/* ---- lifecycle ---- */
static int lock_state_dir(struct agent *a, char *err, size_t errlen)
{
	char p[300];

	if (mkdir(a->cfg.state_dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "create state dir %s: %s", a->cfg.state_dir, strerror(errno));
		return -errno;
	}
	snprintf(p, sizeof(p), "%s/ftbpfd.lock", a->cfg.state_dir);
	a->lockfd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (a->lockfd < 0 || flock(a->lockfd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, errlen, "state dir %s is in use by another ftbpfd (%s)",
			 a->cfg.state_dir, strerror(errno));
		return -EBUSY;
	}
	if (ftruncate(a->lockfd, 0) == 0)
		dprintf(a->lockfd, "%d\n", getpid());
	return 0;
}

struct agent *agent_new(const struct ftbpf_config *cfg, int reset_state, char *err, size_t errlen)
{
	struct agent *a = calloc(1, sizeof(*a));
	struct tracker_opts to = {};
	struct epoll_event ev = {.events = EPOLLIN};
	struct itimerspec its = {};
	sigset_t mask;

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->cfg = *cfg;
	a->epfd = a->tfd = a->sfd = a->lockfd = a->ttfd = a->fifo_fd = -1;
	timers_init(&a->tm);
	a->start_ns = now_ns();
	ranks_init(&a->ranks);
	det_params_from_seconds(&a->dp, cfg->soft_timeout_s, cfg->hard_timeout_s,
				cfg->spin_threshold_s);
	a->envbuf = malloc(ENVIRON_MAX);
	if (!a->envbuf) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (lock_state_dir(a, err, errlen) < 0)
		goto fail;
	a->el = eventlog_new(cfg->log_file, cfg->log_max_bytes, cfg->log_keep, cfg->events_keep);
	if (!a->el) {
		snprintf(err, errlen, "open event log %s: %s", cfg->log_file, strerror(errno));
		goto fail;
	}
	eventlog_load_tail(a->el);
	a->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (a->epfd < 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		goto fail;
	}
	to.pin_dir = cfg->pin_dir;
	to.reset = reset_state;
	to.agent_tgid = getpid();
	to.on_event = on_event;
	to.ctx = a;
	to.programs = cfg->bpf_programs;
	to.no_task_iter = !strcmp(cfg->task_iter, "off");
	to.ktime_clock = !strcmp(cfg->syscall_clock, "ktime");
	to.verbose = cfg->verbose >= 3;
	to.timer_term_first = cfg->timer_escalate;
	a->tr = tracker_open(&to, err, errlen);
	if (!a->tr)
		goto fail;
	gpu_majors_setup(a);
	if (cfg->gpu_probes && !tracker_features(a->tr)->uprobes)
		log_warn("no CUDA/NCCL probes: this kernel has no uprobe attach cookies (5.15+)");
	else if (cfg->gpu_probes && gpuprobe_new(a->tr, cfg->gpu_probe_launch, &a->gp) < 0)
		log_warn("no CUDA/NCCL probes: libelf unusable");
	a->ctl = ctl_new(cfg->socket_path, a->epfd, handle, a, a->el);
	if (!a->ctl) {
		snprintf(err, errlen, "control socket %s: %s", cfg->socket_path, strerror(errno));
		goto fail;
	}
	eventlog_set_sink(a->el, ctl_broadcast, a->ctl);
	ev.data.u64 = TAG_RB;
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, tracker_epoll_fd(a->tr), &ev);
	a->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	its.it_interval.tv_sec = (time_t)cfg->scan_interval_s;
	its.it_interval.tv_nsec =
	    (long)((cfg->scan_interval_s - (time_t)cfg->scan_interval_s) * 1e9);
	its.it_value = its.it_interval;
	if (a->tfd < 0 || timerfd_settime(a->tfd, 0, &its, NULL) < 0) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		goto fail;
	}
	ev.data.u64 = TAG_TIMER;
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->tfd, &ev);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	a->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	ev.data.u64 = TAG_SIGNAL;
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->sfd, &ev);
	a->ttfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (a->ttfd < 0) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		goto fail;
	}
	ev.data.u64 = TAG_TIMERS;
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->ttfd, &ev);
	if (*cfg->timer_fifo && fifo_open(a, err, errlen) < 0)
		goto fail;
	if (*cfg->mesh_bind) {
		struct mesh_opts mo = {.bind = cfg->mesh_bind,
				       .peers = cfg->mesh_peers,
				       .peers_file = cfg->mesh_peers_file,
				       .key_file = cfg->mesh_key_file,
				       .on_event = mesh_event,
				       .ctx = a};

		swim_config_default(&mo.swim);
		mo.swim.probe_interval_ms = (uint32_t)(cfg->probe_interval_s * 1000);
		mo.swim.probe_timeout_ms = (uint32_t)(cfg->probe_timeout_s * 1000);
		mo.swim.indirect_checks = cfg->indirect_checks;
		mo.swim.suspicion_mult = cfg->suspicion_mult;
		mo.swim.suspicion_max_mult = cfg->suspicion_max_mult;
		a->mesh = mesh_open(&mo, err, errlen);
		if (!a->mesh)
			goto fail;
		ev.data.u64 = TAG_MESH;
		epoll_ctl(a->epfd, EPOLL_CTL_ADD, mesh_fd(a->mesh), &ev);
		ev.data.u64 = TAG_MESH_TICK;
		epoll_ctl(a->epfd, EPOLL_CTL_ADD, mesh_timer_fd(a->mesh), &ev);
	}
	return a;
fail:
	agent_free(a);
	return NULL;
}

int agent_run(struct agent *a)
{
	const struct tracker_features *f = tracker_features(a->tr);
	struct json_object *o = ev_new("agent_start");

	jint(o, "pid", getpid());
	jstr(o, "version", FTBPF_VERSION);
	jstr(o, "programs", f->tp_btf ? "tp_btf" : "raw_tp");
	jbool(o, "task_iter", f->task_iter);
	jbool(o, "oom", f->oom);
	jbool(o, "resumed", f->resumed);
	jstr(o, "socket", a->cfg.socket_path);
	jdbl(o, "soft_timeout_s", a->cfg.soft_timeout_s);
	jdbl(o, "hard_timeout_s", a->cfg.hard_timeout_s);
	jstr(o, "action", config_action_name(a->cfg.action));
	eventlog_emit(a->el, o);
	if (f->resumed)
		tracker_foreach_proc(a->tr, resume_one, a);
	tracker_foreach_timer(a->tr, timer_restore_one, a);
	timer_rearm(a);
	tracker_consume(a->tr); /* events queued while no agent ran */
	procfs_foreach_pid(0, scan_one, a);
	scan(a);

	while (!a->stop) {
		struct epoll_event evs[32];
		int n = epoll_wait(a->epfd, evs, 32, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			uint64_t d = evs[i].data.u64;

			if ((d >> 32) == CTL_EPOLL_TAG) {
				ctl_handle(a->ctl, d, evs[i].events);
			} else if (d == TAG_RB) {
				tracker_consume(a->tr);
			} else if (d == TAG_TIMER) {
				uint64_t exp;

				if (read(a->tfd, &exp, sizeof(exp)) > 0) {
					tracker_consume(a->tr);
					scan(a);
				}
			} else if (d == TAG_TIMERS) {
				uint64_t exp;

				if (read(a->ttfd, &exp, sizeof(exp)) > 0)
					timer_check(a);
			} else if (d == TAG_FIFO) {
				fifo_read(a);
			} else if (d == TAG_MESH) {
				mesh_on_readable(a->mesh);
			} else if (d == TAG_MESH_TICK) {
				mesh_on_timer(a->mesh);
			} else if (d == TAG_SIGNAL) {
				struct signalfd_siginfo si;

				while (read(a->sfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGHUP) {
						eventlog_reopen(a->el);
						continue;
					}
					a->stop = 1;
				}
			}
		}
	}
	o = ev_new("agent_stop");
	jint(o, "pid", getpid());
	eventlog_emit(a->el, o);
	return 0;
}

void agent_free(struct agent *a)
{
	if (!a)
		return;
	ctl_free(a->ctl);
	mesh_close(a->mesh);
	gpuprobe_free(a->gp); /* its links before the programs they attach */
	tracker_close(a->tr);
	eventlog_free(a->el);
	ksyms_free(a->ksyms);
	ranks_fini(&a->ranks);
	timers_fini(&a->tm);
	for (int i = 0; i < a->npk; i++)
		close(a->pk[i].pidfd);
	if (a->ttfd >= 0)
		close(a->ttfd);
	if (a->fifo_fd >= 0)
		close(a->fifo_fd);
	free(a->snap);
	free(a->envbuf);
	if (a->epfd >= 0)
		close(a->epfd);
	if (a->tfd >= 0)
		close(a->tfd);
	if (a->sfd >= 0)
		close(a->sfd);
	if (a->lockfd >= 0)
		close(a->lockfd);
	free(a);
}
