/* A small ordered map of string keys to string values (the agreement store's mirror). Owns
 * copies of every key and value. Not thread-safe: its owner locks. */
#ifndef FTBPF_KVMAP_H
#define FTBPF_KVMAP_H

#include <stddef.h>

struct kv {
	char *key, *value; /* owned */
};

struct kvmap {
	struct kv *v; /* owned, sorted by key */
	size_t n, cap;
};

void kvmap_init(struct kvmap *m);
void kvmap_fini(struct kvmap *m);
/* Insert or replace. 0 or -ENOMEM. */
int kvmap_set(struct kvmap *m, const char *key, const char *value);
/* 0, or -ENOENT */
int kvmap_del(struct kvmap *m, const char *key);
/* The value (borrowed: valid until the map changes), NULL when absent. */
const char *kvmap_get(const struct kvmap *m, const char *key);
/* fn for every key starting with prefix, in key order; stops when fn returns non-zero (and
 * returns that). */
int kvmap_foreach(const struct kvmap *m, const char *prefix,
		  int (*fn)(void *ctx, const char *key, const char *value), void *ctx);
/* Drop every key starting with prefix. */
void kvmap_clear(struct kvmap *m, const char *prefix);

#endif
