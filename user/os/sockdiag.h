/*
 * The TCP sockets of ranks, from the kernel: sock_diag netlink (NETLINK_SOCK_DIAG, inet_diag
 * with tcp_info) for every TCP socket of this network namespace, the socket inodes a process
 * holds (/proc/PID/fd links), and the descriptor its main thread is blocked on
 * (/proc/PID/syscall). Never /proc/net/tcp: one netlink dump answers for every rank at once.
 */
#ifndef FTBPF_SOCKDIAG_H
#define FTBPF_SOCKDIAG_H

#include <stdint.h>

struct sd_endpoint {
	uint32_t ip; /* IPv4 (or IPv4-mapped IPv6), host byte order */
	uint16_t port;
};

struct sd_sock {
	uint32_t ino;
	uint8_t state; /* TCP_ESTABLISHED, ... */
	struct sd_endpoint local, peer;
	uint32_t rqueue, wqueue;	     /* bytes unread here; bytes not yet acknowledged */
	uint32_t last_sent_ms, last_recv_ms; /* since data was last sent / received (tcp_info) */
};

/* Every TCP socket of this network namespace (IPv4, and IPv6 ones with IPv4-mapped
 * addresses), sorted by inode. *ret is the caller's to free. 0 or -errno. */
int sockdiag_dump(struct sd_sock **ret, int *ret_n);
/* The socket in the sorted table with inode ino, or NULL. */
const struct sd_sock *sockdiag_find(const struct sd_sock *v, int n, uint32_t ino);
/* The socket inodes of pid (at most max). 0 and *ret_n, or -errno. */
int sockdiag_proc_inodes(int pid, uint32_t *ino, int max, int *ret_n);
/* The socket inode of pid's descriptor fd: 0, -ENOTSOCK, or -errno. */
int sockdiag_fd_inode(int pid, int fd, uint32_t *ret_ino);
/* What pid's main thread is blocked in: the syscall and its first argument. 0, -EAGAIN
 * (running), or -errno. */
int sockdiag_blocked_call(int pid, int *ret_nr, long *ret_arg0);

#endif
