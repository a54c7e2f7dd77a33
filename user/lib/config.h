/* ftbpfd configuration: defaults, the config file and command-line flags share one key table. */
#ifndef FTBPF_CONFIG_H
#define FTBPF_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FTBPF_DEFAULT_CONFIG "/etc/ftbpf/ftbpfd.conf"
#define FTBPF_DEFAULT_SOCKET "/run/ftbpf/ftbpfd.sock"

enum config_action {
	ACTION_REPORT = 0,	      /* hard timeout: report only */
	ACTION_TERMINATE = 1,	      /* SIGTERM every rank of the job, grace, SIGKILL */
	ACTION_KILL = 2,	      /* SIGKILL every rank of the job */
	ACTION_TERMINATE_CULPRIT = 3, /* SIGTERM, grace, SIGKILL to the culprit ranks only */
};

struct ftbpf_config {
	char socket_path[108];
	char state_dir[256];
	char pin_dir[256];
	char log_file[256];
	double soft_timeout_s;
	int soft_auto;		     /* soft_timeout = auto: at the job's own pace (detector.h) */
	double soft_timeout_max_s;   /* auto: the ceiling (what a fixed soft_timeout would be) */
	double soft_timeout_floor_s; /* auto: never shorter than this */
	double soft_timeout_k;	     /* auto: this many times the job's p99 step time */
	double straggler_threshold;  /* own time per step over the job's median (1.10) */
	double straggler_window_s;   /* measured over, and sustained for, this long */
	double hard_timeout_s;
	double grace_s;
	double scan_interval_s;
	double spin_threshold_s;
	int action;	     /* enum config_action */
	int soft_signal;     /* 0 = none */
	int soft_signal_all; /* 1: every rank of the job, 0: culprits only */
	long log_max_bytes;
	int log_keep;
	char only_jobs[128];	      /* fnmatch(3) pattern on job ids; empty = every job */
	int only_netns;		      /* adopt only processes in the agent's network namespace */
	char metrics_listen[128];     /* Prometheus endpoint "ADDR:PORT" or "unix:/PATH"; "" off */
	char metrics_token_file[256]; /* requests need "Authorization: Bearer" its token */
	char timer_fifo[256];	      /* torch FileTimerServer-compatible FIFO; empty = none */
	int timer_escalate;   /* expiry: SIGTERM, grace, SIGKILL instead of the timer's signal */
	char gpu_majors[128]; /* extra GPU character-device majors, "195,226" */
	int gpu_probes;	      /* CUDA/NCCL uprobes in the libraries ranks map */
	int gpu_probe_launch; /* ... including kernel launches */
	/* heartbeat mesh (off while bind is empty) */
	char mesh_bind[64];
	char mesh_peers[1024];
	char mesh_peers_file[256];
	char mesh_key_file[256];
	char node_key_file[256];  /* this node's Ed25519 key: what it sends is signed */
	char node_keys_file[256]; /* every node's public key: what others send is checked */
	double probe_interval_s, probe_timeout_s, suspicion_mult, suspicion_max_mult;
	int indirect_checks;
	int verbose;
	int events_keep;    /* events held in memory for `ftbpf events` */
	char log_group[32]; /* group that may read the event log (0640); empty: root only */
	/* what one user can make the agent hold (root is not limited) */
	int ctl_max_clients;	  /* control connections in all (some kept for root) */
	int ctl_clients_per_user; /* control connections of one user */
	long ctl_user_buffer;	  /* unsent replies and events of one user, bytes */
	double ctl_idle_timeout_s;
	int max_timers_per_user; /* socket and FIFO timers of one user */
	/* coordinated checkpoint/restart decisions */
	char decisions[16]; /* auto (on) | off */
	char node_name[32]; /* this node in decisions; empty: the mesh address, else hostname */
	char etcd_endpoints[512]; /* empty: decisions are this node's (state_dir) */
	char etcd_prefix[128];
	char etcd_cacert[256], etcd_cert[256], etcd_key[256];
	char etcd_user[128], etcd_password_file[256]; /* RBAC: the agents' etcd user */
	double etcd_lease_ttl_s;
	int etcd_insecure;	  /* allow http:// and no client certificate (a test cluster) */
	char preempt_signals[64]; /* signals to a rank that mean preemption: "TERM" */
	int checkpoint_margin;	  /* steps past the highest reported step */
	int restart_exit_code;	  /* 42 */
	int stop_exit_code;	  /* 93: do not requeue */
	double preempt_grace_s;	  /* 0: exit after the first agreed save */
	int max_restarts;	  /* per restart_window; -1: no limit */
	double restart_window_s;
	int node_fault_limit;	/* a node that caused this many faults is left out */
	double recovery_wait_s; /* wait for a lost node this long before leaving it out */
	double fence_after_s;	/* unreachable store this long: stop our ranks of shared jobs */
	char health_check[256]; /* command run before rejoining; empty: none */
	double health_check_timeout_s;
	/* Force a fallback that a production kernel may need (the tests exercise them): */
	char bpf_programs[16];	/* auto | tp_btf | raw_tp */
	char task_iter[16];	/* auto | off (then /proc) */
	char syscall_clock[16]; /* auto | ktime */
};

void config_defaults(struct ftbpf_config *c);
/* The soft timeout a job gets at most: soft_timeout, or with auto its ceiling. */
double config_soft_ceiling(const struct ftbpf_config *c);
/* The soft timeout in the one wording every tool uses: "10s", or "auto (at most 60s)" with
 * soft_timeout = auto (ceiling: its soft_timeout_max). Returns buf. */
const char *config_soft_words(int soft_auto, double ceiling_s, char *buf, size_t len);
/* Set one key from text; errors are written to err. Returns 0 or -EINVAL/-ENOENT. */
int config_set(struct ftbpf_config *c, const char *key, const char *value, char *err,
	       size_t errlen);
/* Parse a config text; "name" is used in "name:line: message" errors. */
int config_parse_buffer(struct ftbpf_config *c, const char *name, const char *buf, size_t len,
			char *err, size_t errlen);
/* Cross-key checks (choices, hard >= soft); after the file and again after the flags. */
int config_check(const struct ftbpf_config *c, char *err, size_t errlen);
/* Parse a "195,226" list into ret (at most max); returns the count or -EINVAL. */
int config_parse_majors(const char *s, unsigned *ret, int max);
/* Map a command-line flag ("soft-timeout") to its key; NULL if unknown. needs_arg set. */
const char *config_flag_key(const char *flag, int *ret_needs_arg);
void config_print_help(FILE *f);
/* One row of the key table, for generated references (the man pages). */
struct config_key_info {
	const char *key;
	const char *flag; /* long option without "--", NULL: config file only */
	const char *arg;  /* the value's kind: STR, SIG, ACT, 0|1, N */
	const char *help;
	char def[300]; /* the default as the config file writes it */
};
/* The i-th key (from 0): 0, or -ENOENT past the last. */
int config_key_info(size_t i, struct config_key_info *ret);
void config_dump(const struct ftbpf_config *c, FILE *f);
const char *config_action_name(int action);
/* "TERM", "SIGTERM" or "15" -> 15; returns -EINVAL for anything else. */
int config_parse_signal(const char *s);
const char *config_signal_name(int sig);
/* "TERM,USR2" -> a mask of 1 << sig; returns the count (0 for "", none), or -EINVAL. */
int config_parse_signal_set(const char *s, uint64_t *ret_mask);

#endif
