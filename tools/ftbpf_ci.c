/*
 * ftbpf-ci: runs a test command, watches its whole process tree from the kernel (the tracker's
 * BPF programs, loaded privately: no ftbpfd needed), and when the tree stops making progress
 * (or the run exceeds --timeout) prints what was stuck, writes it as JSON and JUnit XML,
 * terminates the tree and exits with a code of its own. A command that finishes is untouched:
 * same output, same exit code.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ci/report.h"
#include "ci/tree.h"
#include "os/log.h"
#include "watch/tracker.h"

#define EXIT_INTERNAL 122
#define EXIT_HANG     124
#define EXIT_TIMEOUT  125
#define EXIT_NOEXEC   126
#define EXIT_NOTFOUND 127
#define NS	      1000000000ull
#define POLL_MS	      250

struct opts {
	double hang_timeout, timeout, grace; /* hang_timeout 0: no hang detection */
	const char *report, *junit;
	int quiet, no_bpf, wait_orphans, count_debugger;
	int hang_code, timeout_code;
	char **argv;
};

struct ci {
	struct opts o;
	struct tracker *tr; /* owned; NULL in /proc fallback */
	struct tree tree;   /* the command's processes */
	char cgroup[256];   /* our cgroup directory, "" when none */
	int root;	    /* COMMAND's pid */
	int root_status, root_done;
	int tty;	 /* COMMAND gets our terminal's foreground (a debugger's prompt) */
	int debug_noted; /* the pid we said is under a debugger */
	uint64_t start_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: ftbpf-ci [OPTIONS] -- COMMAND [ARGS...]\n\n"
	    "Runs COMMAND in its own process group, watches every descendant from the kernel\n"
	    "and, when the tree makes no progress for --hang-timeout (or the run exceeds\n"
	    "--timeout), prints a diagnosis (process tree, states, syscalls, wait channels,\n"
	    "kernel, user and Python stacks, the most likely cause), terminates the tree and\n"
	    "exits with its own code. Otherwise COMMAND's output and exit code pass unchanged.\n\n"
	    "Options (each also from the environment variable in brackets, for CI templates\n"
	    "that fix the command line; a flag wins over the variable, the variable over the\n"
	    "default; a variable set to a bad value is an error, an empty one is unset):\n"
	    "  --hang-timeout SECS   no progress this long is a hang; 0 = no hang detection\n"
	    "                        (default 300) [FTBPF_CI_HANG_TIMEOUT]\n"
	    "  --timeout SECS        bound on the whole run; 0 = none (default 0)\n"
	    "                        [FTBPF_CI_TIMEOUT]\n"
	    "  --grace SECS          between SIGTERM and SIGKILL when terminating (default 10)\n"
	    "                        [FTBPF_CI_GRACE]\n"
	    "  --report FILE         write the diagnosis as JSON [FTBPF_CI_REPORT]\n"
	    "  --junit FILE          write a JUnit XML report (a failure on hang/timeout)\n"
	    "                        [FTBPF_CI_JUNIT]\n"
	    "                        (reports: no symbolic link in their paths is followed)\n"
	    "  --count-debugger      a process stopped by a debugger (ptrace) or waiting at a\n"
	    "                        terminal prompt (pdb) counts as hung; by default it does\n"
	    "                        not [FTBPF_CI_COUNT_DEBUGGER=1]\n"
	    "  --no-wait-orphans     end when COMMAND exits, terminating what it left behind\n"
	    "                        (default: wait for every descendant, hangs included)\n"
	    "  --no-bpf              watch through /proc only (what happens without privileges)\n"
	    "  --hang-exit-code N    exit code on a hang (default %d) [FTBPF_CI_HANG_EXIT_CODE]\n"
	    "  --timeout-exit-code N exit code on --timeout (default %d)\n"
	    "                        [FTBPF_CI_TIMEOUT_EXIT_CODE]\n"
	    "  --quiet               no notes on stderr except the diagnosis [FTBPF_CI_QUIET=1]\n"
	    "  --help, --version\n\n"
	    "Exit codes: COMMAND's own code (128+N when a signal N ended it); %d hang; %d "
	    "timeout;\n"
	    "%d COMMAND not executable; %d COMMAND not found; %d ftbpf-ci's own error;\n"
	    "128+N when ftbpf-ci got SIGINT/SIGTERM/SIGHUP N (forwarded to the tree, then the\n"
	    "tree is ended with SIGTERM, grace, SIGKILL).\n"
	    "Progress: a completed syscall of a process's main thread other than an empty wait or\n"
	    "a sleep (as ftbpfd defines it; CPU time is not progress), or a process of the tree\n"
	    "starting, exec'ing or exiting. Without BPF (no privileges, --no-bpf): read/write\n"
	    "syscall counts from /proc/PID/io and processes starting or exiting.\n"
	    "Python stacks are printed in faulthandler's layout; a pytest test in progress is\n"
	    "named per process (per pytest-xdist worker). The FTBPF_CI_* variables are removed\n"
	    "from COMMAND's environment.\n",
	    EXIT_HANG, EXIT_TIMEOUT, EXIT_HANG, EXIT_TIMEOUT, EXIT_NOEXEC, EXIT_NOTFOUND,
	    EXIT_INTERNAL);
}

static int parse_secs(const char *s, double *ret)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v < 0 || v > 1e7)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* The value of one option, from a flag (what "--x") or a variable (what "X=") */
static int set_secs(const char *what, const char *v, double *ret, int hang)
{
	double d;

	if (parse_secs(v, &d) < 0 || (hang && d > 0 && d < 0.5)) {
		fprintf(stderr, "ftbpf-ci: %s'%s': not a number of seconds%s\n", what, v,
			hang ? " (0 = no hang detection, else >= 0.5)" : "");
		return -EINVAL;
	}
	*ret = d;
	return 0;
}

static int set_code(const char *what, const char *v, int *ret)
{
	char *end;
	long code = strtol(v, &end, 10);

	if (end == v || *end || code < 1 || code > 255) {
		fprintf(stderr, "ftbpf-ci: %s'%s': not a code 1..255\n", what, v);
		return -EINVAL;
	}
	*ret = (int)code;
	return 0;
}

static int set_bool(const char *what, const char *v, int *ret)
{
	if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true"))
		*ret = 1;
	else if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false"))
		*ret = 0;
	else {
		fprintf(stderr, "ftbpf-ci: %s'%s': not 0 or 1\n", what, v);
		return -EINVAL;
	}
	return 0;
}

/* The environment's settings (pytest-timeout's PYTEST_TIMEOUT habit), under the flags. */
static int parse_env(struct opts *o)
{
	static const struct {
		const char *name;
		int kind; /* 0 secs, 1 hang secs, 2 code, 3 bool, 4 path */
		size_t off;
	} vars[] = {
	    {"FTBPF_CI_HANG_TIMEOUT", 1, offsetof(struct opts, hang_timeout)},
	    {"FTBPF_CI_TIMEOUT", 0, offsetof(struct opts, timeout)},
	    {"FTBPF_CI_GRACE", 0, offsetof(struct opts, grace)},
	    {"FTBPF_CI_REPORT", 4, offsetof(struct opts, report)},
	    {"FTBPF_CI_JUNIT", 4, offsetof(struct opts, junit)},
	    {"FTBPF_CI_HANG_EXIT_CODE", 2, offsetof(struct opts, hang_code)},
	    {"FTBPF_CI_TIMEOUT_EXIT_CODE", 2, offsetof(struct opts, timeout_code)},
	    {"FTBPF_CI_QUIET", 3, offsetof(struct opts, quiet)},
	    {"FTBPF_CI_COUNT_DEBUGGER", 3, offsetof(struct opts, count_debugger)},
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i].name);
		char what[64];
		void *p = (char *)o + vars[i].off;
		int r = 0;

		if (!v || !*v)
			continue;
		snprintf(what, sizeof(what), "%s=", vars[i].name);
		switch (vars[i].kind) {
		case 0:
		case 1:
			r = set_secs(what, v, p, vars[i].kind == 1);
			break;
		case 2:
			r = set_code(what, v, p);
			break;
		case 3:
			r = set_bool(what, v, p);
			break;
		default:
			*(const char **)p = v;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* COMMAND does not inherit our settings (a nested ftbpf-ci would take them). */
static void clean_env(void)
{
	extern char **environ;

	for (int i = 0; environ[i];) {
		char name[64];
		const char *eq = strchr(environ[i], '=');
		size_t n = eq ? (size_t)(eq - environ[i]) : 0;

		if (n && n < sizeof(name) && !strncmp(environ[i], "FTBPF_CI_", 9)) {
			memcpy(name, environ[i], n);
			name[n] = 0;
			unsetenv(name);
			continue;
		}
		i++;
	}
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	o->hang_timeout = 300;
	o->grace = 10;
	o->wait_orphans = 1;
	o->hang_code = EXIT_HANG;
	o->timeout_code = EXIT_TIMEOUT;
	if (parse_env(o) < 0)
		return -EINVAL;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char what[64];

		snprintf(what, sizeof(what), "%s ", a);
		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--version")) {
			printf("ftbpf-ci %s\n", FTBPF_VERSION);
			exit(0);
		} else if (!strcmp(a, "--quiet")) {
			o->quiet = 1;
		} else if (!strcmp(a, "--no-bpf")) {
			o->no_bpf = 1;
		} else if (!strcmp(a, "--no-wait-orphans")) {
			o->wait_orphans = 0;
		} else if (!strcmp(a, "--count-debugger")) {
			o->count_debugger = 1;
		} else if (v && (!strcmp(a, "--hang-timeout") || !strcmp(a, "--timeout") ||
				 !strcmp(a, "--grace"))) {
			if (set_secs(what, v,
				     a[2] == 'h'   ? &o->hang_timeout
				     : a[2] == 't' ? &o->timeout
						   : &o->grace,
				     a[2] == 'h') < 0)
				return -EINVAL;
			i++;
		} else if (v && (!strcmp(a, "--report") || !strcmp(a, "--junit"))) {
			*(a[2] == 'r' ? &o->report : &o->junit) = v;
			i++;
		} else if (v &&
			   (!strcmp(a, "--hang-exit-code") || !strcmp(a, "--timeout-exit-code"))) {
			if (set_code(what, v, a[2] == 'h' ? &o->hang_code : &o->timeout_code) < 0)
				return -EINVAL;
			i++;
		} else {
			fprintf(stderr,
				"ftbpf-ci: %s: unknown option or missing value (see --help)\n", a);
			return -EINVAL;
		}
	}
	if (i >= argc) {
		fprintf(stderr,
			"ftbpf-ci: no COMMAND (usage: ftbpf-ci [OPTIONS] -- COMMAND [ARGS...])\n");
		return -EINVAL;
	}
	o->argv = &argv[i];
	return 0;
}

static void note(const struct ci *c, const char *fmt, const char *arg)
{
	if (!c->o.quiet) {
		fprintf(stderr, "ftbpf-ci: ");
		fprintf(stderr, fmt, arg);
		fputc('\n', stderr);
	}
}

/* ---- watching ---- */
static void on_event(void *ctx, const struct ftbpf_event *e)
{
	struct ci *c = ctx;

	/* Only the tree's own: exec events come for every process of the host (flags says
	 * whether it was tracked, i.e. ours); fork and exit events only for tracked ones. */
	if ((e->type == FTBPF_EV_EXEC && e->flags) || e->type == FTBPF_EV_FORK ||
	    e->type == FTBPF_EV_EXIT)
		tree_activity(&c->tree, now_ns());
}

static int bpf_setup(struct ci *c, char *err, size_t errlen)
{
	struct tracker_opts to = {0};

	/* nothing pinned: our programs and maps live as long as we do, so that a ftbpf-ci
	 * killed with SIGKILL (a CI job timeout) leaves nothing attached */
	to.pin_dir = NULL;
	to.agent_tgid = (uint32_t)getpid();
	to.on_event = on_event;
	to.ctx = c;
	to.programs = "auto";
	c->tr = tracker_open(&to, err, errlen);
	return c->tr ? 0 : -1;
}

static void cgroup_setup(struct ci *c)
{
	char path[300];

	snprintf(c->cgroup, sizeof(c->cgroup), "/sys/fs/cgroup/ftbpf-ci.%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/cgroup.procs", c->cgroup);
	if (mkdir(c->cgroup, 0755) < 0 || access(path, W_OK) < 0) {
		rmdir(c->cgroup);
		c->cgroup[0] = 0;
	}
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* A process of the tree sits in a debugger: not a hang (pytest-timeout's habit). The hang
 * clock starts again when it leaves. */
static int under_debugger(struct ci *c, uint64_t now)
{
	char why[160];
	int pid = tree_debugged(&c->tree, why, sizeof(why));

	if (!pid)
		return 0;
	if (pid != c->debug_noted) {
		note(c, "%s: not counted as a hang (--count-debugger counts it)", why);
		c->debug_noted = pid;
	}
	tree_activity(&c->tree, now);
	return 1;
}

/* ---- running and ending ---- */
static void reap(struct ci *c)
{
	int st, pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (pid == c->root) {
			c->root_done = 1;
			c->root_status = st;
		}
		tree_activity(&c->tree, now_ns());
	}
}

static int have_children(void)
{
	return !(waitid(P_ALL, 0, NULL, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD);
}

/* SIGTERM (after SIGCONT) to every live descendant, grace, then SIGKILL (the cgroup's too). */
static void terminate_tree(struct ci *c, int first_sig)
{
	uint64_t end;

	tree_scan(&c->tree, now_ns(), 0);
	kill(-c->root, SIGCONT);
	kill(-c->root, first_sig);
	for (int i = 0; i < c->tree.np; i++)
		if (c->tree.p[i].live) {
			kill(c->tree.p[i].pid, SIGCONT);
			kill(c->tree.p[i].pid, first_sig);
		}
	end = now_ns() + (uint64_t)(c->o.grace * NS);
	while (have_children() && now_ns() < end) {
		reap(c);
		usleep(20000);
	}
	if (have_children()) {
		char p[300];

		tree_scan(&c->tree, now_ns(), 0);
		kill(-c->root, SIGKILL);
		for (int i = 0; i < c->tree.np; i++)
			if (c->tree.p[i].live)
				kill(c->tree.p[i].pid, SIGKILL);
		if (*c->cgroup) {
			snprintf(p, sizeof(p), "%s/cgroup.kill", c->cgroup);
			write_str(p, "1");
		}
	}
	while (have_children()) {
		reap(c);
		usleep(10000);
	}
	reap(c);
}

static int exit_code_of(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void cleanup(struct ci *c)
{
	if (c->tty) { /* the terminal back to our process group */
		signal(SIGTTOU, SIG_IGN);
		(void)tcsetpgrp(STDIN_FILENO, getpgrp());
		signal(SIGTTOU, SIG_DFL);
	}
	tree_fini(&c->tree);
	tracker_close(c->tr);
	if (*c->cgroup)
		rmdir(c->cgroup);
}

/* fork + exec COMMAND, held at a pipe until it is tracked; returns 0 or an exit code */
static int start(struct ci *c)
{
	int gate[2], errp[2], e = 0;
	char b;

	if (pipe2(gate, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
		return EXIT_INTERNAL;
	c->tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	c->root = fork();
	if (c->root < 0)
		return EXIT_INTERNAL;
	if (c->root == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0);
		if (c->tty) { /* the terminal's foreground: a debugger's prompt can read it */
			signal(SIGTTOU, SIG_IGN);
			(void)tcsetpgrp(STDIN_FILENO, getpid());
			signal(SIGTTOU, SIG_DFL);
		}
		clean_env();
		close(gate[1]);
		if (read(gate[0], &b, 1) != 1)
			_exit(EXIT_INTERNAL);
		execvp(c->o.argv[0], c->o.argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(EXIT_INTERNAL);
		_exit(e == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
	}
	setpgid(c->root, c->root);
	close(gate[0]);
	close(errp[1]);
	if (*c->cgroup) {
		char p[300], pid[16];

		snprintf(p, sizeof(p), "%s/cgroup.procs", c->cgroup);
		snprintf(pid, sizeof(pid), "%d", c->root);
		if (write_str(p, pid) < 0) {
			rmdir(c->cgroup);
			c->cgroup[0] = 0;
		}
	}
	if (c->tr) {
		struct ftbpf_proc p = {0};

		p.tgid = p.owner = (uint32_t)c->root;
		p.flags = FTBPF_PROC_RANK;
		p.world_size = 1;
		p.adopted_ns = now_ns();
		snprintf(p.job, sizeof(p.job), "ftbpf-ci");
		tracker_proc_put(c->tr, (uint32_t)c->root, &p);
		tracker_set_tracked(c->tr, (uint32_t)c->root, 1);
	}
	if (write(gate[1], "x", 1) != 1)
		return EXIT_INTERNAL;
	close(gate[1]);
	if (read(errp[0], &e, sizeof(e)) == sizeof(e)) {
		fprintf(stderr, "ftbpf-ci: %s: %s\n", c->o.argv[0], strerror(e));
		close(errp[0]);
		waitpid(c->root, NULL, 0);
		return e == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
	}
	close(errp[0]);
	return 0;
}

int main(int argc, char **argv)
{
	static struct ci ci;
	struct ci *c = &ci;
	char err[512] = "";
	sigset_t mask;
	int r, sig = 0, code;
	const char *verdict = NULL;
	struct report rep = {0};
	struct det_job job;
	uint64_t now;

	if (parse_args(argc, argv, &c->o) < 0)
		return EXIT_INTERNAL;
	log_set_level(LOG_ERR);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (c->o.no_bpf) {
		note(c, "%s", "watching through /proc (--no-bpf)");
	} else if (bpf_setup(c, err, sizeof(err)) < 0) {
		note(c,
		     "BPF unavailable (%s): falling back to /proc polling (coarser progress: "
		     "read/write syscall counts; no kernel stacks without root)",
		     err);
	}
	if (geteuid() == 0)
		cgroup_setup(c);
	/* no hang detection: a verdict that never comes */
	tree_init(&c->tree, c->tr, c->o.hang_timeout > 0 ? c->o.hang_timeout : 1e7);
	c->start_ns = now_ns();
	tree_activity(&c->tree, c->start_ns);
	r = start(c);
	if (r) {
		cleanup(c);
		return r;
	}
	for (;;) {
		struct timespec ts = {0, POLL_MS * 1000000L};
		siginfo_t si;
		int s = sigtimedwait(&mask, &si, &ts);

		if (s == SIGINT || s == SIGTERM || s == SIGHUP) {
			/* forward, then give the tree the grace to end by itself */
			sig = s;
			note(c, "%s: forwarding to the command, then ending its tree",
			     strsignal(s));
			kill(-c->root, s);
			terminate_tree(c, s);
			break;
		}
		if (c->tr)
			while (tracker_consume(c->tr, 4096) == 1)
				;
		reap(c);
		if (c->root_done && (!c->o.wait_orphans || !have_children()))
			break;
		now = now_ns();
		tree_scan(&c->tree, now, 1); /* updates each process's CPU history (spinning) */
		tree_eval(&c->tree, now, &job);
		if (job.hung && c->o.hang_timeout > 0 && !c->o.count_debugger &&
		    under_debugger(c, now))
			job.hung = 0;
		if (job.hung && c->o.hang_timeout > 0)
			verdict = "hang";
		else if (c->o.timeout > 0 && now - c->start_ns >= (uint64_t)(c->o.timeout * NS))
			verdict = "timeout";
		if (verdict)
			break;
	}
	if (verdict) {
		struct report_opts ro = {verdict, c->o.hang_timeout, c->o.timeout, c->start_ns,
					 now};

		report_diagnose(&rep, &c->tree, &ro); /* at the time of the last scan */
		fputs(rep.text ? rep.text : "", stderr);
		if (c->o.report) {
			char err[256];

			if (report_write_json(c->o.report, rep.root, err, sizeof(err)) < 0)
				fprintf(stderr, "ftbpf-ci: --report %s\n", err);
		}
		fprintf(stderr,
			"ftbpf-ci: terminating the process tree (SIGTERM, %gs grace, SIGKILL)\n",
			c->o.grace);
		terminate_tree(c, SIGTERM);
		code = !strcmp(verdict, "hang") ? c->o.hang_code : c->o.timeout_code;
	} else if (sig) {
		code = 128 + sig; /* interrupted, whatever the tree did then */
	} else {
		if (have_children()) /* --no-wait-orphans: what COMMAND left behind */
			terminate_tree(c, SIGTERM);
		code = exit_code_of(c->root_status);
	}
	if (c->o.junit &&
	    (r = report_junit(c->o.junit, c->o.argv, verdict, code, rep.text,
			      rep.root ? json_object_object_get(rep.root, "tests") : NULL,
			      (double)(now_ns() - c->start_ns) / NS)) < 0)
		fprintf(stderr, "ftbpf-ci: --junit %s: %s\n", c->o.junit, strerror(-r));
	report_free(&rep);
	cleanup(c);
	return code;
}
