/* The heartbeat mesh's timing defaults: see swim_config.h. */
#include "lib/swim_config.h"

void swim_config_memberlist(struct swim_config *c)
{
	c->probe_interval_ms = 1000;
	c->probe_timeout_ms = 500;
	c->indirect_checks = 3;
	c->suspicion_mult = 4;
	c->suspicion_max_mult = 6;
	c->suspicion_confirmations = 2; /* memberlist: SuspicionMult - 2 */
	c->retransmit_mult = 4;
	c->max_local_health = 8;
}

void swim_config_default(struct swim_config *c)
{
	swim_config_memberlist(c);
	c->probe_interval_ms = 500;
	c->probe_timeout_ms = 200;
	c->suspicion_mult = 1.5;
	c->suspicion_max_mult = 4;
	c->suspicion_confirmations = 2;
	/* 5 indirect probes, not memberlist's 3: at 5% loss a probe then fails falsely ~30x less
	 * often, and at 3,000+ nodes the false suspicions of 3 (and their refutations) saturate the
	 * piggy-backed dissemination and end in false deaths (make bench, mesh section) */
	c->indirect_checks = 5;
}
