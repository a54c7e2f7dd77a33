/* Rank identity from a process environment (torchrun, Open MPI, PMI/Slurm, FTBPF_*). */
#ifndef FTBPF_IDENT_H
#define FTBPF_IDENT_H

#include <stddef.h>

#include "ftbpf/abi.h"

enum ident_source {
	IDENT_NONE = 0,
	IDENT_FTBPF = 1,
	IDENT_TORCH = 2,
	IDENT_OMPI = 3,
	IDENT_PMI = 4,
	IDENT_SLURM = 5,
	IDENT_CLIENT = 6, /* registered through the control socket */
};

struct rank_ident {
	int rank;
	int local_rank; /* -1 when unknown */
	int world_size; /* -1 when unknown */
	enum ident_source source;
	char job[FTBPF_JOB_LEN];
};

/*
 * Parse an environment block (NUL-separated "K=V" strings, as /proc/PID/environ).
 * Returns 0 and fills *ret for a rank, -ENOENT for a process that is not a rank,
 * -EINVAL when a rank variable is present but malformed (out of range, not a number).
 */
int ident_from_environ(const char *env, size_t len, struct rank_ident *ret);
const char *ident_source_name(enum ident_source s);
/* Make a job id safe to show and to use as a name, as the environment's are: printable ASCII
 * without quotes or backslashes (anything else becomes '_'). In place. */
void ident_job_sanitize(char *job);

#endif
