/*
 * Processes by pidfd: a pidfd names one process incarnation, so a signal sent or a check made
 * through it can never reach a later process that reuses the pid. The agent never signals by
 * bare pid.
 */
#ifndef FTBPF_PIDFD_H
#define FTBPF_PIDFD_H

#include <sys/types.h>

/* pidfd_open(pid, 0): the fd (owned by the caller) or -errno. */
int pidfd_open_pid(int pid);
/* pidfd_send_signal(fd, sig): 0 or -errno (-ESRCH: the process is gone). sig 0 only checks. */
int pidfd_signal(int pidfd, int sig);
/* The pid the pidfd refers to now (its fdinfo), -ESRCH when the process has exited. */
int pidfd_pid(int pidfd);
/* The process at pid is still the one pidfd names, and alive: 0, else -ESRCH. */
int pidfd_is(int pidfd, int pid);

#endif
