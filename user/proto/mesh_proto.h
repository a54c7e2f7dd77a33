/*
 * The heartbeat mesh's wire format: the one encoder and the one parser of mesh packets.
 * Fixed little-endian header, bounded membership updates (each may carry the node's health
 * summary), and an HMAC-SHA-256 (libsodium crypto_auth_hmacsha256) over everything under a
 * per-cluster key. Replay protection (per sender: boot id ordering and a sequence window) lives
 * here too, so that every packet is checked in one place. No I/O.
 */
#ifndef FTBPF_MESH_PROTO_H
#define FTBPF_MESH_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "lib/meshaddr.h"

#define MESH_VERSION	2
#define MESH_MAX_PACKET 1400 /* fits a 1500-byte MTU with IP/UDP headers */
#define MESH_KEY_BYTES	32
#define MESH_MAC_BYTES	32
#define MESH_HDR_BYTES	72
/* A packet addressed to a node whose boot id the sender does not know yet (first contact) is
 * accepted only if it was sent at most this long ago: so an old capture is useless. */
#define MESH_MAX_SKEW_MS  120000
#define MESH_UPDATE_BYTES 48
#define MESH_MAX_UPDATES  ((MESH_MAX_PACKET - MESH_HDR_BYTES - MESH_MAC_BYTES) / MESH_UPDATE_BYTES)

enum mesh_type {
	MESH_PING = 1,	   /* direct probe: answer with an ACK */
	MESH_ACK = 2,	   /* answer to a PING (target = who asked, for indirect acks) */
	MESH_PING_REQ = 3, /* probe `target` for me and forward its ACK */
	MESH_LEAVE = 4,	   /* graceful leave (also as an update) */
};

enum mesh_state {
	MESH_ALIVE = 0,
	MESH_SUSPECT = 1,
	MESH_DEAD = 2,
	MESH_LEFT = 3,
};

/* What a node tells about its jobs (counts; 0xffff saturates). */
struct mesh_health {
	uint16_t jobs, ranks, running, blocked, hung, dead;
	int32_t culprit_rank; /* of the first hung job, -1 none */
	uint32_t version;     /* bumped by the node when the summary changes */
};

struct mesh_update {
	struct mesh_addr node;
	uint8_t state; /* enum mesh_state */
	uint8_t has_health;
	uint32_t incarnation;
	uint64_t boot; /* the node's boot id (ms since the epoch at its start, plus noise) */
	struct mesh_health health;
	struct mesh_addr accuser; /* SUSPECT: who suspected it first (independent confirmations) */
};

struct mesh_packet {
	uint8_t type;
	struct mesh_addr from; /* the sender as it names itself */
	uint32_t incarnation;  /* the sender's */
	uint64_t boot;	       /* the sender's */
	uint64_t seq;	       /* the sender's packet counter (replay protection) */
	uint32_t probe;	       /* probe number, echoed in the ACK */
	struct mesh_addr target;
	/* the receiver, as the sender names it, and the receiver's boot id as the sender last
	 * learnt it (0: not yet): a packet replayed to another node, or to a later life of its
	 * receiver, fails the receiver's check; both are under the MAC */
	struct mesh_addr to;
	uint64_t to_boot;
	uint64_t sent_ms; /* the sender's wall clock (ms since the epoch) */
	int nupdates;
	struct mesh_update updates[MESH_MAX_UPDATES];
};

enum mesh_err {
	MESH_OK = 0,
	MESH_E_SIZE =
	    -1, /* shorter than a header, longer than the maximum, or not header+N*update+MAC */
	MESH_E_MAGIC = -2,   /* not a mesh packet */
	MESH_E_VERSION = -3, /* another protocol version */
	MESH_E_MAC = -4,     /* authentication failed */
	MESH_E_FIELD = -5,   /* a field out of range (type, state, port 0...) */
	MESH_E_REPLAY = -6,  /* seen already, or from an older boot of the sender */
	MESH_E_DEST = -7,    /* addressed to another node */
	MESH_E_STALE = -8,   /* addressed to an earlier life of ours, or a first contact too old */
};

const char *mesh_proto_err_name(int err);

/* Encode p into buf (at least MESH_MAX_PACKET bytes) with the MAC; returns the length or -1. */
int mesh_proto_encode(const struct mesh_packet *p, const uint8_t key[MESH_KEY_BYTES], uint8_t *buf,
		      size_t cap);
/* Check size, magic, version, MAC, then fields; fills p. Returns MESH_OK or a mesh_err. */
int mesh_proto_decode(const uint8_t *buf, size_t len, const uint8_t key[MESH_KEY_BYTES],
		      struct mesh_packet *p);

/* Is p (decoded, so authentic) meant for us, now? self and self_boot: who we are; now_ms: our
 * wall clock. MESH_OK, MESH_E_DEST or MESH_E_STALE. */
int mesh_proto_check_dest(const struct mesh_packet *p, const struct mesh_addr *self,
			  uint64_t self_boot, uint64_t now_ms);

/* Per-sender replay window: the newest boot seen, the highest seq, and a 64-packet bitmap. */
struct mesh_replay {
	uint64_t boot, top;
	uint64_t window;
};
/* MESH_OK (and records it) or MESH_E_REPLAY. */
int mesh_proto_replay_check(struct mesh_replay *r, uint64_t boot, uint64_t seq);

/* The cluster key from its secret (any 16+ bytes, os/conffile.h reads the file): the secret
 * hashed (BLAKE2b) to the MAC key. */
void mesh_proto_key_derive(const uint8_t *secret, size_t len, uint8_t key[MESH_KEY_BYTES]);

#endif
