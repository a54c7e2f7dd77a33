/*
 * Adoption: which processes are ranks, and taking them into the rank table and the kernel's
 * tracked set. A process becomes a rank from its launcher's variables (lib/ident.c) when it
 * execs, when /proc is walked (at start, and again after the kernel folded or lost exec
 * events), or when it registers through the control socket. What a rank was doing before it
 * was adopted (blocked threads, children forked before its adoption reached the kernel) is
 * read from /proc. After a restart, the table is rebuilt from the pinned procs map. A wrapper
 * (sh, timeout) that forks the real rank hands the rank over to its only child when that
 * child carries the same rank variables (docs/architecture.md, "Ranks behind wrappers").
 */
#ifndef FTBPF_ADOPT_H
#define FTBPF_ADOPT_H

#include <stdint.h>
#include <sys/types.h>

struct tracker;
struct ranks;
struct eventlog;
struct rank_ident;
struct json_object;
struct adopter;
struct job;
struct rank;

/* NULL on ENOMEM. only_jobs: an fnmatch pattern of the jobs to adopt ("" all); only_netns:
 * only processes in our network namespace. All borrowed. */
struct adopter *adopter_new(struct tracker *tr, struct ranks *ranks, struct eventlog *el,
			    const char *only_jobs, int only_netns);
void adopter_free(struct adopter *ad);
/* This host's name, for the ids of jobs local to it (lib/ident.h: ident_scope). */
void adopter_set_node(struct adopter *ad, const char *node);
/* Called when a rank of job j is adopted and all of j's earlier ranks here ended: the run they
 * were is judged (verdict, events, decisions) before the new run forgets them. */
void adopter_on_run_end(struct adopter *ad, void (*fn)(void *ctx, struct job *j), void *ctx);
/* The rank table is shared per user (lib/shares.c's "ranks"): at a user's share its oldest ended
 * rank is forgotten through fn (which removes it from the table), and refusals are said
 * through tb. */
struct tables;
void adopter_on_forget(struct adopter *ad, void (*fn)(void *ctx, struct rank *k), void *ctx,
		       struct tables *tb);
/* A user other than root keeps its share of ended ranks (lib/shares.c's "ended_ranks"), the
 * oldest forgotten first: thousands of short ranks must not make every scan and status slow. */
void adopt_trim_ended(struct adopter *ad, uid_t uid);
/* Does --only-jobs let this job in? */
int adopt_job_wanted(const struct adopter *ad, const char *job);
/* Adopt pid if its environment names a rank. how: "exec", "scan", "register". 0 (also when
 * it is no rank, or one already), or -errno. */
int adopt_pid(struct adopter *ad, int pid, const char *how);
/* Read the environments of processes that exec (and walk /proc) off the loop, on a worker
 * thread: the fd to watch in the loop (then call adopt_take_ready), or -errno. Without it,
 * both happen on the caller's thread. */
int adopter_start_reader(struct adopter *ad);
/* A process of user uid exec'd (no rank's: an untracked one): is it a rank? */
void adopt_exec_event(struct adopter *ad, int pid, uid_t uid);
/* Adopt at most max of the candidates the reader found; how many still wait. */
int adopt_take_ready(struct adopter *ad, int max);
/* Make pid (named by pidfd, which this takes over) a rank with identity id. registered: it
 * asked itself (control socket); a rank's child may then be a rank of its own. */
int adopt_as(struct adopter *ad, int pid, int pidfd, const struct rank_ident *id, const char *how,
	     int registered);
/* A rank's child (ppid its parent) ran a program: when its parent is a wrapper of that rank
 * (sh, timeout; or a wrapper that handed the rank over before) and the child carries the same
 * rank variables, the child takes the rank over. 0 or -errno. */
int adopt_exec_child(struct adopter *ad, int pid, int ppid);
/* A tracked process (rank k, or a rank's child when k is NULL) exec'd: its owner is checked
 * again. 1 when it left (its job, or its rank's tree), else 0. */
int adopt_exec_recheck(struct adopter *ad, struct rank *k, int tgid);
/* Walk /proc for ranks. */
void adopt_scan_all(struct adopter *ad);
/* Retry adoptions that failed for want of a resource; walk /proc again (at most every two
 * seconds) when the kernel folded or lost exec events since the last walk. */
void adopt_catch_up(struct adopter *ad, uint64_t now);
/* After a restart: the ranks of the pinned procs map, and their slots. */
void adopt_resume(struct adopter *ad);
/* adopted, adopt_errors, proc_rescans, added to object c. */
void adopter_counters(const struct adopter *ad, struct json_object *c);

#endif
