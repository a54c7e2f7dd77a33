/* The timer table: a small array (hundreds of entries at most), linear scans. */
#include "lib/timers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftbpf/slot.h"

void timers_init(struct timers *t)
{
	memset(t, 0, sizeof(*t));
}

/* A pidfd the table held: the owner closes it (an effect; this table does none). */
static void close_fd(struct timers *t, int fd)
{
	if (fd >= 0 && t->close_fd)
		t->close_fd(fd);
}

void timers_fini(struct timers *t)
{
	for (int i = 0; i < t->n; i++)
		close_fd(t, t->v[i].pidfd);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static int find(const struct timers *t, int pid, const char *scope)
{
	for (int i = 0; i < t->n; i++)
		if (t->v[i].pid == pid && !strcmp(t->v[i].scope, scope))
			return i;
	return -1;
}

int timers_count_pid(const struct timers *t, int pid)
{
	int n = 0;

	for (int i = 0; i < t->n; i++)
		n += t->v[i].pid == pid;
	return n;
}

int timers_count_uid(const struct timers *t, uid_t uid)
{
	int n = 0;

	for (int i = 0; i < t->n; i++)
		n += t->v[i].uid == uid;
	return n;
}

int timers_acquire(struct timers *t, int pid, int pidfd, uid_t uid, const char *scope,
		   uint64_t deadline_ns, int sig, enum timer_source src, uint64_t now)
{
	int i = find(t, pid, scope);
	struct timer *e;

	if (i < 0) {
		if (t->n >= TIMERS_MAX || timers_count_pid(t, pid) >= TIMERS_PER_PID_MAX) {
			t->rejected_full++;
			return -ENOSPC;
		}
		if (uid != 0 && t->uid_max > 0 && timers_count_uid(t, uid) >= t->uid_max) {
			t->rejected_user++;
			return -EDQUOT;
		}
		if (t->n == t->cap) {
			int cap = t->cap ? t->cap * 2 : 64;
			struct timer *nv = realloc(t->v, cap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			t->v = nv;
			t->cap = cap;
		}
		e = &t->v[t->n++];
		memset(e, 0, sizeof(*e));
		e->pid = pid;
		e->pidfd = pidfd;
		strncpy(e->scope, scope, sizeof(e->scope) - 1);
	} else {
		e = &t->v[i];
		if (pidfd >= 0 && pidfd != e->pidfd) { /* the newest process at the pid */
			close_fd(t, e->pidfd);
			e->pidfd = pidfd;
		}
	}
	e->uid = uid;
	e->sig = sig;
	e->source = src;
	e->deadline_ns = deadline_ns;
	e->acquired_ns = now;
	t->acquired++;
	return 0;
}

static void remove_at(struct timers *t, int i)
{
	close_fd(t, t->v[i].pidfd);
	t->v[i] = t->v[--t->n];
}

int timers_release(struct timers *t, int pid, const char *scope)
{
	int i = find(t, pid, scope);

	if (i < 0)
		return -ENOENT;
	remove_at(t, i);
	t->released++;
	return 0;
}

int timers_clear_pid(struct timers *t, int pid)
{
	int n = 0;

	for (int i = 0; i < t->n;) {
		if (t->v[i].pid == pid) {
			remove_at(t, i);
			n++;
		} else {
			i++;
		}
	}
	return n;
}

int timers_of_pid(const struct timers *t, int pid, uint64_t *earliest)
{
	int n = 0;

	for (int i = 0; i < t->n; i++)
		if (t->v[i].pid == pid) {
			n++;
			if (!*earliest || t->v[i].deadline_ns < *earliest)
				*earliest = t->v[i].deadline_ns;
		}
	return n;
}

uint64_t timers_next_deadline(const struct timers *t)
{
	uint64_t d = 0;

	for (int i = 0; i < t->n; i++)
		if (!d || t->v[i].deadline_ns < d)
			d = t->v[i].deadline_ns;
	return d;
}

int timers_first_expired(const struct timers *t, uint64_t now)
{
	int best = -1;

	for (int i = 0; i < t->n; i++)
		if (t->v[i].deadline_ns <= now &&
		    (best < 0 || t->v[i].deadline_ns < t->v[best].deadline_ns))
			best = i;
	return best;
}

const char *timers_source_name(enum timer_source s)
{
	switch (s) {
	case TIMER_SRC_FIFO:
		return "fifo";
	case TIMER_SRC_CTL:
		return "ctl";
	case TIMER_SRC_SLOT:
		return "slot";
	}
	return "?";
}

uint64_t timers_slot_armed(const struct ftbpf_slot_timer *t)
{
	uint64_t d = __atomic_load_n(&t->deadline_ns, __ATOMIC_RELAXED);

	return __atomic_load_n(&t->state, __ATOMIC_RELAXED) == FTBPF_TS_ARMED ? d : 0;
}
