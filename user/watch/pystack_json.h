/* Python stacks (watch/pystack.h) as JSON, the one shape every event, reply and report uses. */
#ifndef FTBPF_PYSTACK_JSON_H
#define FTBPF_PYSTACK_JSON_H

struct json_object;
struct py_stack;

/*
 * Into o: "python_version" ("3.11"); "python_threads": one object per thread
 * {thread_id: "0x7f..." (the pthread id faulthandler prints), tid, name, truncated, stack:
 * [{file, function, line}] innermost first}; and "python_stack": the main thread's stack (the
 * thread whose tid is pid, else the first), as before there were threads.
 */
void pystack_json(struct json_object *o, const struct py_stack *s, int pid);
/* Into o: "python_stack_error": why; nothing when err is -ENOENT (not a CPython process). */
void pystack_json_error(struct json_object *o, int err, const char *why);

#endif
