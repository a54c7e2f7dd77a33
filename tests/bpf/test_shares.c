/*
 * The per-user shares of the kernel's tables (bpf/share.bpf.h), in-process: a user's threads
 * past its share get no record (counted), root's still do; every record is given back at the
 * thread's exit; a thread that execs while it is not its process's leader leaves no record
 * behind (it was kept for ever: 17 x 4,100 such execs filled the 65,536 records); a user's
 * children past its share of the process table are not tracked, and every record is given back;
 * a user's collective arrival records past its share are not made, and go with their process.
 * Shares made small through tracker_opts. Needs root; a child becomes nobody.
 */
#include <CUnit/Basic.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ftbpf/abi.h"
#include "os/elfsym.h"
#include "os/procfs.h"
#include "watch/tracker.h"

#define NOBODY	     65534u
#define THREAD_SHARE 8
#define PROC_SHARE   4 /* the rank's own record and 3 children */
#define ARR_SHARE    4
#define WAIT_MS	     5000

static struct tracker *tr;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void on_event(void *ctx, const struct ftbpf_event *e)
{
	(void)ctx;
	(void)e;
}

static void drain(void)
{
	while (tracker_consume(tr, 512) == 1)
		;
}

struct held_usage {
	uint32_t uid;
	struct ftbpf_usage u;
	int found;
};

static int usage_one(void *ctx, uint32_t uid, const struct ftbpf_usage *u)
{
	struct held_usage *h = ctx;

	if (uid == h->uid) {
		h->u = *u;
		h->found = 1;
	}
	return 0;
}

static struct ftbpf_usage usage_of(uint32_t uid)
{
	struct held_usage h = {.uid = uid};

	tracker_usage_foreach(tr, usage_one, &h);
	return h.u;
}

static void track(pid_t pid, uint32_t uid)
{
	struct ftbpf_proc p = {
	    .tgid = (uint32_t)pid, .owner = (uint32_t)pid, .flags = FTBPF_PROC_RANK, .uid = uid};
	struct proc_stat st;

	if (procfs_stat(pid, -1, &st) == 0)
		p.start_ns = st.start_ns;
	CU_ASSERT_EQUAL_FATAL(tracker_proc_put(tr, (uint32_t)pid, &p), 0);
	CU_ASSERT_EQUAL_FATAL(tracker_set_tracked(tr, (uint32_t)pid, 1), 0);
}

static int records_of(pid_t pid, int ntids, const pid_t *tids)
{
	struct ftbpf_thread t;
	int n = tracker_thread_get(tr, (uint32_t)pid, &t) == 0;

	for (int i = 0; i < ntids; i++)
		n += tids[i] != pid && tracker_thread_get(tr, (uint32_t)tids[i], &t) == 0;
	return n;
}

/* ---- a process with many threads, each making syscalls until told to stop ---- */
#define NTHREADS 20
static volatile int stop_threads;

static void *spin_syscalls(void *arg)
{
	pid_t *tid = arg;

	*tid = (pid_t)syscall(SYS_gettid);
	while (!stop_threads) {
		syscall(SYS_getppid);
		usleep(2000);
	}
	return NULL;
}

/* The child: becomes uid (if not root), waits at go, starts NTHREADS threads that make
 * syscalls, writes their tids into out, waits at go again, ends. */
static void threads_body(uid_t uid, int go, int out)
{
	pthread_t th[NTHREADS];
	pid_t tids[NTHREADS] = {0};
	char c;

	if (uid && (setresgid(65534, 65534, 65534) || setresuid(uid, uid, uid)))
		_exit(80);
	if (read(go, &c, 1) != 1)
		_exit(81);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, spin_syscalls, &tids[i]);
	sleep_ms(200);
	if (write(out, tids, sizeof(tids)) != (ssize_t)sizeof(tids))
		_exit(82);
	if (read(go, &c, 1) != 1)
		_exit(83);
	stop_threads = 1;
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	_exit(0);
}

struct kid {
	pid_t pid;
	int go, out;
	pid_t tids[NTHREADS];
};

static void kid_start(struct kid *k, uid_t uid)
{
	int go[2], out[2];

	CU_ASSERT_FATAL(pipe(go) == 0 && pipe(out) == 0);
	k->pid = fork();
	CU_ASSERT_FATAL(k->pid >= 0);
	if (k->pid == 0) {
		close(go[1]);
		close(out[0]);
		threads_body(uid, go[0], out[1]);
	}
	close(go[0]);
	close(out[1]);
	k->go = go[1];
	k->out = out[0];
	track(k->pid, uid);
	CU_ASSERT_FATAL(write(k->go, "g", 1) == 1);
	CU_ASSERT_FATAL(read(k->out, k->tids, sizeof(k->tids)) == (ssize_t)sizeof(k->tids));
}

static void kid_end(struct kid *k)
{
	int st;

	CU_ASSERT(write(k->go, "e", 1) == 1);
	waitpid(k->pid, &st, 0);
	close(k->go);
	close(k->out);
	drain();
	(void)tracker_proc_delete(tr, (uint32_t)k->pid); /* as the agent does, once judged */
}

static void test_thread_share(void)
{
	struct ftbpf_usage before = usage_of(NOBODY), u;
	struct kid n, r;
	int nrec, rrec;

	kid_start(&n, NOBODY);
	nrec = records_of(n.pid, NTHREADS, n.tids);
	u = usage_of(NOBODY);
	CU_ASSERT_EQUAL(nrec, THREAD_SHARE); /* its main thread and 7 others: the share */
	CU_ASSERT_EQUAL(u.held[FTBPF_TAB_THREADS], THREAD_SHARE);
	CU_ASSERT(u.refused[FTBPF_TAB_THREADS] >=
		  before.refused[FTBPF_TAB_THREADS] + NTHREADS - THREAD_SHARE + 1);
	/* root's threads are over no share */
	kid_start(&r, 0);
	rrec = records_of(r.pid, NTHREADS, r.tids);
	CU_ASSERT_EQUAL(rrec, NTHREADS + 1);
	kid_end(&r);
	kid_end(&n);
	/* every record given back at its thread's exit */
	for (int waited = 0; waited < WAIT_MS && usage_of(NOBODY).held[FTBPF_TAB_THREADS];
	     waited += 10)
		sleep_ms(10);
	CU_ASSERT_EQUAL(usage_of(NOBODY).held[FTBPF_TAB_THREADS], 0);
	CU_ASSERT_EQUAL(records_of(n.pid, NTHREADS, n.tids), 0);
}

/* ---- a rank of nobody's that forks more children than its user's share ---- */
#define NKIDS 8

static void test_proc_share(void)
{
	int go[2], out[2], st, tracked = 0;
	pid_t pid, kids[NKIDS];
	struct ftbpf_usage u;
	char c;

	CU_ASSERT_FATAL(pipe(go) == 0 && pipe(out) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		pid_t k[NKIDS];

		if (setresgid(65534, 65534, 65534) || setresuid(NOBODY, NOBODY, NOBODY) ||
		    read(go[0], &c, 1) != 1)
			_exit(80);
		for (int i = 0; i < NKIDS; i++)
			if ((k[i] = fork()) == 0) {
				pause();
				_exit(0);
			}
		if (write(out[1], k, sizeof(k)) != (ssize_t)sizeof(k))
			_exit(81);
		pause();
		_exit(0);
	}
	track(pid, NOBODY);
	CU_ASSERT_FATAL(write(go[1], "g", 1) == 1);
	CU_ASSERT_FATAL(read(out[0], kids, sizeof(kids)) == (ssize_t)sizeof(kids));
	sleep_ms(100);
	for (int i = 0; i < NKIDS; i++)
		tracked += tracker_is_tracked(tr, (uint32_t)kids[i]);
	u = usage_of(NOBODY);
	CU_ASSERT_EQUAL(tracked, PROC_SHARE - 1);
	CU_ASSERT_EQUAL(u.held[FTBPF_TAB_PROCS], PROC_SHARE);
	CU_ASSERT(u.refused[FTBPF_TAB_PROCS] >= NKIDS - (PROC_SHARE - 1));
	for (int i = 0; i < NKIDS; i++)
		kill(kids[i], SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	drain();
	/* the children's records went at their exits; the rank's stays until the agent's */
	for (int waited = 0; waited < WAIT_MS && usage_of(NOBODY).held[FTBPF_TAB_PROCS] > 1;
	     waited += 10)
		sleep_ms(10);
	CU_ASSERT_EQUAL(usage_of(NOBODY).held[FTBPF_TAB_PROCS], 1);
	CU_ASSERT_EQUAL(tracker_proc_delete(tr, (uint32_t)pid), 0);
	CU_ASSERT_EQUAL(usage_of(NOBODY).held[FTBPF_TAB_PROCS], 0);
	close(go[0]);
	close(go[1]);
	close(out[0]);
	close(out[1]);
}

/* ---- a thread that execs ---- */
static char self_exe[4096];

static void *exec_from_thread(void *arg)
{
	char *const argv[] = {self_exe, "--sleep", NULL};

	(void)arg;
	syscall(SYS_getppid); /* this thread's record */
	sleep_ms(100);
	execv(self_exe, argv);
	_exit(84);
}

static void test_exec_from_thread(void)
{
	int go[2], out[2], st;
	pid_t pid, tid = 0;
	struct ftbpf_thread t;
	char c;

	CU_ASSERT_FATAL(pipe(go) == 0 && pipe(out) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		pthread_t th;

		if (read(go[0], &c, 1) != 1)
			_exit(85);
		pthread_create(&th, NULL, exec_from_thread, NULL);
		for (;;)
			pause(); /* the leader waits; the exec ends it */
	}
	track(pid, NOBODY);
	CU_ASSERT_FATAL(write(go[1], "g", 1) == 1);
	/* the thread's tid: the other record of the process (tids are given out upwards) */
	for (int waited = 0; waited < WAIT_MS && !tid; waited += 10) {
		for (pid_t x = pid + 1; x < pid + 64 && !tid; x++)
			if (tracker_thread_get(tr, (uint32_t)x, &t) == 0 && t.tgid == (uint32_t)pid)
				tid = x;
		if (!tid)
			sleep_ms(10);
	}
	CU_ASSERT_FATAL(tid != 0);
	sleep_ms(400); /* exec'd by now: the process sleeps as --sleep */
	CU_ASSERT_EQUAL(tracker_thread_get(tr, (uint32_t)tid, &t), -ENOENT);
	CU_ASSERT_TRUE(tracker_is_tracked(tr, (uint32_t)pid));
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	drain();
	(void)tracker_proc_delete(tr, (uint32_t)pid);
	for (int waited = 0; waited < WAIT_MS && usage_of(NOBODY).held[FTBPF_TAB_THREADS];
	     waited += 10)
		sleep_ms(10);
	CU_ASSERT_EQUAL(usage_of(NOBODY).held[FTBPF_TAB_THREADS], 0);
	close(go[0]);
	close(go[1]);
	close(out[0]);
	close(out[1]);
}

/* ---- a rank of nobody's that makes more collective arrival records than its share ---- */
#define NCOMMS 10

/* The "ncclAllReduce" the child calls, its communicator as its first argument. */
__attribute__((noinline)) void ftbpf_test_coll(void *comm)
{
	__asm__ volatile("" ::"r"(comm) : "memory");
}

struct sym_ctx {
	const char *name;
	size_t off;
};

static int find_sym(void *ctx, Elf *e, const char *name, const GElf_Sym *sym)
{
	struct sym_ctx *c = ctx;
	GElf_Shdr sh;

	if (strcmp(name, c->name) || GELF_ST_TYPE(sym->st_info) != STT_FUNC ||
	    !gelf_getshdr(elf_getscn(e, sym->st_shndx), &sh))
		return 0;
	c->off = sym->st_value - sh.sh_addr + sh.sh_offset;
	return 1;
}

/* Each communicator record takes a comms place and an arrivals place: past the arrivals share
 * the record is kept without its arrivals (counted), and both are given back at the exit. */
static void test_arrivals_share(void)
{
	struct ftbpf_usage before = usage_of(NOBODY), u;
	struct sym_ctx c = {"ftbpf_test_coll", 0};
	struct bpf_link *l = NULL;
	int go[2], st, fd;
	pid_t pid;
	char ch;

	fd = open(self_exe, O_RDONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(elfsym_foreach_fd(fd, NULL, find_sym, &c) == 1);
	close(fd);
	CU_ASSERT_FATAL(tracker_uprobe_attach(tr, self_exe, c.off,
					      FTBPF_API_NCCL_ALLREDUCE | (1ull << 8), 0, &l) == 0);
	CU_ASSERT_FATAL(pipe(go) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		static char comms[NCOMMS];

		if (read(go[0], &ch, 1) != 1)
			_exit(86);
		for (int i = 0; i < NCOMMS; i++)
			ftbpf_test_coll(&comms[i]);
		pause();
		_exit(0);
	}
	track(pid, NOBODY);
	CU_ASSERT_FATAL(write(go[1], "g", 1) == 1);
	for (int waited = 0; waited < WAIT_MS; waited += 10) {
		u = usage_of(NOBODY);
		if (u.held[FTBPF_TAB_COMMS] - before.held[FTBPF_TAB_COMMS] >= NCOMMS)
			break;
		sleep_ms(10);
	}
	CU_ASSERT_EQUAL(u.held[FTBPF_TAB_COMMS] - before.held[FTBPF_TAB_COMMS], NCOMMS);
	CU_ASSERT_EQUAL(u.held[FTBPF_TAB_ARRIVALS] - before.held[FTBPF_TAB_ARRIVALS], ARR_SHARE);
	CU_ASSERT(u.refused[FTBPF_TAB_ARRIVALS] - before.refused[FTBPF_TAB_ARRIVALS] >=
		  NCOMMS - ARR_SHARE);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	drain();
	for (int waited = 0; waited < WAIT_MS && (usage_of(NOBODY).held[FTBPF_TAB_COMMS] ||
						  usage_of(NOBODY).held[FTBPF_TAB_ARRIVALS]);
	     waited += 10)
		sleep_ms(10);
	u = usage_of(NOBODY);
	CU_ASSERT_EQUAL(u.held[FTBPF_TAB_COMMS], 0);
	CU_ASSERT_EQUAL(u.held[FTBPF_TAB_ARRIVALS], 0);
	(void)tracker_proc_delete(tr, (uint32_t)pid);
	bpf_link__destroy(l);
	close(go[0]);
	close(go[1]);
}

int main(int argc, char **argv)
{
	struct tracker_opts o = {
	    .agent_tgid = (uint32_t)getpid(), .on_event = on_event, .programs = "auto"};
	char err[256];
	CU_pSuite s;
	ssize_t n;
	int fails;

	if (argc > 1 && !strcmp(argv[1], "--sleep")) { /* what a thread exec'd */
		sleep(10);
		return 0;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "test_shares: needs root (loads BPF programs)\n");
		return 1;
	}
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 1;
	self_exe[n] = 0;
	o.share[FTBPF_TAB_THREADS] = THREAD_SHARE;
	o.share[FTBPF_TAB_PROCS] = PROC_SHARE;
	o.share[FTBPF_TAB_ARRIVALS] = ARR_SHARE;
	tr = tracker_open(&o, err, sizeof(err));
	if (!tr) {
		fprintf(stderr, "test_shares: %s\n", err);
		return 1;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("per-user shares of the kernel's tables", NULL, NULL);
	CU_add_test(s, "a user's threads past its share: no record; root's all", test_thread_share);
	CU_add_test(s, "a thread that execs leaves no record", test_exec_from_thread);
	CU_add_test(s, "a user's children past its share: untracked; records given back",
		    test_proc_share);
	CU_add_test(s, "a user's arrival records past its share: none; given back at the exit",
		    test_arrivals_share);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	tracker_close(tr);
	return fails ? 1 : 0;
}
