/*
 * Who is on the other end of a connection accepted here: the uid of a local peer, from the
 * kernel (SO_PEERCRED for a Unix socket; for TCP over loopback, the owner of the peer's socket
 * through sock_diag netlink). Used to bound what one local user can hold of a server.
 */
#ifndef FTBPF_PEERUID_H
#define FTBPF_PEERUID_H

#include <sys/types.h>

/* 0 and the peer's uid; -ENOENT when the peer is not on this host (or not found); -errno. */
int peeruid_of(int fd, uid_t *ret);

#endif
