/* ftbpf-ci's reports (see report.h). */
#include "ci/report.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ci/testid.h"
#include "ci/tree.h"
#include "lib/jsonx.h"
#include "lib/syscalls.h"
#include "os/procfs.h"
#include "lib/pyfmt.h"
#include "os/safefs.h"
#include "watch/inspector.h"
#include "watch/pystack.h"
#include "watch/pystack_json.h"
#include "watch/ustack.h"

#define NS		 1000000000ull
#define REPORT_TESTS_MAX 64

struct report_test {
	char name[400]; /* FILE::FUNCTION */
	int line, pid, xdist;
	char where[400];
};

/* What one diagnosis gathers on the way. */
struct report_ctx {
	struct inspector *ins; /* reads Python stacks with a time limit */
	struct report_test tests[REPORT_TESTS_MAX];
	int ntests;
};

static void text_add(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(struct report *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(r->text ? r->text + r->len : NULL, r->text ? r->cap - r->len : 0, fmt,
			      ap);
		va_end(ap);
		if (n < 0)
			return;
		if (r->text && r->len + (size_t)n < r->cap) {
			r->len += (size_t)n;
			return;
		}
		char *nb = realloc(r->text, r->cap * 2 + (size_t)n + 256);

		if (!nb)
			return;
		r->text = nb;
		r->cap = r->cap * 2 + (size_t)n + 256;
	}
}

#define T(...) text_add(r, __VA_ARGS__)

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

static void kstack(struct report *r, struct tree *t, struct json_object *po, int pid)
{
	struct json_object *arr = sampler_kstack_json(&t->sp, pid, pid);

	if (json_object_array_length(arr)) {
		T("      kernel stack:\n");
		for (size_t i = 0; i < json_object_array_length(arr); i++)
			T("        %s\n",
			  json_object_get_string(json_object_array_get_idx(arr, i)));
	}
	json_object_object_add(po, "kernel_stack", arr);
}

static void ustack(struct report *r, struct json_object *po, int pid)
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
		struct json_object *o = json_object_new_object(), *fr = json_object_new_array();

		jint(o, "tid", th[i].tid);
		T("      user stack, thread %d:\n", th[i].tid);
		for (int k = 0; k < th[i].n; k++) {
			json_object_array_add(fr, json_object_new_string(th[i].frame[k]));
			T("        #%-2d %s\n", k, th[i].frame[k]);
		}
		json_object_object_add(o, "frames", fr);
		json_object_array_add(arr, o);
	}
	json_object_object_add(po, "user_stacks", arr);
	free(th);
}

static void text_line(void *ctx, const char *line)
{
	struct report *r = ctx;

	T("%s\n", line);
}

/* The test a pytest process is in: the frame pytest_pyfunc_call called. */
static int pytest_frame(const struct py_stack *s, const struct py_thread *t)
{
	for (int i = t->first; i + 1 < t->first + t->n; i++)
		if (!strcmp(s->f[i + 1].func, "pytest_pyfunc_call"))
			return i;
	return -1;
}

static int is_xdist_worker(const struct py_stack *s)
{
	static const char suffix[] = "/xdist/remote.py";

	for (int i = 0; i < s->nframes; i++) {
		size_t n = strlen(s->f[i].file);

		if (n >= sizeof(suffix) - 1 &&
		    !strcmp(s->f[i].file + n - (sizeof(suffix) - 1), suffix))
			return 1;
	}
	return 0;
}

/* The Python stacks of pid, in faulthandler's layout, and in po; a hung pytest test into
 * tests[] (the caller prints them in the headline). */
static void pystack(struct report *r, struct report_ctx *rc, struct json_object *po, int pid)
{
	struct py_stack *s = malloc(sizeof(*s));
	struct json_object *threads;
	char why[160] = "", link[64], cwd[4096], root[4096] = "";
	ssize_t n;
	int err;

	if (!s)
		return;
	/* where pytest runs: its rootdir when no ini file says otherwise */
	snprintf(link, sizeof(link), "/proc/%d/cwd", pid);
	n = readlink(link, cwd, sizeof(cwd) - 1);
	cwd[n > 0 ? n : 0] = 0;
	err = inspector_pystack_wait(rc->ins, pid, -1, 3.0, s, why, sizeof(why));
	if (err < 0) {
		if (err != -ENOENT)
			T("      python stack: unavailable (%s)\n", why);
		pystack_json_error(po, err, why);
		free(s);
		return;
	}
	pystack_json(po, s, pid);
	T("      python stacks (CPython %s), in faulthandler's layout:\n", s->version);
	if (json_object_object_get_ex(po, "python_threads", &threads))
		pyfmt_lines(threads, text_line, r);
	for (int i = 0; i < s->nthreads && rc->ntests < REPORT_TESTS_MAX; i++) {
		int k = pytest_frame(s, &s->t[i]);
		struct report_test *t;

		if (k < 0)
			continue;
		t = &rc->tests[rc->ntests++];
		t->pid = pid;
		t->xdist = is_xdist_worker(s);
		/* the id pytest prints: relative to its rootdir */
		testid_rootdir(s->f[k].file, cwd[0] ? cwd : NULL, root, sizeof(root));
		testid_make(s->f[k].file, s->f[k].func, root, t->name, sizeof(t->name));
		t->line = s->f[k].line;
		/* where it is now: the innermost frame */
		snprintf(t->where, sizeof(t->where), "%s:%d in %s", s->f[s->t[i].first].file,
			 s->f[s->t[i].first].line, s->f[s->t[i].first].func);
	}
	free(s);
}

/* Every pytest test in progress, one per process (pytest-xdist: one per worker). */
static void tests_headline(struct report *r, const struct report_ctx *rc)
{
	struct json_object *arr = json_object_new_array();

	for (int i = 0; i < rc->ntests; i++) {
		const struct report_test *t = &rc->tests[i];
		struct json_object *o = json_object_new_object();

		T("ftbpf-ci: hung test%s: %s (line %d), pid %d%s, now at %s\n",
		  rc->ntests > 1 ? "s" : "", t->name, t->line, t->pid,
		  t->xdist ? " (pytest-xdist worker)" : "", t->where);
		jstr(o, "test", t->name);
		jint(o, "line", t->line);
		jint(o, "pid", t->pid);
		jbool(o, "xdist_worker", t->xdist);
		jstr(o, "where", t->where);
		json_object_array_add(arr, o);
	}
	json_object_object_add(r->root, "tests", arr);
}

static void append(struct report *r, const struct report *body)
{
	if (body->text)
		T("%s", body->text);
}

void report_diagnose(struct report *r, struct tree *t, const struct report_opts *o)
{
	struct json_object *procs = json_object_new_array();
	struct report_ctx *rc = calloc(1, sizeof(*rc));
	struct report body = {0};
	struct det_job job;
	double quiet;
	int cause, live = 0;
	char nm[32];

	sampler_refresh(&t->sp, 1); /* kernel stacks for the report */
	cause = tree_eval(t, o->now, &job);
	quiet = (double)job.no_progress_ns / NS;
	/* the detector speaks of ranks; here they are the processes of the tree */
	for (int i = 0; i < t->np; i++)
		live += t->p[i].live != 0;
	if (cause >= 0 && live == 1) /* no others to compare it with */
		snprintf(job.why, sizeof(job.why), "pid %d, the run's only process: %s",
			 t->p[cause].pid, t->p[cause].d.reason);
	else if (cause >= 0 && t->p[cause].culprit)
		snprintf(job.why, sizeof(job.why),
			 "pid %d is not where the other processes are: %s", t->p[cause].pid,
			 t->p[cause].d.reason);
	else if (cause >= 0)
		snprintf(job.why, sizeof(job.why),
			 "no process stands out from the others; the most suspicious is pid %d: %s",
			 t->p[cause].pid, t->p[cause].d.reason);
	r->root = json_object_new_object();
	jstr(r->root, "verdict", o->kind);
	jdbl(r->root, "hang_timeout_s", o->hang_timeout);
	jdbl(r->root, "timeout_s", o->timeout);
	jdbl(r->root, "elapsed_s", (double)(o->now - o->start_ns) / NS);
	jdbl(r->root, "no_progress_s", quiet);
	jstr(r->root, "watch", t->sp.tr ? "bpf" : "proc");
	if (rc)
		rc->ins = inspector_new(NULL);
	/* every process first (its stacks tell which test hangs), the headline above them */
	for (int i = 0; i < t->np; i++) {
		struct tree_proc *p = &t->p[i];
		struct report *b = &body;
		struct json_object *po;
		char cmd[512];

		if (!p->live)
			continue;
		po = json_object_new_object();
		cmdline(p->pid, cmd, sizeof(cmd));
		jint(po, "pid", p->pid);
		jint(po, "ppid", p->st.ppid);
		jstr(po, "comm", p->st.comm);
		jstr(po, "cmdline", cmd);
		jstr(po, "state", det_state_name(p->d.state));
		jstr(po, "reason", p->d.reason);
		jstr(po, "syscall",
		     p->s.cur_nr >= 0 ? syscalls_format(p->s.cur_nr, nm, sizeof(nm)) : NULL);
		jdbl(po, "syscall_s",
		     p->s.cur_nr >= 0 && o->now > p->s.enter_ns
			 ? (double)(o->now - p->s.enter_ns) / NS
			 : 0);
		jstr(po, "wchan", *p->s.wchan ? p->s.wchan : NULL);
		jdbl(po, "cpu", p->d.cpu_frac);
		jbool(po, "cause", i == cause);
		text_add(b, "  pid %d ppid %d %s [%c] %s%s\n    %s\n", p->pid, p->st.ppid,
			 p->st.comm, p->s.task_state ? p->s.task_state : '?', p->d.reason,
			 i == cause ? "   <== most likely cause" : "", cmd);
		kstack(b, t, po, p->pid);
		ustack(b, po, p->pid);
		if (rc && rc->ins)
			pystack(b, rc, po, p->pid);
		json_object_array_add(procs, po);
	}
	json_object_object_add(r->root, "processes", procs);
	if (!strcmp(o->kind, "hang"))
		T("ftbpf-ci: HANG: no progress in the process tree for %.1fs (--hang-timeout %g)\n",
		  quiet, o->hang_timeout);
	else
		T("ftbpf-ci: TIMEOUT: the run exceeded --timeout %g s (no progress for %.1fs)\n",
		  o->timeout, quiet);
	if (cause >= 0) {
		T("ftbpf-ci: most likely cause: pid %d (%s): %s\n", t->p[cause].pid,
		  t->p[cause].st.comm, t->p[cause].d.reason);
		jint(r->root, "cause_pid", t->p[cause].pid);
	} else {
		jnull(r->root, "cause_pid");
	}
	if (rc)
		tests_headline(r, rc);
	jstr(r->root, "why", job.why);
	T("ftbpf-ci: %s\nprocess tree:\n", job.why);
	append(r, &body);
	free(body.text);
	if (rc)
		inspector_free(rc->ins);
	free(rc);
}

void report_free(struct report *r)
{
	json_object_put(r->root);
	free(r->text);
	memset(r, 0, sizeof(*r));
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

int report_write_json(const char *path, struct json_object *root, char *err, size_t errlen)
{
	int fd = safefs_create_nofollow(path, 0644, err, errlen), r = 0;

	if (fd < 0)
		return fd;
	if (json_object_to_fd(fd, root, JSON_C_TO_STRING_PRETTY) < 0) {
		r = errno ? -errno : -EIO;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
	}
	close(fd);
	return r;
}

/* One <testcase>: classname and name, a failure (type NULL: none) with message and text. */
static void junit_case(FILE *f, const char *classname, const char *name, double secs,
		       const char *type, const char *message, const char *text)
{
	fputs("    <testcase classname=\"", f);
	xml_escape(f, classname);
	fputs("\" name=\"", f);
	xml_escape(f, name);
	fprintf(f, "\" time=\"%.3f\"", secs);
	if (!type) {
		fputs("/>\n", f);
		return;
	}
	fprintf(f, ">\n      <failure type=\"%s\" message=\"", type);
	xml_escape(f, message);
	fputs("\"", f);
	if (text) {
		fputs(">", f);
		xml_escape(f, text);
		fputs("</failure>\n", f);
	} else {
		fputs("/>\n", f);
	}
	fputs("    </testcase>\n", f);
}

int report_junit(const char *path, char *const *argv, const char *kind, int code, const char *text,
		 struct json_object *tests, double secs)
{
	char name[512] = "", msg[600], cls[400], fn[400], err[256];
	int fd = safefs_create_nofollow(path, 0644, err, sizeof(err));
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	size_t nt = kind && tests && json_object_is_type(tests, json_type_array)
			? json_object_array_length(tests)
			: 0;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return fd < 0 ? fd : -ENOMEM;
	}
	for (char *const *a = argv; *a && strlen(name) < 400; a++) {
		strcat(name, a == argv ? "" : " ");
		strncat(name, *a, sizeof(name) - strlen(name) - 1);
	}
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
		"  <testsuite name=\"ftbpf-ci\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
		"time=\"%.3f\">\n",
		nt ? nt : 1, nt ? nt : (size_t)(kind || code ? 1 : 0), secs);
	if (nt) { /* the hung tests are the failing cases, as pytest's --junitxml names them */
		for (size_t i = 0; i < nt; i++) {
			struct json_object *o = json_object_array_get_idx(tests, i), *v;
			const char *id = json_object_object_get_ex(o, "test", &v)
					     ? json_object_get_string(v)
					     : "";
			const char *where = json_object_object_get_ex(o, "where", &v)
						? json_object_get_string(v)
						: "";

			testid_junit(id, cls, sizeof(cls), fn, sizeof(fn));
			snprintf(msg, sizeof(msg), "%s: %s hung, now at %s", kind, id, where);
			junit_case(f, cls, fn, secs, kind, msg, text ? text : "");
		}
	} else if (kind) {
		junit_case(f, "ftbpf-ci", name, secs, kind,
			   !strcmp(kind, "hang") ? "hang: no progress in the process tree"
						 : "timeout: the run exceeded --timeout",
			   text ? text : "");
	} else if (code) {
		snprintf(msg, sizeof(msg), "exit code %d", code);
		junit_case(f, "ftbpf-ci", name, secs, "exit", msg, NULL);
	} else {
		junit_case(f, "ftbpf-ci", name, secs, NULL, NULL, NULL);
	}
	fprintf(f, "  </testsuite>\n</testsuites>\n");
	return fclose(f) == 0 ? 0 : -errno;
}
