/* etcd v3 JSON-gateway replies: see etcd_reply.h. */
#include "proto/etcd_reply.h"

#include <errno.h>
#include <json-c/json.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

char *etcd_reply_b64(const char *s)
{
	size_t n = strlen(s), m = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
	char *out = malloc(m);

	if (out)
		sodium_bin2base64(out, m, (const unsigned char *)s, n,
				  sodium_base64_VARIANT_ORIGINAL);
	return out;
}

/* Decoded text of a base64 field, NULL when malformed, too long or not text; "" when absent
 * (etcd omits empty values). *malformed is set when the field is not base64 at all (no etcd
 * sends that: the reply lies), left alone when it is merely too long or not text. */
static char *unb64m(struct json_object *o, const char *field, int *malformed)
{
	struct json_object *x;
	const char *s;
	size_t n, out_len = 0;
	char *out;

	if (!json_object_is_type(o, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(o, field, &x))
		return strdup("");
	if (!json_object_is_type(x, json_type_string) || !(s = json_object_get_string(x))) {
		*malformed = 1;
		return NULL;
	}
	n = strlen(s);
	if (n > ETCD_TEXT_MAX * 4 / 3 + 4 || !(out = malloc(n + 1)))
		return NULL;
	if (sodium_base642bin((unsigned char *)out, n, s, n, NULL, &out_len, NULL,
			      sodium_base64_VARIANT_ORIGINAL)) {
		*malformed = 1;
		free(out);
		return NULL;
	}
	if (memchr(out, 0, out_len)) {
		free(out);
		return NULL;
	}
	out[out_len] = 0;
	return out;
}

/* An int64 etcd sends as a string ("123") or a number; -1 when absent, malformed or < 0. */
static int64_t get_i64(struct json_object *o, const char *field)
{
	struct json_object *x;
	const char *s;
	char *end;
	long long v;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, field, &x))
		return -1;
	if (json_object_is_type(x, json_type_int)) {
		v = json_object_get_int64(x);
		return v < 0 ? -1 : (int64_t)v;
	}
	if (!json_object_is_type(x, json_type_string) || !(s = json_object_get_string(x)) || !*s)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	return errno || *end || v < 0 ? -1 : (int64_t)v;
}

/* A member of an object, NULL when o is not an object or has no such member. */
static struct json_object *member(struct json_object *o, const char *field)
{
	struct json_object *x = NULL;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, field, &x))
		return NULL;
	return x;
}

static int bad(const char **ret_what, const char *what)
{
	*ret_what = what;
	return -EPROTO;
}

/* A reply's header.revision (every KV reply has one), -1 when absent or malformed. */
static int64_t revision(struct json_object *o)
{
	return get_i64(member(o, "header"), "revision");
}

/* fn for every entry of a "kvs" array (absent: none). With skipped, an entry whose key or
 * value is not text (a NUL byte, over the limit: someone else's) is left out and counted
 * instead of failing the whole reply, so one bad value cannot hide every other. A field that
 * is not base64 at all fails the reply: no etcd sends it. */
static int each_kv(struct json_object *o, etcd_reply_kv_fn fn, void *ctx, size_t *skipped,
		   const char **ret_what)
{
	struct json_object *kvs = member(o, "kvs");

	if (!kvs)
		return 0;
	if (!json_object_is_type(kvs, json_type_array))
		return bad(ret_what, "kvs");
	for (size_t i = 0; i < json_object_array_length(kvs); i++) {
		struct json_object *kv = json_object_array_get_idx(kvs, i);
		int malformed = 0;
		char *k = unb64m(kv, "key", &malformed);
		char *v = k ? unb64m(kv, "value", &malformed) : NULL;
		int r;

		if (!json_object_is_type(kv, json_type_object))
			r = bad(ret_what, "a kvs entry");
		else if (v)
			r = fn(ctx, k, v);
		else if (malformed)
			r = bad(ret_what, "a key or value that is not base64");
		else if (skipped)
			r = 0, (*skipped)++;
		else
			r = bad(ret_what, "a key or value");
		free(k);
		free(v);
		if (r)
			return r;
	}
	return 0;
}

int etcd_reply_range(struct json_object *o, etcd_reply_kv_fn fn, void *ctx, int64_t *ret_rev,
		     int *ret_more, size_t *ret_skipped, const char **ret_what)
{
	struct json_object *more = member(o, "more");

	if ((*ret_rev = revision(o)) < 0)
		return bad(ret_what, "header.revision");
	*ret_more =
	    more && json_object_is_type(more, json_type_boolean) && json_object_get_boolean(more);
	return each_kv(o, fn, ctx, ret_skipped, ret_what);
}

int etcd_reply_newest(struct json_object *o, int64_t *ret_mod, int64_t *ret_rev,
		      const char **ret_what)
{
	struct json_object *kvs = member(o, "kvs"), *kv;

	*ret_mod = 0;
	if ((*ret_rev = revision(o)) < 0)
		return bad(ret_what, "header.revision");
	if (!kvs) /* an empty prefix: etcd leaves the array out */
		return 0;
	if (!json_object_is_type(kvs, json_type_array))
		return bad(ret_what, "kvs");
	if (json_object_array_length(kvs) > 1)
		return bad(ret_what, "kvs: more than the one asked for");
	if (!json_object_array_length(kvs))
		return 0;
	kv = json_object_array_get_idx(kvs, 0);
	if ((*ret_mod = get_i64(kv, "mod_revision")) < 0 || *ret_mod > *ret_rev) {
		*ret_mod = 0;
		return bad(ret_what, "mod_revision");
	}
	return 0;
}

static int keep_first(void *ctx, const char *key, const char *value)
{
	char **out = ctx;

	(void)key;
	if (!*out && !(*out = strdup(value)))
		return -ENOMEM;
	return 0;
}

int etcd_reply_create(struct json_object *o, char **ret_existing, const char **ret_what)
{
	struct json_object *ok = member(o, "succeeded"), *resps = member(o, "responses"), *rr;
	int r;

	*ret_existing = NULL;
	if (ok && json_object_is_type(ok, json_type_boolean) && json_object_get_boolean(ok))
		return 1;
	/* lost: the failure branch read the value that stands */
	if (!resps || !json_object_is_type(resps, json_type_array) ||
	    json_object_array_length(resps) != 1 ||
	    !(rr = member(json_object_array_get_idx(resps, 0), "response_range")))
		return bad(ret_what, "txn responses");
	r = each_kv(rr, keep_first, ret_existing, NULL, ret_what);
	if (r == 0 && !*ret_existing)
		r = bad(ret_what, "txn lost without a value"); /* deleted meanwhile: retry */
	if (r < 0) {
		free(*ret_existing);
		*ret_existing = NULL;
	}
	return r < 0 ? r : 0;
}

int etcd_reply_put(struct json_object *o, const char **ret_what)
{
	return revision(o) <= 0 ? bad(ret_what, "put: header.revision") : 0;
}

int etcd_reply_lease_grant(struct json_object *o, int64_t *ret_id, const char **ret_what)
{
	*ret_id = get_i64(o, "ID");
	return *ret_id > 0 ? 0 : bad(ret_what, "lease ID");
}

int etcd_reply_keepalive(struct json_object *o, const char **ret_what)
{
	/* the gateway wraps the streamed reply: {"result":{"ID":..,"TTL":..}} */
	struct json_object *res = member(o, "result");

	if (!res || !json_object_is_type(res, json_type_object))
		return bad(ret_what, "keepalive result");
	return get_i64(res, "TTL") <= 0 ? -ENOENT : 0; /* expired: TTL absent or 0 */
}

int etcd_reply_time_to_live(struct json_object *o, int64_t *ret_s, const char **ret_what)
{
	struct json_object *t;

	if (revision(o) <= 0)
		return bad(ret_what, "timetolive: header.revision");
	t = member(o, "TTL");
	if (!t) {
		*ret_s = -1; /* etcd leaves out a zero or absent TTL */
		return 0;
	}
	if (json_object_is_type(t, json_type_int) && json_object_get_int64(t) == -1) {
		*ret_s = -1;
		return 0;
	}
	if (json_object_is_type(t, json_type_string) && !strcmp(json_object_get_string(t), "-1")) {
		*ret_s = -1;
		return 0;
	}
	if ((*ret_s = get_i64(o, "TTL")) < 0)
		return bad(ret_what, "timetolive: TTL");
	return 0;
}

int etcd_reply_auth(struct json_object *o, char *out, size_t len, const char **ret_what)
{
	struct json_object *t = member(o, "token");
	const char *s;
	size_t n;

	if (!t || !json_object_is_type(t, json_type_string) || !(s = json_object_get_string(t)))
		return bad(ret_what, "auth token");
	n = strlen(s);
	if (!n || n >= len)
		return bad(ret_what, "auth token length");
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return bad(ret_what, "auth token bytes");
	memcpy(out, s, n + 1);
	return 0;
}

int etcd_reply_watch_line(const char *line, etcd_reply_event_fn fn, void *ctx, size_t *ret_skipped,
			  const char **ret_what)
{
	struct json_object *o = json_tokener_parse(line), *res = member(o, "result"), *evs, *x;
	int r = 0;

	if (!res || !json_object_is_type(res, json_type_object)) {
		json_object_put(o);
		return bad(ret_what, "watch message");
	}
	x = member(res, "canceled");
	if (x && json_object_is_type(x, json_type_boolean) && json_object_get_boolean(x)) {
		json_object_put(o);
		return -ESTALE; /* compacted, or refused: read everything again */
	}
	evs = member(res, "events");
	if (evs && !json_object_is_type(evs, json_type_array))
		r = bad(ret_what, "events");
	for (size_t i = 0; evs && r == 0 && i < json_object_array_length(evs); i++) {
		struct json_object *ev = json_object_array_get_idx(evs, i), *kv, *t;
		const char *type = "PUT"; /* etcd leaves out the default (PUT = 0) */
		char *k = NULL, *v = NULL;
		int malformed = 0;

		/* absent: PUT; present, it must be a string (null is not etcd's) */
		if (json_object_is_type(ev, json_type_object) &&
		    json_object_object_get_ex(ev, "type", &t) &&
		    (!json_object_is_type(t, json_type_string) ||
		     !(type = json_object_get_string(t)))) {
			r = bad(ret_what, "event type");
			break;
		}
		if (strcmp(type, "PUT") && strcmp(type, "DELETE")) {
			r = bad(ret_what, "event type");
			break;
		}
		kv = member(ev, "kv");
		if (!kv || !json_object_is_type(kv, json_type_object))
			r = bad(ret_what, "event kv");
		else if ((!(k = unb64m(kv, "key", &malformed)) ||
			  !(v = unb64m(kv, "value", &malformed))) &&
			 malformed)
			r = bad(ret_what, "a key or value that is not base64");
		else if (!k || !v)
			(*ret_skipped)++; /* not text: someone else's, left out */
		else
			r = fn(ctx, strcmp(type, "DELETE") != 0, k, v, get_i64(kv, "mod_revision"));
		free(k);
		free(v);
	}
	json_object_put(o);
	return r;
}
