/* What the agent did about each job, across restarts: see jobstate.h. */
#include "agent/jobstate.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "lib/starttime.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/procfs.h"
#include "os/statefile.h"

#define JOBS_STATE "jobs.json"

void jobstate_open(struct jobstate *js, const char *dir)
{
	memset(js, 0, sizeof(*js));
	js->dir = dir;
	js->saved = statefile_read(dir, JOBS_STATE);
}

void jobstate_close(struct jobstate *js)
{
	json_object_put(js->saved);
	js->saved = NULL;
}

/* The pid and start time of every member our action killed (all: every member). */
static struct json_object *killed_json(const struct job *j, int all)
{
	struct json_object *killed = json_object_new_array();

	for (int m = 0; m < j->nmembers; m++)
		if (all || j->members[m]->killed_by_agent) {
			struct json_object *p = json_object_new_array();

			json_object_array_add(p, json_object_new_int(j->members[m]->pid));
			json_object_array_add(p, json_object_new_uint64(j->members[m]->start_ns));
			json_object_array_add(killed, p);
		}
	return killed;
}

void jobstate_save(struct jobstate *js, const struct ranks *r)
{
	struct json_object *o, *arr;
	int e;

	if (!js->dirty)
		return;
	js->dirty = 0;
	o = json_object_new_object();
	arr = json_object_new_array();
	for (int i = 0; i < r->njobs; i++) {
		const struct job *j = r->jobs[i];
		struct json_object *jo, *killed = killed_json(j, 0), *cul;

		if (!j->reported && !j->failed_reported && !j->action_done && !j->end_reported &&
		    !json_object_array_length(killed)) {
			json_object_put(killed);
			continue;
		}
		jo = json_object_new_object();
		jint(jo, "uid", j->uid);
		jstr(jo, "job", j->id);
		jbool(jo, "reported", j->reported);
		jbool(jo, "failed_reported", j->failed_reported);
		jbool(jo, "action_done", j->action_done);
		json_object_object_add(jo, "killed", killed);
		/* the run it is about: its ranks (a relaunch is another run) */
		json_object_object_add(jo, "run_ranks", killed_json(j, 1));
		jbool(jo, "end_reported", j->end_reported);
		jbool(jo, "hard_killed", j->hard_killed);
		if (j->hang_end.by) {
			struct json_object *e = json_object_new_object();

			jstr(e, "by", jobend_by_name(j->hang_end.by));
			jint(e, "pid", j->hang_end.pid);
			jint(e, "rank", j->hang_end.rank);
			jint(e, "status", j->hang_end.status);
			jint(e, "sender_pid", j->hang_end.sender_pid);
			jstr(e, "sender_comm", j->hang_end.sender_comm);
			json_object_object_add(jo, "hang_end", e);
		}
		jstr(jo, "hang_why", j->hang_why);
		cul = json_object_new_array();
		for (int c = 0; c < j->nhang_culprits; c++)
			json_object_array_add(cul, json_object_new_int(j->hang_culprits[c]));
		json_object_object_add(jo, "hang_culprits", cul);
		json_object_array_add(arr, jo);
	}
	jint(o, "v", 1);
	json_object_object_add(o, "jobs", arr);
	e = statefile_write(js->dir, JOBS_STATE, o);
	if (e < 0 && clock_mono_ns() - js->warn_ns > 60 * CLOCK_NS_PER_S) {
		js->warn_ns = clock_mono_ns();
		log_warn("cannot save %s/%s: %s", js->dir, JOBS_STATE, strerror(-e));
	}
	json_object_put(o);
}

static int get_bool(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_get_boolean(v);
}

/* Is saved entry jo about job j? */
static int is_job(struct json_object *jo, const struct job *j)
{
	struct json_object *v;
	const char *id;

	if (!json_object_object_get_ex(jo, "job", &v) || !(id = json_object_get_string(v)) ||
	    strcmp(id, j->id))
		return 0;
	return json_object_object_get_ex(jo, "uid", &v) &&
	       (uid_t)json_object_get_int64(v) == j->uid;
}

/* Is the pid + start time list a (a saved "killed" or "run_ranks") naming a member of j? */
static int names_member(struct json_object *a, const struct job *j, int mark_killed)
{
	int found = 0;

	if (!a || !json_object_is_type(a, json_type_array))
		return 0;
	for (size_t k = 0; k < json_object_array_length(a); k++) {
		struct json_object *p = json_object_array_get_idx(a, k);
		int pid;
		uint64_t st;

		if (!json_object_is_type(p, json_type_array) || json_object_array_length(p) != 2)
			continue; /* not ours: a hand-edited file */
		pid = json_object_get_int(json_object_array_get_idx(p, 0));
		st = json_object_get_uint64(json_object_array_get_idx(p, 1));
		for (int m = 0; m < j->nmembers; m++)
			if (j->members[m]->pid == pid &&
			    starttime_same(j->members[m]->start_ns, st)) {
				found = 1;
				if (mark_killed)
					j->members[m]->killed_by_agent = 1;
			}
	}
	return found;
}

/* The kept hang of a hung run that was ending (an earlier agent's "kill_why" and
 * "kill_culprits" are the same, ended by its hard action). */
static void restore_hang_end(struct json_object *jo, struct job *j)
{
	struct json_object *e, *v;
	const char *why = NULL;

	if (json_object_object_get_ex(jo, "hang_end", &e) &&
	    json_object_is_type(e, json_type_object)) {
		if (json_object_object_get_ex(e, "by", &v))
			j->hang_end.by = jobend_by_parse(json_object_get_string(v));
		if (json_object_object_get_ex(e, "pid", &v))
			j->hang_end.pid = json_object_get_int(v);
		if (json_object_object_get_ex(e, "rank", &v))
			j->hang_end.rank = json_object_get_int(v);
		if (json_object_object_get_ex(e, "status", &v))
			j->hang_end.status = json_object_get_int(v);
		if (json_object_object_get_ex(e, "sender_pid", &v))
			j->hang_end.sender_pid = (uint32_t)json_object_get_int64(v);
		if (json_object_object_get_ex(e, "sender_comm", &v) && json_object_get_string(v))
			snprintf(j->hang_end.sender_comm, sizeof(j->hang_end.sender_comm), "%s",
				 json_object_get_string(v));
	} else if (j->hard_killed) {
		j->hang_end.by = JOBEND_AGENT;
	}
	if ((json_object_object_get_ex(jo, "hang_why", &v) ||
	     json_object_object_get_ex(jo, "kill_why", &v)) &&
	    json_object_is_type(v, json_type_string))
		why = json_object_get_string(v);
	snprintf(j->hang_why, sizeof(j->hang_why), "%s", why ? why : "");
	if ((json_object_object_get_ex(jo, "hang_culprits", &v) ||
	     json_object_object_get_ex(jo, "kill_culprits", &v)) &&
	    json_object_is_type(v, json_type_array))
		for (size_t c = 0;
		     c < json_object_array_length(v) && j->nhang_culprits < DET_MAX_CULPRITS; c++)
			j->hang_culprits[j->nhang_culprits++] =
			    json_object_get_int(json_object_array_get_idx(v, c));
}

void jobstate_restore(struct jobstate *js, struct job *j)
{
	struct json_object *arr, *killed, *v;

	j->restored = 1;
	if (!js->saved || !json_object_object_get_ex(js->saved, "jobs", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *jo = json_object_array_get_idx(arr, i);

		if (!is_job(jo, j))
			continue;
		/* the saved state is about the run these ranks are of, not a later one */
		if (json_object_object_get_ex(jo, "run_ranks", &v) && !names_member(v, j, 0))
			continue;
		j->reported = get_bool(jo, "reported");
		j->failed_reported = get_bool(jo, "failed_reported");
		j->action_done = get_bool(jo, "action_done");
		j->end_reported = get_bool(jo, "end_reported");
		j->hard_killed = get_bool(jo, "hard_killed");
		restore_hang_end(jo, j);
		if (json_object_object_get_ex(jo, "killed", &killed))
			names_member(killed, j, 1);
		return;
	}
}
