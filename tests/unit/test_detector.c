/* Detector on synthetic samples: states, reasons, job verdicts and culprits. */
#include <CUnit/Basic.h>
#include <string.h>
#include <sys/syscall.h>

#include "lib/detector.h"
#include "ftbpf/abi.h"

#define S 1000000000ull

static struct det_params P;

static struct det_sample blocked_in(int pid, int rank, int nr, uint64_t since)
{
	struct det_sample s = {.pid = pid,
			       .rank = rank,
			       .task_state = 'S',
			       .cur_nr = nr,
			       .enter_ns = since,
			       .last_exit_ns = since,
			       .progress_ns = since,
			       .adopted_ns = 1 * S,
			       .cpu_valid = 1};
	return s;
}

static void run(struct det_rank *d, struct det_sample *s, int n, uint64_t now, struct det_job *j)
{
	for (int i = 0; i < n; i++)
		det_rank_update(&d[i], &s[i], now, &P);
	det_job_eval(d, s, n, now, 0, &P, j);
}

static void test_healthy_not_hung(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {blocked_in(10, 0, SYS_read, 99 * S),
				  blocked_in(11, 1, SYS_read, 99 * S)};
	struct det_job j;

	s[0].progress_ns = 99 * S;
	run(d, s, 2, 100 * S, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_EQUAL(j.live, 2);
	CU_ASSERT_FALSE(d[0].hung || d[1].hung || d[0].culprit || d[1].culprit);
}

static void test_sleeping_rank_is_culprit_two_ranks(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {blocked_in(10, 0, SYS_futex, 10 * S),
				  blocked_in(11, 1, SYS_clock_nanosleep, 10 * S)};
	struct det_job j;

	run(d, s, 2, 80 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_EQUAL(j.culprits[0], 1);
	CU_ASSERT_TRUE(d[1].culprit);
	CU_ASSERT_FALSE(d[0].culprit);
	CU_ASSERT_EQUAL(d[1].state, RS_BLOCKED);
	CU_ASSERT_PTR_NOT_NULL(strstr(d[1].reason, "clock_nanosleep"));
}

static void test_minority_is_culprit(void)
{
	struct det_rank d[4] = {};
	struct det_sample s[4];
	struct det_job j;

	for (int i = 0; i < 4; i++)
		s[i] = blocked_in(10 + i, i, SYS_read, 5 * S);
	s[3] = blocked_in(13, 3, SYS_wait4, 5 * S);
	run(d, s, 4, 70 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_EQUAL(j.culprits[0], 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "3 of 4"));
}

/* On a busy host a spinning rank gets a fraction of a core: runnable without a syscall is
 * spinning all the same. A rank asleep in user space (not runnable) is not. */
static void test_spinning_busy_host(void)
{
	struct det_rank d[1] = {};
	struct det_sample s[1] = {blocked_in(10, 0, SYS_read, 5 * S)};
	struct det_job j;

	s[0].cur_nr = -1;
	s[0].task_state = 'R';
	s[0].cpu_ns = 1 * S;
	run(d, s, 1, 69 * S, &j);
	s[0].cpu_ns = 1 * S + 300000000ull; /* 30% of a core over the last second */
	run(d, s, 1, 70 * S, &j);
	CU_ASSERT_EQUAL(d[0].state, RS_SPINNING);
	s[0].task_state = 'S';
	s[0].cpu_ns += 300000000ull;
	run(d, s, 1, 71 * S, &j);
	CU_ASSERT_NOT_EQUAL(d[0].state, RS_SPINNING);
}

static void test_spinning(void)
{
	struct det_rank d[3] = {};
	struct det_sample s[3];
	struct det_job j;

	for (int i = 0; i < 3; i++)
		s[i] = blocked_in(10 + i, i, SYS_read, 5 * S);
	s[1].cur_nr = -1;
	s[1].task_state = 'R';
	s[1].cpu_ns = 1 * S;
	run(d, s, 3, 69 * S, &j); /* first sample: no CPU rate yet */
	CU_ASSERT_NOT_EQUAL(d[1].state, RS_SPINNING);
	s[1].cpu_ns = 2 * S;
	run(d, s, 3, 70 * S, &j);
	CU_ASSERT_EQUAL(d[1].state, RS_SPINNING);
	CU_ASSERT_TRUE(d[1].cpu_frac > 0.9);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_TRUE(d[1].culprit);
	CU_ASSERT_FALSE(d[0].culprit);
}

static void test_stopped_beats_blocked(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {blocked_in(10, 0, SYS_read, 5 * S),
				  blocked_in(11, 1, SYS_read, 5 * S)};
	struct det_job j;

	s[1].task_state = 'T';
	run(d, s, 2, 70 * S, &j);
	CU_ASSERT_EQUAL(d[1].state, RS_STOPPED);
	CU_ASSERT_TRUE(d[1].culprit);
}

static void test_first_dead_is_culprit(void)
{
	struct det_rank d[3] = {};
	struct det_sample s[3];
	struct det_job j;

	for (int i = 0; i < 3; i++)
		s[i] = blocked_in(10 + i, i, SYS_read, 5 * S);
	s[2].exited = 1;
	s[2].exit_code = 9;
	s[2].exit_ns = 6 * S;
	s[2].sender_pid = 4242;
	strcpy(s[2].sender_comm, "kill");
	s[1].exited = 1;
	s[1].exit_code = 1 << 8;
	s[1].exit_ns = 7 * S;
	run(d, s, 3, 8 * S, &j);
	CU_ASSERT_TRUE(j.failed);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_EQUAL(j.culprits[0], 2);
	CU_ASSERT_TRUE(d[2].culprit);
	CU_ASSERT_PTR_NOT_NULL(strstr(d[2].reason, "SIGKILL from pid 4242 (kill)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(d[1].reason, "exited with code 1"));
	run(d, s, 3, 70 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_TRUE(d[0].hung);
	CU_ASSERT_FALSE(d[2].hung);
}

static void test_all_finished_not_hung(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {blocked_in(10, 0, SYS_read, 5 * S),
				  blocked_in(11, 1, SYS_read, 5 * S)};
	struct det_job j;

	s[0].exited = s[1].exited = 1;
	run(d, s, 2, 700 * S, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_FALSE(j.failed);
	CU_ASSERT_EQUAL(j.live, 0);
}

static void test_hard_timeout(void)
{
	struct det_rank d[1] = {};
	struct det_sample s[1] = {blocked_in(10, 0, SYS_read, 5 * S)};
	struct det_job j;

	run(d, s, 1, 5 * S + P.hard_ns - 1, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_FALSE(j.hard);
	run(d, s, 1, 5 * S + P.hard_ns, &j);
	CU_ASSERT_TRUE(j.hard);
}

static void test_all_comm_wait_no_local_culprit(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {blocked_in(10, 0, SYS_read, 5 * S),
				  blocked_in(11, 1, SYS_read, 5 * S)};
	struct det_job j;

	run(d, s, 2, 70 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.n_culprits, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "outside this host"));
}

static void test_short_syscall_is_running(void)
{
	struct det_rank d[1] = {};
	struct det_sample s[1] = {blocked_in(10, 0, SYS_read, 10 * S)};

	det_rank_update(&d[0], &s[0], 10 * S + 100000000ull, &P);
	CU_ASSERT_EQUAL(d[0].state, RS_RUNNING);
}

static void test_gpu_driver_state(void)
{
	struct det_rank d[3] = {};
	struct det_sample s[3];
	struct det_job j;

	for (int i = 0; i < 3; i++)
		s[i] = blocked_in(10 + i, i, SYS_futex, 5 * S);
	s[2] = blocked_in(12, 2, SYS_ioctl, 5 * S);
	s[2].gpu_since_ns = 5 * S;
	s[2].gpu_req = 0xc020462a;
	run(d, s, 3, 70 * S, &j);
	CU_ASSERT_EQUAL(d[2].state, RS_GPU);
	CU_ASSERT_STRING_EQUAL(det_state_name(RS_GPU), "gpu_driver");
	CU_ASSERT_PTR_NOT_NULL(strstr(d[2].reason, "inside the GPU driver (ioctl 0xc020462a)"));
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_TRUE(d[2].culprit);
	/* an ioctl on another device is just a blocked syscall */
	s[2].gpu_since_ns = 0;
	run(d, s, 3, 70 * S, &j);
	CU_ASSERT_EQUAL(d[2].state, RS_BLOCKED);
}

/* A rank waiting in cuStreamSynchronize since `since`, with one communicator. */
static struct det_sample in_sync(int pid, int rank, uint64_t comm, uint64_t seq, uint64_t since)
{
	struct det_sample s = blocked_in(pid, rank, SYS_clock_nanosleep, since);

	s.api = FTBPF_API_CU_STREAM_SYNC;
	s.api_since_ns = since;
	s.ncomm = 1;
	s.comm[0].id = comm;
	s.comm[0].seq = seq;
	s.comm[0].last_ns = since;
	s.comm[0].api = FTBPF_API_NCCL_ALLREDUCE;
	s.comm[0].count = 1024;
	s.comm[0].dtype = 7;
	return s;
}

static void test_nccl_lagging_rank_is_culprit(void)
{
	struct det_rank d[4] = {};
	struct det_sample s[4] = {
	    in_sync(10, 0, 0xabc, 122, 10 * S), in_sync(11, 1, 0xabc, 122, 10 * S),
	    in_sync(12, 2, 0xabc, 121, 10 * S), in_sync(13, 3, 0xabc, 122, 10 * S)};
	struct det_job j;

	run(d, s, 4, 80 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(d[2].state, RS_GPU_SYNC);
	CU_ASSERT_PTR_NOT_NULL(strstr(d[2].reason, "cuStreamSynchronize"));
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_EQUAL(j.culprits[0], 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "rank 2 issued 121 collectives"));
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "ncclAllReduce #122 (1024 x float32)"));
}

/* As measured on an H100: rank 1 skipped a step (200 issued) while the others issued the
 * gradient all-reduce #201 (1024 x float32) and the loss all-reduce #202 (1 x float32): the why
 * names #201, the first it missed, with its real element count, not the others' latest. */
static void test_nccl_first_missed(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {in_sync(10, 0, 0xabc, 202, 10 * S),
				  in_sync(11, 1, 0xabc, 200, 10 * S)};
	struct det_job j;

	for (int r = 0; r < 2; r++) {
		for (uint64_t q = s[r].comm[0].seq - 7; q <= s[r].comm[0].seq; q++) {
			int h = (int)(q % DET_COMM_HIST);

			s[r].comm[0].hist[h].seq = q;
			s[r].comm[0].hist[h].api = FTBPF_API_NCCL_ALLREDUCE;
			s[r].comm[0].hist[h].count =
			    q % 2 ? 1024 : 1; /* gradients odd, loss even */
			s[r].comm[0].hist[h].dtype = 7;
		}
		s[r].comm[0].count = 1; /* the latest: the loss */
	}
	run(d, s, 2, 80 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_EQUAL(j.culprits[0], 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "never entered ncclAllReduce #201 (1024 x float32)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "they wait in #202"));
	if (!strstr(j.why, "#201 (1024"))
		printf("\n  why: %s\n", j.why);
}

/* A job of one rank stuck in its own GPU kernel: it is the culprit, nothing outside. */
static void test_single_rank_gpu_hang(void)
{
	struct det_rank d[1] = {};
	struct det_sample s[1] = {in_sync(10, 0, 0, 0, 10 * S)};
	struct det_job j;

	s[0].ncomm = 0;
	s[0].api = FTBPF_API_CU_CTX_SYNC;
	s[0].world_size = 1;
	run(d, s, 1, 80 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_PTR_NULL(strstr(j.why, "outside this host"));
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "only rank"));
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "cuCtxSynchronize"));
}

static void test_nccl_equal_seq_no_culprit(void)
{
	struct det_rank d[3] = {};
	struct det_sample s[3] = {in_sync(10, 0, 0xabc, 50, 10 * S),
				  in_sync(11, 1, 0xabc, 50, 10 * S),
				  in_sync(12, 2, 0xabc, 50, 10 * S)};
	struct det_job j;

	run(d, s, 3, 80 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.n_culprits, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "outside this host"));
}

/* The same with the whole world here: the verdict says the cause is on a device, names none. */
static void test_all_in_one_collective(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {in_sync(10, 0, 0xabc, 50, 10 * S),
				  in_sync(11, 1, 0xabc, 50, 10 * S)};
	struct det_job j;

	s[0].world_size = s[1].world_size = 2;
	run(d, s, 2, 80 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.n_culprits, 0);
	CU_ASSERT_EQUAL(j.rule, DET_RULE_ON_DEVICE);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "every rank issued ncclAllReduce #50"));
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "no device-side view"));
}

/* The same on an MPI communicator: there is no device to blame, and no plugin to suggest. */
static void test_all_in_one_mpi_collective(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {in_sync(10, 0, 0xabc, 50, 10 * S),
				  in_sync(11, 1, 0xabc, 50, 10 * S)};
	struct det_job j;

	for (int i = 0; i < 2; i++) {
		s[i].world_size = 2;
		s[i].comm[0].flags |= DET_COMM_MPI;
	}
	run(d, s, 2, 80 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.n_culprits, 0);
	CU_ASSERT_EQUAL(j.rule, DET_RULE_ON_DEVICE);
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(j.why, "inside the collective (the network, the MPI library"));
	CU_ASSERT_PTR_NULL(strstr(j.why, "device"));
}

/* Every rank issued #50 (the host's counts agree), but rank 1's device began only 49 of them
 * (the NCCL profiler's view): its device is the one that never got there. */
static void test_device_view_names_the_rank(void)
{
	struct det_rank d[3] = {};
	struct det_sample s[3] = {in_sync(10, 0, 0xabc, 50, 10 * S),
				  in_sync(11, 1, 0xabc, 50, 10 * S),
				  in_sync(12, 2, 0xabc, 50, 10 * S)};
	struct det_job j;

	for (int i = 0; i < 3; i++) {
		s[i].world_size = 3;
		s[i].ncomm = 2;
		s[i].comm[1] = s[i].comm[0];
		s[i].comm[1].id = 0x5eed;
		s[i].comm[1].flags = DET_COMM_DEVICE;
		s[i].comm[1].seq = i == 1 ? 49 : 50;
		s[i].comm[1].hist[50 % DET_COMM_HIST].seq = 50;
		s[i].comm[1].hist[50 % DET_COMM_HIST].api = FTBPF_API_NCCL_ALLREDUCE;
		s[i].comm[1].hist[50 % DET_COMM_HIST].count = 4196352;
	}
	run(d, s, 3, 80 * S, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.rule, DET_RULE_DEVICE);
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_EQUAL(j.culprits[0], 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "rank 1's device began 49"));
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "ncclAllReduce #50 (4196352 elements)"));
	CU_ASSERT(det_counts_differ(d, s, 3));
}

/* soft_timeout = auto, collective rule: the counts differ and no rank progresses: hung after
 * max(floor, k x p99 interval), whatever posture (here every rank computes on its GPU, which
 * keeps the step rule at its ceiling); equal counts keep the ceiling. */
static void test_paced_by_collectives(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {in_sync(10, 0, 0xabc, 1194, 10 * S),
				  in_sync(11, 1, 0xabc, 1190, 10 * S)};
	struct det_params p;
	struct det_pace pace = {
	    .p99_step_ns = 250000000ull, .complete = 1, .p99_coll_ns = 250000000ull};
	struct det_job j;

	det_params_from_seconds(&p, 60, 600, 5);
	p.soft_auto = 1;
	s[1].api = FTBPF_API_CU_CTX_SYNC;
	for (int i = 0; i < 2; i++) {
		s[i].progress_ns = 10 * S;
		det_rank_update(&d[i], &s[i], 14 * S + 100000000ull, &p);
	}
	det_job_eval_paced(d, s, 2, 14 * S + 100000000ull, 0, &p, &pace, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_TRUE(j.paced && j.paced_coll);
	CU_ASSERT_EQUAL(j.soft_ns, 4 * S);
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_EQUAL(j.culprits[0], 1);
	CU_ASSERT_EQUAL(j.hard_ns, 544 * S);
	/* counts equal: every rank computes on its device, the ceiling applies */
	s[1].comm[0].seq = 1194;
	det_job_eval_paced(d, s, 2, 14 * S + 100000000ull, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_FALSE(j.paced_coll);
	CU_ASSERT_EQUAL(j.soft_ns, 60 * S);
	/* without a collective pace yet (the first steps), no collective rule */
	s[1].comm[0].seq = 1190;
	pace.p99_coll_ns = 0;
	det_job_eval_paced(d, s, 2, 14 * S + 100000000ull, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	/* a slow pace: 3 x p99 */
	pace.p99_coll_ns = 2 * S;
	det_job_eval_paced(d, s, 2, 15 * S + 500000000ull, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_EQUAL(j.soft_ns, 6 * S);
}

/* The collective rule's exemptions: a laggard at its own I/O (a checkpoint write stuck in D
 * state, a write in flight) or with another thread at work keeps the ceiling; counts that may
 * not be aligned (the record existed when the agent started, or has no id) are not compared. */
static void test_paced_collective_exemptions(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {blocked_in(10, 0, SYS_write, 10 * S),
				  in_sync(11, 1, 0xabc, 1001, 10 * S)};
	struct det_params p;
	struct det_pace pace = {.p99_coll_ns = 80000000ull};
	struct det_job j;
	uint64_t now = 14 * S + 500000000ull;

	det_params_from_seconds(&p, 60, 600, 5);
	p.soft_auto = 1;
	s[0].ncomm = 1;
	s[0].comm[0] = s[1].comm[0];
	s[0].comm[0].seq = 1000;
	for (int i = 0; i < 2; i++) {
		s[i].progress_ns = 10 * S;
		det_rank_update(&d[i], &s[i], now, &p);
	}
	/* rank 0 in write (its checkpoint): its own I/O */
	det_job_eval_paced(d, s, 2, now, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_EQUAL(j.soft_ns, 60 * S);
	/* in uninterruptible sleep */
	s[0].task_state = 'D';
	det_rank_update(&d[0], &s[0], now, &p);
	det_job_eval_paced(d, s, 2, now, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	/* its main thread joins a writer thread that works */
	s[0] = blocked_in(10, 0, SYS_futex, 10 * S);
	s[0].ncomm = 1;
	s[0].comm[0] = s[1].comm[0];
	s[0].comm[0].seq = 1000;
	s[0].progress_ns = 10 * S;
	s[0].others_dstate = 1;
	memset(&d[0], 0, sizeof(d[0]));
	det_rank_update(&d[0], &s[0], now, &p);
	det_job_eval_paced(d, s, 2, now, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	/* asleep instead: hung at the pace */
	s[0] = blocked_in(10, 0, SYS_clock_nanosleep, 10 * S);
	s[0].ncomm = 1;
	s[0].comm[0] = s[1].comm[0];
	s[0].comm[0].seq = 1000;
	s[0].progress_ns = 10 * S;
	memset(&d[0], 0, sizeof(d[0]));
	det_rank_update(&d[0], &s[0], now, &p);
	det_job_eval_paced(d, s, 2, now, 0, &p, &pace, &j);
	CU_ASSERT_TRUE(j.hung && j.paced_coll);
	/* the same counts, not aligned (an agent started after them): the ceiling */
	s[0].comm[0].flags = s[1].comm[0].flags = DET_COMM_UNALIGNED;
	det_job_eval_paced(d, s, 2, now, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_FALSE(det_counts_differ(d, s, 2));
	/* or without an id */
	s[0].comm[0].flags = s[1].comm[0].flags = 0;
	s[0].comm[0].id = s[1].comm[0].id = 0;
	CU_ASSERT_FALSE(det_counts_differ(d, s, 2));
}

/* An MPI rank inside a blocking collective: state mpi; its peer lagging is named. */
static void test_mpi_lagging_rank(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {in_sync(10, 0, 0xabc, 500, 10 * S),
				  blocked_in(11, 1, SYS_clock_nanosleep, 10 * S)};
	struct det_job j;

	s[0].api = FTBPF_API_MPI_ALLREDUCE;
	s[0].api_seq = 500;
	s[0].comm[0].flags = DET_COMM_MPI;
	s[0].comm[0].api = FTBPF_API_MPI_ALLREDUCE;
	s[1].ncomm = 1;
	s[1].comm[0] = s[0].comm[0];
	s[1].comm[0].seq = 499;
	run(d, s, 2, 80 * S, &j);
	CU_ASSERT_EQUAL(d[0].state, RS_MPI);
	CU_ASSERT_STRING_EQUAL(det_state_name(d[0].state), "mpi");
	CU_ASSERT_EQUAL(j.rule, DET_RULE_NCCL);
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_EQUAL(j.culprits[0], 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "on an MPI communicator"));
	CU_ASSERT_PTR_NOT_NULL(strstr(j.why, "MPI_Allreduce #500"));
}

/* soft_timeout = auto: every MPI rank inside the same collective, none missing from it, is not
 * a wait at the steps' pace (a starved host makes one collective long): the ceiling applies. */
static void test_mpi_one_collective_keeps_ceiling(void)
{
	struct det_params p = P;
	struct det_pace pace = {.p99_step_ns = S / 10, .complete = 1, .p99_coll_ns = S / 40};
	struct det_rank d[2] = {};
	struct det_sample s[2] = {in_sync(10, 0, 0xabc, 500, 100 * S),
				  in_sync(11, 1, 0xabc, 500, 100 * S)};
	struct det_job j;

	det_params_from_seconds(&p, 60, 600, 5);
	p.soft_auto = 1;
	for (int i = 0; i < 2; i++) {
		s[i].world_size = 2;
		s[i].api = FTBPF_API_MPI_ALLREDUCE;
		s[i].api_seq = 500;
		s[i].comm[0].flags = DET_COMM_MPI;
		s[i].comm[0].api = FTBPF_API_MPI_ALLREDUCE;
		s[i].progress_ns = 100 * S;
		det_rank_update(&d[i], &s[i], 105 * S, &p);
	}
	CU_ASSERT_EQUAL(d[0].state, RS_MPI);
	det_job_eval_paced(d, s, 2, 105 * S, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_EQUAL(j.soft_ns, 60 * S);
	/* one rank missing from it (a lower count): the collective rule, at the floor */
	s[1].comm[0].seq = 499;
	s[1].api = 0;
	det_rank_update(&d[1], &s[1], 105 * S, &p);
	det_job_eval_paced(d, s, 2, 105 * S, 0, &p, &pace, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.soft_ns, 4 * S);
}

static void test_nccl_ahead_rank_not_waiting(void)
{
	/* the rank ahead is sleeping, not waiting for the device: not NCCL evidence; the sleeping
	 * rank is where nobody waits */
	struct det_rank d[2] = {};
	struct det_sample s[2] = {in_sync(10, 0, 0xabc, 9, 10 * S),
				  blocked_in(11, 1, SYS_clock_nanosleep, 10 * S)};
	struct det_job j;

	s[1].ncomm = 1;
	s[1].comm[0] = s[0].comm[0];
	s[1].comm[0].seq = 10;
	run(d, s, 2, 80 * S, &j);
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_EQUAL(j.culprits[0], 1);
	CU_ASSERT_EQUAL(d[1].state, RS_BLOCKED);
}

static void test_nccl_unidentified_comms(void)
{
	/* created before the probes: id 0, comparable while each rank has one of them */
	struct det_rank d[3] = {};
	struct det_sample s[3] = {in_sync(10, 0, 0, 7, 10 * S), in_sync(11, 1, 0, 6, 10 * S),
				  in_sync(12, 2, 0, 7, 10 * S)};
	struct det_job j;

	run(d, s, 3, 80 * S, &j);
	CU_ASSERT_EQUAL(j.n_culprits, 1);
	CU_ASSERT_EQUAL(j.culprits[0], 1);
	/* two unidentified comms on one rank: not comparable */
	memset(d, 0, sizeof(d));
	s[1].ncomm = 2;
	s[1].comm[1] = s[1].comm[0];
	run(d, s, 3, 80 * S, &j);
	CU_ASSERT_EQUAL(j.n_culprits, 0);
}

static void test_nccl_state(void)
{
	struct det_rank d = {};
	struct det_sample s = in_sync(10, 0, 0xabc, 3, 10 * S);

	s.api = FTBPF_API_NCCL_ALLREDUCE;
	s.api_seq = 3;
	det_rank_update(&d, &s, 20 * S, &P);
	CU_ASSERT_EQUAL(d.state, RS_NCCL);
	CU_ASSERT_STRING_EQUAL(det_state_name(d.state), "nccl");
	CU_ASSERT_PTR_NOT_NULL(strstr(d.reason, "in NCCL collective #3 (ncclAllReduce)"));
	CU_ASSERT_EQUAL(d.state_since_ns, 10 * S);
	/* a short call is not a state */
	s.api_since_ns = 20 * S - 1000;
	det_rank_update(&d, &s, 20 * S, &P);
	CU_ASSERT_NOT_EQUAL(d.state, RS_NCCL);
}

static void test_exit_text(void)
{
	char b[64];

	CU_ASSERT_STRING_EQUAL(det_exit_text(9, b, sizeof(b)), "killed by SIGKILL");
	CU_ASSERT_STRING_EQUAL(det_exit_text(0x86, b, sizeof(b)),
			       "killed by SIGABRT (core dumped)");
	CU_ASSERT_STRING_EQUAL(det_exit_text(3 << 8, b, sizeof(b)), "exited with code 3");
}

static struct det_sample exited_with(int pid, int rank, int status)
{
	struct det_sample s = {.pid = pid,
			       .rank = rank,
			       .exited = 1,
			       .exit_code = status,
			       .exit_ns = 50 * S,
			       .adopted_ns = 1 * S,
			       .cur_nr = -1};
	return s;
}

/* The job's state from its ranks: the words a user expects for what happened. */
static enum det_job_state state_of(struct det_sample *s, int n, int hang_end, struct det_job *j)
{
	struct det_rank d[4] = {};
	struct det_params p = P;

	p.restart_code = 42;
	p.stop_code = 93;
	p.soft_ns = 30 * S;
	for (int i = 0; i < n; i++)
		det_rank_update(&d[i], &s[i], 60 * S, &p);
	det_job_eval(d, s, n, 60 * S, 0, &p, j);
	return det_job_state(s, n, j, &p, hang_end);
}

static void test_job_states(void)
{
	struct det_sample s[3];
	struct det_job j;

	/* every rank saved and exited 42: preempted, not failed */
	for (int i = 0; i < 3; i++)
		s[i] = exited_with(10 + i, i, 42 << 8);
	CU_ASSERT_EQUAL(state_of(s, 3, 0, &j), DJS_PREEMPTED);
	CU_ASSERT_FALSE(j.failed);
	CU_ASSERT_STRING_EQUAL(det_job_state_name(DJS_PREEMPTED), "preempted");
	/* ... as its decision asked (slot), one still saving: preempted already */
	s[2] = blocked_in(12, 2, SYS_write, 59 * S);
	s[0].asked = DET_ASKED_PREEMPT;
	CU_ASSERT_EQUAL(state_of(s, 3, 0, &j), DJS_PREEMPTED);
	/* 93: stopped */
	for (int i = 0; i < 3; i++)
		s[i] = exited_with(10 + i, i, 93 << 8);
	CU_ASSERT_EQUAL(state_of(s, 3, 0, &j), DJS_STOPPED);
	CU_ASSERT_FALSE(j.failed);
	/* a crash: failed, the culprit named */
	s[0] = exited_with(10, 0, 0);
	s[1] = exited_with(11, 1, 11); /* SIGSEGV */
	s[2] = exited_with(12, 2, 0);
	CU_ASSERT_EQUAL(state_of(s, 3, 0, &j), DJS_FAILED);
	CU_ASSERT_TRUE(j.failed);
	CU_ASSERT_EQUAL(j.culprits[0], 1);
	/* the agent's hard action ended a hung run: still hung, whatever the exits say */
	for (int i = 0; i < 3; i++) {
		s[i] = exited_with(10 + i, i, 15);
		s[i].killed = 1;
	}
	CU_ASSERT_EQUAL(state_of(s, 3, DET_HANG_END_AGENT, &j), DJS_HUNG);
	CU_ASSERT_FALSE(j.failed);
	/* an operator's SIGKILL ended a hung run: hung, not failed, no first to die */
	for (int i = 0; i < 3; i++) {
		s[i] = exited_with(10 + i, i, 9);
		s[i].ends_hang = 1;
	}
	CU_ASSERT_EQUAL(state_of(s, 3, DET_HANG_END_OTHER, &j), DJS_HUNG);
	CU_ASSERT_FALSE(j.failed);
	CU_ASSERT_EQUAL(j.n_culprits, 0);
	/* ... and the same ranks but a decision's stop code: stopped beats it */
	s[0] = exited_with(10, 0, 93 << 8);
	CU_ASSERT_EQUAL(state_of(s, 3, DET_HANG_END_OTHER, &j), DJS_STOPPED);
	for (int i = 0; i < 3; i++) {
		s[i] = exited_with(10 + i, i, 15);
		s[i].killed = 1;
	}
	/* ... and a decision's end of the survivors (not the hard action): restarting */
	CU_ASSERT_EQUAL(state_of(s, 3, 0, &j), DJS_RESTARTING);
	/* a rank of an older generation asked to exit: restarting */
	s[0] = exited_with(10, 0, 42 << 8);
	s[0].asked = DET_ASKED_RESTART;
	s[1] = blocked_in(11, 1, SYS_futex, 59 * S);
	s[2] = blocked_in(12, 2, SYS_futex, 59 * S);
	CU_ASSERT_EQUAL(state_of(s, 3, 0, &j), DJS_RESTARTING);
	/* all zero: finished; live and progressing: ok */
	for (int i = 0; i < 3; i++)
		s[i] = exited_with(10 + i, i, 0);
	CU_ASSERT_EQUAL(state_of(s, 3, 0, &j), DJS_FINISHED);
	for (int i = 0; i < 3; i++)
		s[i] = blocked_in(10 + i, i, SYS_read, 59 * S);
	CU_ASSERT_EQUAL(state_of(s, 3, 0, &j), DJS_OK);
	/* hung beats failed while ranks live (as before) */
	for (int i = 0; i < 3; i++)
		s[i] = blocked_in(10 + i, i, SYS_futex, 1 * S);
	s[2] = exited_with(12, 2, 1 << 8);
	s[2].exit_ns = 1 * S;
	CU_ASSERT_EQUAL(state_of(s, 3, 0, &j), DJS_HUNG);
	CU_ASSERT_TRUE(j.failed);
	CU_ASSERT_STRING_EQUAL(det_job_state_name(DJS__N), "unknown");
}

/* Without restart and stop codes (ftbpf-ci), an exit 42 is an exit like any other. */
static void test_exit_42_without_codes(void)
{
	struct det_rank d[2] = {};
	struct det_sample s[2] = {exited_with(10, 0, 42 << 8), exited_with(11, 1, 0)};
	struct det_job j;

	run(d, s, 2, 60 * S, &j);
	CU_ASSERT_TRUE(j.failed);
	CU_ASSERT_EQUAL(det_job_state(s, 2, &j, &P, 0), DJS_FAILED);
}

/* soft_timeout = auto: while every rank waits, max(k x p99 step, floor); a rank computing, or
 * its own I/O, or a job of unknown pace or not all here: the ceiling. */
static void test_paced_soft_timeout(void)
{
	struct det_params p = P;
	struct det_pace pace = {.p99_step_ns = S / 10, .complete = 1};
	struct det_rank d[2] = {};
	struct det_sample s[2] = {blocked_in(10, 0, SYS_futex, 100 * S),
				  blocked_in(11, 1, SYS_clock_nanosleep, 100 * S)};
	struct det_job j;

	p.soft_auto = 1;
	for (int i = 0; i < 2; i++)
		det_rank_update(&d[i], &s[i], 103 * S, &p);
	det_job_eval_paced(d, s, 2, 103 * S, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_TRUE(j.paced);
	CU_ASSERT_EQUAL(j.soft_ns, 4 * S); /* the floor: 3 x 0.1 s is less */
	for (int i = 0; i < 2; i++)
		det_rank_update(&d[i], &s[i], 104 * S + 1, &p);
	det_job_eval_paced(d, s, 2, 104 * S + 1, 0, &p, &pace, &j);
	CU_ASSERT_TRUE(j.hung);
	CU_ASSERT_EQUAL(j.hard_ns, 4 * S + 540 * S); /* hard keeps its distance */
	/* a slower pace: k x p99 */
	pace.p99_step_ns = 2 * S;
	det_job_eval_paced(d, s, 2, 104 * S + 1, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_EQUAL(j.soft_ns, 6 * S);
	pace.p99_step_ns = S / 10;
	/* not every rank here, or no pace yet: the ceiling */
	pace.complete = 0;
	det_job_eval_paced(d, s, 2, 104 * S + 1, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_EQUAL(j.soft_ns, 60 * S);
	pace.complete = 1;
	det_job_eval_paced(d, s, 2, 104 * S + 1, 0, &p, NULL, &j);
	CU_ASSERT_FALSE(j.hung);
	/* a rank computing (an evaluation pass): the ceiling */
	s[1] = blocked_in(11, 1, -1, 100 * S);
	s[1].cpu_ns = 0;
	det_rank_update(&d[1], &s[1], 103 * S, &p);
	s[1].cpu_ns = (uint64_t)(0.9 * S);
	det_rank_update(&d[1], &s[1], 104 * S + 1, &p);
	CU_ASSERT_TRUE(det_rank_working(&d[1], &s[1]));
	det_job_eval_paced(d, s, 2, 104 * S + 1, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_FALSE(j.paced);
	/* ... however little CPU a busy host leaves it */
	s[1].cpu_ns = (uint64_t)(0.9 * S + 0.1 * S);
	s[1].task_state = 'R';
	det_rank_update(&d[1], &s[1], 105 * S + 1, &p);
	CU_ASSERT_TRUE(det_rank_working(&d[1], &s[1]));
	/* ... unless that CPU is a busy-wait on the peers (yields, empty polls) */
	s[1].wait_since_ns = 100 * S;
	CU_ASSERT_FALSE(det_rank_working(&d[1], &s[1]));
	/* its own I/O (a checkpoint being written) is work too */
	s[1] = blocked_in(11, 1, SYS_write, 100 * S);
	det_rank_update(&d[1], &s[1], 104 * S + 1, &p);
	CU_ASSERT_TRUE(det_rank_working(&d[1], &s[1]));
	/* a rank whose main thread waits while another of its threads writes (a checkpoint
	 * saved by a thread) or computes is working */
	s[1] = blocked_in(11, 1, SYS_futex, 100 * S);
	det_rank_update(&d[1], &s[1], 103 * S, &p);
	CU_ASSERT_FALSE(det_rank_working(&d[1], &s[1]));
	s[1].others_dstate = 1;
	CU_ASSERT_TRUE(det_rank_working(&d[1], &s[1]));
	s[1].others_dstate = 0;
	s[1].others_cpu_ns = S / 2;
	det_rank_update(&d[1], &s[1], 104 * S + 1, &p);
	CU_ASSERT_TRUE(det_rank_working(&d[1], &s[1]));
	/* fixed soft_timeout: as before */
	p.soft_auto = 0;
	s[1] = blocked_in(11, 1, SYS_clock_nanosleep, 100 * S);
	det_rank_update(&d[1], &s[1], 104 * S + 1, &p);
	det_job_eval_paced(d, s, 2, 104 * S + 1, 0, &p, &pace, &j);
	CU_ASSERT_FALSE(j.hung);
	CU_ASSERT_EQUAL(j.soft_ns, 60 * S);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	det_params_from_seconds(&P, 60, 600, 2);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("detector", NULL, NULL);
	CU_add_test(s, "healthy job is not hung", test_healthy_not_hung);
	CU_add_test(s, "sleeping rank is culprit (2 ranks)",
		    test_sleeping_rank_is_culprit_two_ranks);
	CU_add_test(s, "minority posture is culprit", test_minority_is_culprit);
	CU_add_test(s, "spinning rank", test_spinning);
	CU_add_test(s, "spinning rank on a busy host", test_spinning_busy_host);
	CU_add_test(s, "stopped beats blocked", test_stopped_beats_blocked);
	CU_add_test(s, "first dead is culprit", test_first_dead_is_culprit);
	CU_add_test(s, "finished job is not hung", test_all_finished_not_hung);
	CU_add_test(s, "hard timeout", test_hard_timeout);
	CU_add_test(s, "all in comm wait: no local culprit", test_all_comm_wait_no_local_culprit);
	CU_add_test(s, "short syscall is running", test_short_syscall_is_running);
	CU_add_test(s, "inside the GPU driver", test_gpu_driver_state);
	CU_add_test(s, "exit text", test_exit_text);
	CU_add_test(s, "NCCL: lagging rank is culprit", test_nccl_lagging_rank_is_culprit);
	CU_add_test(s, "NCCL: the first collective missed, with its count", test_nccl_first_missed);
	CU_add_test(s, "a single rank's GPU hang", test_single_rank_gpu_hang);
	CU_add_test(s, "NCCL: equal sequence numbers, no culprit", test_nccl_equal_seq_no_culprit);
	CU_add_test(s, "every rank in one collective: the cause on a device",
		    test_all_in_one_collective);
	CU_add_test(s, "every rank in one MPI collective: no device blamed",
		    test_all_in_one_mpi_collective);
	CU_add_test(s, "auto: every MPI rank in one collective keeps the ceiling",
		    test_mpi_one_collective_keeps_ceiling);
	CU_add_test(s, "the device view names the rank", test_device_view_names_the_rank);
	CU_add_test(s, "soft_timeout auto: collective counts", test_paced_by_collectives);
	CU_add_test(s, "MPI: state mpi, the lagging rank", test_mpi_lagging_rank);
	CU_add_test(s, "collective rule: a laggard's own I/O, unaligned counts",
		    test_paced_collective_exemptions);
	CU_add_test(s, "NCCL: ahead rank not waiting", test_nccl_ahead_rank_not_waiting);
	CU_add_test(s, "NCCL: unidentified communicators", test_nccl_unidentified_comms);
	CU_add_test(s, "NCCL: state nccl", test_nccl_state);
	CU_add_test(s,
		    "job states: preempted, stopped, failed, hung and ended, restarting, finished",
		    test_job_states);
	CU_add_test(s, "exit 42 without restart codes", test_exit_42_without_codes);
	CU_add_test(s, "soft_timeout auto: the job's pace", test_paced_soft_timeout);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
