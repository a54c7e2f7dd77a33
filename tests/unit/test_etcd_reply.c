/*
 * proto/etcd_reply.c (etcd's replies, parsed defensively) and proto/store_record.c (decision
 * records MACed with the cluster key): what etcd sends is read; what it never sends (a null
 * watch type, a kv that is not an object, bad base64, a key or value with a NUL) is -EPROTO;
 * a record opens only under its own key, with the key that sealed it.
 */
#include <CUnit/Basic.h>
#include <sodium.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/etcd_reply.h"
#include "lib/decisions.h"
#include "proto/store_record.h"

static int nkv;
static char last[256];

static int on_kv(void *ctx, const char *k, const char *v)
{
	(void)ctx;
	nkv++;
	snprintf(last, sizeof(last), "%s=%s", k, v);
	return 0;
}

static int on_ev(void *ctx, int put, const char *k, const char *v, int64_t rev)
{
	(void)ctx;
	nkv++;
	snprintf(last, sizeof(last), "%s %s=%s @%lld", put ? "put" : "del", k, v, (long long)rev);
	return 0;
}

static size_t skipped;
static int more;

static int range(const char *json, int64_t *rev)
{
	struct json_object *o = json_tokener_parse(json);
	const char *what = "";
	int r;

	skipped = 0;
	r = o ? etcd_reply_range(o, on_kv, NULL, rev, &more, &skipped, &what) : -99;

	json_object_put(o);
	return r;
}

static void test_range(void)
{
	int64_t rev = 0;

	nkv = 0;
	CU_ASSERT_EQUAL(range("{\"header\":{\"revision\":\"12\"},\"kvs\":[{\"key\":\"YQ==\","
			      "\"value\":\"Yg==\"}]}",
			      &rev),
			0);
	CU_ASSERT_EQUAL(rev, 12);
	CU_ASSERT_STRING_EQUAL(last, "a=b");
	/* etcd leaves out an empty value, and kvs when there are none */
	CU_ASSERT_EQUAL(range("{\"header\":{\"revision\":3},\"kvs\":[{\"key\":\"YQ==\"}]}", &rev),
			0);
	CU_ASSERT_STRING_EQUAL(last, "a=");
	CU_ASSERT_EQUAL(range("{\"header\":{\"revision\":\"3\"}}", &rev), 0);
	/* what etcd never sends */
	CU_ASSERT_EQUAL(range("{\"kvs\":[]}", &rev), -EPROTO);
	CU_ASSERT_EQUAL(range("{\"header\":{\"revision\":\"x\"}}", &rev), -EPROTO);
	CU_ASSERT_EQUAL(range("{\"header\":{\"revision\":\"-4\"}}", &rev), -EPROTO);
	CU_ASSERT_EQUAL(range("{\"header\":{\"revision\":\"3\"},\"kvs\":5}", &rev), -EPROTO);
	CU_ASSERT_EQUAL(range("{\"header\":{\"revision\":\"3\"},\"kvs\":[null]}", &rev), -EPROTO);
	CU_ASSERT_EQUAL(range("{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"!!\"}]}", &rev),
			-EPROTO); /* not base64 at all: a lying reply, not someone's binary key */
	/* a value with a NUL byte ("a\0b") is not text: left out and counted, and the other
	 * keys are read (one bad value must not hide them all) */
	nkv = 0;
	CU_ASSERT_EQUAL(
	    range("{\"header\":{\"revision\":\"3\"},\"more\":true,\"kvs\":[{\"key\":"
		  "\"YQ==\",\"value\":\"YQBi\"},{\"key\":\"Yg==\",\"value\":\"Yw==\"}]}",
		  &rev),
	    0);
	CU_ASSERT_EQUAL(skipped, 1);
	CU_ASSERT_EQUAL(nkv, 1);
	CU_ASSERT_EQUAL(more, 1);
	CU_ASSERT_EQUAL(range("[1,2]", &rev), -EPROTO);
}

static void test_create(void)
{
	const char *what;
	char *existing = NULL;
	struct json_object *won = json_tokener_parse("{\"succeeded\":true}");
	struct json_object *lost =
	    json_tokener_parse("{\"header\":{\"revision\":\"3\"},\"responses\":[{\"response_"
			       "range\":{\"kvs\":[{\"key\":"
			       "\"YQ==\",\"value\":\"Yg==\"}]}}]}");
	struct json_object *odd = json_tokener_parse("{\"succeeded\":\"yes\",\"responses\":[5]}");

	CU_ASSERT_EQUAL(etcd_reply_create(won, &existing, &what), 1);
	CU_ASSERT_EQUAL(etcd_reply_create(lost, &existing, &what), 0);
	CU_ASSERT_STRING_EQUAL(existing, "b");
	free(existing);
	CU_ASSERT_EQUAL(etcd_reply_create(odd, &existing, &what), -EPROTO);
	CU_ASSERT_PTR_NULL(existing);
	json_object_put(won);
	json_object_put(lost);
	json_object_put(odd);
}

static void test_leases(void)
{
	const char *what;
	int64_t x;
	struct json_object *g = json_tokener_parse("{\"ID\":\"7587\",\"TTL\":\"5\"}");
	struct json_object *neg = json_tokener_parse("{\"ID\":-5}");
	struct json_object *ka = json_tokener_parse("{\"result\":{\"ID\":\"1\",\"TTL\":\"5\"}}");
	struct json_object *gone = json_tokener_parse("{\"result\":{\"ID\":\"1\"}}");
	struct json_object *ttl =
	    json_tokener_parse("{\"header\":{\"revision\":\"3\"},\"ID\":\"1\",\"TTL\":\"-1\"}");

	CU_ASSERT_EQUAL(etcd_reply_lease_grant(g, &x, &what), 0);
	CU_ASSERT_EQUAL(x, 7587);
	CU_ASSERT_EQUAL(etcd_reply_lease_grant(neg, &x, &what), -EPROTO);
	CU_ASSERT_EQUAL(etcd_reply_keepalive(ka, &what), 0);
	CU_ASSERT_EQUAL(etcd_reply_keepalive(gone, &what), -ENOENT);
	CU_ASSERT_EQUAL(etcd_reply_keepalive(g, &what), -EPROTO);
	CU_ASSERT_EQUAL(etcd_reply_time_to_live(ttl, &x, &what), 0);
	CU_ASSERT_EQUAL(x, -1);
	json_object_put(g);
	json_object_put(neg);
	json_object_put(ka);
	json_object_put(gone);
	json_object_put(ttl);
}

/* The newest write under a prefix (the watch's check, store_etcd.c: check_behind). */
static void test_newest(void)
{
	const char *what;
	int64_t mod, rev;
	struct json_object *one = json_tokener_parse("{\"header\":{\"revision\":\"90\"},\"kvs\":[{"
						     "\"key\":\"YQ==\",\"mod_revision\":\"88\"}],"
						     "\"more\":true,\"count\":\"7\"}");
	struct json_object *none = json_tokener_parse("{\"header\":{\"revision\":\"5\"}}");
	struct json_object *future =
	    json_tokener_parse("{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":\"YQ==\",\"mod_"
			       "revision\":\"6\"}]}");
	struct json_object *two =
	    json_tokener_parse("{\"header\":{\"revision\":\"9\"},\"kvs\":[{\"mod_revision\":\"3\"},"
			       "{\"mod_revision\":\"4\"}]}");
	struct json_object *nohdr = json_tokener_parse("{\"kvs\":[]}");
	struct json_object *badmod = json_tokener_parse(
	    "{\"header\":{\"revision\":\"9\"},\"kvs\":[{\"mod_revision\":\"x\"}]}");

	CU_ASSERT_EQUAL(etcd_reply_newest(one, &mod, &rev, &what), 0);
	CU_ASSERT(mod == 88 && rev == 90);
	CU_ASSERT_EQUAL(etcd_reply_newest(none, &mod, &rev, &what), 0); /* an empty prefix */
	CU_ASSERT(mod == 0 && rev == 5);
	CU_ASSERT_EQUAL(etcd_reply_newest(future, &mod, &rev, &what), -EPROTO);
	CU_ASSERT_EQUAL(mod, 0);
	CU_ASSERT_EQUAL(etcd_reply_newest(two, &mod, &rev, &what), -EPROTO);
	CU_ASSERT_EQUAL(etcd_reply_newest(nohdr, &mod, &rev, &what), -EPROTO);
	CU_ASSERT_EQUAL(etcd_reply_newest(badmod, &mod, &rev, &what), -EPROTO);
	json_object_put(one);
	json_object_put(none);
	json_object_put(future);
	json_object_put(two);
	json_object_put(nohdr);
	json_object_put(badmod);
}

static void test_watch(void)
{
	const char *what;

	nkv = 0;
	CU_ASSERT_EQUAL(
	    etcd_reply_watch_line("{\"result\":{\"events\":[{\"type\":\"DELETE\",\"kv\":"
				  "{\"key\":\"YQ==\",\"mod_revision\":\"9\"}},{\"kv\":{"
				  "\"key\":\"Yg==\",\"value\":\"Yw==\"}}]}}",
				  on_ev, NULL, &skipped, &what),
	    0);
	CU_ASSERT_EQUAL(nkv, 2);
	CU_ASSERT_STRING_EQUAL(last, "put b=c @-1");
	CU_ASSERT_EQUAL(
	    etcd_reply_watch_line("{\"result\":{\"canceled\":true}}", on_ev, NULL, &skipped, &what),
	    -ESTALE);
	/* these once crashed the agent (strcmp on NULL), or are otherwise not etcd's */
	CU_ASSERT_EQUAL(etcd_reply_watch_line("{\"result\":{\"events\":[{\"type\":null,\"kv\":{"
					      "\"key\":\"YQ==\"}}]}}",
					      on_ev, NULL, &skipped, &what),
			-EPROTO);
	CU_ASSERT_EQUAL(etcd_reply_watch_line("{\"result\":{\"events\":[{\"type\":5,\"kv\":{}}]}}",
					      on_ev, NULL, &skipped, &what),
			-EPROTO);
	CU_ASSERT_EQUAL(etcd_reply_watch_line("{\"result\":{\"events\":[{\"type\":\"PUT\","
					      "\"kv\":null}]}}",
					      on_ev, NULL, &skipped, &what),
			-EPROTO);
	CU_ASSERT_EQUAL(
	    etcd_reply_watch_line("{\"result\":{\"events\":[7]}}", on_ev, NULL, &skipped, &what),
	    -EPROTO);
	CU_ASSERT_EQUAL(etcd_reply_watch_line("{garbage", on_ev, NULL, &skipped, &what), -EPROTO);
	CU_ASSERT_EQUAL(
	    etcd_reply_watch_line("{\"result\":{\"events\":\"no\"}}", on_ev, NULL, &skipped, &what),
	    -EPROTO);
}

static void test_auth(void)
{
	const char *what;
	char tok[64];
	struct json_object *ok = json_tokener_parse("{\"token\":\"abc.123\"}");
	struct json_object *sp = json_tokener_parse("{\"token\":\"a b\"}");
	struct json_object *none = json_tokener_parse("{\"token\":null}");

	CU_ASSERT_EQUAL(etcd_reply_auth(ok, tok, sizeof(tok), &what), 0);
	CU_ASSERT_STRING_EQUAL(tok, "abc.123");
	CU_ASSERT_EQUAL(etcd_reply_auth(sp, tok, sizeof(tok), &what), -EPROTO);
	CU_ASSERT_EQUAL(etcd_reply_auth(none, tok, sizeof(tok), &what), -EPROTO);
	CU_ASSERT_EQUAL(etcd_reply_auth(ok, tok, 4, &what), -EPROTO);
	json_object_put(ok);
	json_object_put(sp);
	json_object_put(none);
}

static void test_records(void)
{
	uint8_t cluster[32] = {7}, other[32] = {8}, k[STORE_RECORD_KEY_BYTES],
		k2[STORE_RECORD_KEY_BYTES];
	const char *v, *why;
	char *sealed = NULL, *bad;

	store_record_key(cluster, k);
	store_record_key(other, k2);
	CU_ASSERT_EQUAL_FATAL(store_record_seal(k, "jobs/0/j/gen/1", "{\"gen\":1}", &sealed), 0);
	CU_ASSERT_EQUAL(strncmp(sealed, "ftbpf-mac1:", 11), 0);
	CU_ASSERT_EQUAL(store_record_open(k, "jobs/0/j/gen/1", sealed, &v, &why), 0);
	CU_ASSERT_STRING_EQUAL(v, "{\"gen\":1}");
	/* moved to another job's key, or checked with another cluster's key */
	CU_ASSERT_EQUAL(store_record_open(k, "jobs/0/k/gen/1", sealed, &v, &why), -EBADMSG);
	CU_ASSERT_EQUAL(store_record_open(k2, "jobs/0/j/gen/1", sealed, &v, &why), -EBADMSG);
	/* the value changed, one bit */
	bad = strdup(sealed);
	bad[strlen(bad) - 2] ^= 1;
	CU_ASSERT_EQUAL(store_record_open(k, "jobs/0/j/gen/1", bad, &v, &why), -EBADMSG);
	free(bad);
	/* written by someone without the key: no envelope at all */
	CU_ASSERT_EQUAL(
	    store_record_open(k, "jobs/0/j/gen/1", "{\"gen\":1,\"stop\":true}", &v, &why),
	    -EBADMSG);
	CU_ASSERT_EQUAL(store_record_open(k, "jobs/0/j/gen/1", "ftbpf-mac1:short:{}", &v, &why),
			-EBADMSG);
	free(sealed);
}

static const uint8_t *pub_of(void *ctx, const char *node)
{
	const uint8_t(*pk)[32] = ctx;

	return !strcmp(node, "n1") ? pk[0] : !strcmp(node, "n2") ? pk[1] : NULL;
}

static const uint8_t *pub_by_addr(void *ctx, const char *node)
{
	const uint8_t(*pk)[32] = ctx;

	return !strcmp(node, "10.0.0.2:7946") ? pk[1] : NULL;
}

/* With the node keys, a record is signed by the node that wrote it: another node's key, a
 * node the keys do not list, another place, a changed value are refused; dec_key_node says
 * which keys belong to one node. */
static void test_signed_records(void)
{
	uint8_t pk[2][32], sk[2][64];
	char *s = NULL, node[STORE_SIG_NODE_LEN], *bad;
	const char *v, *why;

	crypto_sign_keypair(pk[0], sk[0]);
	crypto_sign_keypair(pk[1], sk[1]);
	CU_ASSERT_EQUAL_FATAL(
	    store_record_sign(sk[0], "n1", "jobs/0/j/runs/1/gen/1", "{\"by\":\"n1\"}", &s), 0);
	CU_ASSERT_EQUAL(strncmp(s, "ftbpf-sig1:", 11), 0);
	CU_ASSERT_EQUAL(strncmp(s + 11 + 86, ":n1 ", 4), 0);
	CU_ASSERT_EQUAL(store_record_verify("jobs/0/j/runs/1/gen/1", s, pub_of, pk, &v, node, &why),
			0);
	CU_ASSERT_STRING_EQUAL(v, "{\"by\":\"n1\"}");
	CU_ASSERT_STRING_EQUAL(node, "n1");
	CU_ASSERT_EQUAL(store_record_verify("jobs/0/k/runs/1/gen/1", s, pub_of, pk, &v, node, &why),
			-EBADMSG);
	bad = strdup(s);
	memcpy(bad + 11 + 87, "n2", 2); /* names n2: n2's key does not open it */
	CU_ASSERT_EQUAL(
	    store_record_verify("jobs/0/j/runs/1/gen/1", bad, pub_of, pk, &v, node, &why),
	    -EBADMSG);
	memcpy(bad + 11 + 87, "n9", 2); /* a node nobody listed */
	CU_ASSERT_EQUAL(
	    store_record_verify("jobs/0/j/runs/1/gen/1", bad, pub_of, pk, &v, node, &why),
	    -EBADMSG);
	free(bad);
	bad = strdup(s);
	bad[strlen(bad) - 2] ^= 1;
	CU_ASSERT_EQUAL(
	    store_record_verify("jobs/0/j/runs/1/gen/1", bad, pub_of, pk, &v, node, &why),
	    -EBADMSG);
	free(bad);
	CU_ASSERT_EQUAL(store_record_verify("k", "{}", pub_of, pk, &v, node, &why), -EBADMSG);
	CU_ASSERT_EQUAL(
	    store_record_verify("k", "ftbpf-sig1:short:n1 {}", pub_of, pk, &v, node, &why),
	    -EBADMSG);
	CU_ASSERT_EQUAL(store_record_sign(sk[0], "a b", "k", "{}", &bad), -EINVAL);
	free(s);
	/* a node named by its mesh address (the default) */
	CU_ASSERT_EQUAL_FATAL(
	    store_record_sign(sk[1], "10.0.0.2:7946", "jobs/0/j/launch/10.0.0.2:7946", "{}", &s),
	    0);
	CU_ASSERT_EQUAL(store_record_verify("jobs/0/j/launch/10.0.0.2:7946", s, pub_by_addr, pk, &v,
					    node, &why),
			0);
	CU_ASSERT_STRING_EQUAL(node, "10.0.0.2:7946");
	free(s);
	/* the keys one node writes */
	CU_ASSERT_STRING_EQUAL(dec_key_node("jobs/0/j/runs/1/members/n2"), "n2");
	CU_ASSERT_STRING_EQUAL(dec_key_node("jobs/0/j/launch/n3"), "n3");
	CU_ASSERT_STRING_EQUAL(
	    dec_key_node("jobs/0/j/runs/1/saved/00000000000000000001/00000000000000000002/n1"),
	    "n1");
	CU_ASSERT_PTR_NULL(dec_key_node("jobs/0/j/runs/1/out/00000000000000000001/n4"));
	CU_ASSERT_PTR_NULL(dec_key_node("jobs/0/j/runs/1/gen/00000000000000000001"));
	CU_ASSERT_PTR_NULL(
	    dec_key_node("jobs/0/j/runs/1/ckpt/00000000000000000001/00000000000000000002"));
	CU_ASSERT_PTR_NULL(dec_key_node("jobs/0/j/run/00000000000000000001"));
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("etcd_reply", NULL, NULL);
	CU_add_test(s, "range: kvs, revisions; what etcd never sends", test_range);
	CU_add_test(s, "create-only txn: won, lost with the value that stands", test_create);
	CU_add_test(s, "lease grant, keepalive, time to live", test_leases);
	CU_add_test(s, "the newest write under a prefix", test_newest);
	CU_add_test(s, "watch lines: events, canceled, null types and kvs refused", test_watch);
	CU_add_test(s, "auth tokens", test_auth);
	CU_add_test(s, "records: sealed, opened only under their key, with their key",
		    test_records);
	CU_add_test(s, "records signed by their node (node keys)", test_signed_records);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
