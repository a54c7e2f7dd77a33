/* Diagnostic logging: one line per message on stderr, with a syslog-style priority prefix
 * ("<3>") when stderr is the journal, so journald keeps the levels. */
#include "os/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static enum log_level cur_level = LOG_INFO;

void log_set_level(enum log_level lvl)
{
	cur_level = lvl;
}

enum log_level log_get_level(void)
{
	return cur_level;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	static const int prio[] = {3, 4, 6, 7};
	char buf[1024];
	va_list ap;

	if (lvl > cur_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (getenv("JOURNAL_STREAM")) {
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
