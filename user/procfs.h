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
int procfs_uid(int pid, uid_t *ret);
int procfs_wchan(int pid, int tid, char *buf, size_t len);
int procfs_kstack(int pid, int tid, char *buf, size_t len);
/* Calls fn for every numeric entry of /proc (or /proc/pid/task when pid > 0). */
int procfs_foreach_pid(int pid, int (*fn)(void *ctx, int id), void *ctx);
/* Parse the text of /proc/PID/stat. */
int procfs_parse_stat(const char *buf, size_t len, struct proc_stat *ret);

#endif
