/*
 * The one parser of control requests. Size first, then JSON (json-c, depth-limited), then
 * version, then command and typed fields. Nothing in a request is trusted further: the
 * handlers check permissions against SO_PEERCRED.
 */
#include "proto/ctl_proto.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "lib/config.h"

const struct ctl_cmd_info ctl_cmds[] = {
    {"status", CTL_CMD_STATUS, 0, "status [JOB] [--live] [--json] [--cluster] [--check]",
     "every rank on this host: job, rank, pid, state,\n"
     "reason, time in state, hung, culprit; each job's\n"
     "state (ok hung failed finished preempted\n"
     "restarting stopped), why, who ended a hung one. JOB:\n"
     "only; --live: live ranks and jobs only; --cluster:\n"
     "then the mesh's view; --check: exit 4 when a live\n"
     "job is hung, 5 when one failed"},
    {"events", CTL_CMD_EVENTS, 0, "events [--follow] [--json] [--limit N]",
     "the agent's event log: adoptions, exits with the\n"
     "signal and its sender, signals, hangs, actions"},
    {"explain", CTL_CMD_EXPLAIN, CTL_ARG_PID, "explain PID [--json]",
     "full diagnosis of one rank (or a rank's child):\n"
     "threads, syscalls, wchan, kernel stacks, signals,\n"
     "its job"},
    {"signal", CTL_CMD_SIGNAL, CTL_ARG_PID | CTL_ARG_SIGNAL, "signal PID SIGNAL",
     "send SIGNAL to a rank you own, through the\n"
     "agent's pidfd"},
    {"timers", CTL_CMD_TIMERS, 0, "timers [--json]",
     "active countdown timers: pid, scope, time left,\n"
     "signal, owner"},
    {"peers", CTL_CMD_PEERS, 0, "peers [--json]",
     "the heartbeat mesh: every peer's state,\n"
     "incarnation, and its jobs' health"},
    {"version", CTL_CMD_VERSION, 0, "version [--json]", "agent and protocol version"},
    {"checkpoint", CTL_CMD_CHECKPOINT, CTL_ARG_JOB, "checkpoint JOB",
     "every rank of JOB (yours) saves at one agreed\n"
     "step, on every node; the job keeps training"},
    {"decisions", CTL_CMD_DECISIONS, 0, "decisions [--json]",
     "the checkpoint and restart decisions of your\n"
     "jobs, agreed by the agents, oldest first"},
    {"decisions_reset", CTL_CMD_DECISIONS_RESET, CTL_ARG_JOB, "decisions reset JOB",
     "forget every decision of JOB (yours): its runs,\n"
     "generations, restart budget, stop"},
    {"stacks", CTL_CMD_STACKS, CTL_ARG_TARGET, "stacks JOB|PID [--json]",
     "every thread's kernel stack and the Python stacks\n"
     "of each live rank of JOB, or of process PID (any\n"
     "process you own), read now"},
    {"timer_acquire", CTL_CMD_TIMER_ACQUIRE, CTL_ARG_SCOPE, NULL, NULL},
    {"timer_release", CTL_CMD_TIMER_RELEASE, CTL_ARG_SCOPE, NULL, NULL},
    {"register", CTL_CMD_REGISTER, 0, NULL, NULL},
};
const int ctl_ncmds = sizeof(ctl_cmds) / sizeof(ctl_cmds[0]);

const struct ctl_cmd_info *ctl_cmd_find(const char *name)
{
	for (int i = 0; i < ctl_ncmds; i++)
		if (!strcmp(name, ctl_cmds[i].name))
			return &ctl_cmds[i];
	return NULL;
}

const char *ctl_cmd_name(enum ctl_cmd c)
{
	for (int i = 0; i < ctl_ncmds; i++)
		if (ctl_cmds[i].cmd == c)
			return ctl_cmds[i].name;
	return "?";
}

static int get_int(struct json_object *o, const char *k, int64_t min, int64_t max, int64_t *ret,
		   char *err, size_t errlen)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		return 0;
	if (!json_object_is_type(v, json_type_int)) {
		snprintf(err, errlen, "'%s' must be an integer", k);
		return -EINVAL;
	}
	errno = 0;
	*ret = json_object_get_int64(v);
	if (errno || *ret < min || *ret > max) {
		snprintf(err, errlen, "'%s' out of range", k);
		return -EINVAL;
	}
	return 1;
}

int ctl_parse_request(const char *line, size_t len, struct ctl_request *ret, char *err,
		      size_t errlen)
{
	struct ctl_request r = {.pid = -1, .rank = -1};
	struct json_tokener *tok;
	struct json_object *o = NULL, *v;
	const struct ctl_cmd_info *info = NULL;
	const char *name;
	int64_t x;
	int rc = -EINVAL, found = 0;

	if (len > CTL_MAX_LINE) {
		snprintf(err, errlen, "request longer than %d bytes", CTL_MAX_LINE);
		return -E2BIG;
	}
	if (memchr(line, 0, len)) {
		snprintf(err, errlen, "NUL byte in request");
		return -EINVAL;
	}
	tok = json_tokener_new_ex(8);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	o = json_tokener_parse_ex(tok, line, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    tok->char_offset != (int)len) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	if ((rc = get_int(o, "v", 0, 1000, &x, err, errlen)) <= 0) {
		if (rc == 0)
			snprintf(err, errlen, "missing protocol version 'v'");
		rc = -EINVAL;
		goto out;
	}
	if (x != CTL_VERSION) {
		snprintf(err, errlen, "protocol version %lld not supported (this agent speaks %d)",
			 (long long)x, CTL_VERSION);
		rc = -EPROTO;
		goto out;
	}
	r.v = (int)x;
	rc = -EINVAL;
	if (!json_object_object_get_ex(o, "cmd", &v) || !json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "missing string 'cmd'");
		goto out;
	}
	name = json_object_get_string(v);
	info = ctl_cmd_find(name);
	if (info) {
		r.cmd = info->cmd;
		found = 1;
	}
	if (!found) {
		snprintf(err, errlen, "unknown command '%.32s'", name);
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (get_int(o, "pid", 1, 0x3fffffff, &x, err, errlen) < 0)
		goto out;
	else if (json_object_object_get_ex(o, "pid", &v))
		r.pid = (int)x;
	if (get_int(o, "after", 0, INT64_MAX, &x, err, errlen) < 0)
		goto out;
	else if (json_object_object_get_ex(o, "after", &v))
		r.after = (uint64_t)x;
	if (get_int(o, "limit", 0, 1000000, &x, err, errlen) < 0)
		goto out;
	else if (json_object_object_get_ex(o, "limit", &v))
		r.limit = (int)x;
	if (json_object_object_get_ex(o, "follow", &v)) {
		if (!json_object_is_type(v, json_type_boolean)) {
			snprintf(err, errlen, "'follow' must be a boolean");
			goto out;
		}
		r.follow = json_object_get_boolean(v);
	}
	if ((info->args & CTL_ARG_PID) && r.pid < 0) {
		snprintf(err, errlen, "'%s' needs 'pid'", name);
		goto out;
	}
	if (info->args & CTL_ARG_SCOPE) {
		if (!json_object_object_get_ex(o, "scope", &v) ||
		    !json_object_is_type(v, json_type_string) ||
		    json_object_get_string_len(v) == 0 ||
		    json_object_get_string_len(v) >= (int)sizeof(r.scope)) {
			snprintf(err, errlen, "'scope' must be a string of 1 to %zu bytes",
				 sizeof(r.scope) - 1);
			goto out;
		}
		memcpy(r.scope, json_object_get_string(v), json_object_get_string_len(v) + 1);
	}
	if (r.cmd == CTL_CMD_REGISTER || (info->args & (CTL_ARG_JOB | CTL_ARG_TARGET))) {
		if ((info->args & CTL_ARG_JOB) && !json_object_object_get_ex(o, "job", NULL)) {
			snprintf(err, errlen, "'%s' needs 'job'", name);
			goto out;
		}
		if (json_object_object_get_ex(o, "job", &v)) {
			if (!json_object_is_type(v, json_type_string) ||
			    json_object_get_string_len(v) == 0 ||
			    json_object_get_string_len(v) >= (int)sizeof(r.job)) {
				snprintf(err, errlen, "'job' must be a string of 1 to %zu bytes",
					 sizeof(r.job) - 1);
				goto out;
			}
			memcpy(r.job, json_object_get_string(v), json_object_get_string_len(v) + 1);
		}
		if (get_int(o, "rank", 0, 16777216, &x, err, errlen) < 0)
			goto out;
		else if (json_object_object_get_ex(o, "rank", &v))
			r.rank = (int)x;
	}
	if ((info->args & CTL_ARG_TARGET) && (r.pid > 0) == (*r.job != 0)) {
		snprintf(err, errlen, "'%s' needs 'job' or 'pid' (one of them)", name);
		goto out;
	}
	if (r.cmd == CTL_CMD_TIMER_ACQUIRE) {
		if (!json_object_object_get_ex(o, "expires_in", &v) ||
		    !(json_object_is_type(v, json_type_double) ||
		      json_object_is_type(v, json_type_int)) ||
		    !(json_object_get_double(v) >= 0 && json_object_get_double(v) <= 31536000)) {
			snprintf(err, errlen, "'expires_in' must be seconds in [0, 31536000]");
			goto out;
		}
		r.expires_in = json_object_get_double(v);
		r.sig = SIGKILL; /* torch's default */
	}
	if ((info->args & CTL_ARG_SIGNAL) ||
	    (r.cmd == CTL_CMD_TIMER_ACQUIRE && json_object_object_get_ex(o, "signal", NULL))) {
		if (!json_object_object_get_ex(o, "signal", &v)) {
			snprintf(err, errlen, "'signal' needs 'signal'");
			goto out;
		}
		if (json_object_is_type(v, json_type_int))
			r.sig = json_object_get_int(v);
		else if (json_object_is_type(v, json_type_string))
			r.sig = config_parse_signal(json_object_get_string(v));
		else
			r.sig = -1;
		if (r.sig <= 0 || r.sig > 64) {
			/* name the value (printable, cut), not only the field */
			char shown[24] = "";
			const char *sv = json_object_get_string(v);

			for (size_t i = 0; sv && sv[i] && i + 1 < sizeof(shown); i++)
				shown[i] = (sv[i] >= 0x20 && sv[i] < 0x7f) ? sv[i] : '?';
			snprintf(
			    err, errlen,
			    "'%s' is not a signal (a name like TERM or SIGUSR1, or a number 1-64)",
			    shown);
			goto out;
		}
	}
	*ret = r;
	rc = 0;
out:
	json_object_put(o);
	json_tokener_free(tok);
	return rc;
}
