#include "os/elfsym.h"

#include <errno.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/elfcheck.h"

#define DEFAULT_MAX_BYTES (64u << 20)

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int late(const struct elfsym_limits *lim)
{
	return lim && lim->deadline_ns && mono_ns() > lim->deadline_ns;
}

/* The symbols of one table; its strings are in section link. */
static int walk_table(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const struct elfsym_limits *lim,
		      size_t *budget, elfsym_fn fn, void *ctx)
{
	Elf_Scn *strs = elf_getscn(e, sh->sh_link);
	GElf_Shdr ssh;
	Elf_Data *data;
	size_t n;
	int r = 0;

	if (!strs || !gelf_getshdr(strs, &ssh) || ssh.sh_type != SHT_STRTAB)
		return 0;
	if (sh->sh_size > *budget || ssh.sh_size > *budget - sh->sh_size)
		return -EFBIG;
	*budget -= sh->sh_size + ssh.sh_size;
	data = elf_getdata(scn, NULL); /* read (pread) here: a short read is an error */
	if (!data)
		return -EINVAL;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; !r && i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if ((i & 4095) == 4095 && late(lim))
			return -ETIMEDOUT;
		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (name && *name)
			r = fn(ctx, e, name, &sym);
	}
	return r;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	return n == (ssize_t)len ? 0 : -EINVAL; /* short: truncated meanwhile, or a lie */
}

/* The header, the section count and the section table, read and bounded before libelf reads
 * anything (elfcheck.h). */
static int check_file(int fd, const char **why)
{
	uint8_t hdr[ELFCHECK_HDR_BYTES] = {0}, *tab;
	struct elfcheck c;
	struct stat st;
	ssize_t n;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	n = pread(fd, hdr, sizeof(hdr), 0);
	if (n < 0)
		return -errno;
	r = elfcheck_header(hdr, (size_t)n, (uint64_t)st.st_size, &c, why);
	if (r == 0 && c.extended) {
		if (pread_all(fd, hdr, (size_t)c.shentsize, c.shoff) < 0)
			return -EINVAL;
		r = elfcheck_extended(&c, hdr, (size_t)c.shentsize, (uint64_t)st.st_size, why);
	}
	if (r < 0 || !c.shnum)
		return r;
	tab = malloc((size_t)(c.shnum * c.shentsize)); /* 64 KiB at most */
	if (!tab)
		return -ENOMEM;
	r = pread_all(fd, tab, (size_t)(c.shnum * c.shentsize), c.shoff);
	if (r == 0)
		r = elfcheck_sections(&c, tab, (size_t)(c.shnum * c.shentsize),
				      (uint64_t)st.st_size, why);
	free(tab);
	return r;
}

int elfsym_begin(int fd, Elf **ret, const char **why)
{
	const char *w = NULL;
	int r;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	r = check_file(fd, why ? why : &w);
	if (r < 0)
		return r;
	/* ELF_C_READ: headers and sections are read (pread) into memory libelf owns */
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return -EINVAL;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -EINVAL;
	}
	*ret = e;
	return 0;
}

int elfsym_foreach_fd(int fd, const struct elfsym_limits *lim, elfsym_fn fn, void *ctx)
{
	size_t budget = lim && lim->max_bytes ? lim->max_bytes : DEFAULT_MAX_BYTES;
	Elf_Scn *scn = NULL;
	int r;
	Elf *e;

	r = elfsym_begin(fd, &e, NULL);
	if (r < 0)
		return r;
	while (!r && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (late(lim)) {
			r = -ETIMEDOUT;
			break;
		}
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize)
			continue;
		r = walk_table(e, scn, &sh, lim, &budget, fn, ctx);
	}
	elf_end(e);
	return r;
}

int elfsym_first_load(Elf *e, uint64_t *ret)
{
	uint64_t lo = UINT64_MAX;
	size_t n;

	if (elf_getphdrnum(e, &n))
		return -EINVAL;
	for (size_t k = 0; k < n && k < 4096; k++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)k, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < lo)
			lo = ph.p_vaddr & ~0xfffull;
	}
	if (lo == UINT64_MAX)
		return -EINVAL;
	*ret = lo;
	return 0;
}
