/*
 * The decision protocol's simulator (decide_sim): hosts that run the agent's pure look
 * (dp_look over records read by lib/decide_load.c from a model of etcd, sim_store.h), ranks
 * that train, acknowledge, save and exit as the client library does, launchers that restart
 * them, faults drawn from a seed; a checker over what happened. Everything runs on one
 * simulated clock: a seed is one run, the same every time. docs/simulator.md says what is
 * modelled and what is not.
 */
#ifndef FTBPF_SIM_H
#define FTBPF_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "ftbpf/slot.h"
#include "lib/decide_policy.h"
#include "sim_store.h"

#define SIM_TICK_MS 10
#define SIM_PREFIX  "jobs/0/simjob/"
#define SIM_RUN	    1

/* the PRNG: splitmix64 */
static inline uint64_t sim_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* a uniform integer in [lo, hi] */
static inline int64_t sim_range(uint64_t *s, int64_t lo, int64_t hi)
{
	return hi <= lo ? lo : lo + (int64_t)(sim_rand(s) % (uint64_t)(hi - lo + 1));
}

enum rank_state { RK_NONE, RK_STARTING, RK_TRAINING, RK_SAVING, RK_EXITED };

/* A rank: its process (as the client library behaves) and the agent's view of it. */
struct sim_rank {
	int id; /* its global rank */
	int pid;
	enum rank_state st;
	uint64_t start_mono, exit_mono, exit_wall;
	int wait_status;
	uint64_t next_ms;	  /* store time of its next step boundary (or save's end) */
	uint64_t wait_since;	  /* waiting at a boundary since (store time), 0 not */
	uint64_t settle_since;	  /* waiting in restart_info since */
	int step_ms;		  /* its step time */
	int64_t step;		  /* the last step trained */
	uint64_t ticket_gen;	  /* the ticket should_save handed out */
	uint64_t trained_gen;	  /* the generation restart_info said it starts in */
	struct ftbpf_slot_decision dec; /* its slot, as the agent writes it */
	uint64_t own_generation;
	uint32_t hold, settling;
	int64_t saved_step, saving_step, ack_step;
	uint64_t saved_generation, ack_id, failed_step;
	/* the agent's side (struct rank) */
	uint64_t generation;
	int preempted, killed_by_agent, fail_seen;
	uint64_t dec_written, dec_ack_id;
	int64_t dec_ack_step;
	int sigterm_pending; /* a preemption handler: the signal is noted, training goes on */
};

struct sim_sig {
	int rank; /* index on its host */
	int sig;
	uint32_t sender;
};

/* A host: its clocks, its agent, its launcher and its ranks. */
struct sim_host {
	int idx;
	struct dp_config cfg;
	struct dp_memory mem;
	struct dp_records rec;
	struct dp_out out;
	int64_t mono_off, wall_off; /* its clocks: store time + these */
	int agent_up;		    /* the agent process runs */
	uint64_t paused_until;	    /* store time; the agent does nothing before */
	uint64_t next_look;
	uint64_t run; /* the run it follows (0: not chosen yet) */
	int64_t lease;
	uint64_t lease_renewed_mono, next_renew;
	uint64_t last_ok_mono, opened_mono;
	uint64_t mirror_rev; /* its mirror of the store is as of this revision */
	int mirror_lag_ms;
	uint64_t cut_from, cut_until; /* cut off from the store (store time) */
	int dead;		      /* the host is gone: agent, launcher and ranks */
	struct sim_sig *sigq;	      /* signals its agent has not handled yet */
	int nsig, sig_cap;
	/* the launcher */
	int launcher_pid, launcher_up, restarts, max_restarts;
	uint64_t relaunch_at; /* store time, 0 none */
	int nranks;
	struct sim_rank *ranks;
	int base_rank; /* its ranks are base_rank .. base_rank + nranks - 1 */
	/* the scheduler kills the preempted processes still there at pkill_at (store time) */
	int ppid[64], nppid;
	uint64_t pkill_at;
};

/* What happened that the checker reads. */
enum sim_ev {
	EV_START,     /* a rank started training: gen, step (its resume step) */
	EV_SAVE,      /* a rank's save was accepted: gen, step */
	EV_EXIT,      /* a rank ended: step is its wait status */
	EV_PREEMPT,   /* a preemption signal reached a rank */
	EV_PREEMPT_OK, /* a preemption's ranks exited 42 */
	EV_PLOST,     /* a preemption said lost, or a checkpoint failed, or no store */
	EV_IGNORED,   /* a signal to ranks told to exit: not a preemption */
	EV_RELAUNCH,  /* a launcher restarted its ranks */
	EV_FENCED,
	EV_HOLD,
};

struct sim_event {
	uint64_t t;
	enum sim_ev kind;
	int host, rank;
	uint64_t gen;
	int64_t step;
};

struct sim {
	uint64_t seed, rng;
	const char *kind;
	int trace;
	uint64_t now; /* store time, ms */
	uint64_t end_ms, quiet_ms; /* faults stop at quiet_ms; the run ends at end_ms */
	struct sim_store st;
	int store_down_from, store_down_until; /* whole-store outage, ms */
	int nhosts, ranks_per_host, world;
	struct sim_host *hosts;
	int next_pid;
	struct sim_event *ev;
	int nev, ev_cap;
	int violations;
	int late_done; /* done/ of G claimed after gen/G+1 (a finding, docs/simulator.md) */
	FILE *out;
	/* the collectives, per generation in which ranks train (sim_collectives): a rank steps
	 * only once every rank of its generation's world has started (the rendezvous) and none is
	 * a step behind it */
	int ncg;
	uint64_t cg_gen[16];
	int64_t cg_min[16];
	int cg_n[16], cg_world[16];
	int started[256];	/* ranks that started training in each generation */
	uint64_t broken_at[256]; /* a rank of the generation ended while training: its
				  * collectives fail (after nccl_ms) */
	int nccl_ms;
	int look_min, look_max; /* each host looks this often (ms) */
};

/* sim_host.c */
void sim_host_init(struct sim *s, struct sim_host *h, int idx);
void sim_host_free(struct sim_host *h);
int sim_host_reaches(const struct sim *s, const struct sim_host *h);
void sim_host_look(struct sim *s, struct sim_host *h);
void sim_host_lease(struct sim *s, struct sim_host *h);
void sim_host_signal(struct sim *s, struct sim_host *h, int rank, int sig, uint32_t sender);
void sim_host_agent_restart(struct sim *s, struct sim_host *h);
void sim_host_kill(struct sim *s, struct sim_host *h);
void sim_ranks_step(struct sim *s, struct sim_host *h);
void sim_collectives(struct sim *s);
void sim_rank_exit(struct sim *s, struct sim_host *h, int i, int wait_status);
void sim_launcher(struct sim *s, struct sim_host *h);
void sim_preempt(struct sim *s, struct sim_host *h);
void sim_host_operator(struct sim *s, struct sim_host *h);
uint64_t sim_mono(const struct sim *s, const struct sim_host *h);
uint64_t sim_wall(const struct sim *s, const struct sim_host *h);
void sim_event(struct sim *s, enum sim_ev kind, int host, int rank, uint64_t gen, int64_t step);
void sim_trace(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* sim_check.c: the invariants over the run's events and store; the number of violations */
int sim_check(struct sim *s);

#endif
