#include "proto/mesh_proto.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header layout (little-endian):
 *  0 magic "FM", 2 version, 3 type, 4 nupdates, 5..7 reserved (0)
 *  8 from.ip, 12 from.port, 14 reserved, 16 incarnation, 20 probe, 24 boot, 32 seq,
 * 40 target.ip, 44 target.port, 46 reserved, 48 to.ip, 52 to.port, 54 reserved,
 * 56 to_boot, 64 sent_ms
 * Update (48 bytes):
 *  0 ip, 4 port, 6 state, 7 has_health, 8 incarnation, 12 culprit_rank, 16 boot,
 * 24 jobs, 26 ranks, 28 running, 30 blocked, 32 hung, 34 dead, 36 health version,
 * 40 accuser.ip, 44 accuser.port, 46 reserved
 */

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] | b[1] << 8);
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) | (uint64_t)get32(b + 4) << 32;
}

const char *mesh_proto_err_name(int err)
{
	switch (err) {
	case MESH_OK:
		return "ok";
	case MESH_E_SIZE:
		return "bad size";
	case MESH_E_MAGIC:
		return "not a mesh packet";
	case MESH_E_VERSION:
		return "unsupported version";
	case MESH_E_MAC:
		return "authentication failed";
	case MESH_E_FIELD:
		return "field out of range";
	case MESH_E_REPLAY:
		return "replayed";
	case MESH_E_DEST:
		return "addressed to another node";
	case MESH_E_STALE:
		return "addressed to an earlier life of ours, or too old";
	}
	return "?";
}

int mesh_proto_encode(const struct mesh_packet *p, const uint8_t key[MESH_KEY_BYTES], uint8_t *buf,
		      size_t cap)
{
	size_t len = MESH_HDR_BYTES + (size_t)p->nupdates * MESH_UPDATE_BYTES;

	if (p->nupdates < 0 || p->nupdates > MESH_MAX_UPDATES || cap < len + MESH_MAC_BYTES)
		return -1;
	memset(buf, 0, len);
	buf[0] = 'F';
	buf[1] = 'M';
	buf[2] = MESH_VERSION;
	buf[3] = p->type;
	buf[4] = (uint8_t)p->nupdates;
	put32(buf + 8, p->from.ip);
	put16(buf + 12, p->from.port);
	put32(buf + 16, p->incarnation);
	put32(buf + 20, p->probe);
	put64(buf + 24, p->boot);
	put64(buf + 32, p->seq);
	put32(buf + 40, p->target.ip);
	put16(buf + 44, p->target.port);
	put32(buf + 48, p->to.ip);
	put16(buf + 52, p->to.port);
	put64(buf + 56, p->to_boot);
	put64(buf + 64, p->sent_ms);
	for (int i = 0; i < p->nupdates; i++) {
		const struct mesh_update *u = &p->updates[i];
		uint8_t *b = buf + MESH_HDR_BYTES + (size_t)i * MESH_UPDATE_BYTES;

		put32(b, u->node.ip);
		put16(b + 4, u->node.port);
		b[6] = u->state;
		b[7] = u->has_health;
		put32(b + 8, u->incarnation);
		put32(b + 12, (uint32_t)u->health.culprit_rank);
		put64(b + 16, u->boot);
		put16(b + 24, u->health.jobs);
		put16(b + 26, u->health.ranks);
		put16(b + 28, u->health.running);
		put16(b + 30, u->health.blocked);
		put16(b + 32, u->health.hung);
		put16(b + 34, u->health.dead);
		put32(b + 36, u->health.version);
		put32(b + 40, u->accuser.ip);
		put16(b + 44, u->accuser.port);
	}
	crypto_auth_hmacsha256(buf + len, buf, len, key);
	return (int)(len + MESH_MAC_BYTES);
}

int mesh_proto_decode(const uint8_t *buf, size_t len, const uint8_t key[MESH_KEY_BYTES],
		      struct mesh_packet *p)
{
	size_t body;
	int n;

	/* cheap checks first: size, magic, version; then the MAC; only then the fields */
	if (len < MESH_HDR_BYTES + MESH_MAC_BYTES || len > MESH_MAX_PACKET)
		return MESH_E_SIZE;
	if (buf[0] != 'F' || buf[1] != 'M')
		return MESH_E_MAGIC;
	if (buf[2] != MESH_VERSION)
		return MESH_E_VERSION;
	n = buf[4];
	body = MESH_HDR_BYTES + (size_t)n * MESH_UPDATE_BYTES;
	if (n > MESH_MAX_UPDATES || body + MESH_MAC_BYTES != len)
		return MESH_E_SIZE;
	if (crypto_auth_hmacsha256_verify(buf + body, buf, body, key) != 0)
		return MESH_E_MAC;
	memset(p, 0, sizeof(*p));
	p->type = buf[3];
	p->nupdates = n;
	p->from.ip = get32(buf + 8);
	p->from.port = get16(buf + 12);
	p->incarnation = get32(buf + 16);
	p->probe = get32(buf + 20);
	p->boot = get64(buf + 24);
	p->seq = get64(buf + 32);
	p->target.ip = get32(buf + 40);
	p->target.port = get16(buf + 44);
	p->to.ip = get32(buf + 48);
	p->to.port = get16(buf + 52);
	p->to_boot = get64(buf + 56);
	p->sent_ms = get64(buf + 64);
	if (p->type < MESH_PING || p->type > MESH_LEAVE || !p->from.port || !p->from.ip ||
	    (p->type == MESH_PING_REQ && (!p->target.port || !p->target.ip)))
		return MESH_E_FIELD;
	for (int i = 0; i < n; i++) {
		const uint8_t *b = buf + MESH_HDR_BYTES + (size_t)i * MESH_UPDATE_BYTES;
		struct mesh_update *u = &p->updates[i];

		u->node.ip = get32(b);
		u->node.port = get16(b + 4);
		u->state = b[6];
		u->has_health = b[7];
		u->incarnation = get32(b + 8);
		u->health.culprit_rank = (int32_t)get32(b + 12);
		u->boot = get64(b + 16);
		u->health.jobs = get16(b + 24);
		u->health.ranks = get16(b + 26);
		u->health.running = get16(b + 28);
		u->health.blocked = get16(b + 30);
		u->health.hung = get16(b + 32);
		u->health.dead = get16(b + 34);
		u->health.version = get32(b + 36);
		u->accuser.ip = get32(b + 40);
		u->accuser.port = get16(b + 44);
		if (u->state > MESH_LEFT || u->has_health > 1 || !u->node.port || !u->node.ip)
			return MESH_E_FIELD;
	}
	return MESH_OK;
}

int mesh_proto_check_dest(const struct mesh_packet *p, const struct mesh_addr *self,
			  uint64_t self_boot, uint64_t now_ms)
{
	if (p->to.ip != self->ip || p->to.port != self->port)
		return MESH_E_DEST;
	if (p->to_boot)
		return p->to_boot == self_boot ? MESH_OK : MESH_E_STALE;
	/* first contact: the sender does not know our boot id yet; only a recent one counts */
	if ((p->sent_ms > now_ms ? p->sent_ms - now_ms : now_ms - p->sent_ms) > MESH_MAX_SKEW_MS)
		return MESH_E_STALE;
	return MESH_OK;
}

int mesh_proto_replay_check(struct mesh_replay *r, uint64_t boot, uint64_t seq)
{
	if (boot < r->boot)
		return MESH_E_REPLAY; /* an earlier life of the sender */
	if (boot > r->boot) {
		r->boot = boot;
		r->top = seq;
		r->window = 1;
		return MESH_OK;
	}
	if (seq > r->top) {
		uint64_t shift = seq - r->top;

		r->window = shift >= 64 ? 1 : (r->window << shift) | 1;
		r->top = seq;
		return MESH_OK;
	}
	if (r->top - seq >= 64 || (r->window & (1ull << (r->top - seq))))
		return MESH_E_REPLAY;
	r->window |= 1ull << (r->top - seq);
	return MESH_OK;
}

void mesh_proto_key_derive(const uint8_t *secret, size_t len, uint8_t key[MESH_KEY_BYTES])
{
	crypto_generichash(key, MESH_KEY_BYTES, secret, len, NULL, 0);
}
