/*
 * Countdown timers with torch.distributed.elastic semantics: a process acquires a timer for a
 * scope with an expiry; releasing it disarms it; when one expires the process is reaped with
 * the timer's signal and all its timers are cleared; releasing an expired timer is a no-op.
 * This module is the authoritative table; it owns each entry's pidfd. No I/O besides pidfds.
 */
#ifndef FTBPF_TIMERS_H
#define FTBPF_TIMERS_H

#include <stdint.h>
#include <sys/types.h>

#define TIMER_SCOPE_LEN	   128
#define TIMERS_MAX	   65536
#define TIMERS_PER_PID_MAX 256

enum timer_source { TIMER_SRC_FIFO = 1, TIMER_SRC_CTL = 2, TIMER_SRC_SLOT = 3 };

struct timer {
	int pid;
	int pidfd; /* owned */
	uid_t uid;
	enum timer_source source;
	int sig;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
	uint64_t acquired_ns;
	char scope[TIMER_SCOPE_LEN];
};

struct timers {
	struct timer *v; /* owned */
	int n, cap;
	int uid_max; /* timers of one non-root user; 0: no limit */
	uint64_t acquired, released, expired, rejected_full, rejected_user;
	/* Closes a pidfd the table lets go of (the owner's effect); NULL: none is closed. */
	void (*close_fd)(int fd);
};

void timers_init(struct timers *t);
void timers_fini(struct timers *t);
/*
 * Arm (or re-arm) the timer (pid, scope). pidfd is taken over on success and when the entry
 * already has one (then the old one is closed: a re-arm names the newest process at pid).
 * Returns 0, -ENOSPC (table or per-pid limit) or -EDQUOT (the non-root uid's limit).
 */
int timers_acquire(struct timers *t, int pid, int pidfd, uid_t uid, const char *scope,
		   uint64_t deadline_ns, int sig, enum timer_source src, uint64_t now);
/* Disarm; -ENOENT when there is no such timer (released twice, or already expired). */
int timers_release(struct timers *t, int pid, const char *scope);
/* Drop every timer of pid (it exited or was reaped). Returns how many. */
int timers_clear_pid(struct timers *t, int pid);
/* Earliest deadline, 0 when none. */
uint64_t timers_next_deadline(const struct timers *t);
/* How many timers pid holds; *earliest (0: none yet) is lowered to the earliest of their
 * deadlines. */
int timers_of_pid(const struct timers *t, int pid, uint64_t *earliest);
/* Index of an expired timer (deadline <= now), -1 when none. */
int timers_first_expired(const struct timers *t, uint64_t now);
int timers_count_pid(const struct timers *t, int pid);
int timers_count_uid(const struct timers *t, uid_t uid);
/* "fifo", "ctl" or "slot" */
const char *timers_source_name(enum timer_source s);

struct ftbpf_slot_timer;
/* The deadline of a slot timer that is armed, else 0 (the slot is shared with the process
 * and the kernel: read with atomic loads). */
uint64_t timers_slot_armed(const struct ftbpf_slot_timer *t);

#endif
