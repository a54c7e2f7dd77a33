/*
 * SWIM membership with Lifeguard refinements, as pure logic under an injected clock: the same
 * code runs in ftbpfd (real time, UDP) and in the simulator (virtual time, lossy network).
 *  - probe one member per probe interval (round-robin over a shuffled order), PING, after the
 *    probe timeout PING-REQ through `indirect_checks` others; no ack by the end of the interval:
 *    suspect it;
 *  - suspicion timeout as memberlist's: min = suspicion_mult * max(1, log10(N)) * interval,
 *    max = suspicion_max_mult * min, shrinking towards min with independent confirmations;
 *  - Lifeguard local health: a missed ack or being suspected raises a multiplier on our own
 *    probe interval and timeout (we may be the slow one), a good probe lowers it;
 *  - incarnation numbers (a suspected member refutes by raising its own), boot ids (a member that
 *    comes back with a newer boot id restarted), graceful leave;
 *  - dissemination piggy-backed on every packet, fewest-sent first, each update retransmitted
 *    retransmit_mult * ceil(log10(N + 1)) times; a node's health summary rides on its updates.
 */
#ifndef FTBPF_SWIM_H
#define FTBPF_SWIM_H

#include <stdint.h>

#include "lib/swim_config.h"
#include "proto/mesh_proto.h"

struct swim_member {
	struct mesh_addr addr;
	uint8_t state; /* enum mesh_state */
	uint8_t nconfirm;
	uint32_t incarnation;
	uint64_t boot;
	uint64_t since_ms;    /* in this state since */
	uint64_t deadline_ms; /* SUSPECT: declared dead then */
	uint32_t suspecters[4];
	struct mesh_addr accuser;   /* SUSPECT: who suspected it first */
	struct mesh_health *health; /* its jobs' summary, NULL until heard (owned by the node) */
};

enum swim_event {
	SWIM_EV_JOIN = 1,     /* a member we did not know */
	SWIM_EV_SUSPECT,      /* alive -> suspect */
	SWIM_EV_DEAD,	      /* suspect (or alive) -> dead */
	SWIM_EV_ALIVE,	      /* suspect -> alive (refuted), or dead -> alive (rejoined) */
	SWIM_EV_RESTARTED,    /* a newer boot id: the node restarted */
	SWIM_EV_LEFT,	      /* graceful leave */
	SWIM_EV_HEALTH,	      /* a newer health summary */
	SWIM_EV_SELF_REFUTED, /* we were suspected and raised our incarnation */
};

struct swim_io {
	void *ctx;
	void (*send)(void *ctx, const struct mesh_addr *to, const struct mesh_packet *p);
	void (*event)(void *ctx, enum swim_event ev, const struct swim_member *m, uint64_t now_ms);
	uint32_t (*rand)(void *ctx);
};

struct swim_counters {
	uint64_t sent, received, probes, indirect, suspected, dead, refuted, replays;
};

struct swim;

/* NULL on ENOMEM. boot: this node's boot id (e.g. start time in ms plus noise). */
struct swim *swim_new(const struct swim_config *c, const struct mesh_addr *self, uint64_t boot,
		      const struct swim_io *io);
void swim_free(struct swim *s);
/* Size the member table for n members at once (a static peers list; the simulator). */
int swim_reserve(struct swim *s, int n);
/* A configured peer or seed: known (alive, incarnation 0) until it answers or is found dead. */
int swim_add_peer(struct swim *s, const struct mesh_addr *peer, uint64_t now_ms);
/* Run timers: probes, indirect probes, suspicion timeouts. Call at least every 50 ms. */
void swim_tick(struct swim *s, uint64_t now_ms);
/* A decoded, authenticated packet (replays are dropped here and counted). */
void swim_receive(struct swim *s, const struct mesh_packet *p, uint64_t now_ms);
/* Our health summary changed: it spreads with our next updates. */
void swim_set_health(struct swim *s, const struct mesh_health *h);
/* Tell the others we leave (one round of LEAVE packets). */
void swim_leave(struct swim *s, uint64_t now_ms);

int swim_count(const struct swim *s);
const struct swim_member *swim_member_at(const struct swim *s, int i);
const struct swim_member *swim_find(const struct swim *s, const struct mesh_addr *a);
const struct swim_counters *swim_counters(const struct swim *s);
uint32_t swim_incarnation(const struct swim *s);
/* Our boot id (what senders must name as to_boot). */
uint64_t swim_boot(const struct swim *s);
int swim_local_health(const struct swim *s);
const char *swim_state_name(int state);
const char *swim_event_name(enum swim_event ev);

#endif
