/*
 * lib/textsafe.c: what a terminal would act on is escaped (C0 controls but newline and tab,
 * DEL, C1, bidi overrides, bytes that are not UTF-8), in text and in JSON form; everything
 * else, valid UTF-8 included, passes unchanged, also when a write cuts a sequence in two.
 */
#include <CUnit/Basic.h>
#include <string.h>

#include "lib/textsafe.h"

struct sink {
	char buf[4096];
	size_t len;
};

static int to_sink(void *ctx, const char *b, size_t n)
{
	struct sink *s = ctx;

	if (s->len + n >= sizeof(s->buf))
		return -1;
	memcpy(s->buf + s->len, b, n);
	s->len += n;
	s->buf[s->len] = 0;
	return 0;
}

static const char *safe(enum textsafe_mode m, const char *in, size_t n)
{
	static struct sink s;
	struct textsafe ts = {.mode = m};

	s.len = 0;
	s.buf[0] = 0;
	CU_ASSERT_EQUAL(textsafe_write(&ts, in, n, 1, to_sink, &s), 0);
	return s.buf;
}
#define SAFE(m, lit) safe(m, lit, sizeof(lit) - 1)

static void test_plain_passes(void)
{
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_TEXT, "job a\trank 1\n"), "job a\trank 1\n");
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_TEXT, "caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80"),
			       "caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80");
}

static void test_controls_escaped(void)
{
	/* an escape sequence that would retitle the terminal and clear the screen */
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_TEXT, "j\x1b]0;pwned\x07\x1b[2J"),
			       "j\\x1b]0;pwned\\x07\\x1b[2J");
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_TEXT, "a\rb\x7f"), "a\\x0db\\x7f");
	/* C1 CSI (U+009B), a right-to-left override (U+202E) */
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_TEXT, "x\xc2\x9b"
						   "2Jy\xe2\x80\xae"),
			       "x\\xc2\\x9b2Jy\\xe2\\x80\\xae");
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_JSON, "\"x\xc2\x9b\xe2\x80\xae\x7f\""),
			       "\"x\\u009b\\u202e\\u007f\"");
}

static void test_invalid_utf8(void)
{
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_TEXT, "a\xff"
						   "b\xc0\xaf"
						   "c"),
			       "a\\xffb\\xc0\\xafc");
	/* JSON: U+FFFD, so the output stays valid UTF-8 (and the same JSON otherwise) */
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_JSON, "\"a\xff\""), "\"a\xef\xbf\xbd\"");
	/* a surrogate and an overlong 3-byte form */
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_TEXT, "\xed\xa0\x80"), "\\xed\\xa0\\x80");
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_TEXT, "\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
	/* cut at the very end */
	CU_ASSERT_STRING_EQUAL(SAFE(TEXTSAFE_TEXT, "ok\xe6\x97"), "ok\\xe6\\x97");
}

static void test_cut_between_writes(void)
{
	static const char in[] = "a\xe6\x97\xa5"
				 "b\xf0\x9f\x98\x80"
				 "c\x1b"
				 "d";
	struct sink s = {0};

	/* every way of cutting the input in two gives the same output as one write */
	for (size_t cut = 0; cut <= sizeof(in) - 1; cut++) {
		struct textsafe ts = {.mode = TEXTSAFE_TEXT};

		s.len = 0;
		CU_ASSERT_EQUAL(textsafe_write(&ts, in, cut, 0, to_sink, &s), 0);
		CU_ASSERT_EQUAL(textsafe_write(&ts, in + cut, sizeof(in) - 1 - cut, 1, to_sink, &s),
				0);
		CU_ASSERT_STRING_EQUAL(s.buf, "a\xe6\x97\xa5"
					      "b\xf0\x9f\x98\x80"
					      "c\\x1bd");
	}
	/* byte by byte */
	{
		struct textsafe ts = {.mode = TEXTSAFE_TEXT};

		s.len = 0;
		for (size_t i = 0; i < sizeof(in) - 1; i++)
			CU_ASSERT_EQUAL(textsafe_write(&ts, in + i, 1, 0, to_sink, &s), 0);
		CU_ASSERT_EQUAL(textsafe_write(&ts, "", 0, 1, to_sink, &s), 0);
		CU_ASSERT_STRING_EQUAL(s.buf, "a\xe6\x97\xa5"
					      "b\xf0\x9f\x98\x80"
					      "c\\x1bd");
	}
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("textsafe", NULL, NULL);
	CU_add_test(s, "printable text and valid UTF-8 pass", test_plain_passes);
	CU_add_test(s, "controls, C1 and bidi overrides escaped", test_controls_escaped);
	CU_add_test(s, "bytes that are not UTF-8 escaped", test_invalid_utf8);
	CU_add_test(s, "a sequence cut between writes", test_cut_between_writes);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
