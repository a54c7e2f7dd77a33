/*
 * etcd v3 JSON-gateway replies, parsed defensively (no transport here: os/etcdv3.c sends the
 * requests). Every field is checked for its type before it is used; base64 keys and values
 * must decode to text without NUL bytes and within TEXT_MAX; a reply that is not what etcd
 * sends is -EPROTO with what was wrong in *ret_what (a static string). Fuzzed
 * (tests/fuzz/fuzz_etcd.c).
 */
#ifndef FTBPF_ETCD_REPLY_H
#define FTBPF_ETCD_REPLY_H

#include <stddef.h>
#include <stdint.h>

struct json_object;

#define ETCD_TEXT_MAX (1u << 20) /* a key or a value */

typedef int (*etcd_reply_kv_fn)(void *ctx, const char *key, const char *value);
typedef int (*etcd_reply_event_fn)(void *ctx, int put, const char *key, const char *value,
				   int64_t rev);

/* Base64 of text (the caller frees), NULL on ENOMEM. */
char *etcd_reply_b64(const char *s);
/* /v3/kv/range: fn for every key and value; the revision in *ret_rev, whether more keys
 * follow (a limit was given) in *ret_more; entries whose key or value is not text are left out
 * and counted in *ret_skipped. 0, -EPROTO, or what fn returned. */
int etcd_reply_range(struct json_object *o, etcd_reply_kv_fn fn, void *ctx, int64_t *ret_rev,
		     int *ret_more, size_t *ret_skipped, const char **ret_what);
/* /v3/kv/range of the newest key under a prefix (limit 1, sorted by mod_revision descending,
 * keys only): its mod_revision in *ret_mod (0: the prefix is empty), the store's revision in
 * *ret_rev. 0 or -EPROTO (a mod_revision past the store's own revision is one). */
int etcd_reply_newest(struct json_object *o, int64_t *ret_mod, int64_t *ret_rev,
		      const char **ret_what);
/* /v3/kv/txn of a create-only put: 1 created; 0 lost, with the value that stands in
 * *ret_existing (the caller frees); or -EPROTO. */
int etcd_reply_create(struct json_object *o, char **ret_existing, const char **ret_what);
/* /v3/kv/put: 0 or -EPROTO. */
int etcd_reply_put(struct json_object *o, const char **ret_what);
/* /v3/lease/grant: 0 and the lease's id, or -EPROTO. */
int etcd_reply_lease_grant(struct json_object *o, int64_t *ret_id, const char **ret_what);
/* /v3/lease/keepalive: 0, -ENOENT when the lease expired, or -EPROTO. */
int etcd_reply_keepalive(struct json_object *o, const char **ret_what);
/* /v3/lease/timetolive: 0 and the seconds left (-1: expired, or never was), or -EPROTO. */
int etcd_reply_time_to_live(struct json_object *o, int64_t *ret_s, const char **ret_what);
/* /v3/auth/authenticate: 0 and the token (printable, < len bytes) in out, or -EPROTO. */
int etcd_reply_auth(struct json_object *o, char *out, size_t len, const char **ret_what);
/* One line of a /v3/watch stream: fn for every event (events whose key or value is not text
 * are left out, counted in *ret_skipped). 0, -ESTALE when the watch was canceled (compacted,
 * refused: read everything again), -EPROTO, or what fn returned. */
int etcd_reply_watch_line(const char *line, etcd_reply_event_fn fn, void *ctx, size_t *ret_skipped,
			  const char **ret_what);

#endif
