/*
 * os/procfs.c's parsers: /proc/PID/stat of real and odd processes; a process's ids from
 * /proc/PID/status (the owner is the real uid; a set-user-ID program, or one with capabilities,
 * is told apart), and
 * malformed status text refused.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "os/procfs.h"

static void test_proc_stat(void)
{
	struct proc_stat st;
	const char *s =
	    "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 "
	    "1 0 5000 1000 100";

	CU_ASSERT_EQUAL(procfs_parse_stat(s, strlen(s), &st), 0);
	CU_ASSERT_EQUAL(st.state, 'S');
	CU_ASSERT_EQUAL(st.ppid, 1);
	CU_ASSERT_STRING_EQUAL(st.comm, "a (weird) name");
	CU_ASSERT_EQUAL(st.utime_ns, 250ull * (1000000000ull / sysconf(_SC_CLK_TCK)));
	CU_ASSERT_EQUAL(procfs_parse_stat("garbage", 7, &st), -EINVAL);
	CU_ASSERT_EQUAL(procfs_stat(getpid(), -1, &st), 0);
	CU_ASSERT_EQUAL(st.state, 'R');
}

static const char status_setuid[] = "Name:\tsg\nUmask:\t0022\nState:\tS (sleeping)\n"
				    "Tgid:\t4242\nPid:\t4242\nPPid:\t4200\n"
				    "Uid:\t65534\t0\t0\t0\nGid:\t65534\t65534\t65534\t65534\n"
				    "FDSize:\t64\n";

static void test_creds(void)
{
	struct proc_creds c;

	CU_ASSERT_EQUAL_FATAL(procfs_parse_creds(status_setuid, sizeof(status_setuid) - 1, &c), 0);
	CU_ASSERT_EQUAL(c.ruid, 65534);
	CU_ASSERT_EQUAL(c.euid, 0);
	CU_ASSERT_EQUAL(c.rgid, 65534);
	CU_ASSERT_TRUE(procfs_creds_elevated(&c));
	c.euid = c.suid = c.fsuid = 65534;
	CU_ASSERT_FALSE(procfs_creds_elevated(&c));
	c.egid = 0; /* set-group-ID */
	CU_ASSERT_TRUE(procfs_creds_elevated(&c));
}

/* A program with file capabilities (or ambient ones) runs with privileges its user lacks. */
static const char status_caps[] = "Name:\tping\nUid:\t1000\t1000\t1000\t1000\n"
				  "Gid:\t1000\t1000\t1000\t1000\nCapInh:\t0000000000000000\n"
				  "CapPrm:\t0000000000002000\nCapEff:\t0000000000002000\n"
				  "CapBnd:\t000001ffffffffff\n";

static void test_creds_caps(void)
{
	struct proc_creds c;

	CU_ASSERT_EQUAL_FATAL(procfs_parse_creds(status_caps, sizeof(status_caps) - 1, &c), 0);
	CU_ASSERT_EQUAL(c.cap_prm, 0x2000u);
	CU_ASSERT_EQUAL(c.cap_eff, 0x2000u);
	CU_ASSERT_TRUE(procfs_creds_elevated(&c));
	c.cap_eff = 0; /* permitted alone: it may raise them */
	CU_ASSERT_TRUE(procfs_creds_elevated(&c));
	c.cap_prm = 0;
	CU_ASSERT_FALSE(procfs_creds_elevated(&c));
	c.ruid = c.euid = c.suid = c.fsuid = 0; /* root's have them all */
	c.cap_prm = c.cap_eff = 0x1ffffffffffull;
	CU_ASSERT_FALSE(procfs_creds_elevated(&c));
	/* no capability lines (a kernel without them): none */
	CU_ASSERT_EQUAL_FATAL(procfs_parse_creds(status_setuid, sizeof(status_setuid) - 1, &c), 0);
	CU_ASSERT_EQUAL(c.cap_prm, 0);
}

static void test_creds_malformed(void)
{
	struct proc_creds c;
	static const char *bad[] = {
	    "",
	    "Uid:\t1\t2\t3\nGid:\t1\t2\t3\t4\n",
	    "Uid:\t1\t2\t3\t4\n",
	    "Uid:\tx\t2\t3\t4\nGid:\t1\t2\t3\t4\n",
	    "Uid:\t99999999999\t2\t3\t4\nGid:\t1\t2\t3\t4\n",
	    "XUid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\n",
	    "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapPrm:\tzz\n",
	    "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapEff:\t\n",
	    "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapPrm:\t00000000000000001\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(procfs_parse_creds(bad[i], strlen(bad[i]), &c), -EINVAL);
}

static void test_creds_self(void)
{
	struct proc_creds c;
	uid_t u;

	CU_ASSERT_EQUAL_FATAL(procfs_creds(getpid(), &c), 0);
	CU_ASSERT_EQUAL(c.ruid, getuid());
	CU_ASSERT_EQUAL(c.euid, geteuid());
	CU_ASSERT_EQUAL(procfs_uid(getpid(), &u), 0);
	CU_ASSERT_EQUAL(u, getuid());
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("procfs", NULL, NULL);
	CU_add_test(s, "/proc/PID/stat", test_proc_stat);
	CU_add_test(s, "ids from status: real uid, set-user-ID told apart", test_creds);
	CU_add_test(s, "capabilities: a program with file capabilities is privileged",
		    test_creds_caps);
	CU_add_test(s, "malformed status refused", test_creds_malformed);
	CU_add_test(s, "our own ids", test_creds_self);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
