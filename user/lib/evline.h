/*
 * An event as one short line a person reads on a terminal or in the journal ("hang job J:
 * no progress for 10.0s, culprit rank 1 (pid 42): rank 1 is where ..."), with the priority it
 * deserves. The event log file and `ftbpf events --json` keep the whole JSON; this line is
 * never JSON and never longer than EVLINE_MAX. Pure: tests/unit/test_evline.c.
 */
#ifndef FTBPF_EVLINE_H
#define FTBPF_EVLINE_H

#include <stddef.h>

struct json_object;

#define EVLINE_MAX 400 /* bytes, the terminating NUL included */

/* syslog priorities */
#define EVLINE_WARNING 4 /* a hang, a failure, the hard timeout, a lost peer, fencing */
#define EVLINE_NOTICE  5 /* what the agent did (actions, timers, decisions), recoveries */
#define EVLINE_INFO    6 /* the rest: adoptions, exits, signals */
#define EVLINE_DEBUG   7 /* a rank's children, deliveries, peers' health */

/*
 * The line for event ev into buf (len bytes, at most EVLINE_MAX used; cut with "..." at the
 * end when longer). Returns its priority (EVLINE_*). An object without a type is "event".
 */
int evline_format(struct json_object *ev, char *buf, size_t len);

#endif
