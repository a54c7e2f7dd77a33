/*
 * The Prometheus endpoint (metrics_listen): GET /metrics answers the agent's status in the text
 * exposition format (lib/metrics_text.h). Served by libmicrohttpd in the agent's own event loop
 * (its epoll descriptor is registered with os/loop.h; no thread): a scrape reads the same state
 * the control socket does, between two loop turns. Everyone's jobs are in it: bind it to
 * localhost, or to a network only the monitoring system reaches, and give it a token
 * (metrics_token_file: requests need "Authorization: Bearer TOKEN"). It may listen on a Unix
 * socket instead ("unix:/PATH"). Each local user (found through SO_PEERCRED or sock_diag)
 * holds at most a few connections, each remote address a few more, and a connection that has
 * not sent a whole request within 3 s is ended: no user can keep root's scrapes out.
 */
#ifndef FTBPF_METRICS_H
#define FTBPF_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct loop;
struct json_object;
struct metrics;

/* The status as root sees it (a new object, owned by the caller). */
typedef struct json_object *(*metrics_status_fn)(void *ctx);

struct metrics_opts {
	const char *listen;	/* "ADDR:PORT" (IPv4) or "unix:/PATH" */
	const char *token_file; /* "" or NULL: no token */
	metrics_status_fn fn;
	void *ctx;
};

/* NULL with err set. */
struct metrics *metrics_open(struct loop *l, const struct metrics_opts *o, char *err,
			     size_t errlen);
/* Connections refused (a user's share full), ended for want of a whole request in time, and
 * requests without the token. */
void metrics_counters(const struct metrics *m, uint64_t *ret_refused, uint64_t *ret_timed_out,
		      uint64_t *ret_unauthorized);
void metrics_close(struct metrics *m);
/* The port it listens on, and how many scrapes it answered. */
int metrics_port(const struct metrics *m);
uint64_t metrics_scrapes(const struct metrics *m);
/* Let libmicrohttpd time out idle connections (call once per scan). */
void metrics_tick(struct metrics *m);

#endif
