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
	CTL_CMD_PEERS, /* {"v":1,"cmd":"peers"}: the heartbeat mesh's cluster view */
};

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
