/*
 * The heartbeat mesh's timing settings and their defaults: plain data, apart from the protocol
 * code (proto/swim.c) so that the agent's configuration (lib/config.c) takes its defaults from
 * this one place without depending on the protocol layer.
 */
#ifndef FTBPF_SWIM_CONFIG_H
#define FTBPF_SWIM_CONFIG_H

#include <stdint.h>

struct swim_config {
	uint32_t probe_interval_ms;  /* 1000 */
	uint32_t probe_timeout_ms;   /* 500 */
	int indirect_checks;	     /* 3 */
	double suspicion_mult;	     /* 4 */
	double suspicion_max_mult;   /* 6 */
	int suspicion_confirmations; /* independent suspicions that bring the timeout to its min */
	int retransmit_mult;	     /* 4 */
	int max_local_health;	     /* 8 */
};

/* memberlist's LAN defaults (probe 1 s, timeout 500 ms, 3 indirect, suspicion 4 x log10(N),
 * max 6x, 2 confirmations, retransmit 4) */
void swim_config_memberlist(struct swim_config *c);
/* ftbpf's defaults: faster probing for one training cluster (docs/mesh.md) */
void swim_config_default(struct swim_config *c);

#endif
