/*
 * Files and directories the agent (root) creates or opens on behalf of its configuration: the
 * state dir, the event log, the control socket, the timer FIFO. A path in a directory that
 * another user can write is refused (a planted symlink or file there would make root truncate,
 * append to or delete something else), final components are opened with O_NOFOLLOW, and only
 * what is ours is ever replaced. Library-like: errors are returned with a message, never logged.
 */
#ifndef FTBPF_SAFEFS_H
#define FTBPF_SAFEFS_H

#include <stddef.h>
#include <sys/types.h>

/* The directory part of path ("." when it has none) into dir. 0 or -ENAMETOOLONG. */
int safefs_parent(const char *path, char *dir, size_t len);
/*
 * dir is a directory (not a symlink) owned by root or by us, and no user but its owner can
 * write it. 0, or -errno with a message in err.
 */
int safefs_check_dir(const char *dir, char *err, size_t errlen);
/* Create dir (and its missing parents, mode 0755) with mode, then check it as above. */
int safefs_mkdir(const char *dir, mode_t mode, char *err, size_t errlen);
/*
 * Open path (flags as open(2), O_NOFOLLOW and O_CLOEXEC added) in a checked directory. An
 * existing file must be a regular file owned by us; its mode is set to mode. Returns the fd or
 * -errno with a message in err.
 */
int safefs_open(const char *path, int flags, mode_t mode, char *err, size_t errlen);
/*
 * Create or overwrite a file a user's tool names (ftbpf-ci's --report and --junit, run as root
 * in another user's workspace) with no symbolic link followed anywhere in the path (a planted
 * link would make root write elsewhere): a regular file with one name, truncated, mode for a
 * new one. Returns the fd (O_WRONLY) or -errno with a message in err.
 */
int safefs_create_nofollow(const char *path, mode_t mode, char *err, size_t errlen);
/* Remove path only if it is a Unix socket (a stale one of ours); 0 when absent or removed. */
int safefs_unlink_socket(const char *path, char *err, size_t errlen);

/*
 * A secret from a file (a password, a token): a regular file, not a link, root's (or ours),
 * that no other user may read or write. Its text, without trailing newlines or spaces, in
 * buf (at most len - 1 bytes, no NUL inside, not empty). 0, or -errno with a message in err.
 */
int safefs_read_secret(const char *path, char *buf, size_t len, char *err, size_t errlen);
/* The same for a file others may read but only root may write (a list of public keys). */
int safefs_read_trusted(const char *path, char *buf, size_t len, char *err, size_t errlen);

#endif
