/*
 * An ELF file's headers checked before libelf sees the file. libelf trusts the section count
 * and allocates for every section it claims: one sparse libcuda.so.1 that claimed a million
 * sections made the agent allocate 3.1 GB. The header, the first section header (extended
 * numbering) and the section table are read by the caller and checked here against the file's
 * size and fixed maxima; nothing is allocated. No I/O.
 */
#ifndef FTBPF_ELFCHECK_H
#define FTBPF_ELFCHECK_H

#include <stddef.h>
#include <stdint.h>

#define ELFCHECK_HDR_BYTES    64   /* read this much of the file first (either class) */
#define ELFCHECK_MAX_SECTIONS 1024 /* a real library has 30-100 */
#define ELFCHECK_MAX_SEGMENTS 256

struct elfcheck {
	int is64, le;
	uint64_t shoff, shnum, shentsize;
	uint64_t phoff, phnum;
	int extended; /* the section count is in the first section header: elfcheck_extended */
};

/* The header (the file's first len bytes) of a file of file_size bytes. 0, or -EINVAL (not
 * ELF, malformed) / -EFBIG (over a maximum), with a reason in *why. */
int elfcheck_header(const uint8_t *hdr, size_t len, uint64_t file_size, struct elfcheck *ret,
		    const char **why);
/* Extended numbering: the first section header (at shoff, shentsize bytes) gives the count. */
int elfcheck_extended(struct elfcheck *c, const uint8_t *shdr0, size_t len, uint64_t file_size,
		      const char **why);
/* The section table (shnum x shentsize bytes from shoff): every section's bytes lie in the file
 * and every link names a section. */
int elfcheck_sections(const struct elfcheck *c, const uint8_t *tab, size_t len, uint64_t file_size,
		      const char **why);

#endif
