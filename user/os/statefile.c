/* Atomic JSON state files (see statefile.h). */
#include "os/statefile.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BYTES (16 << 20)

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int statefile_write(const char *dir, const char *name, struct json_object *o)
{
	char tmp[512], path[512];
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	int fd, dfd, r;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	r = write_all(fd, text, strlen(text));
	if (!r)
		r = write_all(fd, "\n", 1);
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r) {
		unlink(tmp);
		return r;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) { /* the rename itself is durable once the directory is */
		if (fsync(dfd) < 0)
			r = -errno;
		close(dfd);
	}
	return r;
}

struct json_object *statefile_read(const char *dir, const char *name)
{
	char path[512], *buf;
	struct json_object *o;
	struct stat st;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_BYTES) {
		close(fd);
		errno = st.st_size > MAX_BYTES ? EFBIG : EINVAL;
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	o = json_tokener_parse(buf);
	free(buf);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		errno = EINVAL;
		return NULL;
	}
	return o;
}
