/* One short line per event: see evline.h. */
#include "lib/evline.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct out {
	char *buf;
	size_t len, n; /* n: bytes written (may pass len: cut) */
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (o->n + 1 >= o->len) {
		o->n = o->len; /* full: the caller marks the cut */
		return;
	}
	va_start(ap, fmt);
	r = vsnprintf(o->buf + o->n, o->len - o->n, fmt, ap);
	va_end(ap);
	o->n += r > 0 ? (size_t)r : 0;
}

static struct json_object *get(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* A field's text, NULL when absent or null. */
static const char *text(struct json_object *o, const char *k)
{
	struct json_object *v = get(o, k);

	return v && !json_object_is_type(v, json_type_null) ? json_object_get_string(v) : NULL;
}

static const struct {
	const char *type;
	int prio;
} prios[] = {
    {"hang", EVLINE_WARNING},
    {"job_failed", EVLINE_WARNING},
    {"hard_timeout", EVLINE_WARNING},
    {"oom_victim", EVLINE_WARNING},
    {"fenced", EVLINE_WARNING},
    {"peer_dead", EVLINE_WARNING},
    {"store_rejected", EVLINE_WARNING},
    {"decision_unavailable", EVLINE_WARNING},
    {"recovered", EVLINE_NOTICE},
    {"nccl_ras", EVLINE_NOTICE},
    {"action", EVLINE_NOTICE},
    {"timer_expired", EVLINE_NOTICE},
    {"decision", EVLINE_NOTICE},
    {"straggler", EVLINE_NOTICE},
    {"straggler_recovered", EVLINE_NOTICE},
    {"job_end", EVLINE_NOTICE},
    {"peer_suspect", EVLINE_NOTICE},
    {"decision_hold", EVLINE_NOTICE},
    {"health_check_failed", EVLINE_NOTICE},
    {"child", EVLINE_DEBUG},
    {"child_exit", EVLINE_DEBUG},
    {"signal_delivered", EVLINE_DEBUG},
    {"peer_health", EVLINE_DEBUG},
};

/* The fields said after the colon, in this order, when the event has them. */
static const char *const fields[] = {
    "state",  "action",	     "signal_name", "exit_code", "sender_comm", "sender_pid",
    "scope",  "enforced_by", "kind",	    "peer",	 "reason",	"slowdown",
    "result", "how",	     "source",	    "why",	 "error",	NULL,
};

int evline_format(struct json_object *ev, char *buf, size_t len)
{
	struct out o = {buf, len < EVLINE_MAX ? len : EVLINE_MAX, 0};
	const char *type = ev ? text(ev, "type") : NULL, *v;
	struct json_object *a;
	int prio = EVLINE_INFO, first = 1;

	if (!len)
		return prio;
	buf[0] = 0;
	if (!ev || !json_object_is_type(ev, json_type_object))
		return prio;
	for (size_t i = 0; type && i < sizeof(prios) / sizeof(prios[0]); i++)
		if (!strcmp(type, prios[i].type))
			prio = prios[i].prio;
	put(&o, "%s", type ? type : "event");
	if ((v = text(ev, "job")))
		put(&o, " job %s", v);
	if ((v = text(ev, "rank")) && strcmp(v, "-1"))
		put(&o, " rank %s", v);
	if ((v = text(ev, "pid")))
		put(&o, " pid %s", v);
	if ((v = text(ev, "comm")))
		put(&o, " (%s)", v);
	/* a hang, a failure, an end: how long, and who */
	if ((a = get(ev, "no_progress_s")) && !json_object_is_type(a, json_type_null)) {
		put(&o, ": no progress for %.1fs", json_object_get_double(a));
		first = 0;
	}
	if ((a = get(ev, "culprit_ranks")) && json_object_is_type(a, json_type_array) &&
	    json_object_array_length(a)) {
		put(&o, "%s culprit rank", first ? ":" : ",");
		for (size_t i = 0; i < json_object_array_length(a) && i < 8; i++)
			put(&o, "%s%d", i ? "," : " ",
			    json_object_get_int(json_object_array_get_idx(a, i)));
		first = 0;
	}
	for (int i = 0; fields[i]; i++) {
		if (!(v = text(ev, fields[i])) || !*v)
			continue;
		if (!strcmp(fields[i], "why") || !strcmp(fields[i], "reason"))
			put(&o, "%s %s", first ? ":" : ";", v);
		else
			put(&o, "%s %s %s", first ? ":" : ",", fields[i], v);
		first = 0;
	}
	if (o.n >= o.len && o.len >= 4) /* cut: say so */
		memcpy(buf + o.len - 4, "...", 4);
	/* one line: whatever a field held */
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return prio;
}
