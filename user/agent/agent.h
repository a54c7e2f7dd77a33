/* ftbpfd: wires tracker, rank table, detector, event log and control socket into one loop. */
#ifndef FTBPF_AGENT_H
#define FTBPF_AGENT_H

#include "lib/config.h"

struct agent;

/* NULL on failure; err says what failed. */
struct agent *agent_new(const struct ftbpf_config *cfg, int reset_state, char *err, size_t errlen);
/* Runs until SIGTERM/SIGINT. Returns 0 or -errno. */
int agent_run(struct agent *a);
void agent_free(struct agent *a);

#endif
