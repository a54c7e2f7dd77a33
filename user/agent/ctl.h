/*
 * Control socket server: a Unix stream socket speaking the JSON-lines protocol of ctl_proto.h.
 * Every request is tagged with the peer's SO_PEERCRED and, where the kernel has it, a pidfd of
 * the connecting process (SO_PEERPIDFD); handlers decide what it may see or do. Every resource
 * a client can make the server hold is bounded per user (see struct ctl_limits).
 */
#ifndef FTBPF_CTL_H
#define FTBPF_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/ctl_proto.h"

struct json_object;
struct eventlog;
struct ctl_server;
struct loop;

struct ctl_peer {
	pid_t pid; /* SO_PEERCRED: the process that connected (it may have exited since) */
	uid_t uid;
	gid_t gid;
	int pidfd;	   /* SO_PEERPIDFD of that process (owned by the server), -1: none */
	uint64_t start_ns; /* its start time (since boot) read at accept, 0 unknown */
	int following;	   /* the connection streams events */
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
	uint64_t refused_user; /* too many connections of one user */
	uint64_t refused_fds;  /* out of file descriptors */
	uint64_t idle_closed;  /* no request for idle_s */
	uint64_t over_budget;  /* a user's unread output went past uid_out_bytes */
};

/* Bounds on what clients can make the server hold. Zero fields take the defaults. */
struct ctl_limits {
	int max_clients;      /* connections in all (1024) */
	int root_reserve;     /* of which only root may use the last ones (32) */
	int per_uid;	      /* connections of one non-root user (64) */
	size_t uid_out_bytes; /* unsent replies and events of one non-root user (8 MiB) */
	double idle_s;	      /* close a connection that sent no request for so long (60 s) */
};

/* NULL with errno set and a message in err. The server watches its sockets in loop (borrowed,
 * it must outlive the server). */
struct ctl_server *ctl_new(const char *path, struct loop *loop, const struct ctl_limits *lim,
			   ctl_handler_fn fn, void *ctx, struct eventlog *el, char *err,
			   size_t errlen);
void ctl_free(struct ctl_server *s);
/* Periodic work (idle connections); now is CLOCK_MONOTONIC ns. */
void ctl_tick(struct ctl_server *s, uint64_t now);
/* Event-log sink: pushes a new event to the following clients allowed to see it. */
void ctl_broadcast(void *s, const char *line, uint32_t uid, uint64_t seq);
const struct ctl_counters *ctl_counters(const struct ctl_server *s);
int ctl_clients(const struct ctl_server *s);
void ctl_count_denied(struct ctl_server *s);
/*
 * From a handler: the reply will come later, through ctl_reply_later with the token returned
 * (the handler's return value is dropped). The connection reads no further request meanwhile.
 */
uint64_t ctl_defer(struct ctl_server *s);
/* The reply of a deferred request (o owned by the server from here; dropped when the
 * connection has gone meanwhile). */
void ctl_reply_later(struct ctl_server *s, uint64_t token, struct json_object *o);
/* From a handler: pass fd (borrowed, not closed) with the reply being built, by SCM_RIGHTS. */
void ctl_reply_fd(struct ctl_server *s, int fd);
/*
 * Is the process at peer->pid still the one that connected? 0, or -ESRCH when it exited (its
 * pid may belong to another process by now). By pidfd where the kernel gave one, else by the
 * start time and uid recorded at accept.
 */
int ctl_peer_current(const struct ctl_peer *peer);

#endif
