/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libftbpf: the client library of the ftbpf node agent, for training code.
 *
 * Countdown timers with torch.distributed.elastic semantics, enforced from the kernel: if a
 * scope is not released before its expiry, the process gets the timer's signal (SIGKILL by
 * default) the moment it enters a syscall, or from the agent within one scan interval when it
 * makes none. Acquire, release, ping and step are plain stores into the process's own slot,
 * a page shared with the agent and the kernel: no syscall, no lock, thread-safe.
 *
 * Link with -lftbpf (shared or static). Functions return 0 (or a timer id >= 0) on success and
 * a negative errno on failure; none of them prints or exits.
 */
#ifndef FTBPF_CLIENT_H
#define FTBPF_CLIENT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ftbpf;

/*
 * ftbpf_open - connect to ftbpfd and map this process's slot.
 * @socket_path: control socket; NULL for $FTBPF_SOCKET, else /run/ftbpf/ftbpfd.sock.
 * @job, @rank: identity to use if the process is not already adopted as a rank from its
 *              environment (RANK/WORLD_SIZE, OMPI_*, FTBPF_*); NULL / -1 for defaults.
 * @ret: the handle, owned by the caller until ftbpf_close().
 * Registers the calling process (the agent checks it by SO_PEERCRED). Returns 0, -ECONNREFUSED
 * or -ENOENT when no agent listens, -EPROTO on an unexpected answer.
 */
int ftbpf_open(const char *socket_path, const char *job, int rank, struct ftbpf **ret);

/* ftbpf_close - release every timer still armed and drop the mapping. Accepts NULL. */
void ftbpf_close(struct ftbpf *h);

/*
 * ftbpf_timer_acquire - arm a countdown timer for @scope.
 * @expires_in: seconds from now (>= 0).
 * @sig: signal sent at expiry; 0 for SIGKILL (torch's default).
 * Returns a timer id (>= 0) for ftbpf_timer_release(), or a negative errno. Up to 16 timers
 * live in the slot (a few ns each); beyond that they are kept by the agent through the control
 * socket (a round trip each), never dropped. Scopes may nest and threads may acquire
 * concurrently. A @scope longer than 39 bytes is kept in the slot as "~" and its last 38
 * bytes ("~ng/path/train.py#123"); through the socket, up to 100 bytes.
 */
int ftbpf_timer_acquire(struct ftbpf *h, const char *scope, double expires_in, int sig);

/*
 * ftbpf_timer_release - disarm a timer. Releasing a timer that already expired is a no-op
 * (as in torch): returns 0. -EINVAL for an unknown id.
 */
int ftbpf_timer_release(struct ftbpf *h, int id);

/* ftbpf_ping - record progress (the agent's hang detector counts it). */
void ftbpf_ping(struct ftbpf *h);

/* ftbpf_step - record the training step reached (also progress). */
void ftbpf_step(struct ftbpf *h, uint64_t step);

/* ftbpf_slot_timers_in_use - timers armed in the slot now (for tests and diagnostics). */
int ftbpf_slot_timers_in_use(const struct ftbpf *h);

#ifdef __cplusplus
}
#endif
#endif
