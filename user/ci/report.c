/* ftbpf-ci's reports (see report.h). */
#include "ci/report.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ci/tree.h"
#include "lib/jsonx.h"
#include "lib/syscalls.h"
#include "os/procfs.h"
#include "watch/pystack.h"
#include "watch/ustack.h"

#define NS 1000000000ull

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

static void pystack(struct report *r, struct json_object *po, int pid)
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
			struct json_object *f;

			if (fr[i].line == -2) {
				T("        -- next thread --\n");
				continue;
			}
			f = json_object_new_object();
			jstr(f, "file", fr[i].file);
			jstr(f, "function", fr[i].func);
			jint(f, "line", fr[i].line);
			json_object_array_add(arr, f);
			T("        File \"%s\", line %d, in %s\n", fr[i].file, fr[i].line,
			  fr[i].func);
		}
		json_object_object_add(po, "python_stack", arr);
	}
	free(fr);
}

void report_diagnose(struct report *r, struct tree *t, const struct report_opts *o)
{
	struct json_object *procs = json_object_new_array();
	struct det_job job;
	double quiet;
	int cause;
	char nm[32];

	sampler_refresh(&t->sp, 1); /* kernel stacks for the report */
	cause = tree_eval(t, o->now, &job);
	quiet = (double)job.no_progress_ns / NS;
	/* the detector speaks of ranks; here they are the processes of the tree */
	if (job.n_culprits && cause >= 0)
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
	jstr(r->root, "why", job.why);
	T("ftbpf-ci: %s\nprocess tree:\n", job.why);
	for (int i = 0; i < t->np; i++) {
		struct tree_proc *p = &t->p[i];
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
		T("  pid %d ppid %d %s [%c] %s%s\n    %s\n", p->pid, p->st.ppid, p->st.comm,
		  p->s.task_state ? p->s.task_state : '?', p->d.reason,
		  i == cause ? "   <== most likely cause" : "", cmd);
		kstack(r, t, po, p->pid);
		ustack(r, po, p->pid);
		pystack(r, po, p->pid);
		json_object_array_add(procs, po);
	}
	json_object_object_add(r->root, "processes", procs);
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

int report_junit(const char *path, char *const *argv, const char *kind, int code, const char *text,
		 double secs)
{
	FILE *f = fopen(path, "w");
	char name[512] = "";

	if (!f)
		return -errno;
	for (char *const *a = argv; *a && strlen(name) < 400; a++) {
		strcat(name, a == argv ? "" : " ");
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
	return fclose(f) == 0 ? 0 : -errno;
}
