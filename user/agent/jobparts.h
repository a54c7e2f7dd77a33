/*
 * The job as one object across hosts. Each scan, for each job: this host's part
 * (agent/partlocal.c), the parts other agents sent (over the mesh's socket, authenticated,
 * checked, expired), and the one verdict over all of them (lib/jobview.c) into job->xv and
 * the job's verdict (job->res, each rank's culprit flag), so that reports, actions and views
 * say the same thing on every host. A job that runs here only still gets the waits-for graph.
 *
 * Transport: a part is one UDP datagram to the job's hosts (every live mesh member the first
 * time in a stall), sent while the job makes no progress here (after a quarter of the soft
 * timeout, at least 1 s) and when
 * it changes, refreshed every second, answered once by hosts that do not stall (so a host that
 * progresses says so). Besides, the step cadence of its ranks (cadence parts, PART_F_CAD)
 * every 2-20 s while the job spans hosts, healthy or not: a straggler is judged against the
 * whole job's median (agent/cadwatch.c). See docs/cluster.md for the numbers.
 */
#ifndef FTBPF_JOBPARTS_H
#define FTBPF_JOBPARTS_H

#include <stdint.h>

struct arr_remote;

struct ranks;
struct job;
struct mesh;
struct eventlog;
struct det_params;
struct swim_member;
struct json_object;
struct jobparts;

struct jobparts_opts {
	struct ranks *ranks; /* borrowed (all) */
	struct mesh *mesh;   /* NULL: this host alone (the graph only) */
	struct eventlog *el;
	const struct det_params *dp;
	const char *node; /* this host's name when the mesh is off */
	/* the cluster's node keys (lib/nodekeys.h; NULL: the cluster key alone): parts are then
	 * signed with sk (PART_SK_BYTES) and taken only signed by their sender's key */
	const struct nodekeys *keys;
	const uint8_t *sk;
	/* is addr a member of the job's current run: 1, 0, -1 not known (decide_part_member;
	 * NULL: never known). A part of a job from a host that is not is refused. */
	int (*member)(void *ctx, uint32_t uid, const char *job, const char *addr);
	void *member_ctx;
};

struct jobparts *jobparts_new(const struct jobparts_opts *o);
void jobparts_free(struct jobparts *jp);
/* After the job's local verdict (scan_judge) at now: the job-wide one, and what to send. */
void jobparts_job(struct jobparts *jp, struct job *j, uint64_t now);
/* End of a scan: expire parts, forget jobs gone. */
void jobparts_tick(struct jobparts *jp, uint64_t now);
/* A mesh peer changed state (its parts expire when it is dead or gone). */
void jobparts_peer_event(struct jobparts *jp, const char *type, const struct swim_member *m);
struct cad_remote;
/* Other hosts' first arrivals of j's collectives, in this host's clock (arr_remote_fn of
 * agent/cadwatch.h; ctx the jobparts). */
int jobparts_firsts(void *ctx, const struct job *j, uint64_t now, struct arr_remote *out, int max);
/* Each other host's clock against ours, [{node, offset_ms, error_ms}], into arr. */
void jobparts_clocks_json(const struct jobparts *jp, struct json_object *arr);
/* The job's ranks on other hosts with their step cadence (cad_remote_fn of agent/cadwatch.h;
 * ctx: the jobparts): fresh, none that this host holds alive. */
int jobparts_cad_remote(void *ctx, const struct job *j, uint64_t now, struct cad_remote **out,
			int max);
/* Counters into c: parts_rx, parts_tx, parts_bad_mac, ... */
void jobparts_counters(const struct jobparts *jp, struct json_object *c);
/* The job's ranks on other hosts (rank, node, pid, state, reason, culprit): a new array. */
struct json_object *jobparts_remote_ranks(const struct jobparts *jp, const struct job *j,
					  uint64_t now);
/* The job-wide verdict's fields into a job's JSON (culprit_ranks, culprit_node, ...). */
void jobparts_job_json(struct json_object *o, const struct job *j);

#endif
