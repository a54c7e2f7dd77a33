/* The countdown-timer service: see timersvc.h. */
#include "agent/timersvc.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "agent/actions.h"
#include "agent/eventlog.h"
#include "agent/views.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "lib/starttime.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/loop.h"
#include "os/pidfd.h"
#include "os/procfs.h"
#include "agent/fifohold.h"
#include "proto/fifo_proto.h"
#include "watch/collect.h"
#include "watch/tracker.h"

#define NS	    CLOCK_NS_PER_S
#define TIMER_MAX_S 31536000.0 /* the longest timer: a year */
/* A slot timer is the kernel's to fire, at the process's first syscall past the deadline; the
 * agent fires it (for a process that makes none: blocked, spinning) this much later, so that a
 * busy host's scheduling delay does not make the two race. */
#define SLOT_SLACK_NS (30 * 1000000ull)

struct timersvc {
	struct tracker *tr;
	struct eventlog *el;
	struct ranks *ranks;
	struct loop *loop;
	struct actions *ac; /* the SIGKILLs after the grace, when escalating */
	int escalate;
	struct timers tm; /* owned */
	int ttfd;	  /* timerfd armed at the earliest deadline (owned) */
	/* the torch FileTimerClient FIFO */
	char fifo_path[256];
	char state_dir[256];
	int fifo_fd;	/* owned, -1 none */
	int fifo_kept;	/* the FIFO as the service manager kept it (owned until opened), -1 none */
	uid_t fifo_uid; /* its owner: requests may only target this user's processes */
	gid_t fifo_gid;
	mode_t fifo_mode;
	int fifo_handler;
	dev_t fifo_dev; /* the FIFO served, to notice another at its path */
	ino_t fifo_ino;
	uint64_t fifo_gone_warn_ns; /* last warning about the path (rate limit) */
	char fifo_buf[FIFO_MAX_LINE + 1];
	size_t fifo_len;
	int fifo_skip;	       /* dropping the rest of an over-long line */
	uint64_t fifo_warn_ns; /* last warning about its mode (rate limit) */
	struct {
		uint64_t lines, bad, denied, oversized;
	} fifo_cnt;
};

static void fifo_watch(struct timersvc *ts);

/* ---- the pinned copy of the table, so that timers outlive an agent restart ---- */
static void timer_key(struct ftbpf_timer_key *k, int pid, const char *scope)
{
	memset(k, 0, sizeof(*k));
	k->pid = (uint32_t)pid;
	snprintf(k->scope, sizeof(k->scope), "%s", scope);
}

static void persist(struct timersvc *ts, int pid, const char *scope, uint64_t deadline, int sig,
		    uid_t uid, enum timer_source src)
{
	struct ftbpf_timer_key k;
	struct ftbpf_timer_val v = {
	    .deadline_ns = deadline, .sig = (uint32_t)sig, .uid = uid, .source = src};
	struct proc_stat st;

	/* the pinned copy (4,096 places): its last 512 are root's timers' (docs/security.md); a
	 * timer not pinned still fires, it only does not outlive a restart */
	if (uid != 0 && ts->tm.n > FTBPF_TIMER_PINS - FTBPF_TIMER_PINS_ROOT) {
		log_debug("timer pid %d scope %s: not pinned (the last places are root's)", pid,
			  scope);
		return;
	}
	if (procfs_stat(pid, -1, &st) == 0)
		v.start_ns = st.start_ns;
	timer_key(&k, pid, scope);
	if (tracker_timer_put(ts->tr, &k, &v) < 0)
		log_debug("timer pid %d scope %s: not pinned (it will not outlive a restart)", pid,
			  scope);
}

static void unpersist(struct timersvc *ts, int pid, const char *scope)
{
	struct ftbpf_timer_key k;

	timer_key(&k, pid, scope);
	(void)tracker_timer_delete(ts->tr, &k); /* not pinned: nothing to delete */
}

/* Drop every timer of pid, in memory and pinned. Returns how many. */
static int forget_pid(struct timersvc *ts, int pid)
{
	for (int i = 0; i < ts->tm.n; i++)
		if (ts->tm.v[i].pid == pid)
			unpersist(ts, pid, ts->tm.v[i].scope);
	return timers_clear_pid(&ts->tm, pid);
}

static int restore_one(void *ctx, const struct ftbpf_timer_key *k, const struct ftbpf_timer_val *v)
{
	struct timersvc *ts = ctx;
	struct proc_stat st;
	char scope[TIMER_SCOPE_LEN];
	int pid = (int)k->pid, pidfd;

	memcpy(scope, k->scope, sizeof(scope));
	scope[sizeof(scope) - 1] = 0;
	if (procfs_stat(pid, -1, &st) < 0 || !starttime_same(st.start_ns, v->start_ns) ||
	    (pidfd = pidfd_open_pid(pid)) < 0) {
		(void)tracker_timer_delete(ts->tr, k);
		return 0;
	}
	if (timers_acquire(&ts->tm, pid, pidfd, v->uid, scope, v->deadline_ns, (int)v->sig,
			   (enum timer_source)v->source, clock_mono_ns()) < 0)
		close(pidfd);
	return 0;
}

/* ---- slots ---- */
/* Earliest armed deadline over every slot, plus the slack (0 none). */
static uint64_t slots_next_deadline(const struct timersvc *ts)
{
	uint64_t d = 0;

	for (int i = 0; i < ts->ranks->n; i++) {
		const struct rank *k = ts->ranks->v[i];
		uint64_t e;

		if (!k->slot || k->s.exited)
			continue;
		e = __atomic_load_n(&k->slot->earliest_ns, __ATOMIC_ACQUIRE);
		if (e && (!d || e + SLOT_SLACK_NS < d))
			d = e + SLOT_SLACK_NS;
	}
	return d;
}

static void close_pidfd(int fd)
{
	close(fd);
}

void timersvc_slot_drop(struct timersvc *ts, struct rank *k)
{
	if (!k->slot)
		return;
	tracker_slot_remove(ts->tr, (uint32_t)k->pid, k->slot_fd, k->slot);
	k->slot = NULL;
	k->slot_fd = -1;
}

/* Arm the timerfd at the earliest deadline: expiry is acted on when it happens, not at a scan. */
static void rearm(struct timersvc *ts)
{
	uint64_t d = timers_next_deadline(&ts->tm), sd = slots_next_deadline(ts);
	int r;

	if (sd && (!d || sd < d))
		d = sd;
	/* cannot fail with a valid timerfd and an absolute time; the scan checks anyway */
	if ((r = loop_timer_at(ts->ttfd, d)) < 0)
		log_warn("timer service: timerfd: %s (expiries wait for the scan)", strerror(-r));
}

/* ---- escalation ---- */
/* The signal an expiry sends: the timer's own, or SIGTERM first when escalating (the actions'
 * queue sends SIGKILL after the grace). */
static int expiry_signal(struct timersvc *ts, int pid, int pidfd, uid_t uid, int sig)
{
	if (!ts->escalate)
		return sig;
	actions_kill_after_grace(ts->ac, pid, pidfd, uid, 0);
	return SIGTERM;
}

/* ---- expiry ---- */
/*
 * The signal that reaps pid at the expiry of timer i, as torch's FileTimerServer chooses it:
 * of pid's expired timers, in expiry order, the first with a signal; 0 when none has one
 * (FileTimerClient(signal=0) means "expire, do not kill").
 */
static int reap_signal(const struct timersvc *ts, int i, uint64_t now)
{
	const struct timer *best = NULL;

	for (int j = 0; j < ts->tm.n; j++) {
		const struct timer *t = &ts->tm.v[j];

		if (t->pid == ts->tm.v[i].pid && t->sig > 0 && t->deadline_ns <= now &&
		    (!best || t->deadline_ns < best->deadline_ns))
			best = t;
	}
	return best ? best->sig : 0;
}

/* Log what the process was doing, then reap it with the timer's signal (torch semantics);
 * with no signal the expiry is logged and the process left alone. Either way every timer of
 * the process goes, as in torch. */
static void timer_fire(struct timersvc *ts, int i, uint64_t now)
{
	struct timer *t = &ts->tm.v[i];
	int pid = t->pid, sig = reap_signal(ts, i, now), r;
	struct collect_proc p;
	struct json_object *o =
	    view_timer_expired(pid, t->uid, NULL, t->scope, timers_source_name(t->source), sig,
			       (double)(now - t->deadline_ns) / 1e6);

	collect_proc(ts->tr, pid, &p);
	view_diagnosis(o, &p, now);
	if (sig) {
		r = pidfd_signal(t->pidfd, expiry_signal(ts, pid, t->pidfd, t->uid, sig));
		jstr(o, "result", r < 0 ? strerror(-r) : "sent");
	} else {
		jstr(o, "result", "not sent: the timer has no signal (expire, do not kill)");
	}
	eventlog_emit(ts->el, o);
	ts->tm.expired++;
	forget_pid(ts, pid); /* a reaped worker's other timers go with it */
}

/* A slot timer that expired while its process made no syscall: the agent acts. */
static void slot_fire(struct timersvc *ts, struct rank *k, struct ftbpf_slot_timer *t, uint64_t now)
{
	char scope[FTBPF_SLOT_SCOPE_LEN + 1];
	struct collect_proc p;
	struct json_object *o;
	int r;

	memcpy(scope, t->scope, FTBPF_SLOT_SCOPE_LEN);
	scope[FTBPF_SLOT_SCOPE_LEN] = 0;
	o = view_timer_expired(k->pid, k->uid, k, scope, "slot", (int)t->sig,
			       (double)(now - t->deadline_ns) / 1e6);
	collect_proc(ts->tr, k->pid, &p);
	view_diagnosis(o, &p, now);
	r = pidfd_signal(k->pidfd, expiry_signal(ts, k->pid, k->pidfd, k->uid, (int)t->sig));
	jstr(o, "result", r < 0 ? strerror(-r) : "sent");
	eventlog_emit(ts->el, o);
	ts->tm.expired++;
}

/* Expired armed timers in the slots (one reap per process per check). */
static void slot_check(struct timersvc *ts, uint64_t now)
{
	for (int i = 0; i < ts->ranks->n; i++) {
		struct rank *k = ts->ranks->v[i];
		struct ftbpf_slot *s = k->slot;
		uint64_t e;

		if (!s || k->s.exited)
			continue;
		e = __atomic_load_n(&s->earliest_ns, __ATOMIC_ACQUIRE);
		if (!e || e + SLOT_SLACK_NS > now)
			continue;
		for (int j = 0; j < FTBPF_SLOT_TIMERS; j++) {
			struct ftbpf_slot_timer *t = &s->timers[j];
			uint64_t armed = FTBPF_TS_ARMED;
			uint64_t d = __atomic_load_n(&t->deadline_ns, __ATOMIC_ACQUIRE);

			if (!d || d + SLOT_SLACK_NS > now ||
			    !__atomic_compare_exchange_n(&t->state, &armed, FTBPF_TS_FIRED, 0,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				continue;
			slot_fire(ts, k, t, now);
			break;
		}
	}
}

void timersvc_check(struct timersvc *ts)
{
	uint64_t now = clock_mono_ns();
	int i;

	while ((i = timers_first_expired(&ts->tm, now)) >= 0)
		timer_fire(ts, i, now);
	slot_check(ts, now);
	fifo_watch(ts);
	/* timers of processes that are gone (not all are tracked ranks) */
	for (i = 0; i < ts->tm.n;) {
		if (pidfd_signal(ts->tm.v[i].pidfd, 0) == -ESRCH) {
			forget_pid(ts, ts->tm.v[i].pid);
			i = 0;
			continue;
		}
		i++;
	}
	rearm(ts);
}

void timersvc_exited(struct timersvc *ts, int pid)
{
	if (forget_pid(ts, pid))
		rearm(ts);
}

void timersvc_kernel_fired(struct timersvc *ts, const struct rank *k)
{
	if (ts->escalate && k) /* the kernel sent SIGTERM; SIGKILL after the grace */
		actions_kill_after_grace(ts->ac, k->pid, k->pidfd, k->uid, 0);
	ts->tm.expired++;
	rearm(ts);
}

/* The pidfd is opened before the owner is read and checked after, so both concern one
 * process. */
int timersvc_request(struct timersvc *ts, int pid, uid_t requester, const char *scope, int release,
		     uint64_t deadline, int sig, enum timer_source src)
{
	struct proc_creds cr;
	uid_t owner;
	int pidfd, r;

	pidfd = pidfd_open_pid(pid);
	if (pidfd < 0)
		return pidfd == -EINVAL ? -ESRCH : pidfd;
	if (procfs_creds(pid, &cr) < 0 || pidfd_signal(pidfd, 0) < 0) {
		close(pidfd);
		return -ESRCH;
	}
	/* the owner is the real uid; a set-user-ID process is not its user's to time (its
	 * expiry would signal it from root and show its stacks to that user) */
	owner = cr.ruid;
	if (requester != 0 && (owner != requester || procfs_creds_elevated(&cr))) {
		close(pidfd);
		return -EPERM;
	}
	if (release) {
		close(pidfd);
		/* after expiry: a no-op, as in torch */
		if (timers_release(&ts->tm, pid, scope) == 0)
			unpersist(ts, pid, scope);
		rearm(ts);
		return 0;
	}
	r = timers_acquire(&ts->tm, pid, pidfd, owner, scope, deadline, sig, src, clock_mono_ns());
	if (r < 0)
		close(pidfd);
	else
		persist(ts, pid, scope, deadline, sig, owner, src);
	rearm(ts);
	return r;
}

/* ---- the FIFO of torch's FileTimerClient ---- */
static void fifo_line(struct timersvc *ts, const char *line, size_t len)
{
	struct fifo_request fr;
	char err[160];
	uint64_t deadline = 0;
	double left;
	int r;

	ts->fifo_cnt.lines++;
	r = fifo_parse_line(line, len, &fr, err, sizeof(err));
	if (r < 0) {
		ts->fifo_cnt.bad++;
		log_debug("timer fifo: rejected request: %s", err);
		return;
	}
	if (!fr.release) {
		left = fr.expiration_time - (double)clock_real_ns() / 1e9;
		if (left > TIMER_MAX_S) /* no overflow: a deadline a year away is "never" */
			left = TIMER_MAX_S;
		deadline = clock_mono_ns() + (left > 0 ? (uint64_t)(left * 1e9) : 0);
	}
	/* requests may only target processes of the FIFO's owner (root's FIFO: any) */
	r = timersvc_request(ts, fr.pid, ts->fifo_uid, fr.scope, fr.release, deadline, fr.sig,
			     TIMER_SRC_FIFO);
	if (r == -EPERM)
		ts->fifo_cnt.denied++;
	if (r < 0)
		log_debug("timer fifo: pid %d scope %s: %s", fr.pid, fr.scope, strerror(-r));
}

/* Only the FIFO's owner may write requests into it: the owner is whom they act for. */
static int fifo_mode_ok(const struct stat *st)
{
	return S_ISFIFO(st->st_mode) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

static void fifo_read(struct timersvc *ts)
{
	struct stat st;

	/* its mode may have changed since: requests written while others could write are not
	 * the owner's, and are dropped */
	if (fstat(ts->fifo_fd, &st) < 0 || !fifo_mode_ok(&st) || st.st_uid != ts->fifo_uid) {
		char junk[4096];

		while (read(ts->fifo_fd, junk, sizeof(junk)) > 0)
			ts->fifo_cnt.denied++;
		if (clock_mono_ns() - ts->fifo_warn_ns > 60 * NS) { /* at most once a minute */
			ts->fifo_warn_ns = clock_mono_ns();
			log_warn(
			    "timer FIFO %s is writable by others now: its requests are dropped",
			    ts->fifo_path);
		}
		return;
	}
	for (;;) {
		ssize_t n = read(ts->fifo_fd, ts->fifo_buf + ts->fifo_len,
				 sizeof(ts->fifo_buf) - ts->fifo_len);
		size_t start = 0;

		if (n <= 0)
			return;
		ts->fifo_len += n;
		for (size_t i = 0; i < ts->fifo_len; i++) {
			if (ts->fifo_buf[i] != '\n')
				continue;
			if (!ts->fifo_skip)
				fifo_line(ts, ts->fifo_buf + start, i - start);
			ts->fifo_skip = 0;
			start = i + 1;
		}
		memmove(ts->fifo_buf, ts->fifo_buf + start, ts->fifo_len - start);
		ts->fifo_len -= start;
		if (ts->fifo_len == sizeof(ts->fifo_buf)) { /* no newline in PIPE_BUF bytes */
			if (!ts->fifo_skip)
				ts->fifo_cnt.oversized++;
			ts->fifo_skip = 1;
			ts->fifo_len = 0;
		}
	}
}

/*
 * Open the FIFO at fifo_path, making it when missing: at start 0600 for the agent's user; made
 * again after it was removed (remake), with the owner and mode it had, so that the same user's
 * workers can write it again.
 */
static int fifo_open(struct timersvc *ts, int remake, char *err, size_t errlen)
{
	const char *path = ts->fifo_path;
	struct stat st;
	int made, r;

	made = mkfifo(path, 0600) == 0;
	if (!made && errno != EEXIST) {
		snprintf(err, errlen, "create timer FIFO %s: %s", path, strerror(errno));
		return -errno;
	}
	/* O_RDWR: we are a writer too, so the FIFO never reports end-of-file between clients
	 * (the one the service manager kept through a restart is that, and the same FIFO) */
	if (ts->fifo_kept >= 0 && !made) {
		ts->fifo_fd = ts->fifo_kept;
		(void)fcntl(ts->fifo_fd, F_SETFL, O_RDWR | O_NONBLOCK);
	} else {
		if (ts->fifo_kept >= 0)
			close(ts->fifo_kept);
		ts->fifo_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	}
	ts->fifo_kept = -1;
	if (ts->fifo_fd < 0 || fstat(ts->fifo_fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		snprintf(err, errlen, "open timer FIFO %s: %s", path,
			 ts->fifo_fd < 0
			     ? (errno == ELOOP ? "a symbolic link: refused" : strerror(errno))
			     : "not a FIFO");
		return -EINVAL;
	}
	if (made && remake &&
	    (fchown(ts->fifo_fd, ts->fifo_uid, ts->fifo_gid) < 0 ||
	     fchmod(ts->fifo_fd, ts->fifo_mode & 0777) < 0 || fstat(ts->fifo_fd, &st) < 0)) {
		snprintf(err, errlen, "timer FIFO %s: owner and mode: %s", path, strerror(errno));
		return -errno;
	}
	if (!fifo_mode_ok(&st)) {
		snprintf(err, errlen,
			 "timer FIFO %s is writable by users other than its owner (mode %04o): "
			 "chmod go-w it",
			 path, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	ts->fifo_uid = st.st_uid;
	ts->fifo_gid = st.st_gid;
	ts->fifo_mode = st.st_mode;
	ts->fifo_dev = st.st_dev;
	ts->fifo_ino = st.st_ino;
	r = loop_add(ts->loop, ts->fifo_fd, EPOLLIN, ts->fifo_handler, 1);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		return r;
	}
	fifohold_keep(path, ts->fifo_fd, ts->state_dir); /* through the agent's restarts */
	return 0;
}

/*
 * The FIFO's path is the contract with the workers (FileTimerClient opens it by path for each
 * request). When it was removed (a /tmp cleaner; torchrun with TORCHELASTIC_ENABLE_FILE_TIMER=1
 * removes it at start and at stop) it is made again, with the owner and mode it had; when
 * another FIFO took its place (torchrun's own FileTimerServer) that one is served, under the
 * rules of the start (then two servers read it: see docs/deploy.md). Checked at every scan.
 */
static void fifo_watch(struct timersvc *ts)
{
	char err[256];
	struct stat st;
	int gone;

	if (!*ts->fifo_path)
		return;
	gone = lstat(ts->fifo_path, &st) < 0;
	if (ts->fifo_fd >= 0 && !gone && st.st_dev == ts->fifo_dev && st.st_ino == ts->fifo_ino)
		return;
	if (ts->fifo_fd >= 0) {
		fifo_read(ts); /* what was written before it went */
		loop_del(ts->loop, ts->fifo_fd);
		close(ts->fifo_fd);
		ts->fifo_fd = -1;
		ts->fifo_len = 0;
		ts->fifo_skip = 0;
		log_warn("timer FIFO %s was %s: serving %s", ts->fifo_path,
			 gone ? "removed" : "replaced by another", gone ? "a new one" : "that one");
	}
	if (fifo_open(ts, gone, err, sizeof(err)) < 0) {
		if (ts->fifo_fd >= 0)
			close(ts->fifo_fd);
		ts->fifo_fd = -1;
		if (clock_mono_ns() - ts->fifo_gone_warn_ns > 60 * NS) { /* retried every scan */
			ts->fifo_gone_warn_ns = clock_mono_ns();
			log_warn("%s: timer requests are not served until it is fixed", err);
		}
	}
}

/* ---- lifecycle ---- */
static void on_timerfd(void *ctx, uint32_t arg, uint32_t events)
{
	struct timersvc *ts = ctx;
	uint64_t exp;

	(void)arg;
	(void)events;
	if (read(ts->ttfd, &exp, sizeof(exp)) > 0)
		timersvc_check(ts);
}

static void on_fifo(void *ctx, uint32_t arg, uint32_t events)
{
	(void)arg;
	(void)events;
	fifo_read(ctx);
}

struct timersvc *timersvc_new(const struct timersvc_opts *o, char *err, size_t errlen)
{
	struct timersvc *ts = calloc(1, sizeof(*ts));
	int h, r;

	if (!ts) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ts->tr = o->tr;
	ts->el = o->el;
	ts->ranks = o->ranks;
	ts->loop = o->loop;
	ts->ac = o->ac;
	ts->escalate = o->escalate;
	ts->fifo_fd = -1;
	ts->fifo_kept = o->fifo_fd;
	snprintf(ts->state_dir, sizeof(ts->state_dir), "%s", o->state_dir ? o->state_dir : "");
	timers_init(&ts->tm);
	ts->tm.uid_max = o->max_per_user;
	ts->tm.close_fd = close_pidfd;
	ts->ttfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ts->ttfd < 0) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		goto fail;
	}
	/* urgent: a due timer is acted on before any other work of its loop turn */
	h = loop_handler(ts->loop, on_timerfd, ts, 1);
	r = h < 0 ? h : loop_add(ts->loop, ts->ttfd, EPOLLIN, h, 0);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		goto fail;
	}
	if (o->fifo_path && *o->fifo_path) {
		snprintf(ts->fifo_path, sizeof(ts->fifo_path), "%s", o->fifo_path);
		ts->fifo_handler = h = loop_handler(ts->loop, on_fifo, ts, 0);
		if (h < 0 || fifo_open(ts, 0, err, errlen) < 0) {
			if (h < 0)
				snprintf(err, errlen, "event loop: %s", strerror(-h));
			goto fail;
		}
	}
	return ts;
fail:
	timersvc_free(ts);
	return NULL;
}

void timersvc_free(struct timersvc *ts)
{
	if (!ts)
		return;
	timers_fini(&ts->tm);
	if (ts->ttfd >= 0)
		close(ts->ttfd);
	if (ts->fifo_fd >= 0)
		close(ts->fifo_fd);
	if (ts->fifo_kept >= 0)
		close(ts->fifo_kept);
	free(ts);
}

void timersvc_restore(struct timersvc *ts)
{
	tracker_foreach_timer(ts->tr, restore_one, ts);
	rearm(ts);
}

const struct timers *timersvc_table(const struct timersvc *ts)
{
	return &ts->tm;
}

void timersvc_counters(const struct timersvc *ts, struct json_object *c)
{
	jint(c, "timers_active", ts->tm.n);
	jint(c, "timers_acquired", (int64_t)ts->tm.acquired);
	jint(c, "timers_released", (int64_t)ts->tm.released);
	jint(c, "timers_expired", (int64_t)ts->tm.expired);
	jint(c, "timers_rejected_full", (int64_t)ts->tm.rejected_full);
	jint(c, "timers_rejected_user", (int64_t)ts->tm.rejected_user);
	jint(c, "fifo_requests", (int64_t)ts->fifo_cnt.lines);
	jint(c, "fifo_bad", (int64_t)ts->fifo_cnt.bad);
	jint(c, "fifo_denied", (int64_t)ts->fifo_cnt.denied);
	jint(c, "fifo_oversized", (int64_t)ts->fifo_cnt.oversized);
}
