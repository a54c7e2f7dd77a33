/* Events into the journal: see journal.h. */
#include "os/journal.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

/* "FIELD=value" of the event's key into buf and iv, when the event has the key. */
static int field(struct iovec *iv, char *buf, size_t len, const char *name, struct json_object *ev,
		 const char *key)
{
	struct json_object *v;
	const char *s;

	if (!json_object_object_get_ex(ev, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	s = json_object_get_string(v);
	snprintf(buf, len, "%s=%s", name, s ? s : "");
	*iv = (struct iovec){buf, strlen(buf)};
	return 1;
}

int journal_event(int prio, const char *message, const char *json, struct json_object *ev)
{
	static const struct {
		const char *name, *key;
	} keys[] = {{"FTBPF_EVENT", "type"}, {"FTBPF_JOB", "job"}, {"FTBPF_RANK", "rank"},
		    {"FTBPF_PID", "pid"},    {"FTBPF_UID", "uid"}, {"FTBPF_SEQ", "seq"}};
	char kv[6][320], msg[512], p[16];
	struct iovec iv[10];
	size_t jl = strlen(json) + sizeof("FTBPF_EVENT_JSON=");
	char *js = malloc(jl);
	int n = 0, r;

	if (!js)
		return -ENOMEM;
	snprintf(msg, sizeof(msg), "MESSAGE=%s", message);
	iv[n++] = (struct iovec){msg, strlen(msg)};
	snprintf(p, sizeof(p), "PRIORITY=%d", prio);
	iv[n++] = (struct iovec){p, strlen(p)};
	iv[n++] = (struct iovec){(void *)"SYSLOG_IDENTIFIER=ftbpfd", 24};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		n += field(&iv[n], kv[i], sizeof(kv[i]), keys[i].name, ev, keys[i].key);
	snprintf(js, jl, "FTBPF_EVENT_JSON=%s", json);
	iv[n++] = (struct iovec){js, jl - 1};
	r = sd_journal_sendv(iv, n);
	free(js);
	return r < 0 ? r : 0;
}
