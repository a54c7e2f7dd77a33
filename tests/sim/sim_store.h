/*
 * The simulator's model of etcd: a sorted key/value map with one global revision, every
 * version of every key kept (so a host's mirror can be read as it was at an older revision),
 * create-only claims, puts, leases with a TTL on the simulated clock (a leased key is deleted
 * when its lease expires unrenewed). Outages are the caller's: it does not call in while the
 * store or a host is cut off. Deterministic: no clock, no randomness of its own.
 */
#ifndef FTBPF_SIM_STORE_H
#define FTBPF_SIM_STORE_H

#include <stdint.h>

struct ss_ver {
	uint64_t rev;
	int64_t lease; /* 0 none */
	char *value;   /* NULL: deleted at rev */
};

struct ss_key {
	char *key;
	struct ss_ver *v; /* in revision order */
	int nv, cap;
};

struct ss_lease {
	int64_t id;
	uint64_t expires_ms; /* store time */
	int ttl_ms;
	int alive;
};

struct sim_store {
	struct ss_key *keys; /* sorted by key */
	int n, cap;
	uint64_t rev;
	struct ss_lease *leases;
	int nleases, leases_cap;
	int64_t next_lease;
	uint64_t *rev_at_ms; /* (ms, rev) pairs, appended at every new revision */
	int nrev_at, rev_at_cap;
};

void ss_init(struct sim_store *s);
void ss_free(struct sim_store *s);
/* Create key unless it exists now: 1 created, 0 it existed. */
int ss_claim(struct sim_store *s, uint64_t now_ms, const char *key, const char *value,
	     int64_t lease);
/* Put key (a put of the same value and lease as now is no new revision). */
void ss_put(struct sim_store *s, uint64_t now_ms, const char *key, const char *value,
	    int64_t lease);
void ss_delete(struct sim_store *s, uint64_t now_ms, const char *key);
/* The value of key at revision rev (the latest: UINT64_MAX), NULL absent; not a copy. */
const char *ss_get_at(const struct sim_store *s, const char *key, uint64_t rev);
/* The revision key was created at in its current life at rev (0: absent). */
uint64_t ss_created_at(const struct sim_store *s, const char *key, uint64_t rev);
/* fn for every key under prefix present at rev, in key order. */
int ss_list_at(const struct sim_store *s, const char *prefix, uint64_t rev,
	       int (*fn)(void *ctx, const char *key, const char *value), void *ctx);
/* The store's revision as it was at store time ms. */
uint64_t ss_rev_at_time(const struct sim_store *s, uint64_t ms);
/* A new lease of ttl_ms; keepalive: 0 renewed, -ENOENT expired (or no such lease). */
int64_t ss_grant(struct sim_store *s, uint64_t now_ms, int ttl_ms);
int ss_keepalive(struct sim_store *s, uint64_t now_ms, int64_t id);
/* Expire the leases past their TTL at now_ms: their keys deleted. The number expired. */
int ss_expire(struct sim_store *s, uint64_t now_ms);
/* What lease id has left at now_ms (ms; -1 expired or unknown). */
int64_t ss_lease_left(const struct sim_store *s, uint64_t now_ms, int64_t id);

#endif
