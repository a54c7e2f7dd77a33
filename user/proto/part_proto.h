/*
 * A job's part on the wire: what one agent tells the others about its ranks of a job (see
 * lib/jobview.h), in one UDP datagram on the mesh's socket. Little-endian, fixed header, the
 * counted records, an HMAC-SHA-256 under a key derived from the cluster key (so that a part
 * is never taken for a membership packet, nor the reverse). Sender, receiver and boot ids as
 * in mesh packets (replays and misdirected captures fail the same checks). No I/O.
 */
#ifndef FTBPF_PART_PROTO_H
#define FTBPF_PART_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "lib/jobview.h"
#include "proto/mesh_proto.h"

#define PART_VERSION	1
#define PART_HDR_BYTES	136
#define PART_RANK_BYTES 56
#define PART_EDGE_BYTES 24
#define PART_RES_BYTES	12
#define PART_CAD_BYTES	28
#define PART_ARR_BYTES	56 /* the arrivals section's head (PART_F_ARR) */
#define PART_LATE_BYTES 24 /* and its record of each cadence record's arrivals */
#define PART_MAX_TEXT	JV_TEXT_LEN
#define PART_MAX_PACKET MESH_MAX_PACKET
#define PART_TTL_MAX_MS 60000

/* Flags */
#define PART_F_REPLY 0x1 /* an answer to a part: do not answer it */
#define PART_F_GONE  0x2 /* the job has no rank left here: forget this host's part */
/* a cadence part: the step cadence of the sender's ranks of the job (cad records only), sent
 * every few seconds while the job runs on more hosts than this one, healthy or not */
#define PART_F_CAD 0x4
/* with PART_F_CAD: an arrivals section after the text: the clock exchange (the sender's clock
 * when sent, the receiver's last part echoed and how long it was held), each rank's lateness
 * at its job's collectives, the host's first arrivals of a run of them */
#define PART_F_ARR 0x8

struct part_packet {
	struct mesh_addr from, to;
	uint64_t boot, seq, to_boot, sent_ms;
	uint32_t ttl_ms; /* the receiver forgets the part after this long without a newer one */
	uint8_t flags;
	int32_t text_rank; /* whose reason the text is, -1 none */
	/* PART_F_ARR: the clock exchange (lib/clocksync.h), the sender's CLOCK_MONOTONIC */
	uint64_t mono_ns, echo_ns, hold_ns;
	struct jv_part part; /* node, at_ns and stale are the receiver's */
};

enum part_err {
	PART_OK = 0,
	PART_E_SIZE = -1,
	PART_E_MAGIC = -2,
	PART_E_VERSION = -3,
	PART_E_MAC = -4,
	PART_E_FIELD = -5,
};

const char *part_err_name(int err);
/* Is buf a part (magic "FP")? Cheap, before parsing; 1 or 0. */
int part_is_part(const uint8_t *buf, size_t len);
/* The parts' key from the cluster key. */
void part_derive_key(const uint8_t mesh_key[MESH_KEY_BYTES], uint8_t key[MESH_KEY_BYTES]);
/* Encode into buf (PART_MAX_PACKET bytes); the length, or -1 (counts over their maxima). The
 * text of text_rank is its rank's reason. */
int part_encode(const struct part_packet *p, const uint8_t key[MESH_KEY_BYTES], uint8_t *buf,
		size_t cap);
/* Size, magic, version, MAC, then every field; PART_OK or a part_err. */
int part_decode(const uint8_t *buf, size_t len, const uint8_t key[MESH_KEY_BYTES],
		struct part_packet *p);

#endif
