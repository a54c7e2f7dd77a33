/* Container and pod from /proc/PID/cgroup text (user/lib/container.c), as the runtimes and
 * cgroup drivers write it. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <string.h>

#include "lib/container.h"

#define CID "3f5e1c2ab7d84e6f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f"

static int parse(const char *text, struct container_id *c)
{
	return container_parse_cgroup(text, strlen(text), c);
}

static void test_kubernetes(void)
{
	struct container_id c;

	/* cgroup v2, systemd driver, containerd */
	CU_ASSERT_EQUAL(parse("0::/kubepods.slice/kubepods-burstable.slice/"
			      "kubepods-burstable-pod5a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/"
			      "cri-containerd-" CID ".scope\n",
			      &c),
			0);
	CU_ASSERT_STRING_EQUAL(c.pod_uid, "5a1b2c3d-4e5f-6789-abcd-ef0123456789");
	CU_ASSERT_STRING_EQUAL(c.id, CID);
	CU_ASSERT_STRING_EQUAL(c.runtime, "containerd");
	/* cgroup v1, cgroupfs driver: bare id, runtime unknown */
	CU_ASSERT_EQUAL(
	    parse("12:pids:/kubepods/besteffort/pod5a1b2c3d-4e5f-6789-abcd-ef0123456789/" CID
		  "\n11:memory:/kubepods/besteffort/"
		  "pod5a1b2c3d-4e5f-6789-abcd-ef0123456789/" CID "\n",
		  &c),
	    0);
	CU_ASSERT_STRING_EQUAL(c.pod_uid, "5a1b2c3d-4e5f-6789-abcd-ef0123456789");
	CU_ASSERT_STRING_EQUAL(c.id, CID);
	CU_ASSERT_STRING_EQUAL(c.runtime, "");
	/* CRI-O */
	CU_ASSERT_EQUAL(
	    parse("0::/kubepods.slice/kubepods-pod5a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/"
		  "crio-" CID ".scope",
		  &c),
	    0);
	CU_ASSERT_STRING_EQUAL(c.runtime, "cri-o");
}

static void test_docker_and_none(void)
{
	struct container_id c;

	CU_ASSERT_EQUAL(parse("0::/system.slice/docker-" CID ".scope\n", &c), 0);
	CU_ASSERT_STRING_EQUAL(c.id, CID);
	CU_ASSERT_STRING_EQUAL(c.runtime, "docker");
	CU_ASSERT_STRING_EQUAL(c.pod_uid, "");
	CU_ASSERT_EQUAL(parse("0::/user.slice/user-1000.slice/session-3.scope\n", &c), -ENOENT);
	CU_ASSERT_EQUAL(parse("0::/\n", &c), -ENOENT);
	CU_ASSERT_EQUAL(parse("", &c), -ENOENT);
	CU_ASSERT_EQUAL(parse("garbage without colons", &c), -ENOENT);
	/* not quite: a short id, a podman-looking name, a uid one character short */
	CU_ASSERT_EQUAL(parse("0::/system.slice/docker-3f5e1c2a.scope", &c), -ENOENT);
	CU_ASSERT_EQUAL(parse("0::/machine.slice/podman-1234.scope", &c), -ENOENT);
	CU_ASSERT_EQUAL(parse("0::/kubepods/pod5a1b2c3d-4e5f-6789-abcd-ef012345678/x", &c),
			-ENOENT);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("container", NULL, NULL);
	CU_add_test(s, "Kubernetes pods: systemd and cgroupfs drivers, containerd, CRI-O",
		    test_kubernetes);
	CU_add_test(s, "Docker, and processes in no container", test_docker_and_none);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
