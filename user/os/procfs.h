/* Small /proc readers used where the BPF side has no answer (environ, wchan, fallbacks). */
#ifndef FTBPF_PROCFS_H
#define FTBPF_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_stat {
	char state;
	int ppid;
	uint64_t utime_ns, stime_ns;
	uint64_t start_ns; /* since boot */
	char comm[16];
};

/* Read at most cap bytes of a /proc file; returns bytes read or -errno. */
ssize_t procfs_read(const char *path, char *buf, size_t cap);
ssize_t procfs_environ(int pid, char *buf, size_t cap);
/* tid < 0: the process; else /proc/pid/task/tid. */
int procfs_stat(int pid, int tid, struct proc_stat *ret);
/* A process's user and group ids (/proc/PID/status "Uid:" and "Gid:": real, effective, saved,
 * filesystem). */
struct proc_creds {
	uid_t ruid, euid, suid, fsuid;
	gid_t rgid, egid, sgid, fsgid;
	uint64_t cap_prm, cap_eff; /* permitted and effective capabilities */
};
int procfs_creds(int pid, struct proc_creds *ret);
/* Parse the text of /proc/PID/status for its ids. 0 or -EINVAL. */
int procfs_parse_creds(const char *buf, size_t len, struct proc_creds *ret);
/* Does the process run with privileges its real user does not have: a set-user-ID or
 * set-group-ID program (the kernel's AT_SECURE), or capabilities (a program with file
 * capabilities, ambient ones)? Root's have them all: callers ask for other users'. */
static inline int procfs_creds_elevated(const struct proc_creds *c)
{
	return c->euid != c->ruid || c->suid != c->ruid || c->fsuid != c->ruid ||
	       c->egid != c->rgid || c->sgid != c->rgid || c->fsgid != c->rgid ||
	       (c->ruid != 0 && (c->cap_prm || c->cap_eff));
}
/* The owner of a process: its real uid (a set-user-ID program run by a user stays that
 * user's, whatever its effective uid; /proc/PID itself is owned by the effective one). */
int procfs_uid(int pid, uid_t *ret);
/* pid as its innermost pid namespace numbers it (NSpid's last field: what the process's own
 * getpid() says). 0 or -errno. */
int procfs_nspid(int pid, int *ret);
/* The program a process runs (/proc/PID/exe, NUL-terminated; a deleted one keeps the kernel's
 * " (deleted)" suffix). 0 or -errno (-ENAMETOOLONG when it does not fit). */
int procfs_exe(int pid, char *buf, size_t len);
/* The inode of pid's network namespace (pid 0: ours). 0 or -errno. */
int procfs_netns(int pid, uint64_t *ret_ino);
/* The syscall thread tid of pid is blocked in (/proc/PID/task/TID/syscall): 0 and *ret_nr
 * (-1: blocked outside a syscall), -EAGAIN when it is running, or -errno. */
int procfs_syscall(int pid, int tid, int *ret_nr);
/* Does pid catch sig (a handler installed: /proc/PID/status SigCgt)? 1, 0, or -errno. */
int procfs_sig_caught(int pid, int sig);
int procfs_wchan(int pid, int tid, char *buf, size_t len);
int procfs_kstack(int pid, int tid, char *buf, size_t len);
/* Calls fn for every numeric entry of /proc (or /proc/pid/task when pid > 0). */
int procfs_foreach_pid(int pid, int (*fn)(void *ctx, int id), void *ctx);
/* Calls fn for every child process of every thread of pid (/proc/PID/task/TID/children);
 * -EOPNOTSUPP when the kernel has no such files (CONFIG_PROC_CHILDREN off). */
int procfs_foreach_child(int pid, int (*fn)(void *ctx, int child), void *ctx);
/* Parse the text of /proc/PID/stat. */
int procfs_parse_stat(const char *buf, size_t len, struct proc_stat *ret);

#endif
