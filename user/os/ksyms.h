/* Kernel address -> "symbol+off" from /proc/kallsyms, loaded on first use. */
#ifndef FTBPF_KSYMS_H
#define FTBPF_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksyms;

struct ksyms *ksyms_load(void); /* NULL with errno set */
void ksyms_free(struct ksyms *k);
/* Writes "name+0x1f" (or the hex address) into buf; returns buf. */
const char *ksyms_format(const struct ksyms *k, uint64_t addr, char *buf, size_t len);

#endif
