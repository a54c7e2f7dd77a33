/* pidfd helpers (see pidfd.h). */
#include "os/pidfd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os/procfs.h"

int pidfd_open_pid(int pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : fd;
}

int pidfd_signal(int pidfd, int sig)
{
	if (pidfd < 0)
		return -ESRCH;
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

int pidfd_pid(int pidfd)
{
	char p[64], buf[1024], *s;
	ssize_t n;
	long pid;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", pidfd);
	n = procfs_read(p, buf, sizeof(buf) - 1);
	if (n < 0)
		return (int)n;
	buf[n] = 0;
	s = strstr(buf, "\nPid:");
	if (!s)
		return -EOPNOTSUPP; /* kernels before 5.3 */
	pid = strtol(s + 5, NULL, 10);
	return pid > 0 ? (int)pid : -ESRCH;
}

int pidfd_is(int pidfd, int pid)
{
	int r = pidfd_pid(pidfd);

	if (r == -EOPNOTSUPP) /* no fdinfo pid: alive is all we can tell */
		return pidfd_signal(pidfd, 0);
	return r == pid ? 0 : -ESRCH;
}
