/*
 * A small etcd v3 client over its JSON gateway (/v3/kv/range|put|txn, /v3/lease/grant|keepalive,
 * /v3/watch), with libcurl and json-c: the operations the agreement store needs and nothing
 * more. Synchronous, each call bounded by the connection's timeout; one connection is used by
 * one thread at a time. Keys and values are text without NUL bytes. Every reply is checked;
 * one that is not what etcd sends is -EPROTO (counted).
 */
#ifndef FTBPF_ETCDV3_H
#define FTBPF_ETCDV3_H

#include <stddef.h>
#include <stdint.h>

struct etcd_conn;

struct etcd_opts {
	const char *endpoints; /* "http://10.0.0.1:2379,https://..." tried in turn */
	const char *cacert;    /* TLS: CA file, client certificate and key ("" none) */
	const char *cert;
	const char *key;
	const char *user;     /* etcd authentication (RBAC): user name ("" none) and password */
	const char *password; /* (the gateway ignores client certificates' names) */
	int timeout_ms;	      /* per request */
};

struct etcd_stats {
	uint64_t requests, failures, bad_replies;
	uint64_t skipped; /* keys or values that were not text (someone else's), left out */
};

/* NULL with a message in err. */
struct etcd_conn *etcd_conn_new(const struct etcd_opts *o, char *err, size_t errlen);
void etcd_conn_free(struct etcd_conn *c);
/* Why the last call failed ("" none). */
const char *etcd_conn_error(const struct etcd_conn *c);
/* The last malformed reply's error into buf, forgotten then: 1, or 0 when there was none since
 * the last take (kept while later calls fail otherwise). */
int etcd_conn_take_malformed(struct etcd_conn *c, char *buf, size_t len);
void etcd_conn_stats(const struct etcd_conn *c, struct etcd_stats *ret);

typedef int (*etcd_kv_fn)(void *ctx, const char *key, const char *value);

/* Every key under prefix, read in pages at one revision (returned in *ret_rev). 0 or -errno. */
int etcd_range(struct etcd_conn *c, const char *prefix, etcd_kv_fn fn, void *ctx, int64_t *ret_rev);
/* The mod_revision of the newest key under prefix (0: none), by one small linearizable read
 * (limit 1, keys only, sorted by mod_revision): a watch of the prefix that has not delivered
 * it is behind. 0 or -errno. */
int etcd_newest_mod(struct etcd_conn *c, const char *prefix, int64_t *ret_mod);
/* Create key only if it does not exist (a transaction: first writer wins). 1 when this call
 * created it; 0 when it existed (*ret_existing: its value, the caller frees); or -errno. */
int etcd_create(struct etcd_conn *c, const char *key, const char *value, int64_t lease,
		char **ret_existing);
/* Put (lease 0: none). 0 or -errno. */
int etcd_put(struct etcd_conn *c, const char *key, const char *value, int64_t lease);
/* A lease of ttl_s seconds. 0 or -errno. */
/* Delete every key under prefix. 0 or -errno. */
int etcd_delete_prefix(struct etcd_conn *c, const char *prefix);
int etcd_lease_grant(struct etcd_conn *c, int ttl_s, int64_t *ret_id);
/* Renew a lease: 0, -ENOENT when it expired, or -errno. */
int etcd_lease_keepalive(struct etcd_conn *c, int64_t id);
/* The seconds a lease has left (etcd rounds down): 0 and *ret_s, with -1 when it expired or
 * never was; or -errno. */
int etcd_lease_time_to_live(struct etcd_conn *c, int64_t id, int64_t *ret_s);

/* A watch event: put (1) or delete (0) of key at revision rev. */
typedef int (*etcd_event_fn)(void *ctx, int put, const char *key, const char *value, int64_t rev);
/*
 * Watch prefix from revision start_rev, calling fn for every event, until stop(ctx) says so,
 * nothing arrived for idle_s seconds (a silent stream is taken for a lost connection), or an
 * error. Returns 0 (stopped or idle) or -errno.
 */
int etcd_watch(struct etcd_conn *c, const char *prefix, int64_t start_rev, etcd_event_fn fn,
	       int (*stop)(void *ctx), void *ctx, int idle_s);

#endif
