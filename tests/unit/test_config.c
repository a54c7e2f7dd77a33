/* The config module (user/lib/config.c): the config file and values, errors with file:line,
 * cross-key checks, signal names. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/config.h"

static void test_config_ok(void)
{
	struct ftbpf_config c;
	char err[256] = "";
	const char *txt = "# comment\n soft_timeout = 5 \nhard_timeout=7.5\naction = kill\n"
			  "soft_signal = SIGUSR1\nlog_max_bytes = 2M\nonly_jobs = torch:*\n";

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_parse_buffer(&c, "t.conf", txt, strlen(txt), err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(c.soft_timeout_s, 5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.hard_timeout_s, 7.5, 1e-9);
	CU_ASSERT_EQUAL(c.action, ACTION_KILL);
	CU_ASSERT_EQUAL(c.soft_signal, 10);
	CU_ASSERT_EQUAL(c.log_max_bytes, 2 << 20);
	CU_ASSERT_STRING_EQUAL(c.only_jobs, "torch:*");
}

static void test_config_errors(void)
{
	struct ftbpf_config c;
	char err[256];
	struct {
		const char *txt, *msg;
	} cases[] = {
	    {"soft_timeout = -1\n", "t.conf:1: soft_timeout: -1 is out of range"},
	    {"\n\nsoft_timeout\n", "t.conf:3: expected 'key = value'"},
	    {"bogus = 1\n", "t.conf:1: unknown key 'bogus'"},
	    {"soft_timeout = 1e999\n", "t.conf:1: soft_timeout: '1e999' is not a number"},
	    {"log_keep = 1.5\n", "t.conf:1: log_keep: '1.5' is not a whole number"},
	    {"soft_signal = SIGFOO\n", "t.conf:1: soft_signal: 'SIGFOO' is not a signal"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_defaults(&c);
		err[0] = 0;
		CU_ASSERT_EQUAL(config_parse_buffer(&c, "t.conf", cases[i].txt,
						    strlen(cases[i].txt), err, sizeof(err)),
				-EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].msg));
		if (!strstr(err, cases[i].msg))
			printf("\n  got: %s\n", err);
	}
}

/* Cross-key checks run once, on the final configuration (file, then flags): a file's
 * hard_timeout that a flag's soft_timeout makes valid is valid. */
static void test_config_cross_checks(void)
{
	struct ftbpf_config c;
	char err[256];
	const char *f = "hard_timeout = 30\n";

	config_defaults(&c); /* soft 60 */
	CU_ASSERT_EQUAL(config_parse_buffer(&c, "t.conf", f, strlen(f), err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), -EINVAL); /* 30 < 60 */
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "hard_timeout (30) is shorter"));
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout", "10", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), 0);
	CU_ASSERT_FALSE(c.soft_auto);
	/* soft_timeout auto: at most soft_timeout_max (the hard timeout is checked against it) */
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout", "auto", err, sizeof(err)), 0);
	CU_ASSERT_TRUE(c.soft_auto);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), -EINVAL); /* 30 < 60 */
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "soft_timeout_max"));
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout_max", "20", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(config_soft_ceiling(&c), 20, 1e-9);
	{ /* one wording of the soft timeout for every tool */
		char w[48];

		CU_ASSERT_STRING_EQUAL(config_soft_words(1, 60, w, sizeof(w)),
				       "auto (at most 60s)");
		CU_ASSERT_STRING_EQUAL(config_soft_words(0, 10, w, sizeof(w)), "10s");
		CU_ASSERT_STRING_EQUAL(config_soft_words(0, 2.5, w, sizeof(w)), "2.5s");
	}
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout", "sometimes", err, sizeof(err)), -EINVAL);
	CU_ASSERT_TRUE(c.soft_auto); /* unchanged by a bad value */
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout", "10", err, sizeof(err)), 0);
	CU_ASSERT_FALSE(c.soft_auto);
	/* mesh addresses are checked before anything is loaded */
	CU_ASSERT_EQUAL(config_set(&c, "bind", "10.0.0.1:99999", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_set(&c, "key_file", "/k", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "bind"));
	CU_ASSERT_EQUAL(config_set(&c, "bind", "10.0.0.1:7946", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_set(&c, "peers", "10.0.0.2:7946,nohost", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "nohost"));
}

static void test_config_long_line_and_nul(void)
{
	struct ftbpf_config c;
	char err[256], big[2000];

	memset(big, 'a', sizeof(big));
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_parse_buffer(&c, "t", big, sizeof(big), err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "line longer"));
	CU_ASSERT_EQUAL(config_parse_buffer(&c, "t", "a\0b\n", 4, err, sizeof(err)), -EINVAL);
}

static void test_signals(void)
{
	CU_ASSERT_EQUAL(config_parse_signal("TERM"), 15);
	CU_ASSERT_EQUAL(config_parse_signal("sigkill"), 9);
	CU_ASSERT_EQUAL(config_parse_signal("10"), 10);
	CU_ASSERT_EQUAL(config_parse_signal("0"), -EINVAL);
	CU_ASSERT_EQUAL(config_parse_signal("65"), -EINVAL);
	CU_ASSERT_EQUAL(config_parse_signal(""), -EINVAL);
	CU_ASSERT_STRING_EQUAL(config_signal_name(2), "INT");
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("config", NULL, NULL);
	CU_add_test(s, "config: values", test_config_ok);
	CU_add_test(s, "config: errors with file:line", test_config_errors);
	CU_add_test(s, "config: cross checks after the flags", test_config_cross_checks);
	CU_add_test(s, "config: long line, NUL", test_config_long_line_and_nul);
	CU_add_test(s, "signal names", test_signals);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
