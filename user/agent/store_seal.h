/*
 * The etcd store's records as written and as read (store_etcd.c): sealed with the cluster key
 * (proto/store_record.h) and, with the node keys, signed by this node; read back, opened only
 * when authentic and, with node keys, signed by the node that may write them; refused records
 * counted once each. The store's lock is held around every call.
 */
#ifndef FTBPF_STORE_SEAL_H
#define FTBPF_STORE_SEAL_H

#include <stdint.h>

#include "lib/kvmap.h"
#include "proto/store_record.h"

struct nodekeys;

struct store_seal {
	int auth; /* records are sealed with rkey and checked when read */
	uint8_t rkey[STORE_RECORD_KEY_BYTES];
	const struct nodekeys *keys; /* with them, records are signed by nodes too (NULL: not) */
	uint8_t sk[64];
	char node[STORE_SIG_NODE_LEN];
	uint64_t rejected; /* records refused */
	char rej_key[160], rej_why[96];
	struct kvmap refused; /* refused keys -> a hash of what was refused: counted once */
};

/* cluster_key NULL: records are not authenticated; keys NULL: the cluster key alone (else sk
 * and node are this node's). */
void store_seal_init(struct store_seal *x, const uint8_t *cluster_key, const struct nodekeys *keys,
		     const uint8_t *sk, const char *node);
void store_seal_fini(struct store_seal *x);
/* The stored form of value at key (*ret, the caller frees). 0 or -errno. */
int store_seal_value(const struct store_seal *x, const char *key, const char *value, char **ret);
/* A stored value as the mirror holds it: the record itself when it is authentic (or when
 * records are not authenticated), else NULL: refused, counted, logged (prefix + k names it). */
const char *store_seal_open(struct store_seal *x, const char *prefix, const char *k,
			    const char *stored);

#endif
