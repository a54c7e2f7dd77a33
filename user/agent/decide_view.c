/* Decisions as events and JSON (status, history). See decide_int.h. */
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/decide_int.h"
#include "agent/eventlog.h"
#include "agent/store.h"
#include "agent/timersvc.h"
#include "agent/views.h"
#include "ftbpf/slot.h"
#include "lib/config.h"
#include "lib/decisions.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/pidfd.h"
#include "os/procfs.h"

/* ---- decisions ---- */
void dc_log_decision(struct decider *d, struct djob *dj, const char *kind)
{
	struct json_object *o = view_event("decision");

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	jstr(o, "kind", kind);
	jint(o, "generation", (int64_t)dj->gen);
	if (!strcmp(kind, "generation")) {
		jstr(o, "cause", dec_cause_name(dj->g.cause));
		jbool(o, "stop", dj->g.stop);
		jint(o, "resume_step", dj->g.resume_step);
		jstr(o, "node", *dj->g.node ? dj->g.node : NULL);
		jstr(o, "by", dj->g.by);
		jstr(o, "why", dj->g.why);
		{
			struct json_object *ex = json_object_new_array();

			for (int i = 0; i < dj->g.nexcluded; i++)
				json_object_array_add(ex,
						      json_object_new_string(dj->g.excluded[i]));
			json_object_object_add(o, "excluded", ex);
		}
	} else {
		jint(o, "checkpoint", (int64_t)dj->ck_n);
		jint(o, "step", dj->ck.target);
		jstr(o, "cause", dec_cause_name(dj->ck.cause));
		jstr(o, "by", dj->ck.by);
		jstr(o, "why", dj->ck.why);
	}
	jstr(o, "node", d->node);
	eventlog_emit(d->el, o);
}

/* ---- views ---- */
void decide_job_json(struct decider *d, const struct job *j, struct json_object *o)
{
	struct djob *dj = dc_find(d, j->uid, j->id, 0);
	struct json_object *c;
	struct local l;

	if (!dj) {
		jint(o, "generation", 0);
		jnull(o, "checkpoint");
		return;
	}
	jint(o, "generation", (int64_t)dj->gen);
	if (!dj->ck_n) {
		jnull(o, "checkpoint");
		return;
	}
	dc_local_view(j, dj->ck.target, &l);
	c = json_object_new_object();
	jint(c, "id", (int64_t)dj->ck_n);
	jint(c, "target", dj->ck.target);
	jstr(c, "state", dj->ck_done ? "complete" : "requested");
	jstr(c, "cause", dec_cause_name(dj->ck.cause));
	jint(c, "ranks", l.ranks);
	jint(c, "ranks_saved", l.saved);
	jint(c, "nodes", dj->nmem);
	jint(c, "resume_step", dj->last_complete);
	json_object_object_add(o, "checkpoint", c);
	jbool(o, "fenced", dj->fenced);
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

	if (strncmp(key, "jobs/", 5) || sscanf(p, "%u/", &uid) != 1 ||
	    (h->uid && uid != (unsigned)h->uid) || !(p = strchr(p, '/')))
		return 0; /* not a job's key (written by someone else): not ours to show */
	p++;
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

	jstr(o, "node", d->node);
	json_object_object_add(o, "store", store_json(d->st));
	jint(c, "claims", (int64_t)d->claims);
	jint(c, "preemptions", (int64_t)d->preemptions);
	jint(c, "retargets", (int64_t)d->retargets);
	jint(c, "fences", (int64_t)d->fences);
	jint(c, "jobs_refused", (int64_t)d->jobs_refused);
	jint(c, "signals_not_preemption", (int64_t)d->ignored_signals);
	jint(c, "health_check_failures", (int64_t)d->health_failures);
	jint(c, "unavailable", (int64_t)d->unavailable);
	json_object_object_add(o, "counters", c);
	return o;
}
