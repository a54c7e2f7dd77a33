/* What the agent did about each job, across restarts: see jobstate.h. */
#include "agent/jobstate.h"

#include <json-c/json.h>
#include <string.h>

#include "lib/jsonx.h"
#include "lib/ranks.h"
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

/* The pid and start time of every member our action killed. */
static struct json_object *killed_json(const struct job *j)
{
	struct json_object *killed = json_object_new_array();

	for (int m = 0; m < j->nmembers; m++)
		if (j->members[m]->killed_by_agent) {
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
		struct json_object *jo, *killed = killed_json(j);

		if (!j->reported && !j->failed_reported && !j->action_done &&
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

void jobstate_restore(struct jobstate *js, struct job *j)
{
	struct json_object *arr, *killed;

	j->restored = 1;
	if (!js->saved || !json_object_object_get_ex(js->saved, "jobs", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *jo = json_object_array_get_idx(arr, i);

		if (!is_job(jo, j))
			continue;
		j->reported = get_bool(jo, "reported");
		j->failed_reported = get_bool(jo, "failed_reported");
		j->action_done = get_bool(jo, "action_done");
		if (!json_object_object_get_ex(jo, "killed", &killed) ||
		    !json_object_is_type(killed, json_type_array))
			return;
		for (size_t k = 0; k < json_object_array_length(killed); k++) {
			struct json_object *p = json_object_array_get_idx(killed, k);
			int pid;
			uint64_t st;

			if (!json_object_is_type(p, json_type_array) ||
			    json_object_array_length(p) != 2)
				continue; /* not ours: a hand-edited file */
			pid = json_object_get_int(json_object_array_get_idx(p, 0));
			st = json_object_get_uint64(json_object_array_get_idx(p, 1));
			for (int m = 0; m < j->nmembers; m++)
				if (j->members[m]->pid == pid &&
				    procfs_same_start(j->members[m]->start_ns, st))
					j->members[m]->killed_by_agent = 1;
		}
		return;
	}
}
