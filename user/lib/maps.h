/*
 * One line of /proc/PID/maps, parsed: where a file is mapped, with which rights, and which file
 * (device and inode as the kernel shows them). The text comes from a process we watch and names
 * files its owner chose: untrusted, fuzzed (tests/fuzz/fuzz_maps.c).
 */
#ifndef FTBPF_MAPS_H
#define FTBPF_MAPS_H

#include <stddef.h>
#include <stdint.h>

struct maps_entry {
	uint64_t start, end, offset;
	char perms[5]; /* "r-xp" */
	unsigned dev_major, dev_minor;
	uint64_t ino;	  /* 0: not a file */
	const char *path; /* into the line given (not copied); "" when none */
	size_t path_len;
	int deleted; /* " (deleted)": the file was removed or replaced */
};

/* Parse one line (without its newline, len bytes, not NUL-terminated necessarily): 0, or
 * -EINVAL when it is not a maps line. */
int maps_parse_line(const char *line, size_t len, struct maps_entry *ret);
/* The last component of the entry's path (into the line), and its length. */
const char *maps_basename(const struct maps_entry *e, size_t *ret_len);

#endif
