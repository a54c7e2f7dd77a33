/* NCCL RAS queries for hung jobs (see rasquery.h). */
#include "agent/rasquery.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/eventlog.h"
#include "agent/views.h"
#include "lib/detector.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/rasclient.h"
#include "proto/ras_proto.h"
#include "watch/inspector.h"

#define RASQ_JOBS 64 /* jobs whose last answer is kept for status */

struct entry {
	uid_t uid;
	char id[FTBPF_JOB_LEN];
	uint32_t run;
	uint64_t at_ns;		 /* 0: free */
	struct json_object *ras; /* owned */
};

struct rasq {
	struct eventlog *el;
	struct entry e[RASQ_JOBS];
	struct rasq_counters cnt;
};

/* A query in flight: what the answer is for. */
struct pending {
	struct rasq *q;
	uid_t uid;
	char id[FTBPF_JOB_LEN];
	uint32_t run;
	int n, pids[INSPECTOR_RAS_PIDS], ranks[INSPECTOR_RAS_PIDS];
	struct json_object *ev; /* the event, owned */
};

struct rasq *rasq_new(struct eventlog *el)
{
	struct rasq *q = calloc(1, sizeof(*q));

	if (q)
		q->el = el;
	return q;
}

void rasq_free(struct rasq *q)
{
	if (!q)
		return;
	for (int i = 0; i < RASQ_JOBS; i++)
		json_object_put(q->e[i].ras);
	free(q);
}

static int runs_nccl(const struct rank *k)
{
	for (int i = 0; i < k->s.ncomm; i++)
		if (!(k->s.comm[i].flags & (DET_COMM_MPI | DET_COMM_GRAPH)))
			return 1; /* an NCCL host record, or a device one (the profiler plugin) */
	return 0;
}

static struct json_object *rank_json(const struct ras_rank *r, int missing, int behind, int error)
{
	struct json_object *o = json_object_new_object();

	jint(o, "rank", r->rank);
	jstr(o, "host", r->host[0] ? r->host : NULL);
	jint(o, "pid", r->pid);
	if (missing) {
		jbool(o, "unresponsive", r->unresponsive);
		jbool(o, "considered_dead", r->dead);
	}
	if (behind) {
		jint(o, "collectives", (int64_t)r->collectives);
		jint(o, "most", (int64_t)r->most);
	}
	if (error) {
		jint(o, "async_error", r->async_error);
		jbool(o, "abort", r->abort);
	}
	return o;
}

static void add_rank(struct json_object *arr, int rank)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		if (json_object_get_int(json_object_array_get_idx(arr, i)) == rank)
			return;
	json_object_array_add(arr, json_object_new_int(rank));
}

/* "rank 0 on 10.0.0.2 (pid 4242)" */
static void say_rank(char *buf, size_t len, const struct ras_rank *r)
{
	size_t l = strlen(buf);

	if (l >= len)
		return;
	snprintf(buf + l, len - l, "rank %d on %s (pid %d)", r->rank, r->host[0] ? r->host : "?",
		 r->pid);
}

static void say(char *buf, size_t len, const char *s)
{
	size_t l = strlen(buf);

	if (l < len)
		snprintf(buf + l, len - l, "%s", s);
}

/* The communicators of the report, their missing, lagging and failing ranks, and a summary. */
static void report_json(struct json_object *o, const struct ras_report *rep, const char *who)
{
	struct json_object *comms = json_object_new_array(), *unresp = json_object_new_array(),
			   *dead = json_object_new_array(), *behind = json_object_new_array(),
			   *failed = json_object_new_array();
	char why[768] = "", tail[96];

	snprintf(why, sizeof(why), "NCCL RAS (%s; NCCL %s):", who,
		 rep->nccl_version[0] ? rep->nccl_version : "?");
	for (int i = 0; i < rep->ncomms; i++) {
		const struct ras_comm *c = &rep->comms[i];
		struct json_object *co = json_object_new_object(), *m = json_object_new_array(),
				   *b = json_object_new_array(), *e = json_object_new_array();

		jstr(co, "hash", c->hash);
		jint(co, "size", c->size);
		jint(co, "ranks_count", c->ranks_count);
		jint(co, "missing_ranks_count", c->missing_count);
		for (int k = 0; k < c->nmissing; k++) {
			const struct ras_rank *r = &c->missing[k];

			json_object_array_add(m, rank_json(r, 1, 0, 0));
			if (r->unresponsive)
				add_rank(unresp, r->rank);
			if (r->dead)
				add_rank(dead, r->rank);
			say(why, sizeof(why), " ");
			say_rank(why, sizeof(why), r);
			say(why, sizeof(why),
			    r->dead	      ? " considered dead;"
			    : r->unresponsive ? " unresponsive;"
					      : " missing;");
		}
		for (int k = 0; k < c->nbehind; k++) {
			const struct ras_rank *r = &c->behind[k];

			json_object_array_add(b, rank_json(r, 0, 1, 0));
			add_rank(behind, r->rank);
			say(why, sizeof(why), " ");
			say_rank(why, sizeof(why), r);
			snprintf(tail, sizeof(tail), " launched %llu collectives, the most %llu;",
				 (unsigned long long)r->collectives, (unsigned long long)r->most);
			say(why, sizeof(why), tail);
		}
		for (int k = 0; k < c->nerror; k++) {
			const struct ras_rank *r = &c->error[k];

			json_object_array_add(e, rank_json(r, 0, 0, 1));
			add_rank(failed, r->rank);
			say(why, sizeof(why), " ");
			say_rank(why, sizeof(why), r);
			snprintf(tail, sizeof(tail), " in error (%d%s);", r->async_error,
				 r->abort ? ", aborted" : "");
			say(why, sizeof(why), tail);
		}
		json_object_object_add(co, "missing_ranks", m);
		json_object_object_add(co, "behind", b);
		json_object_object_add(co, "errors", e);
		json_object_array_add(comms, co);
	}
	if (!json_object_array_length(unresp) && !json_object_array_length(dead) &&
	    !json_object_array_length(behind) && !json_object_array_length(failed)) {
		snprintf(tail, sizeof(tail),
			 " every rank of the job's %d communicator%s answered, none behind",
			 rep->ncomms, rep->ncomms == 1 ? "" : "s");
		say(why, sizeof(why), tail);
	}
	if (why[strlen(why) - 1] == ';')
		why[strlen(why) - 1] = '\0';
	jstr(o, "nccl_version", rep->nccl_version);
	jint(o, "communicators_total", rep->comms_total);
	jbool(o, "repaired", rep->repaired);
	jdbl(o, "collection_s", rep->collection_s);
	json_object_object_add(o, "communicators", comms);
	json_object_object_add(o, "unresponsive_ranks", unresp);
	json_object_object_add(o, "dead_ranks", dead);
	json_object_object_add(o, "behind_ranks", behind);
	json_object_object_add(o, "error_ranks", failed);
	jstr(o, "why", why);
}

static struct entry *entry_for(struct rasq *q, uid_t uid, const char *id)
{
	struct entry *old = &q->e[0];

	for (int i = 0; i < RASQ_JOBS; i++) {
		struct entry *e = &q->e[i];

		if (e->at_ns && e->uid == uid && !strcmp(e->id, id))
			return e;
		if (e->at_ns < old->at_ns)
			old = e;
	}
	json_object_put(old->ras);
	memset(old, 0, sizeof(*old));
	old->uid = uid;
	snprintf(old->id, sizeof(old->id), "%s", id);
	return old;
}

static void answered(void *ctx, int err, const struct ras_answer *a, const struct ras_report *rep,
		     const char *why)
{
	struct pending *p = ctx;
	struct rasq *q = p->q;
	struct json_object *ev = p->ev, *keep;
	struct entry *e;
	char who[64] = "";
	int rank = -1;

	if (a) {
		for (int i = 0; i < p->n; i++)
			if (p->pids[i] == a->server_pid)
				rank = p->ranks[i];
		jstr(ev, "addr", a->env.addr);
		jstr(ev, "format", err ? NULL : a->json ? "json" : "text");
		jint(ev, "connections", a->tries);
		jint(ev, "untrusted_answers", a->wrong_server);
		q->cnt.untrusted += (uint64_t)a->wrong_server;
	}
	if (!err && a && rep) {
		jint(ev, "server_pid", a->server_pid);
		jint(ev, "server_rank", rank);
		snprintf(who, sizeof(who), "rank %d (pid %d) answered", rank, a->server_pid);
		report_json(ev, rep, who);
		q->cnt.answered++;
	} else if (!err && a) { /* an NCCL before 2.28.7 */
		jint(ev, "server_pid", a->server_pid);
		jint(ev, "server_rank", rank);
		jstr(ev, "error", "NCCL's RAS answers text only (NCCL before 2.28.7): not read");
		q->cnt.text++;
	} else {
		jstr(ev, "error", why && *why ? why : strerror(-err));
		q->cnt.failed++;
	}
	e = entry_for(q, p->uid, p->id);
	e->run = p->run;
	e->at_ns = clock_mono_ns();
	keep = NULL;
	if (json_object_deep_copy(ev, &keep, NULL) == 0) {
		json_object_object_del(keep, "type");
		e->ras = keep;
	}
	eventlog_emit(q->el, ev);
	free(p);
}

void rasq_hang(struct rasq *q, struct inspector *ins, const struct job *j)
{
	const struct rank *target = NULL;
	struct pending *p;
	int nccl = 0;

	if (!q || !ins)
		return;
	for (int i = 0; i < j->nmembers; i++) {
		const struct rank *k = j->members[i];

		if (k->s.exited)
			continue;
		nccl |= runs_nccl(k);
		if (!target || (target->d.culprit && !k->d.culprit))
			target = k; /* a culprit may be stopped; any rank's namespace will do */
	}
	if (!nccl || !target)
		return;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->q = q;
	p->uid = j->uid;
	snprintf(p->id, sizeof(p->id), "%s", j->id);
	p->run = j->run;
	for (int i = 0; i < j->nmembers && p->n < INSPECTOR_RAS_PIDS; i++)
		if (!j->members[i]->s.exited) {
			p->pids[p->n] = j->members[i]->pid;
			p->ranks[p->n++] = j->members[i]->id.rank;
		}
	p->ev = view_job_event("nccl_ras", j);
	jint(p->ev, "run", j->run);
	q->cnt.queries++;
	if (inspector_ras(ins, target->pid, target->pidfd, j->uid, p->pids, p->n, RASQ_TIMEOUT_S,
			  answered, p) < 0) {
		json_object_put(p->ev);
		free(p);
		q->cnt.failed++;
	}
}

void rasq_job_json(const struct rasq *q, struct json_object *o, const struct job *j, uint64_t now)
{
	struct json_object *c = NULL;

	for (int i = 0; q && i < RASQ_JOBS; i++) {
		const struct entry *e = &q->e[i];

		if (!e->at_ns || !e->ras || e->uid != j->uid || strcmp(e->id, j->id) ||
		    e->run != j->run)
			continue;
		if (json_object_deep_copy(e->ras, &c, NULL) != 0)
			return;
		jdbl(c, "age_s", view_secs(now > e->at_ns ? now - e->at_ns : 0));
		json_object_object_add(o, "ras", c);
		return;
	}
}

void rasq_counters(const struct rasq *q, struct rasq_counters *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (q)
		*ret = q->cnt;
}
