/*
 * The agent's status (the JSON of `ftbpf status --json`, as root sees it) in the Prometheus
 * text exposition format (version 0.0.4): the agent's counters, one series per job and per live
 * rank, the mesh's peers by state. Pure: no I/O; unit-tested and fuzzed.
 */
#ifndef FTBPF_METRICS_TEXT_H
#define FTBPF_METRICS_TEXT_H

#include <stddef.h>

struct json_object;

/* *ret: the text (owned by the caller, free()), *ret_len its length. 0, -EINVAL when status
 * is not a status object, or -ENOMEM. */
int metrics_text_format(struct json_object *status, char **ret, size_t *ret_len);

#endif
