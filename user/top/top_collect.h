/*
 * ftbpf-top's collection: one short connection per request to ftbpfd's control socket
 * (status, new events, explain, stacks), results handed to the model; the ranks' CPU and
 * memory from /proc/PID/stat, their GPU use from NVML where the host has it (os/nvml.h). A connection per request keeps
 * nothing open across an agent restart: the next refresh simply reaches the new agent.
 */
#ifndef FTBPF_TOP_COLLECT_H
#define FTBPF_TOP_COLLECT_H

#include <json-c/json.h>

#include "top/top_model.h"

struct nvml;

struct top_source {
	const char *socket; /* borrowed */
	int timeout_ms;
	int agent_pid;	   /* the agent the events came from: another pid restarts the event list */
	struct nvml *nvml; /* NVML, opened at the first collection where the host has it */
	int nvml_tried;
};

/* Status and new events into the model; on failure the model is marked disconnected.
 * Returns 0 or -errno. now_s is monotonic. */
int top_collect(struct top_source *src, struct top_model *m, double now_s);

/* Close what the collections opened (NVML). */
void top_collect_close(struct top_source *src);

/* "explain" for pid: *ret_obj (owned by the caller) or -errno with err filled. */
int top_collect_explain(struct top_source *src, int pid, struct json_object **ret_obj, char *err,
			size_t errlen);

/* "stacks" for pid (what `ftbpf stacks PID` shows): *ret_obj (owned by the caller) or -errno
 * with err filled. */
int top_collect_stacks(struct top_source *src, int pid, struct json_object **ret_obj, char *err,
		       size_t errlen);

#endif
