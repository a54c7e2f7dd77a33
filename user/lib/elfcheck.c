/* ELF headers checked before libelf: see elfcheck.h. */
#include "lib/elfcheck.h"

#include <errno.h>

#define SHT_NOBITS_ 8

static uint64_t get(const uint8_t *p, int n, int le)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[le ? i : n - 1 - i] << (8 * i);
	return v;
}

static int bad(const char **why, const char *w, int err)
{
	if (why)
		*why = w;
	return err;
}

/* [off, off + n * size) inside a file of file_size bytes, without overflow */
static int inside(uint64_t off, uint64_t n, uint64_t size, uint64_t file_size)
{
	return size && n <= UINT64_MAX / size && off <= file_size && n * size <= file_size - off;
}

int elfcheck_header(const uint8_t *h, size_t len, uint64_t file_size, struct elfcheck *c,
		    const char **why)
{
	int le;

	if (len < 52 || h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' || h[3] != 'F')
		return bad(why, "not an ELF file", -EINVAL);
	if ((h[4] != 1 && h[4] != 2) || (h[5] != 1 && h[5] != 2) || h[6] != 1)
		return bad(why, "an ELF class, byte order or version of no machine", -EINVAL);
	c->is64 = h[4] == 2;
	c->le = le = h[5] == 1;
	if (c->is64 && len < 64)
		return bad(why, "a short ELF header", -EINVAL);
	if (c->is64) {
		c->phoff = get(h + 32, 8, le);
		c->shoff = get(h + 40, 8, le);
		c->phnum = get(h + 56, 2, le);
		c->shentsize = get(h + 58, 2, le);
		c->shnum = get(h + 60, 2, le);
		if (get(h + 54, 2, le) != 56 && c->phnum)
			return bad(why, "program headers of a foreign size", -EINVAL);
	} else {
		c->phoff = get(h + 28, 4, le);
		c->shoff = get(h + 32, 4, le);
		c->phnum = get(h + 44, 2, le);
		c->shentsize = get(h + 46, 2, le);
		c->shnum = get(h + 48, 2, le);
		if (get(h + 42, 2, le) != 32 && c->phnum)
			return bad(why, "program headers of a foreign size", -EINVAL);
	}
	if (c->phnum == 0xffff || c->phnum > ELFCHECK_MAX_SEGMENTS)
		return bad(why, "too many program headers", -EFBIG);
	if (c->phnum && !inside(c->phoff, c->phnum, c->is64 ? 56 : 32, file_size))
		return bad(why, "program headers past the end of the file", -EINVAL);
	c->extended = 0;
	if (!c->shoff) {
		c->shnum = 0; /* no section table */
		return 0;
	}
	if (c->shentsize != (c->is64 ? 64u : 40u))
		return bad(why, "section headers of a foreign size", -EINVAL);
	if (!c->shnum) { /* the count is in the first section header */
		if (!inside(c->shoff, 1, c->shentsize, file_size))
			return bad(why, "section headers past the end of the file", -EINVAL);
		c->extended = 1;
		return 0;
	}
	if (c->shnum > ELFCHECK_MAX_SECTIONS)
		return bad(why, "too many sections", -EFBIG);
	if (!inside(c->shoff, c->shnum, c->shentsize, file_size))
		return bad(why, "section headers past the end of the file", -EINVAL);
	return 0;
}

int elfcheck_extended(struct elfcheck *c, const uint8_t *s, size_t len, uint64_t file_size,
		      const char **why)
{
	if (len < c->shentsize)
		return bad(why, "a short section header", -EINVAL);
	c->shnum = c->is64 ? get(s + 32, 8, c->le) : get(s + 20, 4, c->le); /* sh_size */
	c->extended = 0;
	if (c->shnum > ELFCHECK_MAX_SECTIONS)
		return bad(why, "too many sections", -EFBIG);
	if (!c->shnum || !inside(c->shoff, c->shnum, c->shentsize, file_size))
		return bad(why, "section headers past the end of the file", -EINVAL);
	return 0;
}

int elfcheck_sections(const struct elfcheck *c, const uint8_t *tab, size_t len, uint64_t file_size,
		      const char **why)
{
	if (c->extended || c->shnum > ELFCHECK_MAX_SECTIONS || len < c->shnum * c->shentsize)
		return bad(why, "the section table was not read whole", -EINVAL);
	for (uint64_t i = 1; i < c->shnum; i++) {
		const uint8_t *s = tab + i * c->shentsize;
		uint64_t type = get(s + 4, 4, c->le), off, size, link;

		if (c->is64) {
			off = get(s + 24, 8, c->le);
			size = get(s + 32, 8, c->le);
			link = get(s + 40, 4, c->le);
		} else {
			off = get(s + 16, 4, c->le);
			size = get(s + 20, 4, c->le);
			link = get(s + 24, 4, c->le);
		}
		if (link >= c->shnum)
			return bad(why, "a section linked to no section", -EINVAL);
		if (type != SHT_NOBITS_ && size && !inside(off, 1, size, file_size))
			return bad(why, "a section past the end of the file", -EINVAL);
	}
	return 0;
}
