/*
 * ftbpf-top: the live operator view of ftbpfd. Collection (user/top/top_collect.c), the
 * table model (user/top/top_model.c), rendering into text frames (user/top/top_render.c) and
 * drawing them (user/top/top_draw.c) are separate; this file holds the options, the refresh
 * loop and the keys.
 */
#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "lib/config.h"
#include "client/ctl_client.h"
#include "top/top_collect.h"
#include "top/top_draw.h"
#include "top/top_render.h"

#define EXIT_USAGE   2
#define EXIT_CONNECT 3

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: ftbpf-top [OPTIONS]\n\n"
	    "The live view of ftbpfd: the agent's health, jobs, ranks by state and the mesh's\n"
	    "peers; a table of ranks (job, rank, pid, state, time in state, syscalls/s, GPU\n"
	    "activity age, ping/step age, armed timers, slowdown, CPU%%, RSS, threads, where\n"
	    "NVML answers GPU%% and GMEM, reason)\n"
	    "with the culprit of a hung job highlighted and marked '!'; the agent's events; a\n"
	    "detail view of one rank; its stacks now (as ftbpf stacks PID).\n"
	    "CPU%% (of one CPU, every thread, over the last refresh) and RSS are read from\n"
	    "/proc/PID/stat, which every user may read; THR is the agent's thread count.\n"
	    "GPU%% (SM use, summed over its GPUs) and GMEM (GPU memory it holds) come from\n"
	    "NVML (libnvidia-ml.so.1, the driver's), shown only where it answers.\n\n"
	    "Options:\n"
	    "  --socket PATH      ftbpfd's control socket ($FTBPF_SOCKET, "
	    "else " FTBPF_DEFAULT_SOCKET ")\n"
	    "  -d, --delay SECS   refresh interval (default 1; 0.1 to 3600)\n"
	    "  --once             print one frame as plain text and exit (for scripts)\n"
	    "  --width N          --once: line width (default: the terminal's, else 160)\n"
	    "  --job TEXT         show only jobs whose name contains TEXT\n"
	    "  --state NAME       show only: all, problems, running, blocked, spinning, stopped,\n"
	    "                     dstate, zombie, gpu_driver, gpu_sync, nccl, exited, hung, "
	    "culprit\n"
	    "  --sort COLUMN      severity (default), job, rank, pid, state, time, sc/s, gpu,\n"
	    "                     ping, timer, slow, cpu%%, rss, thr, reason\n"
	    "  --reverse          reverse the sort\n"
	    "  --no-events        hide the event pane\n"
	    "  --no-color         monochrome (bold, reverse and the row markers only)\n"
	    "  --help, --version\n\n"
	    "Keys:\n"
	    "  q quit   Up/Down k/j move   PgUp/PgDn Home/End   Enter detail of the rank\n"
	    "  s stacks of the rank now (every thread's kernel stack, its Python stacks)\n"
	    "  < > sort by the previous/next column   r reverse   / filter by job\n"
	    "  t T cycle the state filter   c clear filters   e events   P peers   p pause\n"
	    "  ? help\n"
	    "  In the detail and stacks views: Up/Down/PgUp/PgDn scroll, Esc or q back;\n"
	    "  s in the stacks view reads them again.\n\n"
	    "Row markers: '!' culprit, '*' rank of a hung job, 'x' exited.\n"
	    "If the agent goes away, the last rows stay on screen under an error line and\n"
	    "ftbpf-top reconnects at each refresh.\n"
	    "Exit status: 0; 2 usage; 3 (--once) the agent could not be reached.\n");
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct opts {
	const char *socket;
	double delay;
	int once, width, events, color;
	int sort, reverse, state;
	const char *job;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	o->socket = getenv("FTBPF_SOCKET");
	if (!o->socket || !*o->socket)
		o->socket = FTBPF_DEFAULT_SOCKET;
	o->delay = 1;
	o->events = o->color = 1;
	o->sort = TC_SEVERITY;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--version")) {
			printf("ftbpf-top %s\n", FTBPF_VERSION);
			exit(0);
		} else if (!strcmp(a, "--once")) {
			o->once = 1;
		} else if (!strcmp(a, "--reverse")) {
			o->reverse = 1;
		} else if (!strcmp(a, "--no-events")) {
			o->events = 0;
		} else if (!strcmp(a, "--no-color")) {
			o->color = 0;
		} else if (!v) {
			fprintf(stderr, "ftbpf-top: %s needs a value (or is unknown)\n", a);
			return -EINVAL;
		} else if (!strcmp(a, "--socket")) {
			o->socket = v, i++;
		} else if (!strcmp(a, "-d") || !strcmp(a, "--delay")) {
			o->delay = strtod(v, &end), i++;
			if (*end || !(o->delay >= 0.1 && o->delay <= 3600)) {
				fprintf(stderr,
					"ftbpf-top: --delay wants seconds in [0.1, 3600]: %s\n", v);
				return -EINVAL;
			}
		} else if (!strcmp(a, "--width")) {
			o->width = (int)strtol(v, &end, 10), i++;
			if (*end || o->width < 40 || o->width > 500) {
				fprintf(stderr, "ftbpf-top: --width wants 40 to 500: %s\n", v);
				return -EINVAL;
			}
		} else if (!strcmp(a, "--job")) {
			o->job = v, i++;
		} else if (!strcmp(a, "--state")) {
			o->state = top_state_filter_parse(v), i++;
			if (o->state < 0) {
				fprintf(stderr, "ftbpf-top: unknown state filter '%s'\n", v);
				return -EINVAL;
			}
		} else if (!strcmp(a, "--sort")) {
			o->sort = top_col_parse(v), i++;
			if (o->sort < 0) {
				fprintf(stderr, "ftbpf-top: unknown column '%s'\n", v);
				return -EINVAL;
			}
		} else {
			fprintf(stderr, "ftbpf-top: unknown option '%s' (see --help)\n", a);
			return -EINVAL;
		}
	}
	return 0;
}

static int run_once(const struct opts *o, struct top_model *m, struct top_source *src)
{
	struct top_frame f;
	struct winsize ws;
	int width = o->width, r;

	if (!width)
		width =
		    ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40 ? ws.ws_col : 160;
	r = top_collect(src, m, mono_s());
	if (r < 0) { /* one frame only: nothing to retry, say why and how to reach one */
		fprintf(stderr,
			"ftbpf-top: cannot reach ftbpfd at %s: %s\n"
			"  Is the agent running? Another agent's socket: --socket PATH or "
			"FTBPF_SOCKET.\n",
			o->socket ? o->socket : "?", m->error);
		return EXIT_CONNECT;
	}
	top_frame_init(&f, width);
	top_render_main(m, &f, width, 0, o->socket, o->events);
	for (int i = 0; i < f.n; i++)
		printf("%s\n", f.lines[i].text);
	top_frame_fini(&f);
	return 0;
}

enum view { V_MAIN, V_DETAIL, V_HELP, V_PROMPT, V_PEERS, V_STACKS };

struct ui {
	const struct opts *o;
	struct top_model *m;
	struct top_source *src;
	enum view view;
	int paused, events, running;
	int detail_pid, scroll;
	struct json_object *detail; /* owned: the last explain (or, V_STACKS, stacks) reply */
	char detail_err[160];
	char prompt[64];
	int plen;
	double next;
};

static void refresh_data(struct ui *u)
{
	top_collect(u->src, u->m, mono_s());
	if (u->view == V_DETAIL) { /* V_STACKS: read once, s again */
		struct json_object *d = NULL;

		if (top_collect_explain(u->src, u->detail_pid, &d, u->detail_err,
					sizeof(u->detail_err)) == 0) {
			json_object_put(u->detail);
			u->detail = d;
		}
	}
	u->next = mono_s() + u->o->delay;
}

static void open_detail(struct ui *u)
{
	const struct top_row *r = top_model_selected(u->m);

	if (!r || r->elsewhere) /* its pid is another host's: nothing to explain here */
		return;
	u->view = V_DETAIL;
	u->detail_pid = r->pid;
	u->scroll = 0;
	json_object_put(u->detail);
	u->detail = NULL;
	u->detail_err[0] = 0;
	u->next = 0; /* fetch now */
}

/* The selected rank's stacks, read once (a job's Python stacks cost the agent a read of each
 * rank's memory: not at every refresh); s reads them again. */
static void open_stacks(struct ui *u, int pid)
{
	struct json_object *d = NULL;

	u->view = V_STACKS;
	u->detail_pid = pid;
	u->scroll = 0;
	json_object_put(u->detail);
	u->detail = NULL;
	u->detail_err[0] = 0;
	if (top_collect_stacks(u->src, pid, &d, u->detail_err, sizeof(u->detail_err)) == 0)
		u->detail = d;
}

static void key_main(struct ui *u, int c, int page)
{
	switch (c) {
	case 'q':
	case 'Q':
		u->running = 0;
		break;
	case KEY_UP:
	case 'k':
		top_model_move(u->m, -1);
		break;
	case KEY_DOWN:
	case 'j':
		top_model_move(u->m, 1);
		break;
	case KEY_PPAGE:
		top_model_move(u->m, -page);
		break;
	case KEY_NPAGE:
		top_model_move(u->m, page);
		break;
	case KEY_HOME:
		top_model_move(u->m, -u->m->nview);
		break;
	case KEY_END:
		top_model_move(u->m, u->m->nview);
		break;
	case '\n':
	case '\r':
	case KEY_ENTER:
		open_detail(u);
		break;
	case 's': {
		const struct top_row *r = top_model_selected(u->m);

		if (r && !r->elsewhere && !r->exited) /* another host's pid means nothing here */
			open_stacks(u, r->pid);
		break;
	}
	case '<':
	case ',':
		top_model_sort_next(u->m, -1);
		break;
	case '>':
	case '.':
		top_model_sort_next(u->m, 1);
		break;
	case 'r':
		top_model_sort(u->m, u->m->sort, !u->m->reverse);
		break;
	case 't':
		top_model_filter_state(u->m, u->m->filter_state + 1);
		break;
	case 'T':
		top_model_filter_state(u->m, u->m->filter_state - 1);
		break;
	case 'c':
		top_model_filter_job(u->m, "");
		top_model_filter_state(u->m, 0);
		break;
	case 'e':
		u->events = !u->events;
		break;
	case 'p':
		u->paused = !u->paused;
		u->next = 0;
		break;
	case '/':
		u->view = V_PROMPT;
		snprintf(u->prompt, sizeof(u->prompt), "%s", u->m->filter_job);
		u->plen = (int)strlen(u->prompt);
		break;
	case '?':
	case 'h':
	case KEY_F(1):
		u->view = V_HELP;
		break;
	case 'P':
		u->view = V_PEERS;
		break;
	}
}

static void key_prompt(struct ui *u, int c)
{
	if (c == 27) { /* Esc: leave the filter as it was */
		u->view = V_MAIN;
	} else if (c == '\n' || c == '\r' || c == KEY_ENTER) {
		top_model_filter_job(u->m, u->prompt);
		u->view = V_MAIN;
	} else if ((c == KEY_BACKSPACE || c == 127 || c == 8) && u->plen > 0) {
		u->prompt[--u->plen] = 0;
	} else if (c >= 0x20 && c < 0x7f && u->plen < (int)sizeof(u->prompt) - 1) {
		u->prompt[u->plen++] = (char)c;
		u->prompt[u->plen] = 0;
	}
}

static void key_detail(struct ui *u, int c, int page)
{
	switch (c) {
	case 27:
	case 'q':
	case KEY_LEFT:
	case KEY_BACKSPACE:
	case '\n':
	case '\r':
	case KEY_ENTER:
		u->view = V_MAIN;
		break;
	case KEY_UP:
	case 'k':
		u->scroll--;
		break;
	case KEY_DOWN:
	case 'j':
		u->scroll++;
		break;
	case KEY_PPAGE:
		u->scroll -= page;
		break;
	case KEY_NPAGE:
	case ' ':
		u->scroll += page;
		break;
	case 's':
		if (u->view == V_STACKS)
			open_stacks(u, u->detail_pid);
		break;
	}
}

static void draw(struct ui *u, struct top_frame *f)
{
	int w, h;
	char prompt[128];

	top_draw_size(&w, &h);
	if (u->view == V_DETAIL || u->view == V_STACKS) {
		if (u->view == V_STACKS)
			top_render_stacks(u->detail, u->detail_pid,
					  u->detail ? NULL : u->detail_err, f, w);
		else
			top_render_detail(u->m, u->detail, u->detail ? NULL : u->detail_err, f, w);
		if (u->scroll > f->n - h)
			u->scroll = f->n - h;
		if (u->scroll < 0)
			u->scroll = 0;
		top_draw_frame(f, u->scroll, NULL);
	} else if (u->view == V_HELP) {
		top_render_help(f, w);
		top_draw_frame(f, 0, NULL);
	} else if (u->view == V_PEERS) {
		top_frame_clear(f, w);
		top_render_peers(u->m, f);
		top_frame_add(f, TA_KEYS, "%s", "Esc, q or P back");
		top_draw_frame(f, 0, NULL);
	} else {
		top_render_main(u->m, f, w, u->view == V_PROMPT ? h - 1 : h, u->o->socket,
				u->events);
		if (u->paused && f->n)
			snprintf(f->lines[f->n - 1].text, sizeof(f->lines[0].text),
				 "PAUSED (p resumes)  %s", top_keys_line(w));
		snprintf(prompt, sizeof(prompt), "job filter (Enter applies, Esc cancels): %s",
			 u->prompt);
		top_draw_frame(f, 0, u->view == V_PROMPT ? prompt : NULL);
	}
}

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	struct top_model m;
	struct top_source src = {0};
	struct top_frame f;
	struct ui u = {0};
	struct sigaction sa = {.sa_handler = on_stop};
	int rc;

	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USAGE;
	signal(SIGPIPE, SIG_IGN);
	src.socket = o.socket;
	src.timeout_ms = 2000;
	top_model_init(&m);
	top_model_sort(&m, (enum top_col)o.sort, o.reverse);
	top_model_filter_state(&m, o.state);
	if (o.job)
		top_model_filter_job(&m, o.job);
	if (o.once) {
		rc = run_once(&o, &m, &src);
		top_collect_close(&src);
		top_model_fini(&m);
		return rc;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "ftbpf-top: needs a terminal (use --once for plain text)\n");
		return EXIT_USAGE;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (top_draw_init(o.color) < 0) {
		fprintf(stderr, "ftbpf-top: cannot start the terminal (TERM=%s)\n",
			getenv("TERM") ? getenv("TERM") : "");
		return EXIT_USAGE;
	}
	top_frame_init(&f, 80);
	u.o = &o;
	u.m = &m;
	u.src = &src;
	u.events = o.events;
	u.running = 1;
	while (u.running && !stop) {
		double now = mono_s();
		int c, w, h, wait_ms;

		if (!u.paused && now >= u.next)
			refresh_data(&u);
		draw(&u, &f);
		wait_ms = u.paused ? 1000 : (int)((u.next - mono_s()) * 1000) + 1;
		c = top_draw_key(wait_ms < 1 ? 1 : wait_ms);
		if (c < 0 || c == KEY_RESIZE)
			continue;
		top_draw_size(&w, &h);
		if (u.view == V_HELP)
			u.view = V_MAIN;
		else if (u.view == V_PEERS)
			u.view = c == 27 || c == 'q' || c == 'P' ? V_MAIN : V_PEERS;
		else if (u.view == V_PROMPT)
			key_prompt(&u, c);
		else if (u.view == V_DETAIL || u.view == V_STACKS)
			key_detail(&u, c, h > 4 ? h - 2 : 1);
		else
			key_main(&u, c, h > 12 ? h - 12 : 1);
	}
	top_draw_fini();
	top_frame_fini(&f);
	json_object_put(u.detail);
	top_collect_close(&src);
	top_model_fini(&m);
	return 0;
}
