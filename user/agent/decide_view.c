/* Decisions as events and JSON (status, history). See decide_int.h. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/decide_int.h"
#include "agent/eventlog.h"
#include "agent/store.h"
#include "agent/views.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"

/* ---- decisions ---- */
void dc_log_decision(struct decider *d, const struct djob *dj, const char *kind)
{
	struct json_object *o = view_event("decision");
	const struct dp_records *r = &dj->rec;

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	jstr(o, "kind", kind);
	jint(o, "generation", (int64_t)r->gen);
	if (!strcmp(kind, "generation")) {
		jstr(o, "cause", dec_cause_name(r->g.cause));
		jbool(o, "stop", r->g.stop);
		jint(o, "resume_step", r->g.resume_step);
		jstr(o, "node", *r->g.node ? r->g.node : NULL);
		jstr(o, "by", r->g.by);
		jstr(o, "why", r->g.why);
		{
			struct json_object *ex = json_object_new_array();

			for (int i = 0; i < r->g.nexcluded; i++)
				json_object_array_add(ex, json_object_new_string(r->g.excluded[i]));
			json_object_object_add(o, "excluded", ex);
		}
	} else {
		jint(o, "checkpoint", (int64_t)r->ck_n);
		jint(o, "step", r->ck.target);
		jstr(o, "cause", dec_cause_name(r->ck.cause));
		jstr(o, "by", r->ck.by);
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
	jint(o, "generation", (int64_t)r->gen);
	if (!r->ck_n) {
		jnull(o, "checkpoint");
		return;
	}
	if (dc_gather(d, dj, j) == 0)
		dp_local(d->rk, d->nrk, r->ck.target, &l);
	else
		memset(&l, 0, sizeof(l));
	c = json_object_new_object();
	jint(c, "id", (int64_t)r->ck_n);
	jint(c, "target", r->ck.target);
	jstr(c, "state", r->ck_done ? "complete" : "requested");
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
};

static int hist_one(void *ctx, const char *key, const char *value)
{
	struct hist_ctx *h = ctx;
	const char *p = key + 5, *rest; /* "jobs/" */
	char job[FTBPF_JOB_LEN * 3] = "";
	unsigned uid;
	uint64_t g, n;
	struct json_object *o;
	const char *kinds[] = {"gen/", "ckpt/", "done/"};
	size_t jl;

	if (sscanf(p, "%u/", &uid) != 1 || (h->uid && uid != (unsigned)h->uid))
		return 0;
	p = strchr(p, '/') + 1;
	for (int i = 0; i < 3; i++) {
		for (rest = p; (rest = strstr(rest, kinds[i])); rest++)
			if (rest[-1] == '/')
				break;
		if (!rest)
			continue;
		jl = (size_t)(rest - 1 - p);
		if (jl >= sizeof(job))
			return 0;
		for (size_t a = 0, b = 0; a < jl; a++) { /* unescape %XX */
			unsigned x;

			if (p[a] == '%' && a + 2 < jl && sscanf(p + a + 1, "%2X", &x) == 1) {
				job[b++] = (char)x;
				a += 2;
			} else {
				job[b++] = p[a];
			}
			job[b] = 0;
		}
		o = NULL;
		if (i == 0 && dec_key_numbers(rest, "gen", &g, NULL) == 0) {
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
					json_object_array_add(
					    ex, json_object_new_string(x.excluded[e]));
				json_object_object_add(o, "excluded", ex);
			}
		} else if (i == 1 && dec_key_numbers(rest, "ckpt", &g, &n) == 0) {
			struct dec_ckpt x;

			if (dec_ckpt_parse(value, &x) < 0)
				return 0;
			o = json_object_new_object();
			jstr(o, "kind", "checkpoint");
			jint(o, "generation", (int64_t)g);
			jint(o, "checkpoint", (int64_t)n);
			jint(o, "step", x.target);
			jstr(o, "cause", dec_cause_name(x.cause));
			jstr(o, "by", x.by);
			jint(o, "at_ms", (int64_t)x.at_ms);
			jstr(o, "why", x.why);
		} else if (i == 2 && dec_key_numbers(rest, "done", &g, &n) == 0) {
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
			json_object_array_add(h->arr, o);
		}
		return 0;
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
	struct hist_ctx h = {json_object_new_array(), uid};

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
	jint(c, "signals_not_preemption", (int64_t)d->ignored_signals);
	jint(c, "health_check_failures", (int64_t)d->health_failures);
	jint(c, "unavailable", (int64_t)d->unavailable);
	json_object_object_add(o, "counters", c);
	return o;
}
