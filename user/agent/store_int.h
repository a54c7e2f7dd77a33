/* The agreement store's kinds (store.c: local, store_etcd.c: etcd). Not for other modules. */
#ifndef FTBPF_STORE_INT_H
#define FTBPF_STORE_INT_H

#include <stdint.h>

#include "agent/store.h"

struct store_ops {
	const char *kind;
	int (*claim)(struct store *s, const char *key, const char *value);
	int (*put)(struct store *s, const char *key, const char *value, int leased);
	char *(*get)(struct store *s, const char *key);
	int (*delete_prefix)(struct store *s, const char *prefix);
	int (*list)(struct store *s, const char *prefix,
		    int (*fn)(void *ctx, const char *key, const char *value), void *ctx);
	int (*reachable)(struct store *s, uint64_t *last_ok_ms);
	void (*counters)(struct store *s, struct json_object *c);
	/* NULL: none; *ret_renewed_ms: when it was last granted or renewed (mono ms, 0 never) */
	int64_t (*lease)(struct store *s, uint64_t *ret_renewed_ms);
	int (*lease_left)(struct store *s, int64_t lease, int64_t *ret_s, uint64_t *ret_at_ms);
	uint64_t (*rejected)(struct store *s, char *key, size_t klen, char *why, size_t wlen);
	uint64_t (*bad_replies)(struct store *s, char *why, size_t wlen); /* NULL: none */
	void (*close)(struct store *s);
};

struct store {
	const struct store_ops *ops;
	uint64_t opened_ms; /* CLOCK_MONOTONIC (store_open) */
};

struct store *store_etcd_open(const struct store_opts *o, char *err, size_t errlen);

#endif
