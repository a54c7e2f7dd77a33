/*
 * The Prometheus endpoint (metrics_listen): GET /metrics answers the agent's status in the text
 * exposition format (lib/metrics_text.h). Served by libmicrohttpd in the agent's own event loop
 * (its epoll descriptor is registered with os/loop.h; no thread): a scrape reads the same state
 * the control socket does, between two loop turns. Everyone's jobs are in it: bind it to
 * localhost, or to a network only the monitoring system reaches.
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

/* listen: "ADDR:PORT" (IPv4). NULL with err set. */
struct metrics *metrics_open(struct loop *l, const char *listen, metrics_status_fn fn, void *ctx,
			     char *err, size_t errlen);
void metrics_close(struct metrics *m);
/* The port it listens on, and how many scrapes it answered. */
int metrics_port(const struct metrics *m);
uint64_t metrics_scrapes(const struct metrics *m);
/* Let libmicrohttpd time out idle connections (call once per scan). */
void metrics_tick(struct metrics *m);

#endif
