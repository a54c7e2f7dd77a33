/*
 * What the agent has done about each job (hang reported, failure reported, hard action taken,
 * ranks its action killed), saved atomically in state_dir/jobs.json, so that a restarted
 * agent neither reports twice nor blames its own kills. Saved at most once per scan.
 */
#ifndef FTBPF_JOBSTATE_H
#define FTBPF_JOBSTATE_H

#include <stdint.h>

struct json_object;
struct ranks;
struct job;

struct jobstate {
	const char *dir;	   /* borrowed: the state directory */
	struct json_object *saved; /* what an earlier agent saved (owned), NULL none */
	int dirty;		   /* something changed since the last save */
	uint64_t warn_ns;	   /* last warning about saving (rate limit) */
};

/* Read what an earlier agent saved (none, or unreadable: nothing to restore). */
void jobstate_open(struct jobstate *js, const char *dir);
void jobstate_close(struct jobstate *js);
/* Apply the saved state to job j (once, before it is first evaluated). */
void jobstate_restore(struct jobstate *js, struct job *j);
/* Write every job's state if something changed. */
void jobstate_save(struct jobstate *js, const struct ranks *r);

#endif
