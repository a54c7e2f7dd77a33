/* Rank table: an array of owned pointers (stable addresses), jobs by id. */
#include "ranks.h"

#include "ftbpf/slot.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

void ranks_init(struct ranks *r)
{
	memset(r, 0, sizeof(*r));
}

static void rank_free(struct rank *k)
{
	if (!k)
		return;
	if (k->pidfd >= 0)
		close(k->pidfd);
	/* the agent unpins a slot when its process ends; here only our mapping goes */
	if (k->slot)
		munmap(k->slot, sizeof(struct ftbpf_slot));
	if (k->slot_fd >= 0)
		close(k->slot_fd);
	free(k);
}

void ranks_fini(struct ranks *r)
{
	for (int i = 0; i < r->n; i++)
		rank_free(r->v[i]);
	free(r->v);
	free(r->jobs);
	memset(r, 0, sizeof(*r));
}

struct rank *ranks_find(const struct ranks *r, int pid)
{
	for (int i = 0; i < r->n; i++)
		if (r->v[i]->pid == pid)
			return r->v[i];
	return NULL;
}

struct rank *ranks_add(struct ranks *r, int pid)
{
	struct rank *k;

	ranks_remove(r, pid);
	if (r->n == r->cap) {
		int cap = r->cap ? r->cap * 2 : 64;
		struct rank **nv = realloc(r->v, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		r->v = nv;
		r->cap = cap;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->pid = pid;
	k->pidfd = -1;
	k->slot_fd = -1;
	k->s.cur_nr = -1;
	k->d.prev_key = -1;
	r->v[r->n++] = k;
	return k;
}

void ranks_remove(struct ranks *r, int pid)
{
	for (int i = 0; i < r->n; i++) {
		if (r->v[i]->pid != pid)
			continue;
		rank_free(r->v[i]);
		r->v[i] = r->v[--r->n];
		return;
	}
}

struct job *ranks_job(struct ranks *r, const char *id)
{
	struct job *j;

	for (int i = 0; i < r->njobs; i++)
		if (!strcmp(r->jobs[i].id, id))
			return &r->jobs[i];
	if (r->njobs == r->jcap) {
		int cap = r->jcap ? r->jcap * 2 : 16;
		struct job *nj = realloc(r->jobs, cap * sizeof(*nj));

		if (!nj)
			return NULL;
		r->jobs = nj;
		r->jcap = cap;
	}
	j = &r->jobs[r->njobs++];
	memset(j, 0, sizeof(*j));
	strncpy(j->id, id, sizeof(j->id) - 1);
	return j;
}

void ranks_jobs_prune(struct ranks *r)
{
	for (int i = 0; i < r->njobs;) {
		int used = 0;

		for (int k = 0; k < r->n && !used; k++)
			used = !strcmp(r->v[k]->id.job, r->jobs[i].id);
		if (used) {
			i++;
			continue;
		}
		r->jobs[i] = r->jobs[--r->njobs];
	}
}

void rank_add_signal(struct rank *k, const struct rank_sig *s)
{
	if (k->nsig == RANK_SIG_HISTORY) {
		memmove(k->sigs, k->sigs + 1, sizeof(k->sigs[0]) * (RANK_SIG_HISTORY - 1));
		k->nsig--;
	}
	k->sigs[k->nsig++] = *s;
}
