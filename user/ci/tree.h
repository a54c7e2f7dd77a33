/*
 * ftbpf-ci's process tree: the processes of the command under test, each sampled through the
 * one sampling path (watch/sample.h) and judged by the one hang rule (det_job_eval), the tree
 * being the job and its processes the ranks. With the tracker the tree is what the kernel
 * tracks (every descendant from its fork); without it, the descendants /proc shows.
 */
#ifndef FTBPF_CI_TREE_H
#define FTBPF_CI_TREE_H

#include <stdint.h>

#include "lib/detector.h"
#include "os/procfs.h"
#include "watch/sample.h"

#define TREE_MAX 1024

/* What is remembered of one process of the tree between polls. */
struct tree_proc {
	int pid;
	int live;
	struct det_sample s;
	struct det_rank d;
	struct sample_memory mem; /* the /proc fallback's */
	struct proc_stat st;	  /* parent, name, start time */
	int culprit;		  /* the detector's odd one out, at the last tree_eval */
};

struct tree {
	struct sampler sp;    /* the sampling path (tracker borrowed, may be NULL) */
	struct det_params dp; /* soft = the hang timeout */
	int self;	      /* our pid: the root of the tree */
	uint64_t activity_ns; /* a process of the tree born or gone: progress of no one process */
	struct tree_proc p[TREE_MAX];
	int np;
};

/* tr may be NULL (/proc fallback). hang_timeout in seconds. */
void tree_init(struct tree *t, struct tracker *tr, double hang_timeout);
void tree_fini(struct tree *t);
/* Something happened in the tree (a fork, an exec, an exit): progress. */
void tree_activity(struct tree *t, uint64_t now);
/* Refresh the live processes and sample them (update: advance each one's detector state). */
void tree_scan(struct tree *t, uint64_t now, int update);
/*
 * A process of the tree under a debugger: stopped by ptrace, or reading the terminal it has in
 * the foreground (a pdb prompt). Its pid (why says which and how), or 0.
 */
int tree_debugged(const struct tree *t, char *why, size_t whylen);

enum { TREE_WAIT_CHILDREN, TREE_WAIT_CLIENTS, TREE_WAIT_OTHER };
/* The kind of wait of p's main thread (TREE_WAIT_*): children, clients, or anything else. */
int tree_wait_class(const struct tree_proc *p);

/*
 * Judge the tree with the hang rule; *job gets the verdict. Returns the index of the most
 * likely cause: first by the kind of wait (anything over a server waiting for clients in
 * accept/poll/select, over a parent waiting for its children), then the detector's culprit,
 * then the most suspicious, then the youngest; -1 when no process lives.
 */
int tree_eval(struct tree *t, uint64_t now, struct det_job *job);

#endif
