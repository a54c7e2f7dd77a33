/*
 * What the store holds for one run of a job, read into struct dp_records: the records' keys
 * and values turned into the policy's view, with the refusals (a record that is not what it
 * says is not followed). Pure: it reads through a small reader (a list of a prefix, a get of a
 * key) and says each refusal through a callback, so the agent (agent/decide_store.c, over its
 * mirror of etcd) and the simulator (tests/sim, over its model of etcd) read the same way.
 */
#ifndef FTBPF_DECIDE_LOAD_H
#define FTBPF_DECIDE_LOAD_H

#include "lib/decide_policy.h"

struct dl_reader {
	/* fn for every key under prefix, in key order; fn may call get */
	int (*list)(void *ctx, const char *prefix,
		    int (*fn)(void *fctx, const char *key, const char *value), void *fctx);
	/* a copy of the value at key (the caller frees it), NULL when absent */
	char *(*get)(void *ctx, const char *key);
	/* a record refused, and why (NULL: not said) */
	void (*refuse)(void *ctx, const char *key, const char *value, const char *why);
	void *ctx;
};

/* A new look at run (0: none) of r: what the last look read is forgotten (the node tables keep
 * their memory); the store's own state (reachable, lease) is the caller's to fill. */
void dl_begin(struct dp_records *r, uint64_t run, int members_only);
/* Read r->run's records: jprefix is the job's prefix (its run records), prefix the run's
 * ("<jprefix>runs/<run>/"). Nothing when r->run is 0. */
void dl_load(const struct dl_reader *rd, const char *jprefix, const char *prefix,
	     struct dp_records *r);

#endif
