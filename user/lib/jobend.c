/* How a hung run ended: see jobend.h. */
#include "lib/jobend.h"

#include <stdio.h>
#include <string.h>

static const char *const by_names[JOBEND__N] = {
    [JOBEND_NONE] = "",
    [JOBEND_AGENT] = "agent",
    [JOBEND_LAUNCHER] = "launcher",
    [JOBEND_OPERATOR] = "operator",
    [JOBEND_ITSELF] = "itself",
};

const char *jobend_by_name(enum jobend_by by)
{
	return (unsigned)by < JOBEND__N ? by_names[by] : "";
}

enum jobend_by jobend_by_parse(const char *name)
{
	for (int i = 1; name && i < JOBEND__N; i++)
		if (!strcmp(name, by_names[i]))
			return (enum jobend_by)i;
	return JOBEND_NONE;
}

enum jobend_by jobend_cause(const struct det_sample *s, const int *launchers, int nlaunchers,
			    int oom)
{
	if (s->killed)
		return JOBEND_AGENT;
	/* an exit code, or a signal nobody else sent: a fault, abort(), the OOM killer's choice */
	if (!(s->exit_code & 0x7f) || !s->sender_pid || (int)s->sender_pid == s->pid || oom)
		return JOBEND_ITSELF;
	for (int i = 0; i < nlaunchers; i++)
		if (launchers[i] > 0 && (int)s->sender_pid == launchers[i])
			return JOBEND_LAUNCHER;
	return JOBEND_OPERATOR;
}

int jobend_of_hang(const struct det_job *prev, const struct det_sample *s, int n, uint64_t prev_ns)
{
	int first = -1;

	if (!prev->hung || prev->failed)
		return -1;
	for (int i = 0; i < n; i++)
		if (s[i].exited && s[i].exit_ns >= prev_ns &&
		    (first < 0 || s[i].exit_ns < s[first].exit_ns))
			first = i;
	return first;
}

const char *jobend_text(const struct jobend *e, char *buf, size_t len)
{
	char how[64];

	if (!len)
		return buf;
	det_exit_text(e->status, how, sizeof(how));
	switch (e->by) {
	case JOBEND_AGENT:
		snprintf(buf, len, "hung, then ended by the agent's action");
		break;
	case JOBEND_LAUNCHER:
	case JOBEND_OPERATOR:
		snprintf(buf, len,
			 "hung, then ended by the %s: rank %d (pid %d) %s from %s (pid %u)",
			 jobend_by_name(e->by), e->rank, e->pid, how,
			 *e->sender_comm ? e->sender_comm : "?", e->sender_pid);
		break;
	case JOBEND_ITSELF:
		snprintf(buf, len, "hung, then ended by itself: rank %d (pid %d) %s", e->rank,
			 e->pid, how);
		break;
	default:
		snprintf(buf, len, "hung");
	}
	return buf;
}
