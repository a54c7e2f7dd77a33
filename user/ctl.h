/*
 * Control socket server: a Unix stream socket speaking the JSON-lines protocol of ctl_proto.h.
 * Every request is tagged with the peer's SO_PEERCRED; handlers decide what it may see or do.
 */
#ifndef FTBPF_CTL_H
#define FTBPF_CTL_H

#include <stdint.h>
#include <sys/types.h>

#include "ctl_proto.h"

struct json_object;
struct eventlog;
struct ctl_server;

struct ctl_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
};

/* Returns a response object (owned by the caller, i.e. the server), never NULL. */
typedef struct json_object *(*ctl_handler_fn)(void *ctx, const struct ctl_request *req,
					      const struct ctl_peer *peer);

struct ctl_counters {
	uint64_t accepted;
	uint64_t requests;
	uint64_t bad_requests; /* not JSON, wrong types, unknown command or version */
	uint64_t oversized;
	uint64_t truncated;    /* connection closed in the middle of a line */
	uint64_t denied;       /* asked about or acted on a process the peer does not own */
	uint64_t dropped_slow; /* follower that did not read its events */
	uint64_t refused_full; /* too many clients */
};

#define CTL_EPOLL_TAG 0x43544c00u /* 'CTL\0': epoll data.u64 high half for our fds */

struct ctl_server *ctl_new(const char *path, int epfd, ctl_handler_fn fn, void *ctx,
			   struct eventlog *el);
void ctl_free(struct ctl_server *s);
/* Handle an epoll event whose data.u64 high 32 bits are CTL_EPOLL_TAG. */
void ctl_handle(struct ctl_server *s, uint64_t data, uint32_t events);
/* Event-log sink: pushes a new event to the following clients allowed to see it. */
void ctl_broadcast(void *s, const char *line, uint32_t uid, uint64_t seq);
const struct ctl_counters *ctl_counters(const struct ctl_server *s);
void ctl_count_denied(struct ctl_server *s);
/* From a handler: pass fd (borrowed, not closed) with the reply being built, by SCM_RIGHTS. */
void ctl_reply_fd(struct ctl_server *s, int fd);

#endif
