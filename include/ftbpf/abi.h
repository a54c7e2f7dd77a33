/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Records shared by the BPF tracker (bpf/tracker.bpf.c) and the agent (user/watch/tracker.c).
 * Fixed-width types only, no pointers, no bool: both compilers must lay them out alike.
 */
#ifndef FTBPF_TRACKER_H
#define FTBPF_TRACKER_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define FTBPF_COMM_LEN	   16
#define FTBPF_JOB_LEN	   64
#define FTBPF_PATH_LEN	   128
#define FTBPF_STACK_DEPTH  24
#define FTBPF_MAX_SYSCALLS 512
#define FTBPF_MAX_PROCS	   16384
#define FTBPF_MAX_THREADS  65536
/* Two start times of a process within this are the same process: /proc gives clock ticks
 * (10 ms at USER_HZ 100), the kernel nanoseconds. */
#define FTBPF_START_SLACK_NS 20000000ull

/* procs.flags */
#define FTBPF_PROC_RANK	  0x1u /* adopted as a rank */
#define FTBPF_PROC_CHILD  0x2u /* a descendant of a rank (data-loader worker, helper) */
#define FTBPF_PROC_EXITED 0x4u /* the whole thread group has exited */
#define FTBPF_PROC_OOM	  0x8u /* chosen as OOM victim */

/* sysclass values: how a completed syscall of a rank's main thread counts as progress */
#define FTBPF_SC_PROGRESS 0u /* always progress */
#define FTBPF_SC_WAIT	  1u /* poll/select/epoll/recv...: progress only if ret > 0 */
#define FTBPF_SC_IDLE	  2u /* sched_yield, nanosleep, pause...: never progress */
#define FTBPF_SC_FUTEX	  3u /* progress if ret >= 0 (woken, or woke someone) */
#define FTBPF_SC_MASK	  0x0fu
/* sysclass bits beside the class, for the step cadence of a rank's main thread */
#define FTBPF_SC_CAD_WAIT 0x10u /* a wait on the peers: futex, poll, epoll, recv, sched_yield */
#define FTBPF_SC_CAD_READ 0x20u /* a read (a data loader's input; of a socket: a wait) */

/*
 * Step cadence of a rank (map `cadence`, key: tgid; created by the agent for each rank, updated
 * by BPF at its main thread's syscalls and probed calls). A wait span is a run of waits on the
 * peers (or one probed CUDA/NCCL call) whose gaps are under FTBPF_CAD_GAP_NS: a blocking wait,
 * or a busy-wait loop of yields and empty polls (MPI). Times are precise CLOCK_MONOTONIC.
 */
#define FTBPF_CAD_GAP_NS      1000000ull /* waits closer than this are one span */
#define FTBPF_CAD_READ_MIN_NS 1000000ull /* shorter reads are not a data loader's stall */
#define FTBPF_CAD_RING	      32	 /* the last spans (a power of two) */
#define FTBPF_CAD_OWN_RING    64	 /* the last own spans (a power of two) */

struct ftbpf_cad_span {
	__u64 start_ns;
	__u64 end_ns;
};

/* What the main thread did between its collectives that was not computing on its CPU: a span
 * of one kind, spans of a kind closer than FTBPF_CAD_GAP_NS merged. A straggler's lateness is
 * told apart by them (lib/arrivals.c): its own GPU work, its input, or its CPU (neither). */
#define FTBPF_OWN_GPU  1u /* inside a CUDA synchronisation: its device works (or waits) */
#define FTBPF_OWN_READ 2u /* blocked reading a file or a pipe for 1 ms or more: its input */
#define FTBPF_OWN_COMM 3u /* inside a blocking MPI or NCCL call: waiting on its peers */

struct ftbpf_cad_own {
	__u64 start_ns;
	__u32 len_us;
	__u32 kind; /* FTBPF_OWN_* */
};

struct ftbpf_cad {
	__u64 wait_ns; /* closed wait spans: their total length */
	__u64 spans;   /* and their number (ring[spans % FTBPF_CAD_RING] is the next) */
	__u64 read_ns; /* reads of FTBPF_CAD_READ_MIN_NS or more: their total length */
	__u64 reads;
	struct ftbpf_cad_span ring[FTBPF_CAD_RING];
	/* own spans: closed ones in own[nown % FTBPF_CAD_OWN_RING], the open one apart */
	__u64 nown;
	__u64 own_start_ns; /* the open own span, 0 none */
	__u64 own_last_ns;
	__u32 own_kind;
	__u32 pad;
	struct ftbpf_cad_own own[FTBPF_CAD_OWN_RING];
};

/* Per-thread state of a tracked thread; key: tid. Written by BPF only. */
struct ftbpf_thread {
	__u32 tgid;
	__s32 cur_nr;	    /* syscall in flight, -1 when none */
	__u64 enter_ns;	    /* CLOCK_MONOTONIC entry time of cur_nr */
	__u64 last_exit_ns; /* last syscall exit */
	__s64 last_ret;
	__s32 last_nr;
	__u32 pad;
	__u64 syscalls;	    /* completed syscalls */
	__u64 progress_ns;  /* last completion that counts as progress (main thread only) */
	__u64 progress;	    /* number of such completions */
	__u64 first_ns;	    /* first syscall seen */
	__u64 gpu_ioctls;   /* ioctls on GPU device files (by device major) */
	__u64 gpu_since_ns; /* inside a GPU ioctl since, 0 when not */
	__u64 gpu_last_ns;  /* last GPU ioctl completed */
	__u32 gpu_req;	    /* request code of the GPU ioctl in flight or last */
	__u32 cad_cls;	    /* cadence class of the syscall in flight (FTBPF_SC_CAD_*) */
	/* CUDA/NCCL entry points (uprobes): the outermost probed call in flight */
	__u32 api;	    /* enum ftbpf_api of the call in flight, 0 when none */
	__u32 api_depth;    /* nesting of probed calls inside it (informational) */
	__u64 api_since_ns; /* its entry time */
	__u64 api_comm;	    /* NCCL calls: the communicator (address in the process) */
	__u64 api_seq;	    /* NCCL collectives: its sequence number on that communicator */
	__u64 api_calls;    /* probed calls entered */
	__u64 api_last_ns;  /* last probed call returned */
	__u32 mmap_exec;    /* inside an mmap with PROT_EXEC of a file */
	__u32 api_lost;	    /* probed calls whose return was never seen (ended by a later sign) */
	__u64 api_sp;	    /* the call in flight: stack pointer at its entry (which call it is) */
	__u64 api_ra;	    /* and its return address */
	/* step cadence (main thread): the wait span open now, precise CLOCK_MONOTONIC times */
	__u64 cad_enter_ns; /* entry of the cadence-classed syscall in flight, 0 none */
	__u64 cad_start_ns; /* the open wait span: its start, 0 none */
	__u64 cad_last_ns;  /* and the end of its last wait */
};

/*
 * CUDA driver and NCCL entry points probed with uprobes. The attach cookie carries the api id in
 * its low byte and, for NCCL calls, the argument positions (1-based) of the communicator, the
 * element count and the data type: cookie = api | comm << 8 | count << 12 | dtype << 16 | op << 20.
 */
enum ftbpf_api {
	FTBPF_API_NONE = 0,
	/* CUDA synchronisation */
	FTBPF_API_CU_STREAM_SYNC = 1,
	FTBPF_API_CU_CTX_SYNC,
	FTBPF_API_CU_EVENT_SYNC,
	FTBPF_API_CU_STREAM_WAIT_EVENT,
	FTBPF_API_CU_MEMCPY, /* the synchronous cuMemcpy* calls */
	FTBPF_API_CU_LAUNCH, /* cuLaunchKernel (only with gpu_probe_launch) */
	/* cuGraphLaunch: replays captured work, collectives included, without calling NCCL: its
	 * launches are numbered on a pseudo-communicator of the process (FTBPF_COMM_GRAPH) */
	FTBPF_API_CU_GRAPH_LAUNCH = 7,
	/* collectives, numbered per communicator: NCCL's (16..20) and MPI's (21..31; a
	 * non-blocking one is numbered where it is issued, as MPI orders them) */
	FTBPF_API_NCCL_ALLREDUCE = 16,
	FTBPF_API_NCCL_ALLGATHER,
	FTBPF_API_NCCL_REDUCESCATTER,
	FTBPF_API_NCCL_BROADCAST,
	FTBPF_API_NCCL_REDUCE,
	FTBPF_API_MPI_ALLREDUCE = 21,
	FTBPF_API_MPI_BCAST,
	FTBPF_API_MPI_REDUCE,
	FTBPF_API_MPI_ALLGATHER,
	FTBPF_API_MPI_ALLTOALL,
	FTBPF_API_MPI_BARRIER,
	FTBPF_API_MPI_GATHER,
	FTBPF_API_MPI_SCATTER,
	FTBPF_API_MPI_REDUCE_SCATTER,
	FTBPF_API_MPI_SCAN,
	FTBPF_API_MPI_COLL, /* the other MPI collectives (the v variants, exscan, ...) */
	/* point-to-point (numbered separately) */
	FTBPF_API_NCCL_SEND = 32,
	FTBPF_API_NCCL_RECV,
	FTBPF_API_MPI_SEND = 34,
	FTBPF_API_MPI_RECV,
	FTBPF_API_MPI_SENDRECV,
	FTBPF_API_MPI_ISEND,
	FTBPF_API_MPI_IRECV,
	FTBPF_API_MPI_PROBE,
	/* NCCL others */
	FTBPF_API_NCCL_GROUP_START = 48,
	FTBPF_API_NCCL_GROUP_END,
	FTBPF_API_NCCL_COMM_INIT, /* ncclCommInitRank, ncclCommInitRankConfig */
	FTBPF_API_NCCL_COMM_SPLIT,
	FTBPF_API_NCCL_COMM_ABORT,
	FTBPF_API_NCCL_COMM_DESTROY,
	FTBPF_API_MPI_WAIT = 54, /* MPI_Wait, _Waitall, _Waitany, _Waitsome: a wait on requests */
	/* ftbpf's NCCL profiler plugin (libnccl-profiler-ftbpf.so): a device began a collective
	 * (comm hash, collectives begun, call, count): numbered on a FTBPF_COMM_DEVICE record */
	FTBPF_API_DEV_REACHED = 55,
	FTBPF_API_MPI_COMM_FREE = 57, /* MPI_Comm_free(MPI_Comm *): its record goes */
	FTBPF_API_DEV_DONE = 58,      /* the profiler plugin's communicator finalized: its device
					 records go (ftbpf_nccl_device_done(hash)) */
	FTBPF_API__MAX = 64,
};

#define FTBPF_API_IS_CUDA(a) ((a) >= 1 && (a) < 16)
#define FTBPF_API_IS_COLL(a) ((a) >= 16 && (a) < 32)
#define FTBPF_API_IS_P2P(a)  ((a) >= 32 && (a) < 48)
#define FTBPF_API_IS_MPI(a)                                                                        \
	(((a) >= FTBPF_API_MPI_ALLREDUCE && (a) <= FTBPF_API_MPI_COLL) ||                          \
	 ((a) >= FTBPF_API_MPI_SEND && (a) <= FTBPF_API_MPI_PROBE) || (a) == FTBPF_API_MPI_WAIT)
/* A CUDA call whose time is the device's: a synchronisation or a synchronous copy. */
#define FTBPF_API_IS_SYNC(a) ((a) >= FTBPF_API_CU_STREAM_SYNC && (a) <= FTBPF_API_CU_MEMCPY)
#define FTBPF_COOKIE(api, comm, count, dtype, op)                                                  \
	((__u64)(api) | (__u64)(comm) << 8 | (__u64)(count) << 12 | (__u64)(dtype) << 16 |         \
	 (__u64)(op) << 20)
/*
 * The call also gets a return probe: it may block, and "inside it since" is worth knowing.
 * Calls that only enqueue work (collectives, launches) get an entry probe alone: a uprobe hit
 * costs microseconds, and their numbering needs only the entry.
 */
#define FTBPF_COOKIE_RET (1ull << 24)
/* MPI calls: where the library's MPI_COMM_WORLD is (Open MPI's ompi_mpi_comm_world) from the
 * probed function, in bytes (signed), in the high 32 bits; 0 when the library has none (MPICH:
 * its MPI_COMM_WORLD is the integer handle 0x44000000). Only MPI_COMM_WORLD gets an id that is
 * the same on every rank: a split's or a dup's could be told apart from no other. */
#define FTBPF_COOKIE_WORLD(c) ((__s32)((c) >> 32))

/* An NCCL communicator of a tracked process; key: (tgid, communicator address). */
struct ftbpf_comm_key {
	__u32 tgid;
	__u32 kind; /* FTBPF_CK_* */
	__u64 comm;
};

/* One collective issued on a communicator (its sequence number, call, element count, type). */
struct ftbpf_coll {
	__u64 seq;
	__u64 count;
	__u32 api;
	__u32 dtype;
};

#define FTBPF_COMM_HIST 8 /* the last collectives of a communicator (a power of two) */

struct ftbpf_comm {
	__u64 id;      /* the same on every rank: from the ncclUniqueId (split: parent id, color) */
	__u64 seq;     /* collectives issued on it */
	__u64 p2p;     /* sends and receives issued on it */
	__u64 last_ns; /* last one issued (precise CLOCK_MONOTONIC) */
	__u64 count;   /* last collective: element count */
	__u32 api;     /* last collective: enum ftbpf_api */
	__u32 dtype;   /* ncclDataType_t */
	__u32 op;      /* ncclRedOp_t, when the call has one */
	__s32 rank;    /* rank in the communicator, -1 unknown */
	__s32 nranks;  /* 0 unknown */
	__u32 flags;   /* FTBPF_COMM_* */
	struct ftbpf_coll hist[FTBPF_COMM_HIST]; /* by seq % FTBPF_COMM_HIST */
};

#define FTBPF_COMM_NO_ID  0x1u /* first seen at a collective (created before probes attached) */
#define FTBPF_COMM_MPI	  0x2u /* an MPI communicator (id from its handle, see gpu.bpf.h) */
#define FTBPF_COMM_GRAPH  0x4u /* the process's CUDA graph launches (key.comm 0, key.kind 2) */
#define FTBPF_COMM_DEVICE 0x8u /* collectives its device began (NCCL profiler; key.kind 1) */
/* Its count may not start where the other ranks' do: it existed when this agent started (calls
 * made while no agent ran were not counted, on each rank differently): never compared. */
#define FTBPF_COMM_UNALIGNED 0x10u

/* comm_key.kind: what the record numbers */
#define FTBPF_CK_HOST	    0u /* collectives the host issued on the communicator at key.comm */
#define FTBPF_CK_DEVICE	    1u /* collectives the device began on the communicator hash key.comm */
#define FTBPF_CK_GRAPH	    2u /* CUDA graph launches */
#define FTBPF_GRAPH_COMM_ID 0x4352415048ull /* the same on every rank: graphs replay per step */

/*
 * When each collective was issued (map `arrivals`, key as `comms`): the last FTBPF_ARR_RING of
 * them by seq % FTBPF_ARR_RING, precise CLOCK_MONOTONIC. Enough that a scan every 0.2 s loses
 * none at 600 collectives a second; an entry whose seq is not the one wanted was overwritten.
 */
#define FTBPF_ARR_RING 128 /* a power of two */

struct ftbpf_arrival {
	__u64 seq;
	__u64 t_ns;
};

struct ftbpf_arrivals {
	struct ftbpf_arrival a[FTBPF_ARR_RING];
};

/* Per-process record; key: tgid. Created by the agent (ranks) or by BPF (children). */
struct ftbpf_proc {
	__u32 tgid;
	__u32 owner; /* tgid of the rank this process belongs to (itself for a rank) */
	__u32 ppid;
	__u32 flags; /* FTBPF_PROC_* */
	__s32 rank;
	__s32 local_rank;
	__s32 world_size;
	__u32 uid;
	__u32 source; /* adoption source, enum ident_source in user/lib/ident.h */
	__u32 pad;
	__u64 adopted_ns; /* CLOCK_MONOTONIC */
	__u64 start_ns;	  /* task start_boottime (ns): tells a reused pid apart */
	__u64 exit_ns;
	__s32 exit_code;	/* raw wait status: code << 8 | signal */
	__u32 fatal_sig;	/* last fatal signal generated for the process */
	__u32 fatal_sender_pid; /* tgid of who generated it (itself when the kernel did) */
	__s32 fatal_si_code;
	__u64 fatal_ns;
	__u64 sig_generated;
	__u64 sig_delivered;
	/* Event budget of a rank (and of its children): a generic cell-rate limiter. An event may
	 * go to the ring buffer while ev_tat <= now + burst x interval; it then moves ev_tat one
	 * interval on. Events over the budget are folded: counted here, not sent. */
	__u64 ev_tat;
	__u64 ev_folded;
	__u32 nchildren; /* a rank: its live tracked descendants */
	__u32 nthreads;	 /* threads with a record in `threads` */
	__u32 flags2;
	__u32 pad2;
	char fatal_sender_comm[FTBPF_COMM_LEN];
	char comm[FTBPF_COMM_LEN];
	char job[FTBPF_JOB_LEN];
};

enum ftbpf_event_type {
	FTBPF_EV_EXEC = 1,
	FTBPF_EV_FORK = 2,
	FTBPF_EV_EXIT = 3, /* a child's procs entry is deleted at its exit: owner names its rank */
	FTBPF_EV_SIGNAL = 4,  /* generated for a tracked process */
	FTBPF_EV_DELIVER = 5, /* delivered to a tracked thread */
	FTBPF_EV_OOM = 6,
	FTBPF_EV_TIMER = 7, /* a slot timer fired at syscall entry: sig, code = syscall nr,
			       result = lateness in us, filename = scope */
};

/* Ring-buffer record. */
struct ftbpf_event {
	__u32 type;
	__u32 tgid; /* subject process */
	__u32 tid;
	__u32 ppid; /* EXEC: parent; FORK: parent tgid */
	__u64 ts_ns;
	__s32 sig;
	__s32 code;	  /* EXIT: wait status; SIGNAL: si_code; */
	__s32 result;	  /* SIGNAL: trace result (0 = delivered) */
	__u32 sender_pid; /* SIGNAL: tgid of the sender */
	__u32 sender_tid;
	__u32 flags; /* proc flags at the time */
	__u32 owner; /* FORK, EXIT, EXEC of a tracked process: the rank it belongs to */
	__u32 pad;
	char comm[FTBPF_COMM_LEN];
	char sender_comm[FTBPF_COMM_LEN];
	char filename[FTBPF_PATH_LEN];
};

/* Task-iterator record: one per thread of a tracked process. */
struct ftbpf_task_snap {
	__u32 tid;
	__u32 tgid;
	__u32 state; /* task->__state */
	__s32 exit_state;
	__u64 utime_ns;
	__u64 stime_ns;
	__u64 nvcsw;
	__u64 nivcsw;
	__s32 on_cpu;
	__s32 nr_stack; /* kernel stack frames in stack[], -errno when unavailable */
	__u64 stack[FTBPF_STACK_DEPTH];
	char comm[FTBPF_COMM_LEN];
};

/* stats array indices */
enum ftbpf_stat {
	FTBPF_STAT_RB_DROPS = 0,
	FTBPF_STAT_THREAD_FULL = 1,
	FTBPF_STAT_PROC_FULL = 2,
	FTBPF_STAT_SIGNALS_SENT = 3, /* timer signals sent by the BPF program */
	FTBPF_STAT_COMM_FULL = 4,    /* NCCL communicators not recorded: map full */
	FTBPF_STAT_API_CALLS = 5,    /* probed CUDA/NCCL calls of tracked processes */
	FTBPF_STAT_FOLDED = 6,	     /* events over a rank's budget, not sent */
	FTBPF_STAT_EXEC_FOLDED = 7, /* exec events over a user's budget (the agent rescans /proc) */
	FTBPF_STAT_CHILD_CAP = 8,   /* forks not tracked: the rank has max_children already */
	FTBPF_STAT_THREAD_CAP = 9,  /* threads without a record: the process has max_threads */
	FTBPF_STAT_CHILDREN = 10,   /* tracked children alive now */
	FTBPF_STAT_SIG_IGNORED = 11,  /* signals to ranks the kernel ignored or merged (no event) */
	FTBPF_STAT_API_LOST_RET = 12, /* probed calls whose return was never seen */
	FTBPF_STAT_ARR_FULL = 13,     /* collective arrival records not kept: map full */
	FTBPF_STAT__MAX = 16,
};

/* Persistent copy of the agent's countdown-timer table (pinned; survives agent restarts).
 * Written and read by the agent only. */
#define FTBPF_TIMER_SCOPE_LEN 128
struct ftbpf_timer_key {
	__u32 pid;
	char scope[FTBPF_TIMER_SCOPE_LEN];
};

struct ftbpf_timer_val {
	__u64 deadline_ns; /* CLOCK_MONOTONIC */
	__u64 start_ns;	   /* the process's start time: a reused pid does not inherit it */
	__u32 sig;
	__u32 uid;
	__u32 source;
	__u32 pad;
};

#endif
