/* The symbols of an ELF file (.symtab and .dynsym), read with libelf: one walker for every
 * module that looks up functions or variables in a binary (gpuprobe.c, pystack.c). */
#ifndef FTBPF_ELFSYM_H
#define FTBPF_ELFSYM_H

#include <gelf.h>

/* Called for each named symbol; e is the open file (for section and program headers). A
 * non-zero return stops the walk and is returned by elfsym_foreach. */
typedef int (*elfsym_fn)(void *ctx, Elf *e, const char *name, const GElf_Sym *sym);

/* Walk the symbol tables of path. Returns 0 after the last symbol, the callback's non-zero
 * value, or -errno (-EINVAL: not ELF). */
int elfsym_foreach(const char *path, elfsym_fn fn, void *ctx);

#endif
