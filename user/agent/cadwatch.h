/*
 * Step cadence and stragglers in ftbpfd (lib/cadence.c is the rule, lib/arrivals.c the
 * collectives'): each scan, every live rank's cadence is observed (watch/sample.c), its job's
 * collective arrivals read from the kernel, each job judged: its step time and rate, its
 * collective pace, each rank's lateness and slowdown; `straggler` and `straggler_recovered`
 * events; the job's pace for soft_timeout = auto; views.c formats the status fields of ranks and
 * jobs from k->cad, k->arr, j->cad and j->arr.
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

/* The job's ranks on other hosts, fresh, none that this host holds: up to max pointers into
 * the source's own table (valid until it next receives); their number. */
typedef int (*cad_remote_fn)(void *ctx, const struct job *j, uint64_t now, struct cad_remote **out,
			     int max);

#define CADWATCH_MAX   256 /* ranks one job is judged over here: its own first, then others' */
#define CADWATCH_HOSTS 64  /* other hosts' first arrivals a job is judged with */

/* Other hosts' first arrivals of the job's collectives, in this host's clock (cadparts): up to
 * max into out; their number. */
typedef int (*arr_remote_fn)(void *ctx, const struct job *j, uint64_t now, struct arr_remote *out,
			     int max);

struct cadwatch {
	struct eventlog *el; /* borrowed */
	struct sampler *sp;  /* borrowed: the kernel side's arrivals */
	struct cad_params p;
	char node[64];
	cad_remote_fn remote; /* NULL: this host's ranks only */
	void *remote_ctx;
	arr_remote_fn firsts;	       /* NULL: none */
	struct arr_remote *firsts_buf; /* CADWATCH_HOSTS, on demand */
	struct cad_rank *scratch; /* CADWATCH_MAX, for the remote ranks while judged (on demand) */
};

void cadwatch_init(struct cadwatch *c, struct eventlog *el, struct sampler *sp,
		   const struct ftbpf_config *cfg);
void cadwatch_fini(struct cadwatch *c);
/* Observe rank k's cadence at now (live ranks; an exited one is left out of its job's). */
void cadwatch_rank(struct cadwatch *c, struct sampler *sp, struct rank *k, uint64_t now);
/* Judge job j at now (after its ranks were observed), over its ranks here and, from c->remote,
 * on other hosts: events (each host names a straggler of the job wherever it runs), and its
 * pace for the detector. */
void cadwatch_job(struct cadwatch *c, struct job *j, uint64_t now, struct det_pace *pace);

#endif
