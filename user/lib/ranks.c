/* Rank table: owned pointers (stable addresses); jobs by (owner, id), each with its members. */
#include "lib/ranks.h"

#include "ftbpf/slot.h"
#include "lib/decide_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ranks_init(struct ranks *r)
{
	memset(r, 0, sizeof(*r));
}

static void rank_free(struct ranks *r, struct rank *k)
{
	if (!k)
		return;
	if (r->release) /* its pidfd and slot mapping: the owner's, an effect */
		r->release(k);
	free(k);
}

static void job_free(struct job *j)
{
	if (!j)
		return;
	free(j->members);
	free(j);
}

void ranks_fini(struct ranks *r)
{
	for (int i = 0; i < r->n; i++)
		rank_free(r, r->v[i]);
	for (int i = 0; i < r->njobs; i++)
		job_free(r->jobs[i]);
	free(r->v);
	free(r->jobs);
	memset(r, 0, sizeof(*r));
}

struct rank *ranks_find_live(const struct ranks *r, int pid)
{
	for (int i = 0; i < r->n; i++)
		if (r->v[i]->pid == pid && !r->v[i]->s.exited)
			return r->v[i];
	return NULL;
}

struct rank *ranks_find(const struct ranks *r, int pid)
{
	struct rank *best = NULL;

	for (int i = 0; i < r->n; i++) {
		struct rank *k = r->v[i];

		if (k->pid != pid)
			continue;
		if (!k->s.exited)
			return k;
		if (!best || k->start_ns > best->start_ns)
			best = k;
	}
	return best;
}

struct job *ranks_job_find(const struct ranks *r, uid_t uid, const char *id)
{
	for (int i = 0; i < r->njobs; i++)
		if (r->jobs[i]->uid == uid && !strcmp(r->jobs[i]->id, id))
			return r->jobs[i];
	return NULL;
}

static struct job *job_get(struct ranks *r, uid_t uid, const char *id)
{
	struct job *j = ranks_job_find(r, uid, id);

	if (j)
		return j;
	if (r->njobs == r->jcap) {
		int cap = r->jcap ? r->jcap * 2 : 16;
		struct job **nj = realloc(r->jobs, cap * sizeof(*nj));

		if (!nj)
			return NULL;
		r->jobs = nj;
		r->jcap = cap;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->uid = uid;
	strncpy(j->id, id, sizeof(j->id) - 1);
	j->run = 1;
	r->jobs[r->njobs++] = j;
	return j;
}

static int job_join(struct job *j, struct rank *k)
{
	if (j->nmembers == j->cap) {
		int cap = j->cap ? j->cap * 2 : 8;
		struct rank **nm = realloc(j->members, cap * sizeof(*nm));

		if (!nm)
			return -1;
		j->members = nm;
		j->cap = cap;
	}
	j->members[j->nmembers++] = k;
	k->job = j;
	return 0;
}

static void job_leave(struct ranks *r, struct rank *k)
{
	struct job *j = k->job;

	if (!j)
		return;
	for (int i = 0; i < j->nmembers; i++)
		if (j->members[i] == k) {
			memmove(j->members + i, j->members + i + 1,
				(j->nmembers - i - 1) * sizeof(*j->members));
			j->nmembers--;
			break;
		}
	k->job = NULL;
	if (j->nmembers)
		return;
	for (int i = 0; i < r->njobs; i++)
		if (r->jobs[i] == j) {
			r->jobs[i] = r->jobs[--r->njobs];
			break;
		}
	job_free(j);
}

struct rank *ranks_add(struct ranks *r, int pid, uint64_t start_ns, uid_t uid, const char *job_id)
{
	struct rank *k;
	struct job *j;

	if (r->n == r->cap) {
		int cap = r->cap ? r->cap * 2 : 64;
		struct rank **nv = realloc(r->v, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		r->v = nv;
		r->cap = cap;
	}
	k = calloc(1, sizeof(*k));
	j = k ? job_get(r, uid, job_id) : NULL;
	if (!j || job_join(j, k) < 0) {
		free(k);
		return NULL;
	}
	k->pid = pid;
	k->start_ns = start_ns;
	k->uid = uid;
	k->pidfd = -1;
	k->slot_fd = -1;
	k->s.cur_nr = -1;
	k->d.prev_key = -1;
	snprintf(k->id.job, sizeof(k->id.job), "%s", job_id);
	r->v[r->n++] = k;
	return k;
}

int ranks_user_count(const struct ranks *r, uid_t uid)
{
	int n = 0;

	for (int i = 0; i < r->n; i++)
		n += r->v[i]->uid == uid;
	return n;
}

int ranks_user_ended(const struct ranks *r, uid_t uid)
{
	int n = 0;

	for (int i = 0; i < r->n; i++)
		n += r->v[i]->uid == uid && r->v[i]->s.exited && r->v[i]->exit_judged;
	return n;
}

struct rank *ranks_user_oldest_ended(const struct ranks *r, uid_t uid)
{
	struct rank *best = NULL;
	int best_live = 0;

	for (int i = 0; i < r->n; i++) {
		struct rank *k = r->v[i];
		int live;

		if (k->uid != uid || !k->s.exited || !k->exit_judged)
			continue;
		live = k->job && job_has_live(k->job);
		if (!best || live < best_live ||
		    (live == best_live && k->s.exit_ns < best->s.exit_ns)) {
			best = k;
			best_live = live;
		}
	}
	return best;
}

void ranks_remove(struct ranks *r, struct rank *k)
{
	for (int i = 0; i < r->n; i++) {
		if (r->v[i] != k)
			continue;
		job_leave(r, k);
		rank_free(r, k);
		r->v[i] = r->v[--r->n];
		return;
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

int job_has_live(const struct job *j)
{
	for (int i = 0; i < j->nmembers; i++)
		if (!j->members[i]->s.exited)
			return 1;
	return 0;
}

int job_holds_live(const struct job *j, int rank)
{
	for (int m = 0; m < j->nmembers; m++)
		if (j->members[m]->id.rank == rank && !j->members[m]->s.exited)
			return 1;
	return 0;
}

int job_pick_rank(const struct job *j, int told, int env_rank, struct rank_ident *ret_id)
{
	unsigned char *held;
	int n = j ? j->nmembers : 0, free_rank = 0;

	if (told >= 0 || (env_rank >= 0 && !(j && job_holds_live(j, env_rank)))) {
		ret_id->rank = told >= 0 ? told : env_rank;
		ret_id->source = IDENT_CLIENT;
		return 0;
	}
	/* the lowest rank no live member holds is at most n: mark those below it, one pass
	 * (a user may register thousands into one job; no pass per candidate) */
	held = calloc((size_t)n + 1, 1);
	if (!held)
		return -ENOMEM;
	for (int m = 0; m < n; m++) {
		const struct rank *k = j->members[m];

		if (!k->s.exited && k->id.rank >= 0 && k->id.rank <= n)
			held[k->id.rank] = 1;
	}
	while (held[free_rank])
		free_rank++;
	free(held);
	ret_id->rank = free_rank;
	ret_id->source = IDENT_ASSIGNED;
	return 0;
}

int job_world_size(const struct job *j)
{
	int w = -1;

	for (int m = 0; m < j->nmembers; m++)
		if (j->members[m]->id.world_size > w)
			w = j->members[m]->id.world_size;
	return w;
}

void ranks_job_new_run(struct ranks *r, struct job *j, uint64_t now,
		       void (*drop)(void *ctx, struct rank *k), void *ctx)
{
	const char *prev = j->nmembers ? det_job_state_name(j->state) : "";

	snprintf(j->prev_state, sizeof(j->prev_state), "%s", prev);
	for (int i = 0; i < j->nmembers;) {
		struct rank *k = j->members[i];

		if (!k->s.exited) {
			i++;
			continue;
		}
		if (drop)
			drop(ctx, k);
		/* out of the job first: the job must outlive its last old member */
		memmove(j->members + i, j->members + i + 1,
			(j->nmembers - i - 1) * sizeof(*j->members));
		j->nmembers--;
		k->job = NULL;
		for (int v = 0; v < r->n; v++)
			if (r->v[v] == k) {
				r->v[v] = r->v[--r->n];
				break;
			}
		rank_free(r, k);
	}
	memset(&j->res, 0, sizeof(j->res));
	j->reported = j->soft_signalled = j->action_done = j->failed_reported = 0;
	j->hung_seen_ns = 0;
	j->watched_ns = 0;
	j->state = DJS_OK;
	j->hard_killed = j->end_reported = 0;
	memset(&j->hang_end, 0, sizeof(j->hang_end));
	j->hang_why[0] = 0;
	j->nhang_culprits = 0;
	j->judged_ns = 0;
	j->run++;
	j->run_start_ns = now;
}

void job_keep_hang(struct job *j, const struct jobend *e)
{
	if (j->hang_end.by)
		return;
	j->hang_end = *e;
	snprintf(j->hang_why, sizeof(j->hang_why), "%s", j->res.why);
	j->nhang_culprits = 0;
	/* the verdict's culprits (indices into the members), else the job-wide verdict's ranks
	 * when they run on other hosts */
	for (int i = 0; i < j->res.n_culprits && j->nhang_culprits < DET_MAX_CULPRITS; i++)
		if (j->res.culprits[i] >= 0 && j->res.culprits[i] < j->nmembers)
			j->hang_culprits[j->nhang_culprits++] =
			    j->members[j->res.culprits[i]]->id.rank;
	for (int i = 0;
	     !j->nhang_culprits && j->xv.valid && i < j->xv.n_culprits && i < DET_MAX_CULPRITS; i++)
		j->hang_culprits[j->nhang_culprits++] = j->xv.culprit_ranks[i];
}

int job_hang_end(const struct job *j)
{
	if (!j->hang_end.by)
		return DET_HANG_END_NONE;
	return j->hang_end.by == JOBEND_AGENT ? DET_HANG_END_AGENT : DET_HANG_END_OTHER;
}

int rank_asked(const struct rank *k)
{
	const struct ftbpf_slot_decision *d;

	if (!k->slot)
		return 0;
	d = &k->slot->dec;
	switch (__atomic_load_n(&d->action, __ATOMIC_ACQUIRE)) {
	case FTBPF_ACT_STOP:
		return DET_ASKED_STOP;
	case FTBPF_ACT_RESTART:
		/* a rank of an older generation is told to exit for the restart; one of the
		 * current generation, for a completed preemption checkpoint */
		return __atomic_load_n(&d->generation, __ATOMIC_ACQUIRE) > k->generation
			   ? DET_ASKED_RESTART
			   : DET_ASKED_PREEMPT;
	default:
		return 0;
	}
}

void rank_slot_generation(struct rank *k)
{
	uint64_t g = 0;

	k->gen_unknown =
	    !dp_slot_generation(__atomic_load_n(&k->slot->fence_token, __ATOMIC_ACQUIRE),
				__atomic_load_n(&k->slot->own_generation, __ATOMIC_ACQUIRE), &g);
	k->generation = g;
}

/* Did rank o start before k, or with it? Start times read from /proc are clock ticks (10 ms):
 * a rank and the `sleep` its script runs next read the same start, and of two such the one
 * that ended while the other lives on is the stray (a crashed rank's restart starts well after
 * it: its launcher reaps it first). Adoption order cannot tell them apart: a rank adopted by a
 * scan after its exec event was missed comes after the `sleep`. */
static int started_first(const struct rank *o, const struct rank *k)
{
	return o->start_ns <= k->start_ns;
}

int rank_is_stray(const struct job *j, const struct rank *k)
{
	if (!k->s.exited)
		return 0;
	for (int i = 0; j && i < j->nmembers; i++) {
		const struct rank *o = j->members[i];

		if (o != k && !o->s.exited && o->id.rank == k->id.rank && started_first(o, k))
			return 1;
	}
	return 0;
}

int ranks_job_drop_replaced(struct ranks *r, struct rank *k,
			    void (*drop)(void *ctx, struct rank *k), void *ctx)
{
	struct job *j = k->job;
	struct rank *newest = NULL;
	int n = 0;

	/* the latest ended incarnation stays (its end may not have been judged yet: a failure
	 * the next scan reports, or decides on) */
	for (int i = 0; j && i < j->nmembers; i++) {
		struct rank *o = j->members[i];

		if (o != k && o->s.exited && o->id.rank == k->id.rank &&
		    (!newest || o->start_ns > newest->start_ns))
			newest = o;
	}
	for (int i = 0; j && i < j->nmembers;) {
		struct rank *o = j->members[i];

		if (o == k || o == newest || !o->s.exited || o->id.rank != k->id.rank) {
			i++;
			continue;
		}
		if (drop)
			drop(ctx, o);
		ranks_remove(r, o); /* k keeps the job */
		n++;
	}
	return n;
}
