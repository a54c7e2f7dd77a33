/* Kernel stacks as text frames: /proc/PID/stack lines parsed (with and without their address
 * prefix) as the agent's reports always split them (strtok on newlines), the text's limits,
 * and the JSON array. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kstack.h"

/* The frames as the reports split them before lib/kstack.c: strtok_r on "\n", then (strip)
 * what follows the first space. Joined with '|' into out. */
static void split_reference(const char *text, int strip, char *out, size_t len)
{
	char buf[KSTACK_TEXT * 2], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", text);
	out[0] = 0;
	for (char *f = strtok_r(buf, "\n", &save); f; f = strtok_r(NULL, "\n", &save)) {
		char *sp = strip ? strchr(f, ' ') : NULL;

		strncat(out, sp ? sp + 1 : f, len - strlen(out) - 1);
		strncat(out, "|", len - strlen(out) - 1);
	}
}

static void joined(const struct kstack *ks, char *out, size_t len)
{
	out[0] = 0;
	for (const char *f = kstack_next(ks, NULL); f; f = kstack_next(ks, f)) {
		strncat(out, f, len - strlen(out) - 1);
		strncat(out, "|", len - strlen(out) - 1);
	}
}

static int count(const struct kstack *ks)
{
	int n = 0;

	for (const char *f = kstack_next(ks, NULL); f; f = kstack_next(ks, f))
		n++;
	return n;
}

static void test_proc_lines(void)
{
	struct kstack ks;
	char got[8192];

	kstack_init(&ks);
	CU_ASSERT_EQUAL(count(&ks), 0);
	CU_ASSERT_PTR_NULL(kstack_next(&ks, NULL));
	CU_ASSERT_EQUAL(kstack_parse_proc(&ks,
					  "[<0>] futex_wait_queue+0x60/0x90\n"
					  "[<0>] futex_wait+0x185/0x270\n\n"
					  "[<0>] do_syscall_64+0x5b/0x80",
					  1),
			0);
	CU_ASSERT_EQUAL(ks.n, 3);
	joined(&ks, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "futex_wait_queue+0x60/0x90|futex_wait+0x185/0x270|"
				    "do_syscall_64+0x5b/0x80|");
	/* unstripped: the lines as they are; a line without a space stays whole when stripped */
	kstack_init(&ks);
	CU_ASSERT_EQUAL(kstack_parse_proc(&ks, "\n[<0>] a+0x1/0x2\nnospace\n", 0), 0);
	joined(&ks, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "[<0>] a+0x1/0x2|nospace|");
	kstack_init(&ks);
	CU_ASSERT_EQUAL(kstack_parse_proc(&ks, "nospace\ntrailing \n", 1), 0);
	CU_ASSERT_EQUAL(ks.n, 2);
	joined(&ks, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "nospace||"); /* an empty frame is a frame */
	kstack_init(&ks);
	CU_ASSERT_EQUAL(kstack_parse_proc(&ks, "", 1), 0);
	CU_ASSERT_EQUAL(ks.n, 0);
}

/* Random texts of a full /proc read (at most 4095 bytes): the same frames as the reference
 * split, and they always fit. */
static void test_same_as_strtok(void)
{
	static const char alphabet[] = "ab[<0>] \n\n+x";
	char text[KSTACK_TEXT], want[KSTACK_TEXT * 3], got[KSTACK_TEXT * 3];
	struct kstack ks;

	srand(7);
	for (int iter = 0; iter < 3000; iter++) {
		size_t len = (size_t)rand() % KSTACK_TEXT; /* up to 4095 */

		for (size_t i = 0; i < len; i++)
			text[i] = alphabet[rand() % (sizeof(alphabet) - 1)];
		text[len] = 0;
		for (int strip = 0; strip < 2; strip++) {
			kstack_init(&ks);
			CU_ASSERT_EQUAL_FATAL(kstack_parse_proc(&ks, text, strip), 0);
			split_reference(text, strip, want, sizeof(want));
			joined(&ks, got, sizeof(got));
			CU_ASSERT_STRING_EQUAL_FATAL(got, want);
			CU_ASSERT_EQUAL(count(&ks), ks.n);
		}
	}
}

static void test_limits_and_json(void)
{
	struct kstack ks;
	struct json_object *arr;
	char frame[160];

	kstack_init(&ks);
	memset(frame, 'f', sizeof(frame) - 1);
	frame[sizeof(frame) - 1] = 0;
	for (int i = 0; i < 24; i++) /* the snapshot's depth of the longest symbols */
		CU_ASSERT_EQUAL(kstack_add(&ks, frame), 0);
	CU_ASSERT_EQUAL(ks.n, 24);
	while (kstack_add(&ks, frame) == 0)
		;
	CU_ASSERT(ks.len <= KSTACK_TEXT);
	CU_ASSERT_EQUAL(kstack_add(&ks, frame), -ENOSPC);
	CU_ASSERT_EQUAL(count(&ks), ks.n);

	kstack_init(&ks);
	kstack_add(&ks, "schedule+0x1/0x2");
	kstack_add(&ks, "");
	arr = kstack_json(&ks);
	CU_ASSERT_EQUAL(json_object_array_length(arr), 2);
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(arr, 0)),
			       "schedule+0x1/0x2");
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(arr, 1)), "");
	json_object_put(arr);
	kstack_init(&ks);
	arr = kstack_json(&ks);
	CU_ASSERT_EQUAL(json_object_array_length(arr), 0);
	json_object_put(arr);
}

int main(void)
{
	CU_pSuite s;
	int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("kstack", NULL, NULL);
	CU_add_test(s, "/proc stack lines", test_proc_lines);
	CU_add_test(s, "the same frames as the strtok split", test_same_as_strtok);
	CU_add_test(s, "limits and the JSON array", test_limits_and_json);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails;
}
