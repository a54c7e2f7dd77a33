/*
 * The ftbpf CLI's command table and its one parser: global flags, the command, then each word
 * is one of the flags every command takes, one of the command's own flags (the table), the
 * command's JOB (status), or the next argument the protocol's table says it needs (PID, JOB,
 * JOB|PID, SIGNAL). Also what the CLI does with a status reply (JOB, --live, --check).
 */
#include "cli/cli_cmd.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_render.h"
#include "client/ctl_client.h"
#include "lib/config.h"

#define SWITCH(flag, alias, field)                                                                 \
	{                                                                                          \
		flag, alias, offsetof(struct cli_opts, field), 0, 0, NULL                          \
	}

const struct cli_flag cli_cmd_common_flags[] = {
    SWITCH("--json", NULL, json),
    SWITCH("--follow", "-f", follow),
    {NULL},
};

static const struct cli_flag status_flags[] = {
    SWITCH("--cluster", NULL, cluster),
    SWITCH("--check", NULL, check),
    SWITCH("--live", NULL, live),
    {NULL},
};

static const struct cli_flag events_flags[] = {
    {"--limit", NULL, offsetof(struct cli_opts, limit), 1, 1000000,
     "--limit needs a number of events (1-1000000)"},
    {NULL},
};

static void events_request(const struct cli_opts *o, struct json_object *req)
{
	json_object_object_add(req, "follow", json_object_new_boolean(o->follow));
	if (o->limit > 0)
		json_object_object_add(req, "limit", json_object_new_int(o->limit));
}

/* Every command with a synopsis in ctl_cmds, in its order (test_cli_render checks both). */
const struct cli_cmd cli_cmd_table[] = {
    {"status", status_flags, 1, cli_render_status, NULL},
    {"events", events_flags, 0, NULL, events_request}, /* streamed: cli_render_event */
    {"explain", NULL, 0, cli_render_explain, NULL},
    {"signal", NULL, 0, cli_render_signal, NULL},
    {"timers", NULL, 0, cli_render_timers, NULL},
    {"peers", NULL, 0, cli_render_cluster, NULL},
    {"version", NULL, 0, cli_render_version, NULL},
    {"checkpoint", NULL, 0, cli_render_checkpoint, NULL},
    {"decisions", NULL, 0, cli_render_decisions, NULL},
    {"decisions_reset", NULL, 0, cli_render_decisions_reset, NULL},
    {"stacks", NULL, 0, cli_render_stacks, NULL},
};
const int cli_cmd_count = sizeof(cli_cmd_table) / sizeof(cli_cmd_table[0]);

const struct cli_cmd *cli_cmd_find(const char *name)
{
	for (int i = 0; i < cli_cmd_count; i++)
		if (!strcmp(name, cli_cmd_table[i].name))
			return &cli_cmd_table[i];
	return NULL;
}

static const struct cli_flag *flag_find(const struct cli_flag *flags, const char *word)
{
	for (; flags && flags->name; flags++)
		if (!strcmp(word, flags->name) || (flags->alias && !strcmp(word, flags->alias)))
			return flags;
	return NULL;
}

/* The commands and their synopses come from the protocol's table (proto/ctl_proto.c). */
void cli_cmd_usage(FILE *f)
{
	fprintf(f, "Usage: ftbpf [--socket PATH] COMMAND [ARGS]\n\nCommands:\n");
	for (int i = 0; i < ctl_ncmds; i++) {
		const char *h = ctl_cmds[i].help, *nl;
		int first = 1;

		if (!ctl_cmds[i].synopsis)
			continue;
		if (strlen(ctl_cmds[i].synopsis) > 28) { /* the description on the next line */
			fprintf(f, "  %s\n", ctl_cmds[i].synopsis);
			first = 0;
		}
		do { /* the description's lines, aligned after the synopsis */
			nl = strchr(h, '\n');
			fprintf(f, "  %-28s %.*s\n", first ? ctl_cmds[i].synopsis : "",
				nl ? (int)(nl - h) : (int)strlen(h), h);
			h = nl ? nl + 1 : h;
			first = 0;
		} while (nl);
	}
	fprintf(f, "\nThe socket is $FTBPF_SOCKET, else " FTBPF_DEFAULT_SOCKET ".\n"
		   "Unprivileged users see and act on their own processes only.\n"
		   "Exit status: 0 ok, 1 the agent refused or failed the request, 2 usage,\n"
		   "3 no agent; status --check: 4 a job is hung, 5 a job failed.\n"
		   "ftbpf --version prints this tool's version.\n");
}

static int has(struct json_object *req, const char *key)
{
	return json_object_object_get_ex(req, key, NULL);
}

/* One word that is not a flag: the command's JOB, or the next argument it needs. 0, or
 * -EINVAL with the complaint written to err. */
static int positional(struct cli_cmd_line *l, const char *word, FILE *err)
{
	unsigned args = l->info->args;
	char *end;

	if (l->cmd->job_filter && !l->job && word[0] != '-') {
		l->job = word;
	} else if ((args & CTL_ARG_PID) && !has(l->req, "pid")) {
		long pid = strtol(word, &end, 10);

		if (*end || pid <= 0) {
			fprintf(err, "ftbpf: '%s' is not a pid\n", word);
			return -EINVAL;
		}
		json_object_object_add(l->req, "pid", json_object_new_int((int)pid));
	} else if ((args & CTL_ARG_TARGET) && !has(l->req, "pid") && !has(l->req, "job")) {
		long pid = strtol(word, &end, 10); /* a number is a pid, else a job */

		if (!*end && pid > 0)
			json_object_object_add(l->req, "pid", json_object_new_int((int)pid));
		else
			json_object_object_add(l->req, "job", json_object_new_string(word));
	} else if ((args & CTL_ARG_JOB) && !has(l->req, "job")) {
		json_object_object_add(l->req, "job", json_object_new_string(word));
	} else if ((args & CTL_ARG_SIGNAL) && !has(l->req, "signal")) {
		json_object_object_add(l->req, "signal", json_object_new_string(word));
	} else {
		fprintf(err, "ftbpf: unexpected argument '%s'\n", word);
		cli_cmd_usage(err);
		return -EINVAL;
	}
	return 0;
}

/* What the command needs and was not given. */
static const char *missing(const struct cli_cmd_line *l)
{
	unsigned args = l->info->args;

	if ((args & CTL_ARG_PID) && !has(l->req, "pid"))
		return "a PID";
	if ((args & CTL_ARG_JOB) && !has(l->req, "job"))
		return "a JOB";
	if ((args & CTL_ARG_TARGET) && !has(l->req, "pid") && !has(l->req, "job"))
		return "a JOB or a PID";
	if ((args & CTL_ARG_SIGNAL) && !has(l->req, "signal"))
		return "a SIGNAL";
	return NULL;
}

/* The words after the command. */
static int parse_args(int argc, char **argv, int i, struct cli_cmd_line *l, FILE *err)
{
	const struct cli_flag *f;
	const char *need;
	char *end;
	int rc;

	for (; i < argc; i++) {
		f = flag_find(cli_cmd_common_flags, argv[i]);
		if (!f)
			f = flag_find(l->cmd->flags, argv[i]);
		if (f && !f->max) {
			*(int *)((char *)&l->opts + f->field) = 1;
		} else if (f) {
			long n = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;

			if (i + 1 >= argc || *end || n < f->min || n > f->max) {
				fprintf(err, "ftbpf: %s\n", f->value_error);
				return -EINVAL;
			}
			*(int *)((char *)&l->opts + f->field) = (int)n;
			i++;
		} else if ((rc = positional(l, argv[i], err)) < 0) {
			return rc;
		}
	}
	need = missing(l);
	if (need) {
		fprintf(err, "ftbpf: %s needs %s\n", l->cmd->name, need);
		return -EINVAL;
	}
	if (l->cmd->request)
		l->cmd->request(&l->opts, l->req);
	return 0;
}

int cli_cmd_parse(int argc, char **argv, const char *sock, struct cli_cmd_line *ret, FILE *out,
		  FILE *err)
{
	struct cli_cmd_line l = {.socket = sock};
	const char *name;
	int i = 1, rc;

	while (i < argc && !strncmp(argv[i], "--", 2)) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			l.socket = argv[i + 1];
			i += 2;
		} else if (!strcmp(argv[i], "--help")) {
			cli_cmd_usage(out);
			ret->exit_now = 1;
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			fprintf(out, "ftbpf %s\n", FTBPF_VERSION);
			ret->exit_now = 1;
			return 0;
		} else {
			cli_cmd_usage(err);
			return -EINVAL;
		}
	}
	if (i >= argc) {
		cli_cmd_usage(err);
		return -EINVAL;
	}
	name = argv[i++];
	if (!strcmp(name, "decisions") && i < argc && !strcmp(argv[i], "reset")) {
		name = "decisions_reset"; /* ftbpf decisions reset JOB */
		i++;
	}
	if (!strcmp(name, "help") || !strcmp(name, "-h")) {
		cli_cmd_usage(out);
		ret->exit_now = 1;
		return 0;
	}
	l.info = ctl_cmd_find(name);
	l.cmd = cli_cmd_find(name);
	if (!l.info || !l.info->synopsis || !l.cmd) {
		fprintf(err, "ftbpf: unknown command '%s'\n", name);
		cli_cmd_usage(err);
		return -EINVAL;
	}
	l.req = json_object_new_object();
	if (!l.req)
		return -ENOMEM;
	json_object_object_add(l.req, "cmd", json_object_new_string(name));
	rc = parse_args(argc, argv, i, &l, err);
	if (rc < 0) {
		json_object_put(l.req);
		return rc;
	}
	*ret = l;
	return 0;
}

void cli_cmd_line_fini(struct cli_cmd_line *l)
{
	if (!l)
		return;
	json_object_put(l->req);
	l->req = NULL;
}

/* status JOB, --live: keep that job's entries only, and only what is live. */
void cli_cmd_status_filter(struct json_object *o, const char *job, int live)
{
	static const char *const keys[] = {"jobs", "ranks"};

	for (size_t k = 0; k < 2; k++) {
		struct json_object *arr, *out = json_object_new_array();

		if (!json_object_object_get_ex(o, keys[k], &arr) ||
		    !json_object_is_type(arr, json_type_array)) {
			json_object_put(out);
			continue;
		}
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			struct json_object *e = json_object_array_get_idx(arr, i);

			if (job && (!ctl_get_str(e, "job") || strcmp(ctl_get_str(e, "job"), job)))
				continue;
			if (live &&
			    (k == 0 ? ctl_get_int(e, "live", 0) == 0 : ctl_get_bool(e, "exited")))
				continue;
			json_object_array_add(out, json_object_get(e));
		}
		json_object_object_add(o, keys[k], out);
	}
}

/* Is a job left in the status? */
int cli_cmd_status_has_jobs(struct json_object *o)
{
	struct json_object *jobs;

	return json_object_object_get_ex(o, "jobs", &jobs) &&
	       json_object_is_type(jobs, json_type_array) && json_object_array_length(jobs) > 0;
}

/* status --check: 0 when no live job is hung or failed, CLI_EXIT_HUNG when one is hung, else
 * CLI_EXIT_FAILED when one failed (for scripts and health probes). A job whose ranks all ended
 * (finished, failed, preempted, killed...) is history: its events and status say how. */
int cli_cmd_status_check(struct json_object *o)
{
	struct json_object *jobs;
	int hung = 0, failed = 0;

	if (json_object_object_get_ex(o, "jobs", &jobs) &&
	    json_object_is_type(jobs, json_type_array))
		for (size_t k = 0; k < json_object_array_length(jobs); k++) {
			struct json_object *j = json_object_array_get_idx(jobs, k);

			if (ctl_get_int(j, "live", 0) <= 0)
				continue;
			hung |= ctl_get_bool(j, "hung");
			failed |= ctl_get_bool(j, "failed");
		}
	return hung ? CLI_EXIT_HUNG : failed ? CLI_EXIT_FAILED : 0;
}
