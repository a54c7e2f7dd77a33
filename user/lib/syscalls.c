/*
 * Syscall tables. Progress rule (docs/architecture.md): a completed syscall of a rank's main
 * thread is progress unless it is a wait that came back empty (poll/select/epoll returning 0,
 * a timed-out or interrupted futex) or a sleep/yield, which a stalled rank can do forever.
 */
#include "lib/syscalls.h"

#include <stdio.h>
#include <sys/syscall.h>

#include "ftbpf/abi.h"
#include "syscall_names.h"

#define NNAMES ((int)(sizeof(syscall_names) / sizeof(syscall_names[0])))

/*
 * The uretprobe syscall (x86-64, Linux 6.11+): a return probe on a function makes the probed
 * thread execute it as the function returns. It is the kernel's doing, not the program's, and
 * older headers do not name it.
 */
#if defined(__x86_64__)
#define NR_URETPROBE 335
#else
#define NR_URETPROBE -1
#endif

const char *syscalls_name(int nr)
{
	if (nr == NR_URETPROBE)
		return "uretprobe";
	if (nr < 0 || nr >= NNAMES)
		return NULL;
	return syscall_names[nr];
}

const char *syscalls_format(int nr, char *buf, size_t len)
{
	const char *n = syscalls_name(nr);

	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "syscall_%d", nr);
	return buf;
}

unsigned int syscalls_class(int nr)
{
	if (nr == NR_URETPROBE) /* a probe's doing: never progress */
		return FTBPF_SC_IDLE;
	switch (nr) {
#ifdef SYS_sched_yield
	case SYS_sched_yield:
#endif
#ifdef SYS_nanosleep
	case SYS_nanosleep:
#endif
#ifdef SYS_clock_nanosleep
	case SYS_clock_nanosleep:
#endif
#ifdef SYS_pause
	case SYS_pause:
#endif
#ifdef SYS_rt_sigsuspend
	case SYS_rt_sigsuspend:
#endif
#ifdef SYS_rt_sigtimedwait
	case SYS_rt_sigtimedwait:
#endif
		return FTBPF_SC_IDLE;
#ifdef SYS_futex
	case SYS_futex:
#endif
#ifdef SYS_futex_waitv
	case SYS_futex_waitv:
#endif
		return FTBPF_SC_FUTEX;
#ifdef SYS_poll
	case SYS_poll:
#endif
#ifdef SYS_ppoll
	case SYS_ppoll:
#endif
#ifdef SYS_select
	case SYS_select:
#endif
#ifdef SYS_pselect6
	case SYS_pselect6:
#endif
#ifdef SYS_epoll_wait
	case SYS_epoll_wait:
#endif
#ifdef SYS_epoll_pwait
	case SYS_epoll_pwait:
#endif
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
#ifdef SYS_recvfrom
	case SYS_recvfrom:
#endif
#ifdef SYS_recvmsg
	case SYS_recvmsg:
#endif
#ifdef SYS_recvmmsg
	case SYS_recvmmsg:
#endif
#ifdef SYS_wait4
	case SYS_wait4:
#endif
#ifdef SYS_waitid
	case SYS_waitid:
#endif
		return FTBPF_SC_WAIT;
	}
	return FTBPF_SC_PROGRESS;
}

int syscalls_is_sleep(int nr)
{
	/* the never-progress class, less sched_yield (a spin, not a sleep) */
#ifdef SYS_sched_yield
	if (nr == SYS_sched_yield)
		return 0;
#endif
	return syscalls_class(nr) == FTBPF_SC_IDLE;
}

int syscalls_is_child_wait(int nr)
{
#ifdef SYS_wait4
	if (nr == SYS_wait4)
		return 1;
#endif
#ifdef SYS_waitid
	if (nr == SYS_waitid)
		return 1;
#endif
#ifdef SYS_rt_sigsuspend
	if (nr == SYS_rt_sigsuspend)
		return 1;
#endif
	return 0;
}

unsigned int syscalls_cadence(int nr)
{
	unsigned int c = syscalls_class(nr);

	switch (nr) {
#ifdef SYS_sched_yield
	case SYS_sched_yield:
		return FTBPF_SC_CAD_WAIT;
#endif
#ifdef SYS_wait4
	case SYS_wait4:
		return 0;
#endif
#ifdef SYS_waitid
	case SYS_waitid:
		return 0;
#endif
#ifdef SYS_read
	case SYS_read:
#endif
#ifdef SYS_readv
	case SYS_readv:
#endif
#ifdef SYS_pread64
	case SYS_pread64:
#endif
#ifdef SYS_preadv
	case SYS_preadv:
#endif
#ifdef SYS_preadv2
	case SYS_preadv2:
#endif
		return FTBPF_SC_CAD_READ;
	}
	return c == FTBPF_SC_WAIT || c == FTBPF_SC_FUTEX ? FTBPF_SC_CAD_WAIT : 0;
}

int syscalls_is_comm_wait(int nr)
{
	unsigned int c = syscalls_class(nr);

	if (c == FTBPF_SC_FUTEX)
		return 1;
	if (c == FTBPF_SC_WAIT) {
#ifdef SYS_wait4
		if (nr == SYS_wait4)
			return 0;
#endif
#ifdef SYS_waitid
		if (nr == SYS_waitid)
			return 0;
#endif
		return 1;
	}
	switch (nr) {
#ifdef SYS_read
	case SYS_read:
#endif
#ifdef SYS_readv
	case SYS_readv:
#endif
#ifdef SYS_accept
	case SYS_accept:
#endif
#ifdef SYS_accept4
	case SYS_accept4:
#endif
#ifdef SYS_connect
	case SYS_connect:
#endif
#ifdef SYS_sendto
	case SYS_sendto:
#endif
#ifdef SYS_sendmsg
	case SYS_sendmsg:
#endif
#ifdef SYS_write
	case SYS_write:
#endif
		return 1;
	}
	return 0;
}
