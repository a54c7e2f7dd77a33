/*
 * The ftbpf CLI's command table: each command's own flags and how its reply is shown, read by
 * one generic parser (argv -> the control request) and by main. The commands' names, synopses
 * and arguments are the control protocol's (proto/ctl_proto.c); this table adds what only the
 * CLI needs. Pure: writes only the messages it is given a stream for.
 */
#ifndef FTBPF_CLI_CMD_H
#define FTBPF_CLI_CMD_H

#include <stddef.h>
#include <stdio.h>

#include "proto/ctl_proto.h"

struct json_object;

#define CLI_EXIT_USAGE	 2
#define CLI_EXIT_CONNECT 3
#define CLI_EXIT_HUNG	 4 /* status --check: a job is hung */
#define CLI_EXIT_FAILED	 5 /* status --check: a job failed (none hung) */

/* What the flags of a command line set (each an int, 0 when not given). */
struct cli_opts {
	int json, follow, limit, cluster, check, live;
};

/* A flag: a switch (max 0: sets its field to 1) or one taking a number in [min, max]. */
struct cli_flag {
	const char *name;  /* "--limit" */
	const char *alias; /* "-f", or NULL */
	size_t field;	   /* offsetof(struct cli_opts, ...) */
	int min, max;
	const char *value_error; /* a number flag's complaint: "--limit needs ..." */
};

typedef void (*cli_render_fn)(FILE *out, struct json_object *reply);

struct cli_cmd {
	const char *name;	      /* the control command (ctl_cmds) */
	const struct cli_flag *flags; /* its own flags, ending with a NULL name; NULL: none */
	int job_filter;		      /* takes an optional JOB of its own (status JOB) */
	cli_render_fn render;	      /* its reply as text */
	/* adds what the flags ask to the request (events: follow, limit); NULL: nothing */
	void (*request)(const struct cli_opts *o, struct json_object *req);
};

/* The flags every command takes (--json, --follow). */
extern const struct cli_flag cli_cmd_common_flags[];
extern const struct cli_cmd cli_cmd_table[];
extern const int cli_cmd_count;

/* The CLI's entry for a control command (by its protocol name), or NULL. */
const struct cli_cmd *cli_cmd_find(const char *name);

/* A parsed command line. */
struct cli_cmd_line {
	const char *socket;		 /* --socket PATH, else the one given to the parser */
	int exit_now;			 /* --help, --version, help: printed; exit 0 */
	const struct cli_cmd *cmd;	 /* the command */
	const struct ctl_cmd_info *info; /* its protocol entry */
	struct cli_opts opts;
	const char *job;	 /* status JOB */
	struct json_object *req; /* the request (owned; json_object_put) */
};

/*
 * ftbpf [--socket PATH] COMMAND [ARGS] -> *ret (sock: the socket when no --socket). 0 (with
 * ret->exit_now set when --help or --version was answered on out), or -EINVAL with what is
 * wrong (and the usage where the CLI gives it) written to err, for exit status 2.
 */
int cli_cmd_parse(int argc, char **argv, const char *sock, struct cli_cmd_line *ret, FILE *out,
		  FILE *err);
void cli_cmd_line_fini(struct cli_cmd_line *l);

/* `ftbpf --help`: the commands of the protocol's table with their synopses. */
void cli_cmd_usage(FILE *f);

/* status JOB, --live: keep that job's entries only (job not NULL), live ones only (live). */
void cli_cmd_status_filter(struct json_object *reply, const char *job, int live);
/* Is a job left in a status reply? */
int cli_cmd_status_has_jobs(struct json_object *reply);
/* status --check: 0, CLI_EXIT_HUNG when a live job is hung, else CLI_EXIT_FAILED when one
 * failed. */
int cli_cmd_status_check(struct json_object *reply);

#endif
