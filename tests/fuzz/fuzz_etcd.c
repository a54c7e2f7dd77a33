/*
 * libFuzzer target: what etcd (or anything on its path) sends the agent, and decision records
 * as stored there. The first byte picks the reply kind: range, create-only txn, put, lease
 * grant, keepalive, time-to-live, a watch-stream line, or a stored record (the MAC envelope,
 * then the decision parsers on what it holds). No input may crash, leak or be taken as
 * authentic without the key; a record sealed here must open again.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decisions.h"
#include "proto/etcd_reply.h"
#include "proto/store_record.h"

static int on_kv(void *ctx, const char *k, const char *v)
{
	(void)ctx;
	return strlen(k) + strlen(v) > (2u << 20) ? -1 : 0;
}

static int on_ev(void *ctx, int put, const char *k, const char *v, int64_t rev)
{
	(void)ctx, (void)put, (void)rev;
	return strlen(k) + strlen(v) > (2u << 20) ? -1 : 0;
}

static const uint8_t *one_node(void *ctx, const char *node)
{
	static const uint8_t pub[32] = {9};

	(void)ctx;
	return node[0] == 'n' ? pub : NULL;
}

static void records(const char *s)
{
	static const uint8_t cluster[32] = {1, 2, 3};
	uint8_t k[STORE_RECORD_KEY_BYTES];
	const char *v, *why;
	char *sealed = NULL;
	struct dec_gen g;
	struct dec_ckpt c;

	store_record_key(cluster, k);
	{ /* a node's signature (node keys): never taken without the node's key */
		char node[STORE_SIG_NODE_LEN];

		if (store_record_verify("jobs/0/j/gen/1", s, one_node, NULL, &v, node, &why) == 0)
			abort();
	}
	if (store_record_open(k, "jobs/0/j/gen/1", s, &v, &why) == 0) {
		/* authentic without the sealer: only a MAC forgery could get here */
		if (strncmp(s, "ftbpf-mac1:", 11))
			abort();
		dec_gen_parse(v, &g);
		dec_ckpt_parse(v, &c);
	}
	if (store_record_seal(k, "jobs/0/j/gen/1", s, &sealed) == 0) {
		if (store_record_open(k, "jobs/0/j/gen/1", sealed, &v, &why) || strcmp(v, s))
			abort();
		/* the same record under another key is refused */
		if (store_record_open(k, "jobs/0/k/gen/1", sealed, &v, &why) == 0)
			abort();
		free(sealed);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, *existing = NULL;
	const char *what;
	struct json_object *o;
	int64_t x, y;
	size_t skipped = 0;
	int more;

	if (size < 1)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	if (data[0] % 8 == 6) {
		etcd_reply_watch_line(s, on_ev, NULL, &skipped, &what);
	} else if (data[0] % 8 == 7) {
		records(s);
	} else if ((o = json_tokener_parse(s))) {
		switch (data[0] % 8) {
		case 0:
			etcd_reply_range(o, on_kv, NULL, &x, &more, &skipped, &what);
			break;
		case 1:
			if (etcd_reply_create(o, &existing, &what) == 0 && !existing)
				abort();
			free(existing);
			break;
		case 2:
			etcd_reply_put(o, &what);
			break;
		case 3:
			etcd_reply_lease_grant(o, &x, &what);
			break;
		case 4:
			etcd_reply_keepalive(o, &what);
			break;
		case 5:
			etcd_reply_time_to_live(o, &x, &what);
			if (etcd_reply_newest(o, &x, &y, &what) == 0 && (x < 0 || x > y))
				abort(); /* a newest write past the store's own revision */
			break;
		}
		json_object_put(o);
	}
	free(s);
	return 0;
}
