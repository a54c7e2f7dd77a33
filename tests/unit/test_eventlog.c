/* The event log (user/agent/eventlog.c): rotation, modes, refusing planted links and open
 * directories, and resuming the sequence from the file. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/eventlog.h"
#include "os/log.h"

static int count_cb(void *ctx, const char *line, int64_t uid, uint64_t seq)
{
	(void)line;
	(void)uid;
	(void)seq;
	(*(int *)ctx)++;
	return 0;
}

static void test_eventlog_rotation(void)
{
	char dir[] = "/tmp/ftbpf-ut-XXXXXX", path[128], p1[160], p2[160], p3[160];
	struct eventlog *el;
	struct stat st;
	int n = 0;

	struct eventlog_opts eo = {.max_bytes = 4096, .keep = 2, .mem_keep = 16};
	char err[300], link[160];

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ev.jsonl", dir);
	eo.path = path;
	/* a symbolic link planted where the log goes is refused, its target untouched */
	snprintf(link, sizeof(link), "%s/planted", dir);
	CU_ASSERT_EQUAL(symlink(link, path), 0);
	CU_ASSERT_PTR_NULL(eventlog_new(&eo, err, sizeof(err)));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "symbolic link"));
	CU_ASSERT_NOT_EQUAL(access(link, F_OK), 0);
	unlink(path);
	/* a directory others can write is refused */
	chmod(dir, 01777);
	CU_ASSERT_PTR_NULL(eventlog_new(&eo, err, sizeof(err)));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "writable by other users"));
	chmod(dir, 0700);
	el = eventlog_new(&eo, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(el);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600); /* root's alone: it holds kernel stacks */
	for (int i = 0; i < 200; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "type", json_object_new_string("test"));
		json_object_object_add(o, "i", json_object_new_int(i));
		eventlog_emit(el, o);
	}
	snprintf(p1, sizeof(p1), "%s.1", path);
	snprintf(p2, sizeof(p2), "%s.2", path);
	snprintf(p3, sizeof(p3), "%s.3", path);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_TRUE(st.st_size < 4096);
	CU_ASSERT_EQUAL(stat(p1, &st), 0);
	CU_ASSERT_EQUAL(stat(p2, &st), 0);
	CU_ASSERT_NOT_EQUAL(stat(p3, &st), 0); /* keep = 2 */
	eventlog_foreach(el, 0, count_cb, &n);
	CU_ASSERT_EQUAL(n, 16);
	CU_ASSERT_EQUAL(eventlog_count(el), 200u);
	eventlog_free(el);
	CU_ASSERT_EQUAL(stat(p1, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
	/* a restarted agent continues the sequence from the file */
	el = eventlog_new(&eo, err, sizeof(err));
	CU_ASSERT_EQUAL(eventlog_load_tail(el), 0);
	CU_ASSERT_EQUAL(eventlog_count(el), 200u);
	eventlog_free(el);
	unlink(path);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	log_set_level(LOG_ERR); /* the event log echoes events at info level */
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("eventlog", NULL, NULL);
	CU_add_test(s, "event log rotation and resume", test_eventlog_rotation);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
