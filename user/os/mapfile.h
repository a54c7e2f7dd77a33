/*
 * Opening a file that another process maps, without letting that process's owner choose what
 * root opens: through /proc/PID/map_files/START-END (the very inode mapped; no path is
 * resolved), else through the mapped path under /proc/PID/root with no symbolic link followed
 * (openat2 RESOLVE_NO_SYMLINKS) and the device and inode checked against the mapping. Only a
 * regular file is opened for reading (an O_PATH descriptor is checked first, so a FIFO or a
 * device is never opened), O_RDONLY|O_NONBLOCK|O_CLOEXEC, at most max_size bytes long. Files
 * outside what the process maps are never opened: the agent reads nothing on a user's behalf
 * that the user's process did not map itself.
 */
#ifndef FTBPF_MAPFILE_H
#define FTBPF_MAPFILE_H

#include <stdint.h>
#include <sys/stat.h>

struct maps_entry;

/* procdir: /proc/PID opened (struct procmem's dirfd). The fd (owned by the caller) and its
 * stat, or -errno: -EINVAL not a regular file, -EFBIG over max_size, -ESTALE the path names
 * another file than the one mapped, -ELOOP a symbolic link on the path. */
int mapfile_open(int procdir, const struct maps_entry *e, uint64_t max_size, struct stat *ret_st);

#endif
