/*
 * CPython versions and their in-memory layouts, for reading a Python stack from outside the
 * process (watch/pystack.c): the version from a file name (`python3.11`,
 * `libpython3.12.so.1.0`), and per version the offsets of the few fields the reader follows.
 * 3.11 is checked against Debian's interpreter in the tests; 3.12 and 3.13 come from their
 * published headers (3.13's from the _Py_DebugOffsets the interpreter carries) and are checked
 * where a host has them (pyenv's 3.12.1 and 3.13.0 on the development machine; Debian 12 has
 * neither, so CI does not). Pure: no I/O.
 */
#ifndef FTBPF_PYVER_H
#define FTBPF_PYVER_H

#include <stddef.h>
#include <stdint.h>

struct pyver {
	int major, minor;
	char flags[4]; /* ABI flags after the version: "d" debug, "t" free-threaded */
	int lib;       /* libpython3.X...so: 1; the python3.X executable: 0 */
};

/* The version a file name (its last component, len bytes) says: 0, or -EINVAL when it is not
 * a CPython 3 interpreter or library name (python3, libpython3.so, python3.11-config...). */
int pyver_of_name(const char *name, size_t len, struct pyver *ret);

/* Offsets (bytes) in the structures the reader follows; 64-bit Linux. */
struct py_layout {
	int minor;
	uint64_t rt_interp_head[2]; /* _PyRuntime.interpreters.head (second: another candidate,
				       0 none; the reader checks which one holds) */
	uint64_t is_threads_head;   /* PyInterpreterState.threads.head */
	uint64_t ts_next, ts_interp, ts_thread_id, ts_native_tid;
	uint64_t ts_frame;   /* PyThreadState.cframe (3.11, 3.12) or .current_frame (3.13) */
	int cframe;	     /* ts_frame points to a _PyCFrame: 1 */
	uint64_t cf_current; /* _PyCFrame.current_frame */
	uint64_t fr_code, fr_previous, fr_instr, fr_owner;
	int owner_cstack; /* the owner value of frames the C stack owns (skipped), -1 none */
	uint64_t co_firstlineno, co_filename, co_name, co_linetable, co_code_adaptive;
	uint64_t str_state, str_length, str_ascii_data, str_compact_data;
	uint64_t bytes_size, bytes_data;
	int from_debug_offsets; /* 3.13: filled from the process's _Py_DebugOffsets */
};

/* The layout of CPython 3.minor: NULL when it is not known. For 3.13 the entry says
 * from_debug_offsets: the caller reads them from _PyRuntime and calls pyver_debug_offsets. */
const struct py_layout *pyver_layout(int major, int minor);

#define PYVER_DEBUG_OFFSETS_SIZE 584 /* bytes of _Py_DebugOffsets read (3.13): 73 words */

/* Fill *ret from the first PYVER_DEBUG_OFFSETS_SIZE bytes of _PyRuntime of a CPython 3.13
 * process (its _Py_DebugOffsets: cookie "xdebugpy", version, then the offsets). Untrusted bytes:
 * every offset is checked against its structure's size. 0, or -EINVAL (why says what). */
int pyver_debug_offsets(const uint8_t *buf, size_t len, struct py_layout *ret, char *why,
			size_t whylen);

#endif
