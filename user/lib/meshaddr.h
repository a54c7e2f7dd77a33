/*
 * A mesh node's address (IPv4 and UDP port) and its text form ("10.0.0.1:7946"): pure, apart
 * from the wire format (proto/mesh_proto.h), so that the configuration can check `bind` and
 * `peers` without the protocol and its crypto library.
 */
#ifndef FTBPF_MESHADDR_H
#define FTBPF_MESHADDR_H

#include <stddef.h>
#include <stdint.h>

/* A node: IPv4 address and UDP port (host byte order). */
struct mesh_addr {
	uint32_t ip;
	uint16_t port;
};

/* The same node? */
static inline int meshaddr_eq(const struct mesh_addr *a, const struct mesh_addr *b)
{
	return a->ip == b->ip && a->port == b->port;
}

/* "10.0.0.1:7946" -> addr; 0 or -EINVAL. */
int meshaddr_parse(const char *s, struct mesh_addr *ret);
void meshaddr_format(const struct mesh_addr *a, char *buf, size_t len);

#endif
