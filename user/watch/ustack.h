/*
 * Symbolized user-space stacks of every thread of a process, unwound by elfutils' libdwfl
 * (ptrace-attaches for the duration, CFI and symbol tables of every mapped module). The modules
 * are opened as the process maps them and read into private memory (os/mapfile.h: no FIFO, no
 * link followed, no SIGBUS), separate debug files only from /usr/lib/debug. For ftbpf-ci's hang
 * diagnosis.
 */
#ifndef FTBPF_USTACK_H
#define FTBPF_USTACK_H

#define USTACK_DEPTH 32

struct ustack_thread {
	int tid;
	int n;			       /* frames */
	char frame[USTACK_DEPTH][160]; /* "func+0x1f (libc.so.6)" or "0x7f... (module)" */
};

/* Unwind at most max threads of pid into out; returns the number of threads or -errno. */
int ustack_process(int pid, struct ustack_thread *out, int max, char *err, int errlen);

#endif
