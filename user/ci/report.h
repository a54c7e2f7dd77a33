/*
 * ftbpf-ci's reports of a hang or a timeout: the diagnosis as text (stderr) and JSON (--report)
 * with every live process of the tree (state, syscall, wait channel, kernel, user and Python
 * stacks) and the most likely cause; and a JUnit XML file (--junit).
 */
#ifndef FTBPF_CI_REPORT_H
#define FTBPF_CI_REPORT_H

#include <stddef.h>
#include <stdint.h>

struct tree;
struct json_object;

struct report {
	struct json_object *root; /* owned */
	char *text;		  /* owned */
	size_t len, cap;
};

struct report_opts {
	const char *kind; /* "hang" or "timeout" */
	double hang_timeout, timeout;
	uint64_t start_ns, now;
};

/* Diagnose the tree (its kernel stacks are snapshotted now) into r. */
void report_diagnose(struct report *r, struct tree *t, const struct report_opts *o);
void report_free(struct report *r);
/* Reports are written with no symbolic link followed anywhere in their paths (os/safefs.h:
 * ftbpf-ci may run as root in another user's workspace). */
int report_write_json(const char *path, struct json_object *root, char *err, size_t errlen);
/*
 * The JUnit XML file: a failure on a hang, a timeout or a non-zero exit. On a hang or timeout
 * with hung pytest tests (tests: the report's "tests" array, may be NULL) each is a failing
 * case named as pytest's --junitxml names it; else one case named after the command.
 * 0 or -errno.
 */
int report_junit(const char *path, char *const *argv, const char *kind, int code, const char *text,
		 struct json_object *tests, double secs);

#endif
