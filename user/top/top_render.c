/*
 * ftbpf-top's rendering: a frame of the model (top_model.h) as plain text lines with one
 * attribute each - the main screen, a rank in detail, the peers, help. No curses here: the
 * drawing (top_draw.c) paints frames, and tests read them.
 */
#include "top/top_render.h"

#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "client/ctl_client.h"
#include "lib/config.h"
#include "lib/detector.h"
#include "lib/pyfmt.h"

static const char top_keys_help[] =
    "q quit  Up/Down select  Enter detail  s stacks  < > sort  r reverse  "
    "/ job filter  t state filter  c clear  e events  P peers  p pause  ? help";

const char *top_keys_line(int width)
{
	static const char narrow[] =
	    "q quit Enter detail s stacks <> sort / job t state c clear P peers ? help";

	return width >= (int)strlen(top_keys_help) ? top_keys_help : narrow;
}

/* ---- frames ---- */
void top_frame_init(struct top_frame *f, int width)
{
	memset(f, 0, sizeof(*f));
	f->width = width;
}

void top_frame_fini(struct top_frame *f)
{
	free(f->lines);
	memset(f, 0, sizeof(*f));
}

void top_frame_clear(struct top_frame *f, int width)
{
	f->n = 0;
	f->width = width;
}

void top_frame_add(struct top_frame *f, enum top_attr a, const char *fmt, ...)
{
	struct top_line *l;
	va_list ap;
	int w =
	    f->width > 0 && f->width < (int)sizeof(l->text) ? f->width : (int)sizeof(l->text) - 1;

	if (f->n == f->cap) {
		int cap = f->cap ? f->cap * 2 : 64;
		struct top_line *nl = realloc(f->lines, (size_t)cap * sizeof(*nl));

		if (!nl)
			return; /* a line short on a frame is better than no frame */
		f->lines = nl;
		f->cap = cap;
	}
	l = &f->lines[f->n++];
	l->attr = a;
	l->selected = 0;
	va_start(ap, fmt);
	vsnprintf(l->text, sizeof(l->text), fmt, ap);
	va_end(ap);
	l->text[w] = 0;
	/* nothing that moves the cursor reaches the screen, and one byte is one column (job
	 * names and comms come from the ranks: a multi-byte character would shift the table) */
	for (char *p = l->text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
		else if ((unsigned char)*p > 0x7f)
			*p = '?';
}

/* Column widths: minimum; REASON takes the rest. Optional columns are dropped, in order, when
 * the terminal is narrow. */
static const int col_width[TC_N] = {
    [TC_JOB] = 12, [TC_RANK] = 5, [TC_PID] = 7,	   [TC_STATE] = 10,  [TC_TIME] = 7, [TC_SYSC] = 6,
    [TC_GPU] = 6,  [TC_PING] = 6, [TC_TIMER] = 10, [TC_SLOW] = 5,    [TC_CPU] = 5,  [TC_RSS] = 6,
    [TC_THR] = 4,  [TC_GPUU] = 4, [TC_GMEM] = 6,   [TC_REASON] = 20,
};
static const enum top_col drop_order[] = {TC_GPU,  TC_PING, TC_THR, TC_GMEM, TC_RSS, TC_TIMER,
					  TC_SLOW, TC_GPUU, TC_CPU, TC_SYSC, TC_TIME};

int top_layout(int width, int gpu, enum top_col *ret_cols, int *ret_widths)
{
	int keep[TC_N] = {0}, n = 0, used;

	for (int c = TC_JOB; c < TC_N; c++)
		keep[c] = gpu || (c != TC_GPUU && c != TC_GMEM);
	for (size_t d = 0;; d++) {
		used = 2; /* the marker column and its space */
		for (int c = TC_JOB; c < TC_N; c++)
			if (keep[c])
				used += col_width[c] + (c != TC_REASON);
		if (used <= width || d == sizeof(drop_order) / sizeof(drop_order[0]))
			break;
		keep[drop_order[d]] = 0;
	}
	for (int c = TC_JOB; c < TC_N; c++)
		if (keep[c]) {
			ret_cols[n] = (enum top_col)c;
			ret_widths[n] = col_width[c];
			if (c == TC_REASON && width - used > 0)
				ret_widths[n] += width - used;
			n++;
		}
	return n;
}

static void fmt_age(double s, char *buf, size_t n)
{
	if (s < 0)
		snprintf(buf, n, "-");
	else if (s < 10)
		snprintf(buf, n, "%.1fs", s);
	else if (s < 600)
		snprintf(buf, n, "%.0fs", s);
	else if (s < 36000)
		snprintf(buf, n, "%dm%02d", (int)(s / 60), (int)s % 60);
	else if (s < 86400 * 10)
		snprintf(buf, n, "%dh%02d", (int)(s / 3600), (int)(s / 60) % 60);
	else
		snprintf(buf, n, "%dd", (int)(s / 86400));
}

static void fmt_rate(double r, char *buf, size_t n)
{
	if (r < 0)
		snprintf(buf, n, "-");
	else if (r < 1000)
		snprintf(buf, n, "%.0f", r);
	else if (r < 1e6)
		snprintf(buf, n, "%.1fk", r / 1e3);
	else
		snprintf(buf, n, "%.1fM", r / 1e6);
}

/* Kilobytes as 512k, 98M, 1.5G. */
static void fmt_kb(int64_t kb, char *buf, size_t n)
{
	if (kb < 0)
		snprintf(buf, n, "-");
	else if (kb < 10 * 1024)
		snprintf(buf, n, "%lldk", (long long)kb);
	else if (kb < 10 * 1024 * 1024)
		snprintf(buf, n, "%lldM", (long long)(kb / 1024));
	else
		snprintf(buf, n, "%.1fG", (double)kb / (1024 * 1024));
}

/* A count, at most max; "-" unknown (< 0). */
static void fmt_count(int v, int max, char *buf, size_t n)
{
	if (v < 0)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%d", v > max ? max : v);
}

static void cell(const struct top_row *r, enum top_col c, char *buf, size_t n)
{
	char a[32];

	switch (c) {
	case TC_JOB:
		snprintf(buf, n, "%s", r->job);
		break;
	case TC_RANK:
		snprintf(buf, n, "%d", r->rank);
		break;
	case TC_PID:
		snprintf(buf, n, "%d", r->pid);
		break;
	case TC_STATE:
		snprintf(buf, n, "%s", r->state);
		break;
	case TC_TIME:
		fmt_age(r->state_for_s, buf, n);
		break;
	case TC_SYSC:
		fmt_rate(r->sysc_rate, buf, n);
		break;
	case TC_GPU:
		fmt_age(r->gpu_age_s, buf, n);
		break;
	case TC_PING:
		fmt_age(r->ping_age_s, buf, n);
		break;
	case TC_TIMER:
		if (!r->timers) {
			snprintf(buf, n, "-");
			break;
		}
		fmt_age(r->timer_left_s, a, sizeof(a));
		if (r->timers > 1)
			snprintf(buf, n, "%d:%s", r->timers, a);
		else
			snprintf(buf, n, "%s", a);
		break;
	case TC_SLOW: /* "1.31*": a straggler */
		if (r->slowdown <= 0)
			snprintf(buf, n, "-");
		else
			snprintf(buf, n, "%.2f%s", r->slowdown > 9.99 ? 9.99 : r->slowdown,
				 r->straggler ? "*" : "");
		break;
	case TC_CPU:
		if (r->cpu_pct < 0)
			snprintf(buf, n, "-");
		else
			snprintf(buf, n, "%.0f", r->cpu_pct > 99999 ? 99999 : r->cpu_pct);
		break;
	case TC_RSS:
		fmt_kb(r->rss_kb, buf, n);
		break;
	case TC_THR:
		fmt_count(r->threads, INT_MAX, buf, n);
		break;
	case TC_GPUU:
		fmt_count(r->gpu_pct, 999, buf, n);
		break;
	case TC_GMEM:
		fmt_kb(r->gmem_kb, buf, n);
		break;
	case TC_REASON:
		snprintf(buf, n, "%s", r->reason);
		break;
	default:
		buf[0] = 0;
	}
}

static int right_aligned(enum top_col c)
{
	return c == TC_RANK || c == TC_PID || c == TC_TIME || c == TC_SYSC || c == TC_GPU ||
	       c == TC_PING || c == TC_TIMER || c == TC_SLOW || c == TC_CPU || c == TC_RSS ||
	       c == TC_THR || c == TC_GPUU || c == TC_GMEM;
}

/* Cells padded or cut to their column, separated by one space. */
static void table_line(char *out, size_t n, char marker, const enum top_col *cols,
		       const int *widths, int ncols, const char *const *cells)
{
	size_t len = 0;

	len += (size_t)snprintf(out, n, "%c ", marker);
	for (int i = 0; i < ncols && len < n; i++) {
		int w = widths[i];

		if (right_aligned(cols[i]))
			len += (size_t)snprintf(out + len, n - len, "%*.*s", w, w, cells[i]);
		else
			len += (size_t)snprintf(out + len, n - len, "%-*.*s", w, w, cells[i]);
		if (i + 1 < ncols && len < n)
			len += (size_t)snprintf(out + len, n - len, " ");
	}
	while (len > 0 && len < n && out[len - 1] == ' ') /* no trailing blanks */
		out[--len] = 0;
}

static char row_marker(const struct top_row *r)
{
	return r->culprit ? '!' : r->hung ? '*' : r->exited ? 'x' : ' ';
}

static enum top_attr row_attr(const struct top_row *r)
{
	return r->culprit ? TA_CULPRIT : r->hung ? TA_HUNG : r->exited ? TA_EXITED : TA_NORMAL;
}

static void header_lines(struct top_model *m, struct top_frame *f, const char *socket)
{
	char up[16], counts[256] = "", soft[48];
	int nc = 0, hung = 0, failed = 0;

	fmt_age(m->uptime_s, up, sizeof(up));
	if (!m->ever)
		top_frame_add(f, TA_ERROR, "ftbpf-top: cannot reach ftbpfd at %s: %s (retrying)",
			      socket ? socket : "?", m->error);
	else if (!m->connected)
		top_frame_add(f, TA_ERROR,
			      "ftbpfd went away: %s; retrying (rows below are old) [%s]", m->error,
			      socket ? socket : "?");
	else
		top_frame_add(f, strcmp(m->health, "ok") ? TA_WARN : TA_TITLE,
			      "ftbpf-top  ftbpfd %s pid %d up %s  health %s  programs %s  soft %s "
			      "hard %gs action %s",
			      m->version, m->agent_pid, up, m->health, m->programs,
			      config_soft_words(m->soft_auto, m->soft_s, soft, sizeof(soft)),
			      m->hard_s, m->action);
	for (int i = 0; i < m->njobs; i++) {
		hung += !strcmp(m->jobs[i].state, "hung") && m->jobs[i].live > 0;
		failed += !strcmp(m->jobs[i].state, "failed");
	}
	for (int s = 0; s < RS__N; s++) {
		const char *state = det_state_name((enum rank_state)s);
		int k = 0;

		for (int i = 0; i < m->nrows; i++)
			k += !strcmp(m->rows[i].state, state);
		if (k)
			nc +=
			    snprintf(counts + nc, sizeof(counts) - (size_t)nc, " %s %d", state, k);
		if (nc >= (int)sizeof(counts))
			break;
	}
	top_frame_add(f, hung || failed ? TA_WARN : TA_INFO,
		      "Jobs %d (%d hung, %d failed)  Ranks %d:%s", m->njobs, hung, failed, m->nrows,
		      m->nrows ? counts : " none adopted");
	if (m->mesh_on)
		top_frame_add(f, m->peers_suspect || m->peers_dead ? TA_WARN : TA_INFO,
			      "Peers %d alive, %d suspect, %d dead, %d left; %d with hung ranks  "
			      "Sort %s%s  Filter job '%s' state %s",
			      m->peers_alive, m->peers_suspect, m->peers_dead, m->peers_left,
			      m->peers_hung, top_col_name(m->sort), m->reverse ? " (reversed)" : "",
			      m->filter_job, top_state_filter(m->filter_state));
	else
		top_frame_add(f, TA_INFO, "Peers: mesh off  Sort %s%s  Filter job '%s' state %s",
			      top_col_name(m->sort), m->reverse ? " (reversed)" : "", m->filter_job,
			      top_state_filter(m->filter_state));
	for (int i = 0, shown = 0; i < m->njobs && shown < 2; i++) {
		const struct top_job *j = &m->jobs[i];

		if (strcmp(j->state, "hung") && strcmp(j->state, "failed"))
			continue;
		/* a hung job ended since: its why says who ended it */
		top_frame_add(f, TA_WARN, "%s job %s: %s",
			      strcmp(j->state, "hung") ? "FAILED"
			      : j->live > 0	       ? "HUNG"
						       : "ENDED",
			      j->id, j->why);
		shown++;
	}
}

static void column_header(struct top_frame *f, const enum top_col *cols, const int *widths,
			  int ncols)
{
	const char *cells[TC_N];
	char names[TC_N][16], line[512];

	for (int i = 0; i < ncols; i++) {
		const char *nm = top_col_name(cols[i]);
		int k = 0;

		for (; nm[k] && k < 15; k++)
			names[i][k] = (char)(nm[k] >= 'a' && nm[k] <= 'z' ? nm[k] - 32 : nm[k]);
		names[i][k] = 0;
		cells[i] = names[i];
	}
	table_line(line, sizeof(line), ' ', cols, widths, ncols, cells);
	top_frame_add(f, TA_TITLE, "%s", line);
}

/* Job names in full (a user copies them into `ftbpf status JOB`): the JOB column grows to the
 * longest, taken from REASON while it keeps its minimum width. */
static void widen_job(const struct top_model *m, const enum top_col *cols, int *widths, int ncols)
{
	int need = col_width[TC_JOB], job = -1, reason = -1;

	for (int i = 0; i < m->nrows; i++)
		if ((int)strlen(m->rows[i].job) > need)
			need = (int)strlen(m->rows[i].job);
	for (int c = 0; c < ncols; c++) {
		if (cols[c] == TC_JOB)
			job = c;
		if (cols[c] == TC_REASON)
			reason = c;
	}
	if (job < 0 || reason < 0 || need <= widths[job])
		return;
	need -= widths[job];
	if (need > widths[reason] - col_width[TC_REASON])
		need = widths[reason] - col_width[TC_REASON];
	if (need > 0) {
		widths[job] += need;
		widths[reason] -= need;
	}
}

void top_render_main(struct top_model *m, struct top_frame *f, int width, int height,
		     const char *socket, int show_events)
{
	enum top_col cols[TC_N];
	int widths[TC_N], ncols = top_layout(width, m->gpu_on, cols, widths), nev, rows_h;

	widen_job(m, cols, widths, ncols);
	top_frame_clear(f, width);
	header_lines(m, f, socket);
	column_header(f, cols, widths, ncols);
	if (height > 0) {
		int left = height - f->n - 1; /* the key line */

		nev = show_events ? (left >= 16 ? 6 : left >= 10 ? 3 : 0) : 0;
		rows_h = left - (nev ? nev + 1 : 0);
		if (rows_h < 1)
			rows_h = 1;
	} else {
		nev = show_events ? 10 : 0;
		rows_h = m->nview;
	}
	top_model_keep_visible(m, rows_h);
	for (int i = 0; i < rows_h; i++) {
		int vi = m->top + i;
		const struct top_row *r;
		char c[TC_N][200], line[512];
		const char *cells[TC_N];

		if (vi >= m->nview) {
			if (height > 0)
				top_frame_add(f, TA_NORMAL, "%s",
					      i == 0 && !m->nview
						  ? (m->nrows ? "  (no rank matches the filter)"
							      : "  (no ranks adopted on this host)")
						  : "");
			continue;
		}
		r = &m->rows[m->view[vi]];
		for (int k = 0; k < ncols; k++) {
			cell(r, cols[k], c[k], sizeof(c[k]));
			cells[k] = c[k];
		}
		table_line(line, sizeof(line), row_marker(r), cols, widths, ncols, cells);
		top_frame_add(f, row_attr(r), "%s", line);
		f->lines[f->n - 1].selected = height > 0 && r->pid == m->sel_pid;
	}
	if (nev) {
		top_frame_add(f, TA_TITLE, "EVENTS (newest last)");
		for (int i = 0; i < nev; i++) {
			int k = m->nev - nev + i;
			const struct top_event *e;

			if (k < 0) {
				if (height > 0)
					top_frame_add(f, TA_NORMAL, "%s", "");
				continue;
			}
			e = &m->ev[(m->ev_head + k) % TOP_EVENTS];
			top_frame_add(f, e->warn ? TA_WARN : TA_NORMAL, "%s", e->text);
		}
	}
	if (height > 0)
		top_frame_add(f, TA_KEYS, "%s", top_keys_line(width));
	else if (m->mesh_on)
		top_render_peers(m, f);
}

/* An array field, or NULL (absent, null, another type) */
static struct json_object *get_array(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array)
		   ? v
		   : NULL;
}

static void json_lines(struct top_frame *f, struct json_object *arr, const char *indent, int max)
{
	if (!arr || !json_object_is_type(arr, json_type_array))
		return;
	for (size_t k = 0; k < json_object_array_length(arr) && (int)k < max; k++)
		top_frame_add(f, TA_NORMAL, "%s%s", indent,
			      json_object_get_string(json_object_array_get_idx(arr, k)));
}

static void py_line(void *ctx, const char *line)
{
	top_frame_add(ctx, TA_NORMAL, "%s", line);
}

/* The rank's Python stacks in faulthandler's layout: for a Python rank the best diagnosis. */
static void python_lines(struct top_frame *f, struct json_object *ex)
{
	struct json_object *th = get_array(ex, "python_threads");

	if (ctl_get_str(ex, "python_stack_error"))
		top_frame_add(f, TA_WARN, "python stacks: unavailable (%s)",
			      ctl_get_str_or(ex, "python_stack_error", "-"));
	if (!th || !json_object_array_length(th))
		return;
	top_frame_add(f, TA_TITLE, "PYTHON STACKS (CPython %s)",
		      ctl_get_str_or(ex, "python_version", "?"));
	pyfmt_lines(th, py_line, f);
}

void top_render_stacks(struct json_object *st, int pid, const char *error, struct top_frame *f,
		       int width)
{
	struct json_object *procs = get_array(st, "processes");

	top_frame_clear(f, width);
	top_frame_add(f, TA_TITLE, "ftbpf-top: stacks of pid %d now (s re-reads, Esc/q back)", pid);
	if (!procs) {
		top_frame_add(f, TA_ERROR, "no stacks for pid %d: %s", pid,
			      error ? error : "no answer");
		return;
	}
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		struct json_object *p = json_object_array_get_idx(procs, i), *th;

		top_frame_add(f, TA_NORMAL, "%s", "");
		if (ctl_get_int(p, "rank", -1) >= 0)
			top_frame_add(
			    f, TA_INFO, "rank %lld of job %s, pid %lld (%s): %s, %s",
			    (long long)ctl_get_int(p, "rank", -1), ctl_get_str_or(p, "job", "-"),
			    (long long)ctl_get_int(p, "pid", 0), ctl_get_str_or(p, "comm", "-"),
			    ctl_get_str_or(p, "state", "-"), ctl_get_str_or(p, "reason", "-"));
		else
			top_frame_add(f, TA_INFO, "pid %lld (%s), state %s",
				      (long long)ctl_get_int(p, "pid", 0),
				      ctl_get_str_or(p, "comm", "-"),
				      ctl_get_str_or(p, "state", "-"));
		th = get_array(p, "threads");
		for (size_t t = 0; th && t < json_object_array_length(th); t++) {
			struct json_object *x = json_object_array_get_idx(th, t);

			top_frame_add(
			    f, TA_NORMAL, "  tid %lld %-15s state %s  syscall %s  wchan %s",
			    (long long)ctl_get_int(x, "tid", 0), ctl_get_str_or(x, "comm", "-"),
			    ctl_get_str_or(x, "state", "-"), ctl_get_str_or(x, "syscall", "-"),
			    ctl_get_str_or(x, "wchan", "-"));
			json_lines(f, get_array(x, "kernel_stack"), "      ", 64);
		}
		python_lines(f, p);
	}
}

void top_render_detail(const struct top_model *m, struct json_object *ex, const char *error,
		       struct top_frame *f, int width)
{
	struct json_object *r = NULL, *job = NULL, *th = NULL, *sigs = NULL, *jr = NULL,
			   *nccl = NULL, *tm = NULL;
	const struct top_row *row = top_model_selected(m);
	char age[16], step[48] = "none";

	top_frame_clear(f, width);
	if (!ex || !json_object_object_get_ex(ex, "rank", &r)) {
		top_frame_add(f, TA_TITLE, "ftbpf-top: rank detail (Esc/q back)");
		top_frame_add(f, TA_ERROR, "no detail for pid %d: %s", row ? row->pid : 0,
			      error ? error : "no answer");
		return;
	}
	for (int i = 0; i < m->nrows; i++) /* the row of the rank explained */
		if (m->rows[i].pid == ctl_get_int(r, "pid", 0))
			row = &m->rows[i];
	top_frame_add(f, TA_TITLE,
		      "rank %lld of job %s, pid %lld (%s)   Esc/q back, Up/Down scroll",
		      (long long)ctl_get_int(r, "rank", -1), ctl_get_str_or(r, "job", "-"),
		      (long long)ctl_get_int(r, "pid", 0), ctl_get_str_or(r, "comm", "-"));
	top_frame_add(f,
		      ctl_get_bool(r, "culprit") ? TA_CULPRIT
		      : ctl_get_bool(r, "hung")	 ? TA_HUNG
						 : TA_NORMAL,
		      "state %s: %s", ctl_get_str_or(r, "state", "-"),
		      ctl_get_str_or(r, "reason", "-"));
	top_frame_add(f, TA_NORMAL,
		      "no progress %.1fs  hung %s  culprit %s  cpu %.0f%%  threads %lld",
		      ctl_get_dbl(r, "no_progress_s", 0), ctl_get_bool(r, "hung") ? "yes" : "no",
		      ctl_get_bool(r, "culprit") ? "YES" : "no", 100 * ctl_get_dbl(r, "cpu", 0),
		      (long long)ctl_get_int(r, "threads", 0));
	fmt_age(ctl_get_dbl(r, "ping_s_ago", -1), age, sizeof(age));
	if (ctl_get_int(r, "step", -1) >= 0)
		snprintf(step, sizeof(step), "%lld (%.1fs ago)",
			 (long long)ctl_get_int(r, "step", -1), ctl_get_dbl(r, "step_s_ago", 0));
	top_frame_add(f, TA_NORMAL,
		      "syscalls %lld  GPU ioctls %lld  GPU calls %lld%s%s  last ping %s  step %s",
		      (long long)ctl_get_int(r, "syscalls", 0),
		      (long long)ctl_get_int(r, "gpu_ioctls", 0),
		      (long long)ctl_get_int(r, "gpu_api_calls", 0),
		      ctl_get_str(r, "gpu_call") ? ", in " : "",
		      ctl_get_str(r, "gpu_call") ? ctl_get_str_or(r, "gpu_call", "-") : "",
		      ctl_get_dbl(r, "ping_s_ago", -1) < 0 ? "never" : age, step);
	if ((nccl = get_array(r, "nccl")))
		for (size_t i = 0; i < json_object_array_length(nccl); i++) {
			struct json_object *c = json_object_array_get_idx(nccl, i);

			top_frame_add(f, TA_NORMAL,
				      "  NCCL comm %s rank %lld/%lld: collective #%lld, last %s",
				      ctl_get_str(c, "comm") ? ctl_get_str_or(c, "comm", "-") : "?",
				      (long long)ctl_get_int(c, "rank", -1),
				      (long long)ctl_get_int(c, "nranks", 0),
				      (long long)ctl_get_int(c, "seq", 0),
				      ctl_get_str(c, "last_op") ? ctl_get_str_or(c, "last_op", "-")
								: "-");
		}
	if (json_object_object_get_ex(ex, "job", &job) && job && ctl_get_str(job, "why"))
		top_frame_add(f, TA_WARN, "job %s: %s", ctl_get_str_or(job, "state", "-"),
			      ctl_get_str_or(job, "why", "-"));
	if ((tm = get_array(ex, "timers")) && json_object_array_length(tm)) {
		top_frame_add(f, TA_TITLE, "TIMERS ARMED");
		for (size_t i = 0; i < json_object_array_length(tm); i++) {
			struct json_object *x = json_object_array_get_idx(tm, i);

			top_frame_add(f, TA_NORMAL, "scope '%s': %.1fs left, then SIG%s (%s)",
				      ctl_get_str_or(x, "scope", "-"),
				      ctl_get_dbl(x, "time_left_s", 0),
				      ctl_get_str_or(x, "signal_name", "-"),
				      ctl_get_str_or(x, "source", "-"));
		}
	} else if (row && row->timers) {
		fmt_age(row->timer_left_s, age, sizeof(age));
		top_frame_add(f, TA_NORMAL, "timers: %d armed, the earliest expires in %s",
			      row->timers, age);
	} else {
		top_frame_add(f, TA_NORMAL, "timers: none armed");
	}
	python_lines(f, ex);
	if ((th = get_array(ex, "threads"))) {
		top_frame_add(f, TA_TITLE, "THREADS");
		for (size_t i = 0; i < json_object_array_length(th); i++) {
			struct json_object *t = json_object_array_get_idx(th, i);

			top_frame_add(
			    f, TA_NORMAL, "tid %lld %s  state %s  syscall %s (%.1fs)  wchan %s",
			    (long long)ctl_get_int(t, "tid", 0), ctl_get_str_or(t, "comm", "-"),
			    ctl_get_str_or(t, "state", "-"),
			    ctl_get_str(t, "syscall") ? ctl_get_str_or(t, "syscall", "-") : "-",
			    ctl_get_dbl(t, "in_syscall_s", 0),
			    ctl_get_str(t, "wchan") ? ctl_get_str_or(t, "wchan", "-") : "-");
			json_lines(f, get_array(t, "kernel_stack"), "    ", 12);
		}
	}
	if ((sigs = get_array(ex, "signals")) && json_object_array_length(sigs)) {
		top_frame_add(f, TA_TITLE, "SIGNALS RECEIVED (newest last)");
		for (size_t i = 0; i < json_object_array_length(sigs); i++) {
			struct json_object *s = json_object_array_get_idx(sigs, i);

			if (ctl_get_bool(s, "delivered"))
				top_frame_add(f, TA_NORMAL, "%.1fs ago SIG%s delivered",
					      ctl_get_dbl(s, "s_ago", 0),
					      ctl_get_str_or(s, "signal_name", "-"));
			else
				top_frame_add(f, TA_NORMAL, "%.1fs ago SIG%s sent by pid %lld (%s)",
					      ctl_get_dbl(s, "s_ago", 0),
					      ctl_get_str_or(s, "signal_name", "-"),
					      (long long)ctl_get_int(s, "sender_pid", 0),
					      ctl_get_str_or(s, "sender_comm", "-"));
		}
	} else {
		top_frame_add(f, TA_NORMAL, "signals received: none");
	}
	if ((jr = get_array(ex, "job_ranks")) && json_object_array_length(jr)) {
		top_frame_add(f, TA_TITLE, "OTHER RANKS OF THE JOB");
		for (size_t i = 0; i < json_object_array_length(jr); i++) {
			struct json_object *x = json_object_array_get_idx(jr, i);

			top_frame_add(
			    f, ctl_get_bool(x, "culprit") ? TA_CULPRIT : TA_NORMAL,
			    "%c rank %lld pid %lld %s: %s", ctl_get_bool(x, "culprit") ? '!' : ' ',
			    (long long)ctl_get_int(x, "rank", -1),
			    (long long)ctl_get_int(x, "pid", 0), ctl_get_str_or(x, "state", "-"),
			    ctl_get_str_or(x, "reason", "-"));
		}
	}
}

void top_render_peers(const struct top_model *m, struct top_frame *f)
{
	char age[16], cul[16];

	top_frame_add(f, TA_TITLE, "PEERS of %s (heartbeat mesh)", m->mesh_self);
	if (!m->mesh_on) {
		top_frame_add(f, TA_NORMAL, "  the heartbeat mesh is off (ftbpfd without --bind)");
		return;
	}
	top_frame_add(f, TA_TITLE, "  %-21s %-8s %5s %7s %6s %5s %5s %s", "PEER", "STATE", "INC",
		      "FOR", "RANKS", "HUNG", "DEAD", "CULPRIT");
	for (int i = 0; i < m->npeers; i++) {
		const struct top_peer *p = &m->peers[i];
		int bad = strcmp(p->state, "alive") && strcmp(p->state, "left");

		fmt_age(p->state_for_s, age, sizeof(age));
		if (p->culprit_rank >= 0)
			snprintf(cul, sizeof(cul), "rank %d", p->culprit_rank);
		else
			snprintf(cul, sizeof(cul), "-");
		if (p->has_health)
			top_frame_add(f, bad || p->hung ? TA_WARN : TA_NORMAL,
				      "%c %-21s %-8s %5lld %7s %6d %5d %5d %s", p->hung ? '*' : ' ',
				      p->addr, p->state, (long long)p->incarnation, age, p->ranks,
				      p->hung, p->dead, cul);
		else
			top_frame_add(f, bad ? TA_WARN : TA_NORMAL,
				      "  %-21s %-8s %5lld %7s %6s %5s %5s ?", p->addr, p->state,
				      (long long)p->incarnation, age, "?", "?", "?");
	}
}

void top_render_help(struct top_frame *f, int width)
{
	static const char *const lines[] = {
	    "ftbpf-top: the live view of ftbpfd's ranks   (any key returns)",
	    "",
	    "  Up/Down, k/j    move the selection       PgUp/PgDn, Home/End  by pages, to the ends",
	    "  Enter           detail of the selected rank: threads, kernel stacks, signals, "
	    "timers",
	    "  s               stacks of the selected rank now (ftbpf stacks PID): every "
	    "thread's",
	    "                  kernel stack and its Python stacks; s again re-reads, Esc back",
	    "  < >             sort by the previous/next column; r reverses",
	    "  /               filter by job (substring; empty clears)",
	    "  t T             cycle the state filter: all, problems, each state, hung, culprit",
	    "  c               clear the filters      e  show/hide events    p  pause updates",
	    "  P               the heartbeat mesh's peers: state, incarnation, hung/dead ranks, "
	    "culprit",
	    "  q               quit (Esc leaves the detail and help views)",
	    "",
	    "Markers: '!' the culprit rank, '*' a rank of a hung job, 'x' an exited rank.",
	    "Columns: TIME in the state, SC/S syscalls per second, GPU age of the last GPU",
	    "activity, PING age of the last ftbpf_ping/step, TIMER armed timers:time left,",
	    "SLOW time per step over the job's median, CPU% of one CPU over the last refresh",
	    "(every thread), RSS resident memory, THR threads (CPU% and RSS: /proc/PID/stat).",
	};

	top_frame_clear(f, width);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		top_frame_add(f, i ? TA_NORMAL : TA_TITLE, "%s", lines[i]);
}
