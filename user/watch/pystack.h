/*
 * The Python stacks of a running CPython process, read from outside (the process is not
 * stopped): the interpreter found in the files the process maps (python3.X or libpython3.X,
 * its _PyRuntime and Py_Version symbols, read with elfsym from a safely opened copy: see
 * os/mapfile.h), then its threads and frames read from its memory through its pidfd
 * (os/procmem.h). Layouts per version in lib/pyver.c: 3.11, 3.12, 3.13 (from their published
 * headers; tested with Debian's 3.11, and pyenv's 3.12.1 and 3.13.0 where present). Bounded everywhere: candidate files per process, bytes parsed, maps
 * lines, threads, frames, and a deadline. A cache keyed by file identity (device, inode, size,
 * mtime) keeps 20,000 mappings of one file from costing 20,000 parses. Not thread-safe: one
 * cache per thread (the agent's inspector, ftbpf-ci's diagnosis).
 */
#ifndef FTBPF_PYSTACK_H
#define FTBPF_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#define PY_THREADS_MAX 32
#define PY_FRAMES_MAX  256 /* all threads together */
#define PY_DEPTH_MAX   128 /* one thread */

struct py_frame {
	char file[256];
	char func[96];
	int line; /* -1 unknown */
};

struct py_thread {
	uint64_t thread_id; /* the pthread id, as faulthandler prints it */
	int tid;	    /* the kernel's thread id, 0 unknown */
	char name[16];	    /* its comm */
	int first, n;	    /* its frames: f[first .. first + n), innermost first */
	int truncated;	    /* deeper than what was read */
};

struct py_stack {
	char version[8]; /* "3.11" */
	int nthreads;
	struct py_thread t[PY_THREADS_MAX];
	int nframes;
	struct py_frame f[PY_FRAMES_MAX];
};

struct pystack_cache;

struct pystack_cache *pystack_cache_new(void);
void pystack_cache_free(struct pystack_cache *c);

/*
 * Read the Python stacks of pid (pidfd: the process it must be, borrowed; -1 none) into *out,
 * until deadline_ns (CLOCK_MONOTONIC, 0 none). 0, or -errno with why filled: -ENOENT not a
 * CPython process, -ENOTSUP a version or build whose layout is not known, -ESRCH gone,
 * -ETIMEDOUT past the deadline, -EPROTO memory that does not hold what the layout says.
 */
int pystack_read(struct pystack_cache *c, int pid, int pidfd, uint64_t deadline_ns,
		 struct py_stack *out, char *why, size_t whylen);

/* The source line of code unit `target` in a CPython 3.11+ location table (bytes read from the
 * target process: untrusted, fuzzed); -1 when it has none or the table is malformed. */
int pystack_line_of(const uint8_t *table, size_t n, int first_line, unsigned target);

#endif
