/* This node's signing key and the cluster's public keys: see nodeid.h. */
#include "agent/nodeid.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/config.h"
#include "os/safefs.h"

#define KEYS_FILE_MAX (NODEKEYS_MAX * 160)

int nodeid_load(struct nodeid *n, const struct ftbpf_config *cfg, const char *node, char *err,
		size_t errlen)
{
	char seedhex[160], e2[256], *text;
	uint8_t seed[NODEKEY_BYTES];
	struct mesh_addr bind = {0};
	int r;

	memset(n, 0, sizeof(*n));
	if (!*cfg->node_key_file)
		return 0;
	if (sodium_init() < 0) {
		snprintf(err, errlen, "node keys: libsodium unusable");
		return -ENOSYS;
	}
	r = safefs_read_secret(cfg->node_key_file, seedhex, sizeof(seedhex), e2, sizeof(e2));
	if (r == 0 && nodekeys_hex(seedhex, strlen(seedhex), seed) < 0) {
		snprintf(e2, sizeof(e2), "%.200s: not 64 hex digits (an Ed25519 seed)",
			 cfg->node_key_file);
		r = -EINVAL;
	}
	sodium_memzero(seedhex, sizeof(seedhex));
	if (r < 0) {
		snprintf(err, errlen, "node_key_file: %s", e2);
		return r;
	}
	crypto_sign_seed_keypair(n->pk, n->sk, seed);
	sodium_memzero(seed, sizeof(seed));
	text = malloc(KEYS_FILE_MAX);
	if (!text) {
		nodeid_free(n);
		return -ENOMEM;
	}
	r = safefs_read_trusted(cfg->node_keys_file, text, KEYS_FILE_MAX, e2, sizeof(e2));
	if (r == 0)
		r = nodekeys_parse(text, strlen(text), &n->keys, e2, sizeof(e2));
	free(text);
	if (r < 0) {
		snprintf(err, errlen, "node_keys_file %s: %s", cfg->node_keys_file, e2);
		nodeid_free(n);
		return r;
	}
	n->self = nodekeys_by_name(&n->keys, node);
	if (!n->self && *cfg->mesh_bind && meshaddr_parse(cfg->mesh_bind, &bind) == 0)
		n->self = nodekeys_by_addr(&n->keys, &bind);
	if (!n->self || memcmp(n->self->pub, n->pk, NODEKEY_BYTES)) {
		snprintf(err, errlen,
			 "node_keys_file %s: %s, not with the public key of node_key_file (%s)",
			 cfg->node_keys_file,
			 n->self ? "lists another key for this node" : "does not list this node",
			 node);
		nodeid_free(n);
		return -EINVAL;
	}
	n->on = 1;
	return 0;
}

void nodeid_free(struct nodeid *n)
{
	if (!n)
		return;
	nodekeys_free(&n->keys);
	sodium_memzero(n->sk, sizeof(n->sk));
	n->on = 0;
	n->self = NULL;
}
