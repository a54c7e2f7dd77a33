/* Authenticated decision records: see store_record.h. */
#include "proto/store_record.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG	"ftbpf-mac1:"
#define TAG_LEN (sizeof(TAG) - 1)
#define MAC_B64 43 /* 32 bytes, base64url without padding */

void store_record_key(const uint8_t cluster_key[32], uint8_t ret[STORE_RECORD_KEY_BYTES])
{
	static const char ctx[] = "ftbpf etcd decision records v1";

	crypto_generichash(ret, STORE_RECORD_KEY_BYTES, (const unsigned char *)ctx, sizeof(ctx) - 1,
			   cluster_key, 32);
}

/* HMAC-SHA-256 over len(key) key value: the key cannot run into the value. */
static void mac(const uint8_t k[STORE_RECORD_KEY_BYTES], const char *key, const char *value,
		size_t vlen, unsigned char out[crypto_auth_hmacsha256_BYTES])
{
	crypto_auth_hmacsha256_state st;
	unsigned char kl[4];
	size_t n = strlen(key);

	kl[0] = (unsigned char)(n >> 24);
	kl[1] = (unsigned char)(n >> 16);
	kl[2] = (unsigned char)(n >> 8);
	kl[3] = (unsigned char)n;
	crypto_auth_hmacsha256_init(&st, k, STORE_RECORD_KEY_BYTES);
	crypto_auth_hmacsha256_update(&st, kl, sizeof(kl));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)key, n);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)value, vlen);
	crypto_auth_hmacsha256_final(&st, out);
}

int store_record_seal(const uint8_t k[STORE_RECORD_KEY_BYTES], const char *key, const char *value,
		      char **ret)
{
	unsigned char m[crypto_auth_hmacsha256_BYTES];
	char b64[MAC_B64 + 1];
	size_t vlen = strlen(value);
	char *out;

	if (vlen > STORE_RECORD_MAX)
		return -E2BIG;
	mac(k, key, value, vlen, m);
	sodium_bin2base64(b64, sizeof(b64), m, sizeof(m), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	out = malloc(TAG_LEN + MAC_B64 + 1 + vlen + 1);
	if (!out)
		return -ENOMEM;
	memcpy(out, TAG, TAG_LEN);
	memcpy(out + TAG_LEN, b64, MAC_B64);
	out[TAG_LEN + MAC_B64] = ':';
	memcpy(out + TAG_LEN + MAC_B64 + 1, value, vlen + 1);
	*ret = out;
	return 0;
}

int store_record_open(const uint8_t k[STORE_RECORD_KEY_BYTES], const char *key, const char *stored,
		      const char **ret_value, const char **ret_why)
{
	unsigned char want[crypto_auth_hmacsha256_BYTES], got[crypto_auth_hmacsha256_BYTES];
	size_t n = strlen(stored), got_len = 0;
	const char *value;

	if (n > TAG_LEN + MAC_B64 + 1 + STORE_RECORD_MAX) {
		*ret_why = "too large";
		return -EBADMSG;
	}
	if (n < TAG_LEN + MAC_B64 + 1 || memcmp(stored, TAG, TAG_LEN) ||
	    stored[TAG_LEN + MAC_B64] != ':') {
		*ret_why = "not written by an agent of this cluster (no record MAC)";
		return -EBADMSG;
	}
	if (sodium_base642bin(got, sizeof(got), stored + TAG_LEN, MAC_B64, NULL, &got_len, NULL,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) ||
	    got_len != sizeof(got)) {
		*ret_why = "malformed record MAC";
		return -EBADMSG;
	}
	value = stored + TAG_LEN + MAC_B64 + 1;
	mac(k, key, value, n - (size_t)(value - stored), want);
	if (sodium_memcmp(want, got, sizeof(want))) {
		*ret_why = "record MAC does not match (another key, or another place)";
		return -EBADMSG;
	}
	*ret_value = value;
	return 0;
}

#define SIG_TAG	    "ftbpf-sig1:"
#define SIG_TAG_LEN (sizeof(SIG_TAG) - 1)
#define SIG_B64	    86 /* 64 bytes, base64url without padding */

/* What is signed: the tag, the key, the node and the value, each after its length. */
static void signed_bytes(crypto_hash_sha512_state *st, const char *key, const char *node,
			 const char *value, size_t vlen)
{
	const char *parts[3] = {key, node, value};
	size_t lens[3] = {strlen(key), strlen(node), vlen};

	crypto_hash_sha512_init(st);
	crypto_hash_sha512_update(st, (const unsigned char *)SIG_TAG, SIG_TAG_LEN);
	for (int i = 0; i < 3; i++) {
		unsigned char l[4] = {(unsigned char)(lens[i] >> 24),
				      (unsigned char)(lens[i] >> 16), (unsigned char)(lens[i] >> 8),
				      (unsigned char)lens[i]};

		crypto_hash_sha512_update(st, l, sizeof(l));
		crypto_hash_sha512_update(st, (const unsigned char *)parts[i], lens[i]);
	}
}

/* A node's name: printable, no space (it ends at the first one). */
static int node_ok(const char *node, size_t n)
{
	if (!n || n >= STORE_SIG_NODE_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (node[i] < 0x21 || node[i] > 0x7e)
			return 0;
	return 1;
}

int store_record_sign(const uint8_t sk[64], const char *node, const char *key, const char *value,
		      char **ret)
{
	unsigned char h[crypto_hash_sha512_BYTES], sig[crypto_sign_BYTES];
	crypto_hash_sha512_state st;
	size_t nl = strlen(node), vlen = strlen(value);
	char b64[SIG_B64 + 1], *out;

	if (!node_ok(node, nl))
		return -EINVAL;
	if (vlen > STORE_RECORD_MAX)
		return -E2BIG;
	signed_bytes(&st, key, node, value, vlen);
	crypto_hash_sha512_final(&st, h);
	crypto_sign_detached(sig, NULL, h, sizeof(h), sk);
	sodium_bin2base64(b64, sizeof(b64), sig, sizeof(sig),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	out = malloc(SIG_TAG_LEN + nl + 1 + SIG_B64 + 1 + vlen + 1);
	if (!out)
		return -ENOMEM;
	sprintf(out, "%s%s:%s %s", SIG_TAG, b64, node, value);
	*ret = out;
	return 0;
}

int store_record_verify(const char *key, const char *sv, store_record_pubkey_fn fn, void *ctx,
			const char **ret_value, char ret_node[STORE_SIG_NODE_LEN],
			const char **ret_why)
{
	unsigned char h[crypto_hash_sha512_BYTES], sig[crypto_sign_BYTES];
	crypto_hash_sha512_state st;
	const char *b64 = sv + SIG_TAG_LEN, *node, *space, *value;
	char name[STORE_SIG_NODE_LEN];
	const uint8_t *pub;
	size_t got = 0, nl;

	if (strncmp(sv, SIG_TAG, SIG_TAG_LEN)) {
		*ret_why = "not signed by a node (no node signature)";
		return -EBADMSG;
	}
	if (strnlen(b64, SIG_B64 + 1) < SIG_B64 + 1 || b64[SIG_B64] != ':' ||
	    !(space = strchr(node = b64 + SIG_B64 + 1, ' ')) ||
	    !node_ok(node, nl = (size_t)(space - node))) {
		*ret_why = "malformed node signature";
		return -EBADMSG;
	}
	memcpy(name, node, nl);
	name[nl] = 0;
	if (sodium_base642bin(sig, sizeof(sig), b64, SIG_B64, NULL, &got, NULL,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) ||
	    got != sizeof(sig)) {
		*ret_why = "malformed node signature";
		return -EBADMSG;
	}
	if (!(pub = fn(ctx, name))) {
		*ret_why = "signed by a node the node keys do not list";
		return -EBADMSG;
	}
	value = space + 1;
	signed_bytes(&st, key, name, value, strlen(value));
	crypto_hash_sha512_final(&st, h);
	if (crypto_sign_verify_detached(sig, h, sizeof(h), pub)) {
		*ret_why = "node signature does not match (another node, or another place)";
		return -EBADMSG;
	}
	*ret_value = value;
	memcpy(ret_node, name, nl + 1);
	return 0;
}
