/*
 * The symbols of an ELF file (.symtab and .dynsym), read with libelf from a file descriptor into
 * private memory (ELF_C_READ: no mapping of the file, so a file truncated while it is read is a
 * read error, never a SIGBUS), with a bound on the bytes read and a deadline. One walker for
 * every module that looks up functions or variables in a binary (gpuprobe.c, pystack.c). The
 * file may be anything a user made: libelf checks its structure, the bounds check the rest
 * (fuzzed: tests/fuzz/fuzz_elfsym.c).
 */
#ifndef FTBPF_ELFSYM_H
#define FTBPF_ELFSYM_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* Called for each named symbol; e is the open file (for section and program headers). A
 * non-zero return stops the walk and is returned by elfsym_foreach. */
typedef int (*elfsym_fn)(void *ctx, Elf *e, const char *name, const GElf_Sym *sym);

struct elfsym_limits {
	size_t max_bytes;     /* of symbol and string tables read; 0: 64 MiB */
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none */
};

/* libelf's view of the file open at fd (ELF_C_READ), once its headers passed elfcheck: 0 and
 * *ret (elf_end it), or -EINVAL / -EFBIG with a reason in *why (may be NULL), -ENOSYS. */
int elfsym_begin(int fd, Elf **ret, const char **why);

/* Walk the symbol tables of the file open at fd (borrowed; read with pread, its offset is not
 * used). Returns 0 after the last symbol, the callback's non-zero value, or -errno (-EINVAL:
 * not ELF, or malformed; -EFBIG: a table over max_bytes, or too many sections; -ETIMEDOUT:
 * past the deadline). */
int elfsym_foreach_fd(int fd, const struct elfsym_limits *lim, elfsym_fn fn, void *ctx);

/* The lowest PT_LOAD address of e, page-aligned (the load bias is where the file's first page
 * is mapped minus this): 0 or -EINVAL. */
int elfsym_first_load(Elf *e, uint64_t *ret);

#endif
