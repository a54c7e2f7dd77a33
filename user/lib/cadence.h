/*
 * Step cadence and stragglers: from what the kernel already sees of each rank (how long its main
 * thread waits on its peers or its device, how long it is blocked reading its input, how many
 * steps it reported), the rank's step time split into compute, wait and read, the job's step
 * rate and spread, and which rank the others wait for. Pure logic, no I/O: driven with
 * synthetic observations by tests/unit/test_cadence.c.
 *
 * Why fractions of wall time: every rank of a synchronised job makes the same number of steps
 * in a window, so a rank's own time per step (compute + read) over the job's median is the
 * ratio of their own-time fractions: a straggler is found without knowing where a step begins.
 * Steps (for per-step figures and the p99 used by soft_timeout = auto) come from ftbpf_step()
 * when the rank calls it, else from the period of its wait spans.
 */
#ifndef FTBPF_CADENCE_H
#define FTBPF_CADENCE_H

#include <stdint.h>

#include "lib/arrivals.h"

#define CAD_SPANS	 32 /* FTBPF_CAD_RING */
#define CAD_OWN		 64 /* FTBPF_CAD_OWN_RING */
#define CAD_HIST	 96 /* observations kept per rank (one a scan) */
#define CAD_STEPS	 128
#define CAD_REMOTE_NAMED 64 /* a job's stragglers on other hosts listed in its status */

/* One rank, one scan: the kernel's cumulative counters (struct ftbpf_cad), at now_ns. */
struct cad_obs {
	uint64_t now_ns;
	uint64_t wait_ns; /* waiting on peers or the device, the wait open now included */
	uint64_t read_ns; /* blocked in reads of 1 ms or more, a read in flight included */
	uint64_t spans;	  /* wait spans closed */
	uint64_t steps;	  /* ftbpf_step() value, 0 when the rank does not call it */
	int nspan;	  /* the last spans, oldest first */
	uint64_t span_start[CAD_SPANS], span_end[CAD_SPANS];
	int nown; /* the last closed own spans (enum arr_own), oldest first */
	uint64_t own_start[CAD_OWN], own_end[CAD_OWN];
	uint8_t own_kind[CAD_OWN];
};

struct cad_params {
	double window_s;  /* the figures are over the last window_s (10) */
	double threshold; /* a straggler's own time per step over the job's median (1.10) */
	double recover;	  /* below this it recovers (1.05) */
	double sustain_s; /* for this long, both ways (10) */
};

/* Where a straggler's excess goes: its CPU, its input, its own GPU work. */
enum cad_reason { CAD_NONE = 0, CAD_COMPUTE, CAD_DATA, CAD_GPU };

/* What a rank's cadence says; one per rank, zero-initialised before first use. */
struct cad_rank {
	struct {
		uint64_t t, wait, read, spans, steps;
	} h[CAD_HIST];
	int nh, head;
	/* over the window (valid = enough history and a step loop to judge) */
	int valid;
	double window_s;
	double own_frac, wait_frac, read_frac; /* of wall time */
	double step_s;			       /* 0: unknown */
	double period_s, period_max_s;	       /* from its wait spans, 0 unknown */
	int period_spans;		       /* spans per step (the most frequent finding) */
	int per_votes[9], per_seen;	       /* how often each spans-per-step was found */
	uint64_t dspans, dsteps;
	/* how late it arrives at its job's collectives (lib/arrivals.h; the caller's, or from a
	 * remote rank's summary): when the job has them, stragglers are judged by them */
	struct arr_fig arr;
	int by_arrivals; /* judged by its arrivals (else by its wait spans) */
	/* judged against the job's ranks */
	double slowdown; /* own time / the job's median, 0 unknown */
	int straggler;
	enum cad_reason reason;
	uint64_t since_ns;    /* straggler since (when its ratio crossed the threshold) */
	uint64_t above_ns;    /* above the threshold since, 0 not */
	uint64_t below_ns;    /* a straggler below the recovery ratio since, 0 not */
	double peak_slowdown; /* the highest while a straggler */
	char evidence[384];
};

/* A job's cadence (the ranks on this host; see cad_summary for the cross-host view). */
struct cad_job {
	int ranks;	  /* ranks with a valid cadence */
	double step_s;	  /* the median rank's, 0 unknown */
	double rate;	  /* steps a second */
	double spread;	  /* of the step time: (p90 - p10) / median of the recent samples */
	double imbalance; /* (slowest - fastest own time) / median own time, over the ranks */
	double median_own, median_wait, median_read;
	double p99_step_s;  /* of the recent step samples, 0 too few */
	int by_arrivals;    /* stragglers judged by collective arrivals (ranks with them: >= 2) */
	double arr_step_s;  /* (the caller's) the step from the collectives' period, 0 unknown */
	double median_late; /* the median rank's own lateness per collective (by arrivals) */
	int nsteps, head;
	double steps[CAD_STEPS]; /* recent step-time samples (for the p99) */
	/* (the caller fills these) this host's name, and the job's stragglers on other hosts as
	 * this host judges them */
	char node[64];
	int nremote;
	struct {
		int rank;
		char node[32];
	} remote[CAD_REMOTE_NAMED];
};

/*
 * The per-rank cadence summary another host needs to judge a job across hosts (the cross-host
 * job view can carry it): fixed-width, no pointers.
 */
struct cad_summary {
	int32_t rank;
	uint32_t flags;	      /* CAD_SUM_* */
	uint32_t own_ppm;     /* own time (compute + read) per million of wall time */
	uint32_t wait_ppm;    /* waiting on peers, per million */
	uint32_t read_ppm;    /* reading input, per million */
	uint32_t step_us;     /* step time, 0 unknown */
	uint32_t slowdown_pm; /* slowdown per mille (1000 = the median), 0 unknown */
	uint32_t window_ms;
	/* its collective arrivals (CAD_SUM_ARR), per collective, in microseconds */
	uint32_t late_us, err_us, gpu_us, read_us, comm_us, ncoll;
};
#define CAD_SUM_VALID	  0x1u
#define CAD_SUM_STRAGGLER 0x2u
#define CAD_SUM_DATA	  0x4u	/* its excess time is reading input */
#define CAD_SUM_GPU	  0x8u	/* its excess time is its own GPU work */
#define CAD_SUM_ARR	  0x10u /* late_us.. are set: its arrival figures are valid */

/* A rank of a job on another host, as a host that shares the job keeps it: its latest summary,
 * and the straggler state judged here between summaries (cad_rank's, without the history). */
struct cad_remote {
	int rank;
	char node[32]; /* its host: the mesh address */
	struct cad_summary s;
	int straggler;
	enum cad_reason reason;
	uint64_t since_ns, above_ns, below_ns;
	double slowdown, peak_slowdown;
	char evidence[384];
};

void cad_params_default(struct cad_params *p);
/* Record one scan's observation and recompute the rank's figures over the window. */
void cad_rank_observe(struct cad_rank *r, const struct cad_obs *o, const struct cad_params *p);
/* Forget the rank's history (restarted, or its job hung: the window would mix phases). */
void cad_rank_reset(struct cad_rank *r);
/*
 * Judge the n ranks of one job (each observed at now): the job's figures, each rank's slowdown,
 * and the straggler state (entered and left after sustain_s). Ranks that are not valid are left
 * out of the median and never stragglers.
 */
void cad_job_eval(struct cad_rank *const *r, int n, uint64_t now, const struct cad_params *p,
		  struct cad_job *j);
/* The rank's summary (rank number given by the caller). */
void cad_summarize(const struct cad_rank *r, int rank, struct cad_summary *s);
/*
 * A rank of another host, from its summary: the figures cad_job_eval judges by (its straggler
 * state is kept: one cad_rank per remote rank, updated at each summary received). So a job
 * whose ranks span hosts is judged over all of them: cad_job_eval on local and remote alike.
 */
void cad_rank_from_summary(struct cad_rank *r, const struct cad_summary *s);
/*
 * The period of a rank's wait spans (pure; exposed for the tests): n span ends, ascending. The
 * smallest number of spans per step whose gaps repeat; *ret_per_step = that number, *ret_max =
 * the longest step seen. Returns the median step in seconds, 0 when there are too few spans.
 */
double cad_period(const uint64_t *end, int n, int *ret_per_step, double *ret_max);
const char *cad_reason_name(enum cad_reason r);
/*
 * How often a host sends its ranks' cadence to the other hosts of a job that spans `hosts`
 * hosts (agent/cadparts.c): 20 ms a host, at least 2 s, at most 20 s, in ns. So a host's
 * cadence traffic, (hosts - 1) parts a period, stays under ~50 parts a second at any size.
 */
uint64_t cad_part_period_ns(int hosts);

#endif
