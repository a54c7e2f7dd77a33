/* Another process through its pidfd (see procmem.h). */
#include "os/procmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "os/pidfd.h"

int procmem_open(struct procmem *ret, int pid, int pidfd)
{
	struct procmem pm = {.pid = pid, .dirfd = -1, .memfd = -1};
	int own = -1, r;
	char p[32];

	if (pid <= 0)
		return -ESRCH;
	if (pidfd < 0) {
		own = pidfd_open_pid(pid);
		if (own < 0)
			return own;
		pidfd = own;
	}
	snprintf(p, sizeof(p), "/proc/%d", pid);
	pm.dirfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pm.dirfd < 0) {
		r = -errno;
		goto fail;
	}
	/* The process pidfd names is alive now with this pid: it held the pid since before the
	 * directory was opened, so the directory is its. */
	r = pidfd_is(pidfd, pid);
	if (r < 0)
		goto fail;
	pm.memfd = openat(pm.dirfd, "mem", O_RDONLY | O_CLOEXEC);
	if (pm.memfd < 0) {
		r = -errno;
		goto fail;
	}
	if (own >= 0)
		close(own);
	*ret = pm;
	return 0;
fail:
	if (own >= 0)
		close(own);
	procmem_close(&pm);
	return r;
}

void procmem_close(struct procmem *pm)
{
	if (pm->memfd >= 0)
		close(pm->memfd);
	if (pm->dirfd >= 0)
		close(pm->dirfd);
	pm->memfd = pm->dirfd = -1;
}

int procmem_read(const struct procmem *pm, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	if (!addr || addr > (uint64_t)INT64_MAX - len)
		return -EFAULT;
	n = pread(pm->memfd, buf, len, (off_t)addr);
	return n == (ssize_t)len ? 0 : -EFAULT;
}

int procmem_openat(const struct procmem *pm, const char *name, int flags)
{
	int fd = openat(pm->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | flags);

	return fd < 0 ? -errno : fd;
}
