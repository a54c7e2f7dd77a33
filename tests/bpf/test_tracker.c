/*
 * The BPF tracker in-process, as the kernel's selftests/bpf do: load the programs through the
 * skeleton (watch/tracker.c, nothing pinned), make real processes do real syscalls, signals,
 * forks and exits, and assert what the maps and the ring buffer hold. Needs root and a kernel
 * with BTF; every wait is bounded.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ftbpf/abi.h"
#include "ftbpf/slot.h"
#include "os/clock.h"
#include "os/procfs.h"
#include "watch/tracker.h"

#define WAIT_MS 5000
#define MAX_EV	4096

static struct tracker *tr;
static struct ftbpf_event evs[MAX_EV];
static int nev;

static void on_event(void *ctx, const struct ftbpf_event *e)
{
	(void)ctx;
	if (nev < MAX_EV)
		evs[nev++] = *e;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* The first event of type whose tgid (or, with by_owner, owner) is id; what has come so far. */
static const struct ftbpf_event *find_event(uint32_t type, uint32_t id, int by_owner)
{
	while (tracker_consume(tr, 512) == 1)
		;
	for (int i = 0; i < nev; i++)
		if (evs[i].type == type && (by_owner ? evs[i].owner : evs[i].tgid) == id)
			return &evs[i];
	return NULL;
}

/* The same, waiting for it up to WAIT_MS. */
static const struct ftbpf_event *wait_event_by(uint32_t type, uint32_t id, int by_owner)
{
	const struct ftbpf_event *e = NULL;

	for (int waited = 0; !e && waited <= WAIT_MS; waited += 10) {
		e = find_event(type, id, by_owner);
		if (!e)
			sleep_ms(10);
	}
	return e;
}

static const struct ftbpf_event *wait_event(uint32_t type, uint32_t tgid)
{
	return wait_event_by(type, tgid, 0);
}

/* The precision of the kernel side's syscall times. */
static uint64_t tick_ns(void)
{
	unsigned hz = tracker_features(tr)->hz;

	return hz ? 2 * CLOCK_NS_PER_S / hz : 0;
}

/* A process held at a pipe until the tracker knows it: body runs once it is tracked. */
struct held {
	pid_t pid;
	int go;	  /* write end: releases it */
	int feed; /* write end of the pipe body reads from */
};

static void track(pid_t pid, int on)
{
	struct ftbpf_proc p = {.tgid = (uint32_t)pid,
			       .owner = (uint32_t)pid,
			       .flags = FTBPF_PROC_RANK,
			       .uid = getuid()};
	struct proc_stat st;

	if (on && procfs_stat(pid, -1, &st) == 0)
		p.start_ns = st.start_ns;
	if (on)
		CU_ASSERT_EQUAL_FATAL(tracker_proc_put(tr, (uint32_t)pid, &p), 0);
	CU_ASSERT_EQUAL_FATAL(tracker_set_tracked(tr, (uint32_t)pid, on), 0);
}

static void spawn(struct held *h, void (*body)(int in), int tracked)
{
	int go[2], feed[2];
	char c;

	CU_ASSERT_FATAL(pipe(go) == 0 && pipe(feed) == 0);
	h->pid = fork();
	CU_ASSERT_FATAL(h->pid >= 0);
	if (h->pid == 0) {
		close(go[1]);
		close(feed[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(90);
		body(feed[0]);
		_exit(91);
	}
	close(go[0]);
	close(feed[0]);
	h->go = go[1];
	h->feed = feed[1];
	if (tracked)
		track(h->pid, 1);
	CU_ASSERT_FATAL(write(h->go, "g", 1) == 1);
}

/* Reap h's process within WAIT_MS; its wait status, or -1. */
static int reap(struct held *h)
{
	int status;

	close(h->go);
	close(h->feed);
	for (int waited = 0; waited <= WAIT_MS; waited += 10) {
		if (waitpid(h->pid, &status, WNOHANG) == h->pid)
			return status;
		sleep_ms(10);
	}
	kill(h->pid, SIGKILL);
	waitpid(h->pid, &status, 0);
	return -1;
}

/* Its main thread's record once it is in syscall nr (within WAIT_MS). */
static int wait_in_syscall(pid_t pid, int nr, struct ftbpf_thread *t)
{
	for (int waited = 0; waited <= WAIT_MS; waited += 10) {
		if (tracker_thread_get(tr, (uint32_t)pid, t) == 0 && t->cur_nr == nr)
			return 0;
		sleep_ms(10);
	}
	return -ETIMEDOUT;
}

/* Read one byte, then exit with it as the code. */
static void body_read_exit(int in)
{
	char c = 0;

	if (read(in, &c, 1) != 1)
		_exit(92);
	_exit(c);
}

static void test_blocked_syscall_and_exit(void)
{
	struct held h;
	struct ftbpf_thread t;
	const struct ftbpf_event *e;
	uint64_t before = clock_mono_ns();
	int status;

	spawn(&h, body_read_exit, 1);
	CU_ASSERT_EQUAL_FATAL(wait_in_syscall(h.pid, SYS_read, &t), 0);
	CU_ASSERT_EQUAL(t.tgid, (uint32_t)h.pid);
	/* syscall times may come from jiffies: one tick of precision */
	CU_ASSERT(t.enter_ns + tick_ns() >= before && t.enter_ns <= clock_mono_ns() + tick_ns());
	CU_ASSERT_FATAL(write(h.feed, "\7", 1) == 1);
	status = reap(&h);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	e = wait_event(FTBPF_EV_EXIT, (uint32_t)h.pid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(e->code, 7 << 8); /* the raw wait status */
	CU_ASSERT_EQUAL(e->sig, 0);
	/* the kernel untracked it and dropped its thread record */
	CU_ASSERT_FALSE(tracker_is_tracked(tr, (uint32_t)h.pid));
	CU_ASSERT_NOT_EQUAL(tracker_thread_get(tr, (uint32_t)h.pid, &t), 0);
}

static void test_untracked_leaves_nothing(void)
{
	struct held h;
	struct ftbpf_thread t;

	spawn(&h, body_read_exit, 0);
	sleep_ms(100); /* blocked in read by now */
	CU_ASSERT_EQUAL(tracker_thread_get(tr, (uint32_t)h.pid, &t), -ENOENT);
	CU_ASSERT_FATAL(write(h.feed, "\0", 1) == 1);
	reap(&h);
	sleep_ms(100);
	CU_ASSERT_PTR_NULL(find_event(FTBPF_EV_EXIT, (uint32_t)h.pid, 0));
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* Catch SIGUSR1, wait for it, then wait for the byte. */
static void body_signal(int in)
{
	struct sigaction sa = {.sa_handler = on_usr1};

	sigaction(SIGUSR1, &sa, NULL);
	pause();
	body_read_exit(in);
}

static void test_signal_generated_and_delivered(void)
{
	struct held h;
	struct ftbpf_thread t;
	const struct ftbpf_event *g, *d;

	spawn(&h, body_signal, 1);
	CU_ASSERT_EQUAL_FATAL(wait_in_syscall(h.pid, SYS_pause, &t), 0);
	CU_ASSERT_EQUAL_FATAL(kill(h.pid, SIGUSR1), 0);
	g = wait_event(FTBPF_EV_SIGNAL, (uint32_t)h.pid);
	d = wait_event(FTBPF_EV_DELIVER, (uint32_t)h.pid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(g->sig, SIGUSR1);
	CU_ASSERT_EQUAL(g->sender_pid, (uint32_t)getpid());
	CU_ASSERT_EQUAL(d->sig, SIGUSR1);
	CU_ASSERT_EQUAL(d->tid, (uint32_t)h.pid);
	CU_ASSERT_FATAL(write(h.feed, "\0", 1) == 1);
	reap(&h);
}

/* Fork a child that waits for the byte, then exit when it has. */
static void body_fork(int in)
{
	pid_t c = fork();
	int st;

	if (c == 0)
		body_read_exit(in);
	waitpid(c, &st, 0);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 93);
}

static void test_fork_tracks_child(void)
{
	struct held h;
	const struct ftbpf_event *f;
	struct ftbpf_proc p;

	spawn(&h, body_fork, 1);
	f = wait_event_by(FTBPF_EV_FORK, (uint32_t)h.pid, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(f->ppid, (uint32_t)h.pid);
	CU_ASSERT_TRUE(tracker_is_tracked(tr, f->tgid));
	CU_ASSERT_EQUAL_FATAL(tracker_proc_get(tr, f->tgid, &p), 0);
	CU_ASSERT(p.flags & FTBPF_PROC_CHILD);
	CU_ASSERT_EQUAL(p.owner, (uint32_t)h.pid);
	CU_ASSERT_FATAL(write(h.feed, "\5", 1) == 1);
	CU_ASSERT(WEXITSTATUS(reap(&h)) == 5);
	/* a child's entry goes at its exit (the event names its rank) */
	CU_ASSERT_PTR_NOT_NULL(wait_event(FTBPF_EV_EXIT, f->tgid));
	CU_ASSERT_NOT_EQUAL(tracker_proc_get(tr, f->tgid, &p), 0);
}

/* Make syscalls until killed (bounded). */
static void body_syscalls(int in)
{
	(void)in;
	for (int i = 0; i < 5000; i++) {
		syscall(SYS_getppid);
		usleep(1000);
	}
	_exit(94);
}

static void test_slot_timer_fires_at_syscall_entry(void)
{
	struct ftbpf_slot *s = NULL;
	struct proc_stat st;
	struct held h;
	const struct ftbpf_event *e;
	uint64_t d;
	int fd = -1, status;

	spawn(&h, body_syscalls, 1);
	CU_ASSERT_EQUAL_FATAL(procfs_stat(h.pid, -1, &st), 0);
	CU_ASSERT_EQUAL_FATAL(tracker_slot_create(tr, (uint32_t)h.pid, st.start_ns, &fd, &s), 0);
	d = clock_mono_ns() + 50 * 1000000ull;
	s->timers[0].sig = SIGKILL;
	snprintf(s->timers[0].scope, sizeof(s->timers[0].scope), "selftest");
	__atomic_store_n(&s->timers[0].deadline_ns, d, __ATOMIC_RELEASE);
	__atomic_store_n(&s->timers[0].state, FTBPF_TS_ARMED, __ATOMIC_RELEASE);
	__atomic_store_n(&s->earliest_ns, d, __ATOMIC_RELEASE);
	status = reap(&h);
	CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	e = wait_event(FTBPF_EV_TIMER, (uint32_t)h.pid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(e->sig, SIGKILL);
	CU_ASSERT(e->code == SYS_getppid || e->code == SYS_clock_nanosleep ||
		  e->code == SYS_nanosleep);
	CU_ASSERT_EQUAL(strncmp(e->filename, "selftest", 8), 0);
	CU_ASSERT_EQUAL(__atomic_load_n(&s->timers[0].state, __ATOMIC_ACQUIRE), FTBPF_TS_FIRED);
	CU_ASSERT_EQUAL(s->fired, 1u);
	tracker_slot_remove(tr, (uint32_t)h.pid, fd, s);
}

static void test_slot_of_other_incarnation_never_fires(void)
{
	struct ftbpf_slot *s = NULL;
	struct held h;
	struct proc_stat st;
	uint64_t d;
	int fd = -1, status;

	spawn(&h, body_read_exit, 1);
	CU_ASSERT_EQUAL_FATAL(procfs_stat(h.pid, -1, &st), 0);
	/* made for a process that started a second earlier at this pid */
	CU_ASSERT_EQUAL_FATAL(
	    tracker_slot_create(tr, (uint32_t)h.pid, st.start_ns - 1000000000ull, &fd, &s), 0);
	d = clock_mono_ns();
	s->timers[0].sig = SIGKILL;
	__atomic_store_n(&s->timers[0].deadline_ns, d, __ATOMIC_RELEASE);
	__atomic_store_n(&s->timers[0].state, FTBPF_TS_ARMED, __ATOMIC_RELEASE);
	__atomic_store_n(&s->earliest_ns, d, __ATOMIC_RELEASE);
	sleep_ms(50);
	CU_ASSERT_FATAL(write(h.feed, "\3", 1) == 1); /* its read returns: a syscall exit */
	status = reap(&h);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	CU_ASSERT_EQUAL(s->fired, 0u);
	tracker_slot_remove(tr, (uint32_t)h.pid, fd, s);
}

int main(void)
{
	struct tracker_opts o = {
	    .agent_tgid = (uint32_t)getpid(), .on_event = on_event, .programs = "auto"};
	char err[256];
	CU_pSuite s;
	int fails;

	if (geteuid() != 0) {
		fprintf(stderr, "test_tracker: needs root (loads BPF programs)\n");
		return 1;
	}
	tr = tracker_open(&o, err, sizeof(err));
	if (!tr) {
		fprintf(stderr, "test_tracker: %s\n", err);
		return 1;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("BPF tracker (in-process, skeleton)", NULL, NULL);
	CU_add_test(s, "blocked syscall, then exit", test_blocked_syscall_and_exit);
	CU_add_test(s, "untracked process: no record", test_untracked_leaves_nothing);
	CU_add_test(s, "signal generated and delivered", test_signal_generated_and_delivered);
	CU_add_test(s, "fork: child tracked, owned", test_fork_tracks_child);
	CU_add_test(s, "slot timer fires at syscall entry", test_slot_timer_fires_at_syscall_entry);
	CU_add_test(s, "slot of an earlier process at the pid never fires",
		    test_slot_of_other_incarnation_never_fires);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	tracker_close(tr);
	return fails ? 1 : 0;
}
