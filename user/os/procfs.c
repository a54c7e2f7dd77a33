/* /proc readers: bounded reads, no allocation, errors as -errno. */
#include "os/procfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t procfs_read(const char *path, char *buf, size_t cap)
{
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			close(fd);
			return r;
		}
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	return (ssize_t)n;
}

ssize_t procfs_environ(int pid, char *buf, size_t cap)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/environ", pid);
	return procfs_read(p, buf, cap);
}

static long ticks_per_sec(void)
{
	static long hz;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	return hz > 0 ? hz : 100;
}

int procfs_parse_stat(const char *buf, size_t len, struct proc_stat *ret)
{
	char tmp[1024];
	const char *lp, *rp;
	unsigned long long ut, st, start;
	int ppid, n;
	char state;

	if (len >= sizeof(tmp))
		len = sizeof(tmp) - 1;
	memcpy(tmp, buf, len);
	tmp[len] = 0;
	lp = strchr(tmp, '(');
	rp = strrchr(tmp, ')');
	if (!lp || !rp || rp < lp)
		return -EINVAL;
	/* fields after comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime */
	n = sscanf(rp + 1,
		   " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
		   "%*d %llu",
		   &state, &ppid, &ut, &st, &start);
	if (n != 5)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->state = state;
	ret->ppid = ppid;
	ret->utime_ns = ut * (1000000000ull / ticks_per_sec());
	ret->stime_ns = st * (1000000000ull / ticks_per_sec());
	ret->start_ns = start * (1000000000ull / ticks_per_sec());
	n = (int)(rp - lp - 1);
	if (n > 15)
		n = 15;
	memcpy(ret->comm, lp + 1, n);
	ret->comm[n] = 0;
	return 0;
}

int procfs_stat(int pid, int tid, struct proc_stat *ret)
{
	char p[64], buf[1024];
	ssize_t n;

	if (tid < 0)
		snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	else
		snprintf(p, sizeof(p), "/proc/%d/task/%d/stat", pid, tid);
	n = procfs_read(p, buf, sizeof(buf) - 1);
	if (n < 0)
		return (int)n;
	return procfs_parse_stat(buf, n, ret);
}

/* "Name:\tA\tB\tC\tD" anywhere in buf: four unsigned ids. */
static int ids_line(const char *buf, size_t len, const char *name, unsigned ret[4])
{
	size_t nl = strlen(name);
	const char *p = buf, *end = buf + len;
	char line[128];

	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);

		if (n > nl && n < sizeof(line) && !memcmp(p, name, nl) && p[nl] == ':') {
			char *q = line;

			memcpy(line, p + nl + 1, n - nl - 1);
			line[n - nl - 1] = 0;
			for (int i = 0; i < 4; i++) {
				char *after;
				unsigned long v;

				while (*q == ' ' || *q == '\t')
					q++;
				if (*q < '0' || *q > '9')
					return -EINVAL;
				errno = 0;
				v = strtoul(q, &after, 10);
				if (errno || v > 0xffffffffUL)
					return -EINVAL;
				ret[i] = (unsigned)v;
				q = after;
			}
			return 0;
		}
		p += n + 1;
	}
	return -EINVAL;
}

int procfs_parse_creds(const char *buf, size_t len, struct proc_creds *ret)
{
	unsigned u[4], g[4];

	if (ids_line(buf, len, "Uid", u) < 0 || ids_line(buf, len, "Gid", g) < 0)
		return -EINVAL;
	*ret = (struct proc_creds){u[0], u[1], u[2], u[3], g[0], g[1], g[2], g[3]};
	return 0;
}

int procfs_creds(int pid, struct proc_creds *ret)
{
	char p[64], buf[4096];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	n = procfs_read(p, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return procfs_parse_creds(buf, (size_t)n, ret);
}

int procfs_nspid(int pid, int *ret)
{
	char p[64], buf[4096], *l, *end;
	ssize_t n;
	long v = -1;

	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	n = procfs_read(p, buf, sizeof(buf) - 1);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	l = strstr(buf, "\nNSpid:");
	if (!l) {
		*ret = pid; /* no pid namespaces here */
		return 0;
	}
	for (l += 7; *l && *l != '\n'; l = end) { /* the last: the innermost namespace */
		long x = strtol(l, &end, 10);

		if (end == l)
			break;
		v = x;
	}
	if (v <= 0)
		return -EINVAL;
	*ret = (int)v;
	return 0;
}

int procfs_uid(int pid, uid_t *ret)
{
	struct proc_creds c;
	int r = procfs_creds(pid, &c);

	if (r < 0)
		return r;
	*ret = c.ruid;
	return 0;
}

int procfs_exe(int pid, char *buf, size_t len)
{
	char p[64];
	ssize_t n;

	if (len == 0)
		return -EINVAL;
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	n = readlink(p, buf, len);
	if (n < 0)
		return -errno;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	buf[n] = 0;
	return 0;
}

int procfs_syscall(int pid, int tid, int *ret_nr)
{
	char p[96], buf[256];
	ssize_t n;
	long nr;
	char *end;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/syscall", pid, tid);
	n = procfs_read(p, buf, sizeof(buf) - 1);
	if (n < 0)
		return (int)n;
	buf[n] = 0;
	if (!strncmp(buf, "running", 7))
		return -EAGAIN; /* on a CPU: nothing to say */
	nr = strtol(buf, &end, 10);
	if (end == buf)
		return -EINVAL;
	*ret_nr = (int)nr; /* -1: blocked outside a syscall (a fault, a stop) */
	return 0;
}

int procfs_sig_caught(int pid, int sig)
{
	char p[64], buf[4096], *l;
	unsigned long long mask;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	n = procfs_read(p, buf, sizeof(buf) - 1);
	if (n < 0)
		return (int)n;
	buf[n] = 0;
	l = strstr(buf, "\nSigCgt:");
	if (!l || sscanf(l + 8, "%llx", &mask) != 1 || sig < 1 || sig > 64)
		return -EINVAL;
	return !!(mask & (1ull << (sig - 1)));
}

static int read_text(const char *p, char *buf, size_t len)
{
	ssize_t n = procfs_read(p, buf, len - 1);

	if (n < 0) {
		buf[0] = 0;
		return (int)n;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == 0))
		n--;
	buf[n] = 0;
	return 0;
}

int procfs_wchan(int pid, int tid, char *buf, size_t len)
{
	char p[64];
	int r;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/wchan", pid, tid);
	r = read_text(p, buf, len);
	if (r == 0 && !strcmp(buf, "0"))
		buf[0] = 0;
	return r;
}

int procfs_kstack(int pid, int tid, char *buf, size_t len)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/task/%d/stack", pid, tid);
	return read_text(p, buf, len);
}

int procfs_foreach_pid(int pid, int (*fn)(void *ctx, int id), void *ctx)
{
	char p[64];
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (pid > 0)
		snprintf(p, sizeof(p), "/proc/%d/task", pid);
	else
		snprintf(p, sizeof(p), "/proc");
	d = opendir(p);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && !r) {
		char *end;
		long id;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		id = strtol(de->d_name, &end, 10);
		if (*end || id <= 0)
			continue;
		r = fn(ctx, (int)id);
	}
	closedir(d);
	return r;
}

/* The children of every thread of pid, from /proc/PID/task/TID/children. */
struct children_ctx {
	int pid;
	int (*fn)(void *ctx, int child);
	void *ctx;
	int err;
};

static int thread_children(void *cp, int tid)
{
	struct children_ctx *c = cp;
	char p[96], buf[4096], *s, *end;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", c->pid, tid);
	n = procfs_read(p, buf, sizeof(buf) - 1);
	if (n < 0) {
		if (n == -ENOENT && !c->err)
			c->err = access("/proc/self/task", F_OK) == 0 ? -EOPNOTSUPP : (int)n;
		return 0;
	}
	buf[n] = 0;
	for (s = buf; *s;) {
		long v = strtol(s, &end, 10);

		if (end == s)
			break;
		if (v > 0 && c->fn(c->ctx, (int)v))
			return 1;
		s = end;
	}
	return 0;
}

int procfs_foreach_child(int pid, int (*fn)(void *ctx, int child), void *ctx)
{
	struct children_ctx c = {pid, fn, ctx, 0};
	char p[96];
	int r;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", pid, pid);
	if (access(p, F_OK) < 0)
		return errno == ENOENT && access("/proc/self/task", F_OK) == 0 &&
			       procfs_stat(pid, -1, &(struct proc_stat){0}) == 0
			   ? -EOPNOTSUPP
			   : -errno;
	r = procfs_foreach_pid(pid, thread_children, &c);
	return r < 0 ? r : 0;
}

int procfs_netns(int pid, uint64_t *ret_ino)
{
	char p[64];
	struct stat st;

	if (pid > 0)
		snprintf(p, sizeof(p), "/proc/%d/ns/net", pid);
	else
		snprintf(p, sizeof(p), "/proc/self/ns/net");
	if (stat(p, &st) < 0)
		return -errno;
	*ret_ino = (uint64_t)st.st_ino;
	return 0;
}
