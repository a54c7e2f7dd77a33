/* The control protocol (version 1): one JSON object per line, in both directions. */
#ifndef FTBPF_CTL_PROTO_H
#define FTBPF_CTL_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define CTL_VERSION  1
#define CTL_MAX_LINE 65536

enum ctl_cmd {
	CTL_CMD_STATUS = 1, /* {"v":1,"cmd":"status"} */
	CTL_CMD_EVENTS,	    /* {"v":1,"cmd":"events","follow":true,"after":SEQ,"limit":N} */
	CTL_CMD_EXPLAIN,    /* {"v":1,"cmd":"explain","pid":PID} */
	CTL_CMD_SIGNAL,	    /* {"v":1,"cmd":"signal","pid":PID,"signal":"TERM"} */
	CTL_CMD_VERSION,    /* {"v":1,"cmd":"version"} */
	CTL_CMD_TIMERS,	    /* {"v":1,"cmd":"timers"} */
	/* {"v":1,"cmd":"timer_acquire","scope":S,"expires_in":SEC[,"signal":SIG][,"pid":P]} */
	CTL_CMD_TIMER_ACQUIRE,
	CTL_CMD_TIMER_RELEASE, /* {"v":1,"cmd":"timer_release","scope":S[,"pid":P]} */
	/* {"v":1,"cmd":"register"[,"job":J][,"rank":R]}: the caller's slot fd comes with the reply */
	CTL_CMD_REGISTER,
	CTL_CMD_PEERS,		 /* {"v":1,"cmd":"peers"}: the heartbeat mesh's cluster view */
	CTL_CMD_CHECKPOINT,	 /* {"v":1,"cmd":"checkpoint","job":J}: an agreed checkpoint now */
	CTL_CMD_DECISIONS,	 /* {"v":1,"cmd":"decisions"}: every decision, oldest first */
	CTL_CMD_DECISIONS_RESET, /* {"v":1,"cmd":"decisions_reset","job":J}: forget J's decisions */
	CTL_CMD_STACKS,		 /* {"v":1,"cmd":"stacks","job":J} or "pid":P: stacks now */
};

/*
 * Every control command, in one table shared by the server's parser and the ftbpf CLI: adding
 * a command is a row here (its enum value above, its fields in ctl_parse_request), a handler
 * in the agent (agent/handlers.c) and, for the CLI, nothing more unless it prints a table.
 */
#define CTL_ARG_PID    0x1u /* needs "pid" (the CLI: its first argument) */
#define CTL_ARG_SIGNAL 0x2u /* needs "signal" (the CLI: the argument after the pid) */
#define CTL_ARG_SCOPE  0x4u /* needs "scope" */
#define CTL_ARG_JOB    0x8u /* needs "job" (the CLI: its first argument) */
#define CTL_ARG_TARGET                                                                             \
	0x10u /* needs "job" or "pid", one of them (the CLI: its first argument, a pid when it is \
		 a number) */

struct ctl_cmd_info {
	const char *name;
	enum ctl_cmd cmd;
	unsigned args;	      /* CTL_ARG_* */
	const char *synopsis; /* the CLI's, NULL: not a CLI command (used by the libraries) */
	const char *help;     /* the CLI's description */
};

extern const struct ctl_cmd_info ctl_cmds[];
extern const int ctl_ncmds;
/* The row of a command by name, NULL when unknown. */
const struct ctl_cmd_info *ctl_cmd_find(const char *name);

struct ctl_request {
	int v;
	enum ctl_cmd cmd;
	int pid;
	int sig;
	int follow;
	uint64_t after;
	int limit;
	char scope[128];
	double expires_in;
	char job[64];
	int rank;
};

/*
 * Parse one request line (without the newline). Returns 0, or -EINVAL (not JSON / not an
 * object / wrong types), -EPROTO (unsupported version), -EOPNOTSUPP (unknown command),
 * -E2BIG (longer than CTL_MAX_LINE). err gets a message for the client.
 */
int ctl_parse_request(const char *line, size_t len, struct ctl_request *ret, char *err,
		      size_t errlen);
const char *ctl_cmd_name(enum ctl_cmd c);

#endif
