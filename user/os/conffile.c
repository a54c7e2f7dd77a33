/* The agent's configuration files, read safely (see conffile.h). */
#include "os/conffile.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int conffile_config(struct ftbpf_config *c, const char *path, char *err, size_t errlen)
{
	char buf[65536];
	struct stat st;
	ssize_t n;
	int fd, r;

	/* O_NONBLOCK: a FIFO given as the config must not block the start */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s is not a regular file", path);
		return -EINVAL;
	}
	/* the agent runs as root: a config others can write would let them choose its actions */
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_uid != 0 && st.st_uid != geteuid())) {
		close(fd);
		snprintf(err, errlen,
			 "%s can be written by users other than root (owner uid %u, mode %04o): "
			 "refused",
			 path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -EIO;
	}
	if (n == (ssize_t)sizeof(buf)) {
		snprintf(err, errlen, "%s: larger than %zu bytes", path, sizeof(buf) - 1);
		return -EFBIG;
	}
	return config_parse_buffer(c, path, buf, (size_t)n, err, errlen);
}

int conffile_mesh_key(const char *path, uint8_t key[MESH_KEY_BYTES], char *err, size_t errlen)
{
	uint8_t buf[4096];
	struct stat st;
	ssize_t n;
	/* O_NONBLOCK: a FIFO named as the key must not block the start; no symlinks */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);

	if (fd < 0) {
		snprintf(err, errlen, "key file %s: %s", path,
			 errno == ELOOP ? "a symbolic link: refused" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "key file %s is not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_mode & 0077) {
		snprintf(err, errlen,
			 "key file %s is readable or writable by others (mode %04o): "
			 "chmod 600 it",
			 path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -1;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen, "key file %s belongs to uid %u, not to root", path,
			 (unsigned)st.st_uid);
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 16) {
		snprintf(err, errlen, "key file %s: needs at least 16 bytes of secret", path);
		return -1;
	}
	mesh_proto_key_derive(buf, (size_t)n, key);
	sodium_memzero(buf, sizeof(buf));
	return 0;
}
