/*
 * Event log. The file is append-only JSON lines; past max_bytes it is renamed to .1 (older
 * ones shift up to .keep) and a new file begins, so the log never grows without bound.
 * A failed write is counted, never fatal: the agent keeps watching.
 */
#include "agent/eventlog.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/evline.h"
#include "os/log.h"
#include "os/safefs.h"

struct mem_event {
	char *line;
	int64_t uid;
	uint64_t seq;
};

struct eventlog {
	char path[256];
	long max_bytes;
	int keep;
	int fd;
	long size;
	mode_t mode;		/* 0600, or 0640 with gid */
	gid_t gid;		/* (gid_t)-1: root's */
	struct mem_event *ring; /* owned; ring[i].line owned */
	int cap, head, n;
	uint64_t seq;
	uint64_t write_errors;
	eventlog_sink_fn sink;
	void *sink_ctx;
	eventlog_out_fn out; /* where the events' short lines go; NULL: stderr */
	void *out_ctx;
	char err[256]; /* why the last open failed */
};

/* Set the mode and group of an existing file of ours (rotated logs of an older version). */
static void fix_perms(const struct eventlog *el, int fd)
{
	if (el->gid != (gid_t)-1 && fchown(fd, (uid_t)-1, el->gid) < 0)
		return;
	if (fchmod(fd, el->mode) < 0)
		return; /* best effort: the open already refused anything not ours */
}

static int open_log(struct eventlog *el)
{
	struct stat st;
	char dir[256];
	int r;

	if (!*el->path)
		return 0;
	if (safefs_parent(el->path, dir, sizeof(dir)) < 0)
		return -ENAMETOOLONG;
	r = safefs_mkdir(dir, 0755, el->err, sizeof(el->err));
	if (r < 0)
		return r;
	el->fd = safefs_open(el->path, O_WRONLY | O_APPEND | O_CREAT, el->mode, el->err,
			     sizeof(el->err));
	if (el->fd < 0)
		return el->fd;
	fix_perms(el, el->fd);
	el->size = fstat(el->fd, &st) == 0 ? st.st_size : 0;
	return 0;
}

struct eventlog *eventlog_new(const struct eventlog_opts *o, char *err, size_t errlen)
{
	struct eventlog *el = calloc(1, sizeof(*el));
	int r;

	if (!el) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(el->path, sizeof(el->path), "%s", o->path ? o->path : "");
	el->max_bytes = o->max_bytes;
	el->keep = o->keep;
	el->fd = -1;
	el->mode = 0600;
	el->gid = (gid_t)-1;
	if (o->group && *o->group) {
		struct group *g = getgrnam(o->group);

		if (!g) {
			snprintf(err, errlen, "log group %s: no such group", o->group);
			free(el);
			return NULL;
		}
		el->gid = g->gr_gid;
		el->mode = 0640;
	}
	el->cap = o->mem_keep > 0 ? o->mem_keep : 1024;
	el->ring = calloc(el->cap, sizeof(*el->ring));
	if (!el->ring) {
		snprintf(err, errlen, "out of memory");
		free(el);
		return NULL;
	}
	r = open_log(el);
	if (r < 0) {
		snprintf(err, errlen, "%s", el->err);
		eventlog_free(el);
		return NULL;
	}
	for (int i = 1; *el->path && i <= el->keep; i++) { /* older logs: same permissions */
		char p[300];
		int fd;

		snprintf(p, sizeof(p), "%s.%d", el->path, i);
		fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (fstat(fd, &(struct stat){0}) == 0)
			fix_perms(el, fd);
		close(fd);
	}
	return el;
}

void eventlog_free(struct eventlog *el)
{
	if (!el)
		return;
	if (el->fd >= 0)
		close(el->fd);
	for (int i = 0; i < el->cap; i++)
		free(el->ring[i].line);
	free(el->ring);
	free(el);
}

int eventlog_reopen(struct eventlog *el)
{
	if (el->fd >= 0)
		close(el->fd);
	el->fd = -1;
	return open_log(el);
}

static void rotate(struct eventlog *el)
{
	char from[300], to[300];

	for (int i = el->keep - 1; i >= 1; i--) {
		snprintf(from, sizeof(from), "%s.%d", el->path, i);
		snprintf(to, sizeof(to), "%s.%d", el->path, i + 1);
		rename(from, to);
	}
	if (el->keep > 0) {
		snprintf(to, sizeof(to), "%s.1", el->path);
		rename(el->path, to);
	} else {
		unlink(el->path);
	}
	eventlog_reopen(el);
}

void eventlog_set_sink(struct eventlog *el, eventlog_sink_fn fn, void *ctx)
{
	el->sink = fn;
	el->sink_ctx = ctx;
}

static void store(struct eventlog *el, const char *line, int64_t uid, uint64_t seq)
{
	struct mem_event *m = &el->ring[el->head];

	free(m->line);
	m->line = strdup(line);
	m->uid = uid;
	m->seq = seq;
	el->head = (el->head + 1) % el->cap;
	if (el->n < el->cap)
		el->n++;
}

void eventlog_set_out(struct eventlog *el, eventlog_out_fn fn, void *ctx)
{
	el->out = fn;
	el->out_ctx = ctx;
}

/*
 * What stderr (or the journal) gets of an event: one short line (lib/evline.h), never the
 * JSON, which the file, `ftbpf events --json` and the journal's FTBPF_EVENT_JSON field have.
 */
static void log_event(const struct eventlog *el, struct json_object *ev, const char *line)
{
	char buf[EVLINE_MAX], safe[4 * EVLINE_MAX];
	int prio = evline_format(ev, buf, sizeof(buf));

	if (el->out) {
		log_safe(buf, safe, sizeof(safe));
		el->out(el->out_ctx, prio, safe, line, ev);
		return;
	}
	log_msg(prio <= EVLINE_WARNING ? LOG_WARN
		: prio >= EVLINE_DEBUG ? LOG_DEBUG
				       : LOG_INFO,
		"%s", buf);
}

uint64_t eventlog_emit(struct eventlog *el, struct json_object *ev)
{
	struct timespec ts;
	struct tm tm;
	char t[48], *buf;
	const char *line;
	struct json_object *u;
	int64_t uid = -1;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(t + strlen(t), sizeof(t) - strlen(t), ".%03ldZ", ts.tv_nsec / 1000000);
	el->seq++;
	json_object_object_add(ev, "seq", json_object_new_uint64(el->seq));
	json_object_object_add(ev, "ts", json_object_new_string(t));
	if (json_object_object_get_ex(ev, "uid", &u))
		uid = json_object_get_int64(u);
	line = json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN |
						      JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(line);
	buf = malloc(len + 2);
	if (buf) {
		memcpy(buf, line, len);
		buf[len] = '\n';
		buf[len + 1] = 0;
		if (el->fd >= 0) {
			if (write(el->fd, buf, len + 1) != (ssize_t)(len + 1))
				el->write_errors++;
			else
				el->size += len + 1;
			if (el->max_bytes > 0 && el->size >= el->max_bytes)
				rotate(el);
		}
		free(buf);
	}
	log_event(el, ev, line);
	store(el, line, uid, el->seq);
	if (el->sink)
		el->sink(el->sink_ctx, line, (uint32_t)uid, el->seq);
	json_object_put(ev);
	return el->seq;
}

int eventlog_load_tail(struct eventlog *el)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	long start;

	if (!*el->path)
		return 0;
	f = fopen(el->path, "re");
	if (!f)
		return -errno;
	/* Only the tail can fit in memory: start about cap * 512 bytes from the end. */
	fseek(f, 0, SEEK_END);
	start = ftell(f) - (long)el->cap * 512;
	if (start > 0) {
		fseek(f, start, SEEK_SET);
		if (getline(&line, &cap, f) < 0) { /* skip the partial line */
			free(line);
			fclose(f);
			return 0;
		}
	} else {
		fseek(f, 0, SEEK_SET);
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		struct json_object *o, *v;
		int64_t uid = -1;
		uint64_t seq;

		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		o = json_tokener_parse(line);
		if (!o)
			continue;
		if (json_object_object_get_ex(o, "seq", &v)) {
			seq = json_object_get_uint64(v);
			if (json_object_object_get_ex(o, "uid", &v))
				uid = json_object_get_int64(v);
			if (seq > el->seq)
				el->seq = seq;
			store(el, line, uid, seq);
		}
		json_object_put(o);
	}
	free(line);
	fclose(f);
	return 0;
}

int eventlog_foreach(struct eventlog *el, uint64_t after, eventlog_each_fn fn, void *ctx)
{
	int start = (el->head - el->n + el->cap) % el->cap;

	for (int i = 0; i < el->n; i++) {
		struct mem_event *m = &el->ring[(start + i) % el->cap];
		int r;

		if (m->seq <= after)
			continue;
		r = fn(ctx, m->line, m->uid, m->seq);
		if (r)
			return r;
	}
	return 0;
}

uint64_t eventlog_count(const struct eventlog *el)
{
	return el->seq;
}

uint64_t eventlog_write_errors(const struct eventlog *el)
{
	return el->write_errors;
}
