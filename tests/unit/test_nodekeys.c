/* The cluster's node keys file (lib/nodekeys.c): nodes by name and address; malformed lines,
 * duplicates, an empty file refused with the line that is wrong. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/nodekeys.h"

#define K1 "0101010101010101010101010101010101010101010101010101010101010101"
#define K2 "02020202020202020202020202020202020202020202020202020202020202Ab"

static void test_parse(void)
{
	const char text[] = "# the cluster\n"
			    "node1 10.0.0.1:7946 " K1 "\n"
			    "\n"
			    "  node2\t10.0.0.2:7946   " K2 "  \r\n";
	struct nodekeys k;
	struct mesh_addr a = {0x0a000002, 7946};
	char err[128] = "";
	const struct nodekey *n;

	CU_ASSERT_EQUAL_FATAL(nodekeys_parse(text, sizeof(text) - 1, &k, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(k.n, 2);
	n = nodekeys_by_name(&k, "node1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_EQUAL(n->addr.ip, 0x0a000001);
	CU_ASSERT_EQUAL(n->pub[0], 1);
	n = nodekeys_by_addr(&k, &a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_STRING_EQUAL(n->name, "node2");
	CU_ASSERT_EQUAL(n->pub[31], 0xab);
	CU_ASSERT_PTR_NULL(nodekeys_by_name(&k, "node3"));
	a.port = 1;
	CU_ASSERT_PTR_NULL(nodekeys_by_addr(&k, &a));
	nodekeys_free(&k);
	nodekeys_free(&k); /* twice: harmless */
}

static void test_refused(void)
{
	static const char *bad[] = {
	    "",
	    "# nothing\n",
	    "node1 10.0.0.1:7946\n",
	    "node1 10.0.0.1:7946 " K1 " extra\n",
	    "node1 10.0.0.1 " K1 "\n",
	    "node1 10.0.0.1:7946 0101\n",
	    "node1 10.0.0.1:7946 " K1 "zz\n",
	    "no/de 10.0.0.1:7946 " K1 "\n",
	    "node1 10.0.0.1:7946 " K1 "\nnode1 10.0.0.2:7946 " K2 "\n",
	    "node1 10.0.0.1:7946 " K1 "\nnode2 10.0.0.1:7946 " K2 "\n",
	    "node1 10.0.0.1:7946 " K1 "\nnode2 10.0.0.2:7946 " K1 "\n",
	    "a-very-long-node-name-over-31-characters 10.0.0.1:7946 " K1 "\n",
	};
	struct nodekeys k;
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CU_ASSERT_EQUAL(nodekeys_parse(bad[i], strlen(bad[i]), &k, err, sizeof(err)),
				-EINVAL);
		CU_ASSERT(!strncmp(err, "line ", 5));
	}
	/* a NUL inside */
	CU_ASSERT_EQUAL(nodekeys_parse("node1 10.0.0.1:7946 \0" K1, 85, &k, err, sizeof(err)),
			-EINVAL);
}

static void test_hex(void)
{
	uint8_t b[NODEKEY_BYTES];

	CU_ASSERT_EQUAL(nodekeys_hex(K2, 64, b), 0);
	CU_ASSERT_EQUAL(b[0], 2);
	CU_ASSERT_EQUAL(nodekeys_hex(K2, 63, b), -EINVAL);
	CU_ASSERT_EQUAL(nodekeys_hex("g" K1, 64, b), -EINVAL);
}

int main(void)
{
	CU_pSuite s;
	int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("nodekeys", NULL, NULL);
	CU_add_test(s, "the file: by name, by address", test_parse);
	CU_add_test(s, "malformed, duplicated, empty: refused", test_refused);
	CU_add_test(s, "hex keys", test_hex);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails;
}
