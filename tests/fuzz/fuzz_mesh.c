/*
 * libFuzzer target: mesh packets. Byte 0 picks the path: even, the input is a packet as it
 * arrives (size, magic, version, MAC checks); odd, the rest is given a valid MAC first, so that
 * the field checks behind the MAC are reached too. Decoded packets also go through the replay
 * window and a SWIM node (the protocol must survive any authenticated packet).
 */
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/mesh_proto.h"
#include "proto/swim.h"

static const uint8_t key[MESH_KEY_BYTES] = "ftbpf-fuzz-key-0123456789abcdef";

static void no_send(void *ctx, const struct mesh_addr *to, const struct mesh_packet *p)
{
	(void)ctx, (void)to, (void)p;
}

static uint32_t fixed_rand(void *ctx)
{
	return (uint32_t)(uintptr_t)ctx * 2654435761u;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct swim *node;
	static struct mesh_replay replay;
	static uint64_t now = 1;
	uint8_t buf[MESH_MAX_PACKET + 64];
	struct mesh_packet p;
	size_t len;

	if (!node) {
		struct swim_config c;
		struct swim_io io = {.ctx = (void *)1, .send = no_send, .rand = fixed_rand};
		struct mesh_addr self = {0x0a000001, 7946};

		swim_config_default(&c);
		node = swim_new(&c, &self, 1, &io);
	}
	if (size < 1)
		return 0;
	len = size - 1 > MESH_MAX_PACKET ? MESH_MAX_PACKET : size - 1;
	memcpy(buf, data + 1, len);
	if ((data[0] & 1) && len >= MESH_MAC_BYTES + 8) {
		buf[0] = 'F';
		buf[1] = 'M';
		buf[2] = MESH_VERSION;
		crypto_auth_hmacsha256(buf + len - MESH_MAC_BYTES, buf, len - MESH_MAC_BYTES, key);
	}
	if (mesh_proto_decode(buf, len, key, &p) == MESH_OK) {
		mesh_proto_replay_check(&replay, p.boot, p.seq);
		now += 10;
		swim_receive(node, &p, now);
		swim_tick(node, now);
	}
	return 0;
}
