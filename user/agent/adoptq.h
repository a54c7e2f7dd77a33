/*
 * The adoption reader: a worker thread that reads, off the event loop, what deciding "is this
 * process a rank?" needs — the environment of every process that execs (up to 256 KiB each)
 * and, when exec events were folded or lost, the environment of every process in /proc. Only
 * the rank candidates come back to the loop (adoptq_take, when adoptq_fd is readable), with a
 * pidfd opened before the read. Waiting work is bounded in all and per user; what does not fit
 * is counted, and the caller walks /proc later instead.
 */
#ifndef FTBPF_ADOPTQ_H
#define FTBPF_ADOPTQ_H

#include <stdint.h>
#include <sys/types.h>

struct adoptq;
struct rank_ident;

/* netns: read only processes in this network namespace (0: any). NULL with errno. */
struct adoptq *adoptq_new(uint64_t netns);
/* Stops the worker after its current read; candidates not taken are closed. */
void adoptq_free(struct adoptq *q);
/* An eventfd, readable while candidates wait. */
int adoptq_fd(const struct adoptq *q);
/* Process pid of user uid exec'd: read its environment. 0, or -EAGAIN when too much of uid's
 * (or in all) waits. */
int adoptq_exec(struct adoptq *q, int pid, uid_t uid);
/* Read every process in /proc (once; a walk asked for while one waits or runs is the same). */
void adoptq_walk(struct adoptq *q);
/*
 * Hand at most max candidates to fn, on the caller's thread, oldest first: pidfd (fn's to keep
 * or close), err 0 with id the identity its environment names, or -EINVAL (malformed rank
 * variables); walked: found by a walk of /proc (else by its exec). How many still wait.
 */
typedef void (*adoptq_fn)(void *ctx, int pid, int pidfd, int err, const struct rank_ident *id,
			  int walked);
int adoptq_take(struct adoptq *q, int max, adoptq_fn fn, void *ctx);

struct adoptq_counters {
	uint64_t reads;	  /* environments read */
	uint64_t refused; /* exec events not read: too much waited */
	uint64_t walks;	  /* walks of /proc */
};
void adoptq_counters(struct adoptq *q, struct adoptq_counters *ret);

#endif
