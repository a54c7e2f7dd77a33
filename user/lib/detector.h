/*
 * Hang detector: turns raw per-rank samples into a rank state with a reason and a duration,
 * and the ranks of one job into a verdict (hung or not) with the culprit rank(s).
 * Pure logic: no I/O, driven with synthetic samples by tests/unit/test_detector.c.
 */
#ifndef FTBPF_DETECTOR_H
#define FTBPF_DETECTOR_H

#include <stdint.h>

/* A rank's state. Its name, how suspicious it is and what it means are in one table
 * (det_state_info, detector.c): adding a state is an entry here and a row there. */
enum rank_state {
	RS_RUNNING = 0,
	RS_BLOCKED,  /* main thread inside a syscall */
	RS_SPINNING, /* on CPU, no syscall, no progress */
	RS_STOPPED,  /* SIGSTOP / ptrace stop */
	RS_DSTATE,   /* uninterruptible sleep */
	RS_ZOMBIE,   /* main thread gone, others alive */
	RS_EXITED,
	RS_GPU,	     /* main thread inside an ioctl on a GPU device file */
	RS_GPU_SYNC, /* main thread inside a CUDA synchronisation (cuStreamSynchronize...) */
	RS_NCCL,     /* main thread inside an NCCL call */
	RS_MPI,	     /* main thread inside a blocking MPI call (a collective, a receive, a wait) */
	RS__N
};

#define DET_WAITS_FOR_OTHERS 0x1u /* waits for what other ranks do (the device, NCCL) */
#define DET_SINCE_EVENT                                                                            \
	0x2u /* its "since" is when it began (syscall entry...), not when
				     the detector first saw it */

struct det_state_info {
	const char *name; /* in status, events, ftbpf-top's filters */
	int score;	  /* how likely a rank in it is the cause of a stall (0..100) */
	unsigned flags;	  /* DET_* */
};

/* The row of state s (a "unknown" row for anything out of range). */
const struct det_state_info *det_state_info(enum rank_state s);

#define DET_MAX_COMMS 16 /* a rank's host records, its graph launches, its device's views */
#define DET_COMM_HIST 8	 /* FTBPF_COMM_HIST */

/* A communicator of a rank, as the uprobes saw it: NCCL's or MPI's (what the host issued),
 * the device's view of an NCCL one (DET_COMM_DEVICE: collectives its device began, from the
 * NCCL profiler plugin), or its CUDA graph launches (DET_COMM_GRAPH). */
#define DET_COMM_MPI	   0x2u /* FTBPF_COMM_* */
#define DET_COMM_GRAPH	   0x4u
#define DET_COMM_DEVICE	   0x8u
#define DET_COMM_UNALIGNED 0x10u /* its count may not start where the others' do: not compared */

struct det_comm {
	uint64_t id;	   /* the same on every member rank; 0: unknown (not comparable) */
	unsigned flags;	   /* DET_COMM_* */
	unsigned key_kind; /* where the kernel keeps it (struct ftbpf_comm_key) */
	uint64_t key_comm;
	uint64_t seq; /* collectives issued */
	uint64_t last_ns;
	uint64_t count; /* last collective: elements, data type, call */
	unsigned dtype;
	unsigned api;
	int rank, nranks; /* in the communicator; -1 / 0 unknown */
	struct {	  /* the last collectives issued on it, by seq % DET_COMM_HIST */
		uint64_t seq, count;
		unsigned api, dtype;
	} hist[DET_COMM_HIST];
};

/* What a decision asked a rank to do (its slot), kept at its exit. */
#define DET_ASKED_PREEMPT 1 /* save and exit: a preemption checkpoint completed */
#define DET_ASKED_RESTART 2 /* exit: a new generation was decided (a restart) */
#define DET_ASKED_STOP	  3 /* exit and do not requeue (restart budget spent) */

struct det_sample {
	int pid;
	int rank;
	int world_size; /* as the launcher says; -1 or 0 unknown */
	int exited;
	int killed;    /* ended by the agent's own action: never a failure, never "first to die" */
	int ends_hang; /* ended a run that was hung (lib/jobend.h): never a failure either */
	int asked;     /* DET_ASKED_*, 0 nothing */
	int exit_code; /* raw wait status */
	uint64_t exit_ns;
	uint32_t sender_pid; /* who sent the fatal signal, 0 unknown */
	char sender_comm[16];
	char task_state; /* main thread: R S D T t Z I, 0 when unknown */
	int cur_nr;	 /* syscall in flight on the main thread, -1 none */
	uint64_t enter_ns;
	uint64_t last_exit_ns;
	uint64_t progress_ns; /* last progress, 0 never */
	uint64_t adopted_ns;  /* baseline when nothing else is known */
	uint64_t cpu_ns;      /* main thread utime + stime */
	int cpu_valid;
	char wchan[48];
	uint64_t gpu_since_ns; /* main thread inside a GPU ioctl since, 0 when not */
	uint32_t gpu_req;      /* its request code */
	unsigned api;	       /* main thread inside this probed CUDA/NCCL call, 0 none */
	uint64_t api_since_ns;
	uint64_t api_seq;	/* NCCL collective in flight: its number on its communicator */
	uint64_t others_cpu_ns; /* the CPU time of its other threads (utime + stime) */
	int others_dstate;	/* another thread is in uninterruptible sleep (I/O) */
	uint64_t wait_since_ns; /* waiting on its peers (a blocking wait, or a busy-wait loop of
				   yields and empty polls) since, 0 when not */
	int ncomm;
	struct det_comm comm[DET_MAX_COMMS];
};

struct det_params {
	uint64_t soft_ns;
	uint64_t hard_ns;
	uint64_t spin_ns;
	uint64_t block_min_ns; /* shorter syscalls are not reported as blocked */
	int restart_code;      /* exit codes a decision asks for (42, 93): never a failure; */
	int stop_code;	       /* 0: none (ftbpf-ci) */
	/* soft_timeout = auto: soft_ns is the ceiling; a job whose ranks all wait on one
	 * another is hung after max(auto_k x its p99 step time, auto_floor_ns) */
	int soft_auto;
	double auto_k;
	uint64_t auto_floor_ns;
};

/* A job's own pace, for soft_timeout = auto (lib/cadence.c and lib/arrivals.c measure it). */
struct det_pace {
	uint64_t p99_step_ns; /* 0: unknown (too few steps seen yet) */
	int complete;	      /* every rank of the job is on this host (its world size is known) */
	uint64_t p99_coll_ns; /* p99 interval between the job's collectives, 0 unknown */
};

/* Per-rank memory (between scans) and output. Zero-initialise before first use. */
struct det_rank {
	uint64_t prev_cpu_ns, prev_ns;
	int have_prev;
	int prev_key;
	uint64_t key_since_ns;

	enum rank_state state;
	int syscall;	    /* BLOCKED/DSTATE: the syscall, else -1 */
	double cpu_frac;    /* main-thread CPU share over the last interval */
	double others_frac; /* the other threads' CPU (in cores) over the last interval */
	uint64_t prev_others_ns;
	uint64_t state_since_ns;
	uint64_t no_progress_ns;
	int score; /* how likely this rank is the cause of a stall */
	int hung;
	int culprit;
	char reason[192];
};

#define DET_MAX_CULPRITS 8

/* Which evidence named the culprit (det_job.rule): the job-wide view (lib/jobview.c) weighs
 * the waits-for graph against it. */
enum det_rule {
	DET_RULE_NONE = 0,  /* no culprit named */
	DET_RULE_DEAD,	    /* the first rank to die */
	DET_RULE_NCCL,	    /* lagging NCCL sequence numbers */
	DET_RULE_MAJORITY,  /* not where the majority is */
	DET_RULE_ONLY,	    /* the job's only rank */
	DET_RULE_SCORE,	    /* the most suspicious state */
	DET_RULE_ELSEWHERE, /* every rank waits alike: the cause may be outside */
	DET_RULE_DEVICE,    /* lagging collectives of a device (the NCCL profiler's view) */
	DET_RULE_ON_DEVICE, /* every rank issued the same collective and waits on its device:
			       no host-side evidence names one (no culprit) */
};

struct det_job {
	int live, exited, hung, hard;
	int failed; /* a rank died abnormally (signal or non-zero exit) */
	uint64_t no_progress_ns;
	uint64_t soft_ns, hard_ns; /* the timeouts applied (paced: shorter than configured) */
	int paced;		   /* soft_ns came from the job's pace */
	int paced_coll;		   /* from its collectives: their counts differ, none advances */
	int n_culprits;
	int culprits[DET_MAX_CULPRITS]; /* indices into the rank arrays */
	enum det_rule rule;
	char why[512];
};

/* What happened to a job, in words a user expects (status, events, metrics, --check). */
enum det_job_state {
	DJS_OK = 0,	/* live ranks, making progress */
	DJS_HUNG,	/* no live rank progressed for the soft timeout */
	DJS_FAILED,	/* a rank ended abnormally on its own */
	DJS_FINISHED,	/* every rank ended normally */
	DJS_PREEMPTED,	/* ranks saved and exited with the restart code (a preemption) */
	DJS_RESTARTING, /* a decided restart: ranks asked to exit for a new generation */
	DJS_STOPPED,	/* ranks exited with the stop code (restart budget spent) */
	DJS__N
};

const char *det_job_state_name(enum det_job_state st);

/* A hung run's end (lib/jobend.h): a hang stands while its ranks are ended. */
#define DET_HANG_END_NONE  0
#define DET_HANG_END_OTHER 1 /* ended by its launcher, an operator or itself */
#define DET_HANG_END_AGENT 2 /* ended by the agent's hard-timeout action */

/*
 * The job's state from its ranks (updated and evaluated: res is det_job_eval's verdict) and
 * whether it was hung as it began to end (DET_HANG_END_*). In order: hung (ended by the
 * agent's action), stopped, restarting, hung (ended otherwise, or live and hung), failed; then,
 * live ranks: preempted (some already saved and exited) or ok; none live: preempted (a rank
 * exited with the restart code) or finished.
 */
enum det_job_state det_job_state(const struct det_sample *s, int n, const struct det_job *res,
				 const struct det_params *p, int hang_end);

void det_params_from_seconds(struct det_params *p, double soft, double hard, double spin);
void det_rank_update(struct det_rank *d, const struct det_sample *s, uint64_t now,
		     const struct det_params *p);
/*
 * Evaluate one job: n ranks, already updated by det_rank_update at the same now. This is the
 * hang rule, for ftbpfd's jobs and ftbpf-ci's process trees alike: hung when no live rank made
 * progress for soft_ns. activity_ns: progress of the job that belongs to no rank (ftbpf-ci: a
 * process of the tree born or gone), 0 for none.
 */
void det_job_eval(struct det_rank *d, const struct det_sample *s, int n, uint64_t now,
		  uint64_t activity_ns, const struct det_params *p, struct det_job *out);
/*
 * The same at the job's own pace (pace NULL: det_job_eval). With p->soft_auto:
 *  - a job whose live ranks' collective counts differ on a communicator they share (host or
 *    device) is hung after max(auto_k x its p99 collective interval, auto_floor_ns) without
 *    progress (a collective issued is progress), whatever the posture of the ranks ahead and
 *    of the laggards but their own I/O (uninterruptible, a syscall not a wait) or another of
 *    their threads at work;
 *  - a job with a known step pace whose live ranks all wait (on one another, in a sleep,
 *    stopped: none computing, in its own I/O or waiting on its GPU) after max(auto_k x p99 step,
 *    auto_floor_ns);
 * at most soft_ns; the hard timeout keeps its distance from the soft one.
 */
void det_job_eval_paced(struct det_rank *d, const struct det_sample *s, int n, uint64_t now,
			uint64_t activity_ns, const struct det_params *p,
			const struct det_pace *pace, struct det_job *out);
/* Do the live ranks' counts differ on a communicator (host or device view) they share, whose
 * counts are comparable (an id, aligned), the lagging ranks not at work of their own (their
 * I/O, another thread's: d, updated; NULL: not asked)? */
int det_counts_differ(const struct det_rank *d, const struct det_sample *s, int n);
/* Is the rank doing work of its own (computing, its own I/O, its GPU busy), not waiting? */
int det_rank_working(const struct det_rank *d, const struct det_sample *s);
const char *det_state_name(enum rank_state s);
/* "killed by SIGKILL", "exited with code 3" into buf. */
const char *det_exit_text(int status, char *buf, int len);

#endif
