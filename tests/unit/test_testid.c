/* pytest test ids from ftbpf-ci (ci/testid.c): rootdir-relative, and JUnit's names. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ci/testid.h"

static char top[64];

static void put(const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	f = fopen(p, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

static void sub(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	CU_ASSERT_EQUAL(mkdir(p, 0755), 0);
}

static void test_rootdir(void)
{
	char file[256], cwd[256], root[4096], want[256], id[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(strcpy(top, "/tmp/test_testid.XXXXXX")));
	sub("a");
	sub("a/tests");
	snprintf(file, sizeof(file), "%s/a/tests/test_io.py", top);
	/* no ini file: run from a/, the id is relative to a/ (pytest from the project) */
	snprintf(cwd, sizeof(cwd), "%s/a", top);
	testid_rootdir(file, cwd, root, sizeof(root));
	CU_ASSERT_STRING_EQUAL(root, cwd);
	testid_make(file, "test_reads", root, id, sizeof(id));
	CU_ASSERT_STRING_EQUAL(id, "tests/test_io.py::test_reads");
	/* run from elsewhere with the file's path: its directory (pytest /abs/test_io.py) */
	testid_rootdir(file, "/nonexistent", root, sizeof(root));
	snprintf(want, sizeof(want), "%s/a/tests", top);
	CU_ASSERT_STRING_EQUAL(root, want);
	testid_make(file, "test_reads", root, id, sizeof(id));
	CU_ASSERT_STRING_EQUAL(id, "test_io.py::test_reads");
	/* a pyproject.toml without pytest's section is no rootdir; with it, it is */
	put("pyproject.toml", "[project]\nname = \"x\"\n");
	testid_rootdir(file, cwd, root, sizeof(root));
	CU_ASSERT_STRING_EQUAL(root, cwd);
	put("pyproject.toml", "[tool.pytest.ini_options]\naddopts = \"-q\"\n");
	testid_rootdir(file, cwd, root, sizeof(root));
	CU_ASSERT_STRING_EQUAL(root, top);
	testid_make(file, "test_reads", root, id, sizeof(id));
	CU_ASSERT_STRING_EQUAL(id, "a/tests/test_io.py::test_reads");
	/* a nearer pytest.ini wins, whatever it holds */
	put("a/pytest.ini", "");
	testid_rootdir(file, NULL, root, sizeof(root));
	CU_ASSERT_STRING_EQUAL(root, cwd);
	/* a path outside the rootdir stays as it is */
	testid_make("/elsewhere/test_x.py", "t", cwd, id, sizeof(id));
	CU_ASSERT_STRING_EQUAL(id, "/elsewhere/test_x.py::t");
	/* not absolute: no rootdir */
	testid_rootdir("test_x.py", cwd, root, sizeof(root));
	CU_ASSERT_STRING_EQUAL(root, "");
	snprintf(id, sizeof(id), "rm -rf '%s'", top);
	CU_ASSERT_EQUAL(system(id), 0);
}

static void test_junit_names(void)
{
	char c[64], n[64];

	testid_junit("tests/test_io.py::test_reads", c, sizeof(c), n, sizeof(n));
	CU_ASSERT_STRING_EQUAL(c, "tests.test_io");
	CU_ASSERT_STRING_EQUAL(n, "test_reads");
	testid_junit("test_io.py::TestX::test_y", c, sizeof(c), n, sizeof(n));
	CU_ASSERT_STRING_EQUAL(c, "test_io.TestX");
	CU_ASSERT_STRING_EQUAL(n, "test_y");
	testid_junit("make check", c, sizeof(c), n, sizeof(n));
	CU_ASSERT_STRING_EQUAL(c, "ftbpf-ci");
	CU_ASSERT_STRING_EQUAL(n, "make check");
	testid_junit("a_very_long_directory_name/test_file_with_a_long_name.py::t", c, 16, n,
		     sizeof(n));
	CU_ASSERT_EQUAL(strlen(c), 15);
	CU_ASSERT_STRING_EQUAL(n, "t");
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("testid", NULL, NULL);
	CU_add_test(s, "rootdir-relative ids, as pytest's", test_rootdir);
	CU_add_test(s, "JUnit classname and name", test_junit_names);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
