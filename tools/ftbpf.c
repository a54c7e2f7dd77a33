/*
 * ftbpf: command-line client of ftbpfd. Talks the JSON-lines control protocol over the Unix
 * socket ($FTBPF_SOCKET, --socket, or /run/ftbpf/ftbpfd.sock) and prints tables or raw JSON.
 * The command table and its parser are user/cli/cli_cmd.c, the text user/cli/cli_render.c.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_cmd.h"
#include "cli/cli_render.h"
#include "client/ctl_client.h"
#include "lib/config.h"
#include "lib/textsafe.h"

static int check_ok(struct json_object *o)
{
	if (!o) {
		fprintf(stderr, "ftbpf: no answer from the agent\n");
		return 1;
	}
	if (!ctl_get_bool(o, "ok")) {
		fprintf(stderr, "ftbpf: %s (%s)\n", ctl_get_str_or(o, "error", "request failed"),
			ctl_get_str_or(o, "code", "?"));
		return 1;
	}
	return 0;
}

/* ---- what the agent says is other users' text: made terminal-safe on its way out ---- */
static struct textsafe out_ts;
static FILE *out_real;

static int out_emit(void *ctx, const char *b, size_t n)
{
	(void)ctx;
	return fwrite(b, 1, n, out_real) == n ? 0 : -1;
}

static ssize_t out_write(void *c, const char *b, size_t n)
{
	(void)c;
	if (textsafe_write(&out_ts, b, n, 0, out_emit, NULL) < 0 || fflush(out_real))
		return -1;
	return (ssize_t)n;
}

static int out_close(void *c)
{
	(void)c;
	textsafe_write(&out_ts, "", 0, 1, out_emit, NULL);
	return fflush(out_real) ? -1 : 0;
}

/* From here on, stdout escapes control bytes, C1 controls, bidi overrides and bytes that
 * are not UTF-8 (job names, comms and stacks come from other users' processes). */
static void safe_stdout(int json)
{
	cookie_io_functions_t io = {.write = out_write, .close = out_close};
	FILE *f;

	out_ts.mode = json ? TEXTSAFE_JSON : TEXTSAFE_TEXT;
	out_real = fdopen(dup(STDOUT_FILENO), "w");
	f = out_real ? fopencookie(NULL, "w", io) : NULL;
	if (!f)
		return; /* as it was: better unfiltered output than none */
	setvbuf(f, NULL, _IOLBF, 0);
	stdout = f;
}

/* events: one reply line per event until the end (or, with --follow, until the agent goes). */
static int read_events(struct ctl_conn *conn, const struct cli_cmd_line *l)
{
	struct json_object *o = NULL, *e;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (ctl_conn_read(conn, &o) == 0) {
		if (json_object_object_get_ex(o, "event", &e)) {
			if (l->opts.json)
				printf("%s\n",
				       json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN));
			else
				cli_render_event(stdout, e);
		} else if (json_object_object_get_ex(o, "ok", NULL)) {
			rc = check_ok(o);
			if (rc || ctl_get_bool(o, "end")) {
				json_object_put(o);
				return rc;
			}
		}
		json_object_put(o);
	}
	return l->opts.follow ? 0 : 1;
}

/* The reply to any other command: filtered (status JOB, --live), then as JSON or text. */
static int show_reply(struct json_object *o, const struct cli_cmd_line *l)
{
	int is_status = !strcmp(l->cmd->name, "status");

	if (is_status && l->job) {
		cli_cmd_status_filter(o, l->job, 0);
		if (!cli_cmd_status_has_jobs(o)) {
			fprintf(stderr,
				"ftbpf: no job '%s' on this host (of yours); `ftbpf status` lists "
				"them\n",
				l->job);
			return 1;
		}
	}
	if (is_status && l->opts.live)
		cli_cmd_status_filter(o, NULL, 1);
	if (l->opts.json)
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
	else if (l->cmd->render)
		l->cmd->render(stdout, o);
	if (!l->opts.json && is_status && l->opts.cluster) /* the cluster view after the status */
		cli_render_cluster(stdout, o);
	return is_status && l->opts.check ? cli_cmd_status_check(o) : 0;
}

int main(int argc, char **argv)
{
	const char *sock = getenv("FTBPF_SOCKET");
	struct cli_cmd_line l = {0};
	struct json_object *o = NULL;
	struct ctl_conn *conn;
	int rc;

	if (!sock || !*sock)
		sock = FTBPF_DEFAULT_SOCKET;
	if (cli_cmd_parse(argc, argv, sock, &l, stdout, stderr) < 0)
		return CLI_EXIT_USAGE;
	if (l.exit_now)
		return 0;
	safe_stdout(l.opts.json);
	rc = ctl_conn_open(l.socket, 0, &conn);
	if (rc < 0) {
		fprintf(stderr,
			"ftbpf: cannot reach ftbpfd at %s: %s\n"
			"  Is the agent running? (systemctl start ftbpfd, or sudo make run in the "
			"source tree.)\n"
			"  Another agent's socket: --socket PATH or FTBPF_SOCKET.\n",
			l.socket, strerror(-rc));
		cli_cmd_line_fini(&l);
		return CLI_EXIT_CONNECT;
	}
	rc = ctl_conn_send(conn, l.req);
	if (rc < 0) {
		fprintf(stderr, "ftbpf: write to agent: %s\n", strerror(-rc));
		ctl_conn_close(conn);
		cli_cmd_line_fini(&l);
		return CLI_EXIT_CONNECT;
	}
	if (!strcmp(l.cmd->name, "events")) {
		rc = read_events(conn, &l);
		ctl_conn_close(conn);
		cli_cmd_line_fini(&l);
		return rc;
	}
	if (ctl_conn_read(conn, &o) < 0)
		o = NULL;
	ctl_conn_close(conn);
	rc = check_ok(o);
	if (!rc)
		rc = show_reply(o, &l);
	json_object_put(o);
	cli_cmd_line_fini(&l);
	return rc;
}
