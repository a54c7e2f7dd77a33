/*
 * The event loop: one epoll set and a registry of handlers, in the manner of chrony's
 * scheduler. A module registers a handler once and then adds its descriptors with a 32-bit
 * argument of its own (a slot number, say); the loop calls handler(ctx, arg, events). Handlers
 * marked urgent run before the others of the same turn (timer enforcement before a flood of
 * requests or events).
 */
#ifndef FTBPF_LOOP_H
#define FTBPF_LOOP_H

#include <stdint.h>

struct loop;

typedef void (*loop_fn)(void *ctx, uint32_t arg, uint32_t events);

/* NULL with errno set. */
struct loop *loop_new(void);
void loop_free(struct loop *l);
/* Register a handler: its id (>= 0), or -ENOSPC. */
int loop_handler(struct loop *l, loop_fn fn, void *ctx, int urgent);
/* Watch fd for events (EPOLLIN, EPOLLOUT ...) on behalf of handler. 0 or -errno. */
int loop_add(struct loop *l, int fd, uint32_t events, int handler, uint32_t arg);
int loop_mod(struct loop *l, int fd, uint32_t events, int handler, uint32_t arg);
/* Stop watching fd (before closing it, or to pause it). 0 or -errno. */
int loop_del(struct loop *l, int fd);
/* Wait up to timeout_ms (-1: without end) and dispatch what came, urgent handlers first.
 * How many events were dispatched (EINTR: 0), or -errno. */
int loop_once(struct loop *l, int timeout_ms);
/* Arm timerfd fd (CLOCK_MONOTONIC) to expire at deadline_ns on that clock; 0 disarms it. A
 * deadline already past expires at once. 0 or -errno. */
int loop_timer_at(int fd, uint64_t deadline_ns);

#endif
