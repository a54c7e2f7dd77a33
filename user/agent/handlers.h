/*
 * The control commands' handlers, one per command in one table (the commands themselves are
 * in proto/ctl_proto.c). Every handler gets the request and the peer's credentials and decides
 * what the peer may see or do: a non-root peer sees and acts on its own processes only.
 */
#ifndef FTBPF_HANDLERS_H
#define FTBPF_HANDLERS_H

#include <stdint.h>

#include "agent/views.h"

struct ranks;
struct adopter;
struct timersvc;
struct ctl_server;
struct mesh;
struct eventlog;
struct decider;
struct jobparts;
struct ctl_request;
struct ctl_peer;

struct handlers {
	struct ranks *ranks; /* borrowed (all of these) */
	struct adopter *ad;
	struct timersvc *ts;
	struct ctl_server *ctl;
	struct mesh *mesh; /* NULL: the mesh is off */
	struct eventlog *el;
	struct decider *dc;  /* NULL: decisions are off */
	struct jobparts *jp; /* the job across hosts */
	struct view_src vs;
	/* the agent's own part of `status` (version, features, counters): a new object */
	struct json_object *(*agent_json)(void *ctx, uint64_t now);
	void *agent_ctx;
};

/* The control server's handler (ctl_handler_fn); ctx is a struct handlers. */
struct json_object *handlers_dispatch(void *ctx, const struct ctl_request *req,
				      const struct ctl_peer *peer);
/* The status as root sees it (every job): the metrics endpoint's source. A new object. */
struct json_object *handlers_status(void *ctx);

#endif
