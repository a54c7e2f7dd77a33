/* ftbpf-ci's process tree (see tree.h). */
#include "ci/tree.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int tree_eval(struct tree *t, uint64_t now, struct det_job *job)
{
	struct det_rank *d = calloc(TREE_MAX, sizeof(*d));
	struct det_sample *s = calloc(TREE_MAX, sizeof(*s));
	int idx[TREE_MAX], n = 0, best = -1;

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
	if (job->n_culprits) {
		best = idx[job->culprits[0]];
	} else { /* no odd one out (one process, or all alike): the most suspicious, youngest */
		for (int k = 0; k < n; k++) {
			const struct tree_proc *p = &t->p[idx[k]];

			if (best < 0 || p->d.score > t->p[best].d.score ||
			    (p->d.score == t->p[best].d.score &&
			     p->st.start_ns > t->p[best].st.start_ns))
				best = idx[k];
		}
	}
	free(d);
	free(s);
	return best;
}
