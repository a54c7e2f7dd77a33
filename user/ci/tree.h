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
 * Judge the tree with the hang rule; *job gets the verdict. Returns the index of the most
 * likely cause: the detector's culprit, else the most suspicious process (the youngest among
 * equals), -1 when no process lives.
 */
int tree_eval(struct tree *t, uint64_t now, struct det_job *job);

#endif
