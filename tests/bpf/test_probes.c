/*
 * The CUDA/NCCL uprobe programs (bpf/gpu.bpf.h) in-process, on functions of this binary: a
 * probed call whose return the kernel never shows us (here: its return probe attached after
 * the call began, as an agent that attaches the entry first, or stops mid-call, leaves it)
 * must not leave the thread "inside" it forever, which the hang detector would take for a hang
 * of a healthy rank. And the cadence: a probed call's wait is a span. Needs root.
 */
#include <CUnit/Basic.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ftbpf/abi.h"
#include "os/elfsym.h"
#include "os/procfs.h"
#include "watch/tracker.h"

#define WAIT_MS 5000

static struct tracker *tr;
static char self[PATH_MAX];
static volatile unsigned long sink;

/* The "CUDA synchronisation" the child calls: probed at its entry and (later) its return. */
__attribute__((noinline)) void ftbpf_test_sync(int ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};

	sink++;
	if (ms)
		nanosleep(&ts, NULL); /* a syscall inside the call, below its frame */
	__asm__ volatile("" ::: "memory");
}

/* The same, called from deeper in the stack. */
__attribute__((noinline)) void ftbpf_test_deep(int ms)
{
	volatile char pad[512];

	pad[0] = 1;
	ftbpf_test_sync(ms);
	__asm__ volatile("" ::"r"(pad) : "memory");
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
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

static struct bpf_link *attach(const char *fn, int ret)
{
	struct sym_ctx c = {fn, 0};
	struct bpf_link *l = NULL;
	int fd = open(self, O_RDONLY | O_CLOEXEC), r;

	CU_ASSERT_FATAL(fd >= 0);
	r = elfsym_foreach_fd(fd, NULL, find_sym, &c);
	close(fd);
	CU_ASSERT_FATAL(r == 1);
	CU_ASSERT_FATAL(tracker_uprobe_attach(tr, self, c.off,
					      FTBPF_API_CU_CTX_SYNC | FTBPF_COOKIE_RET, ret,
					      &l) == 0);
	return l;
}

static int sock_pair[2] = {-1, -1}; /* the child reads sock_pair[1]; we write sock_pair[0] */

/* The child: one command a byte from the pipe: s = a call, d = a call from deeper, g = a
 * syscall from here (above any call's frame), y = a busy-wait of yields for 30 ms, r = a read
 * of the socket (we write 40 ms later), q = exit. */
static void child(int in)
{
	struct timespec t0, t1;
	char c;

	while (read(in, &c, 1) == 1) {
		if (c == 's') {
			ftbpf_test_sync(20);
		} else if (c == 'd') {
			ftbpf_test_deep(20);
		} else if (c == 'g') {
			syscall(SYS_getppid);
		} else if (c == 'y') {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			do {
				sched_yield();
				clock_gettime(CLOCK_MONOTONIC, &t1);
			} while ((t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec <
				 30000000L);
		} else if (c == 'r') {
			if (read(sock_pair[1], &c, 1) != 1)
				_exit(3);
		} else {
			break;
		}
	}
	_exit(0);
}

struct kid {
	pid_t pid;
	int cmd;
};

static void spawn(struct kid *k)
{
	int p[2];
	struct ftbpf_proc pr = {.flags = FTBPF_PROC_RANK, .uid = 0};
	struct proc_stat st;

	CU_ASSERT_FATAL(pipe(p) == 0);
	k->pid = fork();
	CU_ASSERT_FATAL(k->pid >= 0);
	if (k->pid == 0) {
		close(p[1]);
		child(p[0]);
	}
	close(p[0]);
	k->cmd = p[1];
	pr.tgid = pr.owner = (uint32_t)k->pid;
	if (procfs_stat(k->pid, -1, &st) == 0)
		pr.start_ns = st.start_ns;
	CU_ASSERT_FATAL(tracker_proc_put(tr, (uint32_t)k->pid, &pr) == 0);
	CU_ASSERT_FATAL(tracker_set_tracked(tr, (uint32_t)k->pid, 1) == 0);
	CU_ASSERT_FATAL(tracker_cad_add(tr, (uint32_t)k->pid) == 0);
}

static void send_cmd(struct kid *k, char c)
{
	CU_ASSERT_FATAL(write(k->cmd, &c, 1) == 1);
}

static void finish(struct kid *k)
{
	int status;

	send_cmd(k, 'q');
	close(k->cmd);
	waitpid(k->pid, &status, 0);
}

/* The child's main-thread record once pred holds (within WAIT_MS). */
static int wait_for(struct kid *k, int (*pred)(const struct ftbpf_thread *, uint64_t), uint64_t arg,
		    struct ftbpf_thread *t)
{
	for (int waited = 0; waited <= WAIT_MS; waited += 5) {
		if (tracker_thread_get(tr, (uint32_t)k->pid, t) == 0 && pred(t, arg))
			return 0;
		sleep_ms(5);
	}
	return -ETIMEDOUT;
}

static int calls_at_least(const struct ftbpf_thread *t, uint64_t n)
{
	return t->api_calls >= n;
}

static int idle_after(const struct ftbpf_thread *t, uint64_t n)
{
	return t->api_calls >= n && !t->api && t->cur_nr != 35 /* nanosleep */;
}

static int lost_at_least(const struct ftbpf_thread *t, uint64_t n)
{
	return t->api_lost >= n && !t->api;
}

/* Entry probe alone (the return probe comes later): the call stays "in flight"; the next call
 * from the same site ends it (counted), and with the return probe attached it ends as it
 * should, as progress and as a cadence span. */
static void test_lost_return_ended_by_next_call(void)
{
	struct bpf_link *in = attach("ftbpf_test_sync", 0), *out;
	uint64_t lost0 = tracker_stat(tr, FTBPF_STAT_API_LOST_RET), progress;
	struct ftbpf_thread t;
	struct ftbpf_cad c;
	struct kid k;

	spawn(&k);
	send_cmd(&k, 'g'); /* a first syscall: the thread's record */
	send_cmd(&k, 's');
	CU_ASSERT_FATAL(wait_for(&k, calls_at_least, 1, &t) == 0);
	sleep_ms(60); /* it returned long ago; no probe saw it */
	CU_ASSERT_FATAL(tracker_thread_get(tr, (uint32_t)k.pid, &t) == 0);
	CU_ASSERT_EQUAL(t.api, FTBPF_API_CU_CTX_SYNC); /* what the old code kept forever */
	out = attach("ftbpf_test_sync", 1);
	progress = t.progress;
	send_cmd(&k, 's');
	CU_ASSERT_EQUAL(wait_for(&k, idle_after, 2, &t), 0);
	CU_ASSERT_EQUAL(t.api_lost, 1);
	CU_ASSERT_EQUAL(t.api, 0);
	CU_ASSERT(t.progress > progress);
	CU_ASSERT_EQUAL(tracker_stat(tr, FTBPF_STAT_API_LOST_RET), lost0 + 1);
	/* a normal call now: no loss, one more span (the call's 20 ms) */
	send_cmd(&k, 's');
	send_cmd(&k, 'g'); /* a wait-free syscall to close the span's gap */
	CU_ASSERT_EQUAL(wait_for(&k, idle_after, 3, &t), 0);
	CU_ASSERT_EQUAL(t.api_lost, 1);
	CU_ASSERT_EQUAL(tracker_cad_get(tr, (uint32_t)k.pid, &c), 0);
	CU_ASSERT(t.cad_start_ns > 0 && t.cad_last_ns >= t.cad_start_ns + 15000000ull);
	finish(&k);
	bpf_link__destroy(in);
	bpf_link__destroy(out);
}

/* Entry probe alone, a call from deep in the stack; then a syscall from above its frame: the
 * call has returned, whatever comes next. */
static void test_lost_return_ended_by_syscall_above(void)
{
	struct bpf_link *in = attach("ftbpf_test_sync", 0);
	struct ftbpf_thread t;
	struct kid k;

	spawn(&k);
	send_cmd(&k, 'g');
	send_cmd(&k, 'd');
	CU_ASSERT_FATAL(wait_for(&k, calls_at_least, 1, &t) == 0);
	sleep_ms(60);
	CU_ASSERT_FATAL(tracker_thread_get(tr, (uint32_t)k.pid, &t) == 0);
	CU_ASSERT_EQUAL(t.api, FTBPF_API_CU_CTX_SYNC);
	send_cmd(&k, 'g');
	CU_ASSERT_EQUAL(wait_for(&k, lost_at_least, 1, &t), 0);
	finish(&k);
	bpf_link__destroy(in);
}

/* Both probes: a call from deeper inside a call in flight is nested; the inner return does
 * not end the outer call (its syscall inside stays not-progress), the outer return does. */
static void test_nested_call(void)
{
	struct bpf_link *out = attach("ftbpf_test_deep", 1), *in = attach("ftbpf_test_deep", 0);
	struct bpf_link *out2 = attach("ftbpf_test_sync", 1), *in2 = attach("ftbpf_test_sync", 0);
	struct ftbpf_thread t;
	struct kid k;

	spawn(&k);
	send_cmd(&k, 'g');
	send_cmd(&k, 'd');
	CU_ASSERT_EQUAL(wait_for(&k, idle_after, 2, &t), 0);
	CU_ASSERT_EQUAL(t.api_lost, 0);
	CU_ASSERT_EQUAL(t.api_depth, 0);
	finish(&k);
	bpf_link__destroy(in);
	bpf_link__destroy(out);
	bpf_link__destroy(in2);
	bpf_link__destroy(out2);
}

static int span_open_for(const struct ftbpf_thread *t, uint64_t ns)
{
	return t->cad_start_ns && t->cad_last_ns >= t->cad_start_ns + ns;
}

/* The step cadence: a busy-wait loop of yields is one wait span, not hundreds; a blocking read
 * of a socket is a wait on a peer; the command pipe's reads (a pipe: the rank's input) are
 * reads, not waits. A span closes when the next one begins. */
static void test_cadence_spans(void)
{
	struct ftbpf_thread t;
	struct ftbpf_cad c;
	uint64_t start;
	struct kid k;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sock_pair) == 0);
	spawn(&k);
	send_cmd(&k, 'g');
	sleep_ms(20);
	send_cmd(&k, 'y'); /* 30 ms of yields: one span, open */
	CU_ASSERT_EQUAL(wait_for(&k, span_open_for, 25000000ull, &t), 0);
	start = t.cad_start_ns;
	sleep_ms(80);
	send_cmd(&k, 'r'); /* a read of the socket: a new span, which closes the yields' */
	sleep_ms(40);
	CU_ASSERT(write(sock_pair[0], "x", 1) == 1);
	CU_ASSERT_EQUAL(wait_for(&k, span_open_for, 35000000ull, &t), 0);
	CU_ASSERT(t.cad_start_ns > start);
	CU_ASSERT_EQUAL_FATAL(tracker_cad_get(tr, (uint32_t)k.pid, &c), 0);
	CU_ASSERT_EQUAL(c.spans, 1);
	CU_ASSERT_EQUAL(c.ring[0].start_ns, start);
	CU_ASSERT(c.ring[0].end_ns - c.ring[0].start_ns >= 25000000ull &&
		  c.ring[0].end_ns - c.ring[0].start_ns < 200000000ull);
	/* the child blocked 80 ms reading its command pipe: its input, not a wait */
	CU_ASSERT(c.reads >= 1 && c.read_ns >= 50000000ull);
	finish(&k);
	close(sock_pair[0]);
	close(sock_pair[1]);
}

int main(void)
{
	struct tracker_opts o = {.agent_tgid = (uint32_t)getpid(), .programs = "auto"};
	char err[256];
	ssize_t n;
	CU_pSuite s;
	int fails;

	if (geteuid() != 0) {
		fprintf(stderr, "test_probes: needs root (loads BPF programs)\n");
		return 1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	tr = tracker_open(&o, err, sizeof(err));
	if (!tr) {
		fprintf(stderr, "test_probes: %s\n", err);
		return 1;
	}
	if (!tracker_features(tr)->uprobes) {
		fprintf(stderr, "test_probes: SKIP: no uprobes with attach cookies here\n");
		tracker_close(tr);
		return 0;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("CUDA/NCCL probes (in-process)", NULL, NULL);
	CU_add_test(s, "lost return: ended by the next call", test_lost_return_ended_by_next_call);
	CU_add_test(s, "lost return: ended by a syscall above its frame",
		    test_lost_return_ended_by_syscall_above);
	CU_add_test(s, "nested calls", test_nested_call);
	CU_add_test(s, "cadence: wait spans and reads", test_cadence_spans);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	tracker_close(tr);
	return fails ? 1 : 0;
}
