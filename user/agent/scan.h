/*
 * Watching the ranks, once per scan: sample every rank (watch/sample.c, the one sampling path)
 * into the detector's input, update each rank's state, and judge each job with the one hang
 * rule (lib/detector.c). The verdicts land in the rank table (rank->d, job->res); the agent
 * acts on them (actions.c). Also: which character devices are GPUs, CUDA/NCCL probes for the
 * libraries ranks map, NCCL communicators, and the node's health summary for the mesh.
 */
#ifndef FTBPF_SCAN_H
#define FTBPF_SCAN_H

#include <stdint.h>

#include "agent/cadwatch.h"
#include "lib/detector.h"
#include "watch/sample.h"

struct tracker;
struct gpuprobe;
struct inspector;
struct ranks;
struct job;
struct eventlog;
struct mesh_health;
struct json_object;
struct ftbpf_config;

struct scan {
	struct tracker *tr;    /* borrowed (these four) */
	struct gpuprobe *gp;   /* NULL: no CUDA/NCCL probes */
	struct inspector *ins; /* probes them off the loop; NULL: none */
	struct ranks *ranks;
	struct eventlog *el;
	struct sampler sp; /* owned: the sampling path and its task snapshot */
	struct det_params dp;
	struct cadwatch cw;	 /* step cadence and stragglers */
	struct det_rank *eval_d; /* owned scratch for det_job_eval */
	struct det_sample *eval_s;
	int *eval_map; /* eval index -> member index (strays left out) */
	int eval_cap;
	unsigned gpu_majors[64]; /* character-device majors treated as GPUs */
	int ngpu;
	uint64_t scans;
};

void scan_init(struct scan *w, struct tracker *tr, struct gpuprobe *gp, struct ranks *ranks,
	       struct eventlog *el, const struct ftbpf_config *cfg);
void scan_fini(struct scan *w);
/* Start a scan: a new task snapshot, probes for newly mapped CUDA/NCCL libraries, the NCCL
 * communicators of every rank. */
void scan_begin(struct scan *w);
/* Sample every rank and update its state. */
void scan_sample(struct scan *w, uint64_t now);
/* Judge job j (its ranks sampled at now): j->res, and hung/culprit of each member. 0, or
 * -ENOMEM (the job waits for the next scan). */
int scan_judge(struct scan *w, struct job *j, uint64_t now);
/* The node's summary for the heartbeat mesh. */
void scan_health(const struct scan *w, struct mesh_health *h);
/* The GPU device majors, a new array. */
struct json_object *scan_gpu_majors_json(const struct scan *w);

#endif
