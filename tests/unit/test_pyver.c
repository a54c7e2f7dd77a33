/* CPython versions from file names and 3.13's debug offsets (user/lib/pyver.c), the maps lines
 * they come from (user/lib/maps.c), and the faulthandler layout of stacks (user/lib/pyfmt.c). */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <string.h>

#include "lib/maps.h"
#include "lib/pyfmt.h"
#include "lib/pyver.h"

static int ver(const char *name, struct pyver *v)
{
	memset(v, 0, sizeof(*v));
	return pyver_of_name(name, strlen(name), v);
}

static void test_names(void)
{
	struct pyver v;

	/* the shared library read "3.11." before, and was refused */
	CU_ASSERT_EQUAL(ver("libpython3.11.so.1.0", &v), 0);
	CU_ASSERT(v.major == 3 && v.minor == 11 && v.lib && !*v.flags);
	CU_ASSERT_EQUAL(ver("libpython3.12.so.1.0", &v), 0);
	CU_ASSERT(v.minor == 12 && v.lib);
	CU_ASSERT_EQUAL(ver("libpython3.13.so", &v), 0);
	CU_ASSERT(v.minor == 13);
	CU_ASSERT_EQUAL(ver("python3.13", &v), 0);
	CU_ASSERT(v.major == 3 && v.minor == 13 && !v.lib);
	CU_ASSERT_EQUAL(ver("python3.11", &v), 0);
	CU_ASSERT(v.minor == 11 && !v.lib);
	CU_ASSERT_EQUAL(ver("libpython3.11d.so", &v), 0); /* a debug build */
	CU_ASSERT(v.minor == 11 && !strcmp(v.flags, "d"));
	CU_ASSERT_EQUAL(ver("python3.13t", &v), 0); /* free-threaded: the reader refuses it */
	CU_ASSERT_STRING_EQUAL(v.flags, "t");
	CU_ASSERT_EQUAL(ver("python3.9", &v), 0);
	CU_ASSERT_EQUAL(v.minor, 9);
	/* junk */
	const char *junk[] = {"python3",
			      "python",
			      "libpython3.so",
			      "python3.11-config",
			      "python3.x",
			      "python3.",
			      "python2.7x",
			      "libpython3.11.so.x",
			      "libpython3.11",
			      "python3.11.py",
			      "xpython3.11",
			      "python3.1111",
			      "libpython3.11.so.1.",
			      "python3.11dd.so",
			      "",
			      "libcuda.so.1"};
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		CU_ASSERT_EQUAL(ver(junk[i], &v), -EINVAL);
	CU_ASSERT_EQUAL(ver("python2.7", &v), -EINVAL); /* not CPython 3 */
}

static void test_layouts(void)
{
	CU_ASSERT_PTR_NOT_NULL(pyver_layout(3, 11));
	CU_ASSERT_PTR_NOT_NULL(pyver_layout(3, 12));
	CU_ASSERT(pyver_layout(3, 13) && pyver_layout(3, 13)->from_debug_offsets);
	CU_ASSERT_PTR_NULL(pyver_layout(3, 10));
	CU_ASSERT_PTR_NULL(pyver_layout(3, 14));
	CU_ASSERT_EQUAL(pyver_layout(3, 12)->cf_current, 0); /* _PyCFrame lost use_tracing */
	CU_ASSERT_EQUAL(pyver_layout(3, 11)->cf_current, 8);
}

static void debug_offsets(uint8_t *buf, uint64_t version)
{
	uint64_t w[73] = {0};

	w[1] = version;
	w[3] = 400, w[5] = 40;		      /* runtime: size, interpreters_head */
	w[6] = 9000, w[9] = 7000;	      /* interpreter: size, threads_head */
	w[19] = 300, w[21] = 8, w[22] = 16;   /* thread: size, next, interp */
	w[23] = 72, w[24] = 144, w[25] = 152; /* current_frame, thread_id, native_thread_id */
	w[28] = 80, w[29] = 8, w[30] = 0, w[31] = 56, w[33] = 74;		     /* frame */
	w[34] = 220, w[35] = 112, w[36] = 120, w[38] = 136, w[39] = 68, w[43] = 200; /* code */
	w[64] = 40, w[65] = 16, w[66] = 32;					     /* bytes */
	w[67] = 56, w[68] = 32, w[69] = 16, w[70] = 40;				     /* unicode */
	memcpy(w, "xdebugpy", 8);
	memcpy(buf, w, sizeof(w));
}

static void test_debug_offsets(void)
{
	uint8_t buf[PYVER_DEBUG_OFFSETS_SIZE];
	struct py_layout l;
	char why[128];

	debug_offsets(buf, 0x030d01f0);
	CU_ASSERT_EQUAL(pyver_debug_offsets(buf, sizeof(buf), &l, why, sizeof(why)), 0);
	CU_ASSERT(l.rt_interp_head[0] == 40 && l.is_threads_head == 7000 && l.ts_frame == 72 &&
		  !l.cframe && l.fr_instr == 56 && l.fr_owner == 74 && l.co_code_adaptive == 200 &&
		  l.str_ascii_data == 40 && l.str_compact_data == 56 && l.owner_cstack == 3);
	debug_offsets(buf, 0x030c00f0); /* 3.12 has none: a 3.12 runtime is not read this way */
	CU_ASSERT_EQUAL(pyver_debug_offsets(buf, sizeof(buf), &l, why, sizeof(why)), -EINVAL);
	debug_offsets(buf, 0x030d01f0);
	buf[0] = 'X';
	CU_ASSERT_EQUAL(pyver_debug_offsets(buf, sizeof(buf), &l, why, sizeof(why)), -EINVAL);
	CU_ASSERT(strstr(why, "cookie") != NULL);
	debug_offsets(buf, 0x030d01f0);
	((uint64_t *)buf)[23] = 100000; /* current_frame beyond the thread state's size */
	CU_ASSERT_EQUAL(pyver_debug_offsets(buf, sizeof(buf), &l, why, sizeof(why)), -EINVAL);
	debug_offsets(buf, 0x030d01f0);
	((uint64_t *)buf)[2] = 1; /* free-threaded */
	CU_ASSERT_EQUAL(pyver_debug_offsets(buf, sizeof(buf), &l, why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(pyver_debug_offsets(buf, 100, &l, why, sizeof(why)), -EINVAL);
}

static int line(const char *s, struct maps_entry *e)
{
	return maps_parse_line(s, strlen(s), e);
}

static void test_maps(void)
{
	struct maps_entry e;
	size_t n;
	const char *b;

	CU_ASSERT_EQUAL(line("7f1c2a000000-7f1c2a021000 r-xp 00001000 fd:01 1835122    "
			     "             /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
			     &e),
			0);
	CU_ASSERT(e.start == 0x7f1c2a000000ull && e.end == 0x7f1c2a021000ull &&
		  e.offset == 0x1000 && e.dev_major == 0xfd && e.dev_minor == 1 &&
		  e.ino == 1835122 && !e.deleted && !strcmp(e.perms, "r-xp"));
	b = maps_basename(&e, &n);
	CU_ASSERT(n == strlen("libpython3.11.so.1.0") && !memcmp(b, "libpython3.11.so.1.0", n));
	/* a path with spaces, and a file removed since */
	CU_ASSERT_EQUAL(line("1000-2000 r--p 00000000 08:01 42 /tmp/a b/python3.11 (deleted)", &e),
			0);
	CU_ASSERT(e.deleted && e.path_len == strlen("/tmp/a b/python3.11"));
	CU_ASSERT_EQUAL(line("1000-2000 rw-p 00000000 00:00 0 ", &e), 0);
	CU_ASSERT(e.ino == 0 && e.path_len == 0);
	CU_ASSERT_EQUAL(
	    line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0                  [stack]", &e), 0);
	CU_ASSERT_EQUAL(line("2000-1000 r--p 00000000 08:01 42 /x", &e), -EINVAL); /* end < start */
	CU_ASSERT_EQUAL(line("1000-2000 r--q 00000000 08:01 42 /x", &e), -EINVAL);
	CU_ASSERT_EQUAL(line("1000-2000 r--p 00000000 08:01 /x", &e), -EINVAL);
	CU_ASSERT_EQUAL(line("11111111111111111-2000 r--p 0 08:01 1 /x", &e), -EINVAL);
	CU_ASSERT_EQUAL(line("", &e), -EINVAL);
}

static char out[2048];

static void collect(void *ctx, const char *l)
{
	(void)ctx;
	strncat(out, l, sizeof(out) - strlen(out) - 2);
	strcat(out, "\n");
}

static void test_faulthandler_layout(void)
{
	struct json_object *t = json_tokener_parse(
	    "[{\"thread_id\": \"0x7f3a1c2b5740\", \"tid\": 12, \"name\": \"python3\", \"stack\": ["
	    "{\"file\": \"train.py\", \"line\": 14, \"function\": \"load_batch\"},"
	    "{\"file\": \"train.py\", \"line\": -1, \"function\": \"main\"}]},"
	    "{\"thread_id\": \"0x1\", \"truncated\": true, \"stack\": ["
	    "{\"file\": \"a\\u001b[2Jb.py\", \"line\": 3, \"function\": \"f\"}]}]");

	out[0] = 0;
	CU_ASSERT_EQUAL(pyfmt_lines(t, collect, NULL), 2);
	CU_ASSERT_STRING_EQUAL(out, "Thread 0x00007f3a1c2b5740 (most recent call first):\n"
				    "  File \"train.py\", line 14 in load_batch\n"
				    "  File \"train.py\", line ??? in main\n"
				    "\n"
				    "Thread 0x0000000000000001 (most recent call first):\n"
				    "  File \"a?[2Jb.py\", line 3 in f\n"
				    "  ...\n");
	json_object_put(t);
	CU_ASSERT_EQUAL(pyfmt_lines(NULL, collect, NULL), 0);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("pyver", NULL, NULL);
	CU_add_test(s, "CPython versions from real file names, and junk", test_names);
	CU_add_test(s, "layouts of 3.11, 3.12, 3.13", test_layouts);
	CU_add_test(s, "3.13's _Py_DebugOffsets, checked", test_debug_offsets);
	CU_add_test(s, "/proc/PID/maps lines", test_maps);
	CU_add_test(s, "faulthandler's layout", test_faulthandler_layout);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
