/*
 * The agreement store: where the agents' decisions live (lib/decisions.h names the keys).
 *   local  one node: an in-memory map saved atomically in state_dir/decisions.json (fsync'd),
 *          so decisions survive an agent restart. Claims are settled at once.
 *   etcd   several nodes: etcd v3 (os/etcdv3.c). Two threads of its own keep a mirror of the
 *          keys under the prefix (a watch, and a full read when the watch is lost) and carry
 *          out claims and puts (retried until they succeed), with this agent's lease for the
 *          keys that must vanish with it. A claim's outcome shows in the mirror when etcd has
 *          answered: the value that stands, ours or an earlier claimer's.
 * The agent reads the mirror from its own thread (store_get, store_list); changes made by
 * other nodes wake its event loop and call changed().
 */
#ifndef FTBPF_STORE_H
#define FTBPF_STORE_H

#include <stddef.h>
#include <stdint.h>

struct loop;
struct json_object;
struct store;

struct store_opts {
	const char *state_dir; /* local */
	const char *endpoints; /* etcd: "" for the local store */
	const char *prefix;    /* etcd: key prefix, e.g. "/ftbpf/" */
	const char *cacert, *cert, *key;
	const char *user, *password; /* etcd authentication ("" none) */
	double lease_ttl_s;	     /* etcd: this agent's keys vanish this long after it does */
	/* etcd: the store is unreachable once its last answer is this old (dec_reachable_ms: no
	 * later than the decider holds the ranks); 0: from the TTL alone */
	uint64_t reachable_ms;
	const uint8_t *cluster_key; /* etcd: 32 bytes (conffile_mesh_key) that authenticate records;
				     * NULL: records are not authenticated (tests of the store) */
	/* etcd: the node keys (lib/nodekeys.h; NULL: the cluster key alone): every record is
	 * signed by this node (sk, named node) and taken only signed by the node that may write
	 * it (store_etcd.c) */
	const struct nodekeys *node_keys;
	const uint8_t *node_sk;
	const char *node;
	struct loop *loop;
	void (*changed)(void *ctx); /* the mirror changed (called on the loop's thread) */
	void *ctx;
};

/* NULL with a message in err. */
struct store *store_open(const struct store_opts *o, char *err, size_t errlen);
void store_close(struct store *s);
/* 1: shared with other nodes (etcd), 0: this node only */
int store_shared(const struct store *s);
/* Is the store reachable now? *last_ok_ms: CLOCK_MONOTONIC ms of the last answer (local: now;
 * 0: none since it was opened). */
int store_reachable(struct store *s, uint64_t *last_ok_ms);
/* When the store was opened (CLOCK_MONOTONIC ms): a store that never answered is silent since. */
uint64_t store_opened_ms(const struct store *s);
/* Create key with value unless it exists (first claimer wins). 0 or -errno (queued for etcd). */
int store_claim(struct store *s, const char *key, const char *value);
/* Put key (leased: it vanishes with this agent). 0 or -errno. */
int store_put(struct store *s, const char *key, const char *value, int leased);
/* Delete every key under prefix (an operator's reset). 0 or -errno (queued for etcd). */
int store_delete_prefix(struct store *s, const char *prefix);
/* A copy of the value at key (the caller frees), NULL when absent. */
char *store_get(struct store *s, const char *key);
/* fn for every key under prefix, in key order, on a snapshot (fn may call the store). */
int store_list(struct store *s, const char *prefix,
	       int (*fn)(void *ctx, const char *key, const char *value), void *ctx);
/* This agent's lease (etcd), 0 none. */
int64_t store_lease(struct store *s);
/* The same, and when it was last granted or renewed (CLOCK_MONOTONIC ms, 0 never). */
int64_t store_lease_renewed(struct store *s, uint64_t *ret_renewed_ms);
/*
 * What is known of another agent's lease: 0 with the seconds it had left (-1: expired) and
 * when that was read (CLOCK_MONOTONIC ms); -EAGAIN when nothing recent is known (a read is queued
 * now); -ENOTSUP for the local store. Reads are made at most every 0.5 s per lease.
 */
int store_lease_left(struct store *s, int64_t lease, int64_t *ret_s, uint64_t *ret_at_ms);
/* Records refused since the last call (not written by an agent of this cluster, or moved):
 * their number, and the last one's key and why (for an event). */
uint64_t store_rejected(struct store *s, char *key, size_t klen, char *why, size_t wlen);
/* Malformed replies from the store (etcd answering garbage) since the last call: their number,
 * and what was wrong with the last one (for an event). */
uint64_t store_bad_replies(struct store *s, char *why, size_t wlen);
/* "store" object: kind, reachable, counters */
struct json_object *store_json(struct store *s);

#endif
