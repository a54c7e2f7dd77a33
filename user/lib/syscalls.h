/* Syscall names and how each syscall's completion counts for progress (see docs). */
#ifndef FTBPF_SYSCALLS_H
#define FTBPF_SYSCALLS_H

#include <stddef.h>

/* Name of syscall nr, or NULL. */
const char *syscalls_name(int nr);
/* "futex" or "syscall_123" into buf; returns buf. */
const char *syscalls_format(int nr, char *buf, size_t len);
/* FTBPF_SC_* class used by the BPF program at syscall exit of a rank's main thread. */
unsigned int syscalls_class(int nr);
/* FTBPF_SC_CAD_* bits for the step cadence (see abi.h): waits on the peers (the progress
 * class's waits less wait4/waitid, plus sched_yield: MPI's busy-wait loop), and reads. */
unsigned int syscalls_cadence(int nr);
/* A wait on another party (futex, poll family, socket receive, accept...). */
int syscalls_is_comm_wait(int nr);
/* A deliberate sleep (nanosleep, clock_nanosleep, pause, sigsuspend...). */
int syscalls_is_sleep(int nr);
/* A wait for a child process (wait4, waitid; rt_sigsuspend, as timeout(1) waits for
 * SIGCHLD): what a wrapper or a launcher does while its child works. */
int syscalls_is_child_wait(int nr);

#endif
