/* The timer FIFO held across agent restarts: see fifohold.h. */
#include "agent/fifohold.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "lib/jsonx.h"
#include "lib/starttime.h"
#include "os/log.h"
#include "os/pidfd.h"
#include "os/procfs.h"
#include "os/statefile.h"

#define FDNAME	    "timer-fifo"
#define HOLDER_FILE "timer-fifo.holder"
#define HOLDER_COMM "ftbpf-fifohold"
#define HOLD_IDLE_S 600

static int same_fifo(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && S_ISFIFO(a.st_mode) && lstat(path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int fifohold_inherited(const char *path)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(1, &names), fd = -1;

	for (int i = 0; i < n; i++) {
		int f = SD_LISTEN_FDS_START + i;

		if (names && names[i] && !strcmp(names[i], FDNAME)) {
			if (fd < 0 && same_fifo(f, path)) {
				fd = f;
				(void)fcntl(f, F_SETFD, FD_CLOEXEC);
			} else {
				close(f); /* an earlier FIFO at that path, since replaced */
			}
		}
		free(names ? names[i] : NULL);
	}
	free(names);
	return fd;
}

/* The live holder recorded in state_dir, and the FIFO it holds: 1 when it holds st's. */
static int holder_alive(const char *state_dir, const struct stat *st)
{
	struct json_object *o = statefile_read(state_dir, HOLDER_FILE), *v;
	struct proc_stat ps;
	int pid = 0, ok = 0;
	uint64_t start = 0, dev = 0, ino = 0;

	if (!o)
		return 0;
	if (json_object_object_get_ex(o, "pid", &v))
		pid = json_object_get_int(v);
	if (json_object_object_get_ex(o, "start_ns", &v))
		start = json_object_get_uint64(v);
	if (json_object_object_get_ex(o, "dev", &v))
		dev = json_object_get_uint64(v);
	if (json_object_object_get_ex(o, "ino", &v))
		ino = json_object_get_uint64(v);
	json_object_put(o);
	ok = pid > 0 && procfs_stat(pid, -1, &ps) == 0 && starttime_same(ps.start_ns, start) &&
	     !strcmp(ps.comm, HOLDER_COMM) && ps.state != 'Z' && dev == (uint64_t)st->st_dev &&
	     ino == (uint64_t)st->st_ino;
	return ok;
}

/* Start a holder of fd (a grandchild, so that nobody has to reap it); its pid, or -errno. */
static int spawn_holder(const char *path, int fd, const char *state_dir)
{
	int p[2], pid, holder = -1, status;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		sigset_t none;
		int g, nul;

		setsid();
		g = fork();
		if (g != 0) {
			if (write(p[1], &g, sizeof(g)) != sizeof(g))
				_exit(1);
			_exit(0);
		}
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		if (fd == 3)
			(void)fcntl(3, F_SETFD, 0);
		else if (dup2(fd, 3) < 0)
			_exit(1);
		close_range(4, ~0U, 0);
		execl("/proc/self/exe", "ftbpfd", "--hold-timer-fifo", path, state_dir,
		      (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if (read(p[0], &holder, sizeof(holder)) != sizeof(holder))
		holder = -EIO;
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return holder;
}

void fifohold_keep(const char *path, int fd, const char *state_dir)
{
	struct json_object *o;
	struct proc_stat ps;
	struct stat st;
	int pid;

	if (fd < 0 || fstat(fd, &st) < 0)
		return;
	/* a deep pipe: requests written while no agent reads wait there, not fail */
	(void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
	if (getenv("NOTIFY_SOCKET")) {
		/* the service manager keeps a copy while the agent restarts */
		(void)sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=" FDNAME);
		if (sd_pid_notify_with_fds(0, 0, "FDSTORE=1\nFDNAME=" FDNAME, &fd, 1) <= 0)
			log_warn(
			    "timer FIFO %s: not kept in the service's file descriptor store "
			    "(FileDescriptorStoreMax= in the unit): workers' requests fail while "
			    "the agent restarts",
			    path);
		return;
	}
	if (holder_alive(state_dir, &st))
		return;
	pid = spawn_holder(path, fd, state_dir);
	if (pid < 0 || procfs_stat(pid, -1, &ps) < 0) {
		log_warn("timer FIFO %s: no holder process (%s): workers' requests fail while the "
			 "agent restarts",
			 path, strerror(pid < 0 ? -pid : ESRCH));
		return;
	}
	o = json_object_new_object();
	jint(o, "pid", pid);
	json_object_object_add(o, "start_ns", json_object_new_uint64(ps.start_ns));
	json_object_object_add(o, "dev", json_object_new_uint64((uint64_t)st.st_dev));
	json_object_object_add(o, "ino", json_object_new_uint64((uint64_t)st.st_ino));
	if (statefile_write(state_dir, HOLDER_FILE, o) < 0)
		log_warn("timer FIFO holder %d: cannot record it in %s", pid, state_dir);
	json_object_put(o);
}

/* Does an agent hold the lock of state_dir (ftbpfd.lock in /proc/locks)? Read, not tried: a
 * lock taken here, however briefly, could refuse an agent's start. */
static int agent_runs(const char *state_dir)
{
	char p[300], line[256];
	struct stat st;
	FILE *f;
	int found = 0;

	snprintf(p, sizeof(p), "%s/ftbpfd.lock", state_dir);
	if (stat(p, &st) < 0 || !(f = fopen("/proc/locks", "re")))
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		/* "1: FLOCK  ADVISORY  WRITE 6631 fe:00:10969573 0 EOF" ("-> " before a waiter) */
		char *save = NULL, *t = strtok_r(line, " ", &save);
		unsigned maj, min;
		unsigned long long ino;
		int after = -1;

		for (; t; t = strtok_r(NULL, " ", &save)) {
			if (!strcmp(t, "FLOCK"))
				after = 0;
			else if (after >= 0 && ++after == 4)
				break; /* ADVISORY WRITE PID, then DEV:INO */
		}
		if (t && sscanf(t, "%x:%x:%llu", &maj, &min, &ino) == 3 &&
		    ino == (unsigned long long)st.st_ino && makedev(maj, min) == st.st_dev)
			found = 1;
	}
	fclose(f);
	return found;
}

int fifohold_main(const char *path, const char *state_dir)
{
	struct stat fs, ps;
	int idle = 0;

	prctl(PR_SET_NAME, HOLDER_COMM);
	if (fstat(3, &fs) < 0 || !S_ISFIFO(fs.st_mode))
		return 1;
	/* until the FIFO at path is another one or gone (a holder per FIFO, never a stray), or
	 * no agent ran for HOLD_IDLE_S: it bridges restarts, not an agent stopped for good */
	for (;;) {
		sleep(2);
		if (lstat(path, &ps) < 0 || ps.st_dev != fs.st_dev || ps.st_ino != fs.st_ino)
			return 0;
		idle = agent_runs(state_dir) ? 0 : idle + 2;
		if (idle >= HOLD_IDLE_S)
			return 0;
	}
}

void fifohold_stop(const char *state_dir)
{
	struct json_object *o = statefile_read(state_dir, HOLDER_FILE), *v;
	struct proc_stat ps;
	uint64_t start = 0;
	int pid = 0, pfd;

	if (!o)
		return;
	if (json_object_object_get_ex(o, "pid", &v))
		pid = json_object_get_int(v);
	if (json_object_object_get_ex(o, "start_ns", &v))
		start = json_object_get_uint64(v);
	json_object_put(o);
	if (pid <= 0 || procfs_stat(pid, -1, &ps) < 0 || !starttime_same(ps.start_ns, start) ||
	    strcmp(ps.comm, HOLDER_COMM))
		return;
	pfd = pidfd_open_pid(pid); /* that process, not whatever has its pid next */
	if (pfd >= 0) {
		(void)pidfd_signal(pfd, SIGTERM);
		close(pfd);
	}
}
