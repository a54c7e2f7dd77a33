/*
 * The countdown-timer service (torch.distributed.elastic timer semantics): timers armed
 * through the control socket or torch's FileTimerClient FIFO are held here (lib/timers.c is
 * the table) and pinned in a BPF map so that they outlive a restart; timers in a registered
 * process's slot are the kernel's to fire at the process's next syscall, and this service fires
 * them for a process that makes none. A due timer is acted on as soon as it is due: its
 * timerfd is an urgent handler of the event loop. Expiry reaps the process with the timer's
 * signal (or SIGTERM, then SIGKILL after the grace, when escalating: the SIGKILL is queued
 * with the actions, agent/actions.h).
 */
#ifndef FTBPF_TIMERSVC_H
#define FTBPF_TIMERSVC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ftbpf/slot.h"
#include "lib/timers.h"

struct tracker;
struct eventlog;
struct ranks;
struct rank;
struct loop;
struct json_object;
struct timersvc;
struct actions;

struct timersvc_opts {
	struct tracker *tr; /* borrowed (all of these) */
	struct eventlog *el;
	struct ranks *ranks; /* slot timers live in the ranks' slots */
	struct loop *loop;
	struct actions *ac;    /* its queue sends the SIGKILLs after the grace (agent/actions.h) */
	const char *fifo_path; /* torch FileTimerClient FIFO; NULL or "": none */
	int fifo_fd;	       /* ... as the service manager kept it (agent/fifohold.h), -1 none */
	const char *state_dir; /* where its holder is recorded */
	int escalate;	       /* SIGTERM first, SIGKILL after the grace */
	int max_per_user;      /* timers one non-root user may hold */
};

/* NULL with a message in err. */
struct timersvc *timersvc_new(const struct timersvc_opts *o, char *err, size_t errlen);
void timersvc_free(struct timersvc *ts);
/* After a restart: re-arm the pinned timers whose process is still the same one. */
void timersvc_restore(struct timersvc *ts);
/* Fire what is due (timers, slot timers), forget timers of processes that are gone, re-arm the
 * timerfd. */
void timersvc_check(struct timersvc *ts);
/*
 * Arm (deadline, CLOCK_MONOTONIC) or release a timer of pid on behalf of requester (0: root,
 * anyone's). 0, -ESRCH (no such process), -EPERM (not the requester's), -EDQUOT, -ENOSPC.
 */
int timersvc_request(struct timersvc *ts, int pid, uid_t requester, const char *scope, int release,
		     uint64_t deadline, int sig, enum timer_source src);
/* pid exited: its timers go. */
void timersvc_exited(struct timersvc *ts, int pid);
/* The kernel fired a slot timer of rank k (NULL: not a rank we know). */
void timersvc_kernel_fired(struct timersvc *ts, const struct rank *k);
/* Unmap and unpin rank k's slot. */
void timersvc_slot_drop(struct timersvc *ts, struct rank *k);
/* The agent-held timers. */
const struct timers *timersvc_table(const struct timersvc *ts);
/* timers_* and fifo_* counters, added to object c. */
void timersvc_counters(const struct timersvc *ts, struct json_object *c);

#endif
