/*
 * The kernel's events (ring buffer) into the rank table and the event log: execs adopt ranks,
 * exits and signals are recorded against their rank, kernel-fired slot timers are logged (and
 * escalated), OOM kills noted. The tracker calls kevents_on_event for each record.
 */
#ifndef FTBPF_KEVENTS_H
#define FTBPF_KEVENTS_H

#include <stdint.h>

struct ftbpf_event;
struct tracker;
struct ranks;
struct adopter;
struct timersvc;
struct eventlog;
struct decider;

struct kevents {
	struct tracker *tr; /* borrowed (all of these) */
	struct ranks *ranks;
	struct adopter *ad;
	struct timersvc *ts;
	struct eventlog *el;
	struct decider *dc; /* NULL: decisions are off */
	uint64_t events;    /* records handled */
};

/* The tracker's on_event callback; ctx is a struct kevents. */
void kevents_on_event(void *ctx, const struct ftbpf_event *e);

#endif
