/*
 * The tracker's insides, shared by the files that implement it (tracker.c: loading, maps,
 * events; slots.c: the registered processes' slots; tracker_share.c: the per-user shares). Nothing outside user/watch includes this.
 */
#ifndef FTBPF_TRACKER_INT_H
#define FTBPF_TRACKER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "watch/tracker.h"

struct tracker_bpf;
struct ring_buffer;

struct tracker {
	struct tracker_bpf *skel;   /* owned */
	struct ring_buffer *rb;	    /* owned */
	struct bpf_link *iter_link; /* owned */
	struct bpf_link *links[16]; /* owned; also pinned */
	int nlinks;
	uint64_t *bits;	 /* mmap of rank_bits */
	uint64_t *dirty; /* mmap of maps_dirty */
	size_t bits_len;
	unsigned nwords;
	struct tracker_features feat;
	tracker_event_fn on_event;
	void *ctx;
	int consumed, consume_max; /* records handled in this tracker_consume call, its bound */
	char pin_dir[256];
};

/* tracker_share.c: the kernel's limits from lib/shares.c (before load); the counts of the
 * agent's own unpinned maps reset (after load) */
void tracker_share_limits(struct tracker *t, const struct tracker_opts *o);
void tracker_share_restart(struct tracker *t);

#endif
