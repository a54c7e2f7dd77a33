/* Parser of FileTimerClient request lines: size, JSON object, version, then typed fields. */
#include "proto/fifo_proto.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

int fifo_parse_line(const char *line, size_t len, struct fifo_request *ret, char *err,
		    size_t errlen)
{
	struct fifo_request r = {};
	struct json_tokener *tok;
	struct json_object *o = NULL, *v;
	int rc = -EINVAL;
	int64_t x;

	if (len > FIFO_MAX_LINE) {
		snprintf(err, errlen, "request longer than %d bytes", FIFO_MAX_LINE);
		return -E2BIG;
	}
	if (memchr(line, 0, len)) {
		snprintf(err, errlen, "NUL byte in request");
		return -EINVAL;
	}
	tok = json_tokener_new_ex(4);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	o = json_tokener_parse_ex(tok, line, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    tok->char_offset != (int)len || !json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	if (!json_object_object_get_ex(o, "version", &v) ||
	    !json_object_is_type(v, json_type_int)) {
		snprintf(err, errlen, "missing integer 'version'");
		goto out;
	}
	if (json_object_get_int64(v) != 1) {
		snprintf(err, errlen, "version %lld not supported",
			 (long long)json_object_get_int64(v));
		rc = -EPROTO;
		goto out;
	}
	if (!json_object_object_get_ex(o, "pid", &v) || !json_object_is_type(v, json_type_int) ||
	    (x = json_object_get_int64(v)) <= 0 || x > 0x3fffffff) {
		snprintf(err, errlen, "'pid' must be a positive integer");
		goto out;
	}
	r.pid = (int)x;
	if (!json_object_object_get_ex(o, "scope_id", &v) ||
	    !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0 ||
	    json_object_get_string_len(v) >= TIMER_SCOPE_LEN) {
		snprintf(err, errlen, "'scope_id' must be a string of 1 to %d bytes",
			 TIMER_SCOPE_LEN - 1);
		goto out;
	}
	memcpy(r.scope, json_object_get_string(v), json_object_get_string_len(v) + 1);
	if (!json_object_object_get_ex(o, "expiration_time", &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) ||
	    !isfinite(json_object_get_double(v))) {
		snprintf(err, errlen, "'expiration_time' must be a number");
		goto out;
	}
	r.expiration_time = json_object_get_double(v);
	r.release = r.expiration_time < 0;
	r.sig = SIGKILL;
	if (json_object_object_get_ex(o, "signal", &v)) {
		if (!json_object_is_type(v, json_type_int) || (x = json_object_get_int64(v)) > 64) {
			snprintf(err, errlen, "'signal' must be a signal number");
			goto out;
		}
		r.sig = x > 0 ? (int)x : 0; /* torch: zero or negative expires without a kill */
	}
	*ret = r;
	rc = 0;
out:
	json_object_put(o);
	json_tokener_free(tok);
	return rc;
}
