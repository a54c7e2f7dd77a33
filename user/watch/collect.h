/*
 * What the agent shows of a process beyond its sample (watch/sample.h), read into plain
 * structs: each thread's state, syscall in flight, wait channel and kernel stack; a process at
 * a timer's expiry; the GPU ioctls of a rank's threads; the processes a rank forked; the
 * kernel side's counters. Read from the tracker's maps, the task snapshot and /proc here;
 * agent/views.c formats them, and reads nothing itself.
 */
#ifndef FTBPF_COLLECT_H
#define FTBPF_COLLECT_H

#include <stdint.h>

#include "ftbpf/abi.h"
#include "lib/kstack.h"

struct tracker;
struct sampler;

/* One thread of a process. */
struct collect_thread {
	int tid;
	char comm[FTBPF_COMM_LEN + 1];
	char state;	 /* 'R', 'S', 'D', 'T', 't', 'Z', 'X', 'I' */
	uint64_t cpu_ns; /* user + system */
	int tracked;	 /* the kernel side has a record of the thread: the four below are read */
	int nr;		 /* syscall in flight, -1 none */
	uint64_t enter_ns;
	uint64_t syscalls;     /* completed */
	uint64_t last_exit_ns; /* 0: none yet */
	char wchan[64];	       /* "" none */
	struct kstack kstack;  /* as sampler_kstack reads it: no frame when unreadable */
};

typedef int (*collect_thread_fn)(void *ctx, const struct collect_thread *t);
/* Every thread of process pid, in the task snapshot's order (refresh it, with stacks, first),
 * or /proc's without the task iterator or for a process the snapshot does not hold. fn's non-zero return ends the walk and is returned;
 * else 0, or -errno when /proc could not be listed. */
int collect_threads(struct tracker *tr, struct sampler *sp, int pid, collect_thread_fn fn,
		    void *ctx);

/* The kernel stack of thread tid of pid (watch/sample.h's sampler_kstack): 0 or -errno. */
int collect_kstack(struct sampler *sp, int pid, int tid, struct kstack *ret);

/* A process as a timer's expiry reports it: its main thread now. */
struct collect_proc {
	int has_stat; /* /proc/PID/task/PID/stat was read: state and comm */
	char state;
	char comm[17];
	int in_syscall; /* the kernel side has a record with a syscall in flight: nr, enter_ns */
	int nr;
	uint64_t enter_ns;
	char wchan[64];	      /* "" none */
	int has_kstack;	      /* /proc/PID/task/PID/stack was read */
	struct kstack kstack; /* its lines as they are (with their address prefix) */
};

void collect_proc(struct tracker *tr, int pid, struct collect_proc *ret);

/* GPU ioctls of every thread of rank pid in the snapshot (its main thread's without one). */
struct collect_gpu {
	uint64_t ioctls;
	uint64_t last_ns; /* the latest completed, 0 none */
};

void collect_gpu(struct tracker *tr, const struct sampler *sp, int pid, struct collect_gpu *ret);

/* A process of a rank's tree that is not a rank (the procs map). */
struct collect_child {
	uint32_t pid, ppid;
	char comm[FTBPF_COMM_LEN + 1];
	int exited;
};

typedef int (*collect_child_fn)(void *ctx, const struct collect_child *c);
/* The processes rank owner forked, in the map's order. As collect_threads for fn; -errno
 * when the map could not be walked. */
int collect_children(struct tracker *tr, int owner, collect_child_fn fn, void *ctx);

/* What a registered rank's slot shows now (ftbpf/slot.h: the client library writes it in the
 * rank, the kernel and the agent read it with atomic loads). */
struct collect_slot {
	uint64_t ping_ns; /* the last ping, 0 none */
	uint64_t step;
	uint64_t step_ns;     /* when step was reported, 0 never */
	int timers;	      /* armed slot timers */
	uint64_t earliest_ns; /* the earliest of their deadlines, 0 none */
};

struct ftbpf_slot;
void collect_slot(const struct ftbpf_slot *s, struct collect_slot *ret);

/* The kernel side's counters, indexed by enum ftbpf_stat. */
void collect_stats(struct tracker *tr, uint64_t ret[FTBPF_STAT__MAX]);

#endif
