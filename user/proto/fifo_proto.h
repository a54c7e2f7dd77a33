/*
 * torch.distributed.elastic FileTimerServer compatibility: the one parser of the JSON lines
 * that FileTimerClient writes into the timer FIFO:
 *   {"version": 1, "pid": P, "scope_id": "file.py#12", "expiration_time": 1.7e9, "signal": 9}
 * expiration_time is wall-clock seconds; a negative one releases the scope.
 */
#ifndef FTBPF_FIFO_PROTO_H
#define FTBPF_FIFO_PROTO_H

#include <stddef.h>

#include "lib/timers.h"

#define FIFO_MAX_LINE 4096 /* PIPE_BUF: FileTimerClient refuses longer requests */

struct fifo_request {
	int pid;
	char scope[TIMER_SCOPE_LEN];
	double expiration_time;
	int sig;     /* absent: SIGKILL (FileTimerClient's default); 0 (zero or negative in the
		      * request): expire without a signal, as torch's FileTimerServer does */
	int release; /* expiration_time < 0 */
};

/* Returns 0 or -EINVAL / -EPROTO (version) / -E2BIG, with a message in err. */
int fifo_parse_line(const char *line, size_t len, struct fifo_request *ret, char *err,
		    size_t errlen);

#endif
