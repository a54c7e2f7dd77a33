/*
 * Decision records as the agents store them in etcd: authenticated with the cluster key, so
 * that a record nobody of the cluster wrote (another etcd user, a forged `gen/`, a record
 * copied to another job's key) is refused, not acted on. A stored value is
 *     "ftbpf-mac1:" <HMAC-SHA-256 of (key, value), base64url, 43 characters> ":" <value>
 * with the MAC keyed by a key derived from the cluster key (the mesh's key file) and bound to
 * the key the record is stored under (the prefix left out), so it cannot be moved.
 */
#ifndef FTBPF_STORE_RECORD_H
#define FTBPF_STORE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define STORE_RECORD_KEY_BYTES 32
/* A stored value's size limit: records are small JSON objects. */
#define STORE_RECORD_MAX 65536

/* The records' key from the cluster key (32 bytes, as conffile_mesh_key gives it). */
void store_record_key(const uint8_t cluster_key[32], uint8_t ret[STORE_RECORD_KEY_BYTES]);
/* The stored form of value under key (without the prefix), in *ret (the caller frees).
 * 0 or -ENOMEM / -E2BIG. */
int store_record_seal(const uint8_t k[STORE_RECORD_KEY_BYTES], const char *key, const char *value,
		      char **ret);
/* The value in a stored form, when it is authentic for key: 0 and *ret_value (a pointer into
 * stored); else -EBADMSG and *ret_why says what is wrong. */
int store_record_open(const uint8_t k[STORE_RECORD_KEY_BYTES], const char *key, const char *stored,
		      const char **ret_value, const char **ret_why);

/*
 * With the node keys (lib/nodekeys.h), the value under the MAC is signed by the node that wrote
 * it, so that a host holding the cluster key cannot write as another node:
 *     "ftbpf-sig1:" <Ed25519 signature of (key, node, value), base64url, 86> ":" <node> " " <value>
 * (a node's name has no space).
 */
#define STORE_SIG_NODE_LEN 32
/* The signed form of value under key by node (sk: libsodium's 64-byte secret key), in *ret
 * (the caller frees). 0 or -EINVAL (a node name with a space or too long), -ENOMEM, -E2BIG. */
int store_record_sign(const uint8_t sk[64], const char *node, const char *key, const char *value,
		      char **ret);
/* The public key of a node by its name, NULL when it has none. */
typedef const uint8_t *(*store_record_pubkey_fn)(void *ctx, const char *node);
/* The value in a signed form, when the node it names signed it for key: 0, *ret_value (into
 * signed_value) and the node's name in ret_node; else -EBADMSG and *ret_why. */
int store_record_verify(const char *key, const char *signed_value, store_record_pubkey_fn fn,
			void *ctx, const char **ret_value, char ret_node[STORE_SIG_NODE_LEN],
			const char **ret_why);

#endif
