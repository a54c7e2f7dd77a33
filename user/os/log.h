/* Diagnostic logging of the agent to stderr (journald picks it up under systemd). */
#ifndef FTBPF_LOG_H
#define FTBPF_LOG_H

#include <stddef.h>

enum log_level { LOG_ERR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Is stderr the journal's stream (JOURNAL_STREAM names its device and inode, as systemd
 * sets it for a service)? */
int log_stderr_is_journal(void);
/* in made safe for a terminal or a journal into out (cap bytes, cut): control bytes, C1,
 * bidi overrides and bytes that are not UTF-8 escaped, newlines too. */
void log_safe(const char *in, char *out, size_t cap);

#define log_err(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
