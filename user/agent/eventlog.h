/*
 * The event log: every event the agent saw or did, as one JSON object per line, appended to a
 * size-bounded, rotated file, summarised on stderr, and kept in memory for `ftbpf events`.
 */
#ifndef FTBPF_EVENTLOG_H
#define FTBPF_EVENTLOG_H

#include <stddef.h>
#include <stdint.h>

struct json_object;
struct eventlog;

struct eventlog_opts {
	const char *path;  /* empty or NULL: no file */
	long max_bytes;	   /* rotate past this size */
	int keep;	   /* rotated files kept */
	int mem_keep;	   /* events kept in memory */
	const char *group; /* group that may read the files (mode 0640); empty: root only (0600) */
};

/* NULL with a message in err. The file's directory must be root's alone (see safefs.h). */
struct eventlog *eventlog_new(const struct eventlog_opts *o, char *err, size_t errlen);
void eventlog_free(struct eventlog *el);
int eventlog_reopen(struct eventlog *el);
/* Load the newest events of an existing log into memory (after an agent restart). */
int eventlog_load_tail(struct eventlog *el);

typedef void (*eventlog_sink_fn)(void *ctx, const char *line, uint32_t uid, uint64_t seq);
void eventlog_set_sink(struct eventlog *el, eventlog_sink_fn fn, void *ctx);

/*
 * Where each event's short line goes (lib/evline.h: prio is its syslog priority, line the
 * line made terminal-safe; json and ev the whole event). Without one: stderr, through
 * os/log.h (debug-priority events only at --verbose 3).
 */
typedef void (*eventlog_out_fn)(void *ctx, int prio, const char *line, const char *json,
				struct json_object *ev);
void eventlog_set_out(struct eventlog *el, eventlog_out_fn fn, void *ctx);

/* Stamp ev with seq and ts, log it, store it. Takes ownership of ev. Returns seq. */
uint64_t eventlog_emit(struct eventlog *el, struct json_object *ev);

/* Call fn for each event in memory with seq > after; uid is the event's "uid" or -1. */
typedef int (*eventlog_each_fn)(void *ctx, const char *line, int64_t uid, uint64_t seq);
int eventlog_foreach(struct eventlog *el, uint64_t after, eventlog_each_fn fn, void *ctx);
uint64_t eventlog_count(const struct eventlog *el);
uint64_t eventlog_write_errors(const struct eventlog *el);

#endif
