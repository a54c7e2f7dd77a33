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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "detector.h"
#include "ksyms.h"
#include "log.h"
#include "procfs.h"
#include "pystack.h"
#include "syscalls.h"
#include "tracker.h"
#include "ustack.h"

#define EXIT_INTERNAL 122
#define EXIT_HANG     124
#define EXIT_TIMEOUT  125
#define EXIT_NOEXEC   126
#define EXIT_NOTFOUND 127
#define NS	      1000000000ull
#define MAX_PROCS     1024
#define POLL_MS	      250

struct opts {
	double hang_timeout, timeout, grace;
	const char *report, *junit;
	int quiet, no_bpf, wait_orphans;
	int hang_code, timeout_code;
	char **argv;
};

/* What ftbpf-ci remembers of one descendant between polls. */
struct cproc {
	int pid;
	int live;
	uint64_t io;	       /* fallback progress: read+write syscalls (/proc/PID/io) */
	uint64_t io_change_ns; /* when io last changed */
	int nr;		       /* fallback: syscall in flight (/proc/PID/syscall), -1 none */
	uint64_t nr_since_ns;
	struct det_sample s;
	struct det_rank d;
	struct proc_stat st;
};

struct ci {
	struct opts o;
	struct tracker *tr; /* owned; NULL in /proc fallback */
	char pin_dir[128];
	char cgroup[256]; /* our cgroup directory, "" when none */
	int root;	  /* COMMAND's pid */
	int root_status, root_done;
	uint64_t start_ns, activity_ns; /* activity: last fork/exec/exit in the tree */
	struct cproc p[MAX_PROCS];
	int np;
	struct ksyms *ksyms; /* owned, loaded on first use */
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
	    "Options:\n"
	    "  --hang-timeout SECS   no progress this long is a hang (default 300)\n"
	    "  --timeout SECS        bound on the whole run; 0 = none (default 0)\n"
	    "  --grace SECS          between SIGTERM and SIGKILL when terminating (default 10)\n"
	    "  --report FILE         write the diagnosis as JSON\n"
	    "  --junit FILE          write a JUnit XML report (a failure on hang/timeout)\n"
	    "  --no-wait-orphans     end when COMMAND exits, terminating what it left behind\n"
	    "                        (default: wait for every descendant, hangs included)\n"
	    "  --no-bpf              watch through /proc only (what happens without privileges)\n"
	    "  --hang-exit-code N    exit code on a hang (default %d)\n"
	    "  --timeout-exit-code N exit code on --timeout (default %d)\n"
	    "  --quiet               no notes on stderr except the diagnosis\n"
	    "  --help\n\n"
	    "Exit codes: COMMAND's own code (128+N when a signal N ended it); %d hang; %d "
	    "timeout;\n"
	    "%d COMMAND not executable; %d COMMAND not found; %d ftbpf-ci's own error;\n"
	    "128+N when ftbpf-ci got SIGINT/SIGTERM/SIGHUP N (forwarded to the tree, then the\n"
	    "tree is ended with SIGTERM, grace, SIGKILL).\n"
	    "Progress: a completed syscall of a process's main thread other than an empty wait or\n"
	    "a sleep (as ftbpfd defines it; CPU time is not progress), or a process of the tree\n"
	    "starting, exec'ing or exiting. Without BPF (no privileges, --no-bpf): read/write\n"
	    "syscall counts from /proc/PID/io and processes starting or exiting.\n",
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

static int parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	o->hang_timeout = 300;
	o->grace = 10;
	o->wait_orphans = 1;
	o->hang_code = EXIT_HANG;
	o->timeout_code = EXIT_TIMEOUT;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		double d;
		char *end;
		long code;

		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--quiet")) {
			o->quiet = 1;
		} else if (!strcmp(a, "--no-bpf")) {
			o->no_bpf = 1;
		} else if (!strcmp(a, "--no-wait-orphans")) {
			o->wait_orphans = 0;
		} else if (v && (!strcmp(a, "--hang-timeout") || !strcmp(a, "--timeout") ||
				 !strcmp(a, "--grace"))) {
			if (parse_secs(v, &d) < 0 || (!strcmp(a, "--hang-timeout") && d < 0.5)) {
				fprintf(stderr, "ftbpf-ci: %s: '%s' is not a number of seconds%s\n",
					a, v, !strcmp(a, "--hang-timeout") ? " >= 0.5" : "");
				return -EINVAL;
			}
			*(a[2] == 'h'	? &o->hang_timeout
			  : a[2] == 't' ? &o->timeout
					: &o->grace) = d;
			i++;
		} else if (v && (!strcmp(a, "--report") || !strcmp(a, "--junit"))) {
			*(a[2] == 'r' ? &o->report : &o->junit) = v;
			i++;
		} else if (v &&
			   (!strcmp(a, "--hang-exit-code") || !strcmp(a, "--timeout-exit-code"))) {
			code = strtol(v, &end, 10);
			if (end == v || *end || code < 1 || code > 255) {
				fprintf(stderr, "ftbpf-ci: %s: '%s' is not a code 1..255\n", a, v);
				return -EINVAL;
			}
			*(a[2] == 'h' ? &o->hang_code : &o->timeout_code) = (int)code;
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

	if (e->type == FTBPF_EV_FORK || e->type == FTBPF_EV_EXEC || e->type == FTBPF_EV_EXIT)
		c->activity_ns = now_ns();
}

static int bpf_setup(struct ci *c, char *err, size_t errlen)
{
	struct tracker_opts to = {0};

	snprintf(c->pin_dir, sizeof(c->pin_dir), "/sys/fs/bpf/ftbpf-ci-%d", (int)getpid());
	to.pin_dir = c->pin_dir;
	to.reset = 1;
	to.agent_tgid = (uint32_t)getpid();
	to.on_event = on_event;
	to.ctx = c;
	to.programs = "auto";
	c->tr = tracker_open(&to, err, errlen);
	if (!c->tr) { /* whatever it got to pin before failing */
		tracker_unpin_all(c->pin_dir);
		rmdir(c->pin_dir);
		return -1;
	}
	return 0;
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

/* Is pid a descendant of ours? (parent chain through /proc) */
static int descendant(int pid, int self)
{
	struct proc_stat st;

	for (int depth = 0; pid > 1 && depth < 256; depth++) {
		if (procfs_stat(pid, -1, &st) < 0)
			return 0;
		if (st.ppid == self)
			return 1;
		pid = st.ppid;
	}
	return 0;
}

struct scan_ctx {
	struct ci *c;
	int self;
	int seen[MAX_PROCS];
	int nseen;
	uint32_t gone[MAX_PROCS];
	int ngone;
};

static int scan_one(void *ctx, int pid)
{
	struct scan_ctx *sc = ctx;

	if (sc->nseen < MAX_PROCS && pid != sc->self && descendant(pid, sc->self))
		sc->seen[sc->nseen++] = pid;
	return 0;
}

static struct cproc *cproc_get(struct ci *c, int pid)
{
	for (int i = 0; i < c->np; i++)
		if (c->p[i].pid == pid)
			return &c->p[i];
	if (c->np == MAX_PROCS)
		return NULL;
	memset(&c->p[c->np], 0, sizeof(c->p[0]));
	c->p[c->np].pid = pid;
	c->p[c->np].nr = -1;
	return &c->p[c->np++];
}

static uint64_t read_io(int pid)
{
	char p[64], buf[1024];
	unsigned long long r = 0, w = 0;
	const char *s;

	snprintf(p, sizeof(p), "/proc/%d/io", pid);
	if (procfs_read(p, buf, sizeof(buf) - 1) <= 0)
		return 0;
	s = strstr(buf, "syscr:");
	if (s)
		r = strtoull(s + 6, NULL, 10);
	s = strstr(buf, "syscw:");
	if (s)
		w = strtoull(s + 6, NULL, 10);
	return r + w;
}

static int read_syscall_nr(int pid)
{
	char p[64], buf[256];

	snprintf(p, sizeof(p), "/proc/%d/syscall", pid);
	if (procfs_read(p, buf, sizeof(buf) - 1) <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1; /* "running" or unreadable */
	return atoi(buf);
}

/* With BPF the tree is the tracked processes (the kernel follows every fork); forget exited ones */
static int tracked_one(void *ctx, uint32_t tgid, const struct ftbpf_proc *p)
{
	struct scan_ctx *sc = ctx;

	if (p->flags & FTBPF_PROC_EXITED) {
		if (sc->ngone < MAX_PROCS) /* deleted after the walk, not under it */
			sc->gone[sc->ngone++] = tgid;
	} else if (sc->nseen < MAX_PROCS)
		sc->seen[sc->nseen++] = (int)tgid;
	return 0;
}

/* Refresh the descendants; returns the latest progress time of the tree. */
static uint64_t scan_tree(struct ci *c, uint64_t now)
{
	struct scan_ctx sc = {.c = c, .self = (int)getpid()};
	uint64_t progress = c->activity_ns;

	if (c->tr) {
		tracker_foreach_proc(c->tr, tracked_one, &sc);
		for (int i = 0; i < sc.ngone; i++)
			tracker_proc_delete(c->tr, sc.gone[i]);
	} else
		procfs_foreach_pid(-1, scan_one, &sc);
	for (int i = 0; i < c->np; i++)
		c->p[i].live = 0;
	for (int i = 0; i < sc.nseen; i++) {
		struct cproc *p = cproc_get(c, sc.seen[i]);
		struct ftbpf_thread t;

		if (!p)
			continue;
		if (procfs_stat(p->pid, -1, &p->st) < 0)
			continue;
		if (!p->s.adopted_ns) { /* new in the tree: progress */
			p->s.adopted_ns = now;
			c->activity_ns = now;
			progress = now;
		}
		p->live = 1;
		p->s.pid = p->pid;
		p->s.rank = p->pid;
		p->s.task_state = p->st.state;
		p->s.cpu_ns = p->st.utime_ns + p->st.stime_ns;
		p->s.cpu_valid = 1;
		if (c->tr && tracker_thread_get(c->tr, (uint32_t)p->pid, &t) == 0) {
			p->s.cur_nr = t.cur_nr;
			p->s.enter_ns = t.enter_ns;
			p->s.last_exit_ns = t.last_exit_ns;
			p->s.progress_ns = t.progress_ns;
		} else if (!c->tr) {
			uint64_t io = read_io(p->pid);
			int nr = read_syscall_nr(p->pid);

			if (io != p->io) {
				p->io = io;
				p->io_change_ns = now;
			}
			if (nr != p->nr) {
				p->nr = nr;
				p->nr_since_ns = now;
			}
			p->s.cur_nr = nr;
			p->s.enter_ns = p->nr_since_ns;
			p->s.progress_ns = p->io_change_ns;
		} else {
			p->s.cur_nr = -1;
		}
		p->s.wchan[0] = 0;
		if (p->s.cur_nr >= 0 || p->s.task_state == 'D')
			procfs_wchan(p->pid, p->pid, p->s.wchan, sizeof(p->s.wchan));
		if (p->s.progress_ns > progress)
			progress = p->s.progress_ns;
	}
	return progress;
}

/* ---- diagnosis ---- */
static void jstr(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, v ? json_object_new_string(v) : NULL);
}

static void text_add(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void text_add(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (*buf && *len + (size_t)n < *cap) {
			*len += (size_t)n;
			return;
		}
		char *nb = realloc(*buf, *cap * 2 + (size_t)n + 256);

		if (!nb)
			return;
		*buf = nb;
		*cap = *cap * 2 + (size_t)n + 256;
	}
}

static void cmdline(int pid, char *buf, size_t len)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/cmdline", pid);
	n = procfs_read(p, buf, len - 1);
	if (n <= 0) {
		buf[0] = 0;
		return;
	}
	for (ssize_t i = 0; i < n - 1; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = 0;
}

struct diag {
	struct json_object *root; /* owned */
	char *text;		  /* owned */
	size_t len, cap;
};

#define T(...) text_add(&dg->text, &dg->len, &dg->cap, __VA_ARGS__)

static void diag_kstack(struct ci *c, struct diag *dg, struct json_object *po, int pid,
			const struct ftbpf_task_snap *snap, size_t nsnap)
{
	struct json_object *arr = json_object_new_array();
	char buf[4096], sym[160];
	int found = 0;

	for (size_t i = 0; i < nsnap; i++) {
		if (snap[i].tid != (uint32_t)pid || snap[i].nr_stack <= 0)
			continue;
		if (!c->ksyms)
			c->ksyms = ksyms_load();
		for (int k = 0; c->ksyms && k < snap[i].nr_stack && k < FTBPF_STACK_DEPTH; k++) {
			ksyms_format(c->ksyms, snap[i].stack[k], sym, sizeof(sym));
			json_object_array_add(arr, json_object_new_string(sym));
			found = 1;
		}
	}
	if (!found && procfs_kstack(pid, pid, buf, sizeof(buf)) == 0) {
		char *save, *line = strtok_r(buf, "\n", &save);

		for (; line; line = strtok_r(NULL, "\n", &save)) {
			char *sp = strchr(line, ' ');

			json_object_array_add(arr, json_object_new_string(sp ? sp + 1 : line));
		}
	}
	if (json_object_array_length(arr)) {
		T("      kernel stack:\n");
		for (size_t i = 0; i < json_object_array_length(arr); i++)
			T("        %s\n",
			  json_object_get_string(json_object_array_get_idx(arr, i)));
	}
	json_object_object_add(po, "kernel_stack", arr);
}

static void diag_ustack(struct diag *dg, struct json_object *po, int pid)
{
	struct ustack_thread *th = calloc(8, sizeof(*th));
	struct json_object *arr = json_object_new_array();
	char err[256] = "";
	int n;

	if (!th) {
		json_object_put(arr);
		return;
	}
	n = ustack_process(pid, th, 8, err, sizeof(err));
	if (n < 0)
		T("      user stack: unavailable (%s)\n", err);
	for (int i = 0; i < n; i++) {
		struct json_object *t = json_object_new_object(), *fr = json_object_new_array();

		json_object_object_add(t, "tid", json_object_new_int(th[i].tid));
		T("      user stack, thread %d:\n", th[i].tid);
		for (int k = 0; k < th[i].n; k++) {
			json_object_array_add(fr, json_object_new_string(th[i].frame[k]));
			T("        #%-2d %s\n", k, th[i].frame[k]);
		}
		json_object_object_add(t, "frames", fr);
		json_object_array_add(arr, t);
	}
	json_object_object_add(po, "user_stacks", arr);
	free(th);
}

static void diag_pystack(struct diag *dg, struct json_object *po, int pid)
{
	struct py_frame *fr = calloc(128, sizeof(*fr));
	char why[128] = "";
	int n;

	if (!fr)
		return;
	n = pystack_read(pid, fr, 128, why, sizeof(why));
	if (n == -ENOENT && !strcmp(why, "not a CPython process")) {
		free(fr);
		return;
	}
	if (n < 0) {
		T("      python stack: unavailable (%s)\n", why);
		jstr(po, "python_stack_error", why);
	} else {
		struct json_object *arr = json_object_new_array();

		T("      python stack (most recent call first):\n");
		for (int i = 0; i < n; i++) {
			struct json_object *f = json_object_new_object();

			if (fr[i].line == -2) {
				T("        -- next thread --\n");
				continue;
			}
			jstr(f, "file", fr[i].file);
			jstr(f, "function", fr[i].func);
			json_object_object_add(f, "line", json_object_new_int(fr[i].line));
			json_object_array_add(arr, f);
			T("        File \"%s\", line %d, in %s\n", fr[i].file, fr[i].line,
			  fr[i].func);
		}
		json_object_object_add(po, "python_stack", arr);
	}
	free(fr);
}

/* Rank-like evaluation of the live descendants: states, and the most likely cause. */
static int evaluate(struct ci *c, uint64_t now, int update, struct det_job *job)
{
	struct det_params dp;
	struct det_rank d[MAX_PROCS];
	struct det_sample s[MAX_PROCS];
	int idx[MAX_PROCS], n = 0;

	det_params_from_seconds(&dp, c->o.hang_timeout, c->o.hang_timeout * 10, 2);
	for (int i = 0; i < c->np; i++) {
		if (!c->p[i].live)
			continue;
		if (update) /* not twice at nearly the same time: CPU shares need an interval */
			det_rank_update(&c->p[i].d, &c->p[i].s, now, &dp);
		idx[n] = i;
		d[n] = c->p[i].d;
		s[n] = c->p[i].s;
		n++;
	}
	det_job_eval(d, s, n, now, &dp, job);
	if (job->n_culprits)
		return idx[job->culprits[0]];
	/* no odd one out (one process, or all alike): the most suspicious, then the youngest */
	{
		int best = -1;

		for (int k = 0; k < n; k++) {
			const struct cproc *p = &c->p[idx[k]];

			if (best < 0 || p->d.score > c->p[best].d.score ||
			    (p->d.score == c->p[best].d.score &&
			     p->st.start_ns > c->p[best].st.start_ns))
				best = idx[k];
		}
		return best;
	}
}

static void diagnose(struct ci *c, const char *kind, uint64_t now, uint64_t progress,
		     struct diag *dg)
{
	struct json_object *procs = json_object_new_array();
	struct ftbpf_task_snap *snap = NULL;
	size_t nsnap = 0;
	struct det_job job;
	int cause;
	char nm[32];

	if (c->tr)
		tracker_snapshot(c->tr, 1, &snap, &nsnap);
	cause = evaluate(c, now, 0, &job);
	/* the detector speaks of ranks; here they are the processes of the tree */
	if (job.n_culprits && cause >= 0)
		snprintf(job.why, sizeof(job.why),
			 "pid %d is not where the other processes are: %s", c->p[cause].pid,
			 c->p[cause].d.reason);
	else if (cause >= 0)
		snprintf(job.why, sizeof(job.why),
			 "no process stands out from the others; the most suspicious is pid %d: %s",
			 c->p[cause].pid, c->p[cause].d.reason);
	dg->root = json_object_new_object();
	jstr(dg->root, "verdict", kind);
	json_object_object_add(dg->root, "hang_timeout_s",
			       json_object_new_double(c->o.hang_timeout));
	json_object_object_add(dg->root, "timeout_s", json_object_new_double(c->o.timeout));
	json_object_object_add(dg->root, "elapsed_s",
			       json_object_new_double((double)(now - c->start_ns) / NS));
	json_object_object_add(dg->root, "no_progress_s",
			       json_object_new_double((double)(now - progress) / NS));
	jstr(dg->root, "watch", c->tr ? "bpf" : "proc");
	if (!strcmp(kind, "hang"))
		T("ftbpf-ci: HANG: no progress in the process tree for %.1fs (--hang-timeout %g)\n",
		  (double)(now - progress) / NS, c->o.hang_timeout);
	else
		T("ftbpf-ci: TIMEOUT: the run exceeded --timeout %g s (no progress for %.1fs)\n",
		  c->o.timeout, (double)(now - progress) / NS);
	if (cause >= 0) {
		T("ftbpf-ci: most likely cause: pid %d (%s): %s\n", c->p[cause].pid,
		  c->p[cause].st.comm, c->p[cause].d.reason);
		json_object_object_add(dg->root, "cause_pid", json_object_new_int(c->p[cause].pid));
	} else {
		json_object_object_add(dg->root, "cause_pid", NULL);
	}
	jstr(dg->root, "why", job.why);
	T("ftbpf-ci: %s\nprocess tree:\n", job.why);
	for (int i = 0; i < c->np; i++) {
		struct cproc *p = &c->p[i];
		struct json_object *po;
		char cmd[512];
		double in = p->s.cur_nr >= 0 && now > p->s.enter_ns
				? (double)(now - p->s.enter_ns) / NS
				: 0;

		if (!p->live)
			continue;
		po = json_object_new_object();
		cmdline(p->pid, cmd, sizeof(cmd));
		json_object_object_add(po, "pid", json_object_new_int(p->pid));
		json_object_object_add(po, "ppid", json_object_new_int(p->st.ppid));
		jstr(po, "comm", p->st.comm);
		jstr(po, "cmdline", cmd);
		jstr(po, "state", det_state_name(p->d.state));
		jstr(po, "reason", p->d.reason);
		jstr(po, "syscall",
		     p->s.cur_nr >= 0 ? syscalls_format(p->s.cur_nr, nm, sizeof(nm)) : NULL);
		json_object_object_add(po, "syscall_s", json_object_new_double(in));
		jstr(po, "wchan", *p->s.wchan ? p->s.wchan : NULL);
		json_object_object_add(po, "cpu", json_object_new_double(p->d.cpu_frac));
		json_object_object_add(po, "cause", json_object_new_boolean(i == cause));
		T("  pid %d ppid %d %s [%c] %s%s\n    %s\n", p->pid, p->st.ppid, p->st.comm,
		  p->s.task_state ? p->s.task_state : '?', p->d.reason,
		  i == cause ? "   <== most likely cause" : "", cmd);
		diag_kstack(c, dg, po, p->pid, snap, nsnap);
		diag_ustack(dg, po, p->pid);
		diag_pystack(dg, po, p->pid);
		json_object_array_add(procs, po);
	}
	json_object_object_add(dg->root, "processes", procs);
	free(snap);
}

static void xml_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
				fputc(*s, f);
		}
	}
}

static void write_junit(const struct ci *c, const char *path, const char *kind, int code,
			const char *text, double secs)
{
	FILE *f = fopen(path, "w");
	char name[512] = "";

	if (!f) {
		fprintf(stderr, "ftbpf-ci: --junit %s: %s\n", path, strerror(errno));
		return;
	}
	for (char **a = c->o.argv; *a && strlen(name) < 400; a++) {
		strcat(name, a == c->o.argv ? "" : " ");
		strncat(name, *a, sizeof(name) - strlen(name) - 1);
	}
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
		"  <testsuite name=\"ftbpf-ci\" tests=\"1\" failures=\"%d\" errors=\"0\" "
		"time=\"%.3f\">\n"
		"    <testcase classname=\"ftbpf-ci\" name=\"",
		kind || code ? 1 : 0, secs);
	xml_escape(f, name);
	fprintf(f, "\" time=\"%.3f\">\n", secs);
	if (kind) {
		fprintf(f, "      <failure type=\"%s\" message=\"", kind);
		xml_escape(f, !strcmp(kind, "hang") ? "hang: no progress in the process tree"
						    : "timeout: the run exceeded --timeout");
		fprintf(f, "\">");
		xml_escape(f, text ? text : "");
		fprintf(f, "</failure>\n");
	} else if (code) {
		fprintf(f, "      <failure type=\"exit\" message=\"exit code %d\"/>\n", code);
	}
	fprintf(f, "    </testcase>\n  </testsuite>\n</testsuites>\n");
	fclose(f);
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
		c->activity_ns = now_ns();
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

	scan_tree(c, now_ns());
	kill(-c->root, SIGCONT);
	kill(-c->root, first_sig);
	for (int i = 0; i < c->np; i++)
		if (c->p[i].live) {
			kill(c->p[i].pid, SIGCONT);
			kill(c->p[i].pid, first_sig);
		}
	end = now_ns() + (uint64_t)(c->o.grace * NS);
	while (have_children() && now_ns() < end) {
		reap(c);
		usleep(20000);
	}
	if (have_children()) {
		char p[300];

		scan_tree(c, now_ns());
		kill(-c->root, SIGKILL);
		for (int i = 0; i < c->np; i++)
			if (c->p[i].live)
				kill(c->p[i].pid, SIGKILL);
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
	if (c->tr) {
		tracker_close(c->tr);
		tracker_unpin_all(c->pin_dir);
		rmdir(c->pin_dir);
	}
	if (*c->cgroup)
		rmdir(c->cgroup);
	ksyms_free(c->ksyms);
}

/* fork + exec COMMAND, held at a pipe until it is tracked; returns 0 or an exit code */
static int start(struct ci *c)
{
	int gate[2], errp[2], e = 0;
	char b;

	if (pipe2(gate, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
		return EXIT_INTERNAL;
	c->root = fork();
	if (c->root < 0)
		return EXIT_INTERNAL;
	if (c->root == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0);
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
	struct diag dg = {0};
	uint64_t progress = 0, now;

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
	c->start_ns = c->activity_ns = now_ns();
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
			tracker_consume(c->tr);
		reap(c);
		if (c->root_done && (!c->o.wait_orphans || !have_children()))
			break;
		now = now_ns();
		if (c->tr) { /* the iterator also keeps the tick clock of syscall times calibrated */
			struct ftbpf_task_snap *snap = NULL;
			size_t nsnap;

			if (tracker_snapshot(c->tr, 0, &snap, &nsnap) == 0)
				free(snap);
		}
		progress = scan_tree(c, now);
		{
			struct det_job job;

			evaluate(c, now, 1, &job); /* keeps each process's CPU history (spinning) */
		}
		if (progress < c->start_ns)
			progress = c->start_ns;
		if (progress > now) /* syscall times are tick-precise: may be a tick ahead */
			progress = now;
		if (now - progress >= (uint64_t)(c->o.hang_timeout * NS))
			verdict = "hang";
		else if (c->o.timeout > 0 && now - c->start_ns >= (uint64_t)(c->o.timeout * NS))
			verdict = "timeout";
		if (verdict)
			break;
	}
	if (verdict) {
		diagnose(c, verdict, now, progress, &dg); /* at the time of the last scan */
		fputs(dg.text ? dg.text : "", stderr);
		if (c->o.report) {
			if (json_object_to_file_ext(c->o.report, dg.root, JSON_C_TO_STRING_PRETTY) <
			    0)
				fprintf(stderr, "ftbpf-ci: --report %s: %s\n", c->o.report,
					strerror(errno));
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
	if (c->o.junit)
		write_junit(c, c->o.junit, verdict, code, dg.text,
			    (double)(now_ns() - c->start_ns) / NS);
	json_object_put(dg.root);
	free(dg.text);
	cleanup(c);
	return code;
}
