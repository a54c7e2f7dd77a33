/*
 * Userspace side of the BPF tracker: probes kernel features, loads bpf/tracker.bpf.c with the
 * matching program flavour, pins maps and links so they outlive the agent, and gives typed
 * access to the maps, the ring buffer and the task iterator.
 */
#ifndef FTBPF_TRACKER_USER_H
#define FTBPF_TRACKER_USER_H

#include <stddef.h>
#include <stdint.h>

#include "ftbpf/abi.h"

struct tracker;
struct bpf_link;

struct tracker_features {
	int tp_btf;	  /* 1: tp_btf programs, 0: raw_tp */
	int task_iter;	  /* task iterator (state snapshots, kernel stacks) */
	int oom;	  /* oom:mark_victim attached */
	int resumed;	  /* pinned maps from an earlier agent were found and reused */
	unsigned hz;	  /* syscall times from jiffies at this HZ (one-tick precision); 0: ktime */
	unsigned pid_max; /* size of the tracked-process bitmap */
	int uprobes;	  /* uprobes with attach cookies: CUDA/NCCL probes possible */
};

typedef void (*tracker_event_fn)(void *ctx, const struct ftbpf_event *e);

struct tracker_opts {
	/* where maps and links are pinned, so that they outlive us; NULL or "": nothing pinned
	 * (maps and links live as long as this process: a killed process leaves nothing) */
	const char *pin_dir;
	int reset; /* remove earlier pins first */
	uint32_t agent_tgid;
	tracker_event_fn on_event;
	void *ctx;
	const char *programs; /* "auto", "tp_btf", "raw_tp" */
	int no_task_iter;     /* use /proc even if the kernel has task iterators */
	int ktime_clock;      /* precise clock on the syscall path */
	int verbose;	      /* libbpf's own messages */
	int timer_term_first; /* kernel-enforced timers send SIGTERM (escalation) */
};

/* NULL on failure, with a message in err saying which step failed and why. */
struct tracker *tracker_open(const struct tracker_opts *o, char *err, size_t errlen);
/* Stop consuming; pinned maps and links stay (the kernel keeps tracking). */
void tracker_close(struct tracker *t);
/* Remove every pin under dir (used by --reset-state and tests). */
int tracker_unpin_all(const char *dir);
const struct tracker_features *tracker_features(const struct tracker *t);

int tracker_epoll_fd(const struct tracker *t);
/* Hand at most max ring-buffer records to on_event. 1: the bound was reached (more may wait;
 * the epoll fd stays readable), 0: drained, or -errno. */
int tracker_consume(struct tracker *t, int max);

int tracker_set_tracked(struct tracker *t, uint32_t tgid, int on);
int tracker_is_tracked(const struct tracker *t, uint32_t tgid);
int tracker_proc_get(const struct tracker *t, uint32_t tgid, struct ftbpf_proc *ret);
int tracker_proc_put(struct tracker *t, uint32_t tgid, const struct ftbpf_proc *p);
int tracker_proc_delete(struct tracker *t, uint32_t tgid);
int tracker_thread_get(const struct tracker *t, uint32_t tid, struct ftbpf_thread *ret);
int tracker_thread_delete(struct tracker *t, uint32_t tid);
/* A record for a thread the kernel has not seen in a syscall yet: in syscall nr since since_ns.
 * -EEXIST when the kernel has one already (then it is left as it is). */
int tracker_thread_seed(struct tracker *t, uint32_t tid, uint32_t tgid, int nr, uint64_t since_ns);
typedef int (*tracker_proc_fn)(void *ctx, uint32_t tgid, const struct ftbpf_proc *p);
int tracker_foreach_proc(const struct tracker *t, tracker_proc_fn fn, void *ctx);
uint64_t tracker_stat(const struct tracker *t, enum ftbpf_stat idx);

/*
 * Slots: a registered process's own one-entry mmapable map, pinned as PIN_DIR/slot_TGID and
 * entered in the slots map for the BPF program. Create returns the fd (to pass to the process)
 * and the agent's mapping; both are the caller's until tracker_slot_remove.
 */
struct ftbpf_slot;
/* start_ns: the process's start time since boot (its incarnation), kept in the slot. */
int tracker_slot_create(struct tracker *t, uint32_t tgid, uint64_t start_ns, int *ret_fd,
			struct ftbpf_slot **ret_slot);
/* Re-open a pinned slot after an agent restart: -ENOENT when there is none, -ESTALE (and it
 * is removed) when it was made for another process at the pid. */
int tracker_slot_open(struct tracker *t, uint32_t tgid, uint64_t start_ns, int *ret_fd,
		      struct ftbpf_slot **ret_slot);
void tracker_slot_remove(struct tracker *t, uint32_t tgid, int fd, struct ftbpf_slot *s);
/* Remove every pinned slot whose tgid keep() rejects (after a restart: the slots of processes
 * that ended, or were replaced at their pid, while no agent ran). Returns how many. */
int tracker_slots_prune(struct tracker *t, int (*keep)(void *ctx, uint32_t tgid), void *ctx);

/* Treat character devices of this major as GPU devices (ioctl tracking). */
int tracker_gpu_major_add(struct tracker *t, unsigned major);

/* Did tgid map a file executable since the last call? (clears the flag) */
int tracker_maps_dirty_take(struct tracker *t, uint32_t tgid);
/*
 * Attach the CUDA/NCCL entry (or return) program at file offset `offset` of the library at
 * path, for every process that maps it, with cookie (see enum ftbpf_api). *ret is the caller's.
 */
int tracker_uprobe_attach(struct tracker *t, const char *path, size_t offset, uint64_t cookie,
			  int retprobe, struct bpf_link **ret);
/* Step cadence of a rank (struct ftbpf_cad): add starts it (0 also when it exists), get reads. */
int tracker_cad_add(struct tracker *t, uint32_t tgid);
int tracker_cad_get(const struct tracker *t, uint32_t tgid, struct ftbpf_cad *ret);
typedef int (*tracker_comm_fn)(void *ctx, const struct ftbpf_comm_key *k,
			       const struct ftbpf_comm *c);
int tracker_foreach_comm(const struct tracker *t, tracker_comm_fn fn, void *ctx);
/* The record and its arrivals go together. */
int tracker_comm_delete(struct tracker *t, const struct ftbpf_comm_key *k);
/* When the collectives of a communicator record were issued (struct ftbpf_arrivals). */
int tracker_arrivals_get(const struct tracker *t, const struct ftbpf_comm_key *k,
			 struct ftbpf_arrivals *ret);

/* The pinned copy of the timer table. */
int tracker_timer_put(struct tracker *t, const struct ftbpf_timer_key *k,
		      const struct ftbpf_timer_val *v);
int tracker_timer_delete(struct tracker *t, const struct ftbpf_timer_key *k);
typedef int (*tracker_timer_fn)(void *ctx, const struct ftbpf_timer_key *k,
				const struct ftbpf_timer_val *v);
int tracker_foreach_timer(const struct tracker *t, tracker_timer_fn fn, void *ctx);

/*
 * Snapshot every thread of every tracked process through the task iterator; with stacks,
 * kernel stacks too. *ret is malloc'ed (caller frees). -EOPNOTSUPP without task iterators.
 */
int tracker_snapshot(struct tracker *t, int stacks, struct ftbpf_task_snap **ret, size_t *ret_n);

/* Feature probe shared with the benchmark: can tp_btf programs load and attach here? */
int tracker_probe_tp_btf(void);
/* Make sure bpffs is mounted where dir lives (mounts /sys/fs/bpf if needed). */
int tracker_ensure_bpffs(const char *dir);

#endif
