/*
 * The event log: every event the agent saw or did, as one JSON object per line, appended to a
 * size-bounded, rotated file, summarised on stderr, and kept in memory for `ftbpf events`.
 */
#ifndef FTBPF_EVENTLOG_H
#define FTBPF_EVENTLOG_H

#include <stdint.h>

struct json_object;
struct eventlog;

/* path may be empty (no file). Returns NULL with errno set. */
struct eventlog *eventlog_new(const char *path, long max_bytes, int keep, int mem_keep);
void eventlog_free(struct eventlog *el);
int eventlog_reopen(struct eventlog *el);
/* Load the newest events of an existing log into memory (after an agent restart). */
int eventlog_load_tail(struct eventlog *el);

typedef void (*eventlog_sink_fn)(void *ctx, const char *line, uint32_t uid, uint64_t seq);
void eventlog_set_sink(struct eventlog *el, eventlog_sink_fn fn, void *ctx);

/* Stamp ev with seq and ts, log it, store it. Takes ownership of ev. Returns seq. */
uint64_t eventlog_emit(struct eventlog *el, struct json_object *ev);

/* Call fn for each event in memory with seq > after; uid is the event's "uid" or -1. */
typedef int (*eventlog_each_fn)(void *ctx, const char *line, int64_t uid, uint64_t seq);
int eventlog_foreach(struct eventlog *el, uint64_t after, eventlog_each_fn fn, void *ctx);
uint64_t eventlog_count(const struct eventlog *el);
uint64_t eventlog_write_errors(const struct eventlog *el);

#endif
