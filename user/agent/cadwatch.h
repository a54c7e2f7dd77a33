/*
 * Step cadence and stragglers in ftbpfd (lib/cadence.c is the rule): each scan, every live
 * rank's cadence is observed (watch/sample.c), each job judged: its step time and rate, each
 * rank's slowdown; `straggler` and `straggler_recovered` events; the job's pace for
 * soft_timeout = auto; views.c formats the status fields of ranks and jobs from k->cad and j->cad.
 */
#ifndef FTBPF_CADWATCH_H
#define FTBPF_CADWATCH_H

#include <stdint.h>

#include "lib/cadence.h"

struct eventlog;
struct sampler;
struct rank;
struct job;
struct det_pace;
struct json_object;
struct ftbpf_config;

struct cadwatch {
	struct eventlog *el; /* borrowed */
	struct cad_params p;
	char node[64];
};

void cadwatch_init(struct cadwatch *c, struct eventlog *el, const struct ftbpf_config *cfg);
/* Observe rank k's cadence at now (live ranks; an exited one is left out of its job's). */
void cadwatch_rank(struct cadwatch *c, struct sampler *sp, struct rank *k, uint64_t now);
/* Judge job j at now (after its ranks were observed): events, and its pace for the detector. */
void cadwatch_job(struct cadwatch *c, struct job *j, uint64_t now, struct det_pace *pace);

#endif
