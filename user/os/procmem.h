/*
 * Another process, held by its identity rather than its pid: its /proc directory opened and
 * checked against the pidfd that names it (so a pid reused meanwhile is refused), its memory
 * read through that directory's `mem` (bound to the process at open: a later process with the
 * same pid is never read), its files (maps, task/TID/comm) opened relative to it. Needs
 * ptrace access to the process (root, or its owner where Yama allows).
 */
#ifndef FTBPF_PROCMEM_H
#define FTBPF_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct procmem {
	int pid;
	int dirfd; /* /proc/PID */
	int memfd; /* /proc/PID/mem */
};

/* Open pid, checked against pidfd (borrowed): 0, -ESRCH when it is not (or no longer) the
 * process pidfd names, or -errno. pidfd < 0: one is opened here, and then the process is the
 * one at pid when this is called. */
int procmem_open(struct procmem *ret, int pid, int pidfd);
void procmem_close(struct procmem *pm);
/* Read len bytes at addr: 0, or -EFAULT (unmapped, or the process is gone). */
int procmem_read(const struct procmem *pm, uint64_t addr, void *buf, size_t len);
/* openat(dirfd, name, O_RDONLY|O_CLOEXEC|O_NOFOLLOW|flags): an fd or -errno. */
int procmem_openat(const struct procmem *pm, const char *name, int flags);

#endif
