/* ELF headers checked before libelf reads a file a user made (lib/elfcheck.c): a real one
 * passes; a section count the file cannot hold, too many sections or program headers, tables
 * past the end, foreign entry sizes, links to no section are refused without allocating. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/elfcheck.h"

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void test_real_file(void)
{
	size_t len = 0;
	uint8_t *b = slurp("/proc/self/exe", &len);
	struct elfcheck c;
	const char *why = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(elfcheck_header(b, len, len, &c, &why), 0);
	CU_ASSERT_TRUE(c.is64);
	CU_ASSERT(c.shnum > 10 && c.shnum < ELFCHECK_MAX_SECTIONS);
	CU_ASSERT_EQUAL(
	    elfcheck_sections(&c, b + c.shoff, (size_t)(c.shnum * c.shentsize), len, &why), 0);
	/* the same header claiming more sections than the file holds */
	put(b + 60, 0xfff0, 2);
	CU_ASSERT_EQUAL(elfcheck_header(b, len, len, &c, &why), -EFBIG);
	put(b + 60, 900, 2);
	CU_ASSERT_EQUAL(elfcheck_header(b, len, len, &c, &why), -EINVAL); /* past the end */
	free(b);
}

/* A 64-bit header of a file of size bytes, its section table at shoff with n sections. */
static void header(uint8_t *h, uint64_t shoff, uint64_t n)
{
	memset(h, 0, 64);
	memcpy(h,
	       "\x7f"
	       "ELF",
	       4);
	h[4] = 2;
	h[5] = 1;
	h[6] = 1;
	put(h + 40, shoff, 8);
	put(h + 58, 64, 2);
	put(h + 60, n, 2);
	put(h + 54, 56, 2);
}

static void test_sparse_claims(void)
{
	uint8_t h[64], s0[64] = {0};
	uint64_t size = 77ull << 20; /* the 77 MB sparse libcuda.so.1 */
	struct elfcheck c;
	const char *why = NULL;

	/* extended numbering: the count in the first section header, a million sections */
	header(h, size - (1ull << 20) * 64, 0);
	CU_ASSERT_EQUAL(elfcheck_header(h, 64, size, &c, &why), 0);
	CU_ASSERT_TRUE(c.extended);
	put(s0 + 32, 1u << 20, 8);
	CU_ASSERT_EQUAL(elfcheck_extended(&c, s0, 64, size, &why), -EFBIG);
	CU_ASSERT_PTR_NOT_NULL(why);
	/* an honest extended count */
	header(h, 4096, 0);
	CU_ASSERT_EQUAL(elfcheck_header(h, 64, size, &c, &why), 0);
	put(s0 + 32, 70000 / 70, 8);
	CU_ASSERT_EQUAL(elfcheck_extended(&c, s0, 64, size, &why), 0);
	CU_ASSERT_EQUAL(c.shnum, 1000);
	/* a table past the end, an offset that overflows */
	header(h, size - 64, 2);
	CU_ASSERT_EQUAL(elfcheck_header(h, 64, size, &c, &why), -EINVAL);
	header(h, UINT64_MAX - 10, 2);
	CU_ASSERT_EQUAL(elfcheck_header(h, 64, size, &c, &why), -EINVAL);
	/* foreign entry size; too many program headers; not ELF; short */
	header(h, 4096, 2);
	put(h + 58, 65, 2);
	CU_ASSERT_EQUAL(elfcheck_header(h, 64, size, &c, &why), -EINVAL);
	header(h, 4096, 2);
	put(h + 56, 5000, 2);
	CU_ASSERT_EQUAL(elfcheck_header(h, 64, size, &c, &why), -EFBIG);
	h[1] = 'X';
	CU_ASSERT_EQUAL(elfcheck_header(h, 64, size, &c, &why), -EINVAL);
	header(h, 4096, 2);
	CU_ASSERT_EQUAL(elfcheck_header(h, 40, size, &c, &why), -EINVAL);
}

static void test_sections(void)
{
	uint8_t h[64], tab[3 * 64] = {0};
	uint64_t size = 1 << 20;
	struct elfcheck c;
	const char *why = NULL;

	header(h, 8192, 3);
	CU_ASSERT_EQUAL_FATAL(elfcheck_header(h, 64, size, &c, &why), 0);
	/* section 1: 4 KiB at 4096, linked to 2; section 2: NOBITS of 1 GB (no bytes in the file) */
	put(tab + 64 + 4, 2, 4);
	put(tab + 64 + 24, 4096, 8);
	put(tab + 64 + 32, 4096, 8);
	put(tab + 64 + 40, 2, 4);
	put(tab + 128 + 4, 8, 4);
	put(tab + 128 + 32, 1ull << 30, 8);
	CU_ASSERT_EQUAL(elfcheck_sections(&c, tab, sizeof(tab), size, &why), 0);
	put(tab + 64 + 32, size, 8); /* past the end */
	CU_ASSERT_EQUAL(elfcheck_sections(&c, tab, sizeof(tab), size, &why), -EINVAL);
	put(tab + 64 + 32, 4096, 8);
	put(tab + 64 + 40, 3, 4); /* a link to no section */
	CU_ASSERT_EQUAL(elfcheck_sections(&c, tab, sizeof(tab), size, &why), -EINVAL);
	CU_ASSERT_EQUAL(elfcheck_sections(&c, tab, 64, size, &why), -EINVAL); /* short */
}

int main(void)
{
	CU_pSuite s;
	int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("elfcheck", NULL, NULL);
	CU_add_test(s, "a real file passes; its count changed does not", test_real_file);
	CU_add_test(s, "what a sparse file claims", test_sparse_claims);
	CU_add_test(s, "the section table", test_sections);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails;
}
