/* Records sealed and opened: see store_seal.h. */
#include "agent/store_seal.h"

#include <errno.h>
#include <json-c/json.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decisions.h"
#include "lib/nodekeys.h"
#include "os/log.h"

void store_seal_init(struct store_seal *s, const uint8_t *cluster_key, const struct nodekeys *keys,
		     const uint8_t *sk, const char *node)
{
	memset(s, 0, sizeof(*s));
	kvmap_init(&s->refused);
	if (!cluster_key)
		return;
	store_record_key(cluster_key, s->rkey);
	s->auth = 1;
	if (keys) {
		s->keys = keys;
		memcpy(s->sk, sk, sizeof(s->sk));
		snprintf(s->node, sizeof(s->node), "%s", node);
	}
}

void store_seal_fini(struct store_seal *s)
{
	kvmap_fini(&s->refused);
	sodium_memzero(s->sk, sizeof(s->sk));
}

/* The stored form: MACed with the cluster key; with the node keys, signed by this node first. */
int store_seal_value(const struct store_seal *s, const char *key, const char *value, char **ret)
{
	char *sv = NULL;
	int r;

	if (!s->keys)
		return store_record_seal(s->rkey, key, value, ret);
	r = store_record_sign(s->sk, s->node, key, value, &sv);
	if (r == 0)
		r = store_record_seal(s->rkey, key, sv, ret);
	free(sv);
	return r;
}

#define REFUSED_MAX 4096 /* refused records remembered (then forgotten all at once) */

/* Was this very record (key and value) refused already? Remembers it if not. */
static int refused_before(struct store_seal *s, const char *k, const char *stored)
{
	unsigned char h[16];
	char hex[sizeof(h) * 2 + 1];
	const char *was;

	crypto_generichash(h, sizeof(h), (const unsigned char *)stored, strlen(stored), NULL, 0);
	sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
	was = kvmap_get(&s->refused, k);
	if (was && !strcmp(was, hex))
		return 1;
	if (s->refused.n >= REFUSED_MAX)
		kvmap_clear(&s->refused, "");
	kvmap_set(&s->refused, k, hex);
	return 0;
}

static const uint8_t *pubkey_of(void *ctx, const char *node)
{
	const struct nodekey *k = nodekeys_by_name(ctx, node);

	return k ? k->pub : NULL;
}

/*
 * With the node keys, a record is a node's word: signed by the node that wrote it, which must
 * be the node it belongs to (launch/, members/, saved/, out/ under a node's name) and the node
 * it says decided ("by"). 0 and *ret_value, or -EBADMSG with *ret_why.
 */
static int signed_by_its_node(const struct store_seal *s, const char *k, const char *v,
			      const char **ret_value, const char **ret_why)
{
	char signer[STORE_SIG_NODE_LEN];
	const char *owner = dec_key_node(k), *value, *by;
	struct json_object *o, *jb;
	int r = 0;

	if (store_record_verify(k, v, pubkey_of, (void *)s->keys, &value, signer, ret_why) < 0)
		return -EBADMSG;
	if (owner && strcmp(owner, signer)) {
		*ret_why = "signed by another node than the one it belongs to";
		return -EBADMSG;
	}
	o = json_tokener_parse(value);
	if (o && json_object_object_get_ex(o, "by", &jb) && (by = json_object_get_string(jb)) &&
	    strcmp(by, signer)) {
		*ret_why = "signed by another node than the one that decided (by)";
		r = -EBADMSG;
	}
	json_object_put(o);
	if (r == 0)
		*ret_value = value;
	return r;
}

const char *store_seal_open(struct store_seal *s, const char *prefix, const char *k,
			    const char *stored)
{
	const char *value, *why;

	if (!s->auth)
		return stored;
	if (store_record_open(s->rkey, k, stored, &value, &why) == 0 &&
	    (!s->keys || signed_by_its_node(s, k, value, &value, &why) == 0))
		return value;
	if (refused_before(s, k, stored))
		return NULL; /* the same record read again (the prefix re-read): counted once */
	s->rejected++;
	snprintf(s->rej_key, sizeof(s->rej_key), "%s%s", prefix, k);
	snprintf(s->rej_why, sizeof(s->rej_why), "%s", why);
	if (s->rejected % 100 == 1)
		log_warn("etcd: record %s%s refused: %s (%llu refused)", prefix, k, why,
			 (unsigned long long)s->rejected);
	return NULL;
}
