/* Files a process maps, opened safely (see mapfile.h). */
#include "os/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/maps.h"

/* The mapped path under the process's root, no link followed: an O_PATH fd or -errno. */
static int by_path(int procdir, const struct maps_entry *e)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
			       .resolve =
				   RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	char path[4096];
	int root, fd;

	if (!e->path_len || e->path[0] != '/' || e->path_len >= sizeof(path) || e->deleted)
		return -ENOENT;
	memcpy(path, e->path, e->path_len);
	path[e->path_len] = 0;
	root = openat(procdir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	fd = fd < 0 ? -errno : fd;
	close(root);
	return fd;
}

int mapfile_open(int procdir, const struct maps_entry *e, uint64_t max_size, struct stat *ret_st)
{
	struct stat st, st2;
	char name[64];
	int pfd, fd, r = 0, via_map_files = 1;

	snprintf(name, sizeof(name), "map_files/%llx-%llx", (unsigned long long)e->start,
		 (unsigned long long)e->end);
	/* the magic link leads to the mapped file itself, whatever its path says now */
	pfd = openat(procdir, name, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		via_map_files = 0;
		pfd = by_path(procdir, e);
		if (pfd < 0)
			return pfd;
	}
	if (fstat(pfd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	if (!via_map_files &&
	    (st.st_ino != e->ino || st.st_dev != makedev(e->dev_major, e->dev_minor))) {
		r = -ESTALE; /* the path names another file now than the one mapped */
		goto out;
	}
	if ((uint64_t)st.st_size > max_size) {
		r = -EFBIG;
		goto out;
	}
	/* reopen the inode the O_PATH fd holds, for reading: never a FIFO, never blocking */
	snprintf(name, sizeof(name), "/proc/self/fd/%d", pfd);
	fd = open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev ||
	    !S_ISREG(st2.st_mode)) {
		close(fd);
		r = -ESTALE;
		goto out;
	}
	*ret_st = st2;
	r = fd;
out:
	close(pfd);
	return r;
}
