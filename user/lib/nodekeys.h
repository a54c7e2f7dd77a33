/*
 * The cluster's node keys (docs/security.md, "What a key holder can do"). With them, what one
 * agent tells the others (job parts, decision records) is signed with its own node's Ed25519
 * key and checked against the signer's public key, which the operator lists for every node in
 * one file; a host that holds the cluster key can then speak only for itself. The file: one node
 * per line, "NAME ADDR:PORT PUBKEY" (NAME as in decisions — node_name, or the mesh address —,
 * ADDR:PORT its mesh address, PUBKEY 64 hex digits), "#" comments. Parsing only; no I/O, no
 * crypto (proto/ signs and checks).
 */
#ifndef FTBPF_NODEKEYS_H
#define FTBPF_NODEKEYS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/meshaddr.h"

#define NODEKEYS_MAX	 1024
#define NODEKEY_BYTES	 32 /* an Ed25519 public key, or a secret key's seed */
#define NODEKEY_NAME_LEN 32

struct nodekey {
	char name[NODEKEY_NAME_LEN];
	struct mesh_addr addr;
	uint8_t pub[NODEKEY_BYTES];
};

struct nodekeys {
	struct nodekey *v; /* owned */
	int n;
};

/* Parse the file's text: 0, or -EINVAL with "line N: why" in err (a malformed line, a name,
 * address or key listed twice, more than NODEKEYS_MAX nodes, none), -ENOMEM. */
int nodekeys_parse(const char *text, size_t len, struct nodekeys *ret, char *err, size_t errlen);
void nodekeys_free(struct nodekeys *k);
const struct nodekey *nodekeys_by_addr(const struct nodekeys *k, const struct mesh_addr *a);
const struct nodekey *nodekeys_by_name(const struct nodekeys *k, const char *name);
/* 64 hex digits into 32 bytes: 0 or -EINVAL. */
int nodekeys_hex(const char *s, size_t len, uint8_t ret[NODEKEY_BYTES]);

#endif
