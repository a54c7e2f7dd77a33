/*
 * ftbpf-top's model: the rows of the rank table, the job and peer summaries and the event list,
 * built from the agent's JSON replies; sorting, filtering, selection. No curses here: the
 * renderer (top_render.h) makes frames of it, the drawing module paints them, --once prints
 * them, the unit tests read them.
 */
#ifndef FTBPF_TOP_MODEL_H
#define FTBPF_TOP_MODEL_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

enum top_col {
	TC_SEVERITY = 0, /* sort key only: culprit, hung, not running, then job and rank */
	TC_JOB,
	TC_RANK,
	TC_PID,
	TC_STATE,
	TC_TIME,   /* time in state */
	TC_SYSC,   /* syscalls per second */
	TC_GPU,	   /* age of the last GPU ioctl or probed CUDA/NCCL call */
	TC_PING,   /* age of the last ftbpf_ping()/step() */
	TC_TIMER,  /* armed countdown timers, time left on the earliest */
	TC_SLOW,   /* own time per step over the job's median; '*' a straggler */
	TC_CPU,	   /* the process's CPU use over the last refresh, % of one CPU */
	TC_RSS,	   /* resident memory */
	TC_THR,	   /* threads */
	TC_GPUU,   /* SM utilisation of the GPUs it runs on (NVML), % */
	TC_GMEM,   /* GPU memory it holds (NVML) */
	TC_REASON, /* last: takes the width that is left */
	TC_N,
};

enum top_attr {
	TA_NORMAL = 0,
	TA_TITLE,    /* the program line, the column header */
	TA_INFO,     /* the summary lines */
	TA_WARN,     /* a hung or failed job, a warning event, a suspect peer */
	TA_ERROR,    /* the agent cannot be reached */
	TA_HUNG,     /* a rank of a hung job */
	TA_CULPRIT,  /* the rank named as the cause */
	TA_EXITED,   /* a rank that is gone */
	TA_SELECTED, /* the selection bar (on top of the row's own attribute) */
	TA_KEYS,     /* the key line */
	TA_N,
};

struct top_row {
	char job[64];
	int rank;
	int pid;
	char comm[17];
	char state[16];
	char reason[192];
	double state_for_s;
	double sysc_rate; /* per second over the last refresh; < 0 unknown */
	uint64_t syscalls;
	double gpu_age_s;  /* < 0 never */
	char gpu_call[32]; /* a probed CUDA/NCCL call in flight, "" none */
	double ping_age_s; /* < 0 never */
	int64_t step;	   /* < 0 none */
	int timers;
	double timer_left_s;
	int hung, culprit, exited;
	int elsewhere;	 /* a rank of the job on another host (its host leads the reason) */
	double slowdown; /* 0 unknown */
	int straggler;
	double cpu_pct;	 /* % of one CPU over the last refresh (all threads); < 0 unknown */
	int64_t rss_kb;	 /* < 0 unknown */
	int threads;	 /* the agent's count; < 0 unknown */
	int gpu_pct;	 /* SM utilisation summed over its GPUs (NVML); < 0 unknown */
	int64_t gmem_kb; /* GPU memory it holds (NVML); < 0 unknown */
};

/* What /proc/PID/stat tells of a rank's process (readable by every user, as ps reads it). */
struct top_procstat {
	int pid;
	double cpu_s; /* utime + stime, every thread */
	int64_t rss_kb;
	int threads;
};

/* What NVML tells of a process's GPU use (top_collect reads it: os/nvml.h). */
struct top_gpustat {
	int pid;
	int sm_pct;	/* < 0 unknown */
	int64_t mem_kb; /* < 0 unknown */
};

struct top_job {
	char id[64];
	char state[16]; /* ok, hung, failed, finished */
	char why[256];
	int ranks, live;
	double no_progress_s;
};

struct top_peer {
	char addr[32];
	char state[12];
	int64_t incarnation;
	double state_for_s;
	int has_health;
	int ranks, hung, dead, culprit_rank; /* culprit_rank < 0: none */
};

struct top_event {
	uint64_t seq;
	int warn;
	char text[256];
};

#define TOP_EVENTS 200

/* State filters, in the order the key cycles through them */
/* The state filters: "all", "problems", each rank state's name, "hung", "culprit". */
const char *top_state_filter(int i);
extern const int top_nstate_filters;

struct top_model {
	/* connection */
	int connected;	 /* the last request succeeded */
	int ever;	 /* some status was received */
	char error[160]; /* why the last request failed */
	/* the agent */
	int agent_pid;
	char version[32], programs[16], action[24];
	double uptime_s, soft_s, hard_s;
	int soft_auto;	  /* soft_timeout = auto: soft_s is its ceiling */
	char health[160]; /* "ok", or the agent's loss counters that are not zero */
	/* jobs and ranks; rows owned, view holds indices into rows */
	struct top_job *jobs;
	int njobs;
	struct top_row *rows;
	int nrows;
	int *view;
	int nview;
	/* previous syscall counts by pid, for the rates (sorted by pid; owned) */
	struct top_prev {
		int pid;
		uint64_t syscalls;
	} * prev;
	int nprev;
	double prev_t;
	/* previous CPU times by pid, for CPU% (sorted by pid; owned) */
	struct top_procstat *cpu_prev;
	int ncpu_prev;
	double cpu_prev_t;
	int gpu_on; /* NVML answered: the GPU columns are shown */
	/* the heartbeat mesh; peers owned */
	int mesh_on, peers_alive, peers_suspect, peers_dead, peers_left, peers_hung;
	char mesh_self[32];
	struct top_peer *peers;
	int npeers;
	/* events: a ring of the newest TOP_EVENTS */
	struct top_event ev[TOP_EVENTS];
	int nev, ev_head;
	uint64_t last_seq;
	/* view settings */
	enum top_col sort;
	int reverse;
	char filter_job[64]; /* substring; "" none */
	int filter_state;    /* index of top_state_filter(); 0 all */
	int sel_pid;	     /* the selected rank, kept across refreshes; 0 the first */
	int sel_user;	     /* moved by the user: kept; else it follows the first culprit */
	int top;	     /* first row shown */
};

void top_model_init(struct top_model *m);
void top_model_fini(struct top_model *m);

/* Replace the rows and summaries with a status reply; now_s is monotonic. Returns 0 or -EINVAL
 * (not a status reply; the model is unchanged) or -ENOMEM. */
int top_model_update(struct top_model *m, struct json_object *status, double now_s);

/* A /proc/PID/stat line (len bytes) as a top_procstat (pid not set). 0 or -EINVAL. */
int top_parse_proc_stat(const char *buf, size_t len, long ticks_per_s, long page_kb,
			struct top_procstat *ret);
/* The processes' CPU, memory and threads (n of them, after top_model_update) into the rows of
 * their pids; CPU% from the CPU time since the last call. Threads the agent counted are kept.
 * 0 or -ENOMEM (the rows keep their values). */
int top_model_proc_stats(struct top_model *m, const struct top_procstat *ps, int n, double now_s);

/* The processes' GPU use (n of them, after top_model_update) into the rows of their pids; the
 * GPU columns are shown from now on. A rank not among them uses no GPU: 0. */
void top_model_gpu_stats(struct top_model *m, const struct top_gpustat *g, int n);

/* The agent could not be reached (or answered badly): keep the last rows, say why. */
void top_model_disconnected(struct top_model *m, const char *why);

/* Append an event object (from an "events" reply); seqs at or below the newest are ignored. */
void top_model_add_event(struct top_model *m, struct json_object *ev);
/* Forget the events (the agent restarted: its sequence numbers start again). */
void top_model_clear_events(struct top_model *m);

/* View settings; each rebuilds the view. */
void top_model_sort(struct top_model *m, enum top_col c, int reverse);
void top_model_sort_next(struct top_model *m, int dir); /* dir: +1 / -1 */
void top_model_filter_job(struct top_model *m, const char *substring);
void top_model_filter_state(struct top_model *m, int index);
void top_model_move(struct top_model *m, int delta); /* the selection, clamped */
/* The selection's index in the view, -1 none. */
int top_model_selected_index(const struct top_model *m);
/* Scroll so that the selection is among the rows shown (rows of them from m->top). */
void top_model_keep_visible(struct top_model *m, int rows);
const struct top_row *top_model_selected(const struct top_model *m);

const char *top_col_name(enum top_col c);
/* The column for a name as shown in the header or --sort ("sc/s", "time", ...), or -1. */
int top_col_parse(const char *name);
int top_state_filter_parse(const char *name);

#endif
