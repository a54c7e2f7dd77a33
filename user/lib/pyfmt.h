/*
 * Python stacks as text in faulthandler's layout, so that the log parsers CI systems already
 * run on faulthandler dumps read ours too:
 *
 *   Thread 0x00007f3a1c2b5740 (most recent call first):
 *     File "train.py", line 14 in load_batch
 *     File "train.py", line 30 in main
 *
 * from the "python_threads" array of an explain reply, a hang event or an ftbpf-ci report
 * (each {thread_id: "0x...", tid, name, truncated, stack: [{file, line, function}]}). Control
 * bytes in names become '?' (the names come from the process). Pure.
 */
#ifndef FTBPF_PYFMT_H
#define FTBPF_PYFMT_H

#include <stddef.h>

struct json_object;

typedef void (*pyfmt_emit_fn)(void *ctx, const char *line);

/* One emit call per line (no newline), threads separated by an empty line. Returns the number
 * of threads written. */
int pyfmt_lines(struct json_object *threads, pyfmt_emit_fn emit, void *ctx);
/* The header line of one thread: "Thread 0x00007f3a1c2b5740 (most recent call first):". */
void pyfmt_thread_header(struct json_object *thread, char *buf, size_t len);
/* One frame: "  File \"train.py\", line 14 in load_batch" ("line ???" when unknown). */
void pyfmt_frame(struct json_object *frame, char *buf, size_t len);

#endif
