/*
 * Collective arrivals: when each rank issued each collective of its job's communicator (NCCL's,
 * MPI's, or a CUDA graph's launches), what the job's pace is from them, and how late each rank
 * arrives. A GPU rank's CPU spends ~98% of a step in a CUDA synchronisation whether its device
 * computes or waits for a peer, so its own time cannot be told from its waits; when it issues
 * each collective can: a rank slowed down (its GPU, its CPU, its input) issues them later than
 * the others, every step. Definitions:
 *  arrival   t_r(n): when rank r issued collective n (a precise CLOCK_MONOTONIC time);
 *  first     F(n) = min over the job's ranks of t_r(n), on every host (remote hosts send theirs);
 *  lateness  t_r(n) - F(n), and where that late interval went: inside a CUDA synchronisation
 *            (its own GPU work), blocked reading a file or pipe (its input), inside a blocking
 *            MPI/NCCL call (waiting on its peers: not its own), else computing on its CPU;
 *            a rank's lateness a step is the largest of a step's collectives (any per_step
 *            consecutive ones): the others wait for it once a step, however many collectives
 *            it issues late (DDP's buckets all are; an MPI step's second all-reduce is not);
 *            over a window its median (one long step is a save, not a straggler);
 *  interval  F(n) - F(n-1): the job's collective pace (its p99 sets soft_timeout = auto's
 *            collective rule), its period (collectives a step) the step.
 * Pure logic, no I/O: tests/unit/test_arrivals.c.
 */
#ifndef FTBPF_ARRIVALS_H
#define FTBPF_ARRIVALS_H

#include <stdint.h>

#define ARR_HIST    512 /* arrivals kept per rank */
#define ARR_OWN	    256 /* own spans kept per rank */
#define ARR_IVL	    512 /* first-arrival intervals kept per job */
#define ARR_FIRST_N 64	/* first arrivals a host tells the others, a run of consecutive seqs */
#define ARR_MIN_IVL 64	/* intervals before a p99 is given */
#define ARR_RANKS   256 /* ranks of a job judged on one host */
#define ARR_MAX_PER 128 /* collectives a step, at most (FSDP, tensor parallelism issue hundreds) */

/* where a late interval went (FTBPF_OWN_* of the kernel side) */
enum arr_own { ARR_OWN_GPU = 1, ARR_OWN_READ = 2, ARR_OWN_COMM = 3 };

/* A rank's figures over the window (filled by arr_job_eval; a remote rank's from its summary). */
struct arr_fig {
	int valid; /* enough collectives compared */
	int ncoll;
	double late_s;			     /* lateness a step (see above), median */
	double err_s;			     /* the clock error bound in it (other hosts' firsts) */
	double gpu_s, read_s, comm_s, cpu_s; /* where it went, shares of late_s (sum: late_s) */
};

struct arr_rank {
	uint64_t comm; /* the communicator followed (its id), 0 none yet */
	int n, head;   /* ring of arrivals, seq ascending */
	uint64_t seq[ARR_HIST], t[ARR_HIST];
	int nown, ownhead; /* ring of own spans, start ascending */
	uint64_t own_start[ARR_OWN], own_end[ARR_OWN];
	uint8_t own_kind[ARR_OWN];
	struct arr_fig fig;
	double lat[ARR_HIST]; /* (arr_job_eval's scratch: its lateness at each compared one) */
};

/* A host's first arrival of each of a run of collectives as it tells them (its clock). */
struct arr_first {
	uint64_t comm;
	uint64_t seq0; /* t[i] is collective seq0 + i; 0: not known there */
	int n;
	uint64_t t[ARR_FIRST_N];
};

/* Another host's first arrivals, its runs gathered (the latest ARR_HIST collectives), in this
 * host's clock. */
struct arr_remote {
	uint64_t comm;
	uint64_t seq0; /* t[i] is collective seq0 + i; 0: not known */
	int n;
	uint64_t t[ARR_HIST];
	double err_s; /* the bound of the clock conversion */
};

struct arr_job {
	uint64_t comm; /* the communicator compared */
	int ranks;     /* ranks here with arrivals on it */
	int ncoll;     /* collectives compared over the window */
	uint64_t latest_seq;
	double p50_interval_s, p99_interval_s; /* 0: too few intervals yet */
	int per_step;			       /* collectives a step, 0 unknown */
	double step_s;			       /* the period of the sequence, 0 unknown */
	/* kept between evaluations */
	uint64_t ivl_seq, ivl_t; /* the last first arrival an interval was taken to */
	double ivl[ARR_IVL];
	int nivl, ivlhead;
	int per_votes[ARR_MAX_PER + 1], per_seen; /* how often each period was found (the most
						     frequent holds) */
};

void arr_rank_reset(struct arr_rank *r);
/* Collective seq of communicator comm issued at t. A new communicator restarts the history;
 * a seq at or below the latest, or a time before the latest's, is ignored. */
void arr_rank_add(struct arr_rank *r, uint64_t comm, uint64_t seq, uint64_t t);
/* An own span (enum arr_own) of the rank's main thread; one not after the latest is ignored. */
void arr_rank_own(struct arr_rank *r, uint64_t start, uint64_t end, int kind);
/* The latest seq the rank issued, 0 none. */
uint64_t arr_rank_latest(const struct arr_rank *r);
/* Its arrival time of seq, 0 when not kept. */
uint64_t arr_rank_at(const struct arr_rank *r, uint64_t seq);
/*
 * The n ranks of a job here (each followed comm j->comm or none; ARR_RANKS at most) and the first
 * arrivals other hosts sent (nrem; their ranks are not here): each rank's figures over the
 * collectives of the last window_s that every rank here has and, with nrem, at least one other
 * host (so that a rank alone on its host is not compared with itself; a host that did not tell
 * a collective is left out of its first), the job's pace from the first arrivals.
 */
void arr_job_eval(struct arr_rank *const *r, int n, const struct arr_remote *rem, int nrem,
		  uint64_t now, double window_s, struct arr_job *j);
/* Gather a host's run into what is known of it (the latest ARR_HIST collectives kept). */
void arr_remote_merge(struct arr_remote *x, const struct arr_first *run);
/*
 * This host's first arrivals for the other hosts: the latest ARR_FIRST_N collectives that every
 * rank here issued (a run ending at the lowest rank's latest). Returns n, 0 when none.
 */
int arr_job_first(struct arr_rank *const *r, int n, uint64_t comm, struct arr_first *out);
/*
 * The period of a sequence of m gaps (seconds): the smallest number of gaps per cycle, at most
 * max_per, whose gaps repeat; *ret_per gets it, *ret_max the longest cycle. Returns the median
 * cycle in seconds, 0 when there are too few gaps (3 cycles at least).
 */
double arr_period(const double *g, int m, int max_per, int *ret_per, double *ret_max);
/* The q-quantile (0..1) of n values, sorted in place; 0 for none. */
double arr_quantile(double *v, int n, double q);

#endif
