/*
 * Safe paths for a root daemon: checked directories, O_NOFOLLOW opens, no replacement of what
 * is not ours. See safefs.h for the rules.
 */
#include "os/safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int safefs_parent(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!slash) {
		if (len < 2)
			return -ENAMETOOLONG;
		snprintf(dir, len, ".");
		return 0;
	}
	n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = 0;
	return 0;
}

int safefs_check_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(dir, &st) < 0) {
		int r = -errno;

		snprintf(err, errlen, "%s: %s", dir, strerror(-r));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory%s", dir,
			 S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
		return -ENOTDIR;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen, "directory %s belongs to uid %u, not to root", dir,
			 (unsigned)st.st_uid);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen,
			 "directory %s is writable by other users (mode %04o): choose one only "
			 "root can write",
			 dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

static int mkdir_one(const char *p, mode_t mode)
{
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int safefs_mkdir(const char *dir, mode_t mode, char *err, size_t errlen)
{
	char tmp[512];
	int r;

	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		r = mkdir_one(tmp, 0755);
		*p = '/';
		if (r < 0) {
			snprintf(err, errlen, "create %s: %s", tmp, strerror(-r));
			return r;
		}
	}
	r = mkdir_one(tmp, mode);
	if (r < 0) {
		snprintf(err, errlen, "create %s: %s", dir, strerror(-r));
		return r;
	}
	return safefs_check_dir(dir, err, errlen);
}

int safefs_open(const char *path, int flags, mode_t mode, char *err, size_t errlen)
{
	char dir[512];
	struct stat st;
	int fd, r;

	if (safefs_parent(path, dir, sizeof(dir)) < 0) {
		snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	r = safefs_check_dir(dir, err, errlen);
	if (r < 0)
		return r;
	fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s%s", path, strerror(-r),
			 r == -ELOOP ? " (a symbolic link: refused)" : "");
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s is not a regular file of ours: refused", path);
		close(fd);
		return -EPERM;
	}
	/* O_NONBLOCK was only for the open (a FIFO planted there must not block us) */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0 ||
	    ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

/* Without openat2 (kernels before 5.6): one component at a time, none of them a link. */
static int walk_nofollow(const char *path, int flags, mode_t mode)
{
	char buf[4096], *save = NULL, *comp, *next;
	int dir, fd;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	snprintf(buf, sizeof(buf), "%s", path);
	dir = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	comp = strtok_r(buf, "/", &save);
	while (comp && (next = strtok_r(NULL, "/", &save))) {
		fd = openat(dir, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dir);
		if (fd < 0)
			return errno == ENOTDIR ? -ELOOP : -errno; /* a link to a directory too */
		dir = fd;
		comp = next;
	}
	fd = comp ? openat(dir, comp, flags | O_NOFOLLOW, mode) : -1;
	fd = fd < 0 ? (comp ? -errno : -EISDIR) : fd;
	close(dir);
	return fd;
}

int safefs_create_nofollow(const char *path, mode_t mode, char *err, size_t errlen)
{
	struct open_how how = {.flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			       .mode = mode,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	struct stat st;
	int fd, r;

	fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == E2BIG))
		fd = walk_nofollow(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, mode);
	else if (fd < 0)
		fd = -errno;
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s%s", path, strerror(-fd),
			 fd == -ELOOP || fd == -EXDEV ? " (a symbolic link in the path: refused)"
						      : "");
		return fd;
	}
	/* a hard link may be anyone's file: only a file of one name is written */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		snprintf(err, errlen, "%s is not a regular file with one name: refused", path);
		close(fd);
		return -EPERM;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0 || ftruncate(fd, 0) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

int safefs_unlink_socket(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket: refusing to replace it",
			 path);
		return -EEXIST;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		snprintf(err, errlen, "remove stale socket %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

/* A regular file, not a link, root's (or ours), with none of the mode bits in deny. */
static int read_checked(const char *path, mode_t deny, char *buf, size_t len, char *err,
			size_t errlen)
{
	struct stat st;
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);

	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", path,
			 e == ELOOP ? "a symbolic link: refused" : strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if ((st.st_mode & deny) || (st.st_uid != 0 && st.st_uid != geteuid())) {
		snprintf(err, errlen, "%s must be root's with mode %s (uid %u, mode %04o)", path,
			 deny == 0077 ? "0600" : "0644 or stricter", (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	n = got;
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	if (n <= 0 || memchr(buf, 0, (size_t)n)) {
		snprintf(err, errlen, "%s: empty, unreadable, or not text", path);
		return -EINVAL;
	}
	buf[n] = 0;
	return 0;
}

int safefs_read_secret(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	return read_checked(path, 0077, buf, len, err, errlen);
}

int safefs_read_trusted(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	return read_checked(path, 0022, buf, len, err, errlen);
}
