/*
 * The agent's JSON schema in one place: the events it logs (their common fields and shapes:
 * views.c) and what the control socket shows of ranks, jobs, threads and timers
 * (views_reply.c). Builders return a new object owned by the caller; they format what they are
 * given, or what watch/collect.h reads for them, and never change it.
 */
#ifndef FTBPF_VIEWS_H
#define FTBPF_VIEWS_H

#include <stdint.h>
#include <sys/types.h>

#include "ftbpf/abi.h"

struct json_object;
struct rank;
struct job;
struct tracker;
struct sampler;
struct timers;
struct ctl_counters;
struct swim_member;
struct inspector;
struct ftbpf_config;
struct collect_proc;

/* Where a rank's view reads from (all borrowed): the views of a rank, its threads and
 * children, and the hang report, ask watch/collect.h for each part as they go (it reads the
 * tracker's maps, the snapshot, /proc and the slots); views read nothing themselves. */
struct view_src {
	struct tracker *tr;
	struct sampler *sp;	 /* the last task snapshot (threads, GPU ioctls per thread) */
	const struct timers *tm; /* agent-held countdown timers */
	struct inspector *ins;	 /* reads Python stacks off the loop; NULL: none */
	struct rasq *rq;	 /* NCCL RAS answers (agent/rasquery.h); NULL: none */
};

double view_secs(uint64_t ns);
/* Seconds from t to now; 0 when t is not before now (read after now was taken: a thread
 * that entered its syscall meanwhile). */
double view_since(uint64_t now, uint64_t t);

/* ---- events: {"type": ...} plus the fields of each shape ---- */
struct json_object *view_event(const char *type);
/* pid, rank, job, uid, comm of a rank */
void view_rank_ids(struct json_object *o, const struct rank *k);
struct json_object *view_rank_event(const char *type, const struct rank *k);
/* job, uid */
struct json_object *view_job_event(const char *type, const struct job *j);
/* exit_code or signal (+ name, core_dumped), sender_pid/comm (null when none) */
void view_exit_fields(struct json_object *o, int status, uint32_t sender, const char *scomm);
struct json_object *view_adopt(const struct rank *k, const char *how, int exited);
/* "container": the rank's container and pod (null when it is in neither) */
void view_container(struct json_object *o, const struct rank *k);
/* a process of rank owner's tree: how is "adoption" for one found in /proc, else NULL */
struct json_object *view_child(int pid, int ppid, const struct rank *owner, const char *how);
struct json_object *view_child_exit(const struct ftbpf_event *e, const struct rank *owner);
/* signal generated or delivered (k NULL: a rank's child owned by uid) */
struct json_object *view_signal(const struct ftbpf_event *e, const struct rank *k, uint32_t uid);
/* a slot timer the kernel fired at syscall entry */
struct json_object *view_kernel_timer(const struct ftbpf_event *e, const struct rank *k);
struct json_object *view_oom(const struct ftbpf_event *e, const struct rank *k);
/* what the agent did to a rank: action, signal (+ name), result */
struct json_object *view_action(const struct rank *k, const char *action, int sig,
				const char *result);
/* the same for a process that is not a rank (a timer's) */
struct json_object *view_action_pid(int pid, uid_t uid, const char *action, int sig,
				    const char *result);
/* a timer the agent fired (k: the rank, NULL when the process is none); "result" is the
 * caller's to add */
struct json_object *view_timer_expired(int pid, uid_t uid, const struct rank *k, const char *scope,
				       const char *source, int sig, double late_ms);
/* what a process is doing now (collect_proc's): state, comm, syscall in flight, wait channel,
 * kernel stack */
void view_diagnosis(struct json_object *o, const struct collect_proc *p, uint64_t now);
/* the agent started, with the kernel side's features (watch/tracker.h) and its settings */
struct json_object *view_agent_start(int tp_btf, int task_iter, int oom, int resumed,
				     const struct ftbpf_config *cfg);
struct json_object *view_agent_stop(void);
/* records of the agreement store that were refused (root only) */
struct json_object *view_store_rejected(const char *key, const char *why, uint64_t count);
struct json_object *view_store_bad_reply(const char *why, uint64_t count);
/* To root: user refused n places of table (lib/shares.h) at its share or root's reserve. */
struct json_object *view_share_full(const char *table, uint32_t user, int64_t held, uint32_t share,
				    uint32_t reserve, uint64_t n);
/* a rank's exit, from its recorded exit status and fatal signal's sender */
struct json_object *view_rank_exit(const struct rank *k);
/* a rank that left its job (it runs as another user, or a set-ID program, now) */
struct json_object *view_rank_left(const struct rank *k, const char *why, uid_t now_uid,
				   uid_t now_euid);
struct json_object *view_recovered(const struct job *j);
struct cad_remote;
/* "straggler" or "straggler_recovered": rank k of job j, on node (this host); rem: the job's
 * ranks on other hosts (their stragglers are listed in `ranks` too) */
struct json_object *view_straggler(const char *type, const struct job *j, const struct rank *k,
				   const char *node, struct cad_remote *const *rem, int nrem);
/* the same for a rank of the job on another host, as this host judges it */
struct json_object *view_straggler_remote(const char *type, const struct job *j,
					  const struct cad_remote *x, struct cad_remote *const *rem,
					  int nrem);
struct json_object *view_job_failed(const struct job *j);
struct json_object *view_hard_timeout(const struct job *j, const char *action);
/* a peer of the heartbeat mesh changed state */
struct json_object *view_peer(const char *type, const struct swim_member *m);
struct json_object *view_folded(const struct rank *k, uint64_t count, uint64_t total);
/* A run of the job ended (no live rank left): "job_end", with the job's fields and state. */
struct json_object *view_job_end(const struct job *j);
/* The hang report: the job, why, every rank with its kernel stack, the culprits' threads
 * (refresh the snapshot with stacks first). Without Python stacks: agent/inspect.c adds them
 * (the culprits', and every rank's in a small job) before it is emitted. */
struct json_object *view_hang(const struct view_src *v, const struct job *j, uint64_t now,
			      double soft_timeout_s);

/* ---- control replies (views_reply.c) ---- */
struct json_object *view_ok(void);
struct json_object *view_err(const char *code, const char *msg);
/* A rank as `ftbpf status` shows it. */
struct json_object *view_rank(const struct view_src *v, const struct rank *k, uint64_t now);
/* Every thread of a live rank, with state, syscall, wait channel and kernel stack (refresh
 * the snapshot with stacks first). */
struct json_object *view_threads(const struct view_src *v, const struct rank *k, uint64_t now);
/* Every thread of process pid (a rank or not): state, syscall, wait channel, kernel stack. */
struct json_object *view_threads_pid(const struct view_src *v, int pid, uint64_t now);
/* A CPython rank's Python stacks (read by the inspector: agent/inspect.c) into o:
 * "python_version", "python_stack" (the main thread's frames, innermost first) and
 * "python_threads" (every thread: id, tid, name, stack), or "python_stack_error"; nothing for
 * a process that is not CPython (err -ENOENT). */
struct py_stack;
void view_python_stack(struct json_object *o, int pid, int err, const struct py_stack *s,
		       const char *why);
/* A job as `ftbpf status` shows it. */
struct json_object *view_job(const struct job *j);
/* "ended_s_ago" into a job's o: seconds since its last rank exited, when none is live (null
 * while one is): /metrics leaves a job out once it has been ended a while. */
void view_job_ended(struct json_object *o, const struct job *j, uint64_t now);
/* The reply to register. */
struct json_object *view_registered(const struct rank *k);
/* The processes a rank forked (from the procs map). */
struct json_object *view_children(struct tracker *tr, int owner);
/* The signals a rank got lately. */
struct json_object *view_signals(const struct rank *k, uint64_t now);
/* One line of `ftbpf timers`. */
struct json_object *view_timer(int pid, uid_t uid, const char *comm, const char *scope,
			       uint64_t deadline, uint64_t now, int sig, const char *source);
/* The kernel side's counters (collect_stats's) and the control server's, added to object c. */
void view_tracker_counters(struct json_object *c, const uint64_t stat[FTBPF_STAT__MAX]);
void view_ctl_counters(struct json_object *c, const struct ctl_counters *cc, int clients);

#endif
