/*
 * The Python stack of a running CPython process, read from outside through process_vm_readv
 * (same user or CAP_SYS_PTRACE; the process is not stopped). Knows the in-memory layout of
 * CPython 3.11 on 64-bit Linux (checked against the interpreter at test time); other versions
 * are reported as unsupported. Used by ftbpf-ci's hang diagnosis.
 */
#ifndef FTBPF_PYSTACK_H
#define FTBPF_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

struct py_frame {
	char file[256];
	char func[96];
	int line; /* -1 unknown */
};

/*
 * Fill at most max frames of each Python thread (innermost first; threads separated by a frame
 * with func "" and line -2), returns the number of frames, or -errno: -ENOENT not a CPython
 * process, -ENOTSUP a CPython version whose layout is not known (why says which).
 */
int pystack_read(int pid, struct py_frame *frames, int max, char *why, size_t whylen);

/* The source line of code unit `target` in a CPython 3.11 location table (bytes read from the
 * target process: untrusted, fuzzed); -1 when it has none or the table is malformed. */
int pystack_line_of(const uint8_t *table, size_t n, int first_line, unsigned target);

#endif
