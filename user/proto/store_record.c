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
