/* Diagnostic logging: one line per message on stderr, with a syslog-style priority prefix
 * ("<3>") when stderr is the journal, so journald keeps the levels. Messages carry names
 * from other users' processes and from etcd: control bytes, C1, bidi overrides and bytes that
 * are not UTF-8 are escaped (lib/textsafe.h), newlines too (one message, one line). */
#include "os/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/textsafe.h"

static enum log_level cur_level = LOG_INFO;

void log_set_level(enum log_level lvl)
{
	cur_level = lvl;
}

enum log_level log_get_level(void)
{
	return cur_level;
}

struct esc_out {
	char *buf;
	size_t len, cap;
};

static int esc_emit(void *ctx, const char *b, size_t n)
{
	struct esc_out *o = ctx;

	if (o->len + n >= o->cap)
		n = o->cap - 1 - o->len;
	memcpy(o->buf + o->len, b, n);
	o->len += n;
	return 0;
}

/* in, made safe for a terminal or a journal, into out (cut to cap). */
static void escape(char *in, char *out, size_t cap)
{
	struct textsafe ts = {.mode = TEXTSAFE_TEXT};
	struct esc_out o = {out, 0, cap};

	for (char *p = in; *p; p++)
		if (*p == '\n')
			*p = '\x1f'; /* shown as \x1f: a message cannot forge the next line */
	textsafe_write(&ts, in, strlen(in), 1, esc_emit, &o);
	out[o.len] = 0;
}

void log_safe(const char *in, char *out, size_t cap)
{
	char tmp[2048];

	snprintf(tmp, sizeof(tmp), "%s", in);
	escape(tmp, out, cap);
}

int log_stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	static const int prio[] = {3, 4, 6, 7};
	char raw[1024], buf[4 * sizeof(raw)];
	va_list ap;

	if (lvl > cur_level)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	escape(raw, buf, sizeof(buf));
	if (log_stderr_is_journal()) {
		fprintf(stderr, "<%d>%s\n", prio[lvl], buf);
	} else {
		struct timespec ts;
		struct tm tm;
		char t[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(t, sizeof(t), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld ftbpfd %s: %s\n", t, ts.tv_nsec / 1000000, names[lvl],
			buf);
	}
}
