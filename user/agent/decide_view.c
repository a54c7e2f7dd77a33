/* Decisions as events and JSON (status, history). See decide_int.h. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/decide_int.h"
#include "agent/eventlog.h"
#include "agent/store.h"
#include "agent/views.h"
#include "lib/config.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"

/* ---- decisions ---- */
void dc_log_decision(struct decider *d, const struct djob *dj, const char *kind)
{
	struct json_object *o = view_event("decision");
	const struct dp_records *r = &dj->rec;
	/* with the node keys, the store took the record only signed by the node it says decided */
	int sig = *d->cfg->node_keys_file && store_shared(d->st);

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	jstr(o, "kind", kind);
	jint(o, "run", (int64_t)dj->run);
	jint(o, "generation", (int64_t)r->gen);
	if (!strcmp(kind, "generation")) {
		jstr(o, "cause", dec_cause_name(r->g.cause));
		jbool(o, "stop", r->g.stop);
		jint(o, "resume_step", r->g.resume_step);
		jstr(o, "node", *r->g.node ? r->g.node : NULL);
		jstr(o, "by", r->g.by);
		jstr(o, "signer", sig ? r->g.by : NULL);
		jstr(o, "why", r->g.why);
		{
			struct json_object *ex = json_object_new_array();

			for (int i = 0; i < r->g.nexcluded; i++)
				json_object_array_add(ex, json_object_new_string(r->g.excluded[i]));
			json_object_object_add(o, "excluded", ex);
		}
	} else {
		jint(o, "checkpoint", (int64_t)r->ck_n);
		jint(o, "step", r->bound ? r->bind_target : -1);
		jstr(o, "cause", dec_cause_name(r->ck.cause));
		jstr(o, "by", r->ck.by);
		jstr(o, "signer", sig ? r->ck.by : NULL);
		jstr(o, "why", r->ck.why);
	}
	jstr(o, "node", d->pc.node);
	eventlog_emit(d->el, o);
}

void dc_log_unavailable(struct decider *d, const struct djob *dj, int pid, const char *trigger,
			const char *why)
{
	struct json_object *o = view_event("decision_unavailable");

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	jint(o, "pid", pid);
	jstr(o, "trigger", trigger);
	jstr(o, "why", why);
	eventlog_emit(d->el, o);
}

void dc_log_refused(struct decider *d, struct djob *dj)
{
	for (int i = 0; i < dj->nrefused; i++) {
		struct json_object *o = view_event("decision_record_refused");

		d->refused++;
		jstr(o, "job", dj->id);
		jint(o, "uid", dj->uid);
		jstr(o, "key", dj->refused[i]);
		jstr(o, "why", dj->refused_why[i]);
		eventlog_emit(d->el, o);
	}
	dj->nrefused = 0;
}

void dc_log_launch_refused(struct decider *d, const struct djob *dj, int pid, const char *launch_id,
			   uint64_t launch_run, uint64_t run)
{
	struct json_object *o = view_event("launch_refused");

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	jint(o, "pid", pid);
	jstr(o, "node", d->pc.node);
	jstr(o, "launch_id", launch_id);
	jint(o, "launch_run", (int64_t)launch_run);
	jint(o, "run", (int64_t)run);
	jstr(o, "why",
	     "a later launch of the job began since: this one is stale; the rank is "
	     "given no run of its own");
	eventlog_emit(d->el, o);
}

void dc_log_hold(struct decider *d, const struct djob *dj, int on, const char *why)
{
	struct json_object *o = view_event(on ? "decision_hold" : "decision_hold_end");

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	jstr(o, "node", d->pc.node);
	jstr(o, "why", why);
	eventlog_emit(d->el, o);
}

void dc_log_preemption(struct decider *d, const struct djob *dj, int pid, const char *what,
		       const char *why)
{
	struct json_object *o = view_event(what);

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	if (pid > 0)
		jint(o, "pid", pid);
	jint(o, "generation", (int64_t)dj->rec.gen);
	jstr(o, "node", d->pc.node);
	jstr(o, "why", why);
	eventlog_emit(d->el, o);
}

void dc_log_fenced(struct decider *d, const struct djob *dj)
{
	struct json_object *o = view_event("fenced");

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	jstr(o, "node", d->pc.node);
	jdbl(o, "unreachable_s", (double)dj->rec.unreachable_ms / 1000.0);
	eventlog_emit(d->el, o);
}

void dc_log_health(struct decider *d, const struct djob *dj, int failed)
{
	struct json_object *o = view_event(failed ? "health_check_failed" : "health_check");

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	jstr(o, "node", d->pc.node);
	jint(o, "generation", (int64_t)dj->rec.gen);
	eventlog_emit(d->el, o);
}

/* ---- views ---- */
void decide_job_json(struct decider *d, const struct job *j, struct json_object *o)
{
	struct djob *dj = dc_find(d, j->uid, j->id, 0);
	const struct dp_records *r;
	struct json_object *c;
	struct dp_local l;

	if (!dj) {
		jint(o, "generation", 0);
		jnull(o, "checkpoint");
		return;
	}
	r = &dj->rec;
	jint(o, "run", (int64_t)dj->run);
	jint(o, "generation", (int64_t)r->gen);
	if (!r->ck_n) {
		jnull(o, "checkpoint");
		return;
	}
	if (dc_gather(d, dj, j) == 0)
		dp_local(d->rk, d->nrk, r->bound ? r->bind_target : -1, &l);
	else
		memset(&l, 0, sizeof(l));
	c = json_object_new_object();
	jint(c, "id", (int64_t)r->ck_n);
	jint(c, "target", r->bound ? r->bind_target : -1);
	jstr(c, "state", r->ck_done ? "complete" : r->bound ? "requested" : "pending");
	jstr(c, "cause", dec_cause_name(r->ck.cause));
	jint(c, "ranks", l.ranks);
	jint(c, "ranks_saved", l.saved);
	jint(c, "nodes", r->nmem);
	jint(c, "resume_step", r->last_complete);
	json_object_object_add(o, "checkpoint", c);
	jbool(o, "fenced", dj->mem.fenced);
}

struct hist_ctx {
	struct json_object *arr;
	uid_t uid;
	struct store *st;
};

/* "jobs/<uid>/<job>/runs/<run>/<rest>": uid, the unescaped job, run, rest; -EINVAL else. */
static int split_key(const char *key, unsigned *uid, char *job, size_t len, uint64_t *run,
		     const char **rest)
{
	const char *p = key + 5, *e;
	size_t b = 0;
	char *end;

	if (strncmp(key, "jobs/", 5) || sscanf(p, "%u/", uid) != 1 || !(p = strchr(p, '/')))
		return -EINVAL;
	p++;
	if (!(e = strchr(p, '/')) || strncmp(e, "/runs/", 6))
		return -EINVAL;
	for (const char *a = p; a < e && b + 1 < len; a++) { /* unescape %XX */
		unsigned x;

		if (*a == '%' && a + 2 < e && sscanf(a + 1, "%2X", &x) == 1) {
			job[b++] = (char)x;
			a += 2;
		} else {
			job[b++] = *a;
		}
	}
	job[b] = 0;
	*run = strtoull(e + 6, &end, 10);
	if (end == e + 6 || *end != '/')
		return -EINVAL;
	*rest = end + 1;
	return 0;
}

static int hist_one(void *ctx, const char *key, const char *value)
{
	struct hist_ctx *h = ctx;
	char job[FTBPF_JOB_LEN * 3], bkey[DEC_KEY_LEN * 2];
	const char *rest;
	unsigned uid;
	uint64_t run, g, n;
	struct json_object *o = NULL;

	if (split_key(key, &uid, job, sizeof(job), &run, &rest) < 0 ||
	    (h->uid && uid != (unsigned)h->uid))
		return 0;
	if (dec_key_numbers(rest, "gen", &g, NULL) == 0) {
		struct dec_gen x;

		if (dec_gen_parse(value, &x) < 0)
			return 0;
		o = json_object_new_object();
		jstr(o, "kind", "generation");
		jint(o, "generation", (int64_t)g);
		jstr(o, "cause", dec_cause_name(x.cause));
		jbool(o, "stop", x.stop);
		jint(o, "resume_step", x.resume_step);
		jstr(o, "node", *x.node ? x.node : NULL);
		jstr(o, "by", x.by);
		jint(o, "at_ms", (int64_t)x.at_ms);
		jstr(o, "why", x.why);
		{
			struct json_object *ex = json_object_new_array();

			for (int e = 0; e < x.nexcluded; e++)
				json_object_array_add(ex, json_object_new_string(x.excluded[e]));
			json_object_object_add(o, "excluded", ex);
		}
	} else if (dec_key_numbers(rest, "ckpt", &g, &n) == 0) {
		struct dec_ckpt x;
		struct dec_bind b;
		char *bv;

		if (dec_ckpt_parse(value, &x) < 0)
			return 0;
		snprintf(bkey, sizeof(bkey), "%.*sbind/%020llu/%020llu", (int)(rest - key), key,
			 (unsigned long long)g, (unsigned long long)n);
		bv = store_get(h->st, bkey);
		o = json_object_new_object();
		jstr(o, "kind", "checkpoint");
		jint(o, "generation", (int64_t)g);
		jint(o, "checkpoint", (int64_t)n);
		if (bv && dec_bind_parse(bv, &b) == 0)
			jint(o, "step", b.target);
		else
			jnull(o, "step");
		free(bv);
		jstr(o, "cause", dec_cause_name(x.cause));
		jstr(o, "by", x.by);
		jint(o, "at_ms", (int64_t)x.at_ms);
		jstr(o, "why", x.why);
	} else if (dec_key_numbers(rest, "done", &g, &n) == 0) {
		struct dec_done x;

		if (dec_done_parse(value, &x) < 0)
			return 0;
		o = json_object_new_object();
		jstr(o, "kind", "checkpoint_complete");
		jint(o, "generation", (int64_t)g);
		jint(o, "checkpoint", (int64_t)n);
		jint(o, "step", x.step);
		jint(o, "at_ms", (int64_t)x.at_ms);
	}
	if (o) {
		jstr(o, "job", job);
		jint(o, "uid", uid);
		jint(o, "run", (int64_t)run);
		json_object_array_add(h->arr, o);
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	struct json_object *x = *(struct json_object *const *)a,
			   *y = *(struct json_object *const *)b, *tx, *ty;
	int64_t ax = json_object_object_get_ex(x, "at_ms", &tx) ? json_object_get_int64(tx) : 0;
	int64_t ay = json_object_object_get_ex(y, "at_ms", &ty) ? json_object_get_int64(ty) : 0;

	return ax < ay ? -1 : ax > ay;
}

struct json_object *decide_history_json(struct decider *d, uid_t uid)
{
	struct hist_ctx h = {json_object_new_array(), uid, d->st};

	store_list(d->st, "jobs/", hist_one, &h);
	json_object_array_sort(h.arr, by_time);
	return h.arr;
}

struct json_object *decide_json(struct decider *d)
{
	struct json_object *o = json_object_new_object(), *c = json_object_new_object();

	jstr(o, "node", d->pc.node);
	json_object_object_add(o, "store", store_json(d->st));
	jint(c, "claims", (int64_t)d->claims);
	jint(c, "preemptions", (int64_t)d->preemptions);
	jint(c, "retargets", (int64_t)d->retargets);
	jint(c, "fences", (int64_t)d->fences);
	jint(c, "jobs_refused", (int64_t)d->jobs_refused);
	jint(c, "signals_not_preemption", (int64_t)d->ignored_signals);
	jint(c, "health_check_failures", (int64_t)d->health_failures);
	jint(c, "unavailable", (int64_t)d->unavailable);
	jint(c, "records_refused", (int64_t)d->refused);
	jint(c, "holds", (int64_t)d->holds);
	jint(c, "preemptions_not_checkpointed", (int64_t)d->preemptions_lost);
	jint(c, "checkpoints_failed", (int64_t)d->ckpts_failed);
	json_object_object_add(o, "counters", c);
	return o;
}
