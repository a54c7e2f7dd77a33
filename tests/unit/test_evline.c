/* One short line per event (lib/evline.c): what a terminal and the journal's MESSAGE get. */
#include <CUnit/Basic.h>
#include <json-c/json.h>
#include <string.h>

#include "lib/evline.h"

static int line_of(const char *json, char *buf, size_t len)
{
	struct json_object *o = json_tokener_parse(json);
	int p = evline_format(o, buf, len);

	json_object_put(o);
	return p;
}

static void test_hang(void)
{
	char b[EVLINE_MAX];
	int p =
	    line_of("{\"type\":\"hang\",\"job\":\"torch:127.0.0.1:29500@n1\",\"uid\":0,"
		    "\"no_progress_s\":10.04,\"culprit_ranks\":[1],\"culprits\":[42],"
		    "\"why\":\"rank 1 is where no other rank waits: blocked in clock_nanosleep\","
		    "\"ranks\":[{\"pid\":41,\"kernel_stack\":[\"a\",\"b\"]}]}",
		    b, sizeof(b));

	CU_ASSERT_EQUAL(p, EVLINE_WARNING);
	CU_ASSERT_STRING_EQUAL(b, "hang job torch:127.0.0.1:29500@n1: no progress for 10.0s, "
				  "culprit rank 1; rank 1 is where no other rank waits: blocked "
				  "in clock_nanosleep");
	CU_ASSERT_PTR_NULL(strchr(b, '{'));
}

static void test_exit_and_action(void)
{
	char b[EVLINE_MAX];

	CU_ASSERT_EQUAL(line_of("{\"type\":\"exit\",\"job\":\"j\",\"rank\":2,\"pid\":7,"
				"\"comm\":\"python3\",\"signal\":9,\"signal_name\":\"KILL\","
				"\"exit_code\":null,\"sender_pid\":99,\"sender_comm\":\"kill\"}",
				b, sizeof(b)),
			EVLINE_INFO);
	CU_ASSERT_STRING_EQUAL(b, "exit job j rank 2 pid 7 (python3): signal_name KILL, "
				  "sender_comm kill, sender_pid 99");
	CU_ASSERT_EQUAL(line_of("{\"type\":\"action\",\"job\":\"j\",\"rank\":-1,\"pid\":7,"
				"\"action\":\"hard_timeout\",\"signal_name\":\"TERM\","
				"\"result\":\"sent\"}",
				b, sizeof(b)),
			EVLINE_NOTICE);
	CU_ASSERT_STRING_EQUAL(b, "action job j pid 7: action hard_timeout, signal_name TERM, "
				  "result sent");
	CU_ASSERT_EQUAL(line_of("{\"type\":\"child\",\"pid\":8}", b, sizeof(b)), EVLINE_DEBUG);
	/* NCCL's RAS after a hang: a notice, with why it could not be asked */
	CU_ASSERT_EQUAL(line_of("{\"type\":\"nccl_ras\",\"job\":\"j\",\"run\":1,"
				"\"error\":\"nothing listens on 127.0.0.1:28028\"}",
				b, sizeof(b)),
			EVLINE_NOTICE);
	CU_ASSERT_STRING_EQUAL(b, "nccl_ras job j: error nothing listens on 127.0.0.1:28028");
}

/* A long why is cut with "...", never past the limit, never with a newline in it. */
static void test_long_and_odd(void)
{
	char why[3000], json[3200], b[EVLINE_MAX], small[16];

	memset(why, 'x', sizeof(why) - 1);
	why[sizeof(why) - 1] = 0;
	why[10] = '\\';
	why[11] = 'n';
	snprintf(json, sizeof(json), "{\"type\":\"job_failed\",\"job\":\"a\\nb\",\"why\":\"%s\"}",
		 why);
	CU_ASSERT_EQUAL(line_of(json, b, sizeof(b)), EVLINE_WARNING);
	CU_ASSERT_EQUAL(strlen(b), EVLINE_MAX - 1);
	CU_ASSERT_STRING_EQUAL(b + strlen(b) - 3, "...");
	CU_ASSERT_PTR_NULL(strchr(b, '\n'));
	CU_ASSERT_EQUAL(strncmp(b, "job_failed job a b: ", 20), 0);
	line_of(json, small, sizeof(small));
	CU_ASSERT_EQUAL(strlen(small), sizeof(small) - 1);
	/* not an object, no type, nothing */
	CU_ASSERT_EQUAL(line_of("[1,2]", b, sizeof(b)), EVLINE_INFO);
	CU_ASSERT_STRING_EQUAL(b, "");
	line_of("{\"pid\":3}", b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "event pid 3");
	CU_ASSERT_EQUAL(evline_format(NULL, b, 0), EVLINE_INFO);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("evline", NULL, NULL);
	CU_add_test(s, "a hang in one line", test_hang);
	CU_add_test(s, "an exit, an action", test_exit_and_action);
	CU_add_test(s, "long and odd events", test_long_and_odd);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
