/*
 * The client's end of the control protocol (user/ctl_proto.h): connect to ftbpfd's Unix socket,
 * send one request, read the JSON lines that answer it. Used by ftbpf and ftbpf-top.
 */
#ifndef FTBPF_CTL_CLIENT_H
#define FTBPF_CTL_CLIENT_H

#include <json-c/json.h>
#include <stdint.h>

struct ctl_conn;

/*
 * Connect to the agent at path. timeout_ms (> 0) bounds every later read and write; 0 waits
 * forever. Returns 0 with *ret_conn (owned by the caller until ctl_conn_close), or -errno
 * (-ENOENT / -ECONNREFUSED: no agent listens; -ENAMETOOLONG).
 */
int ctl_conn_open(const char *path, int timeout_ms, struct ctl_conn **ret_conn);
void ctl_conn_close(struct ctl_conn *c); /* accepts NULL */

/* Send req (a JSON object; "v" is added) as one line. Returns 0 or -errno. */
int ctl_conn_send(struct ctl_conn *c, struct json_object *req);

/*
 * Next reply line as a parsed object (*ret_obj owned by the caller). Returns 0, -EPIPE at
 * end of stream, -ETIMEDOUT past the timeout, -E2BIG for a line over 1 MiB, other -errno.
 * Lines that are not JSON are skipped.
 */
int ctl_conn_read(struct ctl_conn *c, struct json_object **ret_obj);

/* One request, one reply: connect, send, read, close. */
int ctl_call(const char *path, struct json_object *req, int timeout_ms,
	     struct json_object **ret_obj);

/* Field getters: absent or null fields give NULL / def / 0. */
const char *ctl_get_str(struct json_object *o, const char *key);
/* The string, or def when absent or null. */
const char *ctl_get_str_or(struct json_object *o, const char *key, const char *def);
double ctl_get_dbl(struct json_object *o, const char *key, double def);
int64_t ctl_get_int(struct json_object *o, const char *key, int64_t def);
int ctl_get_bool(struct json_object *o, const char *key);

#endif
