/* Timer table semantics (torch elastic): acquire, re-acquire, release, expiry order, limits;
 * and the FileTimerClient line parser. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "ftbpf/slot.h"
#include "proto/fifo_proto.h"
#include "lib/timers.h"

static void test_table(void)
{
	struct timers t;

	timers_init(&t);
	CU_ASSERT_EQUAL(timers_next_deadline(&t), 0u);
	CU_ASSERT_EQUAL(timers_acquire(&t, 10, -1, 0, "a", 500, 9, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(timers_acquire(&t, 10, -1, 0, "b", 300, 15, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(timers_acquire(&t, 11, -1, 0, "a", 400, 9, TIMER_SRC_FIFO, 0), 0);
	CU_ASSERT_EQUAL(t.n, 3);
	CU_ASSERT_EQUAL(timers_next_deadline(&t), 300u);
	/* re-acquiring the same scope re-arms it */
	CU_ASSERT_EQUAL(timers_acquire(&t, 10, -1, 0, "b", 700, 15, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(t.n, 3);
	CU_ASSERT_EQUAL(timers_next_deadline(&t), 400u);
	CU_ASSERT_EQUAL(timers_first_expired(&t, 399), -1);
	CU_ASSERT_EQUAL(t.v[timers_first_expired(&t, 600)].pid, 11);
	CU_ASSERT_EQUAL(timers_release(&t, 11, "a"), 0);
	CU_ASSERT_EQUAL(timers_release(&t, 11, "a"), -ENOENT); /* twice: no-op */
	CU_ASSERT_EQUAL(timers_clear_pid(&t, 10), 2);
	CU_ASSERT_EQUAL(t.n, 0);
	timers_fini(&t);
}

static int closed[8], nclosed;

static void note_close(int fd)
{
	if (nclosed < 8)
		closed[nclosed] = fd;
	nclosed++;
}

/* The table closes no descriptor itself: a pidfd it lets go of (replaced by a newer process's,
 * released, cleared, at the end) goes once to the owner's hook. */
static void test_close_hook(void)
{
	struct timers t;

	timers_init(&t);
	t.close_fd = note_close;
	nclosed = 0;
	CU_ASSERT_EQUAL(timers_acquire(&t, 10, 40, 0, "a", 500, 9, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(timers_acquire(&t, 10, 40, 0, "a", 600, 9, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(nclosed, 0); /* the same pidfd again: kept */
	CU_ASSERT_EQUAL(timers_acquire(&t, 10, 41, 0, "a", 700, 9, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(nclosed, 1); /* the newest process at the pid: the old one's goes */
	CU_ASSERT_EQUAL(closed[0], 40);
	CU_ASSERT_EQUAL(timers_acquire(&t, 11, 42, 0, "a", 700, 9, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(timers_acquire(&t, 12, 43, 0, "a", 700, 9, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(timers_release(&t, 11, "a"), 0);
	CU_ASSERT_EQUAL(nclosed, 2);
	CU_ASSERT_EQUAL(closed[1], 42);
	CU_ASSERT_EQUAL(timers_clear_pid(&t, 10), 1);
	CU_ASSERT_EQUAL(nclosed, 3);
	CU_ASSERT_EQUAL(closed[2], 41);
	timers_fini(&t);
	CU_ASSERT_EQUAL(nclosed, 4);
	CU_ASSERT_EQUAL(closed[3], 43);
}

/* A rank's agent-held timers as its status counts them: how many, and the earliest deadline
 * (lowered from what its slot's timers gave). */
static void test_of_pid(void)
{
	struct timers t;
	uint64_t earliest = 0;

	timers_init(&t);
	CU_ASSERT_EQUAL(timers_of_pid(&t, 10, &earliest), 0);
	CU_ASSERT_EQUAL(earliest, 0u);
	CU_ASSERT_EQUAL(timers_acquire(&t, 10, -1, 0, "a", 500, 9, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(timers_acquire(&t, 11, -1, 0, "a", 100, 9, TIMER_SRC_CTL, 0), 0);
	CU_ASSERT_EQUAL(timers_acquire(&t, 10, -1, 0, "b", 300, 9, TIMER_SRC_FIFO, 0), 0);
	CU_ASSERT_EQUAL(timers_of_pid(&t, 10, &earliest), 2);
	CU_ASSERT_EQUAL(earliest, 300u); /* not pid 11's */
	earliest = 200;			 /* a slot timer's, earlier */
	CU_ASSERT_EQUAL(timers_of_pid(&t, 10, &earliest), 2);
	CU_ASSERT_EQUAL(earliest, 200u);
	earliest = 400; /* a later one */
	CU_ASSERT_EQUAL(timers_of_pid(&t, 10, &earliest), 2);
	CU_ASSERT_EQUAL(earliest, 300u);
	CU_ASSERT_EQUAL(timers_of_pid(&t, 12, &earliest), 0);
	CU_ASSERT_EQUAL(earliest, 300u);
	timers_fini(&t);
}

static void test_limits(void)
{
	struct timers t;
	char s[16];

	timers_init(&t);
	for (int i = 0; i < TIMERS_PER_PID_MAX; i++) {
		snprintf(s, sizeof(s), "s%d", i);
		CU_ASSERT_EQUAL(timers_acquire(&t, 1, -1, 0, s, 100, 9, TIMER_SRC_CTL, 0), 0);
	}
	CU_ASSERT_EQUAL(timers_acquire(&t, 1, -1, 0, "one-more", 100, 9, TIMER_SRC_CTL, 0),
			-ENOSPC);
	CU_ASSERT_EQUAL(t.rejected_full, 1u);
	CU_ASSERT_EQUAL(timers_acquire(&t, 2, -1, 0, "other-pid", 100, 9, TIMER_SRC_CTL, 0), 0);
	timers_fini(&t);
}

#define L(s) s, strlen(s)

static void test_fifo_parser(void)
{
	struct fifo_request r;
	char err[200];

	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 1, \"pid\": 42, \"scope_id\": \"t.py#3\", "
					  "\"expiration_time\": 1700000000.5, \"signal\": 15}"),
					&r, err, sizeof(err)),
			0);
	CU_ASSERT_EQUAL(r.pid, 42);
	CU_ASSERT_STRING_EQUAL(r.scope, "t.py#3");
	CU_ASSERT_DOUBLE_EQUAL(r.expiration_time, 1700000000.5, 1e-3);
	CU_ASSERT_EQUAL(r.sig, 15);
	CU_ASSERT_FALSE(r.release);
	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 1, \"pid\": 42, \"scope_id\": \"x\", "
					  "\"expiration_time\": -1, \"signal\": 0}"),
					&r, err, sizeof(err)),
			0);
	CU_ASSERT_TRUE(r.release);
	CU_ASSERT_EQUAL(r.sig, 0);
	/* torch: a zero or negative signal expires without a kill; no signal: SIGKILL */
	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 1, \"pid\": 42, \"scope_id\": \"x\", "
					  "\"expiration_time\": 5, \"signal\": 0}"),
					&r, err, sizeof(err)),
			0);
	CU_ASSERT_FALSE(r.release);
	CU_ASSERT_EQUAL(r.sig, 0);
	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 1, \"pid\": 42, \"scope_id\": \"x\", "
					  "\"expiration_time\": 5, \"signal\": -3}"),
					&r, err, sizeof(err)),
			0);
	CU_ASSERT_EQUAL(r.sig, 0);
	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 1, \"pid\": 42, \"scope_id\": \"x\", "
					  "\"expiration_time\": 5}"),
					&r, err, sizeof(err)),
			0);
	CU_ASSERT_EQUAL(r.sig, SIGKILL);
	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 2, \"pid\": 1, \"scope_id\": \"x\", "
					  "\"expiration_time\": 1}"),
					&r, err, sizeof(err)),
			-EPROTO);
	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 1, \"pid\": -5, \"scope_id\": \"x\", "
					  "\"expiration_time\": 1}"),
					&r, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 1, \"pid\": 5, \"scope_id\": \"\", "
					  "\"expiration_time\": 1}"),
					&r, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 1, \"pid\": 5, \"scope_id\": \"x\", "
					  "\"expiration_time\": \"soon\"}"),
					&r, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(fifo_parse_line(L("{\"version\": 1, \"pid\": 5, \"scope_id\": \"x\", "
					  "\"expiration_time\": 1, \"signal\": 99}"),
					&r, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(fifo_parse_line(L("not json"), &r, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(fifo_parse_line("x", FIFO_MAX_LINE + 1, &r, err, sizeof(err)), -E2BIG);
}

/* A slot timer's deadline counts only while it is armed (the process and the kernel share it). */
static void test_slot_armed(void)
{
	struct ftbpf_slot_timer t;

	memset(&t, 0, sizeof(t));
	t.deadline_ns = 123456789;
	CU_ASSERT_EQUAL(timers_slot_armed(&t), 0); /* free */
	t.state = FTBPF_TS_ARMED;
	CU_ASSERT_EQUAL(timers_slot_armed(&t), 123456789);
	t.state = FTBPF_TS_FIRED;
	CU_ASSERT_EQUAL(timers_slot_armed(&t), 0);
	t.state = FTBPF_TS_BUSY; /* its owner is writing it */
	CU_ASSERT_EQUAL(timers_slot_armed(&t), 0);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("timers", NULL, NULL);
	CU_add_test(s, "table semantics", test_table);
	CU_add_test(s, "limits", test_limits);
	CU_add_test(s, "every pidfd let go goes to the owner's close hook", test_close_hook);
	CU_add_test(s, "a process's timers: count and earliest", test_of_pid);
	CU_add_test(s, "a slot timer counts while armed", test_slot_armed);
	CU_add_test(s, "FileTimerClient line parser", test_fifo_parser);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
