/*
 * NCCL's RAS as independent evidence of a hang: when a job that runs NCCL here is reported hung,
 * the agent asks NCCL's own RAS service (once per stall, off the loop: watch/inspector.h) which
 * ranks of the job's communicators are missing (unresponsive, considered dead) and which
 * launched fewer collectives, with their host and pid — ranks on hosts where no agent runs
 * included. The answer is the event "nccl_ras" and the job's "ras" in status.
 */
#ifndef FTBPF_RASQUERY_H
#define FTBPF_RASQUERY_H

#include <stdint.h>

struct rasq;
struct inspector;
struct eventlog;
struct job;
struct json_object;

#define RASQ_TIMEOUT_S 30.0 /* a query, all connections and the collection included */

struct rasq *rasq_new(struct eventlog *el);
/* Answers still due are dropped (the inspector answers them -ECANCELED first: free it before). */
void rasq_free(struct rasq *q);
/* Job j was reported hung: ask RAS when it runs NCCL here (a host record of an NCCL
 * communicator or a device record). */
void rasq_hang(struct rasq *q, struct inspector *ins, const struct job *j);
/* The last answer for j (its run), as "ras" in o; nothing when none. */
void rasq_job_json(const struct rasq *q, struct json_object *o, const struct job *j, uint64_t now);

struct rasq_counters {
	uint64_t queries, answered, failed, untrusted, text;
};
void rasq_counters(const struct rasq *q, struct rasq_counters *ret);

#endif
