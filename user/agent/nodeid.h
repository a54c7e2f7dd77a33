/*
 * This node's identity among the agents of a cluster (docs/security.md, "What a key holder can
 * do"): its own Ed25519 key (node_key_file), which signs the job parts and decision records it
 * sends, and every node's public key (node_keys_file), which checks what others send. Without
 * them the cluster key alone authenticates, and any holder of it may speak for any node.
 */
#ifndef FTBPF_NODEID_H
#define FTBPF_NODEID_H

#include <stddef.h>
#include <stdint.h>

#include "lib/nodekeys.h"

struct ftbpf_config;

struct nodeid {
	int on; /* node keys configured and loaded */
	uint8_t pk[NODEKEY_BYTES];
	uint8_t sk[64]; /* libsodium's form: seed and public key */
	struct nodekeys keys;
	const struct nodekey *self; /* this node's entry in keys */
};

/*
 * Load the keys the configuration names (nothing when it names none: n->on stays 0). This node
 * must be listed under its name (node, as decisions call it) or its mesh address (bind), with
 * the public key its own key gives. 0, or -errno with a message in err.
 */
int nodeid_load(struct nodeid *n, const struct ftbpf_config *cfg, const char *node, char *err,
		size_t errlen);
void nodeid_free(struct nodeid *n);

#endif
