/*
 * Table-driven configuration: each key has a type, a range and a help line. The config file
 * ("key = value", '#' comments), the command-line flags and `ftbpfd --help` all come from it.
 */
#include "lib/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/meshaddr.h"
#include "lib/swim_config.h"

enum key_type { T_DOUBLE, T_STRING, T_ACTION, T_SIGNAL, T_BOOL, T_INT, T_BYTES };

struct key_def {
	const char *key;
	const char *flag; /* long option, NULL: config file only */
	enum key_type type;
	size_t offset;
	size_t size; /* strings */
	double min, max;
	const char *help;
};

#define OFF(f) offsetof(struct ftbpf_config, f)
#define SZ(f)  sizeof(((struct ftbpf_config *)0)->f)

static const struct key_def keys[] = {
    {"socket", "socket", T_STRING, OFF(socket_path), SZ(socket_path), 0, 0,
     "control socket path (env FTBPF_SOCKET also sets it)"},
    {"state_dir", "state-dir", T_STRING, OFF(state_dir), SZ(state_dir), 0, 0,
     "directory for the agent's lock file and state"},
    {"pin_dir", "pin-dir", T_STRING, OFF(pin_dir), SZ(pin_dir), 0, 0,
     "bpffs directory where maps and links are pinned (survive agent restarts; bpffs is mounted "
     "if\n"
     "needed)"},
    {"log_file", "log-file", T_STRING, OFF(log_file), SZ(log_file), 0, 0,
     "JSON-lines event log (rotated); empty: no file"},
    {"log_max_bytes", "log-max-bytes", T_BYTES, OFF(log_max_bytes), 0, 4096, 1e12,
     "rotate the event log past this size (suffixes K, M, G)"},
    {"log_keep", "log-keep", T_INT, OFF(log_keep), 0, 0, 100,
     "rotated event logs kept (events.jsonl.1 ...)"},
    {"soft_timeout", "soft-timeout", T_DOUBLE, OFF(soft_timeout_s), 0, 0.5, 86400,
     "seconds without progress on every rank of a job before it is reported hung, or auto: "
     "at the job's own pace (docs/detection.md)"},
    {"soft_timeout_max", "soft-timeout-max", T_DOUBLE, OFF(soft_timeout_max_s), 0, 0.5, 86400,
     "soft_timeout auto: the longest it gets (a job computing, every rank in one "
     "collective, or of unknown pace)"},
    {"soft_timeout_floor", "soft-timeout-floor", T_DOUBLE, OFF(soft_timeout_floor_s), 0, 0.5, 86400,
     "soft_timeout auto: the shortest it gets"},
    {"soft_timeout_k", "soft-timeout-k", T_DOUBLE, OFF(soft_timeout_k), 0, 1, 1000,
     "soft_timeout auto: times the job's recent p99 step time (or p99 collective interval)"},
    {"straggler_threshold", "straggler-threshold", T_DOUBLE, OFF(straggler_threshold), 0, 1.01, 10,
     "a rank whose own time per step is this many times its job's median (or that arrives "
     "at its collectives this share of a step late, less one) is a straggler"},
    {"straggler_window", "straggler-window", T_DOUBLE, OFF(straggler_window_s), 0, 2, 3600,
     "seconds the straggler figures are measured over, and a straggler must last"},
    {"hard_timeout", "hard-timeout", T_DOUBLE, OFF(hard_timeout_s), 0, 0.5, 604800,
     "seconds without progress before the hard-timeout action"},
    {"action", "action", T_ACTION, OFF(action), 0, 0, 0,
     "hard-timeout action: report | terminate (SIGTERM, grace, SIGKILL to every live rank of the\n"
     "job) | kill | terminate-culprit"},
    {"grace", "grace", T_DOUBLE, OFF(grace_s), 0, 0, 3600,
     "seconds between SIGTERM and SIGKILL when terminating"},
    {"soft_signal", "soft-signal", T_SIGNAL, OFF(soft_signal), 0, 0, 0,
     "signal sent at the soft timeout to ranks that catch it (USR2 for a faulthandler dump, ABRT\n"
     "for a core; not USR1 on GPU jobs: NCCL may own it); none: only report"},
    {"soft_signal_all", "soft-signal-all", T_BOOL, OFF(soft_signal_all), 0, 0, 1,
     "send the soft signal to every rank of the job, not only the culprits (0/1)"},
    {"scan_interval", "scan-interval", T_DOUBLE, OFF(scan_interval_s), 0, 0.01, 10,
     "seconds between state scans of the ranks"},
    {"spin_threshold", "spin-threshold", T_DOUBLE, OFF(spin_threshold_s), 0, 0.1, 3600,
     "seconds on CPU without a syscall before a rank is called spinning"},
    {"gpu_majors", "gpu-majors", T_STRING, OFF(gpu_majors), SZ(gpu_majors), 0, 0,
     "GPU character-device majors besides those /proc/devices names (nvidia*, drm, kfd): 195,226"},
    {"gpu_probes", "gpu-probes", T_BOOL, OFF(gpu_probes), 0, 0, 1,
     "uprobes on CUDA/NCCL sync and collective calls in libraries ranks map (0/1)"},
    {"gpu_probe_launch", "gpu-probe-launch", T_BOOL, OFF(gpu_probe_launch), 0, 0, 1,
     "also probe cuLaunchKernel (costs a probe hit per kernel launch; see make bench) (0/1)"},
    {"timer_escalate", "timer-escalate", T_BOOL, OFF(timer_escalate), 0, 0, 1,
     "timer expiry: 1 = SIGTERM, grace, SIGKILL; 0 = the timer's own signal (torch)"},
    {"timer_fifo", "timer-fifo", T_STRING, OFF(timer_fifo), SZ(timer_fifo), 0, 0,
     "serve torch FileTimerClient requests on this FIFO (created if missing); empty: none"},
    {"only_jobs", "only-jobs", T_STRING, OFF(only_jobs), SZ(only_jobs), 0, 0,
     "adopt only jobs whose id matches this fnmatch pattern; empty: all"},
    {"only_netns", "only-netns", T_BOOL, OFF(only_netns), 0, 0, 1,
     "adopt only processes in this agent's network namespace (one agent per namespace) (0/1)"},
    {"metrics_listen", "metrics-listen", T_STRING, OFF(metrics_listen), SZ(metrics_listen), 0, 0,
     "serve Prometheus metrics at http://ADDR:PORT/metrics (IPv4) or on a Unix socket\n"
     "unix:/PATH (everyone's jobs: keep it on localhost or a monitoring network, with a token);\n"
     "empty: off"},
    {"metrics_token_file", "metrics-token-file", T_STRING, OFF(metrics_token_file),
     SZ(metrics_token_file), 0, 0,
     "a file (root's, mode 0600) whose token every scrape must send as \"Authorization: Bearer\n"
     "TOKEN\" (Prometheus: authorization.credentials_file); empty: no token"},
    {"events_keep", "events-keep", T_INT, OFF(events_keep), 0, 16, 1000000,
     "events kept in memory for `ftbpf events`"},
    {"log_group", "log-group", T_STRING, OFF(log_group), SZ(log_group), 0, 0,
     "group allowed to read the event log files (mode 0640, e.g. adm); empty: root only (0600)"},
    {"ctl_max_clients", "ctl-max-clients", T_INT, OFF(ctl_max_clients), 0, 64, 65536,
     "control connections in all (the last 32 are kept for root)"},
    {"ctl_clients_per_user", "ctl-clients-per-user", T_INT, OFF(ctl_clients_per_user), 0, 1, 65536,
     "control connections one non-root user may hold"},
    {"ctl_user_buffer", "ctl-user-buffer", T_BYTES, OFF(ctl_user_buffer), 0, 65536, 1e10,
     "unread replies and events one non-root user may make the agent hold (K, M, G)"},
    {"ctl_idle_timeout", "ctl-idle-timeout", T_DOUBLE, OFF(ctl_idle_timeout_s), 0, 1, 86400,
     "close a control connection that sent no request for this many seconds (not followers)"},
    {"max_timers_per_user", "max-timers-per-user", T_INT, OFF(max_timers_per_user), 0, 1, 65536,
     "socket and FIFO countdown timers one non-root user may hold"},
    {"bpf_programs", "bpf-programs", T_STRING, OFF(bpf_programs), SZ(bpf_programs), 0, 0,
     "BPF program type: auto (probe), tp_btf or raw_tp"},
    {"task_iter", "task-iter", T_STRING, OFF(task_iter), SZ(task_iter), 0, 0,
     "task iterator for snapshots and stacks: auto (probe) or off (/proc)"},
    {"syscall_clock", "syscall-clock", T_STRING, OFF(syscall_clock), SZ(syscall_clock), 0, 0,
     "syscall timestamps: auto (jiffies when HZ is known) or ktime"},
    {"bind", "bind", T_STRING, OFF(mesh_bind), SZ(mesh_bind), 0, 0,
     "heartbeat mesh: UDP ADDR:PORT to bind (IPv4); empty: no mesh"},
    {"peers", "peers", T_STRING, OFF(mesh_peers), SZ(mesh_peers), 0, 0,
     "heartbeat mesh: peers/seeds ADDR:PORT,ADDR:PORT,..."},
    {"peers_file", "peers-file", T_STRING, OFF(mesh_peers_file), SZ(mesh_peers_file), 0, 0,
     "heartbeat mesh: file of peers, one ADDR:PORT per line (# comments)"},
    {"key_file", "key-file", T_STRING, OFF(mesh_key_file), SZ(mesh_key_file), 0, 0,
     "heartbeat mesh: the cluster's secret (16+ bytes, a regular file of root's, mode 0600);\n"
     "packets are MACed"},
    {"node_key_file", "node-key-file", T_STRING, OFF(node_key_file), SZ(node_key_file), 0, 0,
     "this node's own key (64 hex digits: an Ed25519 seed; a regular file of root's, mode\n"
     "0600): job parts and decision records are signed with it, so that a host holding the\n"
     "cluster key speaks for itself only; with node_keys_file"},
    {"node_keys_file", "node-keys-file", T_STRING, OFF(node_keys_file), SZ(node_keys_file), 0, 0,
     "every node's public key, one \"NAME ADDR:PORT PUBKEY\" a line (a file of root's that no\n"
     "one else may write): parts and records are taken only signed by their sender's key"},
    {"probe_interval", "probe-interval", T_DOUBLE, OFF(probe_interval_s), 0, 0.05, 60,
     "heartbeat mesh: seconds between probes of one peer"},
    {"probe_timeout", "probe-timeout", T_DOUBLE, OFF(probe_timeout_s), 0, 0.01, 60,
     "heartbeat mesh: seconds to wait for an ack before indirect probes"},
    {"indirect_checks", "indirect-checks", T_INT, OFF(indirect_checks), 0, 0, 16,
     "heartbeat mesh: peers asked to probe on a missed ack"},
    {"suspicion_mult", "suspicion-mult", T_DOUBLE, OFF(suspicion_mult), 0, 0.5, 100,
     "heartbeat mesh: suspicion timeout = this x log10(N) x probe interval (at least)"},
    {"suspicion_max_mult", "suspicion-max-mult", T_DOUBLE, OFF(suspicion_max_mult), 0, 1, 100,
     "heartbeat mesh: a suspicion nobody confirms lasts this many times the minimum"},
    {"decisions", "decisions", T_STRING, OFF(decisions), SZ(decisions), 0, 0,
     "coordinated checkpoint/restart decisions: auto (on) or off"},
    {"node_name", "node-name", T_STRING, OFF(node_name), SZ(node_name), 0, 0,
     "this node's name in decisions; empty: the mesh's bind address, else the host name"},
    {"etcd_endpoints", "etcd-endpoints", T_STRING, OFF(etcd_endpoints), SZ(etcd_endpoints), 0, 0,
     "etcd v3 endpoints that agree on decisions (http[s]://HOST:PORT,...); empty: this node only"},
    {"etcd_prefix", "etcd-prefix", T_STRING, OFF(etcd_prefix), SZ(etcd_prefix), 0, 0,
     "key prefix of ftbpf's decisions in etcd"},
    {"etcd_cacert", "etcd-cacert", T_STRING, OFF(etcd_cacert), SZ(etcd_cacert), 0, 0,
     "etcd TLS: CA certificate file"},
    {"etcd_cert", "etcd-cert", T_STRING, OFF(etcd_cert), SZ(etcd_cert), 0, 0,
     "etcd TLS: client certificate file"},
    {"etcd_key", "etcd-key", T_STRING, OFF(etcd_key), SZ(etcd_key), 0, 0,
     "etcd TLS: client key file"},
    {"etcd_user", "etcd-user", T_STRING, OFF(etcd_user), SZ(etcd_user), 0, 0,
     "etcd user of the agents (etcd's RBAC: a role with read-write on etcd_prefix only; etcd's\n"
     "JSON gateway ignores the client certificate's name); empty: none"},
    {"etcd_password_file", "etcd-password-file", T_STRING, OFF(etcd_password_file),
     SZ(etcd_password_file), 0, 0, "file (root's, mode 0600) with etcd_user's password"},
    {"etcd_insecure", "etcd-insecure", T_BOOL, OFF(etcd_insecure), 0, 0, 1,
     "allow etcd over plain http and without a client certificate (a test cluster only: anyone "
     "who reaches etcd could then read and delete ftbpf's keys)"},
    {"etcd_lease_ttl", "etcd-lease-ttl", T_DOUBLE, OFF(etcd_lease_ttl_s), 0, 2, 300,
     "seconds this agent's membership and reports outlive it in etcd (when it dies or is cut off); "
     "etcd silent for half of it, this node's ranks of multi-node jobs wait at a step boundary"},
    {"preempt_signals", "preempt-signals", T_STRING, OFF(preempt_signals), SZ(preempt_signals), 0,
     0, "signals that mean preemption when sent to a rank by another process: TERM,USR2,..."},
    {"checkpoint_margin", "checkpoint-margin", T_INT, OFF(checkpoint_margin), 0, 1, 1000,
     "the agreed checkpoint step is the highest step reported plus this"},
    {"restart_exit_code", "restart-exit-code", T_INT, OFF(restart_exit_code), 0, 1, 255,
     "exit status a rank uses after the agreed save (the scheduler requeues the job)"},
    {"stop_exit_code", "stop-exit-code", T_INT, OFF(stop_exit_code), 0, 1, 255,
     "exit status when the restart budget is spent (do not requeue)"},
    {"preempt_grace", "preempt-grace", T_DOUBLE, OFF(preempt_grace_s), 0, 0, 86400,
     "seconds to keep training after a preemption, with a last save before they end; 0: exit after "
     "the first save"},
    {"max_restarts", "max-restarts", T_INT, OFF(max_restarts), 0, -1, 100000,
     "restarts after failures allowed within restart_window; then stop (-1: no limit)"},
    {"restart_window", "restart-window", T_DOUBLE, OFF(restart_window_s), 0, 1, 31536000,
     "seconds over which max_restarts counts"},
    {"node_fault_limit", "node-fault-limit", T_INT, OFF(node_fault_limit), 0, 1, 1000,
     "a node where this many faults happened is left out of the next generation"},
    {"recovery_wait", "recovery-wait", T_DOUBLE, OFF(recovery_wait_s), 0, 0, 86400,
     "seconds to wait for a lost node to come back before deciding without it"},
    {"fence_after", "fence-after", T_DOUBLE, OFF(fence_after_s), 0, 1, 86400,
     "seconds without reaching etcd (since the agent started, if etcd never answered) before this "
     "node ends its ranks of multi-node jobs (they wait at a step boundary from half the lease's "
     "TTL on)"},
    {"health_check", "health-check", T_STRING, OFF(health_check), SZ(health_check), 0, 0,
     "command run (sh -c) before this node rejoins after a restart decision (exit 0: healthy;\n"
     "otherwise it leaves itself out)"},
    {"health_check_timeout", "health-check-timeout", T_DOUBLE, OFF(health_check_timeout_s), 0, 1,
     3600, "seconds the health check may take"},
    {"verbose", "verbose", T_INT, OFF(verbose), 0, 0, 3,
     "stderr log level: 0 errors, 1 warnings, 2 info, 3 debug"},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* The mesh's timing defaults are the protocol's own (one place: swim_config_default). */
static void mesh_defaults(struct ftbpf_config *c)
{
	struct swim_config s;

	swim_config_default(&s);
	c->probe_interval_s = s.probe_interval_ms / 1000.0;
	c->probe_timeout_s = s.probe_timeout_ms / 1000.0;
	c->indirect_checks = s.indirect_checks;
	c->suspicion_mult = s.suspicion_mult;
	c->suspicion_max_mult = s.suspicion_max_mult;
}

void config_defaults(struct ftbpf_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->socket_path, sizeof(c->socket_path), "%s", FTBPF_DEFAULT_SOCKET);
	snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/ftbpf");
	snprintf(c->pin_dir, sizeof(c->pin_dir), "/sys/fs/bpf/ftbpf");
	snprintf(c->log_file, sizeof(c->log_file), "/var/log/ftbpf/events.jsonl");
	c->log_max_bytes = 64L << 20;
	c->log_keep = 5;
	c->soft_timeout_s = 60;
	c->soft_auto = 1; /* auto, at most soft_timeout_max: docs/detection.md says why */
	c->soft_timeout_max_s = 60;
	c->soft_timeout_floor_s = 4;
	c->soft_timeout_k = 3;
	c->straggler_threshold = 1.10;
	c->straggler_window_s = 10;
	c->hard_timeout_s = 600;
	c->action = ACTION_TERMINATE;
	c->grace_s = 10;
	c->soft_signal = 0;
	c->soft_signal_all = 0;
	c->scan_interval_s = 0.2;
	c->spin_threshold_s = 2;
	c->events_keep = 4096;
	c->ctl_max_clients = 1024;
	c->ctl_clients_per_user = 64;
	c->ctl_user_buffer = 8L << 20;
	c->ctl_idle_timeout_s = 60;
	c->max_timers_per_user = 1024;
	c->gpu_probes = 1;
	mesh_defaults(c);
	c->verbose = 2;
	snprintf(c->bpf_programs, sizeof(c->bpf_programs), "auto");
	snprintf(c->task_iter, sizeof(c->task_iter), "auto");
	snprintf(c->syscall_clock, sizeof(c->syscall_clock), "auto");
	snprintf(c->decisions, sizeof(c->decisions), "auto");
	snprintf(c->etcd_prefix, sizeof(c->etcd_prefix), "/ftbpf/");
	c->etcd_lease_ttl_s = 5;
	snprintf(c->preempt_signals, sizeof(c->preempt_signals), "TERM");
	c->checkpoint_margin = 1;
	c->restart_exit_code = 42;
	c->stop_exit_code = 93;
	c->max_restarts = 3;
	c->restart_window_s = 3600;
	c->node_fault_limit = 3;
	c->fence_after_s = 60; /* a short etcd outage holds the ranks (I6), it does not end them */
	c->health_check_timeout_s = 30;
}

static const char *action_names[] = {"report", "terminate", "kill", "terminate-culprit"};

int config_parse_signal_set(const char *s, uint64_t *ret_mask)
{
	uint64_t mask = 0;
	int n = 0;

	for (const char *p = s; *p;) {
		char one[16];
		size_t len = strcspn(p, ", \t");
		int sig;

		if (len) {
			if (len >= sizeof(one))
				return -EINVAL;
			memcpy(one, p, len);
			one[len] = 0;
			sig = config_parse_signal(one);
			if (sig <= 0 || sig > 63)
				return -EINVAL;
			mask |= 1ull << sig;
			n++;
		}
		p += len;
		p += strspn(p, ", \t");
	}
	if (ret_mask)
		*ret_mask = mask;
	return n;
}

const char *config_action_name(int action)
{
	if (action < 0 || action > ACTION_TERMINATE_CULPRIT)
		return "?";
	return action_names[action];
}

static const struct {
	const char *name;
	int sig;
} sig_names[] = {
    {"HUP", SIGHUP},	   {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"ILL", SIGILL},
    {"TRAP", SIGTRAP},	   {"ABRT", SIGABRT}, {"BUS", SIGBUS},	   {"FPE", SIGFPE},
    {"KILL", SIGKILL},	   {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE},	   {"ALRM", SIGALRM}, {"TERM", SIGTERM},   {"CHLD", SIGCHLD},
    {"CONT", SIGCONT},	   {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},	   {"URG", SIGURG},   {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"PWR", SIGPWR},	   {"SYS", SIGSYS},
};

int config_parse_signal(const char *s)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	if (isdigit((unsigned char)*s)) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || *end || v < 1 || v > 64)
			return -EINVAL;
		return (int)v;
	}
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(sig_names) / sizeof(sig_names[0]); i++)
		if (!strcasecmp(s, sig_names[i].name))
			return sig_names[i].sig;
	return -EINVAL;
}

const char *config_signal_name(int sig)
{
	for (size_t i = 0; i < sizeof(sig_names) / sizeof(sig_names[0]); i++)
		if (sig_names[i].sig == sig)
			return sig_names[i].name;
	return NULL;
}

static int parse_double(const char *v, double *ret)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(d))
		return -EINVAL;
	*ret = d;
	return 0;
}

static int parse_bytes(const char *v, double *ret)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || !isfinite(d))
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		d *= 1024;
		end++;
		break;
	case 'm':
	case 'M':
		d *= 1024 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		d *= 1024.0 * 1024 * 1024;
		end++;
		break;
	}
	if (*end)
		return -EINVAL;
	*ret = d;
	return 0;
}

int config_set(struct ftbpf_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	const struct key_def *k = NULL;
	char *base = (char *)c;
	double d;
	int r;

	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].key, key))
			k = &keys[i];
	if (!k) {
		snprintf(err, errlen, "unknown key '%.64s'", key);
		return -ENOENT;
	}
	if (k->offset == OFF(soft_timeout_s) && !strcmp(value, "auto")) {
		c->soft_auto = 1;
		return 0;
	}
	switch (k->type) {
	case T_STRING:
		if (strlen(value) >= k->size) {
			snprintf(err, errlen, "%s: value longer than %zu bytes", key, k->size - 1);
			return -EINVAL;
		}
		memcpy(base + k->offset, value, strlen(value) + 1);
		return 0;
	case T_ACTION:
		for (int a = 0; a <= ACTION_TERMINATE_CULPRIT; a++)
			if (!strcmp(value, action_names[a])) {
				*(int *)(base + k->offset) = a;
				return 0;
			}
		snprintf(err, errlen,
			 "%s: '%.32s' is not one of report, terminate, kill, "
			 "terminate-culprit",
			 key, value);
		return -EINVAL;
	case T_SIGNAL:
		if (!strcmp(value, "none") || !strcmp(value, "0")) {
			*(int *)(base + k->offset) = 0;
			return 0;
		}
		r = config_parse_signal(value);
		if (r < 0) {
			snprintf(err, errlen, "%s: '%.32s' is not a signal name or number", key,
				 value);
			return -EINVAL;
		}
		*(int *)(base + k->offset) = r;
		return 0;
	case T_BOOL:
		if (!strcmp(value, "1") || !strcmp(value, "yes") || !strcmp(value, "true"))
			*(int *)(base + k->offset) = 1;
		else if (!strcmp(value, "0") || !strcmp(value, "no") || !strcmp(value, "false"))
			*(int *)(base + k->offset) = 0;
		else {
			snprintf(err, errlen, "%s: '%.32s' is not a boolean (0/1/yes/no)", key,
				 value);
			return -EINVAL;
		}
		return 0;
	case T_DOUBLE:
	case T_INT:
	case T_BYTES:
		r = k->type == T_BYTES ? parse_bytes(value, &d) : parse_double(value, &d);
		if (r < 0 || (k->type == T_INT && d != floor(d))) {
			snprintf(err, errlen, "%s: '%.32s' is not a %s", key, value,
				 k->type == T_DOUBLE ? "number"
				 : k->type == T_INT  ? "whole number"
						     : "size");
			return -EINVAL;
		}
		if (d < k->min || d > k->max) {
			snprintf(err, errlen, "%s: %g is out of range [%g, %g]", key, d, k->min,
				 k->max);
			return -EINVAL;
		}
		if (k->offset == OFF(soft_timeout_s))
			c->soft_auto = 0; /* a number: fixed */
		if (k->type == T_DOUBLE)
			*(double *)(base + k->offset) = d;
		else if (k->type == T_INT)
			*(int *)(base + k->offset) = (int)d;
		else
			*(long *)(base + k->offset) = (long)d;
		return 0;
	}
	return -EINVAL;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static int one_of(const char *v, const char *a, const char *b, const char *c)
{
	return !strcmp(v, a) || !strcmp(v, b) || (c && !strcmp(v, c));
}

int config_parse_majors(const char *s, unsigned *ret, int max)
{
	int n = 0;

	while (*s) {
		char *end;
		long v;

		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v < 1 || v > 4095 || n == max)
			return -EINVAL;
		ret[n++] = (unsigned)v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	return n;
}

int config_check(const struct ftbpf_config *c, char *err, size_t errlen)
{
	unsigned majors[32];
	struct mesh_addr a;

	if (*c->mesh_bind && !*c->mesh_key_file) {
		snprintf(err, errlen, "bind: the heartbeat mesh needs key_file (--key-file)");
		return -EINVAL;
	}
	if (*c->etcd_endpoints && !*c->mesh_key_file) {
		snprintf(err, errlen,
			 "etcd_endpoints: decision records in etcd are authenticated with the "
			 "cluster key: set key_file (--key-file), the same file on every node");
		return -EINVAL;
	}
	if (*c->etcd_user && !*c->etcd_password_file) {
		snprintf(err, errlen, "etcd_user needs etcd_password_file");
		return -EINVAL;
	}
	if (!*c->node_key_file != !*c->node_keys_file) {
		snprintf(err, errlen,
			 "node keys: node_key_file (this node's key) and node_keys_file (every "
			 "node's public key) go together");
		return -EINVAL;
	}
	if (*c->node_key_file && !*c->mesh_key_file) {
		snprintf(err, errlen, "node keys: with the cluster key only (key_file)");
		return -EINVAL;
	}
	if (*c->etcd_endpoints && !c->etcd_insecure) {
		const char *p = c->etcd_endpoints;

		for (; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
			if (strncmp(p, "https://", 8)) {
				snprintf(
				    err, errlen,
				    "etcd_endpoints: '%.*s' is not https://: etcd must be "
				    "reached over TLS with a client certificate (etcd_cacert, "
				    "etcd_cert, etcd_key); etcd_insecure = 1 allows plain http "
				    "for a test cluster",
				    (int)strcspn(p, ","), p);
				return -EINVAL;
			}
		if (!*c->etcd_cert || !*c->etcd_key || !*c->etcd_cacert) {
			snprintf(
			    err, errlen,
			    "etcd_endpoints: etcd needs a client certificate: set etcd_cacert, "
			    "etcd_cert and etcd_key (etcd_insecure = 1 allows none, for a test "
			    "cluster)");
			return -EINVAL;
		}
	}
	if (c->probe_timeout_s >= c->probe_interval_s) {
		snprintf(err, errlen, "probe_timeout (%g) must be shorter than probe_interval (%g)",
			 c->probe_timeout_s, c->probe_interval_s);
		return -EINVAL;
	}
	if (config_parse_majors(c->gpu_majors, majors, 32) < 0) {
		snprintf(err, errlen,
			 "gpu_majors: '%s' is not a list of majors 1..4095 like 195,226",
			 c->gpu_majors);
		return -EINVAL;
	}
	if (!one_of(c->bpf_programs, "auto", "tp_btf", "raw_tp")) {
		snprintf(err, errlen, "bpf_programs: '%s' is not one of auto, tp_btf, raw_tp",
			 c->bpf_programs);
		return -EINVAL;
	}
	if (!one_of(c->task_iter, "auto", "off", NULL)) {
		snprintf(err, errlen, "task_iter: '%s' is not one of auto, off", c->task_iter);
		return -EINVAL;
	}
	if (!one_of(c->decisions, "auto", "off", NULL)) {
		snprintf(err, errlen, "decisions: '%s' is not one of auto, off", c->decisions);
		return -EINVAL;
	}
	if (config_parse_signal_set(c->preempt_signals, NULL) < 0) {
		snprintf(err, errlen,
			 "preempt_signals: '%s' is not a list of signals like TERM,USR2",
			 c->preempt_signals);
		return -EINVAL;
	}
	if (c->restart_exit_code == c->stop_exit_code) {
		snprintf(err, errlen, "restart_exit_code and stop_exit_code must differ (%d)",
			 c->stop_exit_code);
		return -EINVAL;
	}
	if (!one_of(c->syscall_clock, "auto", "ktime", NULL)) {
		snprintf(err, errlen, "syscall_clock: '%s' is not one of auto, ktime",
			 c->syscall_clock);
		return -EINVAL;
	}
	if (*c->mesh_bind && meshaddr_parse(c->mesh_bind, &a) < 0) {
		snprintf(err, errlen, "bind: '%s' is not IPv4ADDR:PORT", c->mesh_bind);
		return -EINVAL;
	}
	for (const char *p = c->mesh_peers; *p;) {
		char one[64];
		size_t n = strcspn(p, ", \t");

		if (n && (n >= sizeof(one) ||
			  (memcpy(one, p, n), one[n] = 0, meshaddr_parse(one, &a) < 0))) {
			snprintf(err, errlen, "peers: '%.*s' is not IPv4ADDR:PORT", (int)n, p);
			return -EINVAL;
		}
		p += n;
		p += strspn(p, ", \t");
	}
	if (c->hard_timeout_s < config_soft_ceiling(c)) {
		snprintf(err, errlen, "hard_timeout (%g) is shorter than soft_timeout%s (%g)",
			 c->hard_timeout_s, c->soft_auto ? "_max" : "", config_soft_ceiling(c));
		return -EINVAL;
	}
	return 0;
}

double config_soft_ceiling(const struct ftbpf_config *c)
{
	return c->soft_auto ? c->soft_timeout_max_s : c->soft_timeout_s;
}

const char *config_soft_words(int soft_auto, double ceiling_s, char *buf, size_t len)
{
	if (soft_auto)
		snprintf(buf, len, "auto (at most %gs)", ceiling_s);
	else
		snprintf(buf, len, "%gs", ceiling_s);
	return buf;
}

int config_parse_buffer(struct ftbpf_config *c, const char *name, const char *buf, size_t len,
			char *err, size_t errlen)
{
	char msg[256];
	size_t pos = 0;
	int line = 0, r;

	while (pos < len) {
		char tmp[512];
		size_t n = 0;
		char *l, *eq;

		line++;
		while (pos < len && buf[pos] != '\n') {
			if (n >= sizeof(tmp) - 1) {
				snprintf(err, errlen, "%s:%d: line longer than %zu bytes", name,
					 line, sizeof(tmp) - 1);
				return -EINVAL;
			}
			if (buf[pos] == 0) {
				snprintf(err, errlen, "%s:%d: NUL byte", name, line);
				return -EINVAL;
			}
			tmp[n++] = buf[pos++];
		}
		pos++;
		tmp[n] = 0;
		if ((l = strchr(tmp, '#')))
			*l = 0;
		l = trim(tmp);
		if (!*l)
			continue;
		eq = strchr(l, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%d: expected 'key = value'", name, line);
			return -EINVAL;
		}
		*eq = 0;
		r = config_set(c, trim(l), trim(eq + 1), msg, sizeof(msg));
		if (r < 0) {
			snprintf(err, errlen, "%s:%d: %s", name, line, msg);
			return r == -ENOENT ? -EINVAL : r;
		}
	}
	return 0; /* cross-key checks: config_check, once the flags are applied too */
}

const char *config_flag_key(const char *flag, int *ret_needs_arg)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].flag && !strcmp(keys[i].flag, flag)) {
			*ret_needs_arg = 1;
			return keys[i].key;
		}
	return NULL;
}

static void format_value(const struct ftbpf_config *c, const struct key_def *k, char *out,
			 size_t len)
{
	const char *base = (const char *)c;
	int v;

	switch (k->type) {
	case T_STRING:
		snprintf(out, len, "%s", base + k->offset);
		break;
	case T_ACTION:
		snprintf(out, len, "%s", config_action_name(*(const int *)(base + k->offset)));
		break;
	case T_SIGNAL:
		v = *(const int *)(base + k->offset);
		snprintf(out, len, "%s", v ? config_signal_name(v) : "none");
		break;
	case T_BOOL:
	case T_INT:
		snprintf(out, len, "%d", *(const int *)(base + k->offset));
		break;
	case T_DOUBLE:
		if (k->offset == OFF(soft_timeout_s) && c->soft_auto)
			snprintf(out, len, "auto");
		else
			snprintf(out, len, "%g", *(const double *)(base + k->offset));
		break;
	case T_BYTES:
		snprintf(out, len, "%ld", *(const long *)(base + k->offset));
		break;
	}
}

static const char *arg_name(const struct key_def *k)
{
	return k->type == T_STRING   ? "STR"
	       : k->type == T_SIGNAL ? "SIG"
	       : k->type == T_ACTION ? "ACT"
	       : k->type == T_BOOL   ? "0|1"
				     : "N";
}

int config_key_info(size_t i, struct config_key_info *ret)
{
	struct ftbpf_config d;

	if (i >= NKEYS)
		return -ENOENT;
	config_defaults(&d);
	ret->key = keys[i].key;
	ret->flag = keys[i].flag;
	ret->arg = arg_name(&keys[i]);
	ret->help = keys[i].help;
	format_value(&d, &keys[i], ret->def, sizeof(ret->def));
	return 0;
}

void config_print_help(FILE *f)
{
	struct ftbpf_config d;
	char def[300];

	config_defaults(&d);
	fprintf(
	    f,
	    "Usage: ftbpfd [OPTIONS]\n\n"
	    "The ftbpf node agent: adopts the rank processes of training jobs on this host,\n"
	    "watches them from the kernel with eBPF, reports hung jobs with the culprit rank\n"
	    "and acts at the hard timeout. Runs in the foreground; needs root (CAP_BPF,\n"
	    "CAP_PERFMON, CAP_KILL).\n\n"
	    "Options (each also a config-file key, shown in brackets; flags win over the file):\n"
	    "  --config FILE            config file (default " FTBPF_DEFAULT_CONFIG
	    "; a missing default file is not an error)\n");
	for (size_t i = 0; i < NKEYS; i++) {
		char opt[64];

		if (!keys[i].flag)
			continue;
		format_value(&d, &keys[i], def, sizeof(def));
		snprintf(opt, sizeof(opt), "--%s %s", keys[i].flag, arg_name(&keys[i]));
		fprintf(f, "  %-24s ", opt);
		for (const char *h = keys[i].help; *h;
		     h++) { /* continuation lines under the text */
			if (*h == '\n')
				fputs("\n                           ", f);
			else
				fputc(*h, f);
		}
		fprintf(f, " [%s] (default: %s)\n", keys[i].key, *def ? def : "\"\"");
	}
	fprintf(f,
		"  --unpin                  remove pinned maps and links from --pin-dir (detach\n"
		"                           everything a stopped agent left) and exit\n");
	fprintf(f, "  --reset-state            remove pinned maps and links from --pin-dir first\n"
		   "  --print-config           print the effective configuration and exit\n"
		   "  --print-node-key         print this node's line for node_keys_file (NAME\n"
		   "                           ADDR:PORT PUBKEY, from node_key_file) and exit\n"
		   "  -v, --version            print the version and exit\n"
		   "  -h, --help               this help\n\n"
		   "Signals: SIGTERM/SIGINT stop the agent (pinned BPF state stays: a restarted\n"
		   "agent resumes every rank); SIGHUP reopens the event log.\n"
		   "Exit status: 0 on a clean stop, 1 on a start-up error, 2 on bad usage.\n");
}

void config_dump(const struct ftbpf_config *c, FILE *f)
{
	char v[300];

	for (size_t i = 0; i < NKEYS; i++) {
		format_value(c, &keys[i], v, sizeof(v));
		fprintf(f, "%s = %s\n", keys[i].key, v);
	}
}
