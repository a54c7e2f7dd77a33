/*
 * Step cadence across hosts. For a job that spans hosts, each agent sends its ranks' cadence
 * summaries (lib/cadence.h: own, wait and read shares of wall time, step time) to the job's
 * other hosts every few seconds, healthy or not: a cadence part (PART_F_CAD), carried and
 * authenticated by agent/jobparts.c like every part. This module keeps what arrives, one entry
 * per remote rank with the straggler state this host judges for it (agent/cadwatch.c judges a
 * job over its ranks here and these), and says what to send and when.
 *
 * With the cadence go the ranks' lateness at their job's collectives and the host's first
 * arrivals of a run of them, and each part carries the clock exchange (lib/clocksync.h) that
 * puts other hosts' arrivals into this host's clock, with an error bound.
 *
 * Cost: one part per host of the job every max(2 s, 20 ms x the job's hosts), at most 20 s:
 * about 400 bytes for 8 ranks, so at most ~20 KB/s a host (150 hosts and more), 1.6 KB/s at
 * 8 hosts. Trust: as parts (MAC, sender, boot, replay window), then a job of ours, its world
 * size, none of our own live ranks, one host per rank while its claim is fresh; counted.
 */
#ifndef FTBPF_CADPARTS_H
#define FTBPF_CADPARTS_H

#include <stdint.h>

#include "lib/cadence.h"

struct cadparts;
struct job;
struct ranks;
struct jv_part;
struct mesh_addr;
struct part_packet;
struct json_object;

/* When a job's cadence went out (one per job, kept by the caller; zeroed at first). */
struct cad_timing {
	uint64_t sent_ns, bcast_ns; /* last sent; last sent to every member */
	int hosts;		    /* the job's hosts when last sent */
};

/* skew_ns: added to this host's clock on the wire (0; the tests make hosts' clocks differ). */
struct cadparts *cadparts_new(int64_t skew_ns);
void cadparts_free(struct cadparts *cp);
/* A cadence part p (authenticated, meant for us, fresh) from a host (member: a live member of
 * the mesh) about job j (NULL: no job of ours). 1 when the sender is new to the job here and
 * asks for ours (send it ours, to it alone), 0 when not, -1 when it was not believed (counted).
 * Believed: a job of ours whose world size we know and the sender says, none of our own live
 * ranks (the decoder refused ranks beyond that world): entries are bounded by our jobs' worlds. */
int cadparts_accept(struct cadparts *cp, const struct part_packet *p, int member,
		    const struct job *j, uint64_t now);
/* Is it time to send j's cadence (t: j's timing, updated as sent)? The parts into cv (up to
 * max), *ret_all: to every live member (else to the job's hosts), *ret_ttl_ms; their number,
 * 0 when nothing is due. */
int cadparts_build(struct cadparts *cp, const struct job *j, struct cad_timing *t, uint64_t now,
		   struct jv_part *cv, int max, int *ret_all, uint32_t *ret_ttl_ms);
/* j's cadence parts as they are now (for an answer to one host, whatever the period), the
 * host's first arrivals in the first: their number. */
int cadparts_parts(const struct cadparts *cp, const struct job *j, struct jv_part *cv, int max);
/* A cadence part p about to go to host `to`: its arrivals section's clock exchange. */
void cadparts_stamp(const struct cadparts *cp, const struct mesh_addr *to, uint64_t now,
		    struct part_packet *p);
/* arr_remote_fn (agent/cadwatch.h), ctx the cadparts: the first arrivals of j's other hosts
 * whose clocks are known, in this host's clock, each with its clock's error bound. */
int cadparts_firsts(void *ctx, const struct job *j, uint64_t now, struct arr_remote *out, int max);
/* Each host's clock offset and its error bound, into arr: [{node, offset_ms, error_ms}]. */
void cadparts_clocks_json(const struct cadparts *cp, uint64_t now, struct json_object *arr);
/* Forget what host a said (it died, left or restarted). */
void cadparts_forget_host(struct cadparts *cp, const struct mesh_addr *a);
/* Did host a send j's cadence lately? */
int cadparts_is_host(const struct cadparts *cp, const struct job *j, const struct mesh_addr *a,
		     uint64_t now);
/* cad_remote_fn (agent/cadwatch.h), ctx the cadparts: j's fresh remote ranks, none held live
 * here. */
int cadparts_remote(void *ctx, const struct job *j, uint64_t now, struct cad_remote **out, int max);
/* j's fresh remote ranks one by one: from *it on, the next (its sender, the summary's age),
 * NULL at the end. */
const struct cad_remote *cadparts_next(const struct cadparts *cp, const struct job *j, uint64_t now,
				       int *it, struct mesh_addr *ret_from, uint64_t *ret_age_ns);
/* A remote rank's cadence as judged here, into o: straggler, slowdown, straggler_reason,
 * step_s, cadence_age_s. */
void cadparts_json(const struct cad_remote *x, uint64_t age_ns, struct json_object *o);
/* Rank `rank` of j from host `from` (a linear look), as cadparts_json. */
void cadparts_rank_json(const struct cadparts *cp, const struct job *j, int rank,
			const struct mesh_addr *from, uint64_t now, struct json_object *o);
/* Forget expired entries, and those of jobs gone. */
void cadparts_tick(struct cadparts *cp, const struct ranks *ranks, uint64_t now);
/* Counters into c: cadence_parts_accepted, cadence_not_ours, ... */
void cadparts_counters(const struct cadparts *cp, struct json_object *c);

#endif
