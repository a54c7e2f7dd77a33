/* ftbpf-ci's process tree (see tree.h). */
#include "ci/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/syscalls.h"
#include "os/procfs.h"
#include "watch/tracker.h"

void tree_init(struct tree *t, struct tracker *tr, double hang_timeout)
{
	memset(t, 0, sizeof(*t));
	sampler_init(&t->sp, tr);
	/* the hard timeout is ftbpfd's business: here only "hung" matters */
	det_params_from_seconds(&t->dp, hang_timeout, hang_timeout * 10, 2);
	t->self = (int)getpid();
}

void tree_fini(struct tree *t)
{
	sampler_fini(&t->sp);
}

/* Fields 3..8 of /proc/PID/stat: state, ppid, pgrp, session, tty_nr, tpgid. */
static int stat_tty(int pid, char *state, int *pgrp, int *tty, int *tpgid)
{
	char p[64], buf[1024], *s;
	ssize_t n;
	int ppid, sid;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	n = procfs_read(p, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	s = strrchr(buf, ')');
	if (!s || sscanf(s + 1, " %c %d %d %d %d %d", state, &ppid, pgrp, &sid, tty, tpgid) != 6)
		return -EINVAL;
	return 0;
}

/* Is fd of pid a terminal? */
static int fd_is_tty(int pid, int fd)
{
	char p[64], l[128];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/fd/%d", pid, fd);
	n = readlink(p, l, sizeof(l) - 1);
	if (n <= 0)
		return 0;
	l[n] = 0;
	return !strncmp(l, "/dev/pts/", 9) || !strncmp(l, "/dev/tty", 8) ||
	       !strncmp(l, "/dev/console", 12);
}

int tree_debugged(const struct tree *t, char *why, size_t whylen)
{
	for (int i = 0; i < t->np; i++) {
		const struct tree_proc *p = &t->p[i];
		const char *nm = p->s.cur_nr >= 0 ? syscalls_name(p->s.cur_nr) : NULL;
		int pgrp, tty, tpgid;
		char state;

		if (!p->live || stat_tty(p->pid, &state, &pgrp, &tty, &tpgid) < 0)
			continue;
		if (state == 't') {
			snprintf(why, whylen, "pid %d (%s) is stopped by a debugger (ptrace)",
				 p->pid, p->st.comm);
			return p->pid;
		}
		/* a prompt: reading the terminal it has in the foreground (pdb, input()) */
		if (nm && tty && tpgid == pgrp && fd_is_tty(p->pid, 0) &&
		    (!strcmp(nm, "read") || !strcmp(nm, "select") || !strcmp(nm, "pselect6") ||
		     !strcmp(nm, "poll") || !strcmp(nm, "ppoll"))) {
			snprintf(why, whylen,
				 "pid %d (%s) waits at a terminal prompt (a debugger?)", p->pid,
				 p->st.comm);
			return p->pid;
		}
	}
	return 0;
}

void tree_activity(struct tree *t, uint64_t now)
{
	t->activity_ns = now;
}

struct walk {
	struct tree *t;
	int seen[TREE_MAX];
	int nseen;
};

/* Without the tracker: is pid one of ours? (its parents through /proc lead to us) */
static int descendant(int pid, int self)
{
	struct proc_stat st;

	for (int depth = 0; pid > 1 && depth < 256; depth++) {
		if (procfs_stat(pid, -1, &st) < 0)
			return 0;
		if (st.ppid == self)
			return 1;
		pid = st.ppid;
	}
	return 0;
}

static int walk_proc(void *ctx, int pid)
{
	struct walk *w = ctx;

	if (w->nseen < TREE_MAX && pid != w->t->self && descendant(pid, w->t->self))
		w->seen[w->nseen++] = pid;
	return 0;
}

/* With the tracker the tree is what it tracks: the kernel follows every fork. */
static int walk_tracked(void *ctx, uint32_t tgid, const struct ftbpf_proc *p)
{
	struct walk *w = ctx;

	if (!(p->flags & FTBPF_PROC_EXITED) && w->nseen < TREE_MAX)
		w->seen[w->nseen++] = (int)tgid;
	return 0;
}

static struct tree_proc *proc_get(struct tree *t, int pid)
{
	for (int i = 0; i < t->np; i++)
		if (t->p[i].pid == pid)
			return &t->p[i];
	if (t->np == TREE_MAX)
		return NULL;
	memset(&t->p[t->np], 0, sizeof(t->p[0]));
	t->p[t->np].pid = pid;
	t->p[t->np].mem.nr = -1;
	t->p[t->np].d.prev_key = -1;
	return &t->p[t->np++];
}

void tree_scan(struct tree *t, uint64_t now, int update)
{
	struct walk *w = calloc(1, sizeof(*w));

	if (!w)
		return;
	w->t = t;
	if (t->sp.tr) {
		tracker_foreach_proc(t->sp.tr, walk_tracked, w);
		sampler_refresh(&t->sp, 0); /* also calibrates the syscall path's tick clock */
	} else {
		procfs_foreach_pid(-1, walk_proc, w);
	}
	for (int i = 0; i < t->np; i++)
		t->p[i].live = 0;
	for (int i = 0; i < w->nseen; i++) {
		struct tree_proc *p = proc_get(t, w->seen[i]);

		if (!p || procfs_stat(p->pid, -1, &p->st) < 0 ||
		    sampler_sample(&t->sp, p->pid, now, &p->s, &p->mem) < 0)
			continue;
		if (!p->s.adopted_ns) { /* new in the tree: progress */
			p->s.adopted_ns = now;
			t->activity_ns = now;
		}
		p->live = 1;
		p->s.pid = p->pid;
		p->s.rank = p->pid;
		p->s.world_size = 0; /* processes of a tree, not ranks of a job */
		if (update) /* not twice at nearly the same time: CPU shares need an interval */
			det_rank_update(&p->d, &p->s, now, &t->dp);
	}
	free(w);
}

/*
 * What kind of waiting a process's main thread does, for the headline: a parent waiting for
 * its children (make, sh) explains nothing; a server waiting for clients in accept/poll/select
 * (a test helper) is innocent until shown otherwise; anything else (a lock, a pipe, a sleep, a
 * spin, the disk) may be the hang.
 */
int tree_wait_class(const struct tree_proc *p)
{
	const char *nm;

	if (p->d.state != RS_BLOCKED || p->s.cur_nr < 0 || !(nm = syscalls_name(p->s.cur_nr)))
		return TREE_WAIT_OTHER;
	if (!strcmp(nm, "wait4") || !strcmp(nm, "waitid"))
		return TREE_WAIT_CHILDREN;
	if (!strcmp(nm, "accept") || !strcmp(nm, "accept4") || !strcmp(nm, "poll") ||
	    !strcmp(nm, "ppoll") || !strcmp(nm, "select") || !strcmp(nm, "pselect6") ||
	    !strcmp(nm, "epoll_wait") || !strcmp(nm, "epoll_pwait") || !strcmp(nm, "epoll_pwait2"))
		return TREE_WAIT_CLIENTS;
	return TREE_WAIT_OTHER;
}

/* Is a before b as the likely cause? The kind of wait first, then the detector's culprit,
 * then its score, then the youngest. */
static int before(const struct tree *t, int a, int b, const int *culprit)
{
	const struct tree_proc *x = &t->p[a], *y = &t->p[b];
	int cx = tree_wait_class(x), cy = tree_wait_class(y);

	if (cx != cy)
		return cx > cy;
	if (culprit[a] != culprit[b])
		return culprit[a] > culprit[b];
	if (x->d.score != y->d.score)
		return x->d.score > y->d.score;
	return x->st.start_ns > y->st.start_ns;
}

int tree_eval(struct tree *t, uint64_t now, struct det_job *job)
{
	struct det_rank *d = calloc(TREE_MAX, sizeof(*d));
	struct det_sample *s = calloc(TREE_MAX, sizeof(*s));
	int idx[TREE_MAX], n = 0, best = -1, *culprit;

	if (!d || !s) {
		free(d);
		free(s);
		memset(job, 0, sizeof(*job));
		return -1;
	}
	for (int i = 0; i < t->np; i++) {
		if (!t->p[i].live)
			continue;
		idx[n] = i;
		d[n] = t->p[i].d;
		s[n] = t->p[i].s;
		n++;
	}
	det_job_eval(d, s, n, now, t->activity_ns, &t->dp, job);
	culprit = calloc(TREE_MAX, sizeof(*culprit));
	for (int k = 0; k < t->np; k++)
		t->p[k].culprit = 0;
	for (int k = 0; culprit && k < job->n_culprits; k++)
		t->p[idx[job->culprits[k]]].culprit = culprit[idx[job->culprits[k]]] = 1;
	for (int k = 0; culprit && k < n; k++)
		if (best < 0 || before(t, idx[k], best, culprit))
			best = idx[k];
	free(culprit);
	free(d);
	free(s);
	return best;
}
