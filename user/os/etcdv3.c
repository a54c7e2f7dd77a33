/* A small etcd v3 JSON-gateway client: see etcdv3.h. */
#include "os/etcdv3.h"

#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/growbuf.h"
#include "proto/etcd_reply.h"

#define MAX_ENDPOINTS 8
#define REPLY_MAX     (64u << 20)

struct etcd_conn {
	CURL *curl;
	char *endpoints[MAX_ENDPOINTS]; /* owned */
	int nendpoints, cur;
	char cacert[256], cert[256], key[256];
	char user[128], password[256], token[512]; /* authentication; token "" none yet */
	struct curl_slist *hdr;			   /* owned: "Authorization: token" */
	int timeout_ms;
	char *buf; /* the reply being read (owned) */
	size_t len, cap;
	char err[160];
	char bad[160]; /* the last malformed reply's error ("" none yet) */
	struct etcd_stats st;
	/* a watch in progress */
	etcd_event_fn ev_fn;
	int (*stop)(void *ctx);
	void *ev_ctx;
	int ev_err;
};

static size_t on_data(char *p, size_t size, size_t nmemb, void *ctx);

struct etcd_conn *etcd_conn_new(const struct etcd_opts *o, char *err, size_t errlen)
{
	struct etcd_conn *c = calloc(1, sizeof(*c));
	char *list, *save = NULL;

	if (!c || sodium_init() < 0 || !(c->curl = curl_easy_init())) {
		snprintf(err, errlen, "out of memory (or libsodium/libcurl failed to start)");
		free(c);
		return NULL;
	}
	list = strdup(o->endpoints ? o->endpoints : "");
	for (char *t = list ? strtok_r(list, ",", &save) : NULL; t && c->nendpoints < MAX_ENDPOINTS;
	     t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		if (strncmp(t, "http://", 7) && strncmp(t, "https://", 8)) {
			snprintf(err, errlen,
				 "etcd endpoint '%s' is not http://HOST:PORT or https://...", t);
			free(list);
			etcd_conn_free(c);
			return NULL;
		}
		c->endpoints[c->nendpoints] = strdup(t);
		if (c->endpoints[c->nendpoints])
			c->nendpoints++;
	}
	free(list);
	if (!c->nendpoints) {
		snprintf(err, errlen, "no etcd endpoint");
		etcd_conn_free(c);
		return NULL;
	}
	snprintf(c->cacert, sizeof(c->cacert), "%s", o->cacert ? o->cacert : "");
	snprintf(c->cert, sizeof(c->cert), "%s", o->cert ? o->cert : "");
	snprintf(c->key, sizeof(c->key), "%s", o->key ? o->key : "");
	snprintf(c->user, sizeof(c->user), "%s", o->user ? o->user : "");
	snprintf(c->password, sizeof(c->password), "%s", o->password ? o->password : "");
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 2000;
	return c;
}

void etcd_conn_free(struct etcd_conn *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nendpoints; i++)
		free(c->endpoints[i]);
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->hdr);
	sodium_memzero(c->password, sizeof(c->password));
	sodium_memzero(c->token, sizeof(c->token));
	free(c->buf);
	free(c);
}

const char *etcd_conn_error(const struct etcd_conn *c)
{
	return c->err;
}

int etcd_conn_take_malformed(struct etcd_conn *c, char *buf, size_t len)
{
	if (!*c->bad)
		return 0;
	snprintf(buf, len, "%s", c->bad);
	c->bad[0] = 0;
	return 1;
}

void etcd_conn_stats(const struct etcd_conn *c, struct etcd_stats *ret)
{
	/* each connection's thread counts as it goes: read without tearing */
	ret->requests = __atomic_load_n(&c->st.requests, __ATOMIC_RELAXED);
	ret->failures = __atomic_load_n(&c->st.failures, __ATOMIC_RELAXED);
	ret->bad_replies = __atomic_load_n(&c->st.bad_replies, __ATOMIC_RELAXED);
	ret->skipped = __atomic_load_n(&c->st.skipped, __ATOMIC_RELAXED);
}

/* ---- encoding ---- */
#define b64 etcd_reply_b64

/* The end of the range of keys starting with prefix: the prefix with its last byte + 1. */
static char *prefix_end(const char *prefix)
{
	char *e = strdup(prefix);
	size_t n = e ? strlen(e) : 0;

	while (n > 0 && (unsigned char)e[n - 1] == 0xff)
		e[--n] = 0;
	if (n > 0)
		e[n - 1]++;
	return e;
}

/* ---- requests ---- */
static size_t on_data(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct etcd_conn *c = ctx;
	size_t n = size * nmemb;

	if (c->len + n + 1 > REPLY_MAX)
		return 0; /* aborts the transfer */
	if (growbuf_reserve(&c->buf, &c->cap, c->len + n + 1) < 0)
		return 0; /* aborts the transfer */
	memcpy(c->buf + c->len, p, n);
	c->len += n;
	c->buf[c->len] = 0;
	return n;
}

static void setup(struct etcd_conn *c, const char *path, const char *body, char *url, size_t ulen)
{
	curl_easy_reset(c->curl);
	snprintf(url, ulen, "%s%s", c->endpoints[c->cur], path);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (*c->cacert)
		curl_easy_setopt(c->curl, CURLOPT_CAINFO, c->cacert);
	if (*c->cert)
		curl_easy_setopt(c->curl, CURLOPT_SSLCERT, c->cert);
	if (*c->key)
		curl_easy_setopt(c->curl, CURLOPT_SSLKEY, c->key);
	curl_slist_free_all(c->hdr);
	c->hdr = NULL;
	if (*c->token) {
		char h[sizeof(c->token) + 32];

		snprintf(h, sizeof(h), "Authorization: %s", c->token);
		c->hdr = curl_slist_append(NULL, h);
		sodium_memzero(h, sizeof(h));
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->hdr);
	}
	c->len = 0;
	c->err[0] = 0;
}

/* A transport failure: the next call tries the next endpoint. */
static int failed(struct etcd_conn *c, const char *what)
{
	snprintf(c->err, sizeof(c->err), "%s: %s", c->endpoints[c->cur], what);
	c->cur = (c->cur + 1) % c->nendpoints;
	__atomic_fetch_add(&c->st.failures, 1, __ATOMIC_RELAXED);
	return -EIO;
}

static int malformed(struct etcd_conn *c, const char *what)
{
	snprintf(c->err, sizeof(c->err), "%s: malformed reply (%s)", c->endpoints[c->cur], what);
	memcpy(c->bad, c->err, sizeof(c->bad)); /* kept when a later error replaces err */
	__atomic_fetch_add(&c->st.bad_replies, 1, __ATOMIC_RELAXED);
	return -EPROTO;
}

/* Is this error etcd's way of saying our token is missing or expired? */
static int auth_error(const char *m)
{
	return m && (strstr(m, "invalid auth token") || strstr(m, "user name is empty") ||
		     strstr(m, "auth token is not provided"));
}

static int call_once(struct etcd_conn *c, const char *path, const char *body,
		     struct json_object **ret);

/* A token for our user (etcd's simple tokens expire when unused): 0 or -errno. */
static int authenticate(struct etcd_conn *c)
{
	struct json_object *o = NULL, *name = json_object_new_string(c->user),
			   *pw = json_object_new_string(c->password),
			   *req = json_object_new_object();
	const char *what = "";
	char *body;
	int r = -ENOMEM;

	c->token[0] = 0;
	json_object_object_add(req, "name", name);
	json_object_object_add(req, "password", pw);
	body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	json_object_put(req);
	if (body) {
		r = call_once(c, "/v3/auth/authenticate", body, &o);
		sodium_memzero(body, strlen(body));
		free(body);
	}
	if (r == 0) {
		r = etcd_reply_auth(o, c->token, sizeof(c->token), &what);
		if (r == -EPROTO)
			r = malformed(c, what);
	}
	json_object_put(o);
	return r;
}

/* POST body to path, authenticated when we have a user; the reply as a JSON object in *ret
 * (the caller's). An expired token is renewed once. */
static int call(struct etcd_conn *c, const char *path, const char *body, struct json_object **ret)
{
	int r;

	if (*c->user && !*c->token && (r = authenticate(c)) < 0)
		return r;
	r = call_once(c, path, body, ret);
	if (r == -EACCES && *c->user) {
		if ((r = authenticate(c)) < 0)
			return r;
		r = call_once(c, path, body, ret);
	}
	return r == -EACCES ? -EIO : r;
}

static int call_once(struct etcd_conn *c, const char *path, const char *body,
		     struct json_object **ret)
{
	char url[512];
	long code = 0;
	CURLcode rc;
	struct json_object *o, *e;
	int r;

	setup(c, path, body, url, sizeof(url));
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	__atomic_fetch_add(&c->st.requests, 1, __ATOMIC_RELAXED);
	rc = curl_easy_perform(c->curl);
	if (rc != CURLE_OK)
		return failed(c, curl_easy_strerror(rc));
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	o = c->len ? json_tokener_parse(c->buf) : NULL;
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return malformed(c, code == 200 ? "not a JSON object" : "an HTTP error");
	}
	if (code != 200 || json_object_object_get_ex(o, "error", &e)) {
		const char *m = json_object_object_get_ex(o, "error", &e)
				    ? json_object_get_string(e)
				    : "HTTP error";

		snprintf(c->err, sizeof(c->err), "%s: %s", c->endpoints[c->cur], m ? m : "error");
		__atomic_fetch_add(&c->st.failures, 1, __ATOMIC_RELAXED);
		r = auth_error(m) ? -EACCES : -EIO;
		if (r == -EACCES)
			c->token[0] = 0;
		json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

/* A reply's parse result: -EPROTO counted as a malformed reply. */
static int parsed(struct etcd_conn *c, int r, const char *what)
{
	return r == -EPROTO ? malformed(c, what) : r;
}

/* fn's context for a page of a range: the last key seen (where the next page starts). */
struct page {
	etcd_kv_fn fn;
	void *ctx;
	char *last;
};

static int page_kv(void *ctx, const char *key, const char *value)
{
	struct page *p = ctx;

	free(p->last);
	if (!(p->last = strdup(key)))
		return -ENOMEM;
	return p->fn(p->ctx, key, value);
}

/* Pages of RANGE_PAGE keys, all read at the first page's revision (one snapshot): a prefix
 * that grew large is read in bounded replies, never in one over REPLY_MAX. */
#define RANGE_PAGE 500
int etcd_range(struct etcd_conn *c, const char *prefix, etcd_kv_fn fn, void *ctx, int64_t *ret_rev)
{
	char *end = prefix_end(prefix), *e = end ? b64(end) : NULL, *from = strdup(prefix);
	struct page pg = {fn, ctx, NULL};
	int64_t rev = 0;
	int more = 1, r = e && from ? 0 : -ENOMEM;

	while (r == 0 && more) {
		char *k = b64(from), *body = NULL, revs[48] = "";
		struct json_object *o = NULL;
		const char *what = "";
		size_t skipped = 0;

		if (rev > 0)
			snprintf(revs, sizeof(revs), ",\"revision\":\"%lld\"", (long long)rev);
		r = -ENOMEM;
		if (k && asprintf(&body, "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%d\"%s}",
				  k, e, RANGE_PAGE, revs) >= 0) {
			r = call(c, "/v3/kv/range", body, &o);
			free(body);
		}
		free(k);
		if (r < 0)
			break;
		r = parsed(c,
			   etcd_reply_range(o, page_kv, &pg, rev > 0 ? &(int64_t){0} : &rev, &more,
					    &skipped, &what),
			   what);
		json_object_put(o);
		__atomic_fetch_add(&c->st.skipped, skipped, __ATOMIC_RELAXED);
		if (r == 0 && more) { /* the next page starts just after the last key */
			if (!pg.last) {
				r = malformed(c, "range: more without keys");
				break;
			}
			free(from);
			if (asprintf(&from, "%s\x01", pg.last) < 0) {
				from = NULL;
				r = -ENOMEM;
			}
		}
	}
	*ret_rev = rev;
	free(pg.last);
	free(from);
	free(end);
	free(e);
	return r;
}

int etcd_newest_mod(struct etcd_conn *c, const char *prefix, int64_t *ret_mod)
{
	char *end = prefix_end(prefix), *e = end ? b64(end) : NULL, *k = b64(prefix), *body = NULL;
	struct json_object *o = NULL;
	const char *what = "";
	int64_t rev = 0;
	int r = -ENOMEM;

	*ret_mod = 0;
	if (k && e &&
	    asprintf(&body,
		     "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"1\",\"keys_only\":true,"
		     "\"sort_order\":\"DESCEND\",\"sort_target\":\"MOD\"}",
		     k, e) >= 0) {
		r = call(c, "/v3/kv/range", body, &o);
		free(body);
	}
	free(k);
	free(e);
	free(end);
	if (r < 0)
		return r;
	r = parsed(c, etcd_reply_newest(o, ret_mod, &rev, &what), what);
	json_object_put(o);
	return r;
}

int etcd_create(struct etcd_conn *c, const char *key, const char *value, int64_t lease,
		char **ret_existing)
{
	char *k = b64(key), *v = b64(value), *body = NULL, lease_s[40] = "";
	struct json_object *o = NULL;
	const char *what = "";
	int r = -ENOMEM;

	*ret_existing = NULL;
	if (lease > 0)
		snprintf(lease_s, sizeof(lease_s), ",\"lease\":\"%lld\"", (long long)lease);
	if (k && v &&
	    asprintf(&body,
		     "{\"compare\":[{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"CREATE\","
		     "\"create_revision\":\"0\"}],\"success\":[{\"request_put\":{\"key\":\"%s\","
		     "\"value\":\"%s\"%s}}],\"failure\":[{\"request_range\":{\"key\":\"%s\"}}]}",
		     k, k, v, lease_s, k) >= 0) {
		r = call(c, "/v3/kv/txn", body, &o);
		free(body);
	}
	free(k);
	free(v);
	if (r < 0)
		return r;
	r = parsed(c, etcd_reply_create(o, ret_existing, &what), what);
	json_object_put(o);
	return r;
}

int etcd_put(struct etcd_conn *c, const char *key, const char *value, int64_t lease)
{
	char *k = b64(key), *v = b64(value), *body = NULL, lease_s[40] = "";
	struct json_object *o = NULL;
	const char *what = "";
	int r = -ENOMEM;

	if (lease > 0)
		snprintf(lease_s, sizeof(lease_s), ",\"lease\":\"%lld\"", (long long)lease);
	if (k && v && asprintf(&body, "{\"key\":\"%s\",\"value\":\"%s\"%s}", k, v, lease_s) >= 0) {
		r = call(c, "/v3/kv/put", body, &o);
		free(body);
	}
	free(k);
	free(v);
	if (r == 0)
		r = parsed(c, etcd_reply_put(o, &what), what);
	json_object_put(o);
	return r;
}

int etcd_delete_prefix(struct etcd_conn *c, const char *prefix)
{
	char *k = b64(prefix), *end = prefix_end(prefix), *e = end ? b64(end) : NULL, *body = NULL;
	struct json_object *o = NULL;
	const char *what = "";
	int r = -ENOMEM;

	if (k && e && asprintf(&body, "{\"key\":\"%s\",\"range_end\":\"%s\"}", k, e) >= 0) {
		r = call(c, "/v3/kv/deleterange", body, &o);
		free(body);
	}
	free(k);
	free(end);
	free(e);
	if (r == 0) /* a header with its revision, as a put's */
		r = parsed(c, etcd_reply_put(o, &what), what);
	json_object_put(o);
	return r;
}

int etcd_lease_grant(struct etcd_conn *c, int ttl_s, int64_t *ret_id)
{
	char body[64];
	struct json_object *o = NULL;
	const char *what = "";
	int r;

	snprintf(body, sizeof(body), "{\"TTL\":\"%d\"}", ttl_s);
	r = call(c, "/v3/lease/grant", body, &o);
	if (r < 0)
		return r;
	r = parsed(c, etcd_reply_lease_grant(o, ret_id, &what), what);
	json_object_put(o);
	return r;
}

int etcd_lease_keepalive(struct etcd_conn *c, int64_t id)
{
	char body[64];
	struct json_object *o = NULL;
	const char *what = "";
	int r;

	snprintf(body, sizeof(body), "{\"ID\":\"%lld\"}", (long long)id);
	r = call(c, "/v3/lease/keepalive", body, &o);
	if (r < 0)
		return r;
	r = parsed(c, etcd_reply_keepalive(o, &what), what);
	json_object_put(o);
	return r;
}

int etcd_lease_time_to_live(struct etcd_conn *c, int64_t id, int64_t *ret_s)
{
	char body[64];
	struct json_object *o = NULL;
	const char *what = "";
	int r;

	snprintf(body, sizeof(body), "{\"ID\":\"%lld\"}", (long long)id);
	r = call(c, "/v3/lease/timetolive", body, &o);
	if (r < 0)
		return r;
	r = parsed(c, etcd_reply_time_to_live(o, ret_s, &what), what);
	json_object_put(o);
	return r;
}

/* ---- watch ---- */
static int watch_line(struct etcd_conn *c, const char *line)
{
	const char *what = "";

	size_t skipped = 0;
	int r = parsed(c, etcd_reply_watch_line(line, c->ev_fn, c->ev_ctx, &skipped, &what), what);

	__atomic_fetch_add(&c->st.skipped, skipped, __ATOMIC_RELAXED);
	return r;
}

static size_t on_watch_data(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct etcd_conn *c = ctx;
	size_t n = size * nmemb;
	char *nl;

	if (on_data(p, size, nmemb, ctx) != n)
		return 0;
	while ((nl = memchr(c->buf, '\n', c->len))) {
		*nl = 0;
		c->ev_err = watch_line(c, c->buf);
		c->len -= (size_t)(nl + 1 - c->buf);
		memmove(c->buf, nl + 1, c->len + 1);
		if (c->ev_err)
			return 0;
	}
	return n;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t cc, curl_off_t d)
{
	struct etcd_conn *c = ctx;

	(void)a, (void)b, (void)cc, (void)d;
	return c->stop(c->ev_ctx) ? 1 : 0;
}

int etcd_watch(struct etcd_conn *c, const char *prefix, int64_t start_rev, etcd_event_fn fn,
	       int (*stop)(void *ctx), void *ctx, int idle_s)
{
	char *k = b64(prefix), *end = prefix_end(prefix), *e = end ? b64(end) : NULL, *body = NULL;
	char url[512];
	CURLcode rc;
	int r = 0;

	if (!k || !e ||
	    asprintf(&body,
		     "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\",\"start_revision\":"
		     "\"%lld\"}}",
		     k, e, (long long)start_rev) < 0) {
		free(k);
		free(end);
		free(e);
		return -ENOMEM;
	}
	free(k);
	free(end);
	free(e);
	if (*c->user && !*c->token && (r = authenticate(c)) < 0) {
		free(body);
		return r;
	}
	setup(c, "/v3/watch", body, url, sizeof(url));
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_watch_data);
	curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, (long)(idle_s > 0 ? idle_s : 3));
	c->ev_fn = fn;
	c->stop = stop;
	c->ev_ctx = ctx;
	c->ev_err = 0;
	__atomic_fetch_add(&c->st.requests, 1, __ATOMIC_RELAXED);
	rc = curl_easy_perform(c->curl);
	free(body);
	if (c->ev_err)
		r = c->ev_err;
	else if (rc == CURLE_ABORTED_BY_CALLBACK || rc == CURLE_OPERATION_TIMEDOUT)
		r = 0; /* stopped, or silent for idle_s */
	else if (rc != CURLE_OK)
		r = failed(c, curl_easy_strerror(rc));
	return r;
}
