/*
 * The one sampling path, for ftbpfd and ftbpf-ci alike: what a watched process is doing now,
 * as the detector's input (struct det_sample), from the tracker's maps and the latest task
 * snapshot; from /proc where there is no kernel side (ftbpf-ci --no-bpf, or BPF unavailable).
 * It also formats what both report of a thread: its kernel stack. The detector (lib/detector.h)
 * is the one hang rule; this module only observes.
 */
#ifndef FTBPF_SAMPLE_H
#define FTBPF_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "ftbpf/abi.h"
#include "lib/detector.h"

struct tracker;
struct ksyms;
struct json_object;

struct sampler {
	struct tracker *tr;	      /* borrowed; NULL: /proc only */
	struct ftbpf_task_snap *snap; /* owned: the latest task snapshot */
	size_t nsnap;
	struct ksyms *ksyms;	 /* owned, loaded with a tracker at init, else on first need */
	uint64_t ksyms_retry_ns; /* a failed load is tried again from then (CLOCK_MONOTONIC) */
};

/* What the /proc fallback remembers of a process between samples (its progress estimate). */
struct sample_memory {
	uint64_t io;	       /* read + write syscalls (/proc/PID/io) */
	uint64_t io_change_ns; /* when io last changed: progress */
	int nr;		       /* syscall in flight (/proc/PID/task/PID/syscall), -1 none */
	uint64_t nr_since_ns;
};

void sampler_init(struct sampler *sp, struct tracker *tr);
void sampler_fini(struct sampler *sp);
/* Take a new task snapshot (with kernel stacks when asked). Kept as is without iterators. */
int sampler_refresh(struct sampler *sp, int stacks);
/* The snapshot record of thread tid, NULL when none. */
const struct ftbpf_task_snap *sampler_task(const struct sampler *sp, uint32_t tid);
/*
 * Fill the live part of s for process pid at now: main thread state and CPU time, the syscall
 * or probed CUDA/NCCL call in flight, progress, GPU-driver activity, wait channel. mem: the
 * /proc fallback's memory of the process (used only without a tracker). -ESRCH when gone.
 */
int sampler_sample(struct sampler *sp, int pid, uint64_t now, struct det_sample *s,
		   struct sample_memory *mem);
/*
 * The step cadence of rank pid at now (lib/cadence.h): its kernel counters, with the wait (or
 * read) open now counted up to now. -ENOENT when the kernel keeps none for it (it is started
 * then: the next sample has one).
 */
struct cad_obs;
int sampler_cadence(struct sampler *sp, int pid, uint64_t now, struct cad_obs *o);
/* Threads of pid (from the snapshot, or /proc). */
int sampler_nthreads(const struct sampler *sp, int pid);
/* The kernel stack of thread tid of pid into ret: from the snapshot when it has stacks, else
 * /proc/PID/task/TID/stack (its lines without their address prefix). 0 or -errno (ret holds
 * what was read: no frame when nothing could be). */
struct kstack;
int sampler_kstack(struct sampler *sp, int pid, int tid, struct kstack *ret);
/* The same as a JSON array, one frame per string (a new array, the caller's). */
struct json_object *sampler_kstack_json(struct sampler *sp, int pid, int tid);
/* 'R', 'S', 'D', 'T', 't', 'Z', 'X', 'I' for a snapshot record's state */
char sampler_state_char(const struct ftbpf_task_snap *t);

#endif
