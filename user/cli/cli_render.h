/*
 * The ftbpf CLI's rendering: a reply of the agent (the JSON object the control protocol
 * returns) -> the text the CLI prints, written to out. Pure: no other I/O, no state.
 */
#ifndef FTBPF_CLI_RENDER_H
#define FTBPF_CLI_RENDER_H

#include <stdio.h>

struct json_object;

/* status: the agent line, the job table (why, runs, hosts, checkpoint, cadence), the ranks. */
void cli_render_status(FILE *out, struct json_object *reply);
/* peers, and status --cluster after the status: the heartbeat mesh's view. */
void cli_render_cluster(FILE *out, struct json_object *reply);
/* events: one event (the "event" object of a reply line) on one line. */
void cli_render_event(FILE *out, struct json_object *event);
void cli_render_explain(FILE *out, struct json_object *reply);
void cli_render_stacks(FILE *out, struct json_object *reply);
void cli_render_timers(FILE *out, struct json_object *reply);
void cli_render_decisions(FILE *out, struct json_object *reply);
void cli_render_version(FILE *out, struct json_object *reply);
void cli_render_signal(FILE *out, struct json_object *reply);
void cli_render_checkpoint(FILE *out, struct json_object *reply);
void cli_render_decisions_reset(FILE *out, struct json_object *reply);

#endif
