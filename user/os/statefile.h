/*
 * Small state files under the agent's state dir: one JSON object per file, replaced atomically
 * (write a temporary file, fsync it, rename it over the old one, fsync the directory), so that a
 * crash or power loss leaves the old state or the new one, never a torn one. Library-like: errors
 * are returned, not logged.
 */
#ifndef FTBPF_STATEFILE_H
#define FTBPF_STATEFILE_H

struct json_object;

/* Replace dir/name with o (not consumed). 0 or -errno. */
int statefile_write(const char *dir, const char *name, struct json_object *o);
/* The object in dir/name (the caller's), NULL with errno set: ENOENT when there is none,
 * EINVAL when it is not a JSON object. Files over 16 MiB are refused (EFBIG). */
struct json_object *statefile_read(const char *dir, const char *name);

#endif
